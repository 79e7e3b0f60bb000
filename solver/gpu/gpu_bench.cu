// gpu_bench.cu — the GPU side of `torrewave bench`: CUDA-event timing of an advance call and the
// stepwise ceiling (a large device-to-device copy). C interface in tw_solver.h / problem.h.
#include <cuda_runtime.h>
#include <stdlib.h>

#include "gpu_common.cuh"

namespace {
int cmp_double(const void *a, const void *b) {
  const double x = *(const double *)a, y = *(const double *)b;
  return x < y ? -1 : x > y;
}

struct events {
  cudaEvent_t e[2] = {nullptr, nullptr};
  ~events() {
    for (auto &x : e)
      if (x) cudaEventDestroy(x);
  }
};

struct dev_buf {
  void *p = nullptr;
  ~dev_buf() {
    if (p) cudaFree(p);
  }
};
}  // namespace

extern "C" tw_status tw_gpu_time_call(tw_status (*fn)(void *arg, tw_error *err), void *arg, double *seconds,
                                      tw_error *err) {
  events ev;
  TW_CUDA_TRY(err, cudaEventCreate(&ev.e[0]));
  TW_CUDA_TRY(err, cudaEventCreate(&ev.e[1]));
  // Stream 0 (legacy) is ordered with the backends' blocking streams: e0 completes no later than
  // the first kernel of the call starts, e1 no earlier than its last one ends (advance returns
  // after synchronizing). The interval therefore brackets the call's whole GPU work.
  TW_CUDA_TRY(err, cudaEventRecord(ev.e[0], 0));
  tw_status st = fn(arg, err);
  if (st) return st;
  TW_CUDA_TRY(err, cudaEventRecord(ev.e[1], 0));
  TW_CUDA_TRY(err, cudaEventSynchronize(ev.e[1]));
  float ms = 0;
  TW_CUDA_TRY(err, cudaEventElapsedTime(&ms, ev.e[0], ev.e[1]));
  *seconds = ms * 1e-3;
  return TW_OK;
}

extern "C" tw_status tw_bench_copy_gbps(size_t bytes, int reps, double *gbps, tw_error *err) {
  if (tw_gpu_count() == 0) return tw_error_set(err, TW_ENODEV, "no GPU: the copy ceiling needs one");
  if (reps < 1) reps = 1;
  dev_buf a, b;
  events ev;
  TW_CUDA_TRY(err, cudaMalloc(&a.p, bytes));
  TW_CUDA_TRY(err, cudaMalloc(&b.p, bytes));
  TW_CUDA_TRY(err, cudaMemset(a.p, 0x5A, bytes));  // not zeros
  TW_CUDA_TRY(err, cudaMemset(b.p, 0xA5, bytes));
  TW_CUDA_TRY(err, cudaEventCreate(&ev.e[0]));
  TW_CUDA_TRY(err, cudaEventCreate(&ev.e[1]));
  double *t = (double *)malloc((size_t)reps * sizeof *t);
  if (!t) return tw_error_set(err, TW_ENOMEM, "out of memory");
  tw_status st = TW_OK;
  for (int r = -2; r < reps && !st; r++) {  // two warm-up copies
    cudaError_t e = cudaEventRecord(ev.e[0], 0);
    if (!e) e = cudaMemcpyAsync(r % 2 ? a.p : b.p, r % 2 ? b.p : a.p, bytes, cudaMemcpyDeviceToDevice, 0);
    if (!e) e = cudaEventRecord(ev.e[1], 0);
    if (!e) e = cudaEventSynchronize(ev.e[1]);
    float ms = 0;
    if (!e) e = cudaEventElapsedTime(&ms, ev.e[0], ev.e[1]);
    if (e) st = tw_cuda_fail(err, e, "device-to-device copy", __FILE__, __LINE__);
    else if (r >= 0) t[r] = ms * 1e-3;
  }
  if (!st) {
    qsort(t, (size_t)reps, sizeof *t, cmp_double);
    *gbps = 2.0 * (double)bytes / t[reps / 2] / 1e9;
  }
  free(t);
  return st;
}
