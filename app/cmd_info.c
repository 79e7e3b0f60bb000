/* torrewave info — version, whether CUDA was built, the GPUs (memory, compute capability, SMs,
 * L2, clocks), and the kernels this build supports. `--kernels` prints just the kernels usable
 * here, one "NAME gpu|cpu" per line (for scripts: scripts/gpu-check.sh picks its list from it). */
#include <stdio.h>
#include <string.h>

#include "app.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_survey.h"

static void help_info(FILE *out) {
  fprintf(out,
          "usage: torrewave info [--kernels]\n\n"
          "Prints the version, whether this build has CUDA and SEG-Y support (segyio), each GPU (name, memory,\n"
          "compute capability, multiprocessors, L2, clocks, peak memory bandwidth) and the kernels of this build.\n"
          "  --kernels   only the kernels usable on this machine, one \"NAME gpu|cpu\" per line\n");
}

static int run_info(int argc, char **argv) {
  static const tw_app_opt opts[] = {{"-h", "--help", NULL, 0}, {NULL, "--kernels", NULL, 0}};
  tw_app_args it = {"info", argc, argv, opts, 2, 1, 0, {0}};
  int kernels_only = 0;
  const char *v;
  for (int k; (k = tw_app_next(&it, &v)) != TW_APP_END;) {
    if (k == TW_APP_BAD) return TW_EXIT_USAGE;
    if (k == TW_APP_OPERAND) return tw_app_usage("info", "takes no operands, got \"%s\"", v);
    if (k == 0) {
      help_info(stdout);
      return TW_EXIT_OK;
    }
    kernels_only = 1;
  }
  const int ngpu = tw_gpu_count();
  if (kernels_only) {
    for (int i = 0; i < tw_kernel_count(); i++) {
      const char *k = tw_kernel_name(i);
      const int gpu = tw_kernel_is_gpu(k);
      if (!gpu || ngpu > 0) printf("%s %s\n", k, gpu ? "gpu" : "cpu");
    }
    return TW_EXIT_OK;
  }

  printf("torrewave %s\n", TW_VERSION);
  if (tw_cuda_built()) {
    int rt = 0, drv = 0;
    tw_cuda_versions(&rt, &drv);
    if (drv)
      printf("CUDA: built (runtime %d.%d, driver supports %d.%d)\n", rt / 1000, (rt % 1000) / 10, drv / 1000,
             (drv % 1000) / 10);
    else
      printf("CUDA: built (runtime %d.%d, no driver found)\n", rt / 1000, (rt % 1000) / 10);
  } else {
    printf("CUDA: not built (CPU kernels only)\n");
  }
  printf("SEG-Y: %s\n", tw_segy_available() ? "built (segyio): output.segy, torrewave export, model.type = \"segy\""
                                             : "not built (no segyio when this torrewave was built)");
  printf("MPI: %s\n", tw_survey_mpi_built() ? "built (surveys spread over the ranks of mpirun)"
                                             : "not built (a survey runs in one process)");
  printf("GPUs: %d\n", ngpu);
  for (int d = 0; d < ngpu; d++) {
    tw_gpu_props p;
    tw_error err = {0};
    if (tw_gpu_props_get(d, &p, &err) != TW_OK) {
      printf("  GPU %d: %s\n", d, err.msg);
      continue;
    }
    printf("  GPU %d: %s\n", d, p.name);
    printf("    compute capability %d.%d, %d SMs, %d threads and %d registers per SM, %zu KiB shared per block\n",
           p.cc_major, p.cc_minor, p.sms, p.max_threads_per_sm, p.regs_per_sm, p.smem_per_block_optin >> 10);
    printf("    memory %.1f GiB (%.1f GiB free), L2 %.1f MiB\n", p.mem_total / 1073741824.0, p.mem_free / 1073741824.0,
           p.l2_bytes / 1048576.0);
    if (p.clock_khz) printf("    SM clock %.0f MHz", p.clock_khz / 1e3);
    if (p.mem_clock_khz && p.bus_bits)
      printf("%smemory %d-bit at %.0f MHz: %.0f GB/s peak (datasheet-style; bench measures the real one)",
             p.clock_khz ? ", " : "    ", p.bus_bits, p.mem_clock_khz / 1e3,
             2.0 * p.mem_clock_khz * 1e3 * (p.bus_bits / 8.0) / 1e9);
    if (p.clock_khz || (p.mem_clock_khz && p.bus_bits)) printf("\n");
  }
  printf("kernels in this build:");
  for (int i = 0; i < tw_kernel_count(); i++) {
    const char *k = tw_kernel_name(i);
    const int gpu = tw_kernel_is_gpu(k);
    printf("%s %s%s", i ? "," : "", k, gpu ? (ngpu ? " (GPU)" : " (needs a GPU: none here)") : "");
  }
  printf("\n");
  for (int i = 0; i < tw_kernel_count(); i++) {
    const char *k = tw_kernel_name(i);
    const int nv = tw_bench_variant_count(k);
    if (!nv) continue;
    printf("%s tuning variants (bench %s@NAME):", k, k);
    for (int v = 0; v < nv; v++) printf("%s %s", v ? "," : "", tw_bench_variant_name(k, v));
    printf("\n  defaults:");
    for (int o = 2; o <= 16; o += 2)
      if (tw_bench_variant_default(k, o)) printf(" order %d: %s;", o, tw_bench_variant_default(k, o));
    printf("\n");
  }
  return TW_EXIT_OK;
}

const tw_command tw_cmd_info = {"info", "GPUs, CUDA, and the kernels this build supports", run_info, help_info, 1};
