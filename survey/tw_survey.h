/* tw_survey.h — surveys: the many shots of one job (shots = { ... } in the job file), spread over
 * the GPUs of a host and over hosts, restartable.
 *
 *   - Each process builds the medium once (the model, c²dt², damping, wavelets) and runs one worker
 *     thread per GPU it drives, each with its own session (backend and fields created once); a
 *     worker runs shot after shot, resetting its fields in between (tw_solver.h).
 *   - Under mpirun (the launcher's environment says so) the ranks share the shots: rank 0's main
 *     thread hands them out one at a time as workers ask (dynamic balancing: a fast GPU takes more)
 *     and collects every shot's outcome; ranks on one host split its GPUs by their rank on that host
 *     (MPI_Comm_split_type SHARED). Only the main threads call MPI (MPI_THREAD_FUNNELED). Built
 *     without MPI, a survey runs in one process.
 *   - Every shot file is written under a temporary name and renamed when complete; a complete file
 *     carries the job hash (tw_survey_hash), its shot index and source position. A rerun runs only
 *     the selected shots without such a file (--force: all of them), and first removes the
 *     temporary files a killed run left for a shot it is about to run (something else under such a
 *     name, a folder or a link, stays with that shot's other leftovers, and that shot fails as a
 *     single run onto its file would, its advice a survey's: another output directory).
 *   - A shot that fails is reported with its index and reason and the others go on; a worker whose
 *     backend failed (on a GPU the context may be lost) stops, and the other workers take its
 *     share.
 * Nothing here prints: the report and the hooks carry what app/ shows. */
#ifndef TW_SURVEY_H
#define TW_SURVEY_H

#include "tw_common.h"
#include "tw_io.h"
#include "tw_solver.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The longest output directory of a survey, with its NUL: the shots' paths are built in buffers of
 * fixed size (a directory cut short would send the shots elsewhere). */
#define TW_SURVEY_DIR_MAX 1024

typedef struct tw_survey_opts {
  const char *shots;         /* --shots "3-7,12": the shots considered (NULL: all) */
  int force;                 /* --force: rerun shots that already have a complete file */
  const char *directory;     /* -o: instead of output.directory */
  int workers;               /* --workers: sessions per process (0: one per GPU this process drives;
                                one for the CPU kernels, which use every core) */
} tw_survey_opts;

/* One shot's outcome (rank 0 gathers them all). */
typedef struct tw_survey_shot {
  long index;
  double pos[3];
  tw_status status;          /* TW_OK; TW_EINTR: stopped by a signal; else why it failed */
  char *msg;                 /* status != TW_OK: why (the library's whole message: it may name a kept
                                result), owned by the report; NULL for a shot that ran. Not an array:
                                rank 0 keeps every shot's record (up to 10^7 of them), and a
                                TW_ERROR_MSG array in each took 2 KB per shot that ran */
  int rank, worker, device;  /* who ran it (device −1: a CPU kernel) */
  double wall_s, compute_s;  /* the whole shot; its kernel's advance calls */
  double tables_s, open_s, loop_s, close_s;  /* its phases: tables and reset, output open, time
                                                loop (compute and writes), output close */
} tw_survey_shot;

/* One worker (a session: one GPU, or the CPU) and what it did. */
typedef struct tw_survey_worker {
  char host[64];
  int rank, worker, device;
  long shots, failed;
  double setup_s;            /* its session: first CUDA call, backend (fields, c²dt², tables) */
  double busy_s, compute_s;  /* over its shots: wall, and the advance calls */
  double tables_s, open_s, close_s;   /* over its shots (the overhead's parts) */
  char error[TW_ERROR_MSG + 64];  /* why it could not start, or stopped early ("" if it did not): a
                                     few words and the library's whole message (one per worker:
                                     its paths may be long) */
} tw_survey_worker;

/* What rank 0 knows while the survey runs (the progress hook). */
typedef struct tw_survey_progress {
  long total;                /* shots to run */
  long done, failed, running;
  double elapsed_s;          /* since the first shot was handed out */
  double shots_per_s, eta_s; /* eta < 0: unknown yet */
} tw_survey_progress;

