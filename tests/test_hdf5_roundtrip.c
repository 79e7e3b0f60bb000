/* test_hdf5_roundtrip.c — the result file (io/output.c, xdmf.c, result.c): random traces,
 * snapshots and wavelets written the way a run writes them (traces in uneven time slabs, also
 * out of order and across chunk columns), read back with tw_result_open and with the raw HDF5
 * API, compared bitwise. Also: the temporary name is gone and the final one present after close;
 * the XDMF sidecar names datasets that exist, with their shapes; abort leaves nothing; bad
 * writes fail; a full disk (RLIMIT_FSIZE) fails cleanly; a missing directory is named; files
 * from other tools with missing datasets give errors naming the dataset. Units: every dataset has
 * its "units", every attribute with a unit its "<name>_units" (values checked); the model stored
 * with output.model ([nz][ny][nx]) and its view on the snapshot grid. The output's name, lock and
 * killed runs' temporaries (outpath.c), the lock also against a file that comes under its name
 * while it is taken (open(2) interposed). The tw_job is built by hand, so this test does not
 * depend on the job parser. */
#define _POSIX_C_SOURCE 200809L
#include <fcntl.h>
#include <hdf5.h>
#include <signal.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"
#include "tw_test.h"

static char tmpdir[256];

static void path_in(char *buf, size_t len, const char *name) { snprintf(buf, len, "%s/%s", tmpdir, name); }
static int exists(const char *p) {
  struct stat sb;
  return stat(p, &sb) == 0;
}

static uint64_t rng = 88172645463325252ull;
static float frand(void) { /* xorshift: reproducible, no zeros */
  rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
  return (float)((double)(rng >> 11) / 9007199254740992.0 * 2.0 - 1.0) + 1e-7f;
}
static void fill_random(float *v, size_t n) {
  for (size_t i = 0; i < n; i++) v[i] = frand();
}

/* ---------------------------------------------------------------- the run being "written" */

typedef struct {
  tw_job *job;
  tw_output_desc desc;
  double (*rec)[3], (*src)[3];
  float *wavelets, *traces, *snaps; /* traces [nrec][nsamples], snaps [nsnap][n0][n1][n2] */
  float vp[6 * 5 * 4];              /* the model [nx][ny][nz] (stored when desc.vp is set) */
  long snap_step[8];
  char path[512];
} run;

static const char job_text[] = "grid = { n = [6, 5, 4]; d = [10.0, 12.5, 5.0]; };\n# roundtrip test job\n";

static tw_job *make_job(void) {
  tw_job *j = calloc(1, sizeof *j);
  j->path = strdup("roundtrip.cfg");
  j->text = strdup(job_text);
  j->n[0] = 6, j->n[1] = 5, j->n[2] = 4;
  j->d[0] = 10.0, j->d[1] = 12.5, j->d[2] = 5.0;
  j->origin[0] = -100.0, j->origin[1] = 0.0, j->origin[2] = 25.0;
  j->steps = 40, j->dt = 1e-3, j->order = 8;
  j->absorb[0] = 10, j->absorb[1] = 11, j->absorb[2] = 12;
  j->free_surface = 1;
  j->rec_interval = 3;
  strcpy(j->kernel, "cpu");
  return j;
}

static void free_job(tw_job *j) {
  free(j->path);
  free(j->text);
  free(j);
}

/* nrec receivers, nsnap snapshots of [3][5][2] (non-cubic), 2 sources. */
static void make_run(run *r, const char *name, long nrec, int nsnap) {
  memset(r, 0, sizeof *r);
  r->job = make_job();
  path_in(r->path, sizeof r->path, name);
  tw_output_desc *d = &r->desc;
  d->job = r->job;
  d->path = r->path;
  d->kernel = "cpu-diamond";
  d->dt = r->job->dt;
  d->steps = r->job->steps;
  d->nrec = nrec;
  d->nsamples = d->steps / r->job->rec_interval + 1; /* 14 */
  r->rec = malloc((size_t)(nrec ? nrec : 1) * sizeof *r->rec);
  for (long i = 0; i < nrec; i++)
    for (int a = 0; a < 3; a++) r->rec[i][a] = 1000.0 * frand();
  d->rec = (const double(*)[3])r->rec;
  d->nsrc = 2;
  r->src = malloc(2 * sizeof *r->src);
  for (int i = 0; i < 6; i++) r->src[i / 3][i % 3] = 500.0 * frand();
  d->src = (const double(*)[3])r->src;
  r->wavelets = malloc(2 * (size_t)(d->steps + 1) * sizeof(float));
  fill_random(r->wavelets, 2 * (size_t)(d->steps + 1));
  d->wavelets = r->wavelets;
  d->nsnap = nsnap;
  d->snap_lo[0] = 1, d->snap_lo[1] = 0, d->snap_lo[2] = 1;
  d->snap_n[0] = 3, d->snap_n[1] = 5, d->snap_n[2] = 2;
  d->snap_dec = 2;
  r->traces = malloc((size_t)(nrec ? nrec : 1) * (size_t)d->nsamples * sizeof(float));
  fill_random(r->traces, (size_t)nrec * (size_t)d->nsamples);
  r->snaps = malloc((size_t)(nsnap ? nsnap : 1) * 30 * sizeof(float));
  fill_random(r->snaps, (size_t)nsnap * 30);
  for (int s = 0; s < nsnap; s++) r->snap_step[s] = 10 * (s + 1);
  for (int c = 0; c < 120; c++) r->vp[c] = 1500.0f + (float)c;
  d->vp_min = 1500.0, d->vp_max = 1619.0;
}

static void free_run(run *r) {
  free_job(r->job);
  free(r->rec), free(r->src), free(r->wavelets), free(r->traces), free(r->snaps);
}

/* Write samples [first, first + count) as the solver would: a [nrec][count] slab. */
static tw_status write_slab(tw_output *o, const run *r, long first, long count, tw_error *err) {
  long nrec = r->desc.nrec, ns = r->desc.nsamples;
  float *slab = malloc((size_t)(nrec ? nrec : 1) * (size_t)(count ? count : 1) * sizeof(float));
  for (long i = 0; i < nrec; i++)
    for (long s = 0; s < count && first + s < ns; s++) slab[i * count + s] = r->traces[i * ns + first + s];
  tw_status st = tw_output_write_traces(o, first, count, slab, err);
  free(slab);
  return st;
}

/* ---------------------------------------------------------------- raw HDF5 checks */

static void check_dataset_bytes(hid_t f, const char *name, hid_t mtype, const void *want, size_t bytes) {
  hid_t ds = H5Dopen2(f, name, H5P_DEFAULT);
  CHECK(ds >= 0, "raw: open %s", name);
  if (ds < 0) return;
  void *got = malloc(bytes ? bytes : 1);
  herr_t rc = H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, got);
  CHECK(rc >= 0, "raw: read %s", name);
  CHECK(rc >= 0 && memcmp(got, want, bytes) == 0, "raw: %s differs from what was written", name);
  free(got);
  H5Dclose(ds);
}

