/* survey_internal.h — internal to survey/: the transport between the ranks (comm.c: MPI, or
 * nothing in a build without it) and the plan (plan.c). */
#ifndef TW_SURVEY_INTERNAL_H
#define TW_SURVEY_INTERNAL_H

#include "tw_survey.h"

/* A worker's message to the dispatcher on rank 0: the shot it finished (if any), its running
 * totals, and whether it wants another shot or has stopped. Plain bytes (the ranks run the same
 * binary). */
enum { REQ_RESULT = 1, REQ_RETIRED = 2 };
typedef struct survey_req {
  int flags;
  tw_survey_shot result;     /* flags & REQ_RESULT (its msg pointer does not travel: see msg) */
  char msg[TW_ERROR_MSG];    /* result.status != TW_OK: why, whole (the record on rank 0 keeps a copy
                                of it for a failed shot only) */
  tw_survey_worker stats;    /* its identity and totals so far */
} survey_req;

/* What a rank tells rank 0 at the start. */
#define SURVEY_MAX_WORKERS 64
typedef struct survey_hello {
  int nworkers;              /* 0: the rank cannot take part (error says why) */
  int device[SURVEY_MAX_WORKERS];
  char host[64];
  char error[TW_ERROR_MSG];  /* whole (one per rank, once per job) */
} survey_hello;

/* ---------------------------------------------------------------- comm.c */
typedef struct survey_comm survey_comm;

/* MPI when launched by mpirun/srun and built with it: rank and size, and the rank and size among
 * the ranks of this host; else rank 0 of 1 (*c = NULL). A launch of several ranks in a build
 * without MPI is an error (each would run the whole survey). */
tw_status comm_init(survey_comm **c, int *rank, int *size, int *local_rank, int *local_size, tw_error *err);
tw_status comm_bcast(survey_comm *c, void *buf, int bytes, tw_error *err);
/* Rank 0 gets every rank's `mine` (bytes each) in all[rank]; others pass all = NULL. */
tw_status comm_gather(survey_comm *c, const void *mine, int bytes, void *all, tw_error *err);
/* Every rank of this host (MPI_COMM_TYPE_SHARED) gets the `mine` (bytes each) of every rank of the
 * host in all[local rank]; without MPI, its own in all[0]. */
tw_status comm_local_allgather(survey_comm *c, const void *mine, int bytes, void *all, tw_error *err);
/* Not rank 0: send a request, wait for the reply (a shot index, or −1: no more). */
tw_status comm_request(survey_comm *c, const survey_req *req, long *reply, tw_error *err);
/* Rank 0: a waiting request, if any (*got = 0: none): from rank *src. */
tw_status comm_poll(survey_comm *c, survey_req *req, int *src, int *got, tw_error *err);
tw_status comm_reply(survey_comm *c, int src, long reply, tw_error *err);
/* Every rank waits here until all have come (no MPI: at once), polling every millisecond: MPI's
 * blocking barrier spins, and a rank waiting for another's long command would take a CPU from it. */
tw_status comm_barrier(survey_comm *c, tw_error *err);
/* The communicator's own resources freed; MPI stays started (tw_survey_join: tw_survey_run goes on
 * with it and makes its own). */
void comm_free(survey_comm *c);
void comm_finalize(survey_comm *c);
/* After an error on one rank that the others cannot know of: end the whole job (MPI_Abort). */
void comm_abort(survey_comm *c);

/* ---------------------------------------------------------------- plan.c */
/* Set in a shot index of the plan's list (and so in the index handed to a worker): under a name
 * of that shot's temporaries the plan found something that is not a regular file (a folder, a
 * link), which it leaves; the worker checks the shot's temporaries as a single run does
 * (tw_output_stale), so the shot fails with a single run's message. Only then: that check reads
 * the whole directory. Above any shot index (io/job.c: at most 10^7 shots). */
#define SURVEY_CHECK_TEMPS (1L << 30)

/* Rank 0: the output directory made, the selection, the shots with a complete file of this job
 * (skipped unless force) and the shots to run (todo, job order; rep: nshots, selected, complete,
 * foreign, to_run). Removes nothing: the job may still be refused (the medium's validation). */
tw_status survey_plan(const tw_job *job, const tw_survey_opts *opts, tw_survey_report *rep, long **todo,
                      tw_error *err);
/* Rank 0, once no check can refuse the job any more (a refused job leaves the directory as it
 * was) and before the first shot is handed out: the temporary files and lock files that killed
 * runs left, removed (rep->stale_removed counts the temporaries); a shot of todo with something
 * else under such a name carries SURVEY_CHECK_TEMPS, and keeps its leftovers (as a refused single
 * run, it removes none). */
tw_status survey_clean(tw_survey_report *rep, long *todo, tw_error *err);
/* dir fits TW_SURVEY_DIR_MAX, else TW_ECONFIG naming it, its length and the limit. */
tw_status survey_dir_fits(const char *dir, tw_error *err);
/* The first component of dir (a prefix of it) that does not exist, in out; "" when dir exists. */
void survey_first_missing(const char *dir, char *out, size_t n);

#endif
