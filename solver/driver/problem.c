#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "problem.h"
#include "tw_boundary.h"
#include "tw_sources.h"

/* A (cell, owner, weight) entry before cells are made unique. */
typedef struct {
  int ijk[3];
  long owner; /* source or receiver index: keeps the sum order fixed */
  int slot;   /* tap slot within the owner */
  double w;
} cell_entry;

static int cmp_cell(const int *a, const int *b) {
  for (int x = 0; x < 3; x++)
    if (a[x] != b[x]) return a[x] < b[x] ? -1 : 1;
  return 0;
}
static int cmp_entry(const void *pa, const void *pb) {
  const cell_entry *a = pa, *b = pb;
  int c = cmp_cell(a->ijk, b->ijk);
  if (c) return c;
  return a->owner < b->owner ? -1 : a->owner > b->owner;
}

/* Sort entries by (cell, owner), write the unique cells to *cells and each entry's cell index
 * to idx[k] (k: entry position before sorting, recovered through the owner/slot fields). */
static tw_status unique_cells(cell_entry *e, long n, int (**cells)[3], long *ncells, long *cell_of, tw_error *err) {
  qsort(e, (size_t)n, sizeof *e, cmp_entry);
  *cells = malloc((size_t)(n ? n : 1) * sizeof **cells);
  if (!*cells) return tw_error_set(err, TW_ENOMEM, "out of memory for %ld source/receiver cells", n);
  long u = 0;
  for (long k = 0; k < n; k++) {
    if (u == 0 || cmp_cell((*cells)[u - 1], e[k].ijk)) {
      memcpy((*cells)[u], e[k].ijk, sizeof(int[3]));
      u++;
    }
    cell_of[k] = u - 1;
  }
  *ncells = u;
  return TW_OK;
}

/* The wavelets s_s(t_n), n = 0 … steps, of every source of the job: they depend on the job alone,
 * so a survey samples them once (a file wavelet is read once). */
static tw_status sample_wavelets(tw_problem *pb, const tw_job *job, tw_error *err) {
  pb->nsrc = job->nsources;
  pb->wavelets = malloc((size_t)(job->nsources ? job->nsources : 1) * (size_t)(pb->steps + 1) * sizeof(float));
  if (!pb->wavelets) return tw_error_set(err, TW_ENOMEM, "out of memory for the source wavelets");
  for (int s = 0; s < job->nsources; s++) {
    const tw_status st = tw_wavelet_sample(&job->sources[s].wavelet, job->path, pb->dt, pb->steps,
                                           pb->wavelets + (size_t)s * (pb->steps + 1), err);
    if (st) return st;
  }
  return TW_OK;
}

/* A placement the kernels' grid refused, placed again on the job's grid: its message then names
 * the job's axes and ranges (the parser's checks make this unreachable today). */
static void place_error_in_job_axes(const tw_job *job, const double pos[3], tw_interp interp, int fs, tw_error *err) {
  tw_grid ug;
  tw_grid_of_job(job, &ug);
  tw_taps t;
  tw_error e = {0};
  if (tw_place(&ug, pos, interp, fs, &t, &e)) *err = e;
}

/* The sources at pos[s] placed on the problem's grid: their taps as entries sorted by (cell,
 * source) (*e, *ne), each entry's cell (*cell_of) and the unique cells (*cells, *ncell). */
static tw_status source_entries(const tw_problem *pb, const tw_job *job, const double (*pos)[3], cell_entry **e,
                                long *ne, long **cell_of, int (**cells)[3], long *ncell, tw_error *err) {
  *e = malloc((size_t)(job->nsources ? job->nsources : 1) * 8 * sizeof **e);
  *cell_of = malloc((size_t)(job->nsources ? job->nsources : 1) * 8 * sizeof **cell_of);
  *ne = 0, *cells = NULL, *ncell = 0;
  if (!*e || !*cell_of) return tw_error_set(err, TW_ENOMEM, "out of memory for the source cells");
  for (int s = 0; s < job->nsources; s++) {
    const tw_source_spec *src = &job->sources[s];
    tw_taps t;
    double at[3];
    tw_xy_point(pb->swap_xy, pos[s], at);
    tw_status st = tw_place(&pb->g, at, src->interp, pb->free_surface, &t, err);
    if (st && pb->swap_xy) place_error_in_job_axes(job, pos[s], src->interp, pb->free_surface, err);
    if (st) return tw_error_prefix(err, "%s: sources[%d].position", tw_job_where(job, src->where), s);
    for (int k = 0; k < t.ntap; k++, (*ne)++) {
      memcpy((*e)[*ne].ijk, t.ijk[k], sizeof(int[3]));
      (*e)[*ne].owner = s;
      (*e)[*ne].slot = k;
      (*e)[*ne].w = t.w[k];
    }
  }
  return unique_cells(*e, *ne, cells, ncell, *cell_of, err);
}