static void check_attr_double(hid_t obj, const char *name, int n, const double *want) {
  double got[3] = {0, 0, 0};
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  herr_t rc = a >= 0 ? H5Aread(a, H5T_NATIVE_DOUBLE, got) : -1;
  CHECK(rc >= 0, "raw: attribute %s", name);
  CHECK(memcmp(got, want, (size_t)n * sizeof(double)) == 0, "raw: attribute %s = %g ... expected %g ...", name, got[0],
        want[0]);
  if (a >= 0) H5Aclose(a);
}

static void check_attr_string(hid_t obj, const char *name, const char *want) {
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t t = H5Tcopy(H5T_C_S1);
  H5Tset_size(t, H5T_VARIABLE);
  H5Tset_cset(t, H5T_CSET_UTF8);
  char *s = NULL;
  herr_t rc = a >= 0 ? H5Aread(a, t, &s) : -1;
  CHECK(rc >= 0 && s && strcmp(s, want) == 0, "raw: attribute %s = \"%s\", expected \"%s\"", name, s ? s : "(null)",
        want);
  if (s) H5free_memory(s);
  H5Tclose(t);
  if (a >= 0) H5Aclose(a);
}

/* ---------------------------------------------------------------- units, model */

/* Every dataset's "units", by name (views by the dataset they show). */
static herr_t units_of_dataset(hid_t loc, const char *name, const H5O_info_t *info, void *data) {
  if (info->type != H5O_TYPE_DATASET) return 0;
  static const char *const want[][2] = {{"receivers/coords", "m"},     {"receivers/traces", "Pa"},
                                        {"sources/coords", "m"},       {"sources/wavelets", "kg s-2"},
                                        {"snapshots/p", "Pa"},         {"snapshots/times", "s"},
                                        {"snapshots/steps", "time steps"}, {"model/vp", "m/s"},
                                        {"snapshots/views/vp", "m/s"}, {"snapshots/views/step_", "Pa"}};
  const char *units = NULL;
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
    if (strncmp(name, want[i][0], strlen(want[i][0])) == 0) units = want[i][1];
  CHECK(units != NULL, "units: dataset %s is not in the test's table", name);
  hid_t ds = H5Dopen2(loc, name, H5P_DEFAULT);
  if (units) check_attr_string(ds, "units", units);
  H5Dclose(ds);
  (*(int *)data)++;
  return 0;
}

static void check_units(hid_t f, const tw_output_desc *d) {
  int n = 0;
  H5Ovisit(f, H5_INDEX_NAME, H5_ITER_INC, units_of_dataset, &n);
  CHECK(n >= 2, "units: %d datasets visited", n); /* at least /sources/coords and wavelets */
  static const char *const root[][2] = {{"d_units", "m"},         {"origin_units", "m"},     {"dt_units", "s"},
                                        {"wall_time_units", "s"}, {"vp_min_units", "m/s"},   {"vp_max_units", "m/s"},
                                        {"n_units", "cells"},     {"steps_units", "time steps"},
                                        {"gcells_per_s_units", "1e9 cell updates per second"}};
  for (size_t i = 0; i < sizeof root / sizeof root[0]; i++) check_attr_string(f, root[i][0], root[i][1]);
  if (d->nsnap > 0) {
    hid_t g = H5Gopen2(f, "/snapshots", H5P_DEFAULT);
    check_attr_string(g, "origin_units", "m");
    check_attr_string(g, "spacing_units", "m");
    H5Gclose(g);
  }
  if (d->nrec > 0) {
    hid_t ds = H5Dopen2(f, "/receivers/traces", H5P_DEFAULT);
    check_attr_string(ds, "dt_units", "s");
    check_attr_string(ds, "interval_units", "time steps");
    H5Dclose(ds);
  }
}

/* /model/vp [nz][ny][nx] = the model; its view = the model on the snapshot grid
 * (first cell (1, 0, 1), every dec-th cell, [3][5][2] in model order). */
static void check_model(hid_t f, const run *r) {
  float want[120], got[120];
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 4; k++) want[(k * 5 + j) * 6 + i] = r->vp[(i * 5 + j) * 4 + k];
  check_dataset_bytes(f, "/model/vp", H5T_NATIVE_FLOAT, want, sizeof want);
  if (r->desc.nsnap == 0 || H5Lexists(f, "/snapshots/views", H5P_DEFAULT) <= 0) return;
  hid_t ds = H5Dopen2(f, "/snapshots/views/vp", H5P_DEFAULT);
  CHECK(ds >= 0 && H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, got) >= 0, "raw: view of the model");
  int bad = 0, e = r->desc.snap_dec;
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 5; j++)
      for (int k = 0; k < 2; k++) bad += got[(k * 5 + j) * 3 + i] != r->vp[((1 + e * i) * 5 + e * j) * 4 + 1 + e * k];
  CHECK(bad == 0, "raw: /snapshots/views/vp: %d values differ from the model on the snapshot grid", bad);
  if (ds >= 0) H5Dclose(ds);
}

