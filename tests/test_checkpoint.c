/* test_checkpoint — checkpoints on the CPU, from the file up:
 *   - the file: written synchronously and in the background, in several chunks, read back equal;
 *     damaged (a field byte, a header byte, the trailer), truncated, foreign files refused with
 *     messages that say what was found; an abandoned background write leaves a whole checkpoint
 *     (the old or the new one) and no temporary file;
 *   - the identity: every part of a job that changes the numbers changes its hash, and the
 *     message names it; what may change (solver.*, output.file) does not;
 *   - the journal: records replayed in order up to a checkpoint's length, the rest cut; a damaged
 *     journal refused;
 *   - the backends: cpu and cpu-diamond (in core and through the window) cut at a random block,
 *     resumed on either, bitwise equal to the uninterrupted run (test_resume.h);
 *   - a whole run (tw_run_job): suspended at a block end (TW_ESUSPEND), resumed on the other kernel,
 *     output bitwise equal to a run without checkpoints, checkpoint files gone;
 *   - in a -DTW_DEBUG_LEVELS=ON build, the time-level shadow of every column update after a load. */
#define _POSIX_C_SOURCE 200809L
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "test_resume.h"
#include "tw_io.h"
#ifdef TW_DEBUG_LEVELS
#include "cpu_fields.h"
#endif
#ifdef _OPENMP
#include <omp.h>
#endif

static char dir[512];

static void path_in(char *buf, size_t n, const char *name) { snprintf(buf, n, "%s/%s", dir, name); }

/* ---------------------------------------------------------------- the file */

typedef struct {
  int N[3];
  float *lev[2];             /* [N0][N1][N2] */
  float *got[2];
} field_pair;

static tw_status get_planes(void *ctx, int x0, int nx, float *cur, float *prev, tw_error *err) {
  field_pair *f = ctx;
  (void)err;
  const size_t plane = (size_t)f->N[1] * f->N[2];
  memcpy(cur, f->lev[0] + (size_t)x0 * plane, (size_t)nx * plane * sizeof(float));
  memcpy(prev, f->lev[1] + (size_t)x0 * plane, (size_t)nx * plane * sizeof(float));
  return TW_OK;
}

static tw_status put_planes(void *ctx, int x0, int nx, float *cur, float *prev, tw_error *err) {
  field_pair *f = ctx;
  (void)err;
  const size_t plane = (size_t)f->N[1] * f->N[2];
  memcpy(f->got[0] + (size_t)x0 * plane, cur, (size_t)nx * plane * sizeof(float));
  memcpy(f->got[1] + (size_t)x0 * plane, prev, (size_t)nx * plane * sizeof(float));
  return TW_OK;
}

static void info_for(tw_ckpt_info *info, const int N[3], long step) {
  memset(info, 0, sizeof *info);
  memcpy(info->N, N, sizeof info->N);
  info->step = step;
  info->id.steps = 500;
  info->id.dt = 1e-3;
  info->id.order = 8;
  for (int k = 0; k < TW_CKPT_NPART; k++) info->id.hash[k] = 1000u + (uint64_t)k;
  info->run_id = 0xABCDEF;
  info->journal_len = 4242;
  info->journal_crc = 77;
  snprintf(info->kernel, sizeof info->kernel, "cpu");
  snprintf(info->job_path, sizeof info->job_path, "test.cfg");
}

/* Flip one byte of a file at off. */
static void flip(const char *path, long off) {
  FILE *f = fopen(path, "r+b");
  REQUIRE(f, "open %s", path);
  fseek(f, off, SEEK_SET);
  const int c = fgetc(f);
  fseek(f, off, SEEK_SET);
  fputc(c ^ 0x5A, f);
  fclose(f);
}

static void expect_error(const char *path, tw_status want, const char *text, const char *what) {
  tw_ckpt_info info;
  tw_error err = {0};
  field_pair dummy = {{0}, {0}, {0}};
  tw_status st = tw_ckpt_read_info(path, &info, &err);
  if (!st) {
    memcpy(dummy.N, info.N, sizeof dummy.N);
    const size_t cells = (size_t)info.N[0] * info.N[1] * info.N[2];
    dummy.got[0] = malloc(cells * sizeof(float)), dummy.got[1] = malloc(cells * sizeof(float));
    st = tw_ckpt_read_fields(path, put_planes, &dummy, &err);
    free(dummy.got[0]), free(dummy.got[1]);
  }
  CHECK(st == want && strstr(err.msg, text), "%s: status %d, message '%s'; want %d with '%s'", what, (int)st, err.msg,
        (int)want, text);
  printf("%s: %s\n", what, err.msg);
}