/* S^n for n in [n0, n1) of every cell, in double: row c at acc + c·(n1 − n0), zeroed here.
 * S^n = Σ_s w_s s_s(t_n) / (dx dy dz), summed in (cell, source) order: build_sources rounds it to
 * float once, the validation bounds it (tw_problem_source_peak). */
static void source_sums(const tw_problem *pb, const cell_entry *e, long ne, const long *cell_of, long ncell, long n0,
                        long n1, double *acc) {
  const long len = n1 - n0;
  const double inv_vol = 1.0 / (pb->g.d[0] * pb->g.d[1] * pb->g.d[2]);
  memset(acc, 0, (size_t)ncell * (size_t)len * sizeof *acc);
  for (long k = 0; k < ne; k++) {
    const float *wv = pb->wavelets + (size_t)e[k].owner * (pb->steps + 1);
    double *row = acc + (size_t)cell_of[k] * len - n0;
    for (long n = n0; n < n1; n++) row[n] += e[k].w * (double)wv[n] * inv_vol;
  }
}

/* Injection cells and S of the sources at pos[s] (the job's positions, or a survey shot's). */
static tw_status build_sources(tw_problem *pb, const tw_job *job, const double (*pos)[3], tw_error *err) {
  const long steps = pb->steps;
  cell_entry *e;
  long *cell_of, ne, ncell;
  tw_status st = source_entries(pb, job, pos, &e, &ne, &cell_of, &pb->inj, &ncell, err);
  if (!st) {
    pb->ninj = (int)ncell;
    double *acc = malloc((size_t)(ncell ? ncell : 1) * (size_t)steps * sizeof(double));
    pb->S = malloc((size_t)(ncell ? ncell : 1) * (size_t)steps * sizeof(float));
    if (!acc || !pb->S) st = tw_error_set(err, TW_ENOMEM, "out of memory for the source terms");
    if (!st) source_sums(pb, e, ne, cell_of, ncell, 0, steps, acc);
    for (long c = 0; !st && c < ncell * steps; c++) pb->S[c] = (float)acc[c];
    free(acc);
  }
  free(e);
  free(cell_of);
  return st;
}

tw_status tw_problem_source_peak(const tw_job *job, double *peak, int *first, int *second, int *nshared,
                                 tw_error *err) {
  tw_problem pb;
  cell_entry *e = NULL;
  long *cell_of = NULL, ne = 0, ncell = 0, top = -1;
  int(*cells)[3] = NULL;
  double *acc = NULL;
  const long chunk = 1024; /* steps at a time: the memory of a chunk, not of the run's S */
  *peak = 0.0, *first = *second = -1, *nshared = 0;
  tw_status st = tw_problem_sizes(job, &pb, err);
  double(*pos)[3] = st ? NULL : malloc((size_t)(job->nsources ? job->nsources : 1) * sizeof *pos);
  if (!st && !pos) st = tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int s = 0; !st && s < job->nsources; s++) memcpy(pos[s], job->sources[s].pos, sizeof pos[s]);
  if (!st) st = sample_wavelets(&pb, job, err);
  if (!st) st = source_entries(&pb, job, (const double (*)[3])pos, &e, &ne, &cell_of, &cells, &ncell, err);
  if (!st && !(acc = malloc((size_t)(ncell ? ncell : 1) * (size_t)chunk * sizeof *acc)))
    st = tw_error_set(err, TW_ENOMEM, "out of memory for the source terms");
  for (long n0 = 0; !st && n0 < pb.steps; n0 += chunk) {
    const long n1 = n0 + chunk < pb.steps ? n0 + chunk : pb.steps;
    source_sums(&pb, e, ne, cell_of, ncell, n0, n1, acc);
    for (long i = 0; i < ncell * (n1 - n0); i++)
      if (!(fabs(acc[i]) <= *peak)) *peak = fabs(acc[i]), top = i / (n1 - n0);
  }
  for (long k = 0; !st && k < ne; k++) /* the sources at that cell, in source order */
    if (cell_of[k] == top) {
      if (*nshared == 0) *first = (int)e[k].owner;
      else if (*nshared == 1) *second = (int)e[k].owner;
      ++*nshared;
    }
  free(acc), free(e), free(cell_of), free(cells), free(pos);
  free(pb.wavelets);
  return st;
}

/* Tap cells and weights of the job's receivers, each at rec[r] + offset (offset: a moving spread's
 * shot, else 0). */
