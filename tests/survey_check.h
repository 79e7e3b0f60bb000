/* survey_check.h — shared by test_survey.c (CPU kernels, CI) and test_gpu_survey.c (GPU kernels):
 * a session runs the shots of a survey one after another, in a shuffled order, and every shot's
 * file holds the same traces and snapshots, bit for bit, as a fresh tw_run_job of the single-shot
 * job at that shot's position (receivers at their absolute positions, written out as points in
 * %.17g so that they parse to the very doubles the survey adds up). That is what the backends'
 * reset (both levels zeroed, the tables taken up again, no more) has to give.
 *
 * The survey's layout: fixed and moving spreads, nearest and trilinear receivers, shots on and off
 * the grid and one half a cell below the free surface, snapshots, a shot order that moves the source across the
 * grid and back (the GPU kernels' per-plane source index and tower events change every shot). */
#ifndef TW_SURVEY_CHECK_H
#define TW_SURVEY_CHECK_H

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tw_io.h"
#include "tw_solver.h"
#include "tw_survey.h"
#include "tw_test.h"

/* The medium and the sources' wavelet; the survey adds shots, the single-shot job a position. The
 * grid is 34 × 30 × 22 cells unless the case says (shots and receivers lie within x ≤ 330 m,
 * y ≤ 290 m, z ≤ 52.5 m). */
static const char *const SC_GRID = "grid = { n = [34, 30, 22]; d = [10.0, 10.0, 10.0]; };\n";
static const char *const SC_BASE =
    "time = { steps = 70; };\n"
    "model = { type = \"layered\"; layers = ( { top = 0.0; vp = 1800.0; }, { top = 120.0; vp = 2600.0; } ); };\n"
    "scheme = { order = %d; };\n"
    "boundary = { absorbing = 6; free_surface = true; };\n"
    "snapshots = { steps = [35, 70]; decimate = 2; region = { from = [0.0, 50.0, 0.0]; to = [330.0, 250.0, 210.0]; }; };\n";

static const char *const SC_SHOTS =
    "shots = { positions = ( [60.0, 150.0, 20.0], [271.5, 83.25, 47.0], [170.0, 140.0, 5.0] );\n"
    "          lines = ( { from = [40.0, 60.0, 30.0]; to = [290.0, 240.0, 30.0]; count = 4; } );\n"
    "          receivers = \"%s\"; };\n"
    "sources = ( { interpolation = \"%s\"; wavelet = { type = \"ricker\"; frequency = 18.0; }; } );\n";

/* Fixed: a line across the model; moving: a cross of offsets around the shot (inside the model for
 * every shot above: the tightest is the shot at x = 40 with x offsets down to −30). */
static const char *const SC_REC_FIXED =
    "receivers = { interval = 3; interpolation = \"%s\";\n"
    "              lines = ( { from = [0.0, 150.0, 10.0]; to = [330.0, 150.0, 10.0]; count = 34; } );\n"
    "              points = ( [123.4, 56.7, 89.1] ); };\n";
static const char *const SC_REC_MOVING =
    "receivers = { interval = 3; interpolation = \"%s\";\n"
    "              lines = ( { from = [-30.0, 0.0, 0.0]; to = [30.0, 0.0, 0.0]; count = 7; },\n"
    "                        { from = [0.0, -40.0, 5.5]; to = [0.0, 40.0, 5.5]; count = 5; } ); };\n";

typedef struct sc_case {
  int order;
  int moving;
  const char *rec_interp, *src_interp;
  const char *solver;        /* "solver = { ... };" line: the kernel and its options */
  const char *grid;          /* a "grid = { ... };" line, or NULL: SC_GRID */
  int window;                /* every shot must run through a sliding window (its report says so) */
} sc_case;

/* A double as a job file reads it back exactly, always with a decimal point (libconfig arrays
 * hold one type: 40 would be an integer). */
static const char *sc_num(char *buf, double v) {
  snprintf(buf, 40, "%.17g", v);
  if (!strpbrk(buf, ".e")) strcat(buf, ".0");
  return buf;
}

static char *sc_text(const sc_case *c, int survey, const tw_job *sj, long shot) {
  size_t cap = 1 << 16, n = 0;
  char *t = malloc(cap);
  REQUIRE(t != NULL, "out of memory");
  n += (size_t)snprintf(t + n, cap - n, "%s", c->grid ? c->grid : SC_GRID);
  n += (size_t)snprintf(t + n, cap - n, SC_BASE, c->order);
  n += (size_t)snprintf(t + n, cap - n, "%s\n", c->solver);
  if (survey) {
    n += (size_t)snprintf(t + n, cap - n, SC_SHOTS, c->moving ? "moving" : "fixed", c->src_interp);
    n += (size_t)snprintf(t + n, cap - n, c->moving ? SC_REC_MOVING : SC_REC_FIXED, c->rec_interp);
    return t;
  }
  const double *p = sj->shots[shot];
  char x[40], y[40], z[40];
  n += (size_t)snprintf(t + n, cap - n, "sources = ( { position = [%s, %s, %s]; interpolation = \"%s\";\n"
                        "              wavelet = { type = \"ricker\"; frequency = 18.0; }; } );\n",
                        sc_num(x, p[0]), sc_num(y, p[1]), sc_num(z, p[2]), c->src_interp);
  n += (size_t)snprintf(t + n, cap - n, "receivers = { interval = 3; interpolation = \"%s\"; points = (", c->rec_interp);
  for (long r = 0; r < sj->nrec; r++) {
    double a[3];
    for (int k = 0; k < 3; k++) a[k] = sj->rec[r][k] + (c->moving ? p[k] : 0.0); /* as the survey adds them */
    n += (size_t)snprintf(t + n, cap - n, "%s [%s, %s, %s]", r ? "," : "", sc_num(x, a[0]), sc_num(y, a[1]),
                          sc_num(z, a[2]));
  }
  snprintf(t + n, cap - n, " ); };\n");
  return t;
}

