/* test_gpu_checkpoint — checkpoints of the GPU kernels (label gpu): gpu-stepwise and gpu-diamond,
 * each in core and through the sliding window (a third above its smallest device-memory cap), cut
 * at a random block end, their two levels saved and loaded into a fresh backend of either kernel
 * (tw_backend_ops save/load, the interface `run --resume` uses), resumed: traces and snapshots
 * bitwise equal (memcmp) to the uninterrupted gpu-stepwise run (test_resume.h). The cases cover
 * orders 2..8, with and without absorbing layers (gpu-diamond's own towers at orders 2 and 4 without
 * layers, its stepwise kernel elsewhere). Also gpu-diamond's stage-launch and generic towers, and
 * every ordered pair of the four kernels, CPU and GPU, against the uninterrupted cpu run.
 * TW_TEST_CASES, TW_TEST_SEED: more or other cases. Skipped (77) without a GPU. */
#define _POSIX_C_SOURCE 200809L
#include "test_resume.h"

int main(void) {
  tg_kernel_under_test("gpu-stepwise");
  tg_kernel_under_test("gpu-diamond");
  const char *e = getenv("TW_TEST_SEED");
  const uint64_t seed = e ? strtoull(e, NULL, 10) : 20251124u;
  e = getenv("TW_TEST_CASES");
  const int ncases = e ? atoi(e) : 8;
  static const char *const gpu[2] = {"gpu-stepwise", "gpu-diamond"};
  printf("gpu-stepwise <-> gpu-diamond through checkpoints, seed %llu, %d cases\n", (unsigned long long)seed, ncases);
  tr_matrix(gpu, 2, ncases, 1, seed);
  /* gpu-diamond's other tower implementations, against gpu-stepwise */
  static const char *const modes[2] = {"stage", "generic"};
  for (int m = 0; m < 2; m++) {
    setenv("TW_DIAMOND_MODE", modes[m], 1);
    printf("TW_DIAMOND_MODE=%s\n", modes[m]);
    tr_matrix(gpu, 2, 3, 1, seed + 1u + (uint64_t)m);
  }
  unsetenv("TW_DIAMOND_MODE");
  /* Across CPU and GPU: every kernel computes the same bits (docs/design.md §1.7), so a run cut on
   * any kernel and resumed on any other, CPU or GPU, equals the uninterrupted cpu run. */
  static const char *const all[4] = {"cpu", "gpu-stepwise", "cpu-diamond", "gpu-diamond"};
  printf("across CPU and GPU: cpu, gpu-stepwise, cpu-diamond, gpu-diamond\n");
  tr_matrix(all, 4, 3, 1, seed + 8u); /* seed + 7: a case whose receivers the waves do not reach */
  return tw_test_exit();
}
