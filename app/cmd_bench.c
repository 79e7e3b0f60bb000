/* torrewave bench — time kernels on synthetic problems and print them beside the stepwise
 * ceiling measured in the same run (docs/design.md §6). The timing lives in solver/ (bench.c,
 * gpu_bench.cu); this file parses options and prints. */
#define _POSIX_C_SOURCE 200809L /* pread, O_NOFOLLOW */
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "app.h"
#include "tw_io.h"
#include "tw_solver.h"

#define MAXLIST 64

static void help_bench(FILE *out) {
  fprintf(out,
          "usage: torrewave bench [options]\n\n"
          "Times kernels on synthetic problems (random velocity 1500-4500 m/s, absorbing layers, free\n"
          "surface, one source, 128 receivers) and prints Gcell/s (median, min, max over the repetitions),\n"
          "the effective bandwidth at the kernel's bytes per cell update, and the percentage of its ceiling\n"
          "measured in the same run. GPU kernels: a device-to-device copy, (bytes read + written) / 16 B per\n"
          "update, timed with CUDA events after a warm-up. CPU kernels: the host's memory bandwidth (a stream\n"
          "reading three arrays and writing one, as a stepwise update does) over the kernel's DRAM bytes per\n"
          "update (cpu 16, cpu-diamond 20/dts), and the fp32 FMA peak in instructions over the update's FP\n"
          "instructions (9r + 4 a cell at order 2r), whichever is lower; timed with the host clock, also per\n"
          "CPU-second of the process (less disturbed by other load; set OMP_WAIT_POLICY=passive so that\n"
          "waiting threads do not count).\n\n"
          "options:\n"
          "  --kernels LIST     comma-separated kernels (default: every GPU kernel of this build when a\n"
          "                     GPU is present, else cpu). gpu-stepwise@VARIANT times a tuning variant;\n"
          "                     gpu-stepwise@all every variant. Options after a name: +cap=SIZE caps the\n"
          "                     device memory (the sliding window, e.g. gpu-diamond+cap=2GiB), +h=STEPS the\n"
          "                     tower height, +dts=N the diamond tile, +rest fields from rest (default:\n"
          "                     small random values, the same with and without +cap).\n"
          "  --orders LIST      spatial orders (default 2,4,8)\n"
          "  --grid NXxNYxNZ    padded grid for GPU kernels (default: --gb 2)\n"
          "  --gb G             size the GPU grid to G GiB per time level (NY = 1024, NZ = 512)\n"
          "  --cpu-grid NXxNYxNZ  padded grid for CPU kernels (default 256x256x256)\n"
          "  --steps N          steps per timed repetition (default 20 on the GPU, 32 on the CPU)\n"
          "  --reps N           timed repetitions (default 5)\n"
          "  --warmup N         untimed repetitions first (default 1)\n"
          "  --absorb N         absorbing cells per face inside the grid (default 20)\n"
          "  --no-free-surface  absorbing layer on top too\n"
          "  --no-ceiling       skip the ceiling measurements\n"
          "  --json FILE        also write the results as JSON; an existing FILE is replaced only when bench\n"
          "                     wrote it (its first key \"written_by\": \"torrewave bench\"), and only once the\n"
          "                     new one is complete (written as FILE.part-PID, then renamed); a FILE.part-PID\n"
          "                     of yours that a killed bench left (its process gone, its text bench's\n"
          "                     beginning) is removed, and named\n");
}

/* "NXxNYxNZ", each a positive int as a whole (sscanf's %d wrapped 4294967344 to 48 and skipped blanks). */
static int parse_grid(const char *s, int N[3]) {
  char buf[64], *p = buf;
  if (snprintf(buf, sizeof buf, "%s", s) >= (int)sizeof buf) return 0;
  for (int a = 0; a < 3; a++) {
    char *x = strchr(p, 'x');
    long n;
    if ((a < 2) != (x != NULL)) return 0;
    if (x) *x = '\0';
    if (!tw_app_long(p, 1, INT_MAX, &n)) return 0;
    N[a] = (int)n;
    if (x) p = x + 1;
  }
  return 1;
}

