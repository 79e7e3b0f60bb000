/* test_segy.c — SEG-Y (io/segy.c) without Python, so that it also runs under AddressSanitizer:
 * an output with output.segy is closed (traces written the way a run writes them), and its
 * SEG-Y file is read back with segyio's C API: binary header, every listed trace-header field
 * (coordinates to the centimetre, offsets to the metre) and every sample bit for bit against
 * what was written. Velocity cubes written with segyio's C API (inline and crossline sorting, IEEE
 * and IBM floats, 2- and 4-byte integers, big- and little-endian) load exactly through
 * tw_velocity_load; a cube of the
 * wrong size is refused naming both sizes. A build without segyio must refuse all three features
 * with "built without segyio": checked, then the test is skipped. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "tw_io.h"
#include "tw_test.h"

#ifdef TW_HAVE_SEGYIO
#include <segyio/segy.h>
#endif

static char dir[256];

static const char job_text[] =
    "grid = { n = [12, 9, 7]; d = [10.0, 10.0, 10.0]; origin = [-50.0, 20.0, 0.0]; };\n"
    "time = { steps = 40; dt = 0.0005; };\n"
    "model = { type = \"constant\"; vp = 2000.0; };\n"
    "sources = ( { position = [11.37, 58.42, 33.21]; wavelet = { type = \"ricker\"; frequency = 20.0; }; } );\n"
    "receivers = { interval = 2;\n"
    "  points = ( [11.37, 58.42, 53.99], [-49.99, 99.99, 0.01], [11.37, 40.0, 5.0], [60.0, 58.42, 12.345] ); };\n"
    "output = { segy = true; };\n";

static tw_job *load(const char *text, const char *const *sets, int nsets) {
  tw_job *job = NULL;
  tw_error err = {0};
  REQUIRE(tw_job_load_string(text, "segy.cfg", sets, nsets, &job, &err) == TW_OK, "%s", err.msg);
  return job;
}

#ifndef TW_HAVE_SEGYIO

int main(void) {
  snprintf(dir, sizeof dir, "%s/tests", TW_BINARY_DIR);
  tw_job *job = load(job_text, NULL, 0);
  tw_error err = {0};
  CHECK(tw_segy_available() == 0, "no segyio, but tw_segy_available says yes");
  CHECK(tw_job_finalize(job, 2000.0, 2000.0, &err) == TW_EUNSUPPORTED && strstr(err.msg, "output.segy: this "
        "torrewave was built without segyio"), "output.segy in a build without segyio: %s", err.msg);
  CHECK(tw_segy_export("x.h5", "x.sgy", &err) == TW_EUNSUPPORTED && strstr(err.msg, "built without segyio"),
        "export: %s", err.msg);
  tw_job_destroy(job);
  const char *sets[] = {"model={type=\"segy\";file=\"" TW_SOURCE_DIR "/README.md\";}", "output.segy=false"};
  job = load(job_text, sets, 2);
  tw_velocity *v = NULL;
  CHECK(tw_velocity_load(job, &v, &err) == TW_EUNSUPPORTED && strstr(err.msg, "built without segyio"),
        "model.type segy: %s", err.msg);
  tw_job_destroy(job);
  if (tw_test_failures) return tw_test_exit();
  TW_SKIP("built without segyio (its refusals of output.segy, export and model.type segy checked)");
}

#else

/* An output of `job` with random traces, closed: with output.segy the SEG-Y file follows. */
static tw_status write_output(tw_job *job, const char *path, float *traces, long nsamples, tw_error *err) {
  tw_output_desc d = {0};
  d.job = job, d.path = path, d.kernel = "cpu", d.dt = job->dt, d.steps = job->steps;
  d.nrec = job->nrec, d.rec = (const double(*)[3])job->rec, d.nsamples = nsamples;
  d.nsrc = 1, d.src = (const double(*)[3])job->sources[0].pos, d.shot = 6;
  for (long i = 0; i < job->nrec * nsamples; i++) traces[i] = (float)(tw_rnd_unit() - 0.5) * 1e-3f;
  tw_output *o = NULL;
  tw_status st = tw_output_create(&d, &o, err);
  if (!st) st = tw_output_write_traces(o, 0, nsamples, traces, err);
  if (!st) return tw_output_close(o, err);
  if (o) tw_output_abort(o);
  return st;
}

static int32_t field(const char *th, int f) {
  int32_t v = 0;
  segy_get_field(th, f, &v);
  return v;
}

/* scalar < 0 divides, > 0 multiplies */
static double unscale(int32_t v, int32_t scalar) { return scalar < 0 ? (double)v / -scalar : (double)v * scalar; }

