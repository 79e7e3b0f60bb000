/* test_compare — tw_compare (io/compare.c) and the analytic reference (sources/reference.c) on
 * small synthetic files written with the tw_output writer: no solver run, so it is fast enough
 * for the sanitizer build. Compare: pairing by coordinates (any order, unmatched ones listed),
 * statistics and where the worst difference is, snapshots by step, the common sample range,
 * every kind of incompatibility. Reference: refusals, the formula at known points, positions
 * as the run places them, several sources, file wavelets, the written file. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#ifdef _OPENMP
#include <omp.h>
#endif

#include "tw_io.h"
#include "tw_sources.h"
#include "tw_test.h"

#define PI 3.14159265358979323846

static const char *const BASE =
    "grid = { n = [20, 16, 12]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { steps = 40; dt = 0.001; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "boundary = { absorbing = 4; };\n"
    "sources = ( { position = [50.0, 50.0, 50.0]; wavelet = { type = \"ricker\"; frequency = 40.0; }; } );\n"
    "receivers = { interval = 2;\n"
    "              points = ( [100.0, 20.0, 30.0], [110.0, 20.0, 30.0], [120.0, 20.0, 30.0], [130.0, 20.0, 30.0],\n"
    "                         [100.0, 100.0, 10.0] ); };\n"
    "snapshots = { steps = [20, 40]; decimate = 2; };\n"
    "output = { file = \"unused.h5\"; };\n";

/* A file name in the build's tests folder (malloc'd). */
static char *tmp_path(const char *name) {
  char *p = malloc(512);
  REQUIRE(p, "out of memory");
  snprintf(p, 512, "%s/tests/compare-%s", TW_BINARY_DIR, name);
  return p;
}

/* Remove a temporary file and free its name. */
static void drop(const char *path) {
  unlink(path);
  free((char *)path);
}

static tw_job *load(const char *text, const char *const *sets, int nsets) {
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(text, "<compare>", sets, nsets, &job, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_job_finalize(job, 2000.0, 2000.0, &err) == TW_OK, "%s", err.msg);
  return job;
}

/* A deterministic wave-like value for receiver position x at sample j. */
static float trace_value(const double *x, long j) {
  return (float)(sin(0.3 * (double)j - 0.01 * x[0]) * exp(-0.001 * x[1]) / (1.0 + 0.01 * x[2]));
}

/* How a synthetic file differs from the plain one. */
typedef struct {
  int reverse;           /* receivers written in reverse order */
  double shift_last[3];  /* move the last receiver (in job order) by this much */
  long bump_rec;         /* add bump to trace (job order) bump_rec at sample bump_sample; -1: none */
  long bump_sample;
  float bump;
  int snap_bump;         /* add bump to snapshot 1 at cell (1, 2, 3) */
  int nan;               /* sample 3 of the first trace: 1 → NaN, 2 → +inf, 3 → −inf */
  int tiny;              /* sample 3 of the first trace: 1 → 0, 2 → 1e-37 */
  int snap_lo[3];        /* the snapshots' first model cell (a region); decimated by 2 either way */
  int wiggle;            /* add a small difference to every value (a different one in each) */
} variant;

static const variant PLAIN = {0, {0, 0, 0}, -1, 0, 0.0f, 0, 0, 0, {0, 0, 0}, 0};

static void fill_snapshot(const int n[3], long step, float *buf) {
  for (int i = 0; i < n[0]; i++)
    for (int j = 0; j < n[1]; j++)
      for (int k = 0; k < n[2]; k++)
        buf[((size_t)i * n[1] + j) * n[2] + k] = (float)(step * 0.01 + i - 0.5 * j + 0.25 * k);
}