static void file_tests(void) {
  const int N[3] = {11, 7, 5}; /* with 3 planes per chunk: chunks of planes 0..2, 3..5, 6..8, 9..10 */
  setenv("TW_CHECKPOINT_CHUNK_BYTES", "840", 1); /* 3 planes x 35 cells x 8 bytes */
  const size_t cells = (size_t)N[0] * N[1] * N[2];
  field_pair f;
  memcpy(f.N, N, sizeof f.N);
  for (int a = 0; a < 2; a++) {
    f.lev[a] = malloc(cells * sizeof(float)), f.got[a] = malloc(cells * sizeof(float));
    for (size_t c = 0; c < cells; c++) f.lev[a][c] = (float)(tw_rnd_unit() - 0.5) * (a ? 3.0f : 1.0f);
  }
  char path[600], tmp[640];
  path_in(path, sizeof path, "a.ckpt");
  snprintf(tmp, sizeof tmp, "%s.tmp", path);
  for (int bg = 0; bg < 2; bg++) {
    tw_ckpt_writer *w = NULL;
    tw_error err = {0};
    REQUIRE(tw_ckpt_writer_create(path, N, bg, &w, &err) == TW_OK, "%s", err.msg);
    CHECK(tw_ckpt_writer_background(w) == bg, "background %d", bg);
    tw_ckpt_info info, back;
    info_for(&info, N, 17 + bg);
    CHECK(tw_ckpt_writer_submit(w, &info, get_planes, &f, -1, &err) == TW_OK, "submit: %s", err.msg);
    CHECK(tw_ckpt_writer_wait(w, &err) == TW_OK, "wait: %s", err.msg);
    const tw_ckpt_stats s = tw_ckpt_writer_stats(w);
    tw_ckpt_writer_destroy(w);
    struct stat sb;
    CHECK(stat(path, &sb) == 0 && (double)sb.st_size == s.bytes && s.written == 1, "size %lld, stats %g bytes, %d",
          (long long)sb.st_size, s.bytes, s.written);
    CHECK(access(tmp, F_OK) != 0, "the temporary file is left");
    REQUIRE(tw_ckpt_read_info(path, &back, &err) == TW_OK, "read_info: %s", err.msg);
    CHECK(back.step == 17 + bg && back.run_id == info.run_id && back.journal_len == 4242 && back.journal_crc == 77 &&
              !memcmp(back.id.hash, info.id.hash, sizeof back.id.hash) && !strcmp(back.kernel, "cpu") &&
              back.file_bytes == (uint64_t)sb.st_size,
          "header fields read back differ");
    memset(f.got[0], 0xFF, cells * sizeof(float)), memset(f.got[1], 0xFF, cells * sizeof(float));
    CHECK(tw_ckpt_read_fields(path, put_planes, &f, &err) == TW_OK, "read_fields: %s", err.msg);
    CHECK(!memcmp(f.got[0], f.lev[0], cells * sizeof(float)) && !memcmp(f.got[1], f.lev[1], cells * sizeof(float)),
          "background %d: the fields read back differ", bg);
  }
  /* Damage: a byte of chunk 2 (planes 6..8), of the header, of the trailer; cut; not ours. */
  const long plane_bytes = 35 * 4, chunk2 = 4096 + 2 * (2 * 3 * plane_bytes);
  flip(path, chunk2 + 2 * 3 * plane_bytes - 1); /* last byte of chunk 2: its older level */
  expect_error(path, TW_EFORMAT, "x-planes 6..8 (bytes 5776..6615) fail their checksum", "a field byte");
  flip(path, chunk2 + 2 * 3 * plane_bytes - 1);
  flip(path, 200);
  expect_error(path, TW_EFORMAT, "header fails its checksum", "a header byte");
  flip(path, 200);
  struct stat sb;
  stat(path, &sb);
  flip(path, (long)sb.st_size - 30);
  expect_error(path, TW_EFORMAT, "trailer (checksum table) is damaged", "a trailer byte");
  flip(path, (long)sb.st_size - 30);
  expect_error(path, TW_OK, "", "restored");
  REQUIRE(truncate(path, sb.st_size - 100) == 0, "truncate");
  expect_error(path, TW_EFORMAT, "is truncated", "cut 100 bytes short");
  FILE *g = fopen(path, "wb");
  fputs("#!/bin/sh\necho this is not a checkpoint\n", g);
  fclose(g);
  expect_error(path, TW_EFORMAT, "is not a torrewave checkpoint", "a shell script");
  char missing[600];
  path_in(missing, sizeof missing, "none.ckpt");
  expect_error(missing, TW_EINVAL, "No such file", "missing");

  /* An abandoned background write: the old checkpoint or the new one, whole, and no temporary file. */
  for (int k = 0; k < 6; k++) {
    tw_ckpt_writer *w = NULL;
    tw_error err = {0};
    tw_ckpt_info info;
    REQUIRE(tw_ckpt_writer_create(path, N, 1, &w, &err) == TW_OK, "%s", err.msg);
    info_for(&info, N, 1);
    REQUIRE(tw_ckpt_writer_submit(w, &info, get_planes, &f, -1, &err) == TW_OK && tw_ckpt_writer_wait(w, &err) == TW_OK,
            "first: %s", err.msg);
    info_for(&info, N, 2);
    REQUIRE(tw_ckpt_writer_submit(w, &info, get_planes, &f, -1, &err) == TW_OK, "second: %s", err.msg);
    if (k % 2) nanosleep(&(struct timespec){0, 200000L * k}, NULL);
    tw_ckpt_writer_destroy(w);
    tw_ckpt_info back;
    CHECK(tw_ckpt_read_info(path, &back, &err) == TW_OK && (back.step == 1 || back.step == 2) &&
              tw_ckpt_read_fields(path, put_planes, &f, &err) == TW_OK,
          "after an abandoned write: %s", err.msg);
    CHECK(access(tmp, F_OK) != 0, "an abandoned write left its temporary file");
  }
  unsetenv("TW_CHECKPOINT_CHUNK_BYTES");
  unlink(path);
  for (int a = 0; a < 2; a++) free(f.lev[a]), free(f.got[a]);
}