typedef struct tw_survey_report {
  int root;                  /* this process reports (rank 0, or no MPI) */
  int rank, nranks, mpi;     /* mpi: launched by mpirun, MPI in use */
  char kernel[32];
  char hash[24];             /* the job hash the shot files carry */
  char directory[TW_SURVEY_DIR_MAX];   /* a longer one is refused (tw_survey_check_dir) */
  long nshots;               /* in the job */
  long selected;             /* by --shots */
  long complete;             /* of those, complete before this run (skipped) */
  long foreign;              /* of those, a file of another job or shot is in the way (rerun) */
  long stale_removed;        /* temporary files of killed runs removed (the passed hook) */
  long to_run, done, failed, not_run;   /* not_run: no worker left, or stopped first */
  int stopped;               /* a signal stopped the survey */
  tw_phases setup;           /* this process: model, medium; the wait for the workers' sessions */
  double wall_s;
  /* root only: */
  int nwarn;                 /* the job validation's warnings (what `check` prints), each once: those
                                of every rank's medium (the passed hook; none when nothing ran) */
  char warn[TW_VALIDATE_MSGS][TW_ERROR_MSG];
  tw_survey_shot *shots;     /* [nresults], in the order they finished */
  long nresults;
  tw_survey_worker *workers; /* [nworkers] */
  int nworkers;
  int threads;               /* CPU threads per worker (CPU kernels) */
  int agreed;                /* the error returned is every rank's, the same (the plan's, the job's
                                refusal, no worker anywhere): rank 0's report of it is enough, and no
                                rank ends the MPI job */
  struct survey_comm *abort; /* internal: after an error, tw_survey_report_free ends the MPI job */
  struct survey_comm *finalize; /* internal: after an agreed error, tw_survey_report_free ends MPI */
} tw_survey_report;

typedef struct tw_survey_hooks {
  /* Rank 0, once the plan is made (counts and hash in rep) and before any shot runs. */
  void (*plan)(void *user, const tw_survey_report *rep);
  /* Rank 0, once the job has passed every check that can refuse it and before any shot runs: the
   * validation's warnings are in rep->warn (rep->nwarn, maybe 0: the job is said once, not per
   * shot or rank), and the temporary files of killed runs were removed (rep->stale_removed of
   * them, maybe 0). */
  void (*passed)(void *user, const tw_survey_report *rep);
  /* Rank 0: after each finished shot (with it) and about once a second (shot NULL). */
  void (*progress)(void *user, const tw_survey_progress *p, const tw_survey_shot *shot);
  /* Any rank: non-zero to stop (no new shots; running shots stop at their next block, and leave
   * nothing under their names). */
  int (*should_stop)(void *user);
  void *user;
} tw_survey_hooks;

/* Run the job's survey (job->nshots > 0). TW_OK when the survey ran, even with failed shots
 * (rep->failed, rep->not_run say it); an error when it could not start (model, output directory,
 * MPI). Free rep with tw_survey_report_free, also after an error. */
tw_status tw_survey_run(tw_job *job, const tw_survey_opts *opts, const tw_survey_hooks *hooks, tw_survey_report *rep,
                        tw_error *err);
void tw_survey_report_free(tw_survey_report *rep);

/* --shots text → mask[nshots] (1: selected): indices and ranges, "3-7,12"; shots count from 0.
 * mask NULL: the text's form alone (no job needed; the command line's usage check, exit 2), not
 * whether its shots exist. */
tw_status tw_survey_select(const char *text, long nshots, unsigned char *mask, tw_error *err);
/* "<dir>/shot-00042.h5" (five digits at least, job order from 0). */
void tw_survey_shot_path(const char *dir, long index, char *buf, size_t len);
/* The output directory as the run will make it (`check`): at most TW_SURVEY_DIR_MAX − 1 bytes (the
 * run refuses a longer one alike, TW_ECONFIG), and every component of dir that exists is a
 * directory (the run creates the missing ones). */
tw_status tw_survey_check_dir(const char *dir, tw_error *err);
/* No file in dir that the survey's runs replace, truncate or remove — a shot's file, its XDMF sidecar,
 * with output.segy its SEG-Y file, its lock file, a killed run's temporary of it — is one of the job's
 * inputs (the job file, the model, a wavelet file: tw_output_check_path's rule, applied to every shot
 * at once): TW_EINVAL naming the shot, the file and the input. Every shot of the job, not only those
 * --shots selects: the plan removes the temporaries of any. `check`, and `run` before its plan makes
 * the directory (a shot failed on it, exit 3, and the plan removed an input named like a temporary). */
tw_status tw_survey_check_inputs(const tw_job *job, const char *dir, tw_error *err);
/* No shot of the selection (shots: --shots LIST, NULL: all) that a run would run, its file not
 * complete, has a file under its XDMF sidecar's or SEG-Y file's name that torrewave did not write
 * (tw_output_check_theirs): TW_EINVAL naming the shot and the file. `check`; `run` checks the shots
 * its plan runs (a shot failed on it, exit 3, and the rerun that the survey advised failed it again). */