static tw_status build_receivers(tw_problem *pb, const tw_job *job, const double offset[3], tw_error *err) {
  const long nrec = job->nrec;
  pb->nrec = nrec;
  cell_entry *e = malloc((size_t)(nrec ? nrec : 1) * 8 * sizeof *e);
  long *cell_of = malloc((size_t)(nrec ? nrec : 1) * 8 * sizeof *cell_of);
  pb->rec_ntap = calloc((size_t)(nrec ? nrec : 1), sizeof *pb->rec_ntap);
  pb->rec_tap = calloc((size_t)(nrec ? nrec : 1), sizeof *pb->rec_tap);
  pb->rec_w = calloc((size_t)(nrec ? nrec : 1), sizeof *pb->rec_w);
  if (!e || !cell_of || !pb->rec_ntap || !pb->rec_tap || !pb->rec_w) {
    free(e), free(cell_of);
    return tw_error_set(err, TW_ENOMEM, "out of memory for %ld receivers", nrec);
  }
  long ne = 0;
  tw_status st = TW_OK;
  for (long r = 0; r < nrec && !st; r++) {
    tw_taps t;
    const double ju[3] = {job->rec[r][0] + offset[0], job->rec[r][1] + offset[1], job->rec[r][2] + offset[2]};
    double at[3];
    tw_xy_point(pb->swap_xy, ju, at);
    st = tw_place(&pb->g, at, job->rec_interp, 0, &t, err);
    if (st && pb->swap_xy) place_error_in_job_axes(job, ju, job->rec_interp, 0, err);
    if (st) {
      tw_error_prefix(err, "%s: receiver %ld", job->path, r);
      break;
    }
    pb->rec_ntap[r] = t.ntap;
    for (int k = 0; k < t.ntap; k++, ne++) {
      memcpy(e[ne].ijk, t.ijk[k], sizeof(int[3]));
      e[ne].owner = r;
      e[ne].slot = k;
      e[ne].w = t.w[k];
      pb->rec_w[r][k] = (float)t.w[k];
    }
  }
  if (!st) st = unique_cells(e, ne, &pb->tap, &pb->ntap, cell_of, err);
  for (long k = 0; !st && k < ne; k++) pb->rec_tap[e[k].owner][e[k].slot] = cell_of[k];
  free(e);
  free(cell_of);
  return st;
}

/* The shot tables (sources, receivers), freed and emptied. */
static void free_sources(tw_problem *pb) {
  free(pb->inj), free(pb->S);
  pb->inj = NULL, pb->S = NULL, pb->ninj = 0;
}
static void free_receivers(tw_problem *pb) {
  free(pb->tap), free(pb->rec_ntap), free(pb->rec_tap), free(pb->rec_w);
  pb->tap = NULL, pb->rec_ntap = NULL, pb->rec_tap = NULL, pb->rec_w = NULL;
  pb->ntap = 0, pb->nrec = 0;
}

void tw_grid_of_job(const tw_job *job, tw_grid *g) {
  tw_grid_setup(g, job->n, job->d, job->origin, job->absorb, job->free_surface);
}

int tw_grid_oriented(const tw_job *job, tw_grid *g) {
  tw_grid_of_job(job, g);
  if (g->N[1] <= g->N[0]) return 0;
  const int n[3] = {job->n[1], job->n[0], job->n[2]}, ab[3] = {job->absorb[1], job->absorb[0], job->absorb[2]};
  const double d[3] = {job->d[1], job->d[0], job->d[2]}, o[3] = {job->origin[1], job->origin[0], job->origin[2]};
  tw_grid_setup(g, n, d, o, ab, job->free_surface);
  return 1;
}

long tw_job_call_steps(const tw_job *job) {
  if (job->steps < 1) return 0;
  const long every = job->ckpt_every > 0 ? job->ckpt_every : 0;
  long cuts = 1 + (every ? (job->steps - 1) / every : 0); /* the end, the checkpoints before it */
  for (int i = 0; i < job->nsnap; i++)
    cuts += job->snap_steps[i] < job->steps && !(every && job->snap_steps[i] % every == 0);
  return (job->steps + cuts - 1) / cuts;
}

tw_status tw_problem_sizes(const tw_job *job, tw_problem *pb, tw_error *err) {
  memset(pb, 0, sizeof *pb);
  pb->swap_xy = tw_grid_oriented(job, &pb->g);
  pb->order = job->order;
  pb->dt = job->dt;
  pb->steps = job->steps;
  pb->free_surface = job->free_surface;
  pb->dts = job->dts;
  pb->tower_height = job->tower_height;
  pb->call_steps = tw_job_call_steps(job);
  pb->device_memory = job->device_memory;
  pb->threads = job->threads;
  pb->interval = job->rec_interval > 0 ? job->rec_interval : 1;
  pb->nsamples = pb->steps / pb->interval + 1;
  if (!tw_stencil_setup(job->order, pb->g.d, &pb->st))
    return tw_error_set(err, TW_EINVAL, "%s: scheme.order: %d is not supported (2, 4, ..., 16)", job->path,
                        job->order);
  return TW_OK;
}