/* ---------------------------------------------------------------- identity */

static const char *const JOB =
    "grid = { n = [30, 28, 24]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { steps = 90; };\n"
    "model = { type = \"layered\"; layers = ( { top = 0.0; vp = 1500.0; }, { top = 110.0; vp = 2400.0; } ); };\n"
    "scheme = { order = 4; };\n"
    "boundary = { absorbing = 6; free_surface = true; };\n"
    "sources = ( { position = [150.0, 140.0, 40.0]; wavelet = { type = \"ricker\"; frequency = 20.0; }; } );\n"
    "receivers = { interval = 2; interpolation = \"trilinear\";\n"
    "              lines = ( { from = [0.0, 141.0, 5.0]; to = [290.0, 141.0, 5.0]; count = 30; } ); };\n"
    "snapshots = { every = 25; decimate = 2; };\n"
    "checkpoint = { every = 10; };\n";

/* The identity of JOB with one override, as a run makes it (model and wavelets included). */
static void ident_of(const char *set, tw_ckpt_ident *id) {
  tw_error err = {0};
  tw_job *job = NULL;
  const char *sets[1] = {set};
  REQUIRE(tw_job_load_string(JOB, "<ident>", sets, set ? 1 : 0, &job, &err) == TW_OK, "%s", err.msg);
  tw_velocity *v = NULL;
  REQUIRE(tw_velocity_load(job, &v, &err) == TW_OK && tw_job_finalize(job, v->vmin, v->vmax, &err) == TW_OK, "%s",
          err.msg);
  tw_problem *pb = NULL;
  REQUIRE(tw_problem_create(job, v, &pb, &err) == TW_OK, "%s", err.msg);
  tw_ckpt_ident_make(job, v->vp, pb->wavelets, id);
  tw_problem_destroy(pb);
  tw_velocity_destroy(v);
  tw_job_destroy(job);
}

