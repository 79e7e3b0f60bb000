// GPU discovery for the kernel registry and `torrewave info`. C interface (problem.h, tw_solver.h).
#include <cuda_runtime.h>
#include <stdio.h>
#include <string.h>

#include "gpu_common.cuh"

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