static void check_segy(const tw_job *job, const char *path, const float *traces, long ns) {
  segy_file *fp = segy_open(path, "rb");
  REQUIRE(fp != NULL, "open %s", path);
  char bin[SEGY_BINARY_HEADER_SIZE], th[SEGY_TRACE_HEADER_SIZE];
  REQUIRE(segy_binheader(fp, bin) == SEGY_OK, "binary header");
  const int want[][2] = {{SEGY_BIN_INTERVAL, 1000}, {SEGY_BIN_SAMPLES, (int)ns}, {SEGY_BIN_FORMAT, 5},
                         {SEGY_BIN_MEASUREMENT_SYSTEM, 1}, {SEGY_BIN_SEGY_REVISION, 0x100}, {SEGY_BIN_TRACE_FLAG, 1},
                         {SEGY_BIN_EXT_HEADERS, 0}, {SEGY_BIN_TRACES, (int)job->nrec}};
  for (size_t i = 0; i < sizeof want / sizeof want[0]; i++) {
    int32_t v = -1;
    segy_get_bfield(bin, want[i][0], &v);
    CHECK(v == want[i][1], "binary header byte %d: %d, expected %d", want[i][0], (int)v, want[i][1]);
  }
  char text[SEGY_TEXT_HEADER_SIZE + 1] = {0};
  CHECK(segy_read_textheader(fp, text) == SEGY_OK && strstr(text, "TORREWAVE " TW_VERSION) &&
            strstr(text, "JOB segy.cfg") && strstr(text, "GRID N 12 9 7, D 10 10 10 M, ORIGIN -50 20 0 M") &&
            strstr(text, "DT 0.0005 S, 40 STEPS, ORDER 8, KERNEL cpu") && strstr(text, "SHOT 7 (FIELD RECORD)") &&
            strstr(text, "END TEXTUAL HEADER"),
        "textual header: %.400s", text);
  const int bsize = (int)ns * 4;
  long trace0 = segy_trace0(bin);
  int ntr = -1;
  CHECK(segy_traces(fp, &ntr, trace0, bsize) == SEGY_OK && ntr == job->nrec, "traces: %d", ntr);
  float *buf = malloc((size_t)bsize);
  const double *s = job->sources[0].pos;
  for (long r = 0; r < job->nrec && r < ntr; r++) {
    const double *g = job->rec[r];
    REQUIRE(segy_traceheader(fp, (int)r, th, trace0, bsize) == SEGY_OK, "trace header %ld", r);
    const int ids[][2] = {{SEGY_TR_SEQ_LINE, (int)r + 1}, {SEGY_TR_SEQ_FILE, (int)r + 1}, {SEGY_TR_FIELD_RECORD, 7},
                          {SEGY_TR_NUMBER_ORIG_FIELD, (int)r + 1}, {SEGY_TR_ENERGY_SOURCE_POINT, 7},
                          {SEGY_TR_TRACE_ID, 1}, {SEGY_TR_COORD_UNITS, 1}, {SEGY_TR_SAMPLE_COUNT, (int)ns},
                          {SEGY_TR_SAMPLE_INTER, 1000}, {SEGY_TR_ELEV_SCALAR, -100},
                          {SEGY_TR_SOURCE_GROUP_SCALAR, -100}, {SEGY_TR_MEASURE_UNIT, 1}};
    for (size_t i = 0; i < sizeof ids / sizeof ids[0]; i++)
      CHECK(field(th, ids[i][0]) == ids[i][1], "trace %ld byte %d: %d, expected %d", r, ids[i][0],
            (int)field(th, ids[i][0]), ids[i][1]);
    const int32_t cs = field(th, SEGY_TR_SOURCE_GROUP_SCALAR), es = field(th, SEGY_TR_ELEV_SCALAR);
    const struct {
      int f;
      int32_t scalar;
      double want;
    } xy[] = {{SEGY_TR_SOURCE_X, cs, s[0]},        {SEGY_TR_SOURCE_Y, cs, s[1]},       {SEGY_TR_GROUP_X, cs, g[0]},
              {SEGY_TR_GROUP_Y, cs, g[1]},         {SEGY_TR_SOURCE_DEPTH, es, s[2]},  {SEGY_TR_RECV_GROUP_ELEV, es, -g[2]}};
    for (size_t i = 0; i < sizeof xy / sizeof xy[0]; i++) {
      double got = unscale(field(th, xy[i].f), xy[i].scalar);
      CHECK(fabs(got - xy[i].want) <= 0.005 + 1e-9, "trace %ld byte %d: %g m, expected %g m", r, xy[i].f, got,
            xy[i].want);
    }
    double dx = g[0] - s[0], dy = g[1] - s[1], off = hypot(dx, dy);
    if (dx < 0 || (dx == 0 && dy < 0)) off = -off;
    CHECK(field(th, SEGY_TR_OFFSET) == (int32_t)lround(off), "trace %ld offset %d, expected %.3f", r,
          (int)field(th, SEGY_TR_OFFSET), off);
    REQUIRE(segy_readtrace(fp, (int)r, buf, trace0, bsize) == SEGY_OK && segy_to_native(5, ns, buf) == SEGY_OK,
            "trace %ld samples", r);
    CHECK(memcmp(buf, traces + r * ns, (size_t)bsize) == 0, "trace %ld: samples differ from the HDF5 traces", r);
  }
  free(buf);
  segy_close(fp);
}

