/* app.h — the torrewave command: one file per subcommand (cmd_*.c), shared helpers here.
 * Only app/ prints and exits. Each subcommand returns the process exit status:
 * 0 success, 1 failure (bad input, run error), 2 usage error, 3 a survey ran but shots failed (or
 * were not run), 75 stopped after a checkpoint (resumable: `run --resume`; 75 is sysexits.h's
 * EX_TEMPFAIL, "try again later"), 130 interrupted. */
#ifndef TW_APP_H
#define TW_APP_H

#include <stdio.h>

#include "tw_common.h"

#define TW_EXIT_OK 0
#define TW_EXIT_FAIL 1
#define TW_EXIT_USAGE 2
#define TW_EXIT_SHOTS 3
#define TW_EXIT_RESUMABLE 75
#define TW_EXIT_INTR 130

typedef struct tw_command {
  const char *name;
  const char *summary;                 /* one line for `torrewave --help` */
  int (*run)(int argc, char **argv);   /* argv[0] is the subcommand name */
  void (*help)(FILE *out);             /* `torrewave help NAME`, `torrewave NAME --help` */
  int solo;                            /* under a launcher of several ranks, rank 0 alone runs it (main.c):
                                          every command but run (a survey spreads over the ranks) */
} tw_command;

extern const tw_command tw_cmd_run, tw_cmd_check, tw_cmd_info, tw_cmd_bench, tw_cmd_compare, tw_cmd_reference,
    tw_cmd_export;

/* "torrewave: error: <message>" on stderr; returns TW_EXIT_FAIL. */
int tw_app_fail(const tw_error *err);
/* Print a usage error for a subcommand and return TW_EXIT_USAGE. */
int tw_app_usage(const char *cmd, const char *fmt, ...);
/* From now on tw_app_usage keeps its message (without the command and the help line) in buf[n]
 * instead of saying it; buf NULL: says it again. `run` under a launcher: rank 0 alone says what the
 * ranks found (cmd_run.c). */
void tw_app_usage_keep(char *buf, size_t n);
/* True when argv[i] is -h or --help. */
int tw_app_is_help(const char *arg);

/* The option loop every subcommand shares, as POSIX utilities read their arguments: options and
 * operands in any order; "--" ends the options (every argument after it is an operand: a job file
 * named "-x.cfg"); "-" alone is an operand; "--name=value" is "--name value". */
typedef struct tw_app_opt {
  const char *shrt, *lng;    /* "-o", "--output" (either may be NULL) */
  const char *value;         /* what its value is ("FILE.h5", for "-o needs a value: -o FILE.h5"); NULL: a flag */
  int repeat;                /* a value option that may be given more than once (--set) */
} tw_app_opt;
#define TW_APP_MAXOPTS 16
typedef struct tw_app_args {
  const char *cmd;           /* for the usage errors */
  int argc;
  char **argv;               /* argv[0] is the subcommand name */
  const tw_app_opt *opts;
  int nopts;                 /* at most TW_APP_MAXOPTS */
  int i;                     /* the next argument (start at 1) */
  int operands_only;         /* after "--" */
  const char *given[TW_APP_MAXOPTS]; /* the value each option of one value was given (start NULL) */
} tw_app_args;
#define TW_APP_END (-1)
#define TW_APP_OPERAND (-2)
#define TW_APP_BAD (-3)
/* The next argument: the index of its option in opts (*value: its value; NULL for a flag),
 * TW_APP_OPERAND (*value: the operand), TW_APP_END, or TW_APP_BAD once a usage error is printed (an
 * unknown option, a value missing or given to a flag, a value that is one of opts or -h/--help: `-o -q`,
 * where --output=-q names such a value; an option of one value given twice, which kept the last):
 * then return TW_EXIT_USAGE. -h / --help that
 * opts does not declare prints the command's help and exits 0 (options come in any order). */
int tw_app_next(tw_app_args *it, const char **value);

/* A numeric option's value, the whole argument: no blanks around it and nothing after it (`--gb 2x`
 * was 2, `--steps " 1"` 1), within range (a grid of 4294967344 cells wrapped to 48). Return 1 with
 * *out set, else 0: the caller names the option, the value and what is allowed (tw_app_usage). */
int tw_app_long(const char *s, long lo, long hi, long *out);
int tw_app_double(const char *s, double *out); /* finite */

/* The ranks of this launch on this host (main.c: a solo command's, MPI_COMM_TYPE_SHARED), this one
 * included; 1 without a launcher: `check` counts them as `run` does, each holding its own memory. */
int tw_app_host_ranks(void);

/* Options shared by run, check and reference: JOB [--set k=v]... [-o FILE]; run and check also take
 * the survey's --shots LIST, --workers N and -v; run and reference -q; run alone --force and --resume. */
typedef struct tw_job_args {
  const char *job;
  const char **sets;
  int nsets;
  const char *output;
  int quiet;
  int resume;                          /* --resume (run only) */
  int verbose;               /* -v: the set-up's phases (run), every shot's line (survey) */
  const char *shots;         /* --shots 3-7,12 */
  int force;                 /* --force */
  int workers;               /* --workers N (0: default) */
} tw_job_args;
/* Parse JOB and the options cmd takes of those above, through tw_app_next. Unknown options, and those
 * that do nothing in cmd (check -q) → usage error (returns != 0). */
int tw_app_job_args(const char *cmd, int argc, char **argv, tw_job_args *a);
void tw_app_job_args_free(tw_job_args *a);

struct tw_job;
/* Parse the job arguments and load the job (overrides applied). Returns 0 with *job set, or the
 * exit status after printing the usage or job-file error (a is freed then). */
int tw_app_load_job(const char *cmd, int argc, char **argv, tw_job_args *a, struct tw_job **job);
/* The survey's option (--shots, --force, --workers) given for a job without shots, which would do
 * nothing there (`check job.cfg --shots 3` said ok), or NULL: a usage error for run and check. */
const char *tw_app_survey_option(const tw_job_args *a, const struct tw_job *job);

/* "42s", "3m07s", "2h05m"; "--" when unknown (negative or absurd). */
void tw_app_fmt_duration(double s, char *buf, size_t n);

struct tw_phases;
/* The set-up: the phases before the time loop. */
double tw_app_setup_seconds(const struct tw_phases *p);
/* The phases of a run, one line each, with their share of the wall time. */
void tw_app_print_phases(FILE *o, const struct tw_phases *p, double wall_s);

/* `run` of a survey job (survey_ui.c): the survey's progress line, summary and exit status.
 * stop: set by SIGINT/SIGTERM. */
#include <signal.h>
int tw_app_run_survey(const tw_job_args *a, struct tw_job *job, volatile sig_atomic_t *stop);

#endif