void tw_problem_axes_note(const tw_problem *pb, tw_error *err) {
  if (!pb->swap_xy) return;
  const size_t l = strlen(err->msg);
  snprintf(err->msg + l, sizeof err->msg - l, " (this job is swept along its longer axis, y: the kernels' x-planes "
           "are its planes of constant y)");
}

tw_status tw_problem_create_medium(const tw_job *job, const tw_velocity *v, tw_problem **out, tw_error *err) {
  tw_problem *pb = calloc(1, sizeof *pb);
  if (!pb) return tw_error_set(err, TW_ENOMEM, "out of memory");
  tw_status st = tw_problem_sizes(job, pb, err);
  const size_t cells = tw_grid_cells(&pb->g);
  if (!st) {
    pb->c2dt2 = tw_alloc_large(cells * sizeof(float));
    for (int a = 0; a < 3; a++) pb->a[a] = malloc((size_t)pb->g.N[a] * sizeof(float));
    if (!pb->c2dt2 || !pb->a[0] || !pb->a[1] || !pb->a[2])
      st = tw_error_set(err, TW_ENOMEM, "cannot allocate %zu MiB for c²dt² on the padded grid",
                        cells * sizeof(float) >> 20);
  }
  if (!st) {
    if (v->profile) tw_extend_c2dt2_profile(&pb->g, v->profile, pb->dt, pb->c2dt2);
    else tw_extend_c2dt2(&pb->g, v->vp, pb->swap_xy, pb->dt, pb->c2dt2);
    for (int a = 0; a < 3; a++) tw_damping_profile(&pb->g, a, v->vmax, pb->dt, pb->a[a]);
    st = sample_wavelets(pb, job, err);
  }
  if (st) {
    tw_problem_destroy(pb);
    return st;
  }
  *out = pb;
  return TW_OK;
}

tw_status tw_problem_borrow(const tw_problem *medium, tw_problem **out, tw_error *err) {
  tw_problem *pb = malloc(sizeof *pb);
  if (!pb) return tw_error_set(err, TW_ENOMEM, "out of memory");
  *pb = *medium;
  pb->borrowed = 1;
  pb->inj = NULL, pb->S = NULL, pb->ninj = 0;
  pb->tap = NULL, pb->rec_ntap = NULL, pb->rec_tap = NULL, pb->rec_w = NULL, pb->ntap = 0, pb->nrec = 0;
  *out = pb;
  return TW_OK;
}

tw_status tw_problem_set_sources(tw_problem *pb, const tw_job *job, const double (*pos)[3], tw_error *err) {
  free_sources(pb);
  const tw_status st = build_sources(pb, job, pos, err);
  if (st) free_sources(pb);
  return st;
}

tw_status tw_problem_set_receivers(tw_problem *pb, const tw_job *job, const double offset[3], tw_error *err) {
  free_receivers(pb);
  const tw_status st = build_receivers(pb, job, offset, err);
  if (st) free_receivers(pb);
  return st;
}

tw_status tw_problem_create(const tw_job *job, const tw_velocity *v, tw_problem **out, tw_error *err) {
  tw_problem *pb = NULL;
  tw_status st = tw_problem_create_medium(job, v, &pb, err);
  double(*pos)[3] = st ? NULL : malloc((size_t)(job->nsources ? job->nsources : 1) * sizeof *pos);
  if (!st && !pos) st = tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int s = 0; !st && s < job->nsources; s++) memcpy(pos[s], job->sources[s].pos, sizeof pos[s]);
  if (!st) st = tw_problem_set_sources(pb, job, (const double (*)[3])pos, err);
  if (!st) st = tw_problem_set_receivers(pb, job, (const double[3]){0, 0, 0}, err);
  free(pos);
  if (st) {
    tw_problem_destroy(pb);
    return st;
  }
  *out = pb;
  return TW_OK;
}

void tw_problem_destroy(tw_problem *pb) {
  if (!pb) return;
  if (!pb->borrowed) {
    free(pb->c2dt2);
    for (int a = 0; a < 3; a++) free(pb->a[a]);
    free(pb->wavelets);
  }
  free_sources(pb);
  free_receivers(pb);
  free(pb);
}

const tw_grid *tw_problem_grid(const tw_problem *pb) { return &pb->g; }