static void test_export(void) {
  tw_job *job = load(job_text, NULL, 0);
  tw_error err = {0};
  REQUIRE(tw_job_finalize(job, 2000.0, 2000.0, &err) == TW_OK, "%s", err.msg);
  const long ns = job->steps / job->rec_interval + 1; /* 21 samples of 1 ms */
  float *traces = malloc((size_t)(job->nrec * ns) * sizeof(float));
  char h5[300], sgy[300], again[300];
  snprintf(h5, sizeof h5, "%s/segy-test.h5", dir);
  snprintf(sgy, sizeof sgy, "%s/segy-test.sgy", dir);
  snprintf(again, sizeof again, "%s/segy-again.sgy", dir);
  tw_status st = write_output(job, h5, traces, ns, &err);
  REQUIRE(st == TW_OK, "output with output.segy: %s", err.msg);
  check_segy(job, sgy, traces, ns);
  /* export writes the same file; a name without segyio's help: the files must be equal byte for byte */
  CHECK(tw_segy_export(h5, again, &err) == TW_OK, "export: %s", err.msg);
  FILE *a = fopen(sgy, "rb"), *b = fopen(again, "rb");
  int same = a && b;
  for (int ca = 0, cb = 0; same && ca != EOF;) ca = fgetc(a), cb = fgetc(b), same = ca == cb;
  CHECK(same, "export and the run's SEG-Y differ");
  if (a) fclose(a);
  if (b) fclose(b);
  /* rewritten without output.segy: the SEG-Y file of ours goes */
  job->output_segy = 0;
  st = write_output(job, h5, traces, ns, &err);
  CHECK(st == TW_OK && access(sgy, F_OK) != 0, "stale SEG-Y file left: %s", err.msg);
  unlink(h5), unlink(again);
  free(traces);
  tw_job_destroy(job);
}

/* A cube vp(i, j, k) = 1500 + 10 i + 100 j + 7 k (exact in IBM and IEEE floats) of [nx][ny][nz]. */
static float cube_vp(int i, int j, int k) { return 1500.0f + 10.0f * i + 100.0f * j + 7.0f * k; }

static void write_cube(const char *path, int nx, int ny, int nz, int inline_sorted, int format, int lsb) {
  segy_file *fp = segy_open(path, "w+b");
  REQUIRE(fp != NULL, "create %s", path);
  REQUIRE(segy_set_format(fp, format | (lsb ? SEGY_LSB : SEGY_MSB)) == SEGY_OK, "format");
  char text[SEGY_TEXT_HEADER_SIZE + 1], bin[SEGY_BINARY_HEADER_SIZE], th[SEGY_TRACE_HEADER_SIZE];
  memset(text, ' ', SEGY_TEXT_HEADER_SIZE);
  text[SEGY_TEXT_HEADER_SIZE] = '\0';
  memset(bin, 0, sizeof bin);
  segy_set_bfield(bin, SEGY_BIN_SAMPLES, nz);
  segy_set_bfield(bin, SEGY_BIN_FORMAT, format);
  segy_set_bfield(bin, SEGY_BIN_INTERVAL, 4000);
  REQUIRE(segy_write_textheader(fp, 0, text) == SEGY_OK && segy_write_binheader(fp, bin) == SEGY_OK, "headers");
  const int es = format == SEGY_SIGNED_SHORT_2_BYTE ? 2 : 4, bsize = nz * es;
  float *buf = malloc((size_t)nz * 4);
  int16_t *i16 = (int16_t *)buf;
  int32_t *i32 = (int32_t *)buf;
  for (int t = 0; t < nx * ny; t++) {
    int i = inline_sorted ? t / ny : t % nx, j = inline_sorted ? t % ny : t / nx;
    memset(th, 0, sizeof th);
    segy_set_field(th, SEGY_TR_INLINE, 101 + i);
    segy_set_field(th, SEGY_TR_CROSSLINE, 21 + 2 * j);
    segy_set_field(th, SEGY_TR_SEQ_FILE, t + 1);
    for (int k = 0; k < nz; k++) {
      if (format == SEGY_SIGNED_SHORT_2_BYTE)
        i16[k] = (int16_t)cube_vp(i, j, k);
      else if (format == SEGY_SIGNED_INTEGER_4_BYTE)
        i32[k] = (int32_t)cube_vp(i, j, k);
      else
        buf[k] = cube_vp(i, j, k);
    }
    segy_from_native(format, nz, buf);
    REQUIRE(segy_write_traceheader(fp, t, th, SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE, bsize) == SEGY_OK &&
                segy_writetrace(fp, t, buf, SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE, bsize) == SEGY_OK,
            "trace %d", t);
  }
  free(buf);
  segy_close(fp);
}

