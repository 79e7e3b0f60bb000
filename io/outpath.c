/* outpath.c — what an output may overwrite, who is writing it, and what earlier runs left.
 *
 * A run writes OUT.h5 (through OUT.h5.part-PID, renamed when complete), its sidecar OUT.xdmf and,
 * with output.segy, OUT.sgy.
 * Before anything is computed:
 *   - the names must be usable: not empty, not a folder, not a device or FIFO, not a symbolic
 *     link (rename(2) would replace the link itself with a regular file — the classic way to
 *     clobber a file one did not mean to; give the target's own name), and not one of the job's
 *     inputs (job file, model, wavelet files), compared by device and inode so that another name
 *     or a hard link of the same file is caught;
 *   - the run holds a lock on the output's name, OUT.h5.lock, for its whole duration: an fcntl(2)
 *     write lock (released by the kernel when the process dies, kill -9 included; honoured over
 *     NFS), so two runs onto one output cannot both write it: the second fails at once and names
 *     the first's process. The lock file holds the pid as text and is removed on release (after
 *     publishing both files); a stale one is taken over, anything else under its name (a link, a
 *     folder, a FIFO, a file of other content) is refused, never followed, written or removed;
 *   - temporaries of earlier runs of the same output whose process is gone (OUT.h5.part-PID after
 *     a kill -9, OUT.xdmf.part-PID, OUT.sgy.part-PID, OUT.h5.check-PID) are listed by `check` and removed by the next
 *     run, which holds the lock, so no live run can be writing them; one that is not a regular
 *     file (a folder, a link: no run wrote it) is refused, by check and run alike, and left — and
 *     so are the others: every name is checked before any is removed.
 * Just before a run publishes (output.c), the names it publishes are checked again under the same
 * rules (tw_output_check_publish): what came under them while it computed is refused and stays,
 * and the result is kept as OUT.kept-PID.h5 (output.c: kept_name), a name no clean-up here removes.
 * Refusals at the start end with what to do instead: another output name for a single run, another
 * directory for a survey's shot file (tw_output_role); at publishing the run is complete, and the
 * caller says what to do with the kept result instead.
 * Library code: nothing here prints; the app says what was removed. */
#define _POSIX_C_SOURCE 200809L
#define _XOPEN_SOURCE 700 /* realpath */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <sys/types.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"

char *tw_dir_of(const char *path) {
  const char *slash = strrchr(path, '/');
  if (!slash) return strdup(".");
  size_t n = slash == path ? 1 : (size_t)(slash - path);
  char *d = malloc(n + 1);
  if (d) memcpy(d, path, n), d[n] = '\0';
  return d;
}

const char *tw_base_of(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

int tw_other_output_beside(const char *h5path, const char *name) {
  if (strcmp(name, tw_base_of(h5path)) == 0) return 0;
  char *dir = tw_dir_of(h5path), *full = dir ? malloc(strlen(dir) + strlen(name) + 2) : NULL;
  int there = 0;
  if (full) {
    sprintf(full, "%s/%s", dir, name);
    struct stat sb;
    there = stat(full, &sb) == 0 && S_ISREG(sb.st_mode);
  }
  free(dir), free(full);
  return there;
}

/* What a file of mode m is, for messages ("a directory", ...); io_internal.h. */
const char *tw_file_kind(mode_t m) {
  return S_ISDIR(m) ? "a directory" : S_ISCHR(m) ? "a character device" : S_ISBLK(m) ? "a block device"
       : S_ISFIFO(m) ? "a FIFO (named pipe)" : S_ISSOCK(m) ? "a socket" : S_ISREG(m) ? "a regular file"
       : S_ISLNK(m) ? "a symbolic link" : "not a regular file";
}

int tw_open_regular(const char *path, int flags, mode_t mode, struct stat *st, const char **kind) {
  struct stat sb;
  if (!st) st = &sb;
  *kind = NULL;
  const int fd = open(path, flags | O_NONBLOCK | O_NOCTTY | O_CLOEXEC, mode);
  if (fd < 0) return -1;
  int eno = 0;
  if (fstat(fd, st) != 0) eno = errno;
  else if (!S_ISREG(st->st_mode)) *kind = tw_file_kind(st->st_mode);
  else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) == 0) return fd;
  else eno = errno;
  close(fd);
  errno = eno;
  return -1;
}

/* What is at path (ls: its lstat), for messages: tw_file_kind, a link with its target (into buf). */
static const char *kind_at(const char *path, const struct stat *ls, char *buf, size_t len) {
  if (!S_ISLNK(ls->st_mode)) return tw_file_kind(ls->st_mode);
  char target[1024];
  ssize_t n = readlink(path, target, sizeof target - 1);
  target[n > 0 ? n : 0] = '\0';
  snprintf(buf, len, "a symbolic link (to '%s')", target);
  return buf;
}

static char *lock_name(const char *path) {
  char *p = malloc(strlen(path) + 6);
  if (p) sprintf(p, "%s.lock", path);
  return p;
}

/* ---------------------------------------------------------------- the names */

typedef struct {
  const char *name;          /* as the job gives it */
  const char *what;          /* "the job file", "the velocity model (model.file)", ... */
  char key[48];
  int there; /* inputs_stat found it: its device and inode follow */
  dev_t dev;
  ino_t ino;
} input_file;

/* Each input's device and inode, looked up once: an output is compared with them (a folder of
 * thousands of shot files is compared file by file). */
static void inputs_stat(input_file *in, int nin) {
  struct stat st;
  for (int i = 0; i < nin; i++) {
    in[i].there = in[i].name && stat(in[i].name, &st) == 0;
    if (in[i].there) in[i].dev = st.st_dev, in[i].ino = st.st_ino;
  }
}