static void ident_tests(void) {
  tw_ckpt_ident base;
  ident_of(NULL, &base);
  static const struct {
    const char *set;
    const char *part; /* NULL: must match */
  } cases[] = {
      {"solver.kernel=\"cpu-diamond\"", NULL},
      {"solver.tower_height=8", NULL},
      {"output.file=\"elsewhere.h5\"", NULL},
      {"checkpoint.every=7", NULL},
      {"grid.d=[10.0,10.0,10.5]", "the grid"},
      {"time.steps=91", "the time"},
      {"time.dt=0.0009", "the time"},
      {"model.layers=({top=0.0;vp=1500.0;},{top=120.0;vp=2400.0;})", "the velocity model's values"},
      {"boundary.absorbing=7", "the boundary"},
      {"boundary.free_surface=false", "the boundary"},
      {"sources=({position=[150.0,140.0,40.0];wavelet={type=\"ricker\";frequency=21.0;};})", "the sources"},
      {"sources=({position=[150.0,140.0,40.0];interpolation=\"trilinear\";wavelet={type=\"ricker\";frequency=20.0;};})",
       "the sources"},
      {"receivers.interval=1", "the receivers"},
      {"receivers.interpolation=\"nearest\"", "the receivers"},
      {"snapshots.decimate=1", "the snapshots"},
  };
  tw_ckpt_info found;
  memset(&found, 0, sizeof found);
  found.id = base;
  snprintf(found.kernel, sizeof found.kernel, "cpu");
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    tw_ckpt_ident id;
    ident_of(cases[i].set, &id);
    tw_error err = {0};
    const tw_status st = tw_ckpt_match("x.ckpt", &found, &id, &err);
    if (!cases[i].part) CHECK(st == TW_OK, "--set %s: refused: %s", cases[i].set, err.msg);
    else
      CHECK(st == TW_EMISMATCH && strstr(err.msg, cases[i].part), "--set %s: status %d, message '%s' (want '%s')",
            cases[i].set, (int)st, err.msg, cases[i].part);
  }
  printf("identity: %zu job changes, each accepted or refused naming its part\n", sizeof cases / sizeof cases[0]);
}

/* ---------------------------------------------------------------- journal */

typedef struct {
  long samples[8][2];
  int nrec_s, nsnap;
  float first_value;
} replay_log;

static tw_status rp_traces(void *u, long first, long count, const float *t, tw_error *err) {
  replay_log *l = u;
  (void)err;
  l->samples[l->nrec_s][0] = first, l->samples[l->nrec_s][1] = count, l->nrec_s++;
  if (first == 0) l->first_value = t[0];
  return TW_OK;
}
static tw_status rp_snap(void *u, int isnap, long step, const float *d, tw_error *err) {
  replay_log *l = u;
  (void)err, (void)d;
  CHECK(isnap == l->nsnap && step == 10L * (isnap + 1), "snapshot %d step %ld replayed out of order", isnap, step);
  l->nsnap++;
  return TW_OK;
}