static void check_raw(const run *r, const int *written, int nwritten) {
  hid_t f = H5Fopen(r->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0, "raw: open %s", r->path);
  const tw_output_desc *d = &r->desc;
  if (d->nrec > 0) {
    check_dataset_bytes(f, "/receivers/traces", H5T_NATIVE_FLOAT, r->traces, (size_t)d->nrec * (size_t)d->nsamples * 4);
    check_dataset_bytes(f, "/receivers/coords", H5T_NATIVE_DOUBLE, r->rec, (size_t)d->nrec * 24);
  } else {
    CHECK(H5Lexists(f, "/receivers", H5P_DEFAULT) > 0, "raw: /receivers group present with no receivers");
    CHECK(H5Lexists(f, "/receivers/traces", H5P_DEFAULT) == 0, "raw: no traces dataset with no receivers");
  }
  check_dataset_bytes(f, "/sources/wavelets", H5T_NATIVE_FLOAT, r->wavelets, 2 * (size_t)(d->steps + 1) * 4);
  check_dataset_bytes(f, "/sources/coords", H5T_NATIVE_DOUBLE, r->src, 2 * 24);
  if (d->nsnap > 0 && nwritten == d->nsnap) { /* [nsnap][3][5][2] handed over, [nsnap][2][5][3] in the file */
    float zyx[8 * 30];
    for (int s = 0; s < d->nsnap; s++)
      for (int i = 0; i < 3; i++)
        for (int j = 0; j < 5; j++)
          for (int k = 0; k < 2; k++) zyx[s * 30 + (k * 5 + j) * 3 + i] = r->snaps[s * 30 + (i * 5 + j) * 2 + k];
    check_dataset_bytes(f, "/snapshots/p", H5T_NATIVE_FLOAT, zyx, (size_t)d->nsnap * 30 * 4);
  }
  if (d->nsnap == 0) CHECK(H5Lexists(f, "/snapshots", H5P_DEFAULT) == 0, "raw: no /snapshots without snapshots");
  /* unwritten snapshots keep step -1 */
  if (d->nsnap > 0) {
    long long steps[8];
    hid_t ds = H5Dopen2(f, "/snapshots/steps", H5P_DEFAULT);
    CHECK(ds >= 0 && H5Dread(ds, H5T_NATIVE_LLONG, H5S_ALL, H5S_ALL, H5P_DEFAULT, steps) >= 0, "raw: steps");
    for (int s = 0; s < d->nsnap; s++) {
      int w = 0;
      for (int i = 0; i < nwritten; i++) w |= written[i] == s;
      CHECK(steps[s] == (w ? r->snap_step[s] : -1), "raw: steps[%d] = %lld", s, steps[s]);
    }
    if (ds >= 0) H5Dclose(ds);
    hid_t g = H5Gopen2(f, "/snapshots", H5P_DEFAULT);
    const double dec = d->snap_dec, origin[3] = {-100.0 + 10.0, 0.0, 25.0 + 5.0},
                 spacing[3] = {10.0 * dec, 12.5 * dec, 5.0 * dec};
    check_attr_double(g, "origin", 3, origin);
    check_attr_double(g, "spacing", 3, spacing);
    H5Gclose(g);
  }
  /* root attributes, including the ones set at the end (the second set of a name wins) */
  check_attr_double(f, "d", 3, r->job->d);
  check_attr_double(f, "origin", 3, r->job->origin);
  check_attr_double(f, "dt", 1, &r->job->dt);
  const double wall = 2.5, rate = 0.125;
  check_attr_double(f, "wall_time", 1, &wall);
  check_attr_double(f, "gcells_per_s", 1, &rate);
  check_attr_string(f, "version", TW_VERSION);
  check_attr_string(f, "job", job_text);
  check_attr_string(f, "kernel", "cpu-diamond");
  check_attr_string(f, "host", "second");
  int n[3] = {0, 0, 0}, absorb[3] = {0, 0, 0};
  hid_t a = H5Aopen(f, "n", H5P_DEFAULT);
  CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_INT, n) >= 0 && n[0] == 6 && n[1] == 5 && n[2] == 4, "raw: n");
  if (a >= 0) H5Aclose(a);
  a = H5Aopen(f, "absorbing", H5P_DEFAULT);
  CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_INT, absorb) >= 0 && absorb[2] == 12, "raw: absorbing");
  if (a >= 0) H5Aclose(a);
  if (d->nrec > 0) {
    hid_t ds = H5Dopen2(f, "/receivers/traces", H5P_DEFAULT);
    const double sdt = 3e-3;
    check_attr_double(ds, "dt", 1, &sdt);
    H5Dclose(ds);
  }
  long long shot = -1;
  a = H5Aopen(f, "shot", H5P_DEFAULT);
  CHECK(a >= 0 && H5Aread(a, H5T_NATIVE_LLONG, &shot) >= 0 && shot == d->shot, "raw: shot %lld", shot);
  if (a >= 0) H5Aclose(a);
  check_attr_double(f, "vp_min", 1, &d->vp_min);
  check_attr_double(f, "vp_max", 1, &d->vp_max);
  check_units(f, d);
  if (d->vp) check_model(f, r);
  H5Fclose(f);
}

/* ---------------------------------------------------------------- tw_result checks */

static void check_result(const run *r, const int *written, int nwritten) {
  tw_result *res = NULL;
  tw_error err = {0};
  tw_status st = tw_result_open(r->path, &res, &err);
  CHECK(st == TW_OK && res, "tw_result_open: %s", err.msg);
  if (!res) return;
  const tw_output_desc *d = &r->desc;
  CHECK(strcmp(res->kernel, "cpu-diamond") == 0, "result kernel %s", res->kernel);
  CHECK(strcmp(res->job_text, job_text) == 0, "result job text");
  CHECK(memcmp(res->n, r->job->n, sizeof res->n) == 0, "result n");
  CHECK(memcmp(res->d, r->job->d, sizeof res->d) == 0, "result d");
  CHECK(memcmp(res->origin, r->job->origin, sizeof res->origin) == 0, "result origin");
  CHECK(res->dt == r->job->dt && res->steps == 40 && res->order == 8, "result dt/steps/order");
  CHECK(res->nrec == d->nrec, "result nrec %ld", res->nrec);
  if (d->nrec > 0) {
    CHECK(res->nsamples == d->nsamples, "result nsamples %ld", res->nsamples);
    CHECK(res->sample_dt == 3 * r->job->dt, "result sample dt %g", res->sample_dt);
    CHECK(memcmp(res->rec, r->rec, (size_t)d->nrec * 24) == 0, "result receiver coords differ");
    CHECK(memcmp(res->traces, r->traces, (size_t)d->nrec * (size_t)d->nsamples * 4) == 0, "result traces differ");
  }
  CHECK(res->nsnap == d->nsnap, "result nsnap %d", res->nsnap);
  if (d->nsnap > 0) {
    CHECK(res->snap_shape[0] == 3 && res->snap_shape[1] == 5 && res->snap_shape[2] == 2, "result snapshot shape");
    float buf[30];
    for (int i = 0; i < nwritten; i++) {
      int s = written[i];
      CHECK(res->snap_steps[s] == r->snap_step[s], "result step[%d] %ld", s, res->snap_steps[s]);
      CHECK(res->snap_times[s] == (double)r->snap_step[s] * r->job->dt, "result time[%d] %g", s, res->snap_times[s]);
      st = tw_result_read_snapshot(res, s, buf, &err);
      CHECK(st == TW_OK, "read snapshot %d: %s", s, err.msg);
      CHECK(memcmp(buf, r->snaps + (size_t)s * 30, sizeof buf) == 0, "result snapshot %d differs", s);
    }
    st = tw_result_read_snapshot(res, d->nsnap, buf, &err);
    CHECK(st == TW_ERANGE, "read snapshot out of range: %s", tw_status_name(st));
  }
  tw_result_close(res);
}

/* ---------------------------------------------------------------- XDMF checks */

static char *slurp(const char *path) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  fseek(f, 0, SEEK_END);
  long n = ftell(f);
  fseek(f, 0, SEEK_SET);
  char *s = malloc((size_t)n + 1);
  size_t got = fread(s, 1, (size_t)n, f);
  s[got] = '\0';
  fclose(f);
  return s;
}

