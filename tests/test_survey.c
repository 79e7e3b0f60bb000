/* test_survey.c — surveys on the CPU kernels:
 *   - the job hash: what changes a shot's numbers changes it, nothing else does (layout, comments,
 *     key order, the output, the shot list, the kernel's tuning); the kernel family does;
 *   - --shots selections and their errors;
 *   - sessions: every shot run through one session (cpu, cpu-diamond, cpu-diamond through a
 *     window; fixed and moving spreads, nearest and trilinear) equals a fresh single-shot run of
 *     it, bit for bit (survey_check.h);
 *   - tw_survey_run in one process with two worker threads: the counts, the restart (a second run
 *     runs nothing; --shots with --force reruns exactly those), a failed shot reported with its
 *     index and reason while the others complete; a shot another process is writing (its lock held)
 *     fails naming it and keeps its files, a killed run's lock file goes;
 *   - rank 0's record of a shot stays small (it keeps one per shot, up to 10^7), yet a failed shot's
 *     message reaches the report whole, however long (a path of 450 characters in it); so does a
 *     worker's reason it could not start. */
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "survey_check.h"

/* ---------------------------------------------------------------- the job hash */

static const char *const HJOB =
    "grid = { n = [20, 20, 10]; d = [10.0, 10.0, 10.0]; };\n"
    "time = { steps = 100; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "shots = { positions = ( [50.0, 50.0, 20.0] ); receivers = \"fixed\"; };\n"
    "sources = ( { wavelet = { type = \"ricker\"; frequency = 10.0; }; } );\n"
    "receivers = { points = ( [10.0, 10.0, 10.0] ); };\n";

static uint64_t hash_of(const char *text, const char *set) {
  tw_error err = {0};
  tw_job *job = NULL;
  const char *sets[1] = {set};
  REQUIRE(tw_job_load_string(text, "hash.cfg", sets, set ? 1 : 0, &job, &err) == TW_OK, "%s: %s", set ? set : "",
          err.msg);
  const uint64_t h = job->hash;
  tw_job_destroy(job);
  return h;
}

static void test_hash(void) {
  const uint64_t h0 = hash_of(HJOB, NULL);
  /* Same numbers: layout and comments, key order, 10 vs 10.0, the output, the shot list, tuning. */
  const char *same_text =
      "# a comment\n"
      "time = { steps = 100; };  grid = { d = [10, 10, 10]; n = [20, 20, 10]; };\n"
      "model = { vp = 2000; type = \"constant\"; };\n"
      "receivers = { points = ( [10.0, 10.0, 10.0] ); };\n"
      "sources = ( { wavelet = { frequency = 10.0; type = \"ricker\"; }; } );\n"
      "shots = { receivers = \"fixed\"; lines = ( { from = [0.0, 0.0, 0.0]; to = [10.0, 0.0, 0.0]; count = 2; } ); };\n"
      "output = { directory = \"elsewhere\"; };\n";
  CHECK(hash_of(same_text, NULL) == h0, "layout, order, comments, output, shot list changed the hash");
  const char *same[] = {"output.directory=\"x\"", "solver.threads=3", "solver.kernel=\"cpu-diamond\"", "solver.dts=2",
                        "solver.tower_height=8", "solver.device_memory=\"1G\"",
                        "shots.positions=([10.0, 10.0, 10.0], [20.0, 20.0, 20.0])"};
  for (size_t i = 0; i < sizeof same / sizeof same[0]; i++)
    CHECK(hash_of(HJOB, same[i]) == h0, "--set %s changed the hash", same[i]);
  const char *other[] = {"model.vp=2100.0", "time.steps=101", "shots.receivers=\"moving\"", "output.model=true",
                         "receivers.interval=2", "scheme.order=4", "boundary.free_surface=true",
                         "sources=({ wavelet = { type = \"ricker\"; frequency = 11.0; }; })",
                         "receivers.points=([10.0, 10.0, 20.0])", "grid.origin=[0.0, 0.0, 1.0]"};
  for (size_t i = 0; i < sizeof other / sizeof other[0]; i++)
    CHECK(hash_of(HJOB, other[i]) != h0, "--set %s left the hash as it was", other[i]);
  /* Not the kernel (all four compute the same bits); the format of what the files carry. */
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(HJOB, "hash.cfg", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  char a[24], b[24], c[24];
  tw_survey_hash(job, "cpu", a);
  tw_survey_hash(job, "cpu-diamond", b);
  tw_survey_hash(job, "gpu-stepwise", c);
  CHECK(!strcmp(a, b) && !strcmp(a, c) && strlen(a) == 16 && strspn(a, "0123456789abcdef") == 16,
        "hash: cpu %s, cpu-diamond %s, gpu-stepwise %s", a, b, c);
  tw_job_destroy(job);
}

/* ---------------------------------------------------------------- --shots */

static void test_select(void) {
  unsigned char m[20];
  tw_error err = {0};
  REQUIRE(tw_survey_select("3-7,12", 20, m, &err) == TW_OK, "%s", err.msg);
  int n = 0;
  for (int i = 0; i < 20; i++) n += m[i];
  CHECK(n == 6 && m[3] && m[7] && m[12] && !m[2] && !m[8] && !m[13], "3-7,12 selects %d", n);
  CHECK(tw_survey_select(" 0 , 19 - 19 ", 20, m, &err) == TW_OK && m[0] && m[19] && !m[1], "spaces: %s", err.msg);
  static const struct {
    const char *text, *want;
    tw_status st;
  } bad[] = {{"7-3", "the range 7-3 is reversed", TW_EINVAL},
             {"3,20", "shot 20 does not exist: the job has 20 shots (0..19)", TW_ERANGE},
             {"1,,2", "\"\" is not a shot index or range", TW_EINVAL},
             {"a-3", "\"a-3\" is not a shot index or range", TW_EINVAL},
             {"", "is not a shot index or range; expected indices and ranges like 3-7,12", TW_EINVAL},
             {"-2", "\"-2\" is not a shot index", TW_EINVAL},
             {"4-", "\"4-\" is not a shot index", TW_EINVAL}};
  for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
    const tw_status st = tw_survey_select(bad[i].text, 20, m, &err);
    CHECK(st == bad[i].st && strstr(err.msg, bad[i].want), "--shots \"%s\": %d: %s", bad[i].text, (int)st, err.msg);
    /* without a mask, the form alone (the command line's check): the same refusal, but no shot count */
    const tw_status form = tw_survey_select(bad[i].text, 0, NULL, &err);
    CHECK(bad[i].st == TW_ERANGE ? form == TW_OK : form == bad[i].st && strstr(err.msg, bad[i].want),
          "--shots \"%s\" without a mask: %d: %s", bad[i].text, (int)form, err.msg);
  }
}

/* ---------------------------------------------------------------- sessions */

static void test_sessions(void) {
  static const sc_case cases[] = {
      {4, 0, "nearest", "nearest", "solver = { kernel = \"cpu\"; threads = 1; };", NULL, 0},
      {2, 1, "nearest", "trilinear", "solver = { kernel = \"cpu-diamond\"; dts = 2; tower_height = 6; threads = 1; };",
       NULL, 0},
      {8, 0, "trilinear", "nearest",
       "solver = { kernel = \"cpu-diamond\"; dts = 1; tower_height = 4; device_memory = \"900K\"; threads = 1; };",
       NULL, 1},
      {4, 1, "trilinear", "trilinear",
       "solver = { kernel = \"cpu-diamond\"; dts = 1; tower_height = 5; device_memory = \"500K\"; threads = 1; };",
       NULL, 1},
  };
  int shots = 0;
  for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
    char tag[32];
    snprintf(tag, sizeof tag, "cpu%zu", i);
    shots += sc_run_case(&cases[i], strstr(cases[i].solver, "cpu-diamond") ? "cpu-diamond" : "cpu", -1, tag);
  }
  printf("sessions: %d shots in %zu surveys, each equal to its single-shot run\n", shots,
         sizeof cases / sizeof cases[0]);
}