/* Split a comma list in place (s is modified). */
static int split(char *s, char **out, int max) {
  int n = 0;
  for (char *tok = strtok(s, ","); tok && n < max; tok = strtok(NULL, ",")) out[n++] = tok;
  return n;
}

static void json_str(FILE *f, const char *s) {
  fputc('"', f);
  for (; *s; s++) {
    if (*s == '"' || *s == '\\') fputc('\\', f);
    if ((unsigned char)*s >= 0x20) fputc(*s, f);
  }
  fputc('"', f);
}

/* Every JSON file bench writes begins so: what --json recognises as its own (bench_json_ours). */
#define BENCH_JSON_HEAD "{\n  \"written_by\": \"torrewave bench\",\n"

/* Past the text s at p, else NULL (also for p NULL). */
static const char *past_text(const char *p, const char *s) {
  const size_t n = strlen(s);
  return p && strncmp(p, s, n) == 0 ? p + n : NULL;
}

/* Past a string as json_str writes it (p after its opening quote) and its closing quote, else NULL. */
static const char *past_string(const char *p) {
  for (; p && *p; p++) {
    if (*p == '"') return p + 1;
    if ((unsigned char)*p < 0x20 || (*p == '\\' && p[1] != '"' && p[1] != '\\')) return NULL;
    p += *p == '\\';
  }
  return NULL;
}

/* Past a number as "%.3f" writes it, else NULL. */
static const char *past_number(const char *p) {
  char *end = NULL;
  if (p && !isspace((unsigned char)*p)) (void)strtod(p, &end);
  return end && end > p ? end : NULL;
}

/* path opened for reading if it is a regular file (never following a link, never waiting on a
 * FIFO), its status in *sb; else −1. */
static int open_file(const char *path, struct stat *sb) {
  const int fd = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
  if (fd >= 0 && (fstat(fd, sb) != 0 || !S_ISREG(sb->st_mode))) {
    close(fd);
    return -1;
  }
  return fd;
}

/* --json replaces only a file bench wrote (a job file or a model under that name stays): one that
 * begins with BENCH_JSON_HEAD, or one of a torrewave from before that marker, recognised by what
 * every earlier bench wrote and nothing else writes: "version", "device", "copy_gbps" and
 * "ceiling_gcells" first, in that order and layout, and the end of the results list last. */
static int bench_json_ours(const char *path) {
  static const char end[] = "\n  ]\n}\n";
  const size_t nend = sizeof end - 1;
  char head[2048] = "", tail[sizeof end] = "";
  struct stat sb;
  const int fd = open_file(path, &sb);
  int ours = fd >= 0 && pread(fd, head, sizeof head - 1, 0) > 0;
  if (ours && !past_text(head, BENCH_JSON_HEAD)) {
    const char *p = past_string(past_text(head, "{\n  \"version\": \""));
    p = past_string(past_text(p, ",\n  \"device\": \""));
    p = past_number(past_text(p, ",\n  \"copy_gbps\": "));
    p = past_number(past_text(p, ",\n  \"ceiling_gcells\": "));
    ours = past_text(p, ",\n  \"") && sb.st_size > (off_t)nend &&
           pread(fd, tail, nend, sb.st_size - (off_t)nend) == (ssize_t)nend && memcmp(tail, end, nend) == 0;
  }
  if (fd >= 0) close(fd);
  return ours;
}

/* What a bench --json killed while writing left under FILE.part-PID: its beginning, so
 * BENCH_JSON_HEAD or a part of it (nothing at all: killed before stdio wrote anything), or more
 * after it. */
static int bench_part_ours(const char *path) {
  char head[sizeof BENCH_JSON_HEAD] = "";
  struct stat sb;
  const int fd = open_file(path, &sb);
  const ssize_t n = fd >= 0 ? pread(fd, head, sizeof head - 1, 0) : -1;
  if (fd >= 0) close(fd);
  return n >= 0 && memcmp(head, BENCH_JSON_HEAD, (size_t)n) == 0;
}