static void test_models(void) {
  char path[300], set[400];
  snprintf(path, sizeof path, "%s/segy-cube.sgy", dir);
  snprintf(set, sizeof set, "model={type=\"segy\";file=\"%s\";}", path);
  const char *sets[] = {set, "output.segy=false"};
  const struct {
    int inline_sorted, format, lsb;
  } cases[] = {{1, SEGY_IEEE_FLOAT_4_BYTE, 0},     {0, SEGY_IEEE_FLOAT_4_BYTE, 0},   {1, SEGY_IBM_FLOAT_4_BYTE, 0},
               {0, SEGY_IBM_FLOAT_4_BYTE, 1},      {1, SEGY_IEEE_FLOAT_4_BYTE, 1},   {1, SEGY_SIGNED_SHORT_2_BYTE, 0},
               {0, SEGY_SIGNED_SHORT_2_BYTE, 1},   {1, SEGY_SIGNED_INTEGER_4_BYTE, 0}};
  for (size_t c = 0; c < sizeof cases / sizeof cases[0]; c++) {
    write_cube(path, 12, 9, 7, cases[c].inline_sorted, cases[c].format, cases[c].lsb);
    tw_job *job = load(job_text, sets, 2);
    tw_velocity *v = NULL;
    tw_error err = {0};
    tw_status st = tw_velocity_load(job, &v, &err);
    CHECK(st == TW_OK, "cube %zu: %s", c, err.msg);
    int bad = 0;
    for (int i = 0; st == TW_OK && i < 12; i++)
      for (int j = 0; j < 9; j++)
        for (int k = 0; k < 7; k++) bad += v->vp[(i * 9 + j) * 7 + k] != cube_vp(i, j, k);
    CHECK(st == TW_OK && bad == 0 && v->vmin == 1500.0 && v->vmax == cube_vp(11, 8, 6),
          "cube %zu (%s-sorted, format %d, %s): %d values differ", c, cases[c].inline_sorted ? "inline" : "crossline",
          cases[c].format, cases[c].lsb ? "LSB" : "MSB", bad);
    tw_velocity_destroy(v);
    tw_job_destroy(job);
  }
  const char *wrong[] = {set, "output.segy=false", "grid.n=[12,10,7]"};
  tw_job *job = load(job_text, wrong, 3);
  tw_velocity *v = NULL;
  tw_error err = {0};
  CHECK(tw_velocity_load(job, &v, &err) == TW_EMISMATCH &&
            strstr(err.msg, "is a cube of 12 inlines x 9 crosslines x 7 samples, but grid.n = [12, 10, 7]"),
        "wrong size: %s", err.msg);
  tw_job_destroy(job);
  /* An unknown format code is named as the file holds it: a little-endian file's 6 is 6 (was 1536). */
  for (int lsb = 0; lsb < 2; lsb++) {
    write_cube(path, 12, 9, 7, 1, SEGY_IEEE_FLOAT_4_BYTE, lsb);
    FILE *f = fopen(path, "r+b");
    const unsigned char code[2] = {lsb ? 6 : 0, lsb ? 0 : 6};
    REQUIRE(f && fseek(f, 3224, SEEK_SET) == 0 && fwrite(code, 1, 2, f) == 2 && fclose(f) == 0, "format code");
    job = load(job_text, sets, 2);
    CHECK(tw_velocity_load(job, &v, &err) == TW_EFORMAT &&
              strstr(err.msg, lsb ? "sample format code 6 (little-endian) (binary header bytes 3225-3226) is not"
                                  : "sample format code 6 (binary header bytes 3225-3226) is not"),
          "format 6 (%s): %s", lsb ? "LSB" : "MSB", err.msg);
    tw_job_destroy(job);
  }
  unlink(path);
}

int main(void) {
  snprintf(dir, sizeof dir, "%s/tests", TW_BINARY_DIR);
  tw_rng_seed(20);
  CHECK(tw_segy_available() == 1, "built with segyio, but tw_segy_available says no");
  test_export();
  test_models();
  return tw_test_exit();
}

#endif
