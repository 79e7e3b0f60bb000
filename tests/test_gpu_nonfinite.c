/* test_gpu_nonfinite.c — test_nonfinite.c with the GPU kernels (gpu-stepwise, gpu-diamond), in
 * core and through a sliding window: the device-side scan (gpu_window.cu) at every block boundary.
 * Exits 77 (skipped) without a GPU. */
#define TW_NONFINITE_GPU 1
#include "test_nonfinite.c"
