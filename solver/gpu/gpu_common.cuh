// gpu_common.cuh — internal to solver/ (CUDA sources only): error checking that turns every CUDA
// failure into a tw_error naming the call, the file:line and CUDA's own text; the device field
// layout shared by the GPU backends; and the device-side pieces every GPU kernel needs in the
// same form (source cells, receiver taps, snapshot gather), so that gpu-stepwise and gpu-diamond
// agree bitwise by construction (docs/design.md §1: one update, one order of summation).
#ifndef TW_GPU_COMMON_CUH
#define TW_GPU_COMMON_CUH

#include <cuda_runtime.h>

#include "problem.h"

// ---------------------------------------------------------------------------------- errors

// Fill err from a CUDA error. An allocation failure is TW_ENOMEM (the caller can say how much it
// asked for); everything else is TW_ECUDA. Returns the status.
static inline tw_status tw_cuda_fail(tw_error *err, cudaError_t e, const char *call, const char *file, int line) {
  const tw_status code = e == cudaErrorMemoryAllocation ? TW_ENOMEM : TW_ECUDA;
  return tw_error_set(err, code, "%s failed (%s:%d): %s: %s", call, file, line, cudaGetErrorName(e),
                      cudaGetErrorString(e));
}

// Evaluate a CUDA runtime call; on failure fill err and return from the enclosing function.
#define TW_CUDA_TRY(err, call)                                                   \
  do {                                                                           \
    cudaError_t tw_e_ = (call);                                                  \
    if (tw_e_ != cudaSuccess) return tw_cuda_fail((err), tw_e_, #call, __FILE__, __LINE__); \
  } while (0)

// After a kernel launch: a bad configuration shows here; a fault inside the kernel shows at the
// next synchronizing call (which TW_CUDA_TRY checks too). `what` names the kernel.
#define TW_CUDA_LAUNCHED(err, what)                                              \
  do {                                                                           \
    cudaError_t tw_e_ = cudaGetLastError();                                      \
    if (tw_e_ != cudaSuccess) return tw_cuda_fail((err), tw_e_, "launch of " what, __FILE__, __LINE__); \
  } while (0)

// A device buffer that only grows: reallocated when n elements exceed its capacity *cap (the
// old contents are not kept). Called per advance call, so it allocates only when a call needs
// more than any before it. `what` names the buffer in the error.
template <typename T>
static tw_status tw_dev_ensure(T **buf, size_t *cap, size_t n, const char *what, tw_error *err) {
  if (n <= *cap && *buf) return TW_OK;
  if (*buf) TW_CUDA_TRY(err, cudaFree(*buf));
  *buf = NULL;
  *cap = 0;
  const cudaError_t e = cudaMalloc((void **)buf, (n ? n : 1) * sizeof(T));
  if (e != cudaSuccess) {
    tw_cuda_fail(err, e, "cudaMalloc", __FILE__, __LINE__);
    return tw_error_prefix(err, "%s (%zu bytes)", what, (n ? n : 1) * sizeof(T));
  }
  *cap = n;
  return TW_OK;
}

// ---------------------------------------------------------------------------------- layout

// Largest stencil radius the GPU kernels instantiate (order 8).
#define TW_GPU_RMAX 4
// Zero rows kept before and after y in every device array, so that a y-halo read never needs a
// bounds check (must be >= TW_GPU_RMAX).
#define TW_GPU_YPAD 4
// z rows are padded to a multiple of this many floats (128 B): every row starts on a cache line.
#define TW_GPU_ZALIGN 32

// Device arrays hold the padded grid as [N0][Nyp][Nzp]: x planes, each of Nyp rows of Nzp floats.
// Rows j in [−YPAD, 0) and [N1, Nyp − YPAD) and cells k in [N2, Nzp) are zero and never written.
// `base` pointers point at cell (0, 0, 0), i.e. YPAD rows into the allocation.
typedef struct tw_dev_layout {
  int N[3];
  int Nyp, Nzp;
  long long sx;   // floats per x plane: Nyp * Nzp, or more in a window's ring (its pitch)
  int fs;         // free surface at k = 0
} tw_dev_layout;

static inline tw_dev_layout tw_dev_layout_make(const tw_grid *g, int yround, int fs) {
  tw_dev_layout L;
  for (int a = 0; a < 3; a++) L.N[a] = g->N[a];
  L.Nzp = (g->N[2] + TW_GPU_ZALIGN - 1) / TW_GPU_ZALIGN * TW_GPU_ZALIGN;
  L.Nyp = TW_GPU_YPAD + (g->N[1] + yround - 1) / yround * yround + TW_GPU_YPAD;
  L.sx = (long long)L.Nyp * L.Nzp;
  L.fs = fs;
  return L;
}

__host__ __device__ static inline long long tw_dev_off(const tw_dev_layout &L, int i, int j, int k) {
  return (long long)i * L.sx + (long long)j * L.Nzp + k;
}

// ---------------------------------------------------------------------------------- device side

// p^n at a cell (i, j, k) that may lie outside the padded grid, with docs/design.md §1's rules: 0 outside,
// and above a free surface the image −p[−k] (0 when −k is itself outside). Exactly what the CPU
// reference reads (cpu_fields.c) and what the stepwise kernel puts into its halos.
__device__ __forceinline__ float tw_dev_read_bc(const float *__restrict__ p, const tw_dev_layout &L, int i, int j,
                                                int k) {
  if (i < 0 || i >= L.N[0] || j < 0 || j >= L.N[1] || k >= L.N[2]) return 0.0f;
  if (k < 0) return (L.fs && -k < L.N[2]) ? -p[tw_dev_off(L, i, j, -k)] : 0.0f;
  return p[tw_dev_off(L, i, j, k)];
}

// The update of one source cell with its S^n inside (docs/design.md §2: a cell adds its source inside
// its own update, whatever kernel updates it). The neighbourhood is gathered into registers
// and fed to tw_laplacian in the shared order, so the result is bitwise what any kernel computes
// for this cell. pm = p^{n−1} of the cell, S = S^n of the cell.
template <int R>
__device__ __forceinline__ float tw_dev_source_update(const tw_stencil &st, const float *__restrict__ pn,
                                                      const tw_dev_layout &L, int i, int j, int k, float S,
                                                      float pm, float c2dt2, float axy, float az) {
  float vx[2 * R + 1], vy[2 * R + 1], vz[2 * R + 1];
#pragma unroll
  for (int m = -R; m <= R; m++) {
    vx[R + m] = tw_dev_read_bc(pn, L, i + m, j, k);
    vy[R + m] = tw_dev_read_bc(pn, L, i, j + m, k);
    vz[R + m] = tw_dev_read_bc(pn, L, i, j, k + m);
  }
  const float lap = tw_laplacian(R, &st, &vx[R], 1, &vy[R], 1, &vz[R], 1) + S;
  return tw_cell_update(vx[R], pm, lap, c2dt2, axy, az);
}

// Source cells after a step that updated every cell without S: recompute each injection cell
// with its S^n, from p^n (unchanged by the step) and the saved p^{n−1}; then save p^n of the
// cell, which the next step needs as its p^{n−1} (the next step overwrites that array).
// One thread per injection cell; cells are unique, so no two threads touch one cell.
// (static: each CUDA source gets its own copy; the build has no separable compilation.)
template <int R>
static __global__ void tw_dev_inject_kernel(const float *__restrict__ pn, float *__restrict__ pnew,
                                     const float *__restrict__ c2, const float *__restrict__ ax,
                                     const float *__restrict__ ay, const float *__restrict__ az,
                                     tw_dev_layout L, const __grid_constant__ tw_stencil st,
                                     const int *__restrict__ inj, int ninj, const float *__restrict__ S,
                                     long long steps, long long n, float *__restrict__ save) {
  const int s = blockIdx.x * blockDim.x + threadIdx.x;
  if (s >= ninj) return;
  const int i = inj[3 * s], j = inj[3 * s + 1], k = inj[3 * s + 2];
  const long long o = tw_dev_off(L, i, j, k);
  const float p0 = pn[o];
  pnew[o] = tw_dev_source_update<R>(st, pn, L, i, j, k, S[(long long)s * steps + n], save[s], c2[o],
                                    tw_damping_xy(ax[i], ay[j]), az[k]);
  save[s] = p0;
}

// Receiver taps at one sample level: out[t] = p at tap cell t (raw values; the driver combines
// them per receiver with tw_receiver_combine).
static __global__ void tw_dev_taps_kernel(const float *__restrict__ p, tw_dev_layout L, const int *__restrict__ tap,
                                          long long ntap, float *__restrict__ out) {
  const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (t < ntap) out[t] = p[tw_dev_off(L, tap[3 * t], tap[3 * t + 1], tap[3 * t + 2])];
}

// Snapshot box: out[a][b][c] = p at (lo0 + a·dec, lo1 + b·dec, lo2 + c·dec).
static __global__ void tw_dev_extract_kernel(const float *__restrict__ p, tw_dev_layout L, int lo0, int lo1,
                                             int lo2, int c0, int c1, int c2, int dec, float *__restrict__ out) {
  const long long total = (long long)c0 * c1 * c2;
  for (long long e = (long long)blockIdx.x * blockDim.x + threadIdx.x; e < total;
       e += (long long)gridDim.x * blockDim.x) {
    const int c = (int)(e % c2);
    const long long ab = e / c2;
    const int b = (int)(ab % c1), a = (int)(ab / c1);
    out[e] = p[tw_dev_off(L, lo0 + a * dec, lo1 + b * dec, lo2 + c * dec)];
  }
}

#endif