/* Traces and snapshots of two files, bit for bit. */
static void sc_compare(const char *a_path, const char *b_path, const char *what) {
  tw_error err = {0};
  tw_result *a = NULL, *b = NULL;
  REQUIRE(tw_result_open(a_path, &a, &err) == TW_OK, "%s: %s", what, err.msg);
  REQUIRE(tw_result_open(b_path, &b, &err) == TW_OK, "%s: %s", what, err.msg);
  REQUIRE(a->nrec == b->nrec && a->nsamples == b->nsamples && a->nsnap == b->nsnap, "%s: shapes differ", what);
  CHECK(!memcmp(a->traces, b->traces, (size_t)a->nrec * (size_t)a->nsamples * sizeof(float)), "%s: traces differ",
        what);
  float peak = 0;
  for (long e = 0; e < a->nrec * a->nsamples; e++) peak = fabsf(a->traces[e]) > peak ? fabsf(a->traces[e]) : peak;
  CHECK(peak > 0, "%s: silent traces", what);
  const size_t n = (size_t)a->snap_shape[0] * a->snap_shape[1] * a->snap_shape[2];
  float *sa = malloc(n * sizeof(float)), *sb = malloc(n * sizeof(float));
  for (int i = 0; i < a->nsnap; i++) {
    REQUIRE(tw_result_read_snapshot(a, i, sa, &err) == TW_OK && tw_result_read_snapshot(b, i, sb, &err) == TW_OK,
            "%s: %s", what, err.msg);
    CHECK(!memcmp(sa, sb, n * sizeof(float)), "%s: snapshot %d differs", what, i);
  }
  free(sa), free(sb);
  tw_result_close(a), tw_result_close(b);
}

/* One case: every shot of the survey through one session, against fresh single-shot runs; the
 * shot files carry their stamp. Returns the number of shots compared. */
static int sc_run_case(const sc_case *c, const char *kernel, int device, const char *tag) {
  char *text = sc_text(c, 1, NULL, 0);
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(text, tag, NULL, 0, &job, &err) == TW_OK, "%s: %s", tag, err.msg);
  REQUIRE(job->nshots == 7, "%s: %ld shots", tag, job->nshots);
  tw_medium *m = NULL;
  tw_session *s = NULL;
  REQUIRE(tw_medium_create(job, &m, NULL, &err) == TW_OK, "%s: %s", tag, err.msg);
  REQUIRE(tw_session_create(m, kernel, device, 0, &s, NULL, &err) == TW_OK, "%s: %s", tag, err.msg);
  char hash[24];
  tw_survey_hash(job, kernel, hash);
  static const long order[] = {3, 0, 6, 2, 5, 1, 4}; /* across the grid and back */
  for (int i = 0; i < 7; i++) {
    const long k = order[i];
    char sp[600], rp[600], what[200];
    snprintf(sp, sizeof sp, "%s/tests/survey-%s-shot%ld.h5", TW_BINARY_DIR, tag, k);
    snprintf(rp, sizeof rp, "%s/tests/survey-%s-single%ld.h5", TW_BINARY_DIR, tag, k);
    snprintf(what, sizeof what, "%s, shot %ld (%d-th run)", tag, k, i);
    tw_shot shot = {k, {job->shots[k][0], job->shots[k][1], job->shots[k][2]}, hash};
    tw_run_report rep;
    REQUIRE(tw_session_run(s, &shot, sp, NULL, &rep, &err) == TW_OK, "%s: %s", what, err.msg);
    CHECK(!c->window || (rep.window_planes > 0 && rep.planes_in > 0), "%s: no window (%d planes, %ld in): %s", what,
          rep.window_planes, rep.planes_in, rep.note);
    char *single = sc_text(c, 0, job, k);
    tw_job *sj = NULL;
    REQUIRE(tw_job_load_string(single, "single", NULL, 0, &sj, &err) == TW_OK, "%s: %s\n%s", what, err.msg, single);
    REQUIRE(tw_run_job(sj, rp, NULL, &rep, &err) == TW_OK, "%s: single: %s", what, err.msg);
    tw_job_destroy(sj);
    free(single);
    sc_compare(sp, rp, what);
    tw_shot_stamp st;
    REQUIRE(tw_shot_stamp_read(sp, &st, &err) == TW_OK, "%s: %s", what, err.msg);
    CHECK(st.index == k && !strcmp(st.hash, hash) && !memcmp(st.pos, job->shots[k], sizeof st.pos),
          "%s: stamp %ld %s [%g %g %g]", what, st.index, st.hash, st.pos[0], st.pos[1], st.pos[2]);
    CHECK(tw_shot_stamp_read(rp, &st, &err) == TW_EFORMAT, "%s: a single-shot file has a shot stamp", what);
    remove(sp), remove(rp);
  }
  tw_session_destroy(s);
  tw_medium_destroy(m);
  tw_job_destroy(job);
  free(text);
  return 7;
}

#endif
