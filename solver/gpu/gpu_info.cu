// GPU discovery for the kernel registry and `torrewave info`. C interface (problem.h, tw_solver.h).
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "gpu_common.cuh"
#include "tw_stencil.h"

extern "C" int tw_gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError();  // clear the "no device" / "no driver" error: it is an answer here, not a fault
    return 0;
  }
  return n;
}

extern "C" int tw_cuda_built(void) { return 1; }

extern "C" tw_status tw_gpu_init(int device, tw_error *err) {
  int cur = -1;
  if (cudaGetDevice(&cur) == cudaSuccess && cur == device) {
    // Set already in this thread: only make sure the context exists (cudaFree(0) creates it once).
    TW_CUDA_TRY(err, cudaFree(0));
    return TW_OK;
  }
  cudaGetLastError();
  TW_CUDA_TRY(err, cudaSetDevice(device));
  TW_CUDA_TRY(err, cudaFree(0));
  return TW_OK;
}

extern "C" void tw_cuda_versions(int *runtime, int *driver) {
  *runtime = *driver = 0;
  if (cudaRuntimeGetVersion(runtime) != cudaSuccess) *runtime = 0;
  if (cudaDriverGetVersion(driver) != cudaSuccess) *driver = 0;
  cudaGetLastError();
}

extern "C" tw_status tw_gpu_props_get(int dev, tw_gpu_props *p, tw_error *err) {
  memset(p, 0, sizeof *p);
  cudaDeviceProp prop;
  TW_CUDA_TRY(err, cudaGetDeviceProperties(&prop, dev));
  snprintf(p->name, sizeof p->name, "%s", prop.name);
  p->cc_major = prop.major;
  p->cc_minor = prop.minor;
  p->sms = prop.multiProcessorCount;
  p->mem_total = prop.totalGlobalMem;
  p->l2_bytes = prop.l2CacheSize;
  p->bus_bits = prop.memoryBusWidth;
  p->smem_per_block_optin = prop.sharedMemPerBlockOptin;
  p->regs_per_sm = prop.regsPerMultiprocessor;
  p->max_threads_per_sm = prop.maxThreadsPerMultiProcessor;
  // Clock rates left cudaDeviceProp in CUDA 13; the attributes remain (0 if the device says none).
  if (cudaDeviceGetAttribute(&p->clock_khz, cudaDevAttrClockRate, dev) != cudaSuccess) p->clock_khz = 0;
  if (cudaDeviceGetAttribute(&p->mem_clock_khz, cudaDevAttrMemoryClockRate, dev) != cudaSuccess) p->mem_clock_khz = 0;
  cudaGetLastError();
  int cur = 0;
  TW_CUDA_TRY(err, cudaGetDevice(&cur));
  TW_CUDA_TRY(err, cudaSetDevice(dev));
  size_t fr = 0, tot = 0;
  cudaError_t e = cudaMemGetInfo(&fr, &tot);
  cudaSetDevice(cur);
  if (e != cudaSuccess) return tw_cuda_fail(err, e, "cudaMemGetInfo", __FILE__, __LINE__);
  p->mem_free = fr;
  return TW_OK;
}

// Every float x in [lo, hi) by bit pattern: tw_dev_recip(x) against __frcp_rn(x), bitwise.
// r[0] counts the differences, r[1] keeps the smallest differing pattern, r[2] counts the patterns
// the threads compared (the caller checks it against hi − lo: a launch that ran no thread fails).
static __global__ void recip_check_kernel(unsigned lo, unsigned hi, unsigned long long *r) {
  unsigned long long n = 0;
  for (unsigned long long b = lo + blockIdx.x * (unsigned long long)blockDim.x + threadIdx.x; b < hi;
       b += (unsigned long long)gridDim.x * blockDim.x, n++) {
    const float x = __uint_as_float((unsigned)b);
    if (__float_as_uint(tw_dev_recip(x)) != __float_as_uint(__frcp_rn(x))) {
      atomicAdd(&r[0], 1ull);
      atomicMin(&r[1], b);
    }
  }
  atomicAdd(&r[2], n);
}

extern "C" tw_status tw_gpu_recip_check(float lo, float hi, long long *checked, long long *mismatches, float *first,
                                        tw_error *err) {
  if (!(lo >= 1.0f && hi > lo && hi < INFINITY))
    return tw_error_set(err, TW_EINVAL, "recip check: the range [%g, %g) is not within [1, inf)", lo, hi);
  unsigned blo, bhi;
  memcpy(&blo, &lo, sizeof blo);
  memcpy(&bhi, &hi, sizeof bhi);
  unsigned long long h[3] = {0, ~0ull, 0}, *d = NULL;
  TW_CUDA_TRY(err, cudaMalloc(&d, sizeof h));
  cudaError_t e = cudaMemcpy(d, h, sizeof h, cudaMemcpyHostToDevice);
  if (e == cudaSuccess) {
    recip_check_kernel<<<1024, 256>>>(blo, bhi, d);
    e = cudaGetLastError();
  }
  if (e == cudaSuccess) e = cudaMemcpy(h, d, sizeof h, cudaMemcpyDeviceToHost);
  const cudaError_t ef = cudaFree(d);
  if (e == cudaSuccess) e = ef;
  if (e != cudaSuccess) return tw_cuda_fail(err, e, "recip_check_kernel", __FILE__, __LINE__);
  *checked = (long long)h[2];
  *mismatches = (long long)h[0];
  const unsigned fb = h[0] ? (unsigned)h[1] : 0xffffffffu;
  memcpy(first, &fb, sizeof *first);
  return TW_OK;
}
