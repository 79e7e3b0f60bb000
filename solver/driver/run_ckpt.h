/* run_ckpt.h — internal to solver/: the run driver's checkpoints (run_ckpt.c). run.c calls these
 * at fixed points of a run; the files and their format are io's (tw_io.h, "checkpoints").
 *
 *   open     before the model is read: the refusals that need no model (--resume without a
 *            checkpoint group, or with no readable checkpoint; an existing checkpoint without
 *            --resume, never used or overwritten silently)
 *   ident    with the model still in memory: the job's identity; with --resume it must match
 *   start    the backend and the output exist: resume (fields into the backend, the journal into
 *            the output) or start a new journal
 *   traces / snapshot   every output write goes to the journal too
 *   block_end           at each block end: a checkpoint when one is due or asked for
 *   close    the run is over: on success the checkpoint files go, else they stay */
#ifndef TW_RUN_CKPT_H
#define TW_RUN_CKPT_H

#include "problem.h"

typedef struct tw_run_ckpt tw_run_ckpt;

/* *out = NULL when the job has no checkpoint group and resume is 0. */
tw_status tw_run_ckpt_open(const tw_job *job, const char *output, int resume, tw_run_ckpt **out, tw_error *err);
tw_status tw_run_ckpt_ident(tw_run_ckpt *c, const tw_job *job, const tw_velocity *v, const tw_problem *pb,
                            tw_error *err);
/* host_bytes: the job's host memory estimate (the background copy must fit beside it). *t0: the step
 * the time loop starts at (the checkpoint's, or 0). */
tw_status tw_run_ckpt_start(tw_run_ckpt *c, const tw_problem *pb, const tw_backend_ops *be, void *bst,
                            tw_output *out, const char *kernel, double host_bytes, long *t0, tw_run_report *rep,
                            tw_error *err);
/* The next step after t at which a block must end for a checkpoint (checkpoint.every), else LONG_MAX. */
long tw_run_ckpt_next_step(const tw_run_ckpt *c, long t);
tw_status tw_run_ckpt_traces(tw_run_ckpt *c, long first, long count, long nrec, const float *traces, tw_error *err);
tw_status tw_run_ckpt_snapshot(tw_run_ckpt *c, int isnap, long step, size_t n, const float *data, tw_error *err);
/* Block end at step t (0 < t < steps): a checkpoint when checkpoint.every or every_seconds says so;
 * suspend: one now, waited for until it is on disk, then TW_ESUSPEND. When one is due, settle (if
 * not NULL) runs first: the output and the journal must hold everything up to t before the
 * checkpoint takes the journal's length (the time loop's snapshot store in flight). */
tw_status tw_run_ckpt_block_end(tw_run_ckpt *c, long t, int suspend, tw_status (*settle)(void *ctx, tw_error *err),
                                void *ctx, tw_run_report *rep, tw_error *err);
/* The run ended with st: TW_OK removes the checkpoint files (the output is complete); otherwise they
 * stay, a write in progress is abandoned (the previous checkpoint stays whole), and an error
 * message says which checkpoint --resume would continue from. Frees c (NULL: nothing). */
void tw_run_ckpt_close(tw_run_ckpt *c, tw_status st, tw_run_report *rep, tw_error *err);

#endif
