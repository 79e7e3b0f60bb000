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

static tw_status build_sources(tw_problem *pb, const tw_job *job, tw_error *err) {
  const long steps = pb->steps;
  pb->nsrc = job->nsources;
  pb->wavelets = malloc((size_t)job->nsources * (size_t)(steps + 1) * sizeof(float));
  cell_entry *e = malloc((size_t)job->nsources * 8 * sizeof *e);
  long *cell_of = malloc((size_t)job->nsources * 8 * sizeof *cell_of);
  if (!pb->wavelets || !e || !cell_of) {
    free(e), free(cell_of);
    return tw_error_set(err, TW_ENOMEM, "out of memory for the source wavelets");
  }
  long ne = 0;
  tw_status st = TW_OK;
  for (int s = 0; s < job->nsources && !st; s++) {
    const tw_source_spec *src = &job->sources[s];
    st = tw_wavelet_sample(&src->wavelet, job->path, pb->dt, steps, pb->wavelets + (size_t)s * (steps + 1), err);
    if (st) break;
    tw_taps t;
    st = tw_place(&pb->g, src->pos, src->interp, pb->free_surface, &t, err);
    if (st) {
      tw_error_prefix(err, "%s:%d: sources[%d].position", job->path, src->line, s);
      break;
    }
    for (int k = 0; k < t.ntap; k++, ne++) {
      memcpy(e[ne].ijk, t.ijk[k], sizeof(int[3]));
      e[ne].owner = s;
      e[ne].slot = k;
      e[ne].w = t.w[k];
    }
  }
  long ncell = 0;
  if (!st) st = unique_cells(e, ne, &pb->inj, &ncell, cell_of, err);
  if (!st) {
    pb->ninj = (int)ncell;
    double *acc = calloc((size_t)(ncell ? ncell : 1) * (size_t)steps, sizeof(double));
    pb->S = malloc((size_t)(ncell ? ncell : 1) * (size_t)steps * sizeof(float));
    if (!acc || !pb->S) st = tw_error_set(err, TW_ENOMEM, "out of memory for the source terms");
    /* S^n = Σ_s w_s s_s(t_n) / (dx dy dz), summed in (cell, source) order, rounded once. */
    const double inv_vol = 1.0 / (pb->g.d[0] * pb->g.d[1] * pb->g.d[2]);
    for (long k = 0; k < ne && !st; k++) {
      const float *wv = pb->wavelets + (size_t)e[k].owner * (steps + 1);
      double *row = acc + (size_t)cell_of[k] * steps;
      for (long n = 0; n < steps; n++) row[n] += e[k].w * (double)wv[n] * inv_vol;
    }
    for (long c = 0; !st && c < ncell * steps; c++) pb->S[c] = (float)acc[c];
    free(acc);
  }
  free(e);
  free(cell_of);
  return st;
}

static tw_status build_receivers(tw_problem *pb, const tw_job *job, tw_error *err) {
  const long nrec = job->nrec;
  pb->nrec = nrec;
  pb->interval = job->rec_interval > 0 ? job->rec_interval : 1;
  pb->nsamples = pb->steps / pb->interval + 1;
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
    st = tw_place(&pb->g, job->rec[r], job->rec_interp, 0, &t, err);
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

tw_status tw_problem_create(const tw_job *job, const tw_velocity *v, tw_problem **out, tw_error *err) {
  tw_problem *pb = calloc(1, sizeof *pb);
  if (!pb) return tw_error_set(err, TW_ENOMEM, "out of memory");
  tw_grid_setup(&pb->g, job->n, job->d, job->origin, job->absorb, job->free_surface);
  pb->order = job->order;
  pb->dt = job->dt;
  pb->steps = job->steps;
  pb->free_surface = job->free_surface;
  pb->dts = job->dts;
  pb->tower_height = job->tower_height;
  pb->device_memory = job->device_memory;
  pb->threads = job->threads;
  tw_status st = TW_OK;
  if (!tw_stencil_setup(job->order, job->d, &pb->st))
    st = tw_error_set(err, TW_EINVAL, "%s: scheme.order: %d is not supported (2, 4, ..., 16)", job->path, job->order);
  const size_t cells = tw_grid_cells(&pb->g);
  if (!st) {
    pb->c2dt2 = malloc(cells * sizeof(float));
    for (int a = 0; a < 3; a++) pb->a[a] = malloc((size_t)pb->g.N[a] * sizeof(float));
    if (!pb->c2dt2 || !pb->a[0] || !pb->a[1] || !pb->a[2])
      st = tw_error_set(err, TW_ENOMEM, "cannot allocate %zu MiB for c²dt² on the padded grid",
                        cells * sizeof(float) >> 20);
  }
  if (!st) {
    tw_extend_c2dt2(&pb->g, v->vp, pb->dt, pb->c2dt2);
    for (int a = 0; a < 3; a++) tw_damping_profile(&pb->g, a, v->vmax, pb->dt, pb->a[a]);
    st = build_sources(pb, job, err);
  }
  if (!st) st = build_receivers(pb, job, err);
  if (st) {
    tw_problem_destroy(pb);
    return st;
  }
  *out = pb;
  return TW_OK;
}

void tw_problem_destroy(tw_problem *pb) {
  if (!pb) return;
  free(pb->c2dt2);
  for (int a = 0; a < 3; a++) free(pb->a[a]);
  free(pb->inj);
  free(pb->S);
  free(pb->tap);
  free(pb->rec_ntap);
  free(pb->rec_tap);
  free(pb->rec_w);
  free(pb->wavelets);
  free(pb);
}

const tw_grid *tw_problem_grid(const tw_problem *pb) { return &pb->g; }
