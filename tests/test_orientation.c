/* test_orientation — the kernels' axes (tw_grid_oriented): a job whose padded y is longer than its
 * padded x runs with x and y exchanged, so that the kernels sweep the longer horizontal axis.
 * Checked through tw_run_job, whole jobs with a raw velocity file that varies along every axis,
 * unequal spacings, an origin, a free surface, trilinear and nearest sources and receivers, and
 * decimated snapshots of a region:
 *  - the job and its mirror image (x and y exchanged in the grid, the model file, the positions,
 *    the region) give bitwise the same traces and bitwise transposed snapshots: the swap reaches
 *    every table (c²dt², damping, weights, source and receiver cells) and the outputs come back in
 *    the job's axes. The mirror has x longer than y and is not swapped, so a table left in the
 *    job's axes, or a swap not made, shows as different bits (the x and y terms of the Laplacian
 *    are added in a fixed order, and the spacings differ).
 *  - every kernel of the build computes the same bits on the swapped job: cpu-diamond in core and
 *    through its sliding window, and with --gpu (test_gpu_orientation) gpu-stepwise and gpu-diamond.
 *  - the run summary says that the kernels sweep the job's y; an error in the kernels' axes says so. */
#define _POSIX_C_SOURCE 200809L
#include <unistd.h>

#include "problem.h"
#include "tw_io.h"
#include "tw_solver.h"
#include "tw_test.h"

enum { NX = 19, NY = 33, NZ = 17 };

static char model_a[512], model_b[512];

/* v[x][y][z] in [1500, 3000) m/s, and its mirror [y][x][z]. */
static void write_models(void) {
  float *a = malloc(sizeof(float) * NX * NY * NZ), *b = malloc(sizeof(float) * NX * NY * NZ);
  REQUIRE(a && b, "out of memory");
  for (int x = 0; x < NX; x++)
    for (int y = 0; y < NY; y++)
      for (int z = 0; z < NZ; z++) {
        const float v = (float)(1500.0 + 1500.0 * tw_rnd_unit());
        a[((size_t)x * NY + y) * NZ + z] = v;
        b[((size_t)y * NX + x) * NZ + z] = v;
      }
  snprintf(model_a, sizeof model_a, "%s/tests/orientation-a.f32", TW_BINARY_DIR);
  snprintf(model_b, sizeof model_b, "%s/tests/orientation-b.f32", TW_BINARY_DIR);
  FILE *fa = fopen(model_a, "wb"), *fb = fopen(model_b, "wb");
  REQUIRE(fa && fb, "cannot write %s", model_a);
  REQUIRE(fwrite(a, sizeof(float), (size_t)NX * NY * NZ, fa) == (size_t)NX * NY * NZ &&
              fwrite(b, sizeof(float), (size_t)NX * NY * NZ, fb) == (size_t)NX * NY * NZ,
          "short write");
  fclose(fa), fclose(fb);
  free(a), free(b);
}