/* Write a result file for the job (overrides sets) as the run would lay it out. */
static const char *write_synthetic(const char *name, const char *const *sets, int nsets, const variant *v) {
  tw_job *job = load(BASE, sets, nsets);
  const long nrec = job->nrec, nsamples = job->steps / job->rec_interval + 1;
  double(*rec)[3] = malloc((size_t)nrec * sizeof *rec);
  float *tr = malloc((size_t)nrec * (size_t)nsamples * sizeof(float));
  REQUIRE(rec && tr, "out of memory");
  for (long r = 0; r < nrec; r++) {
    const long src = v->reverse ? nrec - 1 - r : r; /* job-order receiver stored at row r */
    memcpy(rec[r], job->rec[src], sizeof rec[r]);
    if (src == nrec - 1)
      for (int a = 0; a < 3; a++) rec[r][a] += v->shift_last[a];
    for (long j = 0; j < nsamples; j++) {
      float x = trace_value(job->rec[src], j);
      if (src == v->bump_rec && j == v->bump_sample) x += v->bump;
      if (v->nan && src == 0 && j == 3) x = v->nan == 1 ? NAN : v->nan == 2 ? INFINITY : -INFINITY;
      if (v->tiny && src == 0 && j == 3) x = v->tiny == 1 ? 0.0f : 1e-37f;
      if (v->wiggle) x += 1e-5f * (float)sin(0.7 * (double)j + (double)src);
      tr[r * nsamples + j] = x;
    }
  }
  const int *lo = v->snap_lo;
  const int n[3] = {(job->n[0] - lo[0] + 1) / 2, (job->n[1] - lo[1] + 1) / 2, (job->n[2] - lo[2] + 1) / 2};
  tw_output_desc d = {0};
  d.job = job;
  d.path = tmp_path(name);
  d.kernel = "synthetic";
  d.dt = job->dt;
  d.steps = job->steps;
  d.nrec = nrec;
  d.rec = (const double (*)[3])rec;
  d.nsamples = nsamples;
  d.nsnap = job->nsnap;
  memcpy(d.snap_n, n, sizeof n);
  memcpy(d.snap_lo, lo, sizeof d.snap_lo);
  d.snap_dec = 2;
  tw_error err = {0};
  tw_output *o = NULL;
  REQUIRE(tw_output_create(&d, &o, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_output_write_traces(o, 0, nsamples, tr, &err) == TW_OK, "%s", err.msg);
  float *snap = malloc((size_t)n[0] * n[1] * n[2] * sizeof(float));
  for (int s = 0; s < job->nsnap; s++) {
    fill_snapshot(n, job->snap_steps[s], snap);
    if (v->snap_bump && s == 1) snap[((size_t)1 * n[1] + 2) * n[2] + 3] += 0.5f;
    for (size_t c = 0; v->wiggle && c < (size_t)n[0] * n[1] * n[2]; c++)
      snap[c] += 1e-3f * (float)sin(0.37 * (double)c);
    REQUIRE(tw_output_write_snapshot(o, s, job->snap_steps[s], snap, &err) == TW_OK, "%s", err.msg);
  }
  REQUIRE(tw_output_close(o, &err) == TW_OK, "%s", err.msg);
  free(snap);
  free(rec);
  free(tr);
  tw_job_destroy(job);
  return d.path;
}

static tw_result *open_result(const char *path) {
  tw_error err = {0};
  tw_result *r = NULL;
  REQUIRE(tw_result_open(path, &r, &err) == TW_OK, "%s", err.msg);
  return r;
}

/* Compare two files; returns the status, fills rep (caller frees) and msg. */
static tw_status compare_files(const char *pa, const char *pb, double rtol, tw_compare_report *rep, char *msg) {
  tw_result *a = open_result(pa), *b = open_result(pb);
  tw_error err = {0};
  tw_compare_opts o = {rtol, 0, 0, 0};
  tw_status st = tw_compare(a, b, &o, rep, &err);
  if (msg) strcpy(msg, err.msg);
  tw_result_close(a);
  tw_result_close(b);
  return st;
}

static void test_identical(const char *plain) {
  const char *copy = write_synthetic("copy.h5", NULL, 0, &PLAIN);
  tw_compare_report rep;
  tw_status st = compare_files(plain, copy, 0, &rep, NULL);
  CHECK(st == TW_OK, "status %d", st);
  CHECK(rep.pass && rep.nfail == 0, "identical files must pass");
  CHECK(rep.npairs == 5 && rep.nunmatched_a == 0 && rep.nunmatched_b == 0, "pairs %ld", rep.npairs);
  CHECK(rep.nstat == 3 && rep.nsnap_common == 2, "datasets %d, common snapshots %d", rep.nstat, rep.nsnap_common);
  for (int k = 0; k < rep.nstat; k++)
    CHECK(rep.stat[k].rel_l2 == 0 && rep.stat[k].max_abs == 0, "dataset %d: rel %g max %g", k, rep.stat[k].rel_l2,
          rep.stat[k].max_abs);
  CHECK(rep.stat[1].kind == TW_COMPARE_SNAPSHOT && rep.stat[1].step == 20 && rep.stat[2].step == 40,
        "snapshot steps");
  CHECK(rep.rtol == 1e-5, "default rtol %g", rep.rtol);
  tw_compare_report_free(&rep);
  drop(copy);
}

/* Receivers in reverse order and one sample bumped: paired by coordinates, the worst difference
 * found at the right receiver and time; the relative L2 is symmetric. */
static void test_pairing_and_worst(const char *plain) {
  variant v = PLAIN;
  v.reverse = 1;
  v.bump_rec = 2;
  v.bump_sample = 7;
  v.bump = 0.25f;
  const char *b = write_synthetic("bumped.h5", NULL, 0, &v);
  tw_compare_report rep, rev;
  CHECK(compare_files(plain, b, 0, &rep, NULL) == TW_OK, "compare failed");
  CHECK(rep.npairs == 5, "pairs %ld", rep.npairs);
  for (long p = 0; p < rep.npairs; p++)
    CHECK(rep.pair_b[p] == 4 - rep.pair_a[p], "pair %ld: A %ld with B %ld", p, rep.pair_a[p], rep.pair_b[p]);
  const tw_compare_stat *t = &rep.stat[0];
  CHECK(t->kind == TW_COMPARE_TRACES && !t->pass && !rep.pass, "a bumped trace must fail at rtol 1e-5");
  CHECK(fabs(t->max_abs - 0.25) < 1e-6, "max abs %g", t->max_abs);
  CHECK(t->rec_a == 2 && t->rec_b == 2 && t->sample == 7, "worst at A %ld, B %ld, sample %ld", t->rec_a, t->rec_b,
        t->sample);
  CHECK(fabs(t->at_time - 7 * 0.002) < 1e-12, "worst time %g", t->at_time);
  CHECK(t->pos[0] == 120.0 && t->pos[1] == 20.0 && t->pos[2] == 30.0, "worst position (%g, %g, %g)", t->pos[0],
        t->pos[1], t->pos[2]);
  CHECK(t->worst_rec_a == 2, "worst receiver by L2 %ld", t->worst_rec_a);
  const double expect = 0.25 / fmax(t->norm_a, t->norm_b);
  CHECK(fabs(t->rel_l2 - expect) < 1e-6 * expect, "rel L2 %g, expected %g", t->rel_l2, expect);
  CHECK(rep.stat[1].pass && rep.stat[2].pass, "snapshots are equal");
  CHECK(compare_files(b, plain, 0, &rev, NULL) == TW_OK, "reverse compare failed");
  /* Equal up to the order of summation (pairs follow the first file's order). */
  CHECK(fabs(rev.stat[0].rel_l2 - t->rel_l2) <= 1e-12 * t->rel_l2, "not symmetric: %g vs %g", rev.stat[0].rel_l2,
        t->rel_l2);
  tw_compare_report_free(&rev);
  tw_compare_report_free(&rep);
  CHECK(compare_files(plain, b, 0.5, &rep, NULL) == TW_OK && rep.pass, "rtol 0.5 must pass");
  tw_compare_report_free(&rep);
  drop(b);
}

static void test_unmatched(const char *plain) {
  variant v = PLAIN;
  v.shift_last[1] = 5.0; /* half a cell: far beyond the pairing tolerance */
  const char *b = write_synthetic("moved.h5", NULL, 0, &v);
  tw_compare_report rep;
  CHECK(compare_files(plain, b, 0, &rep, NULL) == TW_OK, "compare failed");
  CHECK(rep.npairs == 4 && rep.nunmatched_a == 1 && rep.nunmatched_b == 1, "pairs %ld, unmatched %ld/%ld",
        rep.npairs, rep.nunmatched_a, rep.nunmatched_b);
  CHECK(rep.nunmatched_a == 1 && rep.unmatched_a[0] == 4 && rep.unmatched_b[0] == 4, "unmatched indices");
  CHECK(rep.pass, "the paired receivers are equal");
  tw_compare_report_free(&rep);
  drop(b);
  /* Within the tolerance (1e-6 of d = 1e-5 m) they still pair. */
  v.shift_last[1] = 3e-6;
  b = write_synthetic("nudged.h5", NULL, 0, &v);
  CHECK(compare_files(plain, b, 0, &rep, NULL) == TW_OK && rep.npairs == 5, "a 3e-6 m shift must still pair");
  tw_compare_report_free(&rep);
  drop(b);
}

/* Every incompatibility gives TW_EMISMATCH and says which. */
static void test_mismatch(const char *plain) {
  struct {
    const char *set, *name, *expect;
  } cases[] = {
      {"grid.n=[20,16,14]", "n.h5", "grid n differs"},
      {"grid.d=[10.0,10.0,12.0]", "d.h5", "grid d differs"},
      {"grid.origin=[5.0,0.0,0.0]", "origin.h5", "grid origin differs"},
      {"time.dt=0.0009", "dt.h5", "dt differs"},
      {"receivers.interval=4", "interval.h5", "sample dt differs"},
      {"receivers.points=([0.0,0.0,0.0])", "norec.h5", "no common receivers"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    const char *sets[] = {cases[k].set};
    const char *b = write_synthetic(cases[k].name, sets, 1, &PLAIN);
    tw_compare_report rep;
    char msg[TW_ERROR_MSG];
    tw_status st = compare_files(plain, b, 0, &rep, msg);
    CHECK(st == TW_EMISMATCH, "%s: status %d (%s)", cases[k].set, st, msg);
    CHECK(strstr(msg, cases[k].expect) != NULL, "%s: message \"%s\" lacks \"%s\"", cases[k].set, msg, cases[k].expect);
    printf("  %-36s -> %s\n", cases[k].set, msg);
    tw_compare_report_free(&rep);
    drop(b);
  }
}

/* More steps at the same dt: the common leading samples are compared. Snapshots by step. */
static void test_samples_and_snapshots(const char *plain) {
  const char *sets[] = {"time.steps=60", "snapshots.steps=[40,60]"};
  variant v = PLAIN;
  v.snap_bump = 1; /* snapshot 1 of B is step 60: not common; step 40 (index 0) is */
  const char *b = write_synthetic("longer.h5", sets, 2, &v);
  tw_compare_report rep;
  CHECK(compare_files(plain, b, 0, &rep, NULL) == TW_OK, "compare failed");
  CHECK(rep.nsamples_a == 21 && rep.nsamples_b == 31 && rep.nsamples == 21, "samples %ld/%ld/%ld", rep.nsamples_a,
        rep.nsamples_b, rep.nsamples);
  CHECK(rep.nsnap_common == 1 && rep.nstat == 2 && rep.stat[1].step == 40, "common snapshot: step 40 only");
  CHECK(rep.pass, "the common range is equal");
  tw_compare_report_free(&rep);
  drop(b);
  /* A bumped snapshot cell: found, as the stored snapshot's cell [1, 2, 3] and the model cell it is
   * (decimated by 2: [2, 4, 6]), with its model coordinates; then in a region from model cell
   * [2, 1, 3]. The stored cell alone was reported, and read as a model cell. */
  static const struct { int lo[3], model[3]; } at[2] = {{{0, 0, 0}, {2, 4, 6}}, {{2, 1, 3}, {4, 5, 9}}};
  for (int k = 0; k < 2; k++) {
    variant r = PLAIN, rb = v;
    memcpy(r.snap_lo, at[k].lo, sizeof r.snap_lo);
    memcpy(rb.snap_lo, at[k].lo, sizeof rb.snap_lo);
    const char *a = k ? write_synthetic("region.h5", NULL, 0, &r) : plain;
    const char *c = write_synthetic("snapbump.h5", NULL, 0, &rb);
    CHECK(compare_files(a, c, 0, &rep, NULL) == TW_OK, "compare failed");
    const tw_compare_stat *s = &rep.stat[2];
    const int *m = at[k].model;
    CHECK(rep.stat[1].pass && !s->pass && s->step == 40, "only step 40 differs");
    CHECK(s->snap_cell[0] == 1 && s->snap_cell[1] == 2 && s->snap_cell[2] == 3, "worst snapshot cell [%d, %d, %d]",
          s->snap_cell[0], s->snap_cell[1], s->snap_cell[2]);
    CHECK(s->pos_known && s->model_cell[0] == m[0] && s->model_cell[1] == m[1] && s->model_cell[2] == m[2],
          "worst model cell [%d, %d, %d], want [%d, %d, %d]", s->model_cell[0], s->model_cell[1], s->model_cell[2],
          m[0], m[1], m[2]);
    CHECK(s->pos[0] == 10.0 * m[0] && s->pos[1] == 10.0 * m[1] && s->pos[2] == 10.0 * m[2],
          "worst cell at (%g, %g, %g)", s->pos[0], s->pos[1], s->pos[2]);
    CHECK(rep.snap_geo_known && rep.snap_decimate == 2 && !memcmp(rep.snap_first_cell, at[k].lo, sizeof at[k].lo),
          "the snapshots' first cell [%d, %d, %d], decimate %d", rep.snap_first_cell[0], rep.snap_first_cell[1],
          rep.snap_first_cell[2], rep.snap_decimate);
    CHECK(fabs(s->max_abs - 0.5) < 1e-6, "max abs %g", s->max_abs);
    tw_compare_report_free(&rep);
    drop(c);
    if (k) drop(a);
  }
}

static void test_nan(const char *plain) {
  variant v = PLAIN;
  v.nan = 1;
  const char *b = write_synthetic("nan.h5", NULL, 0, &v);
  tw_compare_report rep;
  CHECK(compare_files(plain, b, 0, &rep, NULL) == TW_OK, "compare failed");
  CHECK(!rep.pass && !rep.stat[0].pass, "a NaN must fail");
  tw_compare_report_free(&rep);
  CHECK(compare_files(plain, b, 1e30, &rep, NULL) == TW_OK && !rep.pass, "a NaN fails at any rtol");
  tw_compare_report_free(&rep);
  drop(b);
  /* An infinity in both files at one place is no difference (inf == inf): a file compared with itself
   * said "VALUES DIFFER" (its relative L2 was inf − inf = NaN) with no value differing. It must not hide
   * a difference elsewhere either (an infinite norm made every relative L2 0), nor pass against a
   * finite value or the other infinity. */
  v.nan = 2;
  const char *inf = write_synthetic("inf.h5", NULL, 0, &v);
  v.bump_rec = 1, v.bump_sample = 5, v.bump = 0.5f;
  const char *inf_bump = write_synthetic("inf_bump.h5", NULL, 0, &v);
  v = PLAIN, v.nan = 3;
  const char *minus = write_synthetic("minus_inf.h5", NULL, 0, &v);
  const double rtols[2] = {0, 1e-5};
  for (int k = 0; k < 2; k++) {
    CHECK(compare_files(inf, inf, rtols[k], &rep, NULL) == TW_OK && rep.pass && rep.stat[0].ndiff == 0 &&
              rep.stat[0].rel_l2 == 0 && rep.stat[0].max_abs == 0,
          "rtol %g: a file with an infinity against itself: pass %d, rel L2 %g, max |A-B| %g, %ld differ", rtols[k],
          rep.pass, rep.stat[0].rel_l2, rep.stat[0].max_abs, rep.stat[0].ndiff);
    tw_compare_report_free(&rep);
    CHECK(compare_files(inf, inf_bump, rtols[k], &rep, NULL) == TW_OK && !rep.pass && rep.stat[0].ndiff == 1 &&
              rep.stat[0].rel_l2 > 1e-3,
          "rtol %g: equal infinities hid a difference elsewhere: rel L2 %g", rtols[k], rep.stat[0].rel_l2);
    tw_compare_report_free(&rep);
    CHECK(compare_files(plain, inf, rtols[k], &rep, NULL) == TW_OK && !rep.pass, "rtol %g: inf against a number passed",
          rtols[k]);
    tw_compare_report_free(&rep);
    CHECK(compare_files(minus, inf, rtols[k], &rep, NULL) == TW_OK && !rep.pass, "rtol %g: -inf against inf passed",
          rtols[k]);
    tw_compare_report_free(&rep);
  }
  drop(inf), drop(inf_bump), drop(minus);
}

/* rtol <= 1e-30 (`--strict --rtol 1e-30`: "the same numbers") passes only when no value differs:
 * 0 against 1e-37 in a trace whose norm is ~1 is a relative L2 of 1e-37, which passed. Trace samples
 * that pair but number none compare nothing: no pass either. */
static void test_exact(void) {
  variant v = PLAIN;
  v.tiny = 1;
  const char *zero = write_synthetic("zero.h5", NULL, 0, &v);
  v.tiny = 2;
  const char *tiny = write_synthetic("tiny.h5", NULL, 0, &v);
  tw_compare_report rep;
  CHECK(compare_files(zero, tiny, 1e-30, &rep, NULL) == TW_OK, "compare failed");
  CHECK(rep.stat[0].rel_l2 > 0 && rep.stat[0].rel_l2 < 1e-30 && rep.stat[0].ndiff == 1, "rel %g, %ld differ",
        rep.stat[0].rel_l2, rep.stat[0].ndiff);
  CHECK(!rep.pass && !rep.stat[0].pass && rep.stat[1].pass, "rtol 1e-30 passed other numbers");
  tw_compare_report_free(&rep);
  CHECK(compare_files(zero, tiny, 1e-20, &rep, NULL) == TW_OK && rep.pass, "rtol 1e-20 is a tolerance");
  tw_compare_report_free(&rep);
  CHECK(compare_files(zero, zero, 1e-30, &rep, NULL) == TW_OK && rep.pass && rep.stat[0].ndiff == 0, "same file");
  tw_compare_report_free(&rep);
  tw_result *a = open_result(zero), *b = open_result(tiny);
  b->nsamples = 0;
  tw_error err = {0};
  CHECK(tw_compare(a, b, NULL, &rep, &err) == TW_EMISMATCH && strstr(err.msg, "no trace samples to compare"),
        "no samples compared: %s", err.msg);
  tw_compare_report_free(&rep);
  tw_result_close(a);
  tw_result_close(b);
  drop(zero);
  drop(tiny);
}

/* ---------------------------------------------------------------- reference */

static const char *const REF =
    "grid = { n = [41, 21, 21]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { steps = 200; dt = 0.001; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "boundary = { absorbing = 10; };\n"
    "sources = ( { position = [100.0, 100.0, 100.0];\n"
    "              wavelet = { type = \"ricker\"; frequency = 20.0; delay = 0.05; amplitude = 3.0; }; } );\n"
    "receivers = { interval = 2; points = ( [300.0, 100.0, 100.0], [304.0, 100.0, 100.0], [100.0, 100.0, 160.0] ); };\n"
    "output = { file = \"unused.h5\"; };\n";

static tw_status try_reference(const char *const *sets, int nsets, char *msg) {
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(REF, "<ref>", sets, nsets, &job, &err) == TW_OK, "%s", err.msg);
  tw_reference *ref = NULL;
  tw_status st = tw_reference_create(job, &ref, &err);
  strcpy(msg, err.msg);
  tw_reference_destroy(ref);
  tw_job_destroy(job);
  return st;
}

static void test_reference_refusals(void) {
  struct {
    const char *sets[2];
    const char *expect;
  } cases[] = {
      {{"model={type=\"layered\";layers=({top=0.0;vp=2000.0;},{top=100.0;vp=3000.0;});}", NULL}, "constant"},
      {{"model={type=\"gradient\";vp0=2000.0;gradient=0.5;}", NULL}, "constant"},
      {{"model={type=\"segy\";file=\"" TW_SOURCE_DIR "/README.md\";}", NULL}, "model.type is \"segy\""},
      {{"boundary.free_surface=true", NULL}, "free_surface"},
      {{"receivers.points=([104.0,100.0,100.0])", NULL}, "singular"},
  };
  for (size_t k = 0; k < sizeof cases / sizeof cases[0]; k++) {
    char msg[TW_ERROR_MSG];
    tw_status st = try_reference(cases[k].sets, 1, msg);
    CHECK(st == TW_EUNSUPPORTED, "%s: status %d (%s)", cases[k].sets[0], st, msg);
    CHECK(strstr(msg, cases[k].expect) != NULL, "message \"%s\" lacks \"%s\"", msg, cases[k].expect);
    printf("  refused: %s\n", msg);
  }
}

static double ricker(double t, double f, double t0, double a) {
  const double x = PI * PI * f * f * (t - t0) * (t - t0);
  return a * (1 - 2 * x) * exp(-x);
}

static void test_reference_values(void) {
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(REF, "<ref>", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  tw_reference *ref = NULL;
  REQUIRE(tw_reference_create(job, &ref, &err) == TW_OK, "%s", err.msg);
  CHECK(tw_reference_nsamples(ref) == 101, "samples %ld", tw_reference_nsamples(ref));
  /* Peak at t = t0 + r/c: A / (4π r); receiver 1 (304 m, nearest) sits at the 300 m cell. */
  const double r = 200.0, t = 0.05 + r / 2000.0;
  const double peak = 3.0 / (4 * PI * r);
  CHECK(fabs(tw_reference_value(ref, 0, t) - peak) < 1e-12, "peak %g, expected %g", tw_reference_value(ref, 0, t),
        peak);
  CHECK(tw_reference_value(ref, 1, t) == tw_reference_value(ref, 0, t), "nearest receiver not at its cell");
  CHECK(tw_reference_value(ref, 0, 0.0) == 0.0, "p(0) must be 0");
  /* Between samples: the exact Ricker, not an interpolation. */
  const double tt = 0.0913;
  const double want = ricker(tt - 60.0 / 2000.0, 20.0, 0.05, 3.0) / (4 * PI * 60.0);
  CHECK(fabs(tw_reference_value(ref, 2, tt) - want) < 1e-12 * fabs(want) + 1e-15, "p(%g) = %g, expected %g", tt,
        tw_reference_value(ref, 2, tt), want);
  float tr[3 * 5];
  tw_reference_traces(ref, 30, 5, tr);
  for (int k = 0; k < 5; k++)
    CHECK(tr[2 * 5 + k] == (float)tw_reference_value(ref, 2, (30 + k) * 0.002), "trace sample %d", k);
  tw_reference_destroy(ref);
  tw_job_destroy(job);

  /* Trilinear receivers sit at their true position; two sources add up. */
  const char *sets[] = {"receivers.interpolation=\"trilinear\"",
                        "sources=({position=[100.0,100.0,100.0];wavelet={type=\"ricker\";frequency=20.0;};},"
                        "{position=[350.0,100.0,100.0];wavelet={type=\"ricker\";frequency=30.0;amplitude=-1.0;};})"};
  REQUIRE(tw_job_load_string(REF, "<ref>", sets, 2, &job, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_reference_create(job, &ref, &err) == TW_OK, "%s", err.msg);
  const double t2 = 0.13, r1 = 204.0, r2 = 46.0;
  const double want2 = ricker(t2 - r1 / 2000.0, 20.0, 1.5 / 20.0, 1.0) / (4 * PI * r1) +
                       ricker(t2 - r2 / 2000.0, 30.0, 1.5 / 30.0, -1.0) / (4 * PI * r2);
  CHECK(fabs(tw_reference_value(ref, 1, t2) - want2) < 1e-12, "two sources: %g, expected %g",
        tw_reference_value(ref, 1, t2), want2);
  tw_reference_destroy(ref);
  tw_job_destroy(job);
}

/* A file wavelet: linear interpolation between its samples (resampled to dt). */
static void test_reference_file_wavelet(void) {
  const char *wpath = tmp_path("wavelet.txt");
  FILE *f = fopen(wpath, "w");
  REQUIRE(f, "cannot write %s", wpath);
  fprintf(f, "# a triangle\n0\n1\n4\n2\n0\n");
  fclose(f);
  char set[700];
  snprintf(set, sizeof set, "sources=({position=[100.0,100.0,100.0];wavelet={type=\"file\";file=\"%s\";dt=0.002;};})",
           wpath);
  const char *sets[] = {set};
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(REF, "<ref>", sets, 1, &job, &err) == TW_OK, "%s", err.msg);
  tw_reference *ref = NULL;
  REQUIRE(tw_reference_create(job, &ref, &err) == TW_OK, "%s", err.msg);
  /* tau = t − r/c = 0.0035 s: between file samples 1 (t = 0.002, 1) and 2 (0.004, 4): 3.25. */
  const double r = 60.0, t = 0.0035 + r / 2000.0;
  const double want = 3.25 / (4 * PI * r);
  CHECK(fabs(tw_reference_value(ref, 2, t) - want) < 1e-9 * want, "file wavelet: %g, expected %g",
        tw_reference_value(ref, 2, t), want);
  CHECK(tw_reference_value(ref, 2, 0.02 + r / 2000.0) == 0.0, "past the last sample: 0");
  tw_reference_destroy(ref);
  tw_job_destroy(job);
  drop(wpath);
}

/* tw_reference_write: the run's layout; compare takes it. */
static void test_reference_file(void) {
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(REF, "<ref>", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  const char *path = tmp_path("reference.h5");
  REQUIRE(tw_reference_write(job, path, &err) == TW_OK, "%s", err.msg);
  tw_result *r = open_result(path);
  CHECK(strcmp(r->kernel, "reference") == 0, "kernel \"%s\"", r->kernel);
  CHECK(r->nrec == 3 && r->nsamples == 101 && r->nsnap == 0, "shape %ld x %ld, %d snapshots", r->nrec, r->nsamples,
        r->nsnap);
  CHECK(fabs(r->sample_dt - 0.002) < 1e-15 && r->dt == 0.001 && r->steps == 200, "sample dt %g", r->sample_dt);
  CHECK(r->rec[3] == 304.0, "receiver coordinates are the job's, not the snapped ones: %g", r->rec[3]);
  float peak = 0;
  for (long j = 0; j < r->nsamples; j++) peak = fmaxf(peak, r->traces[j]);
  CHECK(fabs(peak - 3.0 / (4 * PI * 200.0)) < 0.02 * 3.0 / (4 * PI * 200.0), "peak %g", peak);
  tw_compare_report rep;
  CHECK(tw_compare(r, r, NULL, &rep, &err) == TW_OK && rep.pass && rep.npairs == 3, "self-compare");
  tw_compare_report_free(&rep);
  tw_result_close(r);
  tw_job_destroy(job);
  unlink(path);
  /* Refused: nothing is written. */
  REQUIRE(tw_job_load_string(REF, "<ref>", (const char *[]){"boundary.free_surface=true"}, 1, &job, &err) == TW_OK,
          "%s", err.msg);
  CHECK(tw_reference_write(job, path, &err) == TW_EUNSUPPORTED, "free surface must be refused");
  CHECK(access(path, F_OK) != 0, "a refused reference left a file");
  tw_job_destroy(job);
  drop(path);
}

/* A velocity that float32 does not hold (2000.1 m/s): the run's model is float32 (io/model.c), and
 * its dt comes from that float's vmin/vmax. The reference must take the same dt and velocity, or
 * compare refuses the pair ("dt differs") where they should agree. */
static void test_reference_float_velocity(void) {
  const char *sets[] = {"model.vp=2000.1", "time={duration=0.05;}"};
  tw_error err = {0};
  tw_job *rjob = NULL, *job = NULL;
  REQUIRE(tw_job_load_string(REF, "<ref>", sets, 2, &job, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_job_load_string(REF, "<ref>", sets, 2, &rjob, &err) == TW_OK, "%s", err.msg);
  tw_velocity *v = NULL;
  REQUIRE(tw_velocity_load(job, &v, &err) == TW_OK, "%s", err.msg);
  REQUIRE(tw_job_finalize(job, v->vmin, v->vmax, &err) == TW_OK, "%s", err.msg);
  tw_reference *ref = NULL;
  REQUIRE(tw_reference_create(rjob, &ref, &err) == TW_OK, "%s", err.msg);
  CHECK(rjob->dt == job->dt && rjob->steps == job->steps,
        "vp 2000.1: reference dt %.17g (%ld steps), run dt %.17g (%ld)", rjob->dt, rjob->steps, job->dt, job->steps);
  tw_reference_destroy(ref);
  tw_velocity_destroy(v);
  tw_job_destroy(job);
  tw_job_destroy(rjob);
}

/* The statistics of datasets larger than the spans compare.c sums on separate threads: the same
 * bits for any number of threads (the partition and the order of the additions are fixed), the
 * norms those of one exact sum to rounding, and where the largest difference is, the peak and the
 * count of differing values those of one scan in order. */
static void test_threads(void) {
  const char *sets[] = {"grid.n=[400, 240, 200]", "time.steps=20000",
                        "receivers={interval=2; lines=({from=[0.0, 100.0, 30.0]; to=[990.0, 100.0, 30.0]; "
                        "count=100;});}",
                        "snapshots.steps=[20000]"};
  variant v = PLAIN;
  const char *pa = write_synthetic("big_a.h5", sets, 4, &v);
  v.wiggle = 1;
  const char *pb = write_synthetic("big_b.h5", sets, 4, &v);
  tw_compare_report rep[3];
  const int threads[3] = {1, 2, 3};
  for (int k = 0; k < 3; k++) {
#ifdef _OPENMP
    omp_set_num_threads(threads[k]);
#endif
    CHECK(compare_files(pa, pb, 0, &rep[k], NULL) == TW_OK && rep[k].nstat == 2, "compare failed");
  }
  for (int k = 1; k < 3; k++)
    for (int d = 0; d < 2 && rep[k].nstat == 2; d++)
      CHECK(!memcmp(&rep[0].stat[d], &rep[k].stat[d], sizeof rep[0].stat[d]),
            "dataset %d: %d threads gave other statistics than one: norms %.17g %.17g, rel L2 %.17g %.17g", d,
            threads[k], rep[0].stat[d].norm_a, rep[k].stat[d].norm_a, rep[0].stat[d].rel_l2, rep[k].stat[d].rel_l2);
  /* The snapshot against one scan in order. */
  tw_result *a = open_result(pa), *b = open_result(pb);
  const long n = (long)a->snap_shape[0] * a->snap_shape[1] * a->snap_shape[2];
  float *x = malloc((size_t)n * sizeof(float)), *y = malloc((size_t)n * sizeof(float));
  REQUIRE(x && y, "out of memory");
  tw_error err = {0};
  REQUIRE(tw_result_read_snapshot(a, 0, x, &err) == TW_OK && tw_result_read_snapshot(b, 0, y, &err) == TW_OK, "%s",
          err.msg);
  CHECK(n > 2 * (1L << 20), "the snapshot (%ld values) must span several threads' parts", n);
  long double saa = 0, sbb = 0, sdd = 0;
  double max_abs = 0;
  long argmax = 0, ndiff = 0;
  for (long c = 0; c < n; c++) {
    const double d = (double)x[c] - (double)y[c];
    saa += (long double)x[c] * x[c], sbb += (long double)y[c] * y[c], sdd += (long double)d * d;
    if (fabs(d) > max_abs) max_abs = fabs(d), argmax = c;
    ndiff += x[c] != y[c];
  }
  const tw_compare_stat *t = &rep[0].stat[1];
  const int *sh = a->snap_shape;
  const long cell = ((long)t->snap_cell[0] * sh[1] + t->snap_cell[1]) * sh[2] + t->snap_cell[2];
  CHECK(t->max_abs == max_abs && cell == argmax && t->ndiff == ndiff && t->count == n,
        "max |A-B| %g at %ld, %ld differ; one scan: %g at %ld, %ld", t->max_abs, cell, t->ndiff, max_abs, argmax,
        ndiff);
  CHECK(fabsl(t->norm_a - sqrtl(saa)) <= 1e-13L * sqrtl(saa) &&
            fabsl(t->rel_l2 - sqrtl(sdd / fmaxl(saa, sbb))) <= 1e-12L * t->rel_l2,
        "norm %.17g, exact %.17Lg; rel L2 %.17g, exact %.17Lg", t->norm_a, sqrtl(saa), t->rel_l2,
        sqrtl(sdd / fmaxl(saa, sbb)));
  free(x), free(y);
  tw_result_close(a), tw_result_close(b);
  for (int k = 0; k < 3; k++) tw_compare_report_free(&rep[k]);
  drop(pa), drop(pb);
}

int main(void) {
  const char *plain = write_synthetic("plain.h5", NULL, 0, &PLAIN);
  test_identical(plain);
  test_pairing_and_worst(plain);
  test_unmatched(plain);
  test_mismatch(plain);
  test_samples_and_snapshots(plain);
  test_nan(plain);
  test_exact();
  test_threads();
  drop(plain);
  test_reference_refusals();
  test_reference_values();
  test_reference_file_wavelet();
  test_reference_file();
  test_reference_float_velocity();
  return tw_test_exit();
}