/* --json FILE under the outputs' rules (never a link, FIFO, device or folder) and replacing only a
 * file bench wrote: before the bench, and again just before the rename, which replaces whatever is
 * under FILE then (the bench may have run for minutes since). */
static tw_status check_json(const char *json, tw_error *err) {
  return tw_output_check_file(json, "--json output", "--json FILE", NULL, NULL, bench_json_ours,
                              "a JSON file torrewave bench wrote (--json replaces only those)", err);
}

/* The results as JSON, written as every output is (tw_io.h): under "<file>.part-<pid>" beside it,
 * published by rename when complete, so that a failed write leaves the old file whole. */
static tw_status write_json(const char *json, const char *dev, double copy_gbps, double ceil_gcells,
                            const tw_host_ceilings *hc, const tw_bench_result *res, int nres, const double *pct_of,
                            tw_error *err) {
  char *temp = tw_io_temp_name(json);
  FILE *f = temp ? fopen(temp, "wx") : NULL; /* x: never through a name that is there (a link) */
  if (!f) {
    const tw_status st = temp ? tw_error_set(err, TW_EIO, "--json '%s': cannot create '%s': %s", json, temp,
                                             strerror(errno))
                              : tw_error_set(err, TW_ENOMEM, "out of memory");
    free(temp);
    return st;
  }
  fprintf(f, BENCH_JSON_HEAD "  \"version\": ");
  json_str(f, TW_VERSION);
  fprintf(f, ",\n  \"device\": ");
  json_str(f, dev);
  fprintf(f, ",\n  \"copy_gbps\": %.3f,\n  \"ceiling_gcells\": %.3f,\n  \"host_threads\": %d,\n  \"host_mem_gbps\": %.3f,\n"
             "  \"host_fma_gfmas\": %.3f,\n  \"host_fma_fused\": %d,\n  \"results\": [", copy_gbps, ceil_gcells, hc->threads,
          hc->mem_gbps, hc->fma_gfmas, hc->fma_fused);
  for (int i = 0; i < nres; i++) {
    const tw_bench_result *r = &res[i];
    fprintf(f, "%s\n    {\"kernel\": ", i ? "," : "");
    json_str(f, r->kernel);
    fprintf(f, ", \"order\": %d, \"grid\": [%d, %d, %d], \"steps\": %ld, \"reps\": %d, \"gcells_median\": %.4f, "
               "\"gcells_min\": %.4f, \"gcells_max\": %.4f, \"gcells_per_cpu_second\": %.4f, \"gbytes_per_s\": %.2f, "
               "\"pct_ceiling\": %.2f, \"dts\": %d, \"tower_height\": %d, \"timing\": \"%s\", \"note\": ",
            r->order, r->N[0], r->N[1], r->N[2], r->steps, r->reps, r->gcells_med, r->gcells_min, r->gcells_max,
            r->gcells_cpu, r->gbytes_med, pct_of[i], r->dts, r->tower_height,
            r->gpu_timed ? "cuda-events" : "host-clock");
    json_str(f, r->note);
    fputc('}', f);
  }
  fprintf(f, "\n  ]\n}\n");
  /* fprintf errors are sticky: one check of ferror + fclose covers them all (a full disk) */
  const int bad = ferror(f), e = errno;
  tw_status st = fclose(f) != 0 || bad ? tw_error_set(err, TW_EIO, "--json '%s': writing '%s' failed: %s; '%s' %s",
                                                      json, temp, strerror(bad ? e : errno), json,
                                                      tw_output_exists(json) ? "is unchanged" : "was not created")
                                       : TW_OK;
  if (!st) st = tw_io_fsync(temp, err);
  if (!st) st = check_json(json, err);
  if (!st) st = tw_io_publish(temp, json, err);
  if (st) unlink(temp);
  free(temp);
  return st;
}

