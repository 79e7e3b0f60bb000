/* comm.c — the ranks' transport (survey_internal.h): MPI point-to-point between every rank's main
 * thread and rank 0's, a broadcast and a gather at the start and the end. Every MPI call is
 * checked: the communicator returns errors (MPI_ERRORS_RETURN) and each becomes a tw_error naming
 * the call and MPI's own text.
 *
 * Why a dispatcher on rank 0 rather than a shared counter (MPI_Fetch_and_op on a window): rank 0
 * must learn each shot's outcome anyway (the progress line, the summary, the failed shots), a
 * request carries the last outcome and gets the next shot in one round trip, and rank 0's main
 * thread does nothing else (its own GPUs are driven by worker threads), so it answers within a
 * millisecond. A passive-target counter would still need a second channel for the outcomes, and
 * with Open MPI's point-to-point one-sided component it progresses only while rank 0 is inside an
 * MPI call. At 10⁴ shots of seconds each on 64 GPUs rank 0 answers ~30 requests a second: nothing
 * (docs/survey.md). */
#define _POSIX_C_SOURCE 200809L
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "survey_internal.h"

/* The launchers' environment: Open MPI (mpirun), MPICH / Intel MPI / srun --mpi=pmi2 (PMI),
 * MVAPICH. Not SLURM_* alone: a batch script's own shell has them too. */
int tw_survey_launched(int *rank, int *size) {
  static const char *const vars[][2] = {{"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"},
                                        {"PMI_RANK", "PMI_SIZE"},
                                        {"MV2_COMM_WORLD_RANK", "MV2_COMM_WORLD_SIZE"},
                                        {"PMIX_RANK", NULL}};
  for (size_t i = 0; i < sizeof vars / sizeof vars[0]; i++) {
    const char *r = getenv(vars[i][0]);
    if (!r || !*r) continue;
    const char *n = vars[i][1] ? getenv(vars[i][1]) : NULL;
    *rank = atoi(r);
    *size = n && *n ? atoi(n) : 0; /* 0: the launcher does not say (MPI will) */
    return 1;
  }
  *rank = 0;
  *size = 1;
  return 0;
}

#ifdef TW_WITH_MPI
#include <mpi.h>

int tw_survey_mpi_built(void) { return 1; }

struct survey_comm {
  MPI_Comm world, local;
};

enum { TAG_REQ = 17, TAG_REPLY = 18 };

static tw_status mpi_fail(tw_error *err, int rc, const char *call, int line) {
  char s[MPI_MAX_ERROR_STRING] = "";
  int n = 0;
  MPI_Error_string(rc, s, &n);
  return tw_error_set(err, TW_EMPI, "%s failed (survey/comm.c:%d): %s", call, line, s);
}

#define MPI_TRY(err, call)                                               \
  do {                                                                   \
    const int rc_ = (call);                                              \
    if (rc_ != MPI_SUCCESS) return mpi_fail((err), rc_, #call, __LINE__); \
  } while (0)

tw_status comm_init(survey_comm **c, int *rank, int *size, int *local_rank, int *local_size, tw_error *err) {
  *c = NULL;
  *rank = *local_rank = 0;
  *size = *local_size = 1;
  int r, n;
  if (!tw_survey_launched(&r, &n)) return TW_OK;
  int inited = 0, provided = 0;
  MPI_TRY(err, MPI_Initialized(&inited));
  if (!inited) MPI_TRY(err, MPI_Init_thread(NULL, NULL, MPI_THREAD_FUNNELED, &provided));
  else MPI_TRY(err, MPI_Query_thread(&provided));
  /* From here on, calls return their errors instead of aborting the job. */
  MPI_TRY(err, MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN));
  if (provided < MPI_THREAD_FUNNELED)
    return tw_error_set(err, TW_EMPI, "the MPI library provides thread level %d, below MPI_THREAD_FUNNELED (the "
                        "workers are threads; only the main thread calls MPI)", provided);
  survey_comm *k = calloc(1, sizeof *k);
  if (!k) return tw_error_set(err, TW_ENOMEM, "out of memory");
  k->world = MPI_COMM_WORLD;
  k->local = MPI_COMM_NULL;
  *c = k;
  MPI_TRY(err, MPI_Comm_rank(k->world, rank));
  MPI_TRY(err, MPI_Comm_size(k->world, size));
  /* The ranks of this host (shared memory): their order splits the host's GPUs. */
  MPI_TRY(err, MPI_Comm_split_type(k->world, MPI_COMM_TYPE_SHARED, *rank, MPI_INFO_NULL, &k->local));
  MPI_TRY(err, MPI_Comm_rank(k->local, local_rank));
  MPI_TRY(err, MPI_Comm_size(k->local, local_size));
  return TW_OK;
}

tw_status comm_bcast(survey_comm *c, void *buf, int bytes, tw_error *err) {
  if (c) MPI_TRY(err, MPI_Bcast(buf, bytes, MPI_BYTE, 0, c->world));
  return TW_OK;
}

tw_status comm_gather(survey_comm *c, const void *mine, int bytes, void *all, tw_error *err) {
  if (!c) {
    memcpy(all, mine, (size_t)bytes);
    return TW_OK;
  }
  MPI_TRY(err, MPI_Gather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, 0, c->world));
  return TW_OK;
}

