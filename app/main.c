/* torrewave — 3D acoustic wave simulation for seismic forward modelling. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_survey.h"

static const tw_command *const commands[] = {&tw_cmd_run,   &tw_cmd_check, &tw_cmd_compare, &tw_cmd_reference,
                                             &tw_cmd_export, &tw_cmd_bench, &tw_cmd_info};
#define NCMD ((int)(sizeof commands / sizeof commands[0]))

static void usage(FILE *out) {
  fprintf(out,
          "torrewave %s — 3D acoustic wave simulator (DiamondTorre GPU kernels, CPU reference)\n\n"
          "usage: torrewave COMMAND [options]\n\ncommands:\n",
          TW_VERSION);
  for (int i = 0; i < NCMD; i++) fprintf(out, "  %-10s %s\n", commands[i]->name, commands[i]->summary);
  fprintf(out, "\n`torrewave help COMMAND` or `torrewave COMMAND --help` for a command's options. Options and\n"
               "operands come in any order, --name=value is --name value, and `--` ends the options (a job file\n"
               "named -x.cfg: `torrewave run -- -x.cfg`).\n"
               "Job-file reference: README.md.\n");
}

int tw_app_fail(const tw_error *err) {
  fprintf(stderr, "torrewave: error: %s\n", err->msg[0] ? err->msg : tw_status_text(err->code));
  return TW_EXIT_FAIL;
}

/* Where tw_app_usage puts its message instead of saying it (tw_app_usage_keep), or NULL. */
static char *usage_kept;
static size_t usage_kept_n;

void tw_app_usage_keep(char *buf, size_t n) { usage_kept = buf, usage_kept_n = n; }

int tw_app_usage(const char *cmd, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  if (usage_kept) {
    vsnprintf(usage_kept, usage_kept_n, fmt, ap);
  } else {
    fprintf(stderr, "torrewave %s: ", cmd);
    vfprintf(stderr, fmt, ap);
    fprintf(stderr, "\n(see `torrewave %s --help`)\n", cmd);
  }
  va_end(ap);
  return TW_EXIT_USAGE;
}

void tw_app_fmt_duration(double s, char *buf, size_t n) {
  if (!(s >= 0) || s > 100 * 86400.0) snprintf(buf, n, "--");
  else if (s >= 86400) snprintf(buf, n, "%dd%02dh", (int)(s / 86400), (int)(s / 3600) % 24);
  else if (s >= 3600) snprintf(buf, n, "%dh%02dm", (int)(s / 3600), (int)(s / 60) % 60);
  else if (s >= 60) snprintf(buf, n, "%dm%02ds", (int)(s / 60), (int)s % 60);
  else snprintf(buf, n, s < 1 ? "%.2fs" : s < 10 ? "%.1fs" : "%.0fs", s);
}

double tw_app_setup_seconds(const tw_phases *p) {
  double s = 0;
  for (int i = 0; i < p->n && strcmp(p->e[i].name, "time loop") != 0; i++)
    if (strncmp(p->e[i].name, "backend: ", 9) != 0) s += p->e[i].s; /* (parts of "backend") */
  return s;
}

void tw_app_print_phases(FILE *o, const tw_phases *p, double wall_s) {
  fprintf(o, "torrewave: where the time went (s):\n");
  for (int i = 0; i < p->n; i++) {
    const int part = strncmp(p->e[i].name, "backend: ", 9) == 0;
    fprintf(o, "  %s%-44s %9.3f  %5.1f %%\n", part ? "  " : "", part ? p->e[i].name + 9 : p->e[i].name, p->e[i].s,
            wall_s > 0 ? 100.0 * p->e[i].s / wall_s : 0.0);
  }
  if (tw_phases_get(p, "time loop") > 0)
    fprintf(o, "  %-44s %9.3f  (set-up %.3f)\n", "wall", wall_s, tw_app_setup_seconds(p));
  else
    fprintf(o, "  %-44s %9.3f\n", "wall", wall_s);
}

/* Under a launcher of several ranks (mpirun, srun) every rank runs the same command line: what it
 * only reads and says (usage, help, the version) is said by rank 0 alone, as errors are (cmd_run.c),
 * and every rank exits with its status. */
static int quiet_rank(void) {
  int rank, size;
  return tw_survey_launched(&rank, &size) && rank > 0;
}