/* The job (mirror = 0) or its mirror image: every x and y exchanged. */
static void job_text(int mirror, char *out, size_t cap) {
  /* positions as (x, y, z) offsets from the origin, in the job's axes (x in [0, 180], y in [0, 384]) */
  static const double src[2][3] = {{73.0, 201.5, 31.0}, {130.0, 40.0, 9.0}};
  static const double pts[3][3] = {{0.0, 0.0, 3.0}, {171.0, 370.0, 120.0}, {93.5, 211.0, 3.0}};
  static const double line[2][3] = {{10.0, 0.0, 13.0}, {110.0, 380.0, 13.0}};
  /* P: a position (offsets from the origin, in the job's axes) as the job or its mirror writes it */
#define P(v) (mirror ? o[1] + (v)[1] : o[0] + (v)[0]), (mirror ? o[0] + (v)[0] : o[1] + (v)[1]), o[2] + (v)[2]
  const double d[3] = {10.0, 12.0, 8.0}, o[3] = {100.0, -50.0, 0.0};
  const int n[3] = {NX, NY, NZ};
  const int from[3] = {2, 3, 1}, to[3] = {16, 30, 15};
  snprintf(out, cap,
           "grid = { n = [%d, %d, %d]; d = [%.4f, %.4f, %.4f]; origin = [%.4f, %.4f, %.4f]; };\n"
           "time = { steps = 61; };\n"
           "model = { type = \"raw\"; file = \"%s\"; };\n"
           "scheme = { order = 8; };\n"
           "boundary = { absorbing = 5; free_surface = true; };\n"
           "sources = ( { position = [%.4f, %.4f, %.4f]; interpolation = \"trilinear\";\n"
           "              wavelet = { type = \"ricker\"; frequency = 35.0; }; },\n"
           "            { position = [%.4f, %.4f, %.4f]; wavelet = { type = \"ricker\"; frequency = 25.0; }; } );\n"
           "receivers = { interval = 2; interpolation = \"trilinear\";\n"
           "              points = ( [%.4f, %.4f, %.4f], [%.4f, %.4f, %.4f], [%.4f, %.4f, %.4f] );\n"
           "              lines = ( { from = [%.4f, %.4f, %.4f]; to = [%.4f, %.4f, %.4f]; count = 17; } ); };\n"
           "snapshots = { steps = [7, 30, 61]; decimate = 2;\n"
           "              region = { from = [%.4f, %.4f, %.4f]; to = [%.4f, %.4f, %.4f]; }; };\n",
           mirror ? n[1] : n[0], mirror ? n[0] : n[1], n[2], mirror ? d[1] : d[0], mirror ? d[0] : d[1], d[2],
           mirror ? o[1] : o[0], mirror ? o[0] : o[1], o[2], mirror ? model_b : model_a, P(src[0]), P(src[1]),
           P(pts[0]), P(pts[1]), P(pts[2]), P(line[0]), P(line[1]),
           /* the region in metres: model cells from[] .. to[] */
           (mirror ? o[1] + from[1] * d[1] : o[0] + from[0] * d[0]), (mirror ? o[0] + from[0] * d[0] : o[1] + from[1] * d[1]),
           o[2] + from[2] * d[2], (mirror ? o[1] + to[1] * d[1] : o[0] + to[0] * d[0]),
           (mirror ? o[0] + to[0] * d[0] : o[1] + to[1] * d[1]), o[2] + to[2] * d[2]);
#undef P
}

static tw_result *run(int mirror, const char *kernel_set, const char *tag, tw_run_report *rep) {
  char text[4096], path[512];
  job_text(mirror, text, sizeof text);
  snprintf(path, sizeof path, "%s/tests/orientation-%s.h5", TW_BINARY_DIR, tag);
  const char *sets[1] = {kernel_set};
  tw_error err = {0};
  tw_job *job = NULL;
  REQUIRE(tw_job_load_string(text, tag, sets, 1, &job, &err) == TW_OK, "%s: %s", tag, err.msg);
  REQUIRE(tw_run_job(job, path, NULL, rep, &err) == TW_OK, "%s: %s", tag, err.msg);
  tw_result *r = NULL;
  REQUIRE(tw_result_open(path, &r, &err) == TW_OK, "%s: %s", tag, err.msg);
  tw_job_destroy(job);
  return r;
}

/* b equals a bitwise: traces as they are, snapshots transposed in x and y when transposed. */
static int same(const tw_result *a, const tw_result *b, int transposed, const char *what) {
  int bad = 0;
  REQUIRE(a->nrec == b->nrec && a->nsamples == b->nsamples && a->nsnap == 3 && b->nsnap == 3, "%s: shapes", what);
  const long nt = a->nrec * a->nsamples;
  long e = 0;
  while (e < nt && !memcmp(&a->traces[e], &b->traces[e], sizeof(float))) e++;
  CHECK(e == nt, "%s: receiver %ld sample %ld: %.9g against %.9g", what, e / a->nsamples, e % a->nsamples,
        e < nt ? a->traces[e] : 0.0f, e < nt ? b->traces[e] : 0.0f);
  bad += e != nt;
  const int *s = a->snap_shape;
  CHECK(b->snap_shape[0] == (transposed ? s[1] : s[0]) && b->snap_shape[1] == (transposed ? s[0] : s[1]) &&
            b->snap_shape[2] == s[2],
        "%s: snapshot shape %d x %d x %d against %d x %d x %d", what, b->snap_shape[0], b->snap_shape[1],
        b->snap_shape[2], s[0], s[1], s[2]);
  const size_t n = (size_t)s[0] * s[1] * s[2];
  float *sa = malloc(n * sizeof(float)), *sb = malloc(n * sizeof(float));
  tw_error err = {0};
  for (int i = 0; i < 3; i++) {
    REQUIRE(tw_result_read_snapshot(a, i, sa, &err) == TW_OK && tw_result_read_snapshot(b, i, sb, &err) == TW_OK,
            "%s", err.msg);
    size_t diff = 0, nonzero = 0;
    for (int x = 0; x < s[0]; x++)
      for (int y = 0; y < s[1]; y++)
        for (int z = 0; z < s[2]; z++) {
          const size_t ia = ((size_t)x * s[1] + y) * s[2] + z;
          const size_t ib = transposed ? ((size_t)y * s[0] + x) * s[2] + z : ia;
          diff += memcmp(&sa[ia], &sb[ib], sizeof(float)) != 0;
          nonzero += sa[ia] != 0.0f;
        }
    CHECK(diff == 0, "%s: snapshot %d (step %ld): %zu of %zu cells differ", what, i, a->snap_steps[i], diff, n);
    CHECK(i == 0 || nonzero * 2 > n, "%s: snapshot %d: only %zu of %zu cells reached", what, i, nonzero, n);
    bad += diff != 0;
  }
  free(sa), free(sb);
  return bad;
}

