/* plan.c — which shots a survey runs (survey_internal.h): the --shots selection, the shot files'
 * names, the restart (a shot with a complete file of this job is skipped), the stale temporary
 * files of a killed run. Rank 0 only; plain POSIX and the HDF5 reader of io/. */
#define _POSIX_C_SOURCE 200809L
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "survey_internal.h"

void tw_survey_shot_path(const char *dir, long index, char *buf, size_t len) {
  snprintf(buf, len, "%s/shot-%05ld.h5", dir, index);
}

void tw_survey_hash(const tw_job *job, const char *kernel, char out[24]) {
  uint64_t h = job->hash;
  (void)kernel; /* every kernel computes the same bits (docs/design.md §1.7): the hash does not name it */
  h = tw_hash_string(h, TW_UPDATE_FORM);
  h = tw_hash_string(h, TW_VERSION);
  snprintf(out, 24, "%016llx", (unsigned long long)h);
}

/* A non-negative integer at *p (spaces around skipped); *p moves past it. */
static int parse_index(const char **p, long *v) {
  const char *s = *p;
  while (isspace((unsigned char)*s)) s++;
  if (!isdigit((unsigned char)*s)) return 0;
  errno = 0;
  char *end;
  const long x = strtol(s, &end, 10);
  if (errno) return 0;
  while (isspace((unsigned char)*end)) end++;
  *v = x;
  *p = end;
  return 1;
}

tw_status tw_survey_select(const char *text, long nshots, unsigned char *mask, tw_error *err) {
  if (mask) memset(mask, 0, (size_t)nshots);
  const char *p = text;
  for (;;) {
    const char *item = p;
    long a, b;
    if (!parse_index(&p, &a)) goto bad;
    b = a;
    if (*p == '-') {
      p++;
      if (!parse_index(&p, &b)) goto bad;
    }
    if (b < a)
      return tw_error_set(err, TW_EINVAL, "--shots \"%s\": the range %ld-%ld is reversed; write %ld-%ld", text, a, b, b,
                          a);
    if (mask && b >= nshots)
      return tw_error_set(err, TW_ERANGE, "--shots \"%s\": shot %ld does not exist: the job has %ld shots (0..%ld)", text,
                          b, nshots, nshots - 1);
    for (long i = a; mask && i <= b; i++) mask[i] = 1;
    if (!*p) return TW_OK;
    if (*p != ',') goto bad;
    p++;
    continue;
  bad:
    (void)item;
    return tw_error_set(err, TW_EINVAL, "--shots \"%s\": \"%.*s\" is not a shot index or range; expected indices and "
                        "ranges like 3-7,12 (shots count from 0 in job order)", text, (int)strcspn(item, ","), item);
  }
}

/* The components of dir: each that exists must be a directory; create: mkdir -p (an existing one is
 * fine), else stop at the first missing one (the run will make the rest) and, with missing, name it
 * there ("" when dir exists). */
static tw_status walk_dirs(const char *dir, int create, char *missing, size_t n, tw_error *err) {
  if (missing) missing[0] = '\0';
  char *d = strdup(dir);
  if (!d) return tw_error_set(err, TW_ENOMEM, "out of memory");
  tw_status st = TW_OK;
  for (char *p = d + 1;; p++) {
    const char c = *p;
    if (c != '/' && c != '\0') continue;
    *p = '\0';
    struct stat sb;
    if (create && mkdir(d, 0777) != 0 && errno != EEXIST) {
      st = tw_error_set(err, TW_EIO, "output.directory '%s': cannot create '%s': %s", dir, d, strerror(errno));
    } else if (stat(d, &sb) != 0) {
      if (create) st = tw_error_set(err, TW_EIO, "output.directory '%s': cannot create '%s'", dir, d);
      if (missing) snprintf(missing, n, "%s", d);
      *p = c;
      break; /* (not create) missing: made by the run from here on */
    } else if (!S_ISDIR(sb.st_mode)) {
      st = tw_error_set(err, TW_EIO, "output.directory '%s': '%s' exists and is not a directory; choose another "
                        "directory (output.directory, or -o)", dir, d);
    }
    *p = c;
    if (st || c == '\0') break;
  }
  free(d);
  return st;
}
static tw_status make_dirs(const char *dir, tw_error *err) { return walk_dirs(dir, 1, NULL, 0, err); }