/* A solo command (check, reference: one report, one file for the launch) under a launcher: rank 0
 * alone runs it; the other ranks say nothing and wait for it in MPI (tw_survey_solo_end), then exit
 * 0: none ends before rank 0, and a launcher that stops the other tasks once one has ended does not
 * stop rank 0's. Rank 0 meets them as it exits (atexit: also after the help an option prints, which
 * exits at once), what it said flushed first. */
static tw_survey_solo solo;

static void solo_end(void) {
  tw_error err = {0};
  fflush(NULL);
  if (tw_survey_solo_end(&solo, &err)) tw_app_fail(&err);
}

int tw_app_host_ranks(void) { return solo.host_ranks > 0 ? solo.host_ranks : 1; }

static int run_solo(const tw_command *c, int argc, char **argv) {
  tw_error err = {0};
  tw_status st = tw_survey_solo_begin(&solo, &err);
  if (!st && solo.rank == 0) {
    atexit(solo_end);
    return c->run(argc, argv);
  }
  if (!st) st = tw_survey_solo_end(&solo, &err);
  if (st && solo.rank > 0) tw_error_prefix(&err, "rank %d", solo.rank);
  return st ? tw_app_fail(&err) : TW_EXIT_OK;
}

int tw_app_long(const char *s, long lo, long hi, long *out) {
  if (!*s || isspace((unsigned char)*s)) return 0; /* (strtol skips leading blanks) */
  char *end;
  errno = 0;
  const long n = strtol(s, &end, 10);
  if (errno || *end || n < lo || n > hi) return 0;
  *out = n;
  return 1;
}

int tw_app_double(const char *s, double *out) {
  if (!*s || isspace((unsigned char)*s)) return 0;
  char *end;
  errno = 0;
  const double x = strtod(s, &end);
  if (*end || !isfinite(x) || (errno == ERANGE && x != 0)) return 0; /* (an underflow to 0 is 0) */
  *out = x;
  return 1;
}

int tw_app_is_help(const char *arg) { return strcmp(arg, "-h") == 0 || strcmp(arg, "--help") == 0; }

static int opt_named(const char *name, const char *arg, size_t len) {
  return name && strlen(name) == len && strncmp(name, arg, len) == 0;
}

/* arg is one of the command's options (-o, --set, --set=..., -h, --help): taken as another's value, it is a
 * value forgotten. */
static int is_option(const tw_app_args *it, const char *arg) {
  if (arg[0] != '-' || !arg[1]) return 0;
  const char *eq = strncmp(arg, "--", 2) == 0 ? strchr(arg, '=') : NULL;
  const size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
  for (int k = 0; k < it->nopts; k++)
    if (opt_named(it->opts[k].shrt, arg, len) || opt_named(it->opts[k].lng, arg, len)) return 1;
  return !eq && tw_app_is_help(arg);
}

int tw_app_next(tw_app_args *it, const char **value) {
  *value = NULL;
  if (it->i >= it->argc) return TW_APP_END;
  const char *s = it->argv[it->i++];
  if (!it->operands_only && strcmp(s, "--") == 0) {
    it->operands_only = 1;
    return tw_app_next(it, value);
  }
  if (it->operands_only || s[0] != '-' || !s[1]) return *value = s, TW_APP_OPERAND;
  const char *eq = strncmp(s, "--", 2) == 0 ? strchr(s, '=') : NULL;
  const size_t len = eq ? (size_t)(eq - s) : strlen(s);
  for (int k = 0; k < it->nopts; k++) {
    const tw_app_opt *o = &it->opts[k];
    if (!opt_named(o->shrt, s, len) && !opt_named(o->lng, s, len)) continue;
    if (!o->value && eq) return tw_app_usage(it->cmd, "%.*s takes no value, got \"%s\"", (int)len, s, s), TW_APP_BAD;
    if (!o->value) return k;
    if (eq) *value = eq + 1;
    else if (it->i < it->argc) *value = it->argv[it->i++];
    else return tw_app_usage(it->cmd, "%s needs a value: %s %s", s, s, o->value), TW_APP_BAD;
    /* The value missing before another option (`-o -q`): -q would have been the output's name */
    if (!eq && is_option(it, *value))
      return tw_app_usage(it->cmd, "%s needs a value: got the option \"%s\" (a value spelled so: %s=%s)", s, *value,
                          o->lng ? o->lng : s, *value),
             TW_APP_BAD;
    /* Given twice, an option of one value kept the last and dropped the first without a word (`-o a.h5
     * ... -o b.h5` wrote b.h5 alone) */
    if (!o->repeat && k < TW_APP_MAXOPTS) {
      if (it->given[k])
        return tw_app_usage(it->cmd, "%s%s%s given twice: got \"%s\" and \"%s\"; allowed once", o->shrt ? o->shrt : "",
                            o->shrt && o->lng ? "/" : "", o->lng ? o->lng : "", it->given[k], *value),
               TW_APP_BAD;
      it->given[k] = *value;
    }
    return k;
  }
  if (!eq && tw_app_is_help(s)) /* -h / --help anywhere among the options, as before the operands */
    for (int c = 0; c < NCMD; c++)
      if (strcmp(commands[c]->name, it->cmd) == 0) {
        if (!quiet_rank()) commands[c]->help(stdout);
        exit(TW_EXIT_OK); /* (app/ only: nothing is open yet while the options are read; a solo command's
                             rank 0 meets the other ranks on the way out) */
      }
  return tw_app_usage(it->cmd, "unknown option \"%s\"", s), TW_APP_BAD;
}