static void journal_tests(void) {
  char path[600];
  path_in(path, sizeof path, "j.journal");
  tw_error err = {0};
  tw_journal *j = NULL;
  REQUIRE(tw_journal_create(path, 99, &j, &err) == TW_OK, "%s", err.msg);
  float tr[6] = {1.5f, 2, 3, 4, 5, 6}, snap[4] = {7, 8, 9, 10};
  CHECK(tw_journal_traces(j, 0, 3, 2, tr, &err) == TW_OK, "%s", err.msg);
  CHECK(tw_journal_snapshot(j, 0, 10, 4, snap, &err) == TW_OK, "%s", err.msg);
  CHECK(tw_journal_traces(j, 3, 1, 2, tr, &err) == TW_OK, "%s", err.msg);
  tw_ckpt_info info;
  memset(&info, 0, sizeof info);
  info.run_id = 99;
  tw_journal_position(j, &info.journal_len, &info.journal_crc);
  /* after the "checkpoint": more records, which a resume must drop */
  CHECK(tw_journal_snapshot(j, 1, 20, 4, snap, &err) == TW_OK, "%s", err.msg);
  tw_journal_close(j);
  replay_log log;
  memset(&log, 0, sizeof log);
  tw_journal_sink sink = {rp_traces, rp_snap, &log, 2, 4};
  CHECK(tw_journal_resume(path, &info, &sink, &j, &err) == TW_OK, "resume: %s", err.msg);
  CHECK(log.nrec_s == 2 && log.samples[0][1] == 3 && log.samples[1][0] == 3 && log.nsnap == 1 &&
            log.first_value == 1.5f,
        "replayed %d trace records, %d snapshots", log.nrec_s, log.nsnap);
  struct stat sb;
  CHECK(stat(path, &sb) == 0 && (uint64_t)sb.st_size == info.journal_len, "not cut at the checkpoint: %lld bytes, "
        "want %llu", (long long)sb.st_size, (unsigned long long)info.journal_len);
  uint64_t len;
  uint32_t crc;
  CHECK(tw_journal_snapshot(j, 1, 20, 4, snap, &err) == TW_OK, "append after resume: %s", err.msg);
  tw_journal_position(j, &len, &crc);
  tw_journal_close(j);
  tw_ckpt_info info2 = info;
  info2.journal_len = len, info2.journal_crc = crc;
  memset(&log, 0, sizeof log);
  CHECK(tw_journal_resume(path, &info2, &sink, &j, &err) == TW_OK && log.nsnap == 2, "second resume: %s", err.msg);
  tw_journal_close(j);
  /* damage, another run, too short */
  memset(&log, 0, sizeof log);
  flip(path, 60);
  CHECK(tw_journal_resume(path, &info2, &sink, &j, &err) != TW_OK && strstr(err.msg, "is corrupted"),
        "a damaged journal: '%s'", err.msg);
  flip(path, 60);
  /* a record whose count no longer fits its payload (the first one's count, byte 32: 3 → 89) is refused
   * before it reaches the sink, which would read 89 samples of 2 receivers from 24 bytes */
  memset(&log, 0, sizeof log);
  flip(path, 32);
  CHECK(tw_journal_resume(path, &info2, &sink, &j, &err) == TW_EFORMAT && strstr(err.msg, "is corrupted") &&
            strstr(err.msg, "byte 16") && log.nrec_s == 0,
        "a record of the wrong size: '%s', %d trace records replayed", err.msg, log.nrec_s);
  flip(path, 32);
  info2.run_id = 98;
  CHECK(tw_journal_resume(path, &info2, &sink, &j, &err) == TW_EMISMATCH && strstr(err.msg, "another run"),
        "another run's journal: '%s'", err.msg);
  info2.run_id = 99, info2.journal_len += 8;
  memset(&log, 0, sizeof log);
  CHECK(tw_journal_resume(path, &info2, &sink, &j, &err) != TW_OK && strstr(err.msg, "is truncated"),
        "a short journal: '%s'", err.msg);
  unlink(path);
  printf("journal: replay, cut, append, damaged / foreign / short refused\n");
}

/* ---------------------------------------------------------------- a whole run */

typedef struct {
  int calls, suspend_at;
} stopper;

static int stop_hook(void *u) {
  stopper *s = u;
  return ++s->calls == s->suspend_at ? TW_RUN_SUSPEND : TW_RUN_GO;
}

static tw_result *run_file(const char *kernel, int with_ckpt, int suspend_at, int resume, const char *name,
                           tw_status *st_out) {
  char path[600], set_k[64];
  path_in(path, sizeof path, name);
  snprintf(set_k, sizeof set_k, "solver.kernel=\"%s\"", kernel);
  const char *sets[1] = {set_k};
  tw_error err = {0};
  tw_job *job = NULL;
  const char *text = JOB;
  char *plain = NULL;
  if (!with_ckpt) { /* the same job without its checkpoint group */
    plain = strdup(JOB);
    *strstr(plain, "checkpoint =") = '\0';
    text = plain;
  }
  REQUIRE(tw_job_load_string(text, "<run>", sets, 1, &job, &err) == TW_OK, "%s", err.msg);
  stopper sp = {0, suspend_at};
  tw_run_hooks hooks = {NULL, stop_hook, &sp, resume, NULL};
  tw_run_report rep;
  const tw_status st = tw_run_job(job, path, &hooks, &rep, &err);
  *st_out = st;
  tw_job_destroy(job);
  free(plain);
  if (suspend_at && !resume) {
    CHECK(st == TW_ESUSPEND && strstr(err.msg, "--resume"), "suspend: status %d: %s", (int)st, err.msg);
    return NULL;
  }
  REQUIRE(st == TW_OK, "%s: %s", kernel, err.msg);
  if (resume) CHECK(rep.resumed_from > 0, "resumed from step %ld", rep.resumed_from);
  tw_result *r = NULL;
  REQUIRE(tw_result_open(path, &r, &err) == TW_OK, "%s", err.msg);
  return r;
}