/* ---------------------------------------------------------------- tw_survey_run */

static tw_survey_report survey(const char *dir, const char *shots, int force, tw_status want) {
  static const sc_case c = {4, 1, "nearest", "nearest", "solver = { kernel = \"cpu\"; threads = 1; };", NULL, 0};
  char *text = sc_text(&c, 1, NULL, 0);
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(text, "survey.cfg", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  const tw_survey_opts opts = {shots, force, dir, 2};
  tw_survey_report rep;
  const tw_status st = tw_survey_run(job, &opts, NULL, &rep, &err);
  CHECK(st == want, "survey %s: %d: %s", shots ? shots : "all", (int)st, err.msg);
  tw_job_destroy(job);
  free(text);
  return rep;
}

/* Another process writing shot 6 (it holds the shot's lock, its temporary file is there): a survey
 * that reaches shot 6 reports it failed naming that process and keeps its file; a lock file a killed
 * run left beside a complete shot goes. The writer then dies as if killed (its files stay): the next
 * run of shot 6 removes them. */
static void test_locks(const char *dir) {
  char path[700], mine[800], leftover[800];
  tw_survey_shot_path(dir, 6, path, sizeof path);
  int go[2], hold[2];
  REQUIRE(pipe(go) == 0 && pipe(hold) == 0, "pipe");
  const pid_t child = fork();
  REQUIRE(child >= 0, "fork");
  if (child == 0) {
    close(go[0]), close(hold[1]);
    tw_output_lock *lock = NULL;
    tw_error e = {0};
    char ok = tw_output_lock_take(path, TW_OUTPUT_SHOT, &lock, &e) == TW_OK && tw_output_lock_held(lock) ? 'y' : 'n';
    char tmp[800];
    snprintf(tmp, sizeof tmp, "%s.part-%ld", path, (long)getpid());
    FILE *t = fopen(tmp, "w");
    if (t) fclose(t);
    if (write(go[1], &ok, 1) != 1) _exit(1);
    char c;
    while (read(hold[0], &c, 1) > 0) {
    }
    _exit(0); /* as if killed: the temporary file and the lock file stay, the kernel drops the lock */
  }
  close(go[1]), close(hold[0]);
  char ok = 0;
  REQUIRE(read(go[0], &ok, 1) == 1, "the child did not answer");
  snprintf(mine, sizeof mine, "%s.part-%ld", path, (long)child);
  if (ok != 'y') {
    printf("  (skipped: no fcntl locks in %s)\n", dir);
  } else {
    tw_survey_shot_path(dir, 3, leftover, sizeof leftover);
    strcat(leftover, ".lock");
    FILE *f = fopen(leftover, "w");
    if (f) fprintf(f, "99999\n"), fclose(f);
    tw_survey_report r = survey(dir, "5-6", 1, TW_OK);
    int found = 0;
    for (long i = 0; i < r.nresults; i++)
      if (r.shots[i].index == 6) {
        char pid[32];
        snprintf(pid, sizeof pid, "%ld", (long)child);
        found = r.shots[i].status == TW_EBUSY && strstr(r.shots[i].msg, pid) != NULL;
      }
    CHECK(r.done == 1 && r.failed == 1 && found, "shot 6 locked by pid %ld: %ld done, %ld failed", (long)child, r.done,
          r.failed);
    tw_survey_report_free(&r);
    CHECK(access(mine, F_OK) == 0, "the live writer's temporary file was removed");
    CHECK(access(leftover, F_OK) != 0, "a killed run's lock file beside a complete shot is still there");
  }
  close(hold[1]);
  int status = 0;
  waitpid(child, &status, 0);
  CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0, "the lock holder failed");
  tw_survey_report r = survey(dir, "6", 1, TW_OK);
  CHECK(r.to_run == 1 && r.done == 1 && r.failed == 0 && r.stale_removed == 1,
        "shot 6 after its writer died: %ld done, %ld failed, %ld stale removed", r.done, r.failed, r.stale_removed);
  tw_survey_report_free(&r);
  strcat(path, ".lock");
  CHECK(access(mine, F_OK) != 0 && access(path, F_OK) != 0, "the dead writer's files are still there");
}