/* The options of run, check and reference (job_opt_cmds: which takes which). */
enum { JOB_SET, JOB_OUTPUT, JOB_QUIET, JOB_VERBOSE, JOB_SHOTS, JOB_FORCE, JOB_WORKERS, JOB_RESUME, JOB_NOPTS };
static const tw_app_opt job_opts[JOB_NOPTS] = {
    [JOB_SET] = {"-s", "--set", "key=value", 1}, [JOB_OUTPUT] = {"-o", "--output", "FILE.h5"},
    [JOB_QUIET] = {"-q", "--quiet", NULL},    [JOB_VERBOSE] = {"-v", "--verbose", NULL},
    [JOB_SHOTS] = {NULL, "--shots", "LIST"},  [JOB_FORCE] = {NULL, "--force", NULL},
    [JOB_WORKERS] = {NULL, "--workers", "N"}, [JOB_RESUME] = {NULL, "--resume", NULL}};

/* The commands that take each of job_opts: one that does nothing in a command is refused there (as
 * another command's option), not ignored — check has no progress to quiet and reruns no shots (-q, --force),
 * reference says nothing of its phases and runs no survey (-v, --shots, --workers). */
enum { JOB_RUN = 1, JOB_CHECK = 2, JOB_REFERENCE = 4 };
static const int job_opt_cmds[JOB_NOPTS] = {
    [JOB_SET] = JOB_RUN | JOB_CHECK | JOB_REFERENCE, [JOB_OUTPUT] = JOB_RUN | JOB_CHECK | JOB_REFERENCE,
    [JOB_QUIET] = JOB_RUN | JOB_REFERENCE,         [JOB_VERBOSE] = JOB_RUN | JOB_CHECK,
    [JOB_SHOTS] = JOB_RUN | JOB_CHECK,             [JOB_FORCE] = JOB_RUN,
    [JOB_WORKERS] = JOB_RUN | JOB_CHECK,           [JOB_RESUME] = JOB_RUN};

/* The option loop of tw_app_job_args: returns 0 or a usage status (a->sets still owned). */
static int parse_job_args(const char *cmd, int argc, char **argv, tw_job_args *a) {
  const int which = strcmp(cmd, "run") == 0 ? JOB_RUN : strcmp(cmd, "check") == 0 ? JOB_CHECK : JOB_REFERENCE;
  tw_app_args it = {cmd, argc, argv, job_opts, JOB_NOPTS, 1, 0, {0}};
  const char *v;
  long n;
  for (int k, at = it.i; (k = tw_app_next(&it, &v)) != TW_APP_END; at = it.i) {
    /* One that it does not take is named as another command's ("unknown option \"-q\"" sent the
     * reader to look for a typo in an option run takes); argv[at] is how it was spelled */
    if (k >= 0 && !(job_opt_cmds[k] & which)) {
      const int o = job_opt_cmds[k] & ~which;
      const char *name = it.argv[at];
      return tw_app_usage(cmd, "\"%.*s\" is an option of %s%s%s, not of %s (it would do nothing here)",
                          (int)strcspn(name, "="), name, o & JOB_RUN ? "run" : "",
                          o & JOB_RUN && o & ~JOB_RUN ? " and " : "",
                          o & JOB_CHECK ? "check" : o & JOB_REFERENCE ? "reference" : "", cmd);
    }
    switch (k) {
      case TW_APP_BAD: return TW_EXIT_USAGE;
      case TW_APP_OPERAND:
        if (a->job) return tw_app_usage(cmd, "more than one job file (\"%s\" and \"%s\")", a->job, v);
        a->job = v;
        break;
      case JOB_SET:
        if (!strchr(v, '=')) return tw_app_usage(cmd, "--set takes key=value, got \"%s\"", v);
        a->sets[a->nsets++] = v;
        break;
      case JOB_OUTPUT: a->output = v; break;
      case JOB_QUIET: a->quiet = 1; break;
      case JOB_VERBOSE: a->verbose = 1; break;
      case JOB_SHOTS: {
        tw_error e = {0};  /* the list's form is the command line's (exit 2); whether its shots exist, the job's */
        if (tw_survey_select(v, 0, NULL, &e)) return tw_app_usage(cmd, "%s", e.msg);
        a->shots = v;
        break;
      }
      case JOB_FORCE: a->force = 1; break;
      case JOB_WORKERS:
        if (!tw_app_long(v, 1, 64, &n)) return tw_app_usage(cmd, "--workers takes a number 1..64, got \"%s\"", v);
        a->workers = (int)n;
        break;
      case JOB_RESUME: a->resume = 1; break;
    }
  }
  return a->job ? 0 : tw_app_usage(cmd, "no job file given");
}