static void whole_run(void) {
  tw_status st;
  tw_result *a = run_file("cpu", 0, 0, 0, "plain.h5", &st);
  run_file("cpu", 1, 3, 0, "susp.h5", &st);
  char ck[600];
  path_in(ck, sizeof ck, "susp.h5.ckpt");
  tw_ckpt_info info;
  tw_error err = {0};
  CHECK(tw_ckpt_read_info(ck, &info, &err) == TW_OK && info.step > 0,
        "the suspend checkpoint: %s (step %ld)", err.msg, info.step);
  tw_result *b = run_file("cpu-diamond", 1, 0, 1, "susp.h5", &st);
  CHECK(access(ck, F_OK) != 0, "the checkpoint is left after a complete run");
  REQUIRE(a->nrec == b->nrec && a->nsamples == b->nsamples && a->nsnap == b->nsnap && a->nsnap == 3, "shapes");
  CHECK(!memcmp(a->traces, b->traces, (size_t)a->nrec * a->nsamples * sizeof(float)), "traces differ");
  const size_t n = (size_t)a->snap_shape[0] * a->snap_shape[1] * a->snap_shape[2];
  float *sa = malloc(n * sizeof(float)), *sb = malloc(n * sizeof(float));
  for (int k = 0; k < a->nsnap; k++) {
    REQUIRE(tw_result_read_snapshot(a, k, sa, &err) == TW_OK && tw_result_read_snapshot(b, k, sb, &err) == TW_OK, "%s",
            err.msg);
    CHECK(!memcmp(sa, sb, n * sizeof(float)), "snapshot %d differs", k);
  }
  printf("whole run: suspended at step %ld on cpu, resumed on cpu-diamond: traces and %d snapshots bitwise equal\n",
         info.step, a->nsnap);
  free(sa), free(sb);
  tw_result_close(a);
  tw_result_close(b);
}

int main(void) {
  tw_rng_seed(20251124u);
  snprintf(dir, sizeof dir, "%s/tests/checkpoint-%ld", TW_BINARY_DIR, (long)getpid());
  REQUIRE(mkdir(dir, 0755) == 0, "mkdir %s", dir);
  setenv("TW_CHECKPOINT_SYNC", "0", 1);
#ifdef _OPENMP
  /* One thread: CI runs two tests at once on two cores, where OpenMP's spinning barriers of two
   * programs slow each other a hundredfold. The kernels' parallel schedules are proven bitwise
   * elsewhere (test_cpu_diamond) and end to end with threads in tests/cli/checkpoint.sh. */
  omp_set_num_threads(1);
#endif
  file_tests();
  ident_tests();
  journal_tests();
  static const char *const cpu[2] = {"cpu", "cpu-diamond"};
  const char *e = getenv("TW_TEST_CASES");
  tr_matrix(cpu, 2, e ? atoi(e) : 4, 0, 20251124u);
  whole_run();
#ifdef TW_DEBUG_LEVELS /* the time-level shadow: loaded planes hold levels t and t − 1 as the kernels expect */
  char first[256];
  const long bad = tw_debug_level_errors(first, sizeof first);
  CHECK(bad == 0, "%ld time-level violations, the first: %s", bad, first);
  printf("time-level shadow: %ld violations\n", bad);
#endif
  char cmd[700];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (!tw_test_failures && system(cmd) != 0) printf("note: could not remove %s\n", dir);
  return tw_test_exit();
}
