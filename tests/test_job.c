/* test_job.c — the job file: a corpus of bad jobs (tests/bad_jobs, *.cfg, each naming the message
 * it must produce) and good jobs whose every value is checked: docs/design.md §1b's example, defaults,
 * overrides, duration → steps, snapshot and receiver expansion, stability helpers. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tw_io.h"
#include "tw_solver.h"
#include "tw_test.h"

#define NEAR(a, b) (fabs((a) - (b)) <= 1e-12 * (fabs(a) + fabs(b)) + 1e-300)

/* ---------------------------------------------------------------- the bad-job corpus */

static int cmp_str(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* "path:123:" */
static int starts_with_line(const char *msg, const char *path) {
  size_t l = strlen(path);
  if (strncmp(msg, path, l) || msg[l] != ':' || !isdigit((unsigned char)msg[l + 1])) return 0;
  const char *p = msg + l + 1;
  while (isdigit((unsigned char)*p)) p++;
  return *p == ':';
}

static int starts_with_override(const char *msg, const char *path) {
  size_t l = strlen(path);
  return !strncmp(msg, path, l) && !strncmp(msg + l, ": --set ", 8);
}

#define MAXDIR 32
typedef struct {
  char expect[MAXDIR][256];
  int nexpect;
  char set[MAXDIR][256];
  const char *sets[MAXDIR];
  int nset;
} directives;

/* Leading comment lines: "# expect: <substring>" and "# set: key=value". */
static void read_directives(const char *path, directives *d) {
  FILE *f = fopen(path, "r");
  char line[240];
  memset(d, 0, sizeof *d);
  while (f && fgets(line, sizeof line, f) && line[0] == '#') {
    line[strcspn(line, "\r\n")] = '\0';
    if (!strncmp(line, "# expect: ", 10) && d->nexpect < MAXDIR)
      snprintf(d->expect[d->nexpect++], 256, "%s", line + 10);
    else if (!strncmp(line, "# set: ", 7) && d->nset < MAXDIR) {
      snprintf(d->set[d->nset], 256, "%s", line + 7);
      d->sets[d->nset] = d->set[d->nset];
      d->nset++;
    }
  }
  if (f) fclose(f);
}

static void run_bad_job(const char *path, int *finalize_failures) {
  directives d;
  tw_error err;
  tw_job *job = NULL;
  read_directives(path, &d);
  CHECK(d.nexpect > 0, "%s: no '# expect:' line", path);
  tw_status st = tw_job_load(path, d.sets, d.nset, &job, &err);
  if (st == TW_OK) {
    /* what the parser alone cannot see: the validation check and run share (model, finalize,
     * wavelet files, free surface, ...) */
    CHECK(job != NULL, "%s: loaded but no job", path);
    tw_validation val;
    st = tw_job_validate(job, NULL, TW_VALIDATE_RUN, &val, NULL, &err);
    tw_validation_free(&val);
    if (st != TW_OK) (*finalize_failures)++;
    tw_job_destroy(job);
  } else {
    CHECK(job == NULL, "%s: failed but left a job", path);
  }
  CHECK(st != TW_OK, "%s: expected an error, got none", path);
  if (st == TW_OK) return;
  CHECK(err.code == st, "%s: err.code %d != status %d", path, (int)err.code, (int)st);
  for (int i = 0; i < d.nexpect; i++)
    CHECK(strstr(err.msg, d.expect[i]) != NULL, "%s:\n  message: %s\n  expected to contain: %s", path, err.msg,
          d.expect[i]);
  CHECK(starts_with_line(err.msg, path) || (d.nset > 0 && starts_with_override(err.msg, path)),
        "%s: message does not start with '<file>:<line>:': %s", path, err.msg);
}

static void test_corpus(void) {
  char dir[1024];
  snprintf(dir, sizeof dir, "%s/tests/bad_jobs", TW_SOURCE_DIR);
  DIR *dp = opendir(dir);
  REQUIRE(dp != NULL, "cannot open %s", dir);
  char *names[512];
  int n = 0;
  struct dirent *e;
  while ((e = readdir(dp)) && n < 512) {
    size_t l = strlen(e->d_name);
    if (l > 4 && !strcmp(e->d_name + l - 4, ".cfg")) names[n++] = strdup(e->d_name);
  }
  closedir(dp);
  qsort(names, (size_t)n, sizeof *names, cmp_str);
  CHECK(n >= 35, "only %d bad jobs in %s", n, dir);
  int fin = 0, before = tw_test_failures;
  for (int i = 0; i < n; i++) {
    char path[1400];
    snprintf(path, sizeof path, "%s/%s", dir, names[i]);
    run_bad_job(path, &fin);
    free(names[i]);
  }
  CHECK(fin >= 2, "only %d corpus jobs failed in tw_job_validate (expected the unstable dt and snapshot cases)", fin);
  printf("bad-job corpus: %d files, %d caught by tw_job_validate (after parsing), %d failures\n", n, fin,
         tw_test_failures - before);
}

/* ---------------------------------------------------------------- good jobs */

static const char *design_example =
    "grid = { n = [400, 400, 200];          # cells in x, y, z of the model (layers come on top)\n"
    "         d = [10.0, 10.0, 10.0];\n"
    "         origin = [0.0, 0.0, 0.0]; };  # optional\n"
    "time = { steps = 2000;                 # or: duration = 2.0;\n"
    "         dt = 0.0008; };               # optional: default is the stable limit times a margin\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "  # type = \"layered\";  layers = ( { top = 0.0; vp = 1500.0; }, { top = 800.0; vp = 2500.0; } );\n"
    "  # type = \"gradient\"; vp0 = 1500.0; gradient = 0.6;        # vp = vp0 + gradient * depth\n"
    "  # type = \"hdf5\";     file = \"model.h5\"; dataset = \"vp\";   # shape [nx][ny][nz]\n"
    "  # type = \"raw\";      file = \"vp.bin\";                     # float32 LE, z fastest\n"
    "scheme = { order = 8; };\n"
    "boundary = { absorbing = 20;           # cells on every face; or { x = 20; y = 20; z = 20; }\n"
    "             free_surface = true; };   # top face: p = 0, no absorbing layer there\n"
    "sources = ( { position = [2000.0, 2000.0, 30.0];\n"
    "              wavelet = { type = \"ricker\"; frequency = 12.0; delay = 0.12; amplitude = 1.0; }; } );\n"
    "  # wavelet = { type = \"file\"; file = \"w.txt\"; dt = 0.0005; }   # one sample per line\n"
    "receivers = { interval = 2;            # one sample every 2 steps\n"
    "              interpolation = \"nearest\";                       # or \"trilinear\"\n"
    "              points = ( [1000.0, 2000.0, 10.0] );\n"
    "              lines  = ( { from = [0.0, 2000.0, 10.0]; to = [3990.0, 2000.0, 10.0]; count = 400; } );\n"
    "              grids  = ( { origin = [0.0, 0.0]; spacing = [20.0, 20.0]; count = [200, 200];\n"
    "                           depth = 10.0; } ); };\n"
    "snapshots = { every = 250;             # or: steps = [500, 1000];\n"
    "              decimate = 2;            # keep every 2nd cell on each axis\n"
    "              region = { from = [0.0, 0.0, 0.0]; to = [3990.0, 3990.0, 1990.0]; }; };  # optional\n"
    "output = { file = \"shot.h5\"; };\n"
    "solver = { kernel = \"auto\";            # cpu | cpu-diamond | gpu-stepwise | gpu-diamond\n"
    "           dts = 2; tower_height = 96; # DiamondTorre parameters (defaults tuned per order)\n"
    "           device_memory = \"8G\"; };    # cap on the GPU (or window) memory the solver may use\n";

static tw_job *load_ok(const char *text, const char *name, const char *const *ov, int nov) {
  tw_error err = {0};
  tw_job *job = NULL;
  tw_status st = tw_job_load_string(text, name, ov, nov, &job, &err);
  CHECK(st == TW_OK && job, "%s: %s", name, err.msg);
  return st == TW_OK ? job : NULL;
}

static void test_design_example(void) {
  tw_job *j = load_ok(design_example, "design.cfg", NULL, 0);
  if (!j) return;
  CHECK(!strcmp(j->path, "design.cfg"), "path %s", j->path);
  CHECK(!strcmp(j->text, design_example), "text not verbatim");
  CHECK(j->n[0] == 400 && j->n[1] == 400 && j->n[2] == 200, "n");
  CHECK(j->d[0] == 10.0 && j->d[1] == 10.0 && j->d[2] == 10.0, "d");
  CHECK(j->origin[0] == 0 && j->origin[1] == 0 && j->origin[2] == 0, "origin");
  CHECK(j->steps == 2000 && j->dt == 0.0008 && j->dt_given == 1 && j->duration == 0, "time");
  CHECK(j->dt_margin == 0.9, "dt_margin %g", j->dt_margin);
  CHECK(j->model.type == TW_MODEL_CONSTANT && j->model.vp == 2000.0 && !strcmp(j->model.where, "design.cfg:6"),
        "model at %s", j->model.where);
  CHECK(j->order == 8, "order");
  CHECK(j->absorb[0] == 20 && j->absorb[1] == 20 && j->absorb[2] == 20 && j->free_surface == 1, "boundary");
  REQUIRE(j->nsources == 1, "nsources %d", j->nsources);
  const tw_source_spec *s = &j->sources[0];
  CHECK(s->pos[0] == 2000 && s->pos[1] == 2000 && s->pos[2] == 30 && s->interp == TW_INTERP_NEAREST, "source");
  CHECK(!strcmp(s->where, "design.cfg:14") && !strcmp(s->wavelet.where, "design.cfg:15"), "source at %s, wavelet at %s",
        s->where, s->wavelet.where);
  CHECK(s->wavelet.type == TW_WAVELET_RICKER && s->wavelet.frequency == 12.0 && s->wavelet.delay == 0.12 &&
            s->wavelet.amplitude == 1.0 && !s->wavelet.file, "wavelet");
  CHECK(j->rec_interval == 2 && j->rec_interp == TW_INTERP_NEAREST, "receivers");
  CHECK(j->nrec == 1 + 400 + 200 * 200, "nrec %ld", j->nrec);
  CHECK(j->rec[0][0] == 1000 && j->rec[0][1] == 2000 && j->rec[0][2] == 10, "point");
  CHECK(j->rec[1][0] == 0 && j->rec[400][0] == 3990 && NEAR(j->rec[2][0], 10.0) && j->rec[300][1] == 2000,
        "line x %g %g %g", j->rec[1][0], j->rec[400][0], j->rec[2][0]);
  /* grid: x-major (for ix, for iy) */
  CHECK(j->rec[401][0] == 0 && j->rec[401][1] == 0 && j->rec[402][1] == 20 && j->rec[401 + 200][0] == 20 &&
            j->rec[401 + 200][1] == 0, "grid order");
  CHECK(j->rec[j->nrec - 1][0] == 3980 && j->rec[j->nrec - 1][1] == 3980 && j->rec[j->nrec - 1][2] == 10, "grid end");
  CHECK(j->snap_every == 250 && j->snap_decimate == 2 && j->nsnap == 0, "snapshots before finalize");
  CHECK(j->snap_from[0] == 0 && j->snap_to[0] == 3990 && j->snap_to[1] == 3990 && j->snap_to[2] == 1990, "region");
  CHECK(!strcmp(j->output, "shot.h5"), "output %s", j->output);
  CHECK(!strcmp(j->kernel, "auto") && j->dts == 2 && j->tower_height == 96 && j->threads == 0, "solver");
  CHECK(j->device_memory == 8ull << 30, "device_memory %llu", (unsigned long long)j->device_memory);

  tw_error err;
  CHECK(tw_job_finalize(j, 2000, 2000, &err) == TW_OK, "finalize: %s", err.msg);
  CHECK(j->dt == 0.0008 && j->steps == 2000, "dt kept");
  CHECK(j->nsnap == 8 && j->snap_steps[0] == 250 && j->snap_steps[7] == 2000, "snap expansion %d", j->nsnap);
  CHECK(tw_job_finalize(j, 2000, 2000, &err) == TW_OK && j->nsnap == 8, "finalize twice");
  double ppw = tw_points_per_wavelength(j, 2000);
  CHECK(NEAR(ppw, 2000.0 / (2.5 * 12.0 * 10.0)), "ppw %g", ppw);
  tw_job_destroy(j);
}

static const char *minimal =
    "grid = { n = [20, 30, 10]; d = [10, 5, 2]; origin = (100, -50, 4); };\n"
    "time = { duration = 0.1; };\n"
    "model = { type = \"gradient\"; vp0 = 1500; gradient = 0.5; };\n"
    "sources = ( { position = (150, 0, 10);\n"
    "  wavelet = { type = \"ricker\"; frequency = 8; }; } );";

static void test_defaults(void) {
  tw_job *j = load_ok(minimal, "dir/mini.cfg", NULL, 0);
  if (!j) return;
  CHECK(j->n[1] == 30 && j->d[1] == 5.0 && j->d[2] == 2.0 && j->origin[0] == 100 && j->origin[1] == -50, "grid");
  CHECK(j->steps == 0 && j->duration == 0.1 && j->dt == 0 && !j->dt_given && j->dt_margin == 0.9, "time");
  CHECK(j->model.type == TW_MODEL_GRADIENT && j->model.vp0 == 1500 && j->model.gradient == 0.5, "model");
  CHECK(j->order == 8 && j->absorb[0] == 20 && j->absorb[2] == 20 && !j->free_surface, "scheme/boundary");
  CHECK(j->sources[0].wavelet.delay == 1.5 / 8 && j->sources[0].wavelet.amplitude == 1.0, "ricker defaults");
  CHECK(j->sources[0].interp == TW_INTERP_NEAREST && j->sources[0].pos[1] == 0, "source");
  CHECK(j->rec_interval == 1 && j->rec_interp == TW_INTERP_NEAREST && j->nrec == 0 && !j->rec, "receivers");
  CHECK(j->nsnap == 0 && j->snap_every == 0 && j->snap_decimate == 1, "snapshots");
  CHECK(j->snap_from[0] == 100 && j->snap_to[0] == 290 && j->snap_from[1] == -50 && j->snap_to[1] == 95 &&
            j->snap_from[2] == 4 && j->snap_to[2] == 22, "region default");
  CHECK(!strcmp(j->output, "mini.h5"), "default output %s", j->output);
  CHECK(!strcmp(j->kernel, "auto") && !j->dts && !j->tower_height && !j->device_memory && !j->threads, "solver");

  tw_error err;
  CHECK(tw_job_finalize(j, 1500, 3000, &err) == TW_OK, "finalize: %s", err.msg);
  double lim = tw_stable_dt(8, j->d, 3000);
  CHECK(NEAR(j->dt, 0.9 * lim), "dt %g vs %g", j->dt, 0.9 * lim);
  CHECK(NEAR(tw_courant(8, j->d, 3000, j->dt), 0.9), "courant %g", tw_courant(8, j->d, 3000, j->dt));
  CHECK(j->steps == (long)ceil(0.1 / j->dt - 1e-9) && j->steps > 1, "steps %ld", j->steps);
  long steps = j->steps;
  double dt = j->dt;
  CHECK(tw_job_finalize(j, 1500, 3000, &err) == TW_OK && j->steps == steps && j->dt == dt, "idempotent");
  tw_job_destroy(j);

  tw_job *k = load_ok(minimal, NULL, NULL, 0);
  if (k) CHECK(!strcmp(k->path, "<string>") && !strcmp(k->output, "torrewave.h5"), "unnamed: %s", k->output);
  tw_job_destroy(k);
}

static const char *base =
    "grid = { n = [20, 20, 10]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { duration = 0.5; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "sources = ( { position = [100.0, 100.0, 50.0]; wavelet = { type = \"ricker\"; frequency = 10.0; }; } );\n"
    "solver = { kernel = \"gpu-diamond\"; };\n"
    "snapshots = { steps = [10, 20]; };";

static void test_overrides(void) {
  const char *ov[] = {"grid.n=[30,31,12]", "solver.kernel=cpu", "time.steps=500", "receivers.interval=4",
                      "boundary.absorbing=10", "scheme.order=4", "output.file=out/x.h5", "solver.device_memory=512M",
                      "snapshots.every=100", "time.dt=1e-4",
                      "sources=({position=[10.0,10.0,10.0];wavelet={type=\"ricker\";frequency=5.0;};},"
                      "{position=[0,0,0];interpolation=\"trilinear\";wavelet={type=\"ricker\";frequency=7;};})"};
  int n = (int)(sizeof ov / sizeof ov[0]);
  tw_job *j = load_ok(base, "ov.cfg", ov, n);
  if (!j) return;
  CHECK(j->n[0] == 30 && j->n[1] == 31 && j->n[2] == 12, "grid.n override");
  CHECK(!strcmp(j->kernel, "cpu"), "kernel %s", j->kernel);
  CHECK(j->steps == 500 && j->duration == 0, "time.steps replaces duration: %ld %g", j->steps, j->duration);
  CHECK(j->dt == 1e-4 && j->dt_given, "dt");
  CHECK(j->rec_interval == 4 && j->absorb[1] == 10 && j->order == 4, "interval/absorbing/order");
  CHECK(!strcmp(j->output, "out/x.h5"), "output %s", j->output);
  CHECK(j->device_memory == 512ull << 20, "memory");
  CHECK(j->snap_every == 100 && j->nsnap == 0, "snapshots.every replaces steps");
  CHECK(j->nsources == 2 && j->sources[0].wavelet.frequency == 5 && j->sources[1].interp == TW_INTERP_TRILINEAR,
        "sources override");
  size_t bl = strlen(base);
  CHECK(!strncmp(j->text, base, bl) && j->text[bl] == '\n', "text starts verbatim");
  CHECK(strstr(j->text, "\n# --set grid.n=[30,31,12]\n# --set solver.kernel=cpu\n") != NULL, "text records: %s",
        j->text + bl);
  CHECK(j->text[strlen(j->text) - 1] == '\n', "text ends with newline");
  tw_error err;
  CHECK(tw_job_finalize(j, 2000, 2000, &err) == TW_OK, "finalize: %s", err.msg);
  CHECK(j->nsnap == 5 && j->snap_steps[4] == 500, "every 100 of 500: %d", j->nsnap);
  tw_job_destroy(j);

  /* an error located at an override, found again in finalize */
  const char *ov2[] = {"time.dt=0.02"};
  j = load_ok(base, "ov2.cfg", ov2, 1);
  if (j) {
    CHECK(tw_job_finalize(j, 1500, 4000, &err) == TW_EUNSTABLE, "unstable");
    CHECK(strstr(err.msg, "ov2.cfg: --set time.dt=0.02: time.dt: ") == err.msg, "%s", err.msg);
    tw_job_destroy(j);
  }
  /* a snapshot beyond steps once duration → steps is known: located at its line */
  const char *ov3[] = {"time.dt=0.05"};
  j = load_ok(base, "ov3.cfg", NULL, 0);
  if (j) {
    CHECK(tw_job_finalize(j, 1500, 4000, &err) == TW_OK, "%s", err.msg);
    tw_job_destroy(j);
  }
  tw_error e2;
  tw_job *bad = NULL;
  CHECK(tw_job_load_string(base, "ov3.cfg", ov3, 1, &bad, &e2) == TW_ECONFIG && !bad, "duration 0.5 / dt 0.05");
  CHECK(strstr(e2.msg, "ov3.cfg:6: snapshots.steps[1]: snapshot step beyond the last time step: got 20; allowed 1..10"),
        "%s", e2.msg);

  /* blanks around "=" and the whole (`--set 'time.steps = 500'`): a key "time.steps " was a bad key, and
   * a bare word " cpu" not a string */
  const char *ov4[] = {"time.steps = 500", " solver.kernel =\tcpu ", "grid.n= [30, 31, 12]", "output.file =out/y.h5"};
  j = load_ok(base, "ov4.cfg", ov4, 4);
  if (j) {
    CHECK(j->steps == 500 && !strcmp(j->kernel, "cpu") && j->n[1] == 31 && !strcmp(j->output, "out/y.h5"),
          "blanks around =: steps %ld, kernel '%s', n[1] %d, output '%s'", j->steps, j->kernel, j->n[1], j->output);
    tw_job_destroy(j);
  }

  /* bad override forms */
  const char *bads[] = {"=5", "grid.n=", "grid..n=1", "sources.[0].position=[1,2,3]", "grid.n.x=1", "a=1;b=2",
                        " = 5", "time.steps = ", "time steps = 5"};
  for (size_t i = 0; i < sizeof bads / sizeof bads[0]; i++) {
    tw_job *b = NULL;
    tw_error e;
    tw_status st = tw_job_load_string(base, "b.cfg", &bads[i], 1, &b, &e);
    char want[128];
    snprintf(want, sizeof want, "b.cfg: --set %s: ", bads[i]);
    CHECK(st == TW_ECONFIG && !b && strstr(e.msg, want) == e.msg, "override %s: %s", bads[i], e.msg);
    tw_job_destroy(b);
  }
}

static void test_duration_and_snapshots(void) {
  const char *t =
      "grid = { n = [10, 10, 10]; d = [10.0, 10.0, 10.0]; };\n"
      "time = { duration = 0.1; dt = 0.001; };\n"
      "model = { type = \"constant\"; vp = 2000.0; };\n"
      "sources = ( { position = [0, 0, 0]; wavelet = { type = \"file\"; file = \"TEST_WAVELET\"; }; } );\n"
      "snapshots = { steps = [50, 10, 10, 100]; decimate = 3;\n"
      "  region = { from = [10, 20, 30]; to = [10, 40, 90]; }; };";
  /* the wavelet file must exist: use this test's own source, by absolute path */
  char text[2048], wpath[1024];
  snprintf(wpath, sizeof wpath, "%s/tests/test_job.c", TW_SOURCE_DIR);
  const char *p = strstr(t, "TEST_WAVELET");
  snprintf(text, sizeof text, "%.*s%s%s", (int)(p - t), t, wpath, p + strlen("TEST_WAVELET"));
  tw_job *j = load_ok(text, "dur.cfg", NULL, 0);
  if (!j) return;
  CHECK(j->steps == 100 && j->dt == 0.001, "steps from duration at load: %ld", j->steps);
  CHECK(j->nsnap == 3 && j->snap_steps[0] == 10 && j->snap_steps[1] == 50 && j->snap_steps[2] == 100, "sorted unique");
  CHECK(j->snap_decimate == 3 && j->snap_from[1] == 20 && j->snap_to[2] == 90, "region");
  CHECK(j->sources[0].wavelet.type == TW_WAVELET_FILE && !strcmp(j->sources[0].wavelet.file, wpath) &&
            j->sources[0].wavelet.file_dt == 0, "file wavelet");
  CHECK(isinf(tw_points_per_wavelength(j, 1500)), "ppw without ricker");
  tw_error err;
  CHECK(tw_job_finalize(j, 1500, 2000, &err) == TW_OK && j->steps == 100 && j->nsnap == 3, "%s", err.msg);
  tw_job_destroy(j);

  /* every: k, 2k, ... <= steps */
  const char *ov[] = {"snapshots={every=30;}", "time={steps=100;}"};
  j = load_ok(text, "every.cfg", ov, 2);
  if (!j) return;
  CHECK(tw_job_finalize(j, 1500, 2000, &err) == TW_OK, "%s", err.msg);
  CHECK(j->nsnap == 3 && j->snap_steps[0] == 30 && j->snap_steps[2] == 90, "every 30: %d", j->nsnap);
  CHECK(j->snap_from[0] == 0 && j->snap_to[0] == 90, "region reset to the whole model");
  tw_job_destroy(j);
}

static void test_receivers(void) {
  const char *t =
      "grid = { n = [11, 11, 11]; d = [10.0, 10.0, 10.0]; };\n"
      "time = { steps = 10; };\n"
      "model = { type = \"layered\"; layers = ( { top = -5.0; vp = 1500.0; }, { top = 50; vp = 2500; } ); };\n"
      "sources = ( { position = [0, 0, 0]; wavelet = { type = \"ricker\"; frequency = 10; }; } );\n"
      "receivers = { interpolation = \"trilinear\";\n"
      "  points = ( [1, 2, 3], (4, 5, 6) );\n"
      "  lines = ( { from = [0.0, 0.0, 10.0]; to = [90.0, 0.0, 10.0]; count = 4; },\n"
      "            { from = [5.0, 6.0, 7.0]; to = [5.0, 6.0, 7.0]; count = 1; } );\n"
      "  grids = ( { origin = [10, 20]; spacing = [5, 10]; count = [2, 3]; depth = 30; } ); };";
  tw_job *j = load_ok(t, "rec.cfg", NULL, 0);
  if (!j) return;
  CHECK(j->model.nlayers == 2 && j->model.layers[0].top == -5 && j->model.layers[1].vp == 2500, "layers");
  CHECK(j->rec_interp == TW_INTERP_TRILINEAR, "interp");
  REQUIRE(j->nrec == 2 + 4 + 1 + 6, "nrec %ld", j->nrec);
  static const double want[13][3] = {{1, 2, 3},    {4, 5, 6},    {0, 0, 10},   {30, 0, 10},  {60, 0, 10},
                                     {90, 0, 10},  {5, 6, 7},    {10, 20, 30}, {10, 30, 30}, {10, 40, 30},
                                     {15, 20, 30}, {15, 30, 30}, {15, 40, 30}};
  for (int i = 0; i < 13; i++)
    CHECK(NEAR(j->rec[i][0], want[i][0]) && NEAR(j->rec[i][1], want[i][1]) && NEAR(j->rec[i][2], want[i][2]),
          "rec %d: %g %g %g", i, j->rec[i][0], j->rec[i][1], j->rec[i][2]);
  tw_job_destroy(j);
}

/* A line of count = 1 whose `to` is its `from` up to rounding (a script's from + 0 * spacing written
 * to 17 digits, far coordinates in UTM) is its one point: refused, it said "at from = [0.3, ...] ...
 * got [0.3, ...]; allowed to = from". A `to` a whisker beyond rounding is still refused. */
static void test_line_count_one_rounding(void) {
  const char *head =
      "grid = { n = [11, 11, 11]; d = [10.0, 10.0, 0.1]; origin = [0.0, 5000000.0, 0.0]; };\n"
      "time = { steps = 10; };\n"
      "model = { type = \"constant\"; vp = 1500.0; };\n"
      "sources = ( { position = [50.0, 5000050.0, 0.5]; wavelet = { type = \"ricker\"; frequency = 10; }; } );\n";
  char t[1024];
  snprintf(t, sizeof t, "%sreceivers = { lines = ( { from = [0.3, 5000000.3, 0.3]; "
           "to = [0.30000000000000004, 5000000.300000001, 0.30000000000000004]; count = 1; } ); };", head);
  tw_job *j = load_ok(t, "one.cfg", NULL, 0);
  if (j) {
    CHECK(j->nrec == 1 && j->rec[0][0] == 0.3 && j->rec[0][1] == 5000000.3 && j->rec[0][2] == 0.3,
          "nrec %ld, rec 0: %.17g %.17g %.17g", j->nrec, j->rec[0][0], j->rec[0][1], j->rec[0][2]);
    tw_job_destroy(j);
  }
  snprintf(t, sizeof t, "%sreceivers = { lines = ( { from = [0.3, 5000000.3, 0.3]; "
           "to = [0.3, 5000000.3, 0.3000001]; count = 1; } ); };", head);
  tw_job *b = NULL;
  tw_error e = {0};
  CHECK(tw_job_load_string(t, "one2.cfg", NULL, 0, &b, &e) != TW_OK &&
        strstr(e.msg, "receivers.lines[0].to: with count = 1") && strstr(e.msg, "0.3000001"), "%s", e.msg);
  tw_job_destroy(b);
}

/* A model far from its origin in cells (a 10 cm grid in UTM coordinates: y = 5e6 m carries 4.7e-9
 * cells of rounding): the last cell, origin + (n − 1)·d, was inside for the validation (1e-9·d in
 * metres) but outside for the placement (1e-9 cells): check said ok, run refused the receiver;
 * the snapshot box lost the last row of the whole model (11 of 12 y cells) and put a box on the
 * last cell one cell past it (first_cell = n, outside the model). */
static void test_far_origin(void) {
  const char *t =
      "grid = { n = [9, 12, 10]; d = [0.1, 0.1, 0.1]; origin = [500000.0, 5000000.0, 5000000.0]; };\n"
      "time = { steps = 5; };\n"
      "model = { type = \"constant\"; vp = 300.0; vp_range = [100.0, 1000.0]; };\n"
      "sources = ( { position = [500000.8, 5000001.1, 5000000.9]; wavelet = { type = \"ricker\"; frequency = 100.0; }; } );\n"
      "receivers = { points = ( [500000.8, 5000001.1, 5000000.9], [500000.0, 5000000.0, 5000000.0] );\n"
      "  lines = ( { from = [500000.8, 5000000.0, 5000000.9]; to = [500000.8, 5000001.1, 5000000.9]; count = 7; } ); };\n"
      "snapshots = { every = 5; };";
  const char *last[] = {"snapshots={every=5;region={from=[500000.8,5000001.1,5000000.9];"
                        "to=[500000.8,5000001.1,5000000.9];};}"};
  for (int v = 0; v < 2; v++) {
    tw_job *j = load_ok(t, "utm.cfg", last, v);
    if (!j) return;
    tw_grid g;
    tw_grid_of_job(j, &g);
    tw_error err = {0};
    tw_points_at at;
    CHECK(tw_points_at_compute(j, &g, 1, &at, &err) == TW_OK, "receivers: %s", err.msg);
    if (!err.msg[0]) {
      CHECK(at.cells[0] == 8 && at.cells[1] == 11 && at.cells[2] == 9, "the far corner: cell (%d, %d, %d)",
            at.cells[0], at.cells[1], at.cells[2]);
      tw_points_at_free(&at);
    }
    CHECK(tw_points_at_compute(j, &g, 0, &at, &err) == TW_OK, "sources: %s", err.msg);
    if (!err.msg[0]) tw_points_at_free(&at);
    int lo[3], cnt[3];
    tw_snapshot_box(j, lo, cnt);
    for (int a = 0; a < 3; a++) {
      const int want_lo = v ? j->n[a] - 1 : 0, want_cnt = v ? 1 : j->n[a];
      CHECK(lo[a] == want_lo && cnt[a] == want_cnt, "%s box axis %d: first cell %d, %d cells (want %d, %d)",
            v ? "last-cell" : "whole-model", a, lo[a], cnt[a], want_lo, want_cnt);
    }
    tw_job_destroy(j);
  }
}

/* The snapshot box holds the cells whose positions lie inside the region, and only those; decimation
 * keeps every n-th one from the box's first cell. A region with no cell on an axis (from and to between
 * two cells, at either end of the model too) is refused, for every decimation: its box was given the
 * next cell up, outside the region (from = to = 15 m on a 10 m grid wrote the plane x = 20 m). */
static void test_snapshot_region_cells(void) {
  const char *t =
      "grid = { n = [12, 10, 8]; d = [10.0, 10.0, 10.0]; origin = [0.0, -50.0, 0.0]; };\n"
      "time = { steps = 10; };\n"
      "model = { type = \"constant\"; vp = 2000.0; };\n"
      "sources = ( { position = [50.0, 0.0, 40.0]; wavelet = { type = \"ricker\"; frequency = 20.0; }; } );\n"
      "snapshots = { every = 5; };";
  static const struct {
    const char *set;
    int lo[3], cnt[3];
  } ok[] = {
      {"snapshots.region={from=[12.0,-50.0,0.0];to=[28.0,40.0,70.0];}", {2, 0, 0}, {1, 10, 8}},
      {"snapshots.region={from=[5.0,-45.0,0.5];to=[95.0,-35.0,10.0];}", {1, 1, 1}, {9, 1, 1}},
      {"snapshots={every=5;decimate=4;region={from=[5.0,-45.0,0.5];to=[95.0,-35.0,10.0];};}", {1, 1, 1}, {3, 1, 1}},
      {"snapshots={every=5;decimate=3;region={from=[12.0,-50.0,61.0];to=[28.0,40.0,70.0];};}", {2, 0, 7}, {1, 4, 1}},
  };
  for (size_t k = 0; k < sizeof ok / sizeof ok[0]; k++) {
    const char *ov[] = {ok[k].set};
    tw_job *j = load_ok(t, "box.cfg", ov, 1);
    if (!j) continue;
    int lo[3], cnt[3];
    tw_snapshot_box(j, lo, cnt);
    for (int a = 0; a < 3; a++)
      CHECK(lo[a] == ok[k].lo[a] && cnt[a] == ok[k].cnt[a], "%s: axis %d: first cell %d, %d cells (want %d, %d)",
            ok[k].set, a, lo[a], cnt[a], ok[k].lo[a], ok[k].cnt[a]);
    tw_job_destroy(j);
  }
  static const char *const refused[][2] = {
      {"snapshots.region={from=[15.0,-50.0,0.0];to=[15.0,40.0,70.0];}",
       "holds no cell on x: from[0] = 15.0 and to[0] = 15.0 lie between the cells at x = 10.0 and 20.0 m"},
      {"snapshots={every=5;decimate=2;region={from=[0.0,-50.0,0.5];to=[110.0,40.0,9.5];};}",
       "holds no cell on z: from[2] = 0.5 and to[2] = 9.5 lie between"},
      {"snapshots.region={from=[105.0,-50.0,0.0];to=[108.0,40.0,70.0];}", "cells at x = 100.0 and 110.0 m"},
      {"snapshots.region={from=[0.0,-49.0,0.0];to=[110.0,-41.0,70.0];}", "allowed from[1] <= -50.0 or to[1] >= -40.0"},
  };
  for (size_t k = 0; k < sizeof refused / sizeof refused[0]; k++) {
    const char *ov[] = {refused[k][0]};
    tw_job *j = NULL;
    tw_error err = {0};
    CHECK(tw_job_load_string(t, "box.cfg", ov, 1, &j, &err) == TW_ECONFIG && !j &&
              strstr(err.msg, "snapshots.region: ") && strstr(err.msg, refused[k][1]),
          "%s: %s", refused[k][0], err.msg[0] ? err.msg : "accepted");
    tw_job_destroy(j);
  }
}

static void test_solver_and_boundary(void) {
  const char *t =
      "grid = { n = [10, 10, 10]; d = [10.0, 10.0, 10.0]; };\n"
      "time = { steps = 10; dt_margin = 0.5; };\n"
      "model = { type = \"constant\"; vp = 2000.0; };\n"
      "scheme = { order = 16; };\n"
      "boundary = { absorbing = { x = 5; z = 7; }; free_surface = false; };\n"
      "sources = ( { position = [0, 0, 0]; wavelet = { type = \"ricker\"; frequency = 10; delay = 0; amplitude = -2; }; } );\n"
      "solver = { kernel = \"cpu-diamond\"; dts = 3; tower_height = 40; device_memory = 4096; threads = 2; };";
  tw_job *j = load_ok(t, "s.cfg", NULL, 0);
  if (!j) return;
  CHECK(j->order == 16 && j->absorb[0] == 5 && j->absorb[1] == 20 && j->absorb[2] == 7, "absorb group");
  CHECK(!strcmp(j->kernel, "cpu-diamond") && j->dts == 3 && j->tower_height == 40 && j->threads == 2, "solver");
  CHECK(j->device_memory == 4096, "int bytes");
  CHECK(j->sources[0].wavelet.delay == 0 && j->sources[0].wavelet.amplitude == -2, "wavelet values");
  tw_error err;
  CHECK(tw_job_finalize(j, 2000, 2000, &err) == TW_OK, "%s", err.msg);
  CHECK(NEAR(tw_courant(16, j->d, 2000, j->dt), 0.5), "margin 0.5");
  tw_job_destroy(j);

  const char *ov[] = {"solver.device_memory=1.5G"};
  j = load_ok(t, "s.cfg", ov, 1);
  if (j) CHECK(j->device_memory == 3ull << 29, "1.5G = %llu", (unsigned long long)j->device_memory);
  tw_job_destroy(j);
}

static void test_files(void) {
  char dir[] = "/tmp/tw_test_job_XXXXXX";
  char *made = mkdtemp(dir); /* not inside REQUIRE: it evaluates its condition twice */
  REQUIRE(made != NULL, "mkdtemp");
  char job[256], vp[256], h5[256], wav[256];
  snprintf(job, sizeof job, "%s/job.cfg", dir);
  snprintf(vp, sizeof vp, "%s/vp.bin", dir);
  snprintf(h5, sizeof h5, "%s/m.h5", dir);
  snprintf(wav, sizeof wav, "%s/w.txt", dir);
  const char *text =
      "grid = { n = [4, 3, 2]; d = [1.0, 1.0, 1.0]; };\n"
      "time = { steps = 10; };\n"
      "model = { type = \"raw\"; file = \"vp.bin\"; };\n"
      "sources = ( { position = [0, 0, 0]; wavelet = { type = \"file\"; file = \"w.txt\"; dt = 0.001; }; } );\n";
  FILE *f = fopen(job, "w");
  fputs(text, f);
  fclose(f);
  f = fopen(vp, "wb");
  float v[24] = {0};
  fwrite(v, sizeof v, 1, f);
  fclose(f);
  f = fopen(wav, "w");
  fputs("0\n1\n0\n", f);
  fclose(f);
  f = fopen(h5, "w");
  fclose(f);

  tw_error err;
  tw_job *j = NULL;
  CHECK(tw_job_load(job, NULL, 0, &j, &err) == TW_OK, "%s", err.msg);
  if (j) {
    CHECK(!strcmp(j->text, text), "text verbatim");
    CHECK(j->model.type == TW_MODEL_RAW && !strcmp(j->model.file, vp), "raw resolved: %s", j->model.file);
    CHECK(!strcmp(j->sources[0].wavelet.file, wav) && j->sources[0].wavelet.file_dt == 0.001, "wavelet resolved");
    CHECK(!strcmp(j->output, "job.h5"), "output %s", j->output);
    tw_job_destroy(j);
  }
  const char *ov[] = {"model={type=\"hdf5\";file=\"m.h5\";}"};
  CHECK(tw_job_load(job, ov, 1, &j, &err) == TW_OK, "%s", err.msg);
  if (j) {
    CHECK(j->model.type == TW_MODEL_HDF5 && !strcmp(j->model.file, h5) && !strcmp(j->model.dataset, "vp"), "hdf5");
    tw_job_destroy(j);
  }
  const char *ov2[] = {"grid.n=[4,3,3]"};
  CHECK(tw_job_load(job, ov2, 1, &j, &err) == TW_ECONFIG && !j, "raw size after override");
  CHECK(strstr(err.msg, ":3: model.file: raw model") && strstr(err.msg, "expected 144 bytes"), "%s", err.msg);

  char nofile[300];
  snprintf(nofile, sizeof nofile, "%s/nope.cfg", dir);
  CHECK(tw_job_load(nofile, NULL, 0, &j, &err) == TW_EIO && !j, "missing job file");
  CHECK(strstr(err.msg, "nope.cfg") && strstr(err.msg, "No such file"), "%s", err.msg);
  CHECK(tw_job_load(dir, NULL, 0, &j, &err) == TW_EIO && !j, "a directory: %s", err.msg);
  remove(job);
  remove(vp);
  remove(h5);
  remove(wav);
  rmdir(dir);
}

static void test_stability(void) {
  double d[3] = {10, 10, 10}, e[3] = {5, 10, 20};
  for (int order = 2; order <= 16; order += 2) {
    double lim = tw_stable_dt(order, d, 3000);
    double sum = tw_fd_lambda(order) * 3 / 100.0;
    CHECK(NEAR(3000.0 * 3000.0 * lim * lim * sum, 4.0), "order %d: limit", order);
    CHECK(NEAR(tw_courant(order, d, 3000, lim), 1.0), "order %d: courant at the limit", order);
    CHECK(NEAR(tw_courant(order, e, 2500, 0.9 * tw_stable_dt(order, e, 2500)), 0.9), "order %d: margin", order);
  }
  /* order 2, 3D, d = h: dt_max = h / (c sqrt(3)) */
  CHECK(NEAR(tw_stable_dt(2, d, 1000), 10.0 / (1000.0 * sqrt(3.0))), "order 2 CFL");
  CHECK(tw_ppw_warn_threshold(2) == 10 && tw_ppw_warn_threshold(4) == 6 && tw_ppw_warn_threshold(6) == 5 &&
            tw_ppw_warn_threshold(8) == 4 && tw_ppw_warn_threshold(16) == 4, "ppw thresholds");
  tw_error err;
  uint64_t b = 0;
  CHECK(tw_parse_memsize("80G", &b, &err) == TW_OK && b == 80ull << 30, "80G");
  CHECK(tw_parse_memsize("8X", &b, &err) != TW_OK, "8X");
  /* the binary units as the run log and bench's help write them (bench --help: gpu-diamond+cap=2GiB) */
  CHECK(tw_parse_memsize("2GiB", &b, &err) == TW_OK && b == 2ull << 30, "2GiB");
  CHECK(tw_parse_memsize("512MiB", &b, &err) == TW_OK && b == 512ull << 20, "512MiB");
  CHECK(tw_parse_memsize("8GB", &b, &err) == TW_OK && b == 8ull << 30, "8GB");
  CHECK(tw_parse_memsize("2Gi", &b, &err) == TW_OK && b == 2ull << 30, "2Gi");
  CHECK(tw_parse_memsize("2GiBx", &b, &err) != TW_OK && tw_parse_memsize("2GIB", &b, &err) != TW_OK, "2GiBx, 2GIB");

  const char *text =
      "grid = { n = [10, 10, 10]; d = [10.0, 10.0, 10.0]; };\n"
      "time = { steps = 10; dt = 0.002; };\n"
      "model = { type = \"constant\"; vp = 2000.0; };\n"
      "sources = ( { position = [0, 0, 0]; wavelet = { type = \"ricker\"; frequency = 10; }; } );\n";
  tw_job *j = load_ok(text, "u.cfg", NULL, 0);
  if (!j) return;
  double vmax = 0.002 > tw_stable_dt(8, d, 2000) ? 1000 : 2000; /* a stable case ... */
  CHECK(tw_job_finalize(j, 1000, vmax, &err) == TW_OK, "%s", err.msg);
  CHECK(tw_job_finalize(j, 1000, 5000, &err) == TW_EUNSTABLE, "... and an unstable one");
  CHECK(strstr(err.msg, "u.cfg:2: time.dt: time step above the stability limit: got 0.002;") == err.msg, "%s",
        err.msg);
  CHECK(tw_job_finalize(j, 0, 5000, &err) == TW_EINVAL, "vmin 0");
  tw_job_destroy(j);
}

/* The dispersion warning of an extreme but valid job names its numbers in a few characters: a Ricker
 * of 1e300 Hz (f_max 2.5e300 Hz) was "0.0 points per wavelength at 2500000...0.0 Hz", 301 digits. */
static void test_dispersion_warning(void) {
  const char *ov[] = {"solver.kernel=cpu",
                      "sources=({position=[100.0,100.0,50.0];wavelet={type=\"ricker\";frequency=1e300;delay=0.0;};})"};
  tw_job *j = load_ok(base, "f.cfg", ov, 2);
  if (!j) return;
  tw_validation val;
  tw_error err = {0};
  CHECK(tw_job_validate(j, NULL, TW_VALIDATE_RUN, &val, NULL, &err) == TW_OK, "%s", err.msg);
  const char *w = NULL;
  for (int i = 0; i < val.nwarn; i++)
    if (strstr(val.warn[i], "points per wavelength")) w = val.warn[i];
  CHECK(w && strlen(w) < 160 && strstr(w, "8e-299 points per wavelength at 2.5e+300 Hz is low for order 8"),
        "the dispersion warning (%zu characters): %s", w ? strlen(w) : 0, w ? w : "none");
  tw_validation_free(&val);
  tw_job_destroy(j);
}

/* Integers beyond 32 bits are read in full (libconfig 1.5 wraps them without an L suffix), in
 * arrays and overrides too; digits inside strings, names and comments are left alone; floats with
 * many digits stay floats. The receivers remember the job-file key they came from. */
static void test_wide_integers(void) {
  static const char *text =
      "# 99999999999999999999 in a comment\n"
      "grid = { n = [20, 20, 10]; d = [10.0, 10.0, 10.0]; origin = [1234567890123.5, 0.0, 0.0]; };\n"
      "time = { steps = 100; };\n"
      "model = { type = \"constant\"; vp = 2000.0; vp_range = [1000.0, 3000.0]; };\n"
      "sources = ( { position = [1234567890223.5, 100.0, 50.0]; wavelet = { type = \"ricker\"; frequency = 10.0; "
      "}; } );\n"
      "receivers = { points = ( [1234567890123.5, 0.0, 0.0] );\n"
      "  lines = ( { from = [1234567890123.5, 10.0, 10.0]; to = [1234567890123.5, 100.0, 10.0]; count = 4; } ); };\n"
      "output = { file = \"shot_3000000000.h5\"; };\n"
      "solver = { device_memory = 8589934592; };\n";
  const char *ov[] = {"solver.threads=2", "solver.dts=3000000000L"};
  tw_job *j = load_ok(text, "wide.cfg", ov, 1);
  if (!j) return;
  CHECK(j->device_memory == 8ull << 30, "device_memory %llu, want 8 GiB", (unsigned long long)j->device_memory);
  CHECK(!strcmp(j->output, "shot_3000000000.h5"), "output %s", j->output);
  CHECK(j->origin[0] == 1234567890123.5, "origin %.17g", j->origin[0]);
  CHECK(j->model.vp_range[0] == 1000.0 && j->model.vp_range[1] == 3000.0, "vp_range");
  CHECK(j->nrec_groups == 2 && !strcmp(j->rec_groups[0].key, "receivers.points") && j->rec_groups[0].first == 0 &&
            j->rec_groups[0].count == 1 && !strcmp(j->rec_groups[1].key, "receivers.lines[0]") &&
            j->rec_groups[1].first == 1 && j->rec_groups[1].count == 4 && j->rec_groups[1].line == 7,
        "receiver groups: %d", j->nrec_groups);
  tw_job_destroy(j);
  /* A group's where keeps a long job path whole, with its line (a path of 200 characters lost its
   * ":7" and the validation's refusals named no line) */
  char longname[260];
  snprintf(longname, sizeof longname, "/scratch/%0190d/wide.cfg", 0);
  j = load_ok(text, longname, NULL, 0);
  if (j) {
    char want[300];
    snprintf(want, sizeof want, "%s:7", longname);
    CHECK(j->nrec_groups == 2 && !strcmp(j->rec_groups[1].where, want), "group at %s, want %s",
          j->nrec_groups == 2 ? j->rec_groups[1].where : "?", want);
    tw_job_destroy(j);
  }
  tw_error err = {0};
  tw_job *k = NULL;
  CHECK(tw_job_load_string(text, "wide.cfg", ov + 1, 1, &k, &err) == TW_ECONFIG &&
            strstr(err.msg, "solver.dts: must be a positive integer: got 3000000000"), "dts: %s", err.msg);
  tw_job_destroy(k);
  const char *tiny[] = {"time.steps=-9223372036854775809"};
  CHECK(tw_job_load_string(text, "wide.cfg", tiny, 1, &k, &err) == TW_ECONFIG &&
            strstr(err.msg, "integer out of range: got -9223372036854775809"), "below int64: %s", err.msg);
  tw_job_destroy(k);
}

int main(void) {
  test_wide_integers();
  test_corpus();
  test_design_example();
  test_defaults();
  test_overrides();
  test_duration_and_snapshots();
  test_receivers();
  test_line_count_one_rounding();
  test_far_origin();
  test_snapshot_region_cells();
  test_solver_and_boundary();
  test_files();
  test_stability();
  test_dispersion_warning();
  return tw_test_exit();
}