int tw_app_job_args(const char *cmd, int argc, char **argv, tw_job_args *a) {
  memset(a, 0, sizeof *a);
  a->sets = calloc((size_t)argc + 1, sizeof *a->sets);
  if (!a->sets) return tw_app_usage(cmd, "out of memory");
  int rc = parse_job_args(cmd, argc, argv, a);
  if (rc) tw_app_job_args_free(a);
  return rc;
}

void tw_app_job_args_free(tw_job_args *a) {
  free(a->sets);
  a->sets = NULL;
}

const char *tw_app_survey_option(const tw_job_args *a, const tw_job *job) {
  if (job->nshots) return NULL;
  return a->shots ? "--shots" : a->force ? "--force" : a->workers ? "--workers" : NULL;
}

int tw_app_load_job(const char *cmd, int argc, char **argv, tw_job_args *a, tw_job **job) {
  int rc = tw_app_job_args(cmd, argc, argv, a);
  if (rc) return rc;
  tw_error err = {0};
  if (tw_job_load(a->job, a->sets, a->nsets, job, &err)) {
    tw_app_job_args_free(a);
    return tw_app_fail(&err);
  }
  const char *opt = tw_app_survey_option(a, *job);
  if (opt) {
    rc = tw_app_usage(cmd, "%s is a survey's option and %s has no shots group (shots = { ... })", opt, a->job);
    tw_job_destroy(*job), *job = NULL, tw_app_job_args_free(a);
  }
  return rc;
}

int main(int argc, char **argv) {
  /* A file grown past the size limit (ulimit -f, RLIMIT_FSIZE) kills the process by default, which
   * leaves a half-written temporary beside the output and no message. Ignored, the write fails with
   * EFBIG and every command's own failure path runs: one line with the file and the reason, the
   * earlier output whole, the temporary removed (tests/cli/output_safety.sh). */
  signal(SIGXFSZ, SIG_IGN);
  const int quiet = quiet_rank();
  if (argc < 2) {
    if (!quiet) usage(stderr);
    return TW_EXIT_USAGE;
  }
  const char *name = argv[1];
  if (tw_app_is_help(name)) {
    if (!quiet) usage(stdout);
    return TW_EXIT_OK;
  }
  if (strcmp(name, "--version") == 0) {
    if (!quiet) printf("torrewave %s\n", TW_VERSION);
    return TW_EXIT_OK;
  }
  int help = strcmp(name, "help") == 0;
  if (help) {
    if (argc < 3 || strcmp(argv[2], "help") == 0) { /* (help help: this) */
      if (!quiet) usage(stdout);
      return TW_EXIT_OK;
    }
    name = argv[2];
  }
  for (int i = 0; i < NCMD; i++) {
    if (strcmp(commands[i]->name, name) != 0) continue;
    if (help || (argc > 2 && tw_app_is_help(argv[2]))) {
      if (!quiet) commands[i]->help(stdout);
      return TW_EXIT_OK;
    }
    if (commands[i]->solo) return run_solo(commands[i], argc - 1, argv + 1);
    return commands[i]->run(argc - 1, argv + 1);
  }
  if (!quiet) {
    fprintf(stderr, "torrewave: unknown command \"%s\"\n\n", name);
    usage(stderr);
  }
  return TW_EXIT_USAGE;
}
