// GPU discovery for the kernel registry and `torrewave info`. C interface (problem.h).
#include <cuda_runtime.h>
#include <stdio.h>

#include "problem.h"

extern "C" int tw_gpu_count(void) {
  int n = 0;
  if (cudaGetDeviceCount(&n) != cudaSuccess) {
    cudaGetLastError(); // clear the sticky "no device" error
    return 0;
  }
  return n;
}