static void test_survey_run(void) {
  char dir[600], path[700];
  snprintf(dir, sizeof dir, "%s/tests/survey-run", TW_BINARY_DIR);
  for (int i = 0; i < 7; i++) {
    tw_survey_shot_path(dir, i, path, sizeof path);
    remove(path);
  }
  /* A directory in the way of shot 2's file: that shot fails, the others complete. */
  tw_survey_shot_path(dir, 2, path, sizeof path);
  mkdir(dir, 0777);
  mkdir(path, 0777);
  tw_survey_report r = survey(dir, NULL, 0, TW_OK);
  CHECK(r.root && r.nshots == 7 && r.to_run == 7 && r.done == 6 && r.failed == 1 && r.not_run == 0 && r.nworkers == 2,
        "first run: %ld to run, %ld done, %ld failed, %ld not run, %d workers", r.to_run, r.done, r.failed, r.not_run,
        r.nworkers);
  int found = 0;
  for (long i = 0; i < r.nresults; i++)
    if (r.shots[i].index == 2)
      found = r.shots[i].status != TW_OK && strstr(r.shots[i].msg, "shot-00002.h5") && strstr(r.shots[i].msg, "directory");
  CHECK(found, "shot 2's failure is not reported with its file and reason");
  CHECK(r.workers[0].shots + r.workers[1].shots == 7 && r.workers[0].shots > 0 && r.workers[1].shots > 0,
        "both workers ran shots: %ld + %ld", r.workers[0].shots, r.workers[1].shots);
  tw_survey_report_free(&r);
  /* Again: only shot 2 runs (still failing); then with the way cleared, only shot 2 runs. */
  r = survey(dir, NULL, 0, TW_OK);
  CHECK(r.complete == 6 && r.to_run == 1 && r.failed == 1, "rerun: %ld complete, %ld to run", r.complete, r.to_run);
  tw_survey_report_free(&r);
  rmdir(path);
  struct stat before;
  tw_survey_shot_path(dir, 5, path, sizeof path);
  REQUIRE(stat(path, &before) == 0, "shot 5 missing");
  r = survey(dir, NULL, 0, TW_OK);
  CHECK(r.complete == 6 && r.to_run == 1 && r.done == 1 && r.failed == 0 && r.nresults == 1 && r.shots[0].index == 2,
        "third run: %ld complete, %ld to run, %ld done", r.complete, r.to_run, r.done);
  tw_survey_report_free(&r);
  r = survey(dir, NULL, 0, TW_OK);
  CHECK(r.complete == 7 && r.to_run == 0 && r.nresults == 0, "complete survey: %ld complete, %ld to run", r.complete,
        r.to_run);
  tw_survey_report_free(&r);
  struct stat after;
  CHECK(stat(path, &after) == 0 && after.st_ino == before.st_ino && after.st_mtime == before.st_mtime,
        "shot 5's file was rewritten by a rerun");
  /* --shots with --force: exactly those, complete or not; a stale temporary file of one goes. */
  char stale[800];
  snprintf(stale, sizeof stale, "%s/shot-00004.h5.part-99999", dir);
  FILE *f = fopen(stale, "w");
  if (f) fclose(f);
  r = survey(dir, "4-5", 1, TW_OK);
  CHECK(r.selected == 2 && r.complete == 0 && r.to_run == 2 && r.done == 2 && r.stale_removed == 1,
        "--shots 4-5 --force: %ld selected, %ld to run, %ld done, %ld stale removed", r.selected, r.to_run, r.done,
        r.stale_removed);
  tw_survey_report_free(&r);
  CHECK(access(stale, F_OK) != 0, "the stale temporary file is still there");
  r = survey(dir, "9", 0, TW_ERANGE);
  tw_survey_report_free(&r);
  test_locks(dir);
}