/* The numbers of the last Dimensions="..." before `at`. */
static int dims_before(const char *doc, const char *at, long *dims, int max) {
  const char *best = NULL;
  for (const char *p = doc; (p = strstr(p, "Dimensions=\"")) && p < at; p++) best = p;
  if (!best) return 0;
  const char *s = best + strlen("Dimensions=\"");
  int n = 0;
  while (n < max && *s != '"') {
    char *end;
    dims[n++] = strtol(s, &end, 10);
    s = end;
  }
  return n;
}

static void check_xdmf(const run *r, int nwritten) {
  char xpath[600];
  snprintf(xpath, sizeof xpath, "%.*s.xdmf", (int)(strlen(r->path) - 3), r->path);
  char *doc = slurp(xpath);
  CHECK(doc != NULL, "xdmf %s exists", xpath);
  if (!doc) return;
  hid_t f = H5Fopen(r->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  REQUIRE(f >= 0, "open %s", r->path);
  const char *base = strrchr(r->path, '/') + 1;
  char ref[256];
  snprintf(ref, sizeof ref, ">%s:", base);
  int refs = 0;
  for (const char *p = doc; (p = strstr(p, ".h5:")); p++) {
    /* the reference is relative: the basename alone, right after the tag */
    const char *tag = p;
    while (tag > doc && *tag != '>') tag--;
    CHECK(strncmp(tag, ref, strlen(ref)) == 0, "xdmf reference is not the bare basename: %.40s", tag);
    char dset[256];
    CHECK(sscanf(p + 4, "%255[^<]", dset) == 1, "xdmf dataset path");
    CHECK(H5Lexists(f, dset, H5P_DEFAULT) > 0, "xdmf names %s, which does not exist", dset);
    hid_t ds = H5Dopen2(f, dset, H5P_DEFAULT);
    hsize_t hd[4] = {0};
    int rank = -1;
    if (ds >= 0) {
      hid_t sp = H5Dget_space(ds);
      rank = H5Sget_simple_extent_dims(sp, hd, NULL);
      H5Sclose(sp);
      H5Dclose(ds);
    }
    long xd[8];
    int xn = dims_before(doc, p, xd, 8);
    CHECK(xn == rank, "xdmf rank %d vs dataset rank %d", xn, rank);
    for (int i = 0; i < xn && i < rank; i++) CHECK((hsize_t)xd[i] == hd[i], "xdmf dimension %d: %ld vs %llu", i, xd[i], (unsigned long long)hd[i]);
    refs++;
  }
  const int per_grid = r->desc.vp ? 2 : 1; /* p, and vp with the model stored */
  CHECK(refs == nwritten * per_grid, "xdmf has %d references, expected %d", refs, nwritten * per_grid);
  /* topology = the file's snapshot shape [nz][ny][nx], slowest first */
  const char *topo = strstr(doc, "3DCoRectMesh\" Dimensions=\"2 5 3\"");
  CHECK(topo != NULL, "xdmf topology dimensions \"2 5 3\"");
  /* origin / spacing in the same (slowest-first) axis order, ParaView's Z = -depth */
  CHECK(strstr(doc, ">-30 0 -90<") != NULL, "xdmf origin \"-30 0 -90\"");
  const char *sp = r->desc.snap_dec == 2 ? ">-10 25 20<" : ">-5 12.5 10<";
  CHECK(strstr(doc, sp) != NULL, "xdmf spacing \"%s\"", sp);
  int grids = 0;
  for (const char *p = doc; (p = strstr(p, "GridType=\"Uniform\"")); p++) grids++;
  CHECK(grids == nwritten, "xdmf grids %d, expected %d", grids, nwritten);
  H5Fclose(f);
  free(doc);
}

/* ---------------------------------------------------------------- scenarios */

/* slabs: {first, count} pairs, in the order written */
static void roundtrip(const char *name, long nrec, int nsnap, const long (*slabs)[2], int nslabs, const int *order,
                      int nwritten) {
  run r;
  make_run(&r, name, nrec, nsnap);
  if (nsnap == 3) /* output.model (the snapshot box inside the model: every cell), a shot of a survey */
    r.desc.vp = r.vp, r.desc.snap_dec = 1, r.desc.shot = nrec;
  tw_output *o = NULL;
  tw_error err = {0};
  tw_status st = tw_output_create(&r.desc, &o, &err);
  REQUIRE(st == TW_OK, "%s: create: %s", name, err.msg);
  char temp[600];
  snprintf(temp, sizeof temp, "%s", tw_output_temp_path(o));
  CHECK(exists(temp) && !exists(r.path), "%s: temp %s exists, final does not (yet)", name, temp);
  for (int i = 0; i < nslabs; i++) {
    st = write_slab(o, &r, slabs[i][0], slabs[i][1], &err);
    CHECK(st == TW_OK, "%s: traces [%ld, +%ld): %s", name, slabs[i][0], slabs[i][1], err.msg);
  }
  for (int i = 0; i < nwritten; i++) {
    int s = order[i];
    st = tw_output_write_snapshot(o, s, r.snap_step[s], r.snaps + (size_t)s * 30, &err);
    CHECK(st == TW_OK, "%s: snapshot %d: %s", name, s, err.msg);
  }
  CHECK(tw_output_set_attr_double(o, "wall_time", 2.5, &err) == TW_OK, "wall_time: %s", err.msg);
  CHECK(tw_output_set_attr_double(o, "gcells_per_s", 1.0, &err) == TW_OK, "rate: %s", err.msg);
  CHECK(tw_output_set_attr_double(o, "gcells_per_s", 0.125, &err) == TW_OK, "rate again: %s", err.msg);
  CHECK(tw_output_set_attr_string(o, "host", "first", &err) == TW_OK, "host: %s", err.msg);
  CHECK(tw_output_set_attr_string(o, "host", "second", &err) == TW_OK, "host again: %s", err.msg);
  st = tw_output_close(o, &err);
  CHECK(st == TW_OK, "%s: close: %s", name, err.msg);
  CHECK(exists(r.path), "%s: final name exists after close", name);
  struct stat sb; /* check's estimate is an upper bound (HDF5 writes whole chunks) */
  CHECK(stat(r.path, &sb) == 0 && (double)sb.st_size <= tw_output_expected_bytes(&r.desc),
        "%s: %lld B on disk, above tw_output_expected_bytes %.0f", name, (long long)sb.st_size,
        tw_output_expected_bytes(&r.desc));
  CHECK(!exists(temp), "%s: temp name gone after close", name);
  check_raw(&r, order, nwritten);
  check_result(&r, order, nwritten);
  if (nwritten > 0) {
    check_xdmf(&r, nwritten);
  } else {
    char xpath[600];
    snprintf(xpath, sizeof xpath, "%.*s.xdmf", (int)(strlen(r.path) - 3), r.path);
    CHECK(!exists(xpath), "%s: no xdmf without snapshots", name);
  }
  free_run(&r);
}

static void test_roundtrips(void) {
  /* default buffering: one chunk column; uneven slabs in order */
  const long seq[][2] = {{0, 1}, {1, 4}, {5, 1}, {6, 7}, {13, 1}};
  const int all[] = {2, 0, 1};
  roundtrip("seq.h5", 7, 3, seq, 5, all, 3);

  /* tiny buffer: 8-sample chunk columns; slabs out of order and across column boundaries */
  long saved = tw_output_trace_buffer_cap;
  tw_output_trace_buffer_cap = 1;
  const long shuffled[][2] = {{6, 5}, {0, 3}, {11, 3}, {3, 3}, {7, 2}}; /* [7, 9) rewritten */
  const int some[] = {2, 0};                                            /* snapshot 1 never written */
  roundtrip("shuffled.h5", 70, 3, shuffled, 5, some, 2);
  /* 14 samples in chunk columns of 8: the file holds 16 (the size estimate counts whole chunks) */
  const long whole[][2] = {{0, 14}};
  roundtrip("padded.h5", 300000, 0, whole, 1, NULL, 0);
  tw_output_trace_buffer_cap = saved;

  /* nothing to record: groups skipped gracefully */
  const long none[][2] = {{0, 14}};
  roundtrip("empty.h5", 0, 0, none, 1, NULL, 0);
}

static void test_abort_and_bad_writes(void) {
  run r;
  make_run(&r, "aborted.h5", 5, 2);
  tw_output *o = NULL;
  tw_error err = {0};
  tw_status cst = tw_output_create(&r.desc, &o, &err); /* REQUIRE evaluates its condition twice */
  REQUIRE(cst == TW_OK, "create: %s", err.msg);
  char temp[600];
  snprintf(temp, sizeof temp, "%s", tw_output_temp_path(o));
  CHECK(write_slab(o, &r, 0, 4, &err) == TW_OK, "slab: %s", err.msg);
  tw_status st = write_slab(o, &r, 10, 5, &err); /* [10, 15) beyond nsamples = 14 */
  CHECK(st == TW_ERANGE && strstr(err.msg, "aborted.h5"), "traces beyond nsamples: %s %s", tw_status_name(st), err.msg);
  st = tw_output_write_traces(o, -1, 1, r.traces, &err);
  CHECK(st == TW_ERANGE, "traces before 0: %s", tw_status_name(st));
  st = tw_output_write_snapshot(o, 2, 10, r.snaps, &err);
  CHECK(st == TW_ERANGE && strstr(err.msg, "snapshot index 2"), "snapshot index out of range: %s", err.msg);
  st = tw_output_write_snapshot(o, 0, 41, r.snaps, &err);
  CHECK(st == TW_ERANGE, "snapshot step out of range: %s", err.msg);
  tw_output_abort(o);
  CHECK(!exists(r.path) && !exists(temp), "abort leaves neither %s nor %s", r.path, temp);
  free_run(&r);
}

/* A file system that refuses to grow the file, like a full disk: RLIMIT_FSIZE makes the write
 * that extends the file past the limit fail with EFBIG (SIGXFSZ). The handler then lifts the
 * limit again: RLIMIT_FSIZE, unlike a full disk, would also refuse the in-memory file the output
 * discards into. Some call must fail with an error naming the file (not crash, also not at exit
 * inside HDF5), and nothing may appear under the final name.
 *   direct = 1: a 2 MiB snapshot chunk bypasses HDF5's chunk cache → tw_output_write_snapshot fails.
 *   direct = 0: a 64 KiB chunk stays cached → the failure shows in tw_output_close. */
static volatile sig_atomic_t xfsz_seen;

/* HDF5 1.10.8 leaks the chunk buffer (H5FL_blk_malloc under H5D__write) when a chunk written
 * past the chunk cache fails; that is HDF5's, not ours. The sanitizer runtime reads these hooks
 * in the TW_SANITIZE build (elsewhere they are unused functions): slow unwinding so that the
 * stack reaches through HDF5 (built without frame pointers) to H5D__write, and a suppression of
 * exactly that path. */
const char *__asan_default_options(void);
const char *__asan_default_options(void) { return "fast_unwind_on_malloc=0"; }
const char *__lsan_default_suppressions(void);
const char *__lsan_default_suppressions(void) { return "leak:H5D__write\n"; }
static void on_xfsz(int sig) {
  (void)sig;
  struct rlimit r;
  getrlimit(RLIMIT_FSIZE, &r);
  r.rlim_cur = r.rlim_max;
  setrlimit(RLIMIT_FSIZE, &r);
  xfsz_seen++;
}

/* The reason in one line: the system's words for errno, not HDF5's record of the failed write
 * (time, descriptor, buffer address, sizes: "errno = 27, error message = 'File too large', buf =
 * 0x..."). */
static void full_disk_reason(const tw_error *err) {
  CHECK(strstr(err->msg, "File too large (errno 27)") && !strstr(err->msg, "buf = ") && !strstr(err->msg, "time = ") &&
            !strchr(err->msg, '\n'), "full disk: the reason in one line: %s", err->msg);
}

static void test_full_disk(int direct) {
  run r;
  make_run(&r, direct ? "full_direct.h5" : "full_cached.h5", 4, 1);
  int n0 = direct ? 256 : 8; /* 2 MiB or 64 KiB; the chunk cache holds 1 MiB */
  r.desc.snap_n[0] = n0, r.desc.snap_n[1] = 64, r.desc.snap_n[2] = 32;
  size_t ncell = (size_t)n0 * 64 * 32;
  float *big = malloc(ncell * sizeof(float));
  fill_random(big, ncell);
  tw_output *o = NULL;
  tw_error err = {0};
  tw_status st = tw_output_create(&r.desc, &o, &err);
  REQUIRE(st == TW_OK, "full disk: create: %s", err.msg);
  char temp[600];
  snprintf(temp, sizeof temp, "%s", tw_output_temp_path(o));
  struct stat sb;
  stat(temp, &sb);
  struct rlimit old, lim;
  getrlimit(RLIMIT_FSIZE, &old);
  lim = old;
  lim.rlim_cur = (rlim_t)sb.st_size + 1; /* any write that grows the file fails */
  xfsz_seen = 0;
  void (*prev)(int) = signal(SIGXFSZ, on_xfsz);
  int lim_rc = setrlimit(RLIMIT_FSIZE, &lim);
  REQUIRE(lim_rc == 0, "setrlimit");
  st = tw_output_write_snapshot(o, 0, 10, big, &err);
  if (direct) {
    CHECK(st == TW_EIO, "full disk: direct snapshot write must fail: %s", tw_status_name(st));
    CHECK(strstr(err.msg, "/snapshots/p") && strstr(err.msg, temp), "full disk: message names dataset and file: %s",
          err.msg);
    full_disk_reason(&err);
    tw_status st2 = tw_output_write_traces(o, 0, 1, r.traces, &err);
    CHECK(st2 == TW_EIO, "full disk: writes after a failure are refused: %s", tw_status_name(st2));
  } else {
    CHECK(st == TW_OK, "full disk: cached snapshot write: %s", err.msg);
  }
  st = tw_output_close(o, &err);
  CHECK(st == TW_EIO, "full disk: close must fail: %s", tw_status_name(st));
  CHECK(strstr(err.msg, direct ? "full_direct.h5" : "full_cached.h5"), "full disk: close message names the file: %s",
        err.msg);
  if (!direct) full_disk_reason(&err);
  setrlimit(RLIMIT_FSIZE, &old);
  signal(SIGXFSZ, prev);
  CHECK(xfsz_seen > 0, "full disk: the file size limit was hit");
  CHECK(!exists(r.path), "full disk: nothing under the final name");
  CHECK(!exists(temp), "full disk: temporary file removed");
  free(big);
  free_run(&r);
}

/* A result that cannot fit on the file system is refused at create, before the run. */
static void test_no_space(void) {
  run r;
  make_run(&r, "huge.h5", 1, 0);
  r.desc.nsamples = 10000000000000L; /* 40 TB of traces */
  tw_output *o = NULL;
  tw_error err = {0};
  tw_status st = tw_output_create(&r.desc, &o, &err);
  CHECK(st == TW_EIO && o == NULL && strstr(err.msg, "huge.h5") && strstr(err.msg, "free"), "no space: %s", err.msg);
  CHECK(!exists(r.path), "no space: nothing created");
  free_run(&r);
}

static void test_missing_directory(void) {
  run r;
  make_run(&r, "no/such/dir/out.h5", 2, 0);
  tw_output *o = NULL;
  tw_error err = {0};
  tw_status st = tw_output_create(&r.desc, &o, &err);
  CHECK(st == TW_EIO && o == NULL, "missing directory: %s", tw_status_name(st));
  CHECK(strstr(err.msg, "no/such/dir/out.h5") && strstr(err.msg, "No such file"), "message: %s", err.msg);
  free_run(&r);
}

/* Files from other tools: a dataset missing where one is expected is named in the error. */
static void test_foreign_files(void) {
  char p[512];
  path_in(p, sizeof p, "foreign.h5");
  hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  hid_t sc = H5Screate(H5S_SCALAR);
  hsize_t three = 3;
  hid_t v3 = H5Screate_simple(1, &three, NULL);
  int n[3] = {4, 4, 4};
  double d[3] = {1, 1, 1}, dt = 1e-3;
  long long steps = 10;
  int order = 4;
  struct {
    const char *name;
    hid_t sp, mt;
    const void *v;
  } attrs[] = {{"n", v3, H5T_NATIVE_INT, n},
               {"d", v3, H5T_NATIVE_DOUBLE, d},
               {"origin", v3, H5T_NATIVE_DOUBLE, d},
               {"dt", sc, H5T_NATIVE_DOUBLE, &dt},
               {"steps", sc, H5T_NATIVE_LLONG, &steps},
               {"order", sc, H5T_NATIVE_INT, &order}};
  for (size_t i = 0; i < sizeof attrs / sizeof attrs[0]; i++) {
    hid_t a = H5Acreate2(f, attrs[i].name, attrs[i].mt, attrs[i].sp, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(a, attrs[i].mt, attrs[i].v);
    H5Aclose(a);
  }
  tw_result *res = NULL;
  tw_error err = {0};
  H5Fflush(f, H5F_SCOPE_GLOBAL);
  tw_status st = tw_result_open(p, &res, &err);
  CHECK(st == TW_EFORMAT && strstr(err.msg, "/receivers") && strstr(err.msg, "foreign.h5"), "no /receivers: %s",
        err.msg);
  /* a receivers group with coordinates but no traces */
  hid_t g = H5Gcreate2(f, "/receivers", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  hsize_t cd[2] = {2, 3};
  hid_t sp = H5Screate_simple(2, cd, NULL);
  double coords[6] = {0};
  hid_t ds = H5Dcreate2(f, "/receivers/coords", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  H5Dwrite(ds, H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, coords);
  H5Dclose(ds);
  H5Sclose(sp);
  H5Gclose(g);
  H5Fflush(f, H5F_SCOPE_GLOBAL);
  st = tw_result_open(p, &res, &err);
  CHECK(st == TW_EFORMAT && strstr(err.msg, "'/receivers/traces'") && strstr(err.msg, "foreign.h5"),
        "missing traces: %s", err.msg);
  CHECK(res == NULL, "no result on error");
  /* with traces (and a fixed-length string attribute, as other tools write them) it opens */
  hsize_t td[2] = {2, 5};
  sp = H5Screate_simple(2, td, NULL);
  float tr[10] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10};
  ds = H5Dcreate2(f, "/receivers/traces", H5T_IEEE_F64LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT); /* float64 */
  H5Dwrite(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, tr);
  hid_t a = H5Acreate2(ds, "dt", H5T_NATIVE_DOUBLE, sc, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, H5T_NATIVE_DOUBLE, &dt);
  H5Aclose(a);
  H5Dclose(ds);
  H5Sclose(sp);
  hid_t st10 = H5Tcopy(H5T_C_S1);
  H5Tset_size(st10, 10);
  H5Tset_strpad(st10, H5T_STR_NULLPAD);
  a = H5Acreate2(f, "kernel", st10, sc, H5P_DEFAULT, H5P_DEFAULT);
  H5Awrite(a, st10, "other-tool");
  H5Aclose(a);
  H5Tclose(st10);
  H5Fflush(f, H5F_SCOPE_GLOBAL);
  st = tw_result_open(p, &res, &err);
  CHECK(st == TW_OK && res, "foreign file with traces: %s", err.msg);
  if (res) {
    CHECK(strcmp(res->kernel, "other-tool") == 0 && res->job_text[0] == '\0', "foreign kernel \"%s\"", res->kernel);
    CHECK(res->nrec == 2 && res->nsamples == 5 && res->nsnap == 0 && res->order == 4 && res->steps == 10,
          "foreign shape");
    CHECK(memcmp(res->traces, tr, sizeof tr) == 0, "foreign traces converted from float64");
    tw_result_close(res);
  }
  H5Sclose(sc);
  H5Sclose(v3);
  H5Fclose(f);
  st = tw_result_open("/nonexistent/x.h5", &res, &err);
  CHECK(st == TW_EIO && strstr(err.msg, "/nonexistent/x.h5"), "missing file: %s", err.msg);
}

/* ---------------------------------------------------------------- the output's name (outpath.c)
 * Here rather than in a CLI test so that it runs under ASan + UBSan in CI (scripts/test.sh). */

static int link_hard(const char *from, const char *to) { return link(from, to) == 0; }

static void touch(const char *name, const char *text) {
  char p[600];
  path_in(p, sizeof p, name);
  FILE *f = fopen(p, "w");
  REQUIRE(f, "create %s", p);
  fputs(text, f);
  fclose(f);
}

/* Temporaries of earlier runs of this output whose process is gone are listed, then removed; our
 * own, other outputs' and other names stay. (PIDs above any pid_max: no such process.) */
static void test_stale(void) {
  char out[600], own[64], p[600];
  path_in(out, sizeof out, "o.h5");
  snprintf(own, sizeof own, "o.h5.part-%ld", (long)getpid());
  const char *gone[] = {"o.h5.part-999999999", "o.xdmf.part-999999998", "o.sgy.part-999999997", "o.h5.check-999999996"};
  const char *keep[] = {own, "o.h5.part-12x", "o.h5.part-", "other.h5.part-999999995", "o.h5.part-999999999.bak"};
  for (int i = 0; i < 4; i++) touch(gone[i], "x");
  for (int i = 0; i < 5; i++) touch(keep[i], "x");
  char **names = NULL;
  int n = 0;
  tw_error err = {0};
  CHECK(tw_output_stale(out, 0, TW_OUTPUT_RUN, &names, &n, &err) == TW_OK && n == 4, "stale: %d listed (%s)", n,
        err.msg);
  for (int i = 0; i < n; i++) {
    int known = 0;
    for (int k = 0; k < 4; k++) {
      path_in(p, sizeof p, gone[k]);
      known |= strcmp(names[i], p) == 0;
    }
    CHECK(known, "stale: listed %s", names[i]);
  }
  tw_output_stale_free(names, n);
  CHECK(tw_output_stale(out, 1, TW_OUTPUT_RUN, &names, &n, &err) == TW_OK && n == 4, "stale: %d removed", n);
  tw_output_stale_free(names, n);
  for (int i = 0; i < 4; i++) {
    path_in(p, sizeof p, gone[i]);
    CHECK(!exists(p), "stale: %s not removed", gone[i]);
  }
  for (int i = 0; i < 5; i++) {
    path_in(p, sizeof p, keep[i]);
    CHECK(exists(p), "stale: %s removed", keep[i]);
  }
  /* One that is not a file (no run wrote it) refuses the output before any of them goes. */
  for (int i = 0; i < 4; i++) touch(gone[i], "x");
  path_in(p, sizeof p, "o.h5.part-999999990");
  REQUIRE(mkdir(p, 0777) == 0, "mkdir %s", p);
  CHECK(tw_output_stale(out, 1, TW_OUTPUT_RUN, &names, &n, &err) == TW_EINVAL && !names && n == 0 &&
            strstr(err.msg, "is a directory, which torrewave never writes"), "stale beside a folder: %s", err.msg);
  for (int i = 0; i < 4; i++) {
    path_in(p, sizeof p, gone[i]);
    CHECK(exists(p), "stale: %s removed by a refused call", gone[i]);
    unlink(p);
  }
  path_in(p, sizeof p, "o.h5.part-999999990");
  rmdir(p);
}

/* The lock: a second process is refused at once with our pid in the message; released, the lock
 * file is gone and the next taker succeeds. */
static void test_lock(void) {
  char out[600], lk[620];
  path_in(out, sizeof out, "locked.h5");
  snprintf(lk, sizeof lk, "%s.lock", out);
  tw_output_lock *l = NULL;
  tw_error err = {0};
  REQUIRE(tw_output_lock_take(out, TW_OUTPUT_RUN, &l, &err) == TW_OK, "lock: %s", err.msg);
  CHECK(exists(lk), "lock: no lock file");
  fflush(stdout);
  pid_t child = fork();
  if (child == 0) {
    tw_output_lock *c = NULL;
    tw_error e = {0};
    char want[64];
    snprintf(want, sizeof want, "(process %ld, lock file", (long)getppid());
    const int ok = tw_output_lock_take(out, TW_OUTPUT_RUN, &c, &e) == TW_EBUSY && strstr(e.msg, want) && c == NULL;
    if (!ok) fprintf(stderr, "child: %s\n", e.msg);
    _exit(ok ? 0 : 1);
  }
  int status = -1;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "lock: a second process was not refused with our pid");
  CHECK(exists(lk), "lock: the refused process removed the lock file");
  tw_output_lock_release(l);
  CHECK(!exists(lk), "lock: file left after release");
  CHECK(tw_output_lock_holder(out) == 0, "lock: a holder after release");
  REQUIRE(tw_output_lock_take(out, TW_OUTPUT_RUN, &l, &err) == TW_OK, "lock again: %s", err.msg);
  tw_output_lock_release(l);
}

/* open(2) for this whole program (the library's calls included), as libc's, but for one armed call:
 * the first open with O_CREAT of a name ending in ".lock" first puts race_text under that name, as
 * another program saving a file there between tw_output_lock_take's check of the name and its open
 * would (openat: not this symbol). */
static const char *race_text;
int open(const char *path, int flags, ...) {
  mode_t mode = 0;
  if (flags & O_CREAT) {
    va_list ap;
    va_start(ap, flags);
    mode = (mode_t)va_arg(ap, int);
    va_end(ap);
  }
  const size_t len = strlen(path);
  if (race_text && (flags & O_CREAT) && len > 5 && !strcmp(path + len - 5, ".lock")) {
    const int fd = openat(AT_FDCWD, path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0 && write(fd, race_text, strlen(race_text)) < 0) perror("race");
    if (fd >= 0) close(fd);
    race_text = NULL;
  }
  return openat(AT_FDCWD, path, flags, mode);
}

/* ... and the lock file is checked again on the descriptor that takes the lock: a file that came
 * under its name after the check (here put there by the open itself) is refused and left as it was
 * (it was truncated, given our pid and removed on release). */
static void test_lock_race(void) {
  char out[600], lk[620], got[64] = "";
  path_in(out, sizeof out, "raced.h5");
  snprintf(lk, sizeof lk, "%s.lock", out);
  static const char text[] = "grid = { n = [8, 8, 8]; };\n";
  race_text = text;
  tw_output_lock *l = NULL;
  tw_error err = {0};
  const tw_status st = tw_output_lock_take(out, TW_OUTPUT_RUN, &l, &err);
  CHECK(!race_text, "lock race: the open was not raced");
  CHECK(st == TW_EINVAL && !l && strstr(err.msg, "that holds something other than a process id"),
        "lock race: status %d, lock %p: %s", (int)st, (void *)l, err.msg);
  tw_output_lock_release(l);
  FILE *f = fopen(lk, "rb");
  if (f) got[fread(got, 1, sizeof got - 1, f)] = '\0', fclose(f);
  CHECK(!strcmp(got, text), "lock race: the file that came under the lock's name is now '%s'", got);
  unlink(lk);
}

/* Names an output may not take: inputs (also by another name), links, FIFOs, folders, empty. */
static void test_output_names(void) {
  char model[600], alias[600], link[600], fifo[600], sub[600], x[700];
  path_in(model, sizeof model, "model.bin");
  path_in(alias, sizeof alias, "alias.h5");
  path_in(link, sizeof link, "link.h5");
  path_in(fifo, sizeof fifo, "fifo.h5");
  path_in(sub, sizeof sub, "sub");
  touch("model.bin", "velocities");
  REQUIRE(link_hard(model, alias), "link");
  REQUIRE(symlink("model.bin", link) == 0 && mkfifo(fifo, 0600) == 0 && mkdir(sub, 0700) == 0, "link, fifo, dir");
  tw_job job;
  memset(&job, 0, sizeof job);
  job.path = "no-such-job.cfg";
  job.model.file = model;
  tw_error err = {0};
  CHECK(tw_output_check_path(alias, &job, 0, TW_OUTPUT_RUN, &err) == TW_EINVAL &&
        strstr(err.msg, "is the velocity model"),
        "hard link of the model: %s", err.msg);
  CHECK(tw_output_check_path(link, &job, 0, TW_OUTPUT_RUN, &err) == TW_EINVAL &&
        strstr(err.msg, "is a symbolic link (to 'model.bin')"),
        "symlink: %s", err.msg);
  CHECK(tw_output_check_path(fifo, &job, 0, TW_OUTPUT_RUN, &err) == TW_EINVAL &&
        strstr(err.msg, "is a FIFO"), "fifo: %s", err.msg);
  CHECK(tw_output_check_path(sub, &job, 0, TW_OUTPUT_RUN, &err) == TW_EINVAL &&
        strstr(err.msg, "is a directory"), "dir: %s", err.msg);
  CHECK(tw_output_check_path("", &job, 0, TW_OUTPUT_RUN, &err) == TW_EINVAL &&
        strstr(err.msg, "empty"), "empty: %s", err.msg);
  snprintf(x, sizeof x, "%s/none/x.h5", tmpdir);
  CHECK(tw_output_check_path(x, &job, 1, TW_OUTPUT_RUN, &err) == TW_EIO &&
        strstr(err.msg, "does not exist"), "no folder: %s", err.msg);
  path_in(x, sizeof x, "fresh.h5");
  CHECK(tw_output_check_path(x, &job, 1, TW_OUTPUT_RUN, &err) == TW_OK, "a new name: %s", err.msg);
  CHECK(!tw_output_exists(x) && tw_output_exists(model) && !tw_output_exists(link), "exists");
}

static void remove_tmpdir(void) {
  char cmd[300];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmpdir);
  if (system(cmd) != 0) fprintf(stderr, "warning: could not remove %s\n", tmpdir);
}

/* tw_zyx_slab, both ways, against the definition slab[k - k0][j][i] = xyz[i][j][k], on shapes whose
 * x and slab depth cross its 64 x 64 tiles (partial tiles at both ends) and slabs that start inside
 * the column; and tw_zyx_slab_planes: whole planes within the budget, a multiple of the chunks' z
 * extent, at least one chunk. */
static void test_zyx_slab(void) {
  const int shapes[][5] = {{70, 3, 200, 5, 130}, {1, 1, 1, 0, 1}, {129, 2, 65, 0, 65}, {64, 4, 64, 64 - 63, 63}};
  for (size_t c = 0; c < sizeof shapes / sizeof shapes[0]; c++) {
    const int n[3] = {shapes[c][0], shapes[c][1], shapes[c][2]}, k0 = shapes[c][3], kc = shapes[c][4];
    const size_t N = (size_t)n[0] * n[1] * n[2], S = (size_t)kc * n[0] * n[1];
    float *xyz = malloc(N * sizeof(float)), *back = malloc(N * sizeof(float)), *slab = malloc(S * sizeof(float));
    REQUIRE(xyz && back && slab, "out of memory");
    for (size_t q = 0; q < N; q++) xyz[q] = (float)q, back[q] = -1.0f;
    tw_zyx_slab(xyz, n, k0, kc, slab, 0);
    long bad = 0;
    for (int k = 0; k < kc; k++)
      for (int j = 0; j < n[1]; j++)
        for (int i = 0; i < n[0]; i++)
          bad += slab[((size_t)k * n[1] + j) * n[0] + i] != xyz[((size_t)i * n[1] + j) * n[2] + k0 + k];
    CHECK(bad == 0, "tw_zyx_slab %dx%dx%d, z [%d, %d): %ld values misplaced", n[0], n[1], n[2], k0, k0 + kc, bad);
    tw_zyx_slab(back, n, k0, kc, slab, 1);
    bad = 0;
    for (size_t q = 0; q < N; q++) {
      const int k = (int)(q % n[2]);
      bad += back[q] != (k >= k0 && k < k0 + kc ? xyz[q] : -1.0f);
    }
    CHECK(bad == 0, "tw_zyx_slab back %dx%dx%d, z [%d, %d): %ld values wrong", n[0], n[1], n[2], k0, k0 + kc, bad);
    free(xyz), free(back), free(slab);
  }
  const int big[3] = {1000, 1000, 500}, tiny[3] = {10, 10, 7}, wide[3] = {20000, 20000, 4};
  CHECK(tw_zyx_slab_planes(big, 1) == (int)(TW_ZYX_SLAB_BYTES / 4000000), "1000 x 1000 planes: %d a slab",
        tw_zyx_slab_planes(big, 1));
  CHECK(tw_zyx_slab_planes(big, 3) % 3 == 0, "slab of whole chunks of 3 planes: %d", tw_zyx_slab_planes(big, 3));
  CHECK(tw_zyx_slab_planes(tiny, 1) == 7, "a small array in one slab: %d", tw_zyx_slab_planes(tiny, 1));
  CHECK(tw_zyx_slab_planes(wide, 1) == 1, "planes over the budget: one a slab, got %d", tw_zyx_slab_planes(wide, 1));
  CHECK(tw_zyx_slab_planes(tiny, 4) == 4, "7 planes in chunks of 4: slabs of 4, got %d", tw_zyx_slab_planes(tiny, 4));
}

int main(void) {
  snprintf(tmpdir, sizeof tmpdir, "/tmp/tw_test_hdf5_XXXXXX");
  char *made = mkdtemp(tmpdir);
  REQUIRE(made, "mkdtemp");
  H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
  test_zyx_slab();
  test_roundtrips();
  test_abort_and_bad_writes();
  test_full_disk(1);
  test_full_disk(0);
  test_missing_directory();
  test_no_space();
  test_foreign_files();
  test_stale();
  test_lock();
  test_lock_race();
  test_output_names();
  remove_tmpdir();
  return tw_test_exit();
}