tw_status survey_dir_fits(const char *dir, tw_error *err) {
  const size_t n = strlen(dir);
  if (n < TW_SURVEY_DIR_MAX) return TW_OK;
  return tw_error_set(err, TW_ECONFIG,
                      "output directory '%s' has %zu characters: a survey's output directory has at most %d; "
                      "choose a shorter one (-o)",
                      dir, n, TW_SURVEY_DIR_MAX - 1);
}

tw_status tw_survey_check_dir(const char *dir, tw_error *err) {
  const tw_status st = survey_dir_fits(dir, err);
  return st ? st : walk_dirs(dir, 0, NULL, 0, err);
}

void survey_first_missing(const char *dir, char *out, size_t n) {
  tw_error ignored; /* a component that is not a directory: the plan reports it */
  (void)walk_dirs(dir, 0, out, n, &ignored);
}

/* Shot `index` of the job has a complete file in dir, written by this job (hash) at this shot's
 * position. 1: complete; 0: none; −1: a file is there but it is not that shot's (another job, an
 * edited shot list, not a shot file): it will be replaced. */
static int shot_complete(const tw_job *job, const char *dir, const char *hash, long index) {
  char path[1200];
  tw_survey_shot_path(dir, index, path, sizeof path);
  struct stat sb;
  if (stat(path, &sb) != 0) return 0;
  tw_shot_stamp s;
  tw_error e = {0};
  if (tw_shot_stamp_read(path, &s, &e) != TW_OK) return -1;
  const int same = s.index == index && strcmp(s.hash, hash) == 0 && s.pos[0] == job->shots[index][0] &&
                   s.pos[1] == job->shots[index][1] && s.pos[2] == job->shots[index][2];
  if (!same) return -1;
  /* The XDMF sidecar of a file with snapshots is renamed into place just after it, and with
   * output.segy the SEG-Y file is written after it: a run killed in between left the .h5 alone
   * (docs/design.md §10.4), so the shot is complete with both, else rerun. */
  char side[1200];
  snprintf(side, sizeof side, "%s/shot-%05ld.xdmf", dir, index);
  if (s.snapshots > 0 && stat(side, &sb) != 0) return 0;
  snprintf(side, sizeof side, "%s/shot-%05ld.sgy", dir, index);
  return !job->output_segy || stat(side, &sb) == 0 ? 1 : 0;
}

enum { LEFT_TEMP, LEFT_LOCK, LEFT_PROBE };

/* "shot-00042.h5.part-123" (a temporary file, any extension: LEFT_TEMP), "shot-00042.h5.lock" (the
 * lock file a killed run left: LEFT_LOCK) or "shot-00042.h5.check-123" (the probe of a `check` onto
 * that file: LEFT_PROBE) → 42 and *kind, else −1. */
static long stale_index(const char *name, int *kind) {
  if (strncmp(name, "shot-", 5) != 0) return -1;
  const size_t len = strlen(name);
  *kind = strstr(name, ".part-") ? LEFT_TEMP
        : len > 5 && strcmp(name + len - 5, ".lock") == 0 ? LEFT_LOCK
        : strstr(name, ".check-") ? LEFT_PROBE : -1;
  if (*kind < 0) return -1;
  const char *p = name + 5;
  if (!isdigit((unsigned char)*p)) return -1;
  char *end;
  const long i = strtol(p, &end, 10);
  return *end == '.' ? i : -1;
}

/* Whose file a name in the output directory is, for tw_output_check_inputs_in: of a shot of the job,
 * its file, its sidecar, with output.segy its SEG-Y file and its lock file, as the run names them, or
 * a temporary the plan removes (stale_index: any extension, clean_stale). */
typedef struct {
  const tw_job *job;
  const char *dir;
  long index; /* the last name's shot */
} shot_names;