static int run_bench(int argc, char **argv) {
  char kernels_buf[1024] = "", orders_buf[128] = "2,4,8";
  int grid[3] = {0, 0, 0}, cpu_grid[3] = {256, 256, 256};
  double gb = 2.0;
  long steps = 0;
  int reps = 5, warmup = 1, absorb = 20, fs = 1, ceiling = 1;
  const char *json = NULL;
  enum { HELP, KERNELS, ORDERS, GRID, CPU_GRID, GB, STEPS, REPS, WARMUP, ABSORB, NO_FS, NO_CEILING, JSON, NOPTS };
  static const tw_app_opt opts[NOPTS] = {
      [HELP] = {"-h", "--help", NULL},           [KERNELS] = {NULL, "--kernels", "LIST"},
      [ORDERS] = {NULL, "--orders", "LIST"},     [GRID] = {NULL, "--grid", "NXxNYxNZ"},
      [CPU_GRID] = {NULL, "--cpu-grid", "NXxNYxNZ"}, [GB] = {NULL, "--gb", "G"},
      [STEPS] = {NULL, "--steps", "N"},          [REPS] = {NULL, "--reps", "N"},
      [WARMUP] = {NULL, "--warmup", "N"},        [ABSORB] = {NULL, "--absorb", "N"},
      [NO_FS] = {NULL, "--no-free-surface", NULL}, [NO_CEILING] = {NULL, "--no-ceiling", NULL},
      [JSON] = {NULL, "--json", "FILE"}};
  tw_app_args it = {"bench", argc, argv, opts, NOPTS, 1, 0, {0}};
  const char *v;
  for (int k; (k = tw_app_next(&it, &v)) != TW_APP_END;) {
    switch (k) {
      case TW_APP_BAD: return TW_EXIT_USAGE;
      case TW_APP_OPERAND: return tw_app_usage("bench", "takes no operands, got \"%s\"", v);
      case HELP: help_bench(stdout); return TW_EXIT_OK;
      case KERNELS: snprintf(kernels_buf, sizeof kernels_buf, "%s", v); break;
      case ORDERS: snprintf(orders_buf, sizeof orders_buf, "%s", v); break;
      case GRID:
        if (!parse_grid(v, grid)) return tw_app_usage("bench", "--grid takes NXxNYxNZ, got \"%s\"", v);
        break;
      case CPU_GRID:
        if (!parse_grid(v, cpu_grid)) return tw_app_usage("bench", "--cpu-grid takes NXxNYxNZ, got \"%s\"", v);
        break;
      case GB:
        if (!tw_app_double(v, &gb) || !(gb > 0))
          return tw_app_usage("bench", "--gb takes a positive size in GiB, got \"%s\"", v);
        break;
      case STEPS:
      case REPS:
      case WARMUP:
      case ABSORB: { /* counts: steps and repetitions >= 1, warm-ups and absorbing cells >= 0 */
        const long least = k == STEPS || k == REPS;
        long n;
        if (!tw_app_long(v, least, INT_MAX, &n))
          return tw_app_usage("bench", "%s takes a count >= %ld, got \"%s\"", opts[k].lng, least, v);
        if (k == STEPS) steps = n;
        else *(k == REPS ? &reps : k == WARMUP ? &warmup : &absorb) = (int)n;
        break;
      }
      case NO_FS: fs = 0; break;
      case NO_CEILING: ceiling = 0; break;
      case JSON: json = v; break;
    }
  }
  if (json) { /* before the bench, not only after it (write_json checks again before its rename) */
    tw_error jerr = {0};
    if (check_json(json, &jerr)) return tw_app_fail(&jerr);
  }
  const int ngpu = tw_gpu_count();
  if (!grid[0]) { /* --gb: NY = 1024, NZ = 512, NX from the size */
    grid[1] = 1024, grid[2] = 512;
    grid[0] = (int)(gb * 1073741824.0 / (4.0 * grid[1] * grid[2]) + 0.5);
    if (grid[0] < 16) grid[0] = 16;
  }
  if (!kernels_buf[0]) {
    size_t len = 0;
    for (int i = 0; i < tw_kernel_count(); i++)
      if (tw_kernel_is_gpu(tw_kernel_name(i)) && ngpu > 0)
        len += (size_t)snprintf(kernels_buf + len, sizeof kernels_buf - len, "%s%s", len ? "," : "", tw_kernel_name(i));
    if (!len) snprintf(kernels_buf, sizeof kernels_buf, "cpu");
  }

  /* Expand KERNEL@all into every variant. */
  char *klist0[MAXLIST], *ol[MAXLIST];
  char kernels_copy[1024];
  snprintf(kernels_copy, sizeof kernels_copy, "%s", kernels_buf);
  const int nk0 = split(kernels_copy, klist0, MAXLIST);
  char kl_store[MAXLIST][64];
  int nk = 0;
  for (int i = 0; i < nk0 && nk < MAXLIST; i++) {
    char *at = strchr(klist0[i], '@');
    if (at && strcmp(at + 1, "all") == 0) {
      *at = 0;
      const int nv = tw_bench_variant_count(klist0[i]);
      if (!nv) return tw_app_usage("bench", "kernel %s has no tuning variants", klist0[i]);
      for (int v = 0; v < nv && nk < MAXLIST; v++)
        snprintf(kl_store[nk++], sizeof kl_store[0], "%s@%s", klist0[i], tw_bench_variant_name(klist0[i], v));
    } else {
      snprintf(kl_store[nk++], sizeof kl_store[0], "%s", klist0[i]);
    }
  }
  if (!nk) return tw_app_usage("bench", "--kernels: no kernel named (a comma list, e.g. cpu,cpu-diamond)");
  const int no = split(orders_buf, ol, MAXLIST);
  int orders[MAXLIST];
  if (!no) return tw_app_usage("bench", "--orders: no order named (a comma list of even orders, e.g. 2,4,8)");
  for (int i = 0; i < no; i++) {
    long n;
    if (!tw_app_long(ol[i], 2, 16, &n) || n % 2)
      return tw_app_usage("bench", "--orders: \"%s\" is not an even order in 2..16", ol[i]);
    orders[i] = (int)n;
  }
  int any_gpu = 0, any_cpu = 0;
  for (int i = 0; i < nk; i++) {
    if (tw_kernel_is_gpu(kl_store[i]))
      any_gpu = 1;
    else
      any_cpu = 1;
  }
  /* Every problem the bench will build, before anything is measured: a grid its layers leave too
   * little of (a usage error), or one over the host's available memory (refused at once, where it
   * would have been allocated and filled until the machine swapped or killed the bench). */
  for (int pass = 0; pass < 2; pass++) {
    const int gpu_pass = pass == 0;
    if (gpu_pass ? !any_gpu || ngpu == 0 : !any_cpu) continue;
    const int *N = gpu_pass ? grid : cpu_grid;
    for (int o = 0; o < no; o++) {
      tw_error perr = {0};
      const tw_status st = tw_bench_problem_check(orders[o], N, absorb, fs, gpu_pass, &perr);
      if (st == TW_ENOMEM)
        return tw_error_prefix(&perr, "bench: %s %dx%dx%d", gpu_pass ? "--grid (or --gb)" : "--cpu-grid", N[0], N[1],
                               N[2]),
               tw_app_fail(&perr);
      if (st)
        return tw_app_usage("bench", "%s %dx%dx%d with --absorb %d%s: %s", gpu_pass ? "--grid" : "--cpu-grid", N[0],
                            N[1], N[2], absorb, fs ? "" : " --no-free-surface", perr.msg);
    }
  }
  if (json) { /* every option passed: what killed benches left goes (theirs only), and is named */
    char **gone = NULL;
    int ngone = 0;
    tw_error jerr = {0};
    const tw_status st = tw_output_remove_parts(json, bench_part_ours, &gone, &ngone, &jerr);
    for (int i = 0; i < ngone; i++)
      fprintf(stderr, "torrewave bench: removed '%s', left by an earlier bench --json that was killed while writing "
              "it (its process is gone)\n", gone[i]);
    tw_output_stale_free(gone, ngone);
    if (st) return tw_app_fail(&jerr);
  }

  tw_error err = {0};
  char dev[300] = "no GPU";
  if (ngpu > 0) {
    tw_gpu_props p;
    if (tw_gpu_props_get(0, &p, &err) == TW_OK)
      snprintf(dev, sizeof dev, "%s (cc %d.%d, %d SMs, %.1f GiB)", p.name, p.cc_major, p.cc_minor, p.sms,
               p.mem_total / 1073741824.0);
  }
  printf("torrewave %s bench on %s\n", TW_VERSION, dev);

  /* The ceiling: a device-to-device copy of 1 GiB (far above any L2), read + write. */
  double copy_gbps = 0, ceil_gcells = 0;
  if (any_gpu && ceiling && ngpu == 0)
    printf("ceiling: not measured (no GPU here)\n");
  if (any_gpu && ceiling && ngpu > 0) {
    if (tw_bench_copy_gbps((size_t)1 << 30, 10, &copy_gbps, &err) != TW_OK) return tw_app_fail(&err);
    ceil_gcells = copy_gbps / 16.0;
    printf("ceiling: device-to-device copy %.0f GB/s (read + write), so a stepwise kernel at 16 B per update is "
           "bound by %.1f Gcell/s\n", copy_gbps, ceil_gcells);
  }

  /* The host's ceilings for the CPU kernels: memory over 3 × 64 MiB (far above an L3). */
  tw_host_ceilings hc;
  memset(&hc, 0, sizeof hc);
  if (any_cpu && ceiling) {
    if (tw_bench_host_ceilings(0, (size_t)64 << 20, 5, &hc, &err) != TW_OK) return tw_app_fail(&err);
    printf("host ceilings (%d threads): memory %.1f GB/s (read 3 arrays + write 1, as a stepwise update), fp32 "
           "%s %.1f GFMA/s = %.1f Gflop/s; CPU kernels' code: the %s build\n", hc.threads, hc.mem_gbps,
           hc.fma_fused ? "FMA" : "multiply+add", hc.fma_gfmas, 2 * hc.fma_gfmas, hc.variant);
  }

  tw_bench_result *res = calloc((size_t)nk * (size_t)no, sizeof *res);
  int *ok = calloc((size_t)nk * (size_t)no, sizeof *ok);
  if (!res || !ok) {
    tw_error_set(&err, TW_ENOMEM, "out of memory");
    return tw_app_fail(&err);
  }
  int nres = 0, failures = 0;
  const long gsteps = steps ? steps : 20, csteps = steps ? steps : 32;
  for (int o = 0; o < no; o++) {
    /* One problem per order and grid kind (GPU / CPU), shared by the kernels. */
    for (int pass = 0; pass < 2; pass++) {
      const int gpu_pass = pass == 0;
      if ((gpu_pass && !any_gpu) || (!gpu_pass && !any_cpu)) continue;
      if (gpu_pass && ngpu == 0) { /* say so per kernel; build no 2 GiB problem for nothing */
        for (int k = 0; k < nk; k++)
          if (tw_kernel_is_gpu(kl_store[k])) {
            fprintf(stderr, "torrewave bench: %s, order %d: needs a GPU and none is present\n", kl_store[k],
                    orders[o]);
            failures++;
          }
        continue;
      }
      const int *N = gpu_pass ? grid : cpu_grid;
      const long st_rep = gpu_pass ? gsteps : csteps;
      tw_bench_problem *bp = NULL;
      const double t0 = tw_wall_seconds();
      if (tw_bench_problem_create(orders[o], N, absorb, fs, (long)(warmup + reps) * st_rep, 1, &bp, &err) != TW_OK) {
        fprintf(stderr, "torrewave bench: order %d, grid %dx%dx%d: %s\n", orders[o], N[0], N[1], N[2], err.msg);
        failures++;
        continue;
      }
      fprintf(stderr, "order %d, grid %dx%dx%d: problem built in %.1f s\n", orders[o], N[0], N[1], N[2],
              tw_wall_seconds() - t0);
      for (int k = 0; k < nk; k++) {
        if (tw_kernel_is_gpu(kl_store[k]) != gpu_pass) continue;
        tw_bench_result *r = &res[nres];
        if (tw_bench_kernel(bp, kl_store[k], st_rep, reps, warmup, r, &err) != TW_OK) {
          fprintf(stderr, "torrewave bench: %s, order %d: %s\n", kl_store[k], orders[o], err.msg);
          failures++;
          continue;
        }
        ok[nres++] = 1;
        fprintf(stderr, "  %-24s %8.2f Gcell/s  %s\n", r->kernel, r->gcells_med, r->note);
      }
      tw_bench_problem_destroy(bp);
    }
  }

  printf("\n%-24s %5s %16s %9s %9s %9s %8s %10s  %s\n", "kernel", "order", "grid", "Gcell/s", "min", "max", "GB/s",
         "% ceiling", "timing");
  double *pct_of = calloc((size_t)(nres ? nres : 1), sizeof *pct_of);
  for (int i = 0; i < nres; i++) {
    tw_bench_result *r = &res[i];
    char g[48], pct[16] = "-", timing[96];
    snprintf(g, sizeof g, "%dx%dx%d", r->N[0], r->N[1], r->N[2]);
    double ceil_k = r->gpu_timed ? ceil_gcells : 0;
    if (!r->gpu_timed) { /* the CPU roofline: memory at the kernel's bytes per update, or arithmetic */
      const double bytes = tw_cpu_update_bytes(r->kernel, r->order, r->dts);
      r->gbytes_med = bytes * r->gcells_med;
      if (hc.mem_gbps > 0) {
        const double mem = hc.mem_gbps / bytes, fma = tw_cpu_arith_ceiling(&hc, r->order);
        ceil_k = mem < fma ? mem : fma;
      }
      snprintf(timing, sizeof timing, "host clock, %.2f per CPU-s", r->gcells_cpu);
    } else {
      snprintf(timing, sizeof timing, "CUDA events");
    }
    if (ceil_k > 0) snprintf(pct, sizeof pct, "%.1f %%", 100.0 * r->gcells_med / ceil_k);
    pct_of[i] = ceil_k > 0 ? 100.0 * r->gcells_med / ceil_k : 0;
    printf("%-24s %5d %16s %9.2f %9.2f %9.2f %8.1f %10s  %s\n", r->kernel, r->order, g, r->gcells_med, r->gcells_min,
           r->gcells_max, r->gbytes_med, pct, timing);
  }
  if (any_cpu && hc.mem_gbps > 0) {
    printf(
        "\nCPU ceilings: memory %.1f GB/s / bytes per update (cpu 16 B: %.2f Gcell/s; cpu-diamond 20/dts B); "
        "FP instructions %.1f G/s / per update (9r + 4):",
        hc.mem_gbps, hc.mem_gbps / 16.0, tw_cpu_fp_ginst(&hc));
    for (int o = 0; o < no; o++)
      printf(" order %d %.2f Gcell/s%s", orders[o], tw_cpu_arith_ceiling(&hc, orders[o]), o + 1 < no ? ";" : "\n");
  }
  if (json && write_json(json, dev, copy_gbps, ceil_gcells, &hc, res, nres, pct_of, &err)) {
    free(res), free(ok), free(pct_of);
    return tw_app_fail(&err);
  }
  free(res);
  free(ok);
  free(pct_of);
  return failures ? TW_EXIT_FAIL : TW_EXIT_OK;
}

const tw_command tw_cmd_bench = {"bench", "time kernels on synthetic models against the measured ceiling", run_bench,
                                 help_bench, 1};