/* The record of every finished shot stays on rank 0 for the whole survey: at most 512 bytes each
 * (10^7 shots: 5 GB; a TW_ERROR_MSG array in it made them 2144 bytes, 21 GB). The message of a failed
 * shot is still the library's whole message: here a directory in the way of a shot file whose path
 * has over 450 characters, reported as tw_output_check_path says it, to the last character. */
static void test_long_message(void) {
  CHECK(sizeof(tw_survey_shot) <= 512, "a shot's record takes %zu bytes (at most 512: rank 0 keeps every one)",
        sizeof(tw_survey_shot));
  char dir[1000], path[1100], name[226]; /* a folder name has at most 255 bytes: two of 225 */
  memset(name, 'm', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  snprintf(dir, sizeof dir, "%s/tests/survey-long", TW_BINARY_DIR);
  mkdir(dir, 0777);
  for (int i = 0; i < 2; i++) {
    snprintf(dir + strlen(dir), sizeof dir - strlen(dir), "/%s", name);
    mkdir(dir, 0777);
  }
  tw_survey_shot_path(dir, 2, path, sizeof path);
  mkdir(path, 0777);
  static const sc_case c = {4, 1, "nearest", "nearest", "solver = { kernel = \"cpu\"; threads = 1; };", NULL, 0};
  char *text = sc_text(&c, 1, NULL, 0);
  tw_error want = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(text, "survey.cfg", NULL, 0, &job, &want) == TW_OK, "%s", want.msg);
  REQUIRE(tw_output_check_path(path, job, 0, TW_OUTPUT_SHOT, &want) != TW_OK, "a directory in the way is accepted");
  tw_job_destroy(job);
  free(text);
  tw_survey_report r = survey(dir, "2", 1, TW_OK);
  const tw_survey_shot *s = r.nresults == 1 ? &r.shots[0] : NULL;
  CHECK(s && s->index == 2 && s->status != TW_OK && s->msg && strlen(want.msg) > 450 && strcmp(s->msg, want.msg) == 0,
        "shot 2's message is not the library's whole message (%zu characters):\n  got  %s\n  want %s",
        strlen(want.msg), s && s->msg ? s->msg : "(none)", want.msg);
  tw_survey_report_free(&r);
  rmdir(path);
}