/* The input that the file ls (an output's lstat) is: the same device and inode, so that another name
 * or a hard link of it is caught; NULL: none. */
static const input_file *input_is(const struct stat *ls, const input_file *in, int nin) {
  for (int i = 0; i < nin; i++)
    if (in[i].there && in[i].dev == ls->st_dev && in[i].ino == ls->st_ino) return &in[i];
  return NULL;
}

/* The one refusal of an output's file (what: "output", "XDMF sidecar", ...; out: its output) that is
 * an input of the job; then: "; " and what to do instead, or "". */
static tw_status refuse_input(const char *what, const char *path, const char *out, const input_file *f,
                              const char *then, tw_error *err) {
  const char *of = strcmp(path, out) ? " of output '" : "";
  return tw_error_set(err, TW_EINVAL, "%s '%s'%s%s%s is %s ('%s'%s%s): refusing to overwrite an input of the job%s",
                      what, path, of, of[0] ? out : "", of[0] ? "'" : "", f->what, f->name, f->key[0] ? ", " : "",
                      f->key, then);
}

/* What to do instead, as refusals of an output's names end: a single run's output is named by -o or
 * output.file, a survey's shot file by the survey's directory (its own name is fixed). */
static const char *other_name(tw_output_role role) {
  return role == TW_OUTPUT_SHOT ? "choose another output directory (-o, or output.directory in the job)"
                                : "choose another output name (-o, or output.file in the job)";
}

/* Refuse `path` (what: "output", "XDMF sidecar") when it is there but not a plain regular file, or
 * when it is one of the inputs; fix: what to do instead (role: a shot's name cannot be given, so
 * what is in its way must go), or NULL for the refusal alone (at publishing, where the caller says
 * what to do with the complete result). */
static tw_status check_one(const char *path, const char *what, const char *out, const input_file *in, int nin,
                           tw_output_role role, const char *fix, tw_error *err) {
  struct stat ls;
  if (lstat(path, &ls) != 0) return TW_OK; /* absent: a new file */
  const char *of = strcmp(path, out) ? " of output '" : "";
  char buf[1100], then[300] = "";
  const char *kind = kind_at(path, &ls, buf, sizeof buf);
  if (S_ISLNK(ls.st_mode)) {
    if (fix) snprintf(then, sizeof then, ": %s, or %s", role == TW_OUTPUT_SHOT ? "remove the link" : "name the target "
                      "itself", fix);
    return tw_error_set(err, TW_EINVAL, "%s '%s'%s%s%s is %s: refusing to replace it; outputs are written under a "
                        "temporary name and renamed, which would replace the link, not its target%s", what, path, of,
                        of[0] ? out : "", of[0] ? "'" : "", kind, then);
  }
  if (!S_ISREG(ls.st_mode)) {
    if (fix) snprintf(then, sizeof then, ": %s%s", role == TW_OUTPUT_SHOT ? "remove it, or " : "", fix);
    return tw_error_set(err, TW_EINVAL, "%s '%s'%s%s%s is %s: refusing to replace it; outputs must be regular files "
                        "or new names%s", what, path, of, of[0] ? out : "", of[0] ? "'" : "", kind, then);
  }
  if (fix) snprintf(then, sizeof then, "; %s", fix);
  const input_file *f = input_is(&ls, in, nin);
  return f ? refuse_input(what, path, out, f, then, err) : TW_OK;
}

/* A lock file torrewave wrote holds its run's pid as text ("<pid>\n"), or nothing yet (a run between
 * creating and writing it; a file system without locks, where it stays empty). */
static int lock_text_ok(int fd) {
  char buf[32];
  const ssize_t n = pread(fd, buf, sizeof buf, 0);
  ssize_t i = 0;
  while (i < n && buf[i] >= '0' && buf[i] <= '9') i++;
  return n >= 0 && n < (ssize_t)sizeof buf && (i == n || (i > 0 && i == n - 1 && buf[i] == '\n'));
}

/* OUT.h5.lock, when it is there, must be one torrewave made: a regular file holding a pid. A run
 * opens it, truncates it and removes it at the end (a stale one, its run killed, is taken over so),
 * so anything else — a symbolic link (never followed), a folder, a device, a FIFO, another file
 * under that name (a job file called OUT.h5.lock) — is refused before it is opened for writing, by
 * `check` as by `run`, and left as it is. Never call it in the process that holds the lock (closing
 * a descriptor of the file would drop the fcntl lock). */