static int shot_owner(void *user, const char *name, char *out, size_t n, const char **what) {
  static const char *const ext[][2] = {
      {".h5", "output"}, {".xdmf", "XDMF sidecar"}, {".sgy", "SEG-Y file"}, {".h5.lock", "lock file"}};
  shot_names *sn = user;
  if (strncmp(name, "shot-", 5) != 0) return 0;
  int kind = -1;
  long i = stale_index(name, &kind);
  *what = "temporary file";
  if (i < 0 || kind != LEFT_TEMP) {
    char own[40];
    i = isdigit((unsigned char)name[5]) ? strtol(name + 5, NULL, 10) : -1; /* (stale_index saw "shot-") */
    snprintf(own, sizeof own, "shot-%05ld", i);
    const size_t l = strlen(own);
    *what = NULL;
    for (size_t e = 0; i >= 0 && !*what && e < sizeof ext / sizeof ext[0]; e++)
      if (strncmp(name, own, l) == 0 && strcmp(name + l, ext[e][0]) == 0 && (e != 2 || sn->job->output_segy))
        *what = ext[e][1];
    if (!*what) return 0;
  }
  if (i >= sn->job->nshots) return 0;
  sn->index = i;
  tw_survey_shot_path(sn->dir, i, out, n);
  return 1;
}

/* An error about shot i, named by its index and its position with the digits the job's messages
 * give coordinates (%g's 6 would make [500020.5, 5000020.5, 20] read [500020, 5.00002e+06, 20]). */
static void shot_prefix(const tw_job *job, long i, tw_error *err) {
  const double *p = job->shots[i];
  tw_error_prefix(err, "shot %ld [%.10g, %.10g, %.10g]", i, p[0], p[1], p[2]);
}

tw_status tw_survey_check_inputs(const tw_job *job, const char *dir, tw_error *err) {
  shot_names sn = {job, dir, -1};
  const tw_status st = tw_output_check_inputs_in(dir, job, TW_OUTPUT_SHOT, shot_owner, &sn, err);
  if (st && sn.index >= 0) shot_prefix(job, sn.index, err);
  return st;
}

/* Shot i's sidecar or SEG-Y file is there and torrewave did not write it (tw_output_check_theirs):
 * the error, named by the shot. */
static tw_status shot_theirs(const tw_job *job, const char *dir, long i, tw_error *err) {
  char path[1200];
  tw_survey_shot_path(dir, i, path, sizeof path);
  const tw_status st = tw_output_check_theirs(path, job, TW_OUTPUT_SHOT, err);
  if (st) shot_prefix(job, i, err);
  return st;
}

tw_status tw_survey_check_theirs(const tw_job *job, const char *dir, const char *shots, tw_error *err) {
  const long n = job->nshots;
  unsigned char *sel = malloc((size_t)(n ? n : 1));
  tw_status st = sel ? TW_OK : tw_error_set(err, TW_ENOMEM, "out of memory for %ld shots", n);
  if (!st && shots) st = tw_survey_select(shots, n, sel, err);
  if (!st && !shots) memset(sel, 1, (size_t)n);
  char hash[24];
  tw_survey_hash(job, NULL, hash);
  for (long i = 0; !st && i < n; i++) {
    if (!sel[i] || !(st = shot_theirs(job, dir, i, err))) continue;
    if (shot_complete(job, dir, hash, i) > 0) st = TW_OK, err->msg[0] = '\0'; /* no run rewrites it */
  }
  free(sel);
  return st;
}

/* Remove what killed runs left: temporary files and lock files of shots (a probe's file stays: no
 * survey writes one). A shot's leftovers go only while this process holds that shot's lock (as a
 * single run does), so that a survey running now in the same directory (other shots, or the same
 * ones) keeps the files it is writing: every writer holds its shot's lock. Taking and releasing the
 * lock also removes a stale lock file. Rank 0, before any worker runs a shot (an fcntl lock is the
 * process's: closing another descriptor of a lock file would drop a worker's lock), and only once
 * nothing can refuse the job any more (survey_clean). Such a name that
 * holds no regular file (a folder, a link, a FIFO) is not a run's: it stays, and odd[shot] = 1 (the
 * shot's worker refuses it as a single run does) — and so do that shot's other leftovers, as a
 * refused single run removes none: a first pass over the directory finds the odd names, the second
 * removes. Returns how many temporary files went. */