tw_status comm_local_allgather(survey_comm *c, const void *mine, int bytes, void *all, tw_error *err) {
  if (!c) return comm_gather(c, mine, bytes, all, err);
  MPI_TRY(err, MPI_Allgather(mine, bytes, MPI_BYTE, all, bytes, MPI_BYTE, c->local));
  return TW_OK;
}

tw_status comm_request(survey_comm *c, const survey_req *req, long *reply, tw_error *err) {
  MPI_TRY(err, MPI_Send(req, (int)sizeof *req, MPI_BYTE, 0, TAG_REQ, c->world));
  MPI_TRY(err, MPI_Recv(reply, 1, MPI_LONG, 0, TAG_REPLY, c->world, MPI_STATUS_IGNORE));
  return TW_OK;
}

tw_status comm_poll(survey_comm *c, survey_req *req, int *src, int *got, tw_error *err) {
  MPI_Status s;
  *got = 0;
  MPI_TRY(err, MPI_Iprobe(MPI_ANY_SOURCE, TAG_REQ, c->world, got, &s));
  if (!*got) return TW_OK;
  int count = 0;
  MPI_TRY(err, MPI_Get_count(&s, MPI_BYTE, &count));
  if (count != (int)sizeof *req)
    return tw_error_set(err, TW_EMPI, "rank %d sent a request of %d bytes, expected %d (every rank must run the "
                        "same torrewave build)", s.MPI_SOURCE, count, (int)sizeof *req);
  *src = s.MPI_SOURCE;
  MPI_TRY(err, MPI_Recv(req, (int)sizeof *req, MPI_BYTE, s.MPI_SOURCE, TAG_REQ, c->world, MPI_STATUS_IGNORE));
  return TW_OK;
}

tw_status comm_reply(survey_comm *c, int src, long reply, tw_error *err) {
  MPI_TRY(err, MPI_Send(&reply, 1, MPI_LONG, src, TAG_REPLY, c->world));
  return TW_OK;
}

tw_status comm_barrier(survey_comm *c, tw_error *err) {
  if (!c) return TW_OK;
  MPI_Request req;
  MPI_TRY(err, MPI_Ibarrier(c->world, &req));
  for (int done = 0; !done;) {
    MPI_TRY(err, MPI_Test(&req, &done, MPI_STATUS_IGNORE));
    if (!done) nanosleep(&(struct timespec){0, 1000000}, NULL);
  }
  return TW_OK;
}

void comm_free(survey_comm *c) {
  if (!c) return;
  if (c->local != MPI_COMM_NULL) MPI_Comm_free(&c->local);
  free(c);
}

void comm_finalize(survey_comm *c) {
  if (!c) return;
  comm_free(c);
  MPI_Finalize();
}

void comm_abort(survey_comm *c) {
  if (c) MPI_Abort(c->world, 1);
}

#else /* a build without MPI: one process */

int tw_survey_mpi_built(void) { return 0; }

tw_status comm_init(survey_comm **c, int *rank, int *size, int *local_rank, int *local_size, tw_error *err) {
  *c = NULL;
  *rank = *local_rank = 0;
  *size = *local_size = 1;
  int r, n;
  if (tw_survey_launched(&r, &n) && n > 1)
    return tw_error_set(err, TW_EUNSUPPORTED, "launched as rank %d of %d by an MPI launcher, but this torrewave was "
                        "built without MPI, so every rank would run the whole survey; rebuild with MPI (Debian: "
                        "libopenmpi-dev) or run it without mpirun", r, n);
  return TW_OK;
}

tw_status comm_bcast(survey_comm *c, void *buf, int bytes, tw_error *err) {
  (void)c, (void)buf, (void)bytes, (void)err;
  return TW_OK;
}

tw_status comm_gather(survey_comm *c, const void *mine, int bytes, void *all, tw_error *err) {
  (void)c, (void)err;
  memcpy(all, mine, (size_t)bytes);
  return TW_OK;
}

tw_status comm_local_allgather(survey_comm *c, const void *mine, int bytes, void *all, tw_error *err) {
  return comm_gather(c, mine, bytes, all, err);
}

tw_status comm_request(survey_comm *c, const survey_req *req, long *reply, tw_error *err) {
  (void)c, (void)req, (void)reply;
  return tw_error_set(err, TW_EINTERNAL, "comm_request without MPI");
}

tw_status comm_poll(survey_comm *c, survey_req *req, int *src, int *got, tw_error *err) {
  (void)c, (void)req, (void)src, (void)err;
  *got = 0;
  return TW_OK;
}

tw_status comm_reply(survey_comm *c, int src, long reply, tw_error *err) {
  (void)c, (void)src, (void)reply;
  return tw_error_set(err, TW_EINTERNAL, "comm_reply without MPI");
}

tw_status comm_barrier(survey_comm *c, tw_error *err) {
  (void)c, (void)err;
  return TW_OK;
}

void comm_free(survey_comm *c) { (void)c; }
void comm_finalize(survey_comm *c) { (void)c; }
void comm_abort(survey_comm *c) { (void)c; }

#endif
