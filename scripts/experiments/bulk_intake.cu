// bulk_intake.cu — a measurement, not part of the solver (#16, docs/performance.md "Session 45"): how
// fast an SM takes bulk copies (cp.async.bulk, the TMA unit) in, for order 4's band by bulk copies.
// A step's band is 54 KB: today 54 copies of one 1 KB column each; the same columns form 20 runs
// contiguous along the frame's y (the order-4 band's runs: 1–7 columns), which 20 copies would bring.
// One CTA of 8 warps an SM, every SM at once, 200 steps, each from a fresh 7 MB region of a 1.4 GB
// buffer (DRAM, as a sweep's band); issued a lane a copy (the tower's loop over the lanes) or by one
// lane a warp in a row. Prints ns a step, the issuing warps' cycles from the first copy to the last
// (their operands read), and GB/s.
// The copies and the barrier are the solver's own (gpu_diamond_base.cuh).
//   nvcc -arch=sm_90 -O3 -I solver/gpu -o /tmp/bulk_intake scripts/experiments/bulk_intake.cu && /tmp/bulk_intake
// Session 45 (H200): 54 copies 1.81–1.88 µs a step, 669–731 issue cycles a warp-step, 3.9–4.0 TB/s;
// 20 copies of runs 1.67–1.70 µs, 350–365 cycles, 4.3–4.4 TB/s.
#include <cuda_runtime.h>

#include <cstdio>
#include <cstdlib>

#include "gpu_diamond_base.cuh"
#define CK(x)                                        \
  do {                                               \
    cudaError_t e = (x);                             \
    if (e != cudaSuccess) {                          \
      printf("%s: %s\n", #x, cudaGetErrorString(e)); \
      exit(1);                                       \
    }                                                \
  } while (0)
__device__ __forceinline__ bool elect_one() {
  unsigned e;
  asm volatile("{\n .reg .pred P;\n elect.sync _|P, 0xffffffff;\n selp.u32 %0, 1, 0, P;\n}\n" : "=r"(e));
  return e != 0;
}
struct Plan {
  int n;
  int len[64];
  int item[64];
};  // copies: len columns from item (column index)
__constant__ Plan plan;
__global__ void __launch_bounds__(256) k(const float *src, long long step_stride, long long col_stride, int steps,
                                         int mode, unsigned long long *out_cycles, unsigned long long *out_issue) {
  extern __shared__ __align__(128) float sm[];
  unsigned long long *bar = (unsigned long long *)sm;
  float *band = sm + 32;
  const int k = threadIdx.x, w = k >> 5, nw = blockDim.x >> 5;
  if (k == 0) mbar_init(bar, 1);
  __syncthreads();
  unsigned long long t0 = clock64(), issue = 0;
  const int NZ = 256;
  for (int s = 0; s < steps; s++) {
    const float *base = src + (long long)blockIdx.x * 64 * col_stride + (long long)s * step_stride;
    int total = 0;
    for (int i = 0; i < plan.n; i++) total += plan.len[i];
    if (k == 0) mbar_expect_tx(bar, (unsigned)(total * NZ * 4));
    const unsigned long long a = clock64();
    if (mode == 0) {  // a lane a copy: copy j by lane j / nw of warp j % nw (the tower's per-lane loop)
      const int j = w + nw * (k & 31);
      if (j < plan.n) bulk_copy(band + plan.item[j] * NZ, base + plan.item[j] * col_stride, plan.len[j] * NZ * 4, bar);
    } else {  // one lane a warp, its copies in a row
      if (elect_one())
        for (int j = w; j < plan.n; j += nw)
          bulk_copy(band + plan.item[j] * NZ, base + plan.item[j] * col_stride, plan.len[j] * NZ * 4, bar);
    }
    __syncwarp();
    const unsigned long long b = clock64();
    issue += b - a;
    mbar_wait(bar, s & 1);
    __syncthreads();
  }
  if (k == 0) out_cycles[blockIdx.x] = clock64() - t0;
  if ((k & 31) == 0) atomicAdd(out_issue, issue);
}
int main() {
  const long long NZp = 256, col = NZp;  // columns contiguous in y (stride NZp floats), 64 columns a CTA
  const int SMS = 132, steps = 200;
  const long long step_stride = (long long)SMS * 64 * col;  // a new region each step
  const size_t n = (size_t)step_stride * (steps + 1);
  float *src;
  CK(cudaMalloc(&src, n * 4));
  CK(cudaMemset(src, 0, n * 4));
  unsigned long long *cyc, *iss;
  CK(cudaMalloc(&cyc, SMS * 8));
  CK(cudaMalloc(&iss, 8));
  // the order-4 band's runs along the frame's y: p 40 items in runs 1,1,1,3,3,3,4,4,4,4,5,7; c2dt2 14 in
  // 1,1,1,2,2,2,2,3
  const int runs[20] = {1, 1, 1, 3, 3, 3, 4, 4, 4, 4, 5, 7, 1, 1, 1, 2, 2, 2, 2, 3};
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  for (int rep = 0; rep < 2; rep++)
    for (int v = 0; v < 4; v++) {
      Plan P = {};
      if (v < 2) {  // 54 single columns
        P.n = 54;
        for (int i = 0; i < 54; i++) P.len[i] = 1, P.item[i] = i;
      } else {  // 20 runs
        P.n = 20;
        int it = 0;
        for (int i = 0; i < 20; i++) P.len[i] = runs[i], P.item[i] = it, it += runs[i];
      }
      const int mode = v & 1;
      CK(cudaMemcpyToSymbol(plan, &P, sizeof P));
      CK(cudaMemset(iss, 0, 8));
      CK(cudaEventRecord(e0));
      k<<<SMS, 256, 32 * 4 + 54 * 256 * 4 + 1024>>>(src, step_stride, col, steps, mode, cyc, iss);
      CK(cudaEventRecord(e1));
      CK(cudaEventSynchronize(e1));
      CK(cudaGetLastError());
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      unsigned long long hi;
      CK(cudaMemcpy(&hi, iss, 8, cudaMemcpyDeviceToHost));
      printf("%-22s %-16s %7.1f ns a step  %6.0f issue cycles a warp-step  %6.1f GB/s\n",
             v < 2 ? "54 copies of 1 KB" : "20 copies of runs", mode ? "lane a warp" : "a lane a copy",
             ms * 1e6 / steps, (double)hi / (SMS * 8.0 * steps), (double)SMS * steps * 54 * 1024 / (ms * 1e6));
    }
  return 0;
}