tw_status tw_survey_check_theirs(const tw_job *job, const char *dir, const char *shots, tw_error *err);
/* The CPU threads of this process's workers in all (--workers N, 0 for the default; CPU kernels:
 * solver.threads each, else their share of the CPUs) within 4 per CPU (tw_check_threads), and their
 * memory with that of the other ranks on this host (ranks of them in all, this one included, each
 * with the same job and --workers: every rank holds its own medium and sessions) within the host's
 * available memory: `run` refuses the job (TW_ECONFIG) before its first shot, counting the ranks
 * that share the host (MPI_COMM_TYPE_SHARED), `check` alike (ranks: those of its launch here). */
tw_status tw_survey_check_workers(const tw_job *job, const char *kernel, int workers, int ranks, tw_error *err);
/* The job hash the shot files carry, 16 hex digits: tw_job.hash (the job's settings that change a
 * shot's numbers), the update's arithmetic (TW_UPDATE_FORM) and the version. Not the kernel: every
 * kernel, CPU or GPU, computes the same bits, so a survey restarted on another kernel keeps the
 * shots already done. */
void tw_survey_hash(const tw_job *job, const char *kernel, char out[24]);

/* Launched as one of several ranks (mpirun, srun: from the launcher's environment, without
 * initialising MPI)? Returns 1 and the rank and size, else 0. */
int tw_survey_launched(int *rank, int *size);
int tw_survey_mpi_built(void);

/* A launch's start. `run` reads its command line and job file before MPI starts (a survey needs
 * MPI, a single-shot job does not), on every rank of a launch, so that every rank would say an error
 * found there. Under a launcher of several ranks, in a build with MPI, every rank then calls
 * tw_survey_join, with or without an error (Open MPI ends a job in which some ranks start MPI and
 * others exit without it): MPI starts and rank 0 gathers what each rank found.
 *   mine: this rank's error (NULL: its job loaded); usage: it is a usage error (of the command line);
 *   survey: its job has shots; job: its job file.
 * TW_OK: every rank loaded a job, all surveys or all single-shot jobs; MPI stays started for a
 * survey (tw_survey_run goes on with it) and is ended for a single-shot job (rank 0 runs it alone).
 * Else, with l->agreed, every rank's error: the first failing rank's (another than rank 0 named with
 * its rank and host, its reason whole), or that the ranks' jobs are not of one kind; rank 0 alone
 * says it. Without l->agreed, an MPI failure that is this rank's own: each says it. Then
 * tw_survey_launch_end (MPI_Finalize, or MPI_Abort without l->agreed). */
typedef struct tw_survey_launch {
  int rank;
  int agreed;                /* the error returned is every rank's: rank 0's report of it is enough */
  int usage;                 /* ... and it is a usage error */
  struct survey_comm *abort, *finalize; /* internal: for tw_survey_launch_end */
} tw_survey_launch;
tw_status tw_survey_join(const tw_error *mine, int usage, int survey, const char *job, tw_survey_launch *l,
                         tw_error *err);
void tw_survey_launch_end(tw_survey_launch *l);

/* A command whose result is one for the whole launch (check's report, reference's file) under a
 * launcher of several ranks: rank 0 alone runs it, and the other ranks wait for it, so that none ends
 * before it (a launcher may stop a job's other tasks once one has ended: Slurm's WaitTime, srun -W).
 * tw_survey_solo_begin: on every rank at once; MPI starts (in a build with MPI: without it the other
 * ranks cannot wait, and end at once); s->rank is this rank (0 without a launcher).
 * tw_survey_solo_end: the ranks meet, then MPI ends. Rank 0 calls it once its command is done (also
 * when the command exits early, after an option's help), the others at once: they return when rank
 * 0 is done, having polled a barrier every millisecond (MPI's blocking barrier would spin, taking a
 * CPU from rank 0's command on the same host: check's calibration). */
typedef struct tw_survey_solo {
  int rank;
  int host_ranks;           /* the launch's ranks on this host, this one included (1 without a launcher) */
  struct survey_comm *comm; /* internal */
} tw_survey_solo;
tw_status tw_survey_solo_begin(tw_survey_solo *s, tw_error *err);
tw_status tw_survey_solo_end(tw_survey_solo *s, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif
