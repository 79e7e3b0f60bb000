// gpu_window.cuh — internal to solver/ (CUDA sources only): the GPU sliding window of docs/design.md §3.
//
// The full fields live in host memory: both time levels page-locked (cudaHostRegister of memory
// zeroed by every thread; cudaHostAlloc where that is refused), c²dt² the problem's own array,
// registered. The device holds a ring of W x-planes per array, plane x in slot (x + rot) mod W
// (rot chosen per block, tw_gpu_window_run_plan), each ring mapped twice back to back in virtual
// memory (cuMemMap of one physical allocation at two addresses): slots [W, 2W) alias [0, W). So
// for any run of at most W consecutive planes the addresses are affine in x, and a kernel indexes
// the ring exactly as it indexes the whole grid, through a per-launch origin pointer
// (tw_gpu_window_origin): no modulo in any kernel, no kernel change at all.
//
// Copies run on two streams of their own, in (host → ring: 12 B per cell, 8 where c²dt² repeats
// the next plane's and is copied from it on the device; zeros for the virtual planes outside the
// grid) and out (ring → host: 8 B per cell, from the top plane down in chunks that each release
// their slots), ordered against the compute stream by events only:
//   - a group's kernels wait for the in-copies of its planes (tw_gpu_window_run_plan);
//   - out-copies wait for the kernels issued before them (tw_gpu_window_out);
//   - an in-copy into a slot waits for the release of the slot's previous plane: its out-copy (a
//     grid plane) or the last kernel that touched it (a virtual plane).
// The caller (a kernel's advance) follows a tw_window_plan: planes of group g + 1 come in while
// group g computes and the planes group g finished go back, so copies overlap kernels in both
// directions. An in-copy into a slot whose plane is still live (its release not yet issued) would
// race: it is refused with TW_EINTERNAL (the ring was sized too small for the plan).
#ifndef TW_GPU_WINDOW_CUH
#define TW_GPU_WINDOW_CUH

#include "gpu_common.cuh"
#include "window.h"

// Plane layout on the device: a plane is NYd rows of NZp floats; the grid's rows [0, N1) start at
// row PY and hold N2 cells each; everything else of the plane is zero and stays zero. Planes are SX
// floats apart (SX ≥ NYd·NZp, a multiple of 32: the pitch tw_gpu_window_fit chooses; 0 before).
struct tw_gpu_plane_layout {
  int N0, N1, N2;
  int NYd, NZp, PY;
  long long SX;
};

struct tw_gpu_window_stats {
  int W;                    // ring planes
  long planes_in, planes_out;  // grid planes moved (virtual planes are zeroed, not counted)
  double bytes_in, bytes_out;  // payload bytes over the link (12 per cell in, 8 where c² came from the ring; 8 out)
  long c2_reused;              // grid planes whose c²dt² came from the next plane in the ring (not counted in bytes_in)
  double wait_s;               // time the compute streams stood waiting for in-copies (CUDA events), summed
  int nstreams;                // compute streams of the last plan (wait_s / nstreams: the share of each)
};

struct tw_gpu_window;

// A host array in grid order [N0][N1][N2] (the problem's c²dt²) into an in-core device array of
// planes of `rows` rows of NZp floats, grid cell (0, 0, 0) at plane x0, row y0; waits on stream s
// and adds its time to ph as "backend: c2dt2 to the GPU", "(page-locked)" where it was. Page-locks
// the host array for the copy where it is large (cudaHostRegister; ~3× faster: the realistic job's
// 2.1 GB c²dt² took 0.34–0.38 s from pageable memory, docs/performance.md, session 27).
tw_status tw_gpu_upload_grid(const float *src, const int N[3], float *dev, int NZp, int rows, int x0, int y0,
                             cudaStream_t s, tw_phases *ph, tw_error *err);

// The ring for a cap: the plane pitch L->SX (floats; a ring must be a whole number of the 2 MiB
// mapping granules, so padding a plane trades bytes per plane for a finer ring quantum) so that
// the most planes fit `cap` bytes, *W (a multiple of *quantum, at most `most`). The pitch grows in
// steps of 32 floats, not of whole rows: 3424 x 1024 x 268 (rows of 288 floats, 2^7·9 bytes) under
// 1.41 GB got 256 planes with whole rows (1152 rows), 384 with a pitch 2 % above the plane. When
// fewer than `need` planes fit, *W = 0 and *smallest = the smallest cap that holds `need` planes
// (any padding) and *smallest_planes its planes. Needs a current device.
tw_status tw_gpu_window_fit(tw_gpu_plane_layout *L, uint64_t cap, int need, int most, int *W, int *quantum,
                            uint64_t *smallest, int *smallest_planes, tw_error *err);
// Whether a grid whose fields need `need` bytes on the device runs in core (*cap = 0) or through a
// window of at most *cap bytes: above solver.device_memory (*automatic = 0), or, without a cap,
// above the free GPU memory less tw_gpu_reserve_bytes (*automatic = 1).
tw_status tw_gpu_window_decide(const tw_problem *pb, double need, uint64_t *cap, int *automatic, tw_error *err);

// Device bytes of a ring of W planes (three arrays).
uint64_t tw_gpu_window_bytes(const tw_gpu_plane_layout *L, int W);

// A window over the problem's fields with a ring of W planes (a multiple of the quantum): the
// host levels start at zero (rest), c²dt² is pb->c2dt2 ([N0][N1][N2], registered, not copied).
// c2_same_next: tw_window_c2_repeats of pb->c2dt2 (N0 flags) where the caller has them, else NULL
// (computed here): a plane that repeats the next one is copied from it on the device.
tw_status tw_gpu_window_create(const tw_problem *pb, const tw_gpu_plane_layout *L, int W,
                               const unsigned char *c2_same_next, tw_gpu_window **out, tw_error *err);
void tw_gpu_window_destroy(tw_gpu_window *w);

// Pointer at cell (0, 0, 0) of array a (0, 1: the level arrays, level m in m % 2; 2: c²dt²) that
// is valid for the planes [lo, lo + W): plane x at origin + x·(NYd·NZp).
float *tw_gpu_window_origin(const tw_gpu_window *w, int a, int lo);
// Issue the in-copies of planes [lo, hi) (grid planes copied, others zeroed; c²dt² of a plane that
// repeats plane x + 1, in the ring or coming in with it, copied from that one on the device).
tw_status tw_gpu_window_in(tw_gpu_window *w, int lo, int hi, tw_error *err);
// Issue the out-copies of planes [lo, hi) after everything issued on `stream` so far, and release
// their slots.
tw_status tw_gpu_window_out(tw_gpu_window *w, cudaStream_t stream, int lo, int hi, tw_error *err);
// One block of a plan: for each group g, the planes of g + 1 come in (those of g came before), the
// group's compute stream waits for the in-copies of g's own planes (not g + 1's: waiting for those
// too put a copy on the critical path as soon as two groups computed at once), fn(ctx, g, lo,
// stream, err) issues the group's kernels on that stream (lo: the group's first plane, for
// tw_gpu_window_origin), then the planes g finished go back. Group g computes on
// streams[g % nstreams]: with two, consecutive groups overlap, and fn orders what must be ordered
// between them (gpu_stepwise.cu: slab_group_run).
typedef tw_status (*tw_gpu_window_group_fn)(void *ctx, int g, int lo, cudaStream_t stream, tw_error *err);
tw_status tw_gpu_window_run_plan(tw_gpu_window *w, const cudaStream_t *streams, int nstreams,
                                 const tw_window_plan *p, tw_gpu_window_group_fn fn, void *ctx, tw_error *err);
// A new shot (at a block boundary: every plane went back): the host levels to zero, the stats to
// zero. The ring is left as it is: every in-copy writes a plane's grid cells before they are read.
tw_status tw_gpu_window_reset(tw_gpu_window *w, tw_error *err);
// A backend's reset of both levels: the window's (w != NULL), or the device arrays level[0], level[1]
// of `floats` each (queued on `stream`: the caller synchronizes it).
tw_status tw_gpu_levels_zero(tw_gpu_window *w, float *const level[2], size_t floats, cudaStream_t stream,
                             tw_error *err);
// Wait for every copy; fold the timings into the stats. After it the host arrays are current.
tw_status tw_gpu_window_finish(tw_gpu_window *w, tw_error *err);
// The host arrays [N0][N1][N2]: 0, 1 the levels, 2 c²dt².
const float *tw_gpu_window_host(const tw_gpu_window *w, int a);
// The level arrays (a = 0, 1) to write, between advance calls (the bench fills them).
float *tw_gpu_window_level(tw_gpu_window *w, int a);
tw_gpu_window_stats tw_gpu_window_get_stats(const tw_gpu_window *w);
// A snapshot box of level `level` from the host arrays (at a block boundary: every plane is back).
void tw_gpu_window_extract(const tw_gpu_window *w, long level, const int lo[3], const int cnt[3], int dec, float *out);
// A backend's snapshot: the box checked against the grid, then gathered from the window's host
// arrays (w != NULL) or from the device array p (layout L, pointer at cell (0, 0, 0)) through the
// grow-only staging buffer *stage on `stream`.
tw_status tw_gpu_snapshot(const tw_dev_layout &L, const float *p, const tw_gpu_window *w, long level,
                          cudaStream_t stream, float **stage, size_t *stage_cap, const int lo[3], const int cnt[3],
                          int dec, float *out, tw_error *err);
// A backend's checkpoint planes (tw_backend_ops save/load): planes [x0, x0 + nx) of level `level`
// (cur) and level − 1 (prev), canonical [nx][N1][N2], copied out of (load = 0) or into (load = 1)
// the window's host arrays (w != NULL: at a block boundary they are the whole field, no device copy)
// or the device arrays p[2] (level m in p[m % 2], layout L, pointers at cell (0, 0, 0); one
// pitched copy per plane on `stream`, which is synchronized). Only the grid's cells are written:
// the zero padding of the device arrays stays zero.
tw_status tw_gpu_checkpoint_planes(const tw_dev_layout &L, float *const p[2], tw_gpu_window *w, long level, int x0,
                                   int nx, float *cur, float *prev, int load, cudaStream_t stream, tw_error *err);
// Non-finite values (inf, NaN: a float32 overflow) of the field, for tw_backend_ops.find_nonfinite.
// A scan counts them in planes [x0, x1) of a device array (layout L, p at cell (0, 0, 0)) and keeps
// the smallest linear cell index ((x·N1 + y)·N2 + z) into nf[0] (count) and nf[1] (index, ~0 when
// none), two device words (tw_gpu_nonfinite_reset sets them). One warp per (x, y) row, reading 4 B
// per cell once: about 1 ms per 10^9 cells at H200 bandwidth, against a block's ~0.5 s.
tw_status tw_gpu_nonfinite_reset(unsigned long long *nf, cudaStream_t stream, tw_error *err);
tw_status tw_gpu_nonfinite_scan(unsigned long long *nf, const tw_dev_layout &L, const float *p, int x0, int x1,
                                cudaStream_t stream, tw_error *err);
// A backend's find_nonfinite at a block boundary. In core (w == NULL): scan level array p (layout L)
// now, into the grow-only scratch *nf. Through a window: every plane's two levels were scanned on
// the device just before they went back to the host (tw_gpu_window_out), so the window's result is
// read. Either way the result is copied back on `stream` and reset; *count: how many, cell: the
// padded cell of the first.
tw_status tw_gpu_find_nonfinite(const tw_dev_layout &L, const float *p, tw_gpu_window *w, unsigned long long **nf,
                                cudaStream_t stream, long long *count, int cell[3], tw_error *err);
// Receiver samples that go to the host while the later work of an advance call computes. The
// backend marks the points of its call where the work queued on its stream finishes a level
// (tw_gpu_samples_mark); tw_gpu_advance_end copies each mark's new samples on q's own stream after
// that mark's event, in order, once everything is queued (a copy into pageable memory returns only
// when it is done), so that only the samples after the last mark wait for the end of the call.
// 10^5 taps at interval 2 are 51 MB per 256 steps: ~3 % of gpu-diamond's run when copied after it
// (docs/performance.md, session 7).
// (Plain data: the stepwise state is calloc'd. Past TW_GPU_SAMPLE_MARKS marks in a call the last
// mark moves on: the samples of the marks it replaces wait for the next.)
enum { TW_GPU_SAMPLE_MARKS = 64 };
struct tw_gpu_samples {
  cudaStream_t stream;                    // the copies (non-blocking)
  cudaEvent_t ev[TW_GPU_SAMPLE_MARKS];    // created on first use, reused by later calls
  long level[TW_GPU_SAMPLE_MARKS];        // this call's marks
  int nev, nmark;
};
tw_status tw_gpu_samples_init(tw_gpu_samples *q, tw_error *err);
void tw_gpu_samples_free(tw_gpu_samples *q);
// The work queued on `work` so far finishes every level <= level (a no-op for a job without receivers).
tw_status tw_gpu_samples_mark(tw_gpu_samples *q, const tw_problem *pb, cudaStream_t work, long level, tw_error *err);
// The start of a backend's advance call: the call must continue from the field's level and stay
// within the job's steps; *first, *count: the receiver samples it produces (tw_samples_in), for
// which the device buffer *taps (capacity *cap) is made large enough; q's marks start empty.
tw_status tw_gpu_advance_begin(const tw_problem *pb, long level, long t0, long n, float **taps, size_t *cap,
                               tw_gpu_samples *q, long *first, long *count, tw_error *err);
// The end of a backend's advance call (the block boundary): the call's receiver samples (first,
// count: tw_gpu_advance_begin) from dev_taps to the host, one synchronization (a fault of any kernel
// of the call surfaces here), then the window's copies and timings; *win_s gains the call's host
// time since t_start.
tw_status tw_gpu_advance_end(cudaStream_t stream, tw_gpu_samples *q, const tw_problem *pb, long first, long count,
                             float *taps, const float *dev_taps, tw_gpu_window *w, double t_start, double *win_s,
                             tw_error *err);
// The run report's window fields; host_s: time inside the windowed advance calls (the copy-wait
// share is the compute stream's waiting time over it).
void tw_gpu_window_report(const tw_gpu_window *w, double host_s, tw_run_report *rep);
// The error for a cap below the smallest ring (planes, their bytes): TW_ERANGE naming the smallest
// solver.device_memory that works — the ring's, or the whole grid's in core (`whole` bytes, the
// fields without a window) where that is no more: a ring is whole 2 MiB granules, so on a small
// grid it can exceed the fields —, or with automatic (no cap, the free GPU memory) TW_ENOMEM.
tw_status tw_gpu_window_too_small(tw_error *err, const tw_problem *pb, uint64_t cap, int automatic, int planes,
                                  uint64_t bytes, double whole, const char *params);

#endif