static tw_status check_lock(const char *path, const char *lock, tw_output_role role, tw_error *err) {
  struct stat ls;
  if (lstat(lock, &ls) != 0) return TW_OK; /* none: the run creates it */
  const int fd = S_ISREG(ls.st_mode) ? open(lock, O_RDWR | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
  const int e = errno, ok = fd >= 0 && lock_text_ok(fd);
  if (fd >= 0) close(fd);
  if (S_ISREG(ls.st_mode) && fd < 0)
    return tw_error_set(err, TW_EIO, "output '%s': cannot open its lock file '%s': %s", path, lock, strerror(e));
  if (ok) return TW_OK;
  char kind[1100];
  return tw_error_set(err, TW_EINVAL, "output '%s': its lock file '%s' is %s%s, not a lock file torrewave wrote (a "
                      "regular file holding the pid of the run writing the output): refusing to use or remove it; "
                      "remove it yourself if nothing needs it, or %s", path, lock,
                      kind_at(lock, &ls, kind, sizeof kind),
                      S_ISREG(ls.st_mode) ? " that holds something other than a process id" : "", other_name(role));
}

/* One file for two names: the same folder (realpath) and base name, or, when both exist, the same
 * device and inode. */
static int same_file(const char *a, const char *b) {
  struct stat sa, sb;
  if (stat(a, &sa) == 0 && stat(b, &sb) == 0) return sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
  if (strcmp(tw_base_of(a), tw_base_of(b))) return 0;
  char *da = tw_dir_of(a), *db = tw_dir_of(b), *ra = da ? realpath(da, NULL) : NULL, *rb = db ? realpath(db, NULL) : NULL;
  const int same = ra && rb ? strcmp(ra, rb) == 0 : da && db && strcmp(da, db) == 0;
  free(da), free(db), free(ra), free(rb);
  return same;
}

/* The checkpoint's files against the run's own: checkpoints are written during the run and removed
 * when it completes, so a checkpoint that is the output (or its sidecar, SEG-Y file or lock) would
 * take the finished output with it. Its lock, "<ckpt>.lock", too: it goes at the end of the run, and
 * -o q.lock with checkpoint.file "q" published the output onto the lock's name, then removed it. */
static tw_status check_ckpt_names(const char *path, const char *xdmf, const tw_job *job, const input_file *in,
                                  int nin, tw_error *err) {
  char *ck = tw_checkpoint_path(job, path), *sgy = job->output_segy ? tw_segy_path(path) : NULL;
  const size_t l = ck ? strlen(ck) : 0, lp = strlen(path);
  char *ckn[4] = {ck, malloc(l + 16), malloc(l + 16), malloc(l + 16)}, *lock = malloc(lp + 8);
  const char *ours[4] = {path, xdmf, sgy, lock}, *our_what[4] = {"output", "XDMF sidecar", "SEG-Y file", "lock file"};
  const char *ck_what[4] = {"checkpoint", "checkpoint journal", "checkpoint's temporary", "checkpoint's lock file"};
  tw_status st = TW_OK;
  char *ckdir = ck ? tw_dir_of(ck) : NULL;
  const long nm = ckdir ? pathconf(ckdir, _PC_NAME_MAX) : -1;
  struct stat ds;
  const int dir_ok = ckdir && stat(ckdir, &ds) == 0 && S_ISDIR(ds.st_mode), dir_errno = errno;
  char where_at[900] = "", value[600] = ""; /* where checkpoint.file is given, and its value */
  if (job->ckpt_file && job->ckpt_where) {
    snprintf(where_at, sizeof where_at, "%s: checkpoint.file: ", job->ckpt_where);
    snprintf(value, sizeof value, ": got \"%s\"", job->ckpt_file);
  }
  if (!ck || !ckdir || !ckn[1] || !ckn[2] || !ckn[3] || !lock || (job->output_segy && !sgy)) {
    st = tw_error_set(err, TW_ENOMEM, "out of memory");
  } else if (job->ckpt_file && (!dir_ok || access(ckdir, W_OK | X_OK) != 0)) {
    /* a checkpoint.file in a missing folder passed the validation: run read the model and failed
     * opening the journal (the default, beside the output, is in the output's folder, checked with it) */
    char why[160];
    if (dir_ok) snprintf(why, sizeof why, "is not writable (%s)", strerror(errno));
    else snprintf(why, sizeof why, "%s", dir_errno == ENOENT ? "does not exist" : "is not a folder");
    st = tw_error_set(err, TW_EINVAL, "%sthe checkpoint '%s': its folder '%s' %s%s; allowed: a name in an existing, "
                      "writable folder (create it first)", where_at, ck, ckdir, why, value);
  } else if ((long)strlen(tw_base_of(ck)) + 8 > (nm > 0 ? nm : 255)) { /* its journal: + ".journal" */
    st = tw_error_set(err, TW_EINVAL, "%sthe checkpoint's name is %zu characters and its journal's 8 more, over the "
                      "file system's limit of %ld; allowed: a shorter name", where_at, strlen(tw_base_of(ck)),
                      nm > 0 ? nm : 255L);
  } else {
    sprintf(ckn[1], "%s.journal", ck), sprintf(ckn[2], "%s.tmp", ck), sprintf(ckn[3], "%s.lock", ck);
    sprintf(lock, "%s.lock", path);
    const char *loc = where_at, *got = value;
    for (int i = 0; i < 4 && !st; i++)
      for (int k = 0; k < 4 && !st; k++) {
        if (!ours[k] || !same_file(ckn[i], ours[k])) continue;
        st = tw_error_set(err, TW_EINVAL, "%sthe %s '%s' would be the run's %s '%s' (checkpoint files are removed "
                          "when the run completes, and the output would go with them)%s; allowed: a name that, with "
                          ".journal, .tmp and .lock, is none of the output's files (the default, the output's name + "
                          "\".ckpt\", never is)", loc, ck_what[i], ckn[i], our_what[k], ours[k], got);
      }
    for (int i = 0; i < 4 && !st; i++) /* nor an input: a checkpoint would overwrite it */
      for (int k = 0; k < nin && !st; k++) {
        if (!in[k].name || !same_file(ckn[i], in[k].name)) continue;
        st = tw_error_set(err, TW_EINVAL, "%sthe %s '%s' would be %s ('%s'%s%s), which a checkpoint would "
                          "overwrite%s; allowed: a new name (the default is the output's name + \".ckpt\")", loc,
                          ck_what[i], ckn[i], in[k].what, in[k].name, in[k].key[0] ? ", " : "", in[k].key, got);
      }
  }
  for (int i = 0; i < 4; i++) free(ckn[i]);
  free(sgy), free(lock), free(ckdir);
  return st;
}

/* Characters the longest name derived from an output's adds to it: its sidecar's or SEG-Y file's
 * temporary, "<stem>.xdmf.part-<pid>" (pids up to 7 digits), a default checkpoint's journal, or a
 * refused result's kept sidecar, "<stem>.kept-<pid>-9.xdmf" (output.c: kept_name). */
#define DERIVED_EXTRA 20

/* A name at all, not a folder's (what: "output", ...; how: where the name is given), and short
 * enough for every name the run derives from it (a name at the limit passed the probe, computed the
 * whole run and failed publishing its sidecar). */
static tw_status check_name(const char *path, const char *what, const char *how, tw_error *err) {
  if (!path || !path[0]) return tw_error_set(err, TW_EINVAL, "%s: the file name is empty; give one with %s", what, how);
  const size_t len = strlen(path), base = strlen(tw_base_of(path));
  if (path[len - 1] == '/')
    return tw_error_set(err, TW_EINVAL, "%s '%s' names a folder; give a file name in it", what, path);
  char *dir = tw_dir_of(path);
  const long nm = dir ? pathconf(dir, _PC_NAME_MAX) : -1, pm = dir ? pathconf(dir, _PC_PATH_MAX) : -1;
  free(dir);
  const long name_max = nm > 0 ? nm : 255, path_max = pm > 0 ? pm : 4096;
  if ((long)base + DERIVED_EXTRA > name_max)
    return tw_error_set(err, TW_EINVAL, "%s '%.60s...': its name is %zu characters, and the run writes files "
                        "named up to %d more (its temporaries, sidecar, checkpoint journal) where the file system "
                        "allows %ld; give a name of at most %ld characters (%s)", what, tw_base_of(path), base,
                        DERIVED_EXTRA, name_max, name_max - DERIVED_EXTRA, how);
  if ((long)len + DERIVED_EXTRA >= path_max)
    return tw_error_set(err, TW_EINVAL, "%s '%.60s...': its path is %zu characters, and the run writes paths up to "
                        "%d longer, over the limit of %ld; give a shorter path (%s)", what, path, len,
                        DERIVED_EXTRA, path_max, how);
  return TW_OK;
}

/* Its folder exists. */
static tw_status check_folder(const char *path, const char *what, const char *dir, tw_error *err) {
  struct stat ds;
  if (stat(dir, &ds) == 0 && S_ISDIR(ds.st_mode)) return TW_OK;
  return tw_error_set(err, TW_EIO, "%s '%s': its folder '%s' %s; create it first or choose another name", what, path,
                      dir, errno == ENOENT ? "does not exist" : "is not a folder");
}

tw_status tw_output_check_file(const char *path, const char *what, const char *how, const char *input,
                               const char *input_what, int (*replaceable)(const char *path),
                               const char *replaceable_what, tw_error *err) {
  tw_status st = check_name(path, what, how, err);
  if (st) return st;
  char *dir = tw_dir_of(path), *side = input ? tw_xdmf_path(input) : NULL; /* the input's sidecar is its too */
  st = dir ? check_folder(path, what, dir, err) : tw_error_set(err, TW_ENOMEM, "out of memory");
  input_file in[2] = {{.name = input, .what = input_what}, {.name = side, .what = "that file's XDMF sidecar"}};
  inputs_stat(in, 2);
  char fix[160];
  snprintf(fix, sizeof fix, "choose another name (%s)", how);
  if (!st) st = check_one(path, what, path, in, input ? (side ? 2 : 1) : 0, TW_OUTPUT_RUN, fix, err);
  if (!st && replaceable && tw_output_exists(path) && !replaceable(path)) /* the command does not know the job */
    st = tw_error_set(err, TW_EINVAL, "%s '%s' exists and is not %s: refusing to replace it; remove it first if it may "
                      "go, or %s", what, path, replaceable_what, fix);
  free(dir), free(side);
  return st;
}

/* The job's input files (calloc'd; NULL: out of memory). */
static input_file *job_inputs(const tw_job *job, int *nin) {
  int cap = 2 + (job ? job->nsources : 0);
  input_file *in = calloc((size_t)cap, sizeof *in);
  *nin = 0;
  if (!in) return NULL;
  if (job && job->path) in[(*nin)++] = (input_file){.name = job->path, .what = "the job file"};
  if (job && job->model.file)
    in[(*nin)++] = (input_file){.name = job->model.file, .what = "the velocity model", .key = "model.file"};
  for (int s = 0; job && s < job->nsources; s++)
    if (job->sources[s].wavelet.file) {
      in[*nin] = (input_file){.name = job->sources[s].wavelet.file, .what = "a wavelet file"};
      snprintf(in[*nin].key, sizeof in[*nin].key, "sources[%d].wavelet.file", s);
      (*nin)++;
    }
  inputs_stat(in, *nin);
  return in;
}

tw_status tw_output_check_ckpt(const char *path, const tw_job *job, tw_error *err) {
  if (!job || !job->ckpt) return TW_OK;
  int nin;
  input_file *in = job_inputs(job, &nin);
  char *xdmf = tw_xdmf_path(path);
  const tw_status st = in && xdmf ? check_ckpt_names(path, xdmf, job, in, nin, err)
                                  : tw_error_set(err, TW_ENOMEM, "out of memory");
  free(in), free(xdmf);
  return st;
}

/* A regular file under the name of the output's sidecar or SEG-Y file (what) that torrewave did not
 * write: a name derived from the output's, which the user may not have in mind (a field record
 * "line1.sgy" beside a synthetic "line1.h5", a result named "q.xdmf" beside "q"), so it is refused,
 * as `export` refuses one, never replaced; a sidecar or SEG-Y file of ours is replaced. */
static tw_status not_ours(const char *path, const char *what, const char *out, const char *fix, tw_error *err) {
  if (!tw_output_exists(path)) return TW_OK;
  return tw_error_set(err, TW_EINVAL,
                      "%s '%s' of output '%s' is there and torrewave did not write it: refusing to "
                      "replace it%s%s",
                      what, path, out, fix ? "; move it away, or " : "", fix ? fix : "");
}

/* not_ours unless the file at side is one of ours (ours: tw_xdmf_ours, tw_segy_ours). */
static tw_status refuse_theirs(const char *side, const char *what, int (*ours)(const char *), const char *out,
                               const char *fix, tw_error *err) {
  return ours(side) ? TW_OK : not_ours(side, what, out, fix, err);
}

/* Whether a run of job writes a snapshot, and so a sidecar: not when snapshots.every is beyond the
 * last step (the job as parsed gives snapshots.every, the validated one the steps too). */
static int writes_sidecar(const tw_job *job) {
  return job && (job->nsnap > 0 || (job->snap_every > 0 && (job->steps <= 0 || job->snap_every <= job->steps)));
}

/* The names a run publishes (the output, its sidecar, with output.segy its SEG-Y file) and, at the
 * start, its lock file, under the rules of tw_output_check_path: the start of a run, and again just
 * before it publishes (tw_output_check_publish: without the lock, which the run holds, and without
 * the start's advice; the name refused into refused[n]). */
static tw_status check_names(const char *path, const tw_job *job, tw_output_role role, int publish, char *refused,
                             size_t n, tw_error *err) {
  int nin;
  input_file *in = job_inputs(job, &nin); /* the job's inputs */
  if (!in) return tw_error_set(err, TW_ENOMEM, "out of memory");
  char *xdmf = tw_xdmf_path(path), *dir = tw_dir_of(path), *sgy = job && job->output_segy ? tw_segy_path(path) : NULL;
  tw_status st = (!xdmf || !dir || (job && job->output_segy && !sgy)) ? tw_error_set(err, TW_ENOMEM, "out of memory")
                                                                      : TW_OK;
  if (!st) st = check_folder(path, "output", dir, err);
  const char *fix = publish ? NULL : other_name(role), *at = NULL;
  if (!st && (st = check_one(path, "output", path, in, nin, role, fix, err))) at = path;
  if (!st && (st = check_one(xdmf, "XDMF sidecar", path, in, nin, role, fix, err))) at = xdmf;
  char *lock = st || publish ? NULL : lock_name(path);
  if (!st && !publish) st = lock ? check_lock(path, lock, role, err) : tw_error_set(err, TW_ENOMEM, "out of memory");
  /* a lock file holds a pid, and so may an input (a one-sample wavelet file): the run would truncate
   * it, write its pid and remove it */
  if (!st && lock) st = check_one(lock, "lock file", path, in, nin, role, fix, err);
  free(lock);
  char other[512];
  const int snapshots = writes_sidecar(job);
  if (!st && snapshots && (st = refuse_theirs(xdmf, "XDMF sidecar", tw_xdmf_ours, path, fix, err))) at = xdmf;
  if (!st && snapshots && tw_xdmf_describes_other(xdmf, path, other, sizeof other))
    st = tw_error_set(err, TW_EINVAL, "XDMF sidecar '%s' of output '%s' is that of output '%s' (it describes that "
                      "file, which is there): a run would replace it and leave '%s' without its sidecar%s%s", xdmf,
                      path, other, other, fix ? "; " : "", fix ? fix : ""), at = xdmf;
  if (!st && sgy && (st = check_one(sgy, "SEG-Y file", path, in, nin, role, fix, err))) at = sgy;
  if (!st && sgy && tw_segy_available() && (st = refuse_theirs(sgy, "SEG-Y file", tw_segy_ours, path, fix, err)))
    at = sgy;
  if (!st && sgy && tw_segy_describes_other(sgy, path, other, sizeof other)) /* as the sidecar above */
    st = tw_error_set(err, TW_EINVAL, "SEG-Y file '%s' of output '%s' is that of output '%s' (written from that file, "
                      "which is there): a run would replace it and leave '%s' without its SEG-Y file%s%s", sgy, path,
                      other, other, fix ? "; " : "", fix ? fix : ""), at = sgy;
  if (refused && n) snprintf(refused, n, "%s", at ? at : "");
  free(xdmf), free(dir), free(sgy);
  free(in);
  return st;
}

tw_status tw_output_check_path(const char *path, const tw_job *job, int probe, tw_output_role role, tw_error *err) {
  tw_status st = check_name(path, "output", role == TW_OUTPUT_SHOT ? "-o DIR or output.directory" : "-o FILE.h5 or "
                            "output.file", err);
  if (!st) st = check_names(path, job, role, 0, NULL, 0, err);
  if (!st && probe) { /* the folder must accept a new file: create and remove a probe there */
    char *p = malloc(strlen(path) + 32);
    if (!p) {
      st = tw_error_set(err, TW_ENOMEM, "out of memory");
    } else {
      sprintf(p, "%s.check-%ld", path, (long)getpid());
      int fd = open(p, O_WRONLY | O_CREAT | O_EXCL, 0666);
      if (fd < 0) st = tw_error_set(err, TW_EIO, "output '%s' is not writable: %s", path, strerror(errno));
      else close(fd), unlink(p);
      free(p);
    }
  }
  return st;
}

tw_status tw_output_check_theirs(const char *path, const tw_job *job, tw_output_role role, tw_error *err) {
  const int snapshots = writes_sidecar(job), segy = job && job->output_segy;
  char *xdmf = snapshots ? tw_xdmf_path(path) : NULL, *sgy = segy && tw_segy_available() ? tw_segy_path(path) : NULL;
  tw_status st = (snapshots && !xdmf) || (segy && tw_segy_available() && !sgy)
                     ? tw_error_set(err, TW_ENOMEM, "out of memory")
                     : TW_OK;
  if (!st && xdmf) st = refuse_theirs(xdmf, "XDMF sidecar", tw_xdmf_ours, path, other_name(role), err);
  if (!st && sgy) st = refuse_theirs(sgy, "SEG-Y file", tw_segy_ours, path, other_name(role), err);
  free(xdmf), free(sgy);
  return st;
}

tw_status tw_output_check_inputs_in(const char *dir, const tw_job *job, tw_output_role role, tw_output_owner owner,
                                    void *user, tw_error *err) {
  int nin, any = 0;
  input_file *in = job_inputs(job, &nin);
  const size_t n = strlen(dir) + 512; /* (a name in dir: up to NAME_MAX) */
  char *path = malloc(n), *out = malloc(n);
  tw_status st = in && path && out ? TW_OK : tw_error_set(err, TW_ENOMEM, "out of memory");
  for (int i = 0; !st && i < nin; i++) any |= in[i].there;
  DIR *d = !st && any ? opendir(dir) : NULL; /* (no folder yet: nothing in it is an input) */
  char then[300];
  snprintf(then, sizeof then, "; %s", other_name(role));
  for (struct dirent *e; !st && d && (e = readdir(d));) {
    const char *what = NULL;
    if (!owner(user, e->d_name, out, n, &what)) continue;
    snprintf(path, n, "%s/%s", dir, e->d_name);
    struct stat ls;
    /* (a link or a folder is no input: the run refuses it when it writes that output, as any run) */
    const input_file *f = lstat(path, &ls) == 0 && S_ISREG(ls.st_mode) ? input_is(&ls, in, nin) : NULL;
    if (f) st = refuse_input(what, path, out, f, then, err);
  }
  if (d) closedir(d);
  free(in), free(path), free(out);
  return st;
}

tw_status tw_output_check_publish(const char *path, const tw_job *job, tw_output_role role, char *refused, size_t n,
                                  tw_error *err) {
  return check_names(path, job, role, 1, refused, n, err);
}

int tw_output_exists(const char *path) {
  struct stat ls;
  return path && lstat(path, &ls) == 0 && S_ISREG(ls.st_mode);
}

/* One file beside the output (tw_output_beside_files): replaced when the run writes it, else removed
 * when it is a stale one of ours that describes no other output there; path moves into *b. */
static int beside_one(char *path, const char *h5path, int writes, const char *what, int (*ours)(const char *),
                      int (*describes_other)(const char *, const char *, char *, size_t), tw_output_beside *b) {
  char other[512];
  if (!tw_output_exists(path)) return free(path), 0;
  if (!writes && !(ours(path) && !describes_other(path, h5path, other, sizeof other))) return free(path), 0;
  b->path = path, b->what = what, b->removed = !writes;
  return 1;
}

int tw_output_beside_files(const char *h5path, const tw_job *job, tw_output_beside out[2]) {
  int n = 0;
  char *xdmf = tw_xdmf_path(h5path), *sgy = tw_segy_path(h5path);
  if (xdmf)
    n += beside_one(xdmf, h5path, writes_sidecar(job), "XDMF sidecar", tw_xdmf_ours, tw_xdmf_describes_other, out + n);
  if (sgy)
    n += beside_one(sgy, h5path, job && job->output_segy, "SEG-Y file", tw_segy_ours, tw_segy_describes_other, out + n);
  return n;
}

void tw_output_beside_free(tw_output_beside *b, int n) {
  for (int i = 0; b && i < n; i++) free(b[i].path), b[i].path = NULL;
}

double tw_output_free_bytes(const char *path) {
  char *dir = tw_dir_of(path);
  struct statvfs sv;
  int ok = dir && statvfs(dir, &sv) == 0 && sv.f_blocks > 0;
  free(dir);
  return ok ? (double)sv.f_bavail * (double)sv.f_frsize : -1.0;
}

/* ---------------------------------------------------------------- earlier runs' temporaries */

/* name = prefix + digits: the pid, else 0. */
static long pid_suffix(const char *name, const char *prefix) {
  size_t l = strlen(prefix);
  if (strncmp(name, prefix, l) || !name[l]) return 0;
  long pid = 0;
  for (const char *p = name + l; *p; p++) {
    if (*p < '0' || *p > '9' || pid > 1L << 40) return 0;
    pid = pid * 10 + (*p - '0');
  }
  return pid;
}

/* The process is gone: kill(pid, 0) says ESRCH (EPERM: it exists, someone else's). */
static int process_gone(long pid) { return pid > 0 && pid != (long)getpid() && kill((pid_t)pid, 0) != 0 && errno == ESRCH; }

/* The names in dir that are one of pre[0..npre) followed by the pid of a process that is gone:
 * their paths in *names (dir prefixed, as the caller's path has it) and the pids in *pids, each
 * malloc'd (*count of them, also after an error). */
static tw_status gone_names(const char *dir, char *const *pre, int npre, char ***names, long **pids, int *count,
                            tw_error *err) {
  *names = NULL, *pids = NULL, *count = 0;
  DIR *d = opendir(dir);
  tw_status st = TW_OK;
  for (struct dirent *e; d && (e = readdir(d));) {
    long pid = 0;
    for (int k = 0; k < npre && !pid; k++) pid = pid_suffix(e->d_name, pre[k]);
    if (!process_gone(pid)) continue;
    size_t dl = strlen(dir), nl = strlen(e->d_name);
    char *full = malloc(dl + nl + 2), **grown = realloc(*names, (size_t)(*count + 1) * sizeof *grown);
    if (grown) *names = grown;
    long *grown_pids = realloc(*pids, (size_t)(*count + 1) * sizeof **pids);
    if (grown_pids) *pids = grown_pids;
    if (!full || !grown || !grown_pids) {
      free(full);
      st = tw_error_set(err, TW_ENOMEM, "out of memory");
      break;
    }
    if (strcmp(dir, ".") == 0) memcpy(full, e->d_name, nl + 1);
    else sprintf(full, "%s%s%s", dir, dir[dl - 1] == '/' ? "" : "/", e->d_name);
    (*pids)[*count] = pid;
    (*names)[(*count)++] = full;
  }
  if (d) closedir(d);
  return st;
}

tw_status tw_output_stale(const char *path, int remove, tw_output_role role, char ***names, int *count,
                          tw_error *err) {
  *names = NULL;
  *count = 0;
  char *dir = tw_dir_of(path), *xdmf = tw_xdmf_path(path), *sgy = tw_segy_path(path);
  char *pre[4] = {NULL, NULL, NULL, NULL};
  tw_status st = TW_OK;
  if (dir && xdmf && sgy && (pre[0] = malloc(strlen(path) + 16)) && (pre[1] = malloc(strlen(path) + 16)) &&
      (pre[2] = malloc(strlen(xdmf) + 16)) && (pre[3] = malloc(strlen(sgy) + 16))) {
    sprintf(pre[0], "%s.part-", tw_base_of(path));
    sprintf(pre[1], "%s.check-", tw_base_of(path));
    sprintf(pre[2], "%s.part-", tw_base_of(xdmf));
    sprintf(pre[3], "%s.part-", tw_base_of(sgy));
  } else {
    st = tw_error_set(err, TW_ENOMEM, "out of memory");
  }
  long *pids = NULL;
  if (!st) st = gone_names(dir, pre, 4, names, &pids, count, err);
  /* First every name, each checked: one that is not a file refuses the output before anything goes. */
  for (int i = 0; !st && i < *count; i++) {
    struct stat ls;
    char kind[1100];
    const char *full = (*names)[i];
    if (lstat(full, &ls) == 0 && !S_ISREG(ls.st_mode)) /* not a file a run wrote: not ours to remove */
      st = tw_error_set(err, TW_EINVAL, "output '%s': '%s' is named like a temporary of an earlier run (process %ld, "
                        "gone), but is %s, which torrewave never writes: refusing to remove it; remove it yourself "
                        "if nothing needs it, or %s", path, full, pids[i], kind_at(full, &ls, kind, sizeof kind),
                        other_name(role));
  }
  /* Then, all of them checked, remove them (a failure names those that went before it). */
  for (int i = 0; remove && !st && i < *count; i++) {
    if (unlink((*names)[i]) == 0 || errno == ENOENT) continue;
    const int e = errno;
    char gone[512] = "";
    for (int k = 0, l = 0; k < i && l >= 0 && l < (int)sizeof gone; k++)
      l += snprintf(gone + l, sizeof gone - (size_t)l, "%s'%s'", k ? ", " : "; removed before it: ", (*names)[k]);
    st = tw_error_set(err, TW_EIO, "output '%s': cannot remove '%s', left by an earlier run (process %ld, gone): "
                      "%s%s", path, (*names)[i], pids[i], strerror(e), gone);
  }
  free(pids);
  for (int k = 0; k < 4; k++) free(pre[k]);
  free(dir);
  free(xdmf);
  free(sgy);
  if (st) {
    tw_output_stale_free(*names, *count);
    *names = NULL, *count = 0;
  }
  return st;
}

tw_status tw_output_remove_parts(const char *path, int (*ours)(const char *path), char ***names, int *count,
                                 tw_error *err) {
  *names = NULL;
  *count = 0;
  char *dir = tw_dir_of(path), *pre = malloc(strlen(path) + 8), **all = NULL;
  long *pids = NULL;
  int n = 0;
  tw_status st = dir && pre ? TW_OK : tw_error_set(err, TW_ENOMEM, "out of memory");
  if (!st) {
    sprintf(pre, "%s.part-", tw_base_of(path));
    st = gone_names(dir, &pre, 1, &all, &pids, &n, err);
  }
  /* all is reused for what went: a name not removed is dropped from it, never touched. Only this
   * user's files go (another user's killed writer in a shared folder is theirs to clear), and one
   * that cannot be removed stays: the clean-up is a courtesy, never a reason to refuse the work. */
  for (int i = 0; i < n; i++) {
    struct stat ls;
    const int go = !st && lstat(all[i], &ls) == 0 && S_ISREG(ls.st_mode) && ls.st_uid == geteuid() && ours(all[i]);
    if (go && unlink(all[i]) == 0) all[(*count)++] = all[i];
    else free(all[i]);
  }
  *names = all;
  free(pids), free(pre), free(dir);
  return st;
}

void tw_output_stale_free(char **names, int count) {
  for (int i = 0; names && i < count; i++) free(names[i]);
  free(names);
}

/* ---------------------------------------------------------------- the lock */

struct tw_output_lock {
  int fd;                    /* −1: the file system has no locks (ENOLCK): nothing is held */
  char *path;
};

/* The holder of the lock on fd (F_GETLK), else the pid written in the file; 0 if unknown. */
static long holder_of(int fd) {
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  if (fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK && fl.l_pid > 0) return (long)fl.l_pid;
  char buf[32] = "";
  ssize_t n = pread(fd, buf, sizeof buf - 1, 0);
  buf[n > 0 ? n : 0] = '\0';
  return atol(buf);
}

/* Give up an attempt: close without unlinking (the file may be another process's lock). */
static void lock_free(tw_output_lock *lk) {
  if (lk->fd >= 0) close(lk->fd);
  free(lk->path);
  free(lk);
}

tw_status tw_output_lock_take(const char *path, tw_output_role role, tw_output_lock **out, tw_error *err) {
  *out = NULL;
  tw_output_lock *lk = calloc(1, sizeof *lk);
  /* what is there must be a lock file of ours (also for callers that skip tw_output_check_path) */
  const tw_status st0 = !lk || !(lk->path = lock_name(path)) ? tw_error_set(err, TW_ENOMEM, "out of memory")
                                                              : check_lock(path, lk->path, role, err);
  if (st0) {
    if (lk) free(lk->path);
    free(lk);
    return st0;
  }
  for (int attempt = 0;; attempt++) {
    lk->fd = open(lk->path, O_RDWR | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC, 0666);
    if (lk->fd < 0) {
      tw_status st = tw_error_set(err, TW_EIO, "output '%s': cannot create its lock file '%s': %s", path, lk->path,
                                  strerror(errno));
      lock_free(lk);
      return st;
    }
    struct flock fl;
    memset(&fl, 0, sizeof fl);
    fl.l_type = F_WRLCK;
    fl.l_whence = SEEK_SET;
    if (fcntl(lk->fd, F_SETLK, &fl) != 0) {
      const int e = errno;
      if (e == ENOLCK || e == EINVAL || e == ENOSYS) { /* no locks on this file system: go on unlocked */
        close(lk->fd);
        lk->fd = -1;
        *out = lk;
        return TW_OK;
      }
      const long pid = (e == EACCES || e == EAGAIN) ? holder_of(lk->fd) : 0;
      char who[48] = "its process unknown";
      if (pid > 0) snprintf(who, sizeof who, "process %ld", pid);
      tw_status st = (e == EACCES || e == EAGAIN)
                         ? tw_error_set(err, TW_EBUSY, "output '%s' is being written by another torrewave run (%s, "
                                        "lock file '%s'); wait for it to finish, or %s", path, who, lk->path,
                                        other_name(role))
                         : tw_error_set(err, TW_EIO, "output '%s': cannot lock '%s': %s", path, lk->path, strerror(e));
      lock_free(lk);
      return st;
    }
    /* A holder that was releasing may have unlinked the file between our open and our lock: then
     * the name belongs to a new file (or none), and the lock must be taken on that one. */
    struct stat a, b;
    if (fstat(lk->fd, &a) == 0 && stat(lk->path, &b) == 0 && a.st_dev == b.st_dev && a.st_ino == b.st_ino) break;
    close(lk->fd);
    lk->fd = -1;
    if (attempt == 8) {
      tw_status st = tw_error_set(err, TW_EBUSY, "output '%s': its lock file '%s' keeps changing (other runs "
                                  "starting and ending); try again", path, lk->path);
      lock_free(lk);
      return st;
    }
  }
  /* check_lock looked at the name before the open: what the open found is checked again on its
   * descriptor, now that the lock is ours (a lock file of ours then holds a pid or nothing), so that
   * a file that came under the name in between (a job file saved as OUT.h5.lock, a FIFO) is left as
   * it is, not truncated, written and removed on release. */
  struct stat fs;
  if (fstat(lk->fd, &fs) != 0 || !S_ISREG(fs.st_mode) || !lock_text_ok(lk->fd)) {
    char *name = lk->path;
    lk->path = NULL;
    lock_free(lk); /* closed, not removed: not ours */
    tw_status st = check_lock(path, name, role, err); /* what is there (our lock is gone: it may open it) */
    if (!st)
      st = tw_error_set(err, TW_EBUSY, "output '%s': its lock file '%s' changed while the lock was being taken; "
                        "try again", path, name);
    free(name);
    return st;
  }
  char pid[32];
  int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
  if (ftruncate(lk->fd, 0) != 0 || pwrite(lk->fd, pid, (size_t)n, 0) != n) { /* only informative */ }
  *out = lk;
  return TW_OK;
}

int tw_output_lock_held(const tw_output_lock *lk) { return lk && lk->fd >= 0; }

void tw_output_lock_release(tw_output_lock *lk) {
  if (!lk) return;
  if (lk->fd >= 0) {
    unlink(lk->path); /* while still held: a waiter that opened it retries on the new name */
    close(lk->fd);
  }
  free(lk->path);
  free(lk);
}

long tw_output_lock_holder(const char *path) {
  char *name = lock_name(path);
  int fd = name ? open(name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC) : -1;
  free(name);
  if (fd < 0) return 0;
  struct flock fl;
  memset(&fl, 0, sizeof fl);
  fl.l_type = F_WRLCK;
  fl.l_whence = SEEK_SET;
  long pid = fcntl(fd, F_GETLK, &fl) == 0 && fl.l_type != F_UNLCK ? (fl.l_pid > 0 ? (long)fl.l_pid : -1) : 0;
  close(fd);
  return pid;
}