static long clean_stale(const char *dir, long nshots, unsigned char *odd) {
  DIR *d = opendir(dir);
  if (!d) return 0;
  long n = 0;
  for (int pass = 0; pass < 2; pass++, rewinddir(d))
    for (struct dirent *e; (e = readdir(d));) {
      int kind = -1;
      const long i = stale_index(e->d_name, &kind);
      if (i < 0 || i >= nshots || odd[i]) continue;
      char shot[1200], path[1400];
      tw_survey_shot_path(dir, i, shot, sizeof shot);
      snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
      struct stat ls;
      if (lstat(path, &ls) == 0 && !S_ISREG(ls.st_mode)) odd[i] = 1; /* (second pass: one that came since) */
      if (pass == 0 || odd[i] || kind == LEFT_PROBE) continue;
      tw_output_lock *lock = NULL;
      tw_error err = {0};
      if (tw_output_lock_take(shot, TW_OUTPUT_SHOT, &lock, &err)) continue; /* a live run holds it: its files */
      if (kind == LEFT_TEMP) n += unlink(path) == 0;
      tw_output_lock_release(lock);
    }
  closedir(d);
  return n;
}

tw_status survey_plan(const tw_job *job, const tw_survey_opts *opts, tw_survey_report *rep, long **todo,
                      tw_error *err) {
  const long n = job->nshots;
  *todo = NULL;
  tw_status st = tw_survey_check_inputs(job, rep->directory, err);
  if (!st) st = make_dirs(rep->directory, err);
  if (st && job->output_dir && strcmp(rep->directory, job->output_dir) == 0) /* (not -o): where it is given */
    tw_error_prefix(err, "%s", tw_job_where(job, job->output_dir_where));
  if (st) return st;
  unsigned char *sel = malloc((size_t)n);
  long *t = malloc((size_t)n * sizeof *t);
  if (!sel || !t) st = tw_error_set(err, TW_ENOMEM, "out of memory for %ld shots", n);
  if (!st && opts->shots) st = tw_survey_select(opts->shots, n, sel, err);
  if (!st && !opts->shots) memset(sel, 1, (size_t)n);
  rep->nshots = n;
  for (long i = 0; !st && i < n; i++) {
    if (!sel[i]) continue;
    rep->selected++;
    const int c = opts->force ? 0 : shot_complete(job, rep->directory, rep->hash, i);
    if (c > 0) {
      rep->complete++;
      continue;
    }
    rep->foreign += c < 0;
    t[rep->to_run++] = i;
  }
  free(sel);
  /* the shots to run, before any does: a file torrewave did not write under a name of one's refuses
   * the job, as check does (each shot failed alone, and a rerun failed it again) */
  tw_status theirs = TW_OK;
  for (long k = 0; !st && !theirs && k < rep->to_run; k++) theirs = shot_theirs(job, rep->directory, t[k], err);
  if (theirs && job->output_dir && strcmp(rep->directory, job->output_dir) == 0)
    tw_error_prefix(err, "%s", tw_job_where(job, job->output_dir_where));
  if (!st) st = theirs;
  if (st) {
    free(t);
    return st;
  }
  *todo = t;
  return TW_OK;
}

tw_status survey_clean(tw_survey_report *rep, long *todo, tw_error *err) {
  unsigned char *odd = calloc((size_t)(rep->nshots ? rep->nshots : 1), 1);
  if (!odd) return tw_error_set(err, TW_ENOMEM, "out of memory for %ld shots", rep->nshots);
  rep->stale_removed = clean_stale(rep->directory, rep->nshots, odd);
  for (long k = 0; k < rep->to_run; k++)
    if (odd[todo[k]]) todo[k] |= SURVEY_CHECK_TEMPS;
  free(odd);
  return TW_OK;
}