/* A worker that could not start (its medium failed: a model file gone after the job was loaded, in a
 * folder of 450 characters): the survey's error carries the library's whole message, path and all
 * (it was cut at 370 characters). */
static void test_worker_error(void) {
  char dir[1000], file[1100], name[226];
  memset(name, 'w', sizeof name - 1);
  name[sizeof name - 1] = '\0';
  snprintf(dir, sizeof dir, "%s/tests/survey-long/%s/%s", TW_BINARY_DIR, name, name);
  snprintf(file, sizeof file, "%s/gone-model.h5", dir);
  static const sc_case c = {4, 1, "nearest", "nearest", "solver = { kernel = \"cpu\"; threads = 1; };", NULL, 0};
  char *text = sc_text(&c, 1, NULL, 0);
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(text, "survey.cfg", NULL, 0, &job, &err) == TW_OK, "%s", err.msg);
  job->model.type = TW_MODEL_HDF5;
  free(job->model.file);
  job->model.file = malloc(strlen(file) + 1);
  REQUIRE(job->model.file, "out of memory");
  strcpy(job->model.file, file);
  const tw_survey_opts opts = {NULL, 1, dir, 1};
  tw_survey_report rep;
  const tw_status st = tw_survey_run(job, &opts, NULL, &rep, &err);
  const char *why = rep.nworkers == 1 ? rep.workers[0].error : "";
  CHECK(st == TW_OK && rep.not_run == 7 && strstr(why, "gone-model.h5"), "a worker's error is cut (%zu characters): %s",
        strlen(why), why);
  tw_survey_report_free(&rep);
  tw_job_destroy(job);
  free(text);
}

int main(void) {
  test_hash();
  test_select();
  test_sessions();
  test_survey_run();
  test_long_message();
  test_worker_error();
  return tw_test_exit();
}