static float peak(const tw_result *r) {
  float p = 0;
  for (long e = 0; e < r->nrec * r->nsamples; e++) p = fabsf(r->traces[e]) > p ? fabsf(r->traces[e]) : p;
  return p;
}

static void done(tw_result *r) {
  unlink(r->path);
  tw_result_close(r);
}

int main(int argc, char **argv) {
  const int gpu = argc > 1 && strcmp(argv[1], "--gpu") == 0;
  if (gpu && (!tw_backend_find("gpu-stepwise") || tw_gpu_count() == 0))
    TW_SKIP("no GPU: the GPU kernels on a job swept along y need one");
  write_models();
  tw_run_report rep, rm;
  tw_result *a = run(0, "solver.kernel=\"cpu\"", "cpu", &rep);
  CHECK(strstr(rep.note, "sweep the job's y"), "the run summary does not say the kernels sweep y: '%s'", rep.note);
  CHECK(peak(a) > 0, "silent traces");
  if (!gpu) {
    tw_result *m = run(1, "solver.kernel=\"cpu\"", "mirror", &rm);
    CHECK(!strstr(rm.note, "sweep the job's y"), "the mirror (x longer) is swept along y: '%s'", rm.note);
    const int bad = same(a, m, 1, "mirror image");
    printf("the job (%d x %d x %d cells, swept along y) and its mirror image (x longer, not swapped): traces and 3 "
           "snapshots %s\n", NX, NY, NZ, bad ? "DIFFER" : "bitwise equal, transposed");
    done(m);
  }
  static const char *const cpu_kernels[][2] = {
      {"solver.kernel=\"cpu-diamond\"", "in core"},
      {"solver={kernel=\"cpu-diamond\"; dts=1; tower_height=4; device_memory=\"520K\";}", "windowed"}};
  static const char *const gpu_kernels[][2] = {
      {"solver.kernel=\"gpu-stepwise\"", "gpu-stepwise"},
      {"solver.kernel=\"gpu-diamond\"", "gpu-diamond"}};
  /* (The GPU window needs rings of whole 2 MiB granules, far beyond this grid; it sees the kernels'
   * problem like the in-core kernels, and test_gpu_window proves it bitwise on such problems.) */
  const int nk = 2;
  for (int k = 0; k < nk; k++) {
    const char *set = gpu ? gpu_kernels[k][0] : cpu_kernels[k][0], *name = gpu ? gpu_kernels[k][1] : cpu_kernels[k][1];
    tw_run_report rk;
    char tag[32];
    snprintf(tag, sizeof tag, "k%d%s", k, gpu ? "g" : "c");
    tw_result *r = run(0, set, tag, &rk);
    const int bad = same(a, r, 0, name);
    printf("%s on the swapped job: %s to cpu (%s)\n", name, bad ? "NOT equal" : "bitwise equal", rk.note);
    done(r);
  }
  if (!gpu) { /* a kernel's message in its own axes says which they are */
    char text[4096];
    job_text(0, text, sizeof text);
    const char *sets[1] = {"solver={kernel=\"cpu-diamond\"; dts=1; tower_height=4; device_memory=\"100K\";}"};
    tw_error err = {0};
    tw_job *job = NULL;
    tw_run_report rr;
    char path[512];
    snprintf(path, sizeof path, "%s/tests/orientation-cap.h5", TW_BINARY_DIR);
    REQUIRE(tw_job_load_string(text, "cap", sets, 1, &job, &err) == TW_OK, "cap: %s", err.msg);
    const tw_status st = tw_run_job(job, path, NULL, &rr, &err);
    CHECK(st != TW_OK && strstr(err.msg, "x-planes") && strstr(err.msg, "planes of constant y"),
          "a cap too small on the swapped job: %s", err.msg);
    printf("a cap too small: %s\n", err.msg);
    tw_job_destroy(job);
  }
  done(a);
  unlink(model_a), unlink(model_b);
  return tw_test_exit();
}
