/* segy.c — SEG-Y through segyio's C API (segyio/segy.h): receiver traces out, velocity cubes in.
 *
 * Out (tw_segy_export): one SEG-Y rev 1 file per result file (one shot), big-endian IEEE float
 * samples (format 5), written by segyio's header and trace calls — no byte layout is written
 * here. What goes where:
 *   textual header   program, version, job, result file, shot and source, grid, dt, steps, order,
 *                    kernel, samples, units and the header conventions below (40 lines, EBCDIC)
 *   binary header    interval (µs), samples per trace, format 5, traces per record, fixed-length
 *                    traces, measurement system 1 (metres), polarity 2 (more pressure: larger
 *                    number), revision 1
 *   trace headers    sequence in line and file (1, 5), field record = shot + 1 (9), trace in record
 *                    = receiver index + 1 (13), energy source point = shot + 1 (17), trace id 1
 *                    (29), offset (37), group elevation = −receiver depth (41), source depth (49),
 *                    elevation and coordinate scalars (69, 71), source and group x, y (73–88),
 *                    coordinate units 1 (89), samples (115), interval (117), value unit 1 = Pa (203)
 * Coordinates and depths are stored with the finest scalar that keeps them in 32 bits: −100
 * (centimetres) for any model under 21 000 km. The offset has no scalar in rev 1: whole metres,
 * the horizontal distance, negative where the receiver lies at smaller x than the source (at equal
 * x: smaller y). Depths are positive down from the model's z = 0; SEG-Y has no receiver depth, so
 * the group elevation carries −depth (the usual convention), with surface and datum elevations 0.
 * SEG-Y rev 1 stores the sample interval in whole microseconds and at most 32767 samples per
 * trace: other jobs are refused with what to change (tw_segy_check_job), never resampled.
 *
 * In (tw_segy_read_model): a post-stack cube sorted by inline and crossline, as segyio
 * understands it (segy_sorting, segy_lines_count): x follows the inlines and y the crosslines in
 * the order they appear in the file, z the samples. IBM and IEEE floats and 1-, 2- and 4-byte
 * integers, big- or little-endian (the latter found from the binary header's format code). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"

#ifdef TW_HAVE_SEGYIO
#include <segyio/segy.h>
#endif

#define SEGY_MAX_SHORT 32767 /* samples per trace, interval in µs: 2-byte signed fields in rev 1 */

char *tw_segy_path(const char *h5path) { return tw_sibling_path(h5path, ".sgy"); }

/* The sample interval in µs when it is a whole number (to 1e-6 µs: dt is a double, the product
 * interval·dt carries only rounding), else −1; SEGY_MAX_SHORT + 1 for any beyond SEG-Y's, whole or
 * not: a dt of 4e30 s (vp = 1e-30 m/s, which model.vp_range may allow) was cast to long beyond its
 * range and refused as "not a whole number of microseconds", its value printed with 37 digits. */
static long whole_us(double sample_dt) {
  double us = sample_dt * 1e6, r = floor(us + 0.5);
  if (r > SEGY_MAX_SHORT) return SEGY_MAX_SHORT + 1;
  return fabs(us - r) <= 1e-6 && r >= 1 ? (long)r : -1;
}

/* The SEG-Y limits on one trace, shared by the job check and the export: 0, or the status with
 * what[] (the problem), got[] (the value) and allowed[] (what to change) filled. interval > 0:
 * the job's receivers.interval (for the advice). */
static tw_status check_sampling(long nsamples, double sample_dt, int interval, double dt, char *what, size_t wl,
                                char *got, size_t gl, char *allowed, size_t al) {
  long us = whole_us(sample_dt);
  if (nsamples > SEGY_MAX_SHORT) {
    snprintf(what, wl, "more samples per trace than SEG-Y rev 1 holds (%d)", SEGY_MAX_SHORT);
    snprintf(got, gl, "%ld samples", nsamples);
    if (interval > 0)
      snprintf(allowed, al, "raise receivers.interval to at least %ld (or shorten the run)",
               (long)ceil((double)(nsamples - 1) * interval / (SEGY_MAX_SHORT - 1)));
    else
      snprintf(allowed, al, "rerun with a larger receivers.interval or a shorter run");
    return TW_EUNSUPPORTED;
  }
  if (us < 0) {
    snprintf(got, gl, "%.6f us", sample_dt * 1e6);
    if (interval > 0) {
      snprintf(what, wl,
               "the sample interval receivers.interval x time.dt = %d x %.9g s is not a whole number of microseconds, "
               "which SEG-Y stores",
               interval, dt);
      double fl = floor(dt * 1e6 + 1e-6);
      if (fl >= 1) /* a whole-µs dt makes every interval whole; rounded down, it stays stable */
        snprintf(allowed, al, "set time.dt = %.9g (dt rounded down to whole microseconds), or another dt whose "
                 "sample interval is whole microseconds", fl * 1e-6);
      else
        snprintf(allowed, al, "raise time.dt to at least 1 us");
    } else {
      snprintf(what, wl, "the sample interval %.9g s is not a whole number of microseconds, which SEG-Y stores",
               sample_dt);
      snprintf(allowed, al, "rerun with time.dt and receivers.interval whose product is whole microseconds");
    }
    return TW_EUNSUPPORTED;
  }
  if (us > SEGY_MAX_SHORT) {
    snprintf(what, wl, "a sample interval longer than SEG-Y rev 1 holds (%d us)", SEGY_MAX_SHORT);
    snprintf(got, gl, "%.10g us", sample_dt * 1e6);
    snprintf(allowed, al, "lower receivers.interval or time.dt");
    return TW_EUNSUPPORTED;
  }
  return TW_OK;
}

#define NO_SEGYIO "this torrewave was built without segyio (SEG-Y support)"
#define NO_SEGYIO_FIX \
  "install segyio (Debian: apt-get install libsegyio-dev) and rebuild; scripts/setup.sh does both"

tw_status tw_segy_check_job(const tw_job *job, char *what, size_t wl, char *got, size_t gl, char *allowed,
                             size_t al) {
  snprintf(got, gl, "true");
  if (!tw_segy_available()) {
    snprintf(what, wl, NO_SEGYIO);
    snprintf(allowed, al, "%s, or remove output.segy (torrewave export converts the HDF5 output later)", NO_SEGYIO_FIX);
    return TW_EUNSUPPORTED;
  }
  if (job->nrec < 1) {
    snprintf(what, wl, "the job records no receivers: a SEG-Y file would hold no traces");
    snprintf(allowed, al, "add receivers, or remove output.segy");
    return TW_ECONFIG;
  }
  const int interval = job->rec_interval > 0 ? job->rec_interval : 1;
  return check_sampling(job->steps / interval + 1, interval * job->dt, interval, job->dt, what, wl, got, gl, allowed,
                        al);
}

tw_status tw_segy_export(const char *h5path, const char *sgypath, tw_error *err) {
  return tw_segy_export_via(h5path, sgypath, NULL, err);
}

#ifndef TW_HAVE_SEGYIO

int tw_segy_available(void) { return 0; }

tw_status tw_segy_export_via(const char *h5path, const char *sgypath, const char *temp, tw_error *err) {
  (void)h5path, (void)temp;
  return tw_error_set(err, TW_EUNSUPPORTED, "SEG-Y '%s': %s; %s", sgypath ? sgypath : "", NO_SEGYIO, NO_SEGYIO_FIX);
}

tw_status tw_segy_read_model(const tw_job *job, const char *where, float *vp, tw_error *err) {
  (void)vp;
  return tw_error_set(err, TW_EUNSUPPORTED, "%s: model.type = \"segy\" ('%s'): %s; %s, or convert the cube to HDF5 "
                      "or raw float32 (model.type = \"hdf5\" / \"raw\")", where, job->model.file, NO_SEGYIO,
                      NO_SEGYIO_FIX);
}

int tw_segy_ours(const char *path) {
  (void)path;
  return 0;
}

void tw_segy_remove_stale(const char *h5path) { (void)h5path; }

int tw_segy_describes_other(const char *sgy, const char *h5path, char *other, size_t n) {
  (void)sgy, (void)h5path, (void)other, (void)n;
  return 0;
}

#else /* TW_HAVE_SEGYIO */

int tw_segy_available(void) { return 1; }

static const char *segy_reason(int code) {
  switch (code) {
    case SEGY_FOPEN_ERROR: return "cannot open";
    case SEGY_FSEEK_ERROR: return "seek failed (file shorter than its headers say?)";
    case SEGY_FREAD_ERROR: return "read failed (file truncated?)";
    case SEGY_FWRITE_ERROR: return "write failed (disk full?)";
    case SEGY_INVALID_FIELD: return "invalid header field";
    case SEGY_INVALID_SORTING: return "traces not sorted by inline and crossline";
    case SEGY_MISSING_LINE_INDEX: return "missing line number";
    case SEGY_INVALID_OFFSETS: return "inconsistent offsets";
    case SEGY_TRACE_SIZE_MISMATCH: return "file size is not a whole number of traces";
    case SEGY_INVALID_ARGS: return "invalid arguments";
    case SEGY_READONLY: return "file is read-only";
    default: return "segyio error";
  }
}

/* ---------------------------------------------------------------- out: scalars, headers */

/* SEG-Y scalar for values up to vmax: −100 (centimetres), −10, 1, then 10, 100, ... (a negative
 * scalar divides the stored integer, a positive one multiplies it). *mult: stored = value·mult. */
static int pick_scalar(double vmax, double *mult) {
  static const int scalars[] = {-100, -10, 1, 10, 100, 1000, 10000};
  for (size_t i = 0; i < sizeof scalars / sizeof scalars[0]; i++) {
    *mult = scalars[i] < 0 ? -scalars[i] : 1.0 / scalars[i];
    if (vmax * *mult <= 2147483647.0) return scalars[i];
  }
  return 0;
}

static int32_t scaled(double v, double mult) { return (int32_t)lround(v * mult); }

/* Horizontal offset in whole metres: negative where the receiver lies at smaller x (equal x:
 * smaller y) than the source. */
static int32_t offset_m(const double *s, const double *g) {
  double dx = g[0] - s[0], dy = g[1] - s[1], h = sqrt(dx * dx + dy * dy);
  int neg = dx < 0 || (dx == 0 && dy < 0);
  return (int32_t)lround(neg ? -h : h);
}

typedef struct {
  const tw_result *r;
  const char *h5path, *path, *temp;
  const double *src;      /* the shot's source: the first of /sources/coords (origin when none) */
  long us;                /* sample interval */
  int cscal, escal;       /* coordinate and elevation scalars */
  double cmult, emult;
  tw_error *err;
} writer;

static tw_status wfail(const writer *w, int code, const char *what) {
  return tw_error_set(w->err, TW_EIO, "SEG-Y '%s': %s: %s", w->temp, what, segy_reason(code));
}

/* Printable ASCII only (segyio maps it to EBCDIC): other bytes become '?'. */
static void text_line(char *hdr, int line, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static void text_line(char *hdr, int line, const char *fmt, ...) {
  char buf[160];
  int n = snprintf(buf, sizeof buf, "C%2d ", line);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(buf + n, sizeof buf - (size_t)n, fmt, ap);
  va_end(ap);
  char *row = hdr + (line - 1) * 80;
  size_t len = strlen(buf);
  for (size_t i = 0; i < 80; i++) {
    unsigned char ch = i < len ? (unsigned char)buf[i] : ' ';
    row[i] = (char)(ch >= 32 && ch < 127 ? ch : '?');
  }
}

/* A long name keeps its end (the file name) when it does not fit: "...tail". */
static const char *tail(const char *s, size_t room) {
  size_t n = strlen(s);
  return n <= room ? s : s + (n - room);
}

static tw_status write_textheader(const writer *w, segy_file *fp) {
  const tw_result *r = w->r;
  char hdr[SEGY_TEXT_HEADER_SIZE + 1];
  memset(hdr, ' ', SEGY_TEXT_HEADER_SIZE);
  hdr[SEGY_TEXT_HEADER_SIZE] = '\0';
  int l = 1;
  const long ns = r->nsamples;
  text_line(hdr, l++, "TORREWAVE %s: SYNTHETIC SHOT RECORD, 3D ACOUSTIC FINITE DIFFERENCES", r->version);
  text_line(hdr, l++, "JOB %s", tail(r->job_file, 70));
  text_line(hdr, l++, "RESULT %s", tail(w->h5path, 66));
  text_line(hdr, l++, "SHOT %ld (FIELD RECORD), SOURCE X %.2f Y %.2f DEPTH %.2f M", r->shot + 1, w->src[0], w->src[1],
            w->src[2]);
  text_line(hdr, l++, "GRID N %d %d %d, D %g %g %g M, ORIGIN %g %g %g M", r->n[0], r->n[1], r->n[2], r->d[0], r->d[1],
            r->d[2], r->origin[0], r->origin[1], r->origin[2]);
  text_line(hdr, l++, "TIME DT %.9g S, %ld STEPS, ORDER %d, KERNEL %s", r->dt, r->steps, r->order, r->kernel);
  text_line(hdr, l++, "TRACES %ld (ONE PER RECEIVER), %ld SAMPLES EVERY %ld US, FIRST AT T = 0", r->nrec, ns, w->us);
  text_line(hdr, l++, "SAMPLES: PRESSURE P, IEEE FLOAT (FORMAT 5), BIG-ENDIAN");
  text_line(hdr, l++, "P IN PA FOR A SOURCE STRENGTH S(T) IN KG/S2 (S = RHO * DQ/DT, Q THE INJECTED");
  text_line(hdr, l++, "VOLUME RATE); WAVELET AMPLITUDE 1 = PEAK 1 KG/S2; FREE SPACE P = S/(4 PI R)");
  text_line(hdr, l++, "COORDINATES IN METRES, X/Y SCALAR %d (BYTES 71-72), MODEL COORDINATES", w->cscal);
  text_line(hdr, l++, "DEPTHS POSITIVE DOWN FROM Z = 0, ELEVATION SCALAR %d (BYTES 69-70):", w->escal);
  text_line(hdr, l++, "SOURCE DEPTH BYTES 49-52, RECEIVER DEPTH = -GROUP ELEVATION BYTES 41-44");
  text_line(hdr, l++, "OFFSET BYTES 37-40: HORIZONTAL, WHOLE METRES, NEGATIVE WHERE THE RECEIVER");
  text_line(hdr, l++, "LIES AT SMALLER X THAN THE SOURCE (AT EQUAL X: SMALLER Y)");
  text_line(hdr, l++, "TRACE NUMBER IN RECORD (BYTES 13-16) = RECEIVER INDEX + 1 IN THE HDF5 FILE");
  for (; l <= 37; l++) text_line(hdr, l, "%s", "");
  text_line(hdr, 38, "%s", TW_SEGY_MARKER);
  text_line(hdr, 39, "SEG Y REV1");
  text_line(hdr, 40, "END TEXTUAL HEADER");
  int rc = segy_write_textheader(fp, 0, hdr);
  return rc ? wfail(w, rc, "writing the textual header failed") : TW_OK;
}

static tw_status write_binheader(const writer *w, segy_file *fp) {
  const tw_result *r = w->r;
  char bin[SEGY_BINARY_HEADER_SIZE];
  memset(bin, 0, sizeof bin);
  long dt_us = whole_us(r->dt);
  const struct {
    int field;
    long value;
  } f[] = {{SEGY_BIN_JOB_ID, 1},
           {SEGY_BIN_LINE_NUMBER, 1},
           {SEGY_BIN_REEL_NUMBER, 1},
           {SEGY_BIN_TRACES, r->nrec <= SEGY_MAX_SHORT ? r->nrec : 0},
           {SEGY_BIN_INTERVAL, w->us},
           {SEGY_BIN_INTERVAL_ORIG, dt_us > 0 && dt_us <= SEGY_MAX_SHORT ? dt_us : 0},
           {SEGY_BIN_SAMPLES, r->nsamples},
           {SEGY_BIN_SAMPLES_ORIG, r->nsamples},
           {SEGY_BIN_FORMAT, SEGY_IEEE_FLOAT_4_BYTE},
           {SEGY_BIN_ENSEMBLE_FOLD, 1},
           {SEGY_BIN_SORTING_CODE, 1},      /* as recorded */
           {SEGY_BIN_MEASUREMENT_SYSTEM, 1}, /* metres */
           {SEGY_BIN_IMPULSE_POLARITY, 2},  /* more pressure: a larger number */
           {SEGY_BIN_SEGY_REVISION, 0x0100}, /* rev 1.0 */
           {SEGY_BIN_TRACE_FLAG, 1},        /* every trace has nsamples samples */
           {SEGY_BIN_EXT_HEADERS, 0}};
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (segy_set_bfield(bin, f[i].field, (int32_t)f[i].value)) return wfail(w, SEGY_INVALID_FIELD, "binary header");
  int rc = segy_write_binheader(fp, bin);
  return rc ? wfail(w, rc, "writing the binary header failed") : TW_OK;
}

static tw_status write_trace(const writer *w, segy_file *fp, long rec, const float *samples, float *buf) {
  const tw_result *r = w->r;
  const double *g = r->rec + 3 * rec, *s = w->src;
  const int32_t shot = (int32_t)(r->shot + 1), seq = (int32_t)(rec + 1);
  char th[SEGY_TRACE_HEADER_SIZE];
  memset(th, 0, sizeof th);
  const struct {
    int field;
    int32_t value;
  } f[] = {{SEGY_TR_SEQ_LINE, seq},
           {SEGY_TR_SEQ_FILE, seq},
           {SEGY_TR_FIELD_RECORD, shot},
           {SEGY_TR_NUMBER_ORIG_FIELD, seq},
           {SEGY_TR_ENERGY_SOURCE_POINT, shot},
           {SEGY_TR_TRACE_ID, 1},
           {SEGY_TR_DATA_USE, 1},
           {SEGY_TR_OFFSET, offset_m(s, g)},
           {SEGY_TR_RECV_GROUP_ELEV, scaled(-g[2], w->emult)},
           {SEGY_TR_SOURCE_DEPTH, scaled(s[2], w->emult)},
           {SEGY_TR_ELEV_SCALAR, w->escal},
           {SEGY_TR_SOURCE_GROUP_SCALAR, w->cscal},
           {SEGY_TR_SOURCE_X, scaled(s[0], w->cmult)},
           {SEGY_TR_SOURCE_Y, scaled(s[1], w->cmult)},
           {SEGY_TR_GROUP_X, scaled(g[0], w->cmult)},
           {SEGY_TR_GROUP_Y, scaled(g[1], w->cmult)},
           {SEGY_TR_COORD_UNITS, 1},
           {SEGY_TR_SAMPLE_COUNT, (int32_t)r->nsamples},
           {SEGY_TR_SAMPLE_INTER, (int32_t)w->us},
           {SEGY_TR_MEASURE_UNIT, 1}}; /* pascal */
  for (size_t i = 0; i < sizeof f / sizeof f[0]; i++)
    if (segy_set_field(th, f[i].field, f[i].value)) return wfail(w, SEGY_INVALID_FIELD, "trace header");
  const int bsize = (int)r->nsamples * 4;
  int rc = segy_write_traceheader(fp, (int)rec, th, SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE, bsize);
  memcpy(buf, samples, (size_t)bsize);
  if (!rc) rc = segy_from_native(SEGY_IEEE_FLOAT_4_BYTE, r->nsamples, buf);
  if (!rc) rc = segy_writetrace(fp, (int)rec, buf, SEGY_TEXT_HEADER_SIZE + SEGY_BINARY_HEADER_SIZE, bsize);
  if (rc) {
    char what[96];
    snprintf(what, sizeof what, "writing trace %ld failed", rec + 1);
    return wfail(w, rc, what);
  }
  return TW_OK;
}

/* All traces, read from the result in blocks of about 32 MiB. */
static tw_status write_traces(const writer *w, segy_file *fp) {
  const tw_result *r = w->r;
  const size_t row = (size_t)r->nsamples * sizeof(float);
  long block = (long)(((size_t)32 << 20) / row);
  if (block < 1) block = 1;
  if (block > r->nrec) block = r->nrec;
  float *traces = malloc((size_t)block * row), *buf = malloc(row);
  tw_status st = traces && buf ? TW_OK : tw_error_set(w->err, TW_ENOMEM, "SEG-Y '%s': out of memory", w->path);
  for (long first = 0; !st && first < r->nrec; first += block) {
    long count = r->nrec - first < block ? r->nrec - first : block;
    st = tw_result_read_traces(r, first, count, traces, w->err);
    for (long i = 0; !st && i < count; i++) st = write_trace(w, fp, first + i, traces + (size_t)i * r->nsamples, buf);
  }
  free(traces);
  free(buf);
  return st;
}

static tw_status write_file(writer *w) {
  segy_file *fp = segy_open(w->temp, "w+b");
  if (!fp) return tw_error_set(w->err, TW_EIO, "SEG-Y '%s': cannot create '%s': %s", w->path, w->temp, strerror(errno));
  tw_status st = segy_set_format(fp, SEGY_IEEE_FLOAT_4_BYTE) ? wfail(w, SEGY_INVALID_ARGS, "format") : TW_OK;
  if (!st) st = write_textheader(w, fp);
  if (!st) st = write_binheader(w, fp);
  if (!st) st = write_traces(w, fp);
  int rc = segy_close(fp); /* flushes: a full disk often shows only here */
  if (rc && !st) st = wfail(w, rc, "closing failed");
  if (!st) st = tw_io_fsync(w->temp, w->err);
  return st;
}

/* The result's traces must fit SEG-Y rev 1 (same rules as the job check). */
static tw_status check_result(const writer *w) {
  const tw_result *r = w->r;
  if (r->nrec < 1 || r->nsamples < 1)
    return tw_error_set(w->err, TW_EFORMAT, "SEG-Y '%s': result '%s' holds no receiver traces", w->path, w->h5path);
  char what[512], got[64], allowed[512];
  tw_status st =
      check_sampling(r->nsamples, r->sample_dt, 0, r->dt, what, sizeof what, got, sizeof got, allowed, sizeof allowed);
  if (st)
    return tw_error_set(w->err, st, "SEG-Y '%s': result '%s': %s: got %s; %s", w->path, w->h5path, what, got, allowed);
  return TW_OK;
}

tw_status tw_segy_export_via(const char *h5path, const char *sgypath, const char *via, tw_error *err) {
  if (!h5path || !sgypath) return tw_error_set(err, TW_EINVAL, "tw_segy_export: NULL path");
  tw_result *r = NULL;
  tw_status st = tw_result_open_meta(h5path, &r, err);
  if (st) return st;
  static const double origin[3] = {0, 0, 0};
  writer w = {r, h5path, sgypath, NULL, r->nsrc > 0 ? r->src : origin, whole_us(r->sample_dt), 0, 0, 1, 1, err};
  st = check_result(&w);
  double cmax = 0, emax = 0; /* largest |x|, |y| and |z| of the receivers and the source */
  for (long i = 0; i <= r->nrec && !st; i++) {
    const double *p = i < r->nrec ? r->rec + 3 * i : w.src;
    cmax = fmax(cmax, fmax(fabs(p[0]), fabs(p[1])));
    emax = fmax(emax, fabs(p[2]));
  }
  w.cscal = pick_scalar(cmax, &w.cmult);
  w.escal = pick_scalar(emax, &w.emult);
  if (!st && (!w.cscal || !w.escal))
    st = tw_error_set(err, TW_ERANGE, "SEG-Y '%s': coordinates up to %g m do not fit SEG-Y's 32-bit fields", sgypath,
                      fmax(cmax, emax));
  char *temp = st || via ? NULL : tw_io_temp_name(sgypath);
  if (!st && !via && !temp) st = tw_error_set(err, TW_ENOMEM, "SEG-Y '%s': out of memory", sgypath);
  if (!st) {
    w.temp = via ? via : temp;
    st = write_file(&w);
    if (!st && !via) st = tw_io_publish(temp, sgypath, err);
    if (st) unlink(w.temp);
  }
  free(temp);
  tw_result_close(r);
  return st;
}

int tw_segy_ours(const char *path) {
  segy_file *fp = path ? segy_open(path, "rb") : NULL;
  char text[SEGY_TEXT_HEADER_SIZE + 1] = {0}, bin[SEGY_BINARY_HEADER_SIZE];
  const int ours = fp && segy_read_textheader(fp, text) == SEGY_OK && strstr(text, TW_SEGY_MARKER) &&
                   segy_binheader(fp, bin) == SEGY_OK;
  if (fp) segy_close(fp);
  return ours;
}

/* The base name of the result a SEG-Y file of ours was written from, read back from its textual
 * header's line 3 ("RESULT <path>", write_textheader) into name[n]: 1, or 0 when the file is not
 * ours or the name is not known whole (a path longer than the line keeps only its end). */
static int result_name(const char *path, char *name, size_t n) {
  static const char head[] = "C 3 RESULT ";
  segy_file *fp = path ? segy_open(path, "rb") : NULL;
  char text[SEGY_TEXT_HEADER_SIZE + 1] = {0};
  const int ours = fp && segy_read_textheader(fp, text) == SEGY_OK && strstr(text, TW_SEGY_MARKER);
  if (fp) segy_close(fp);
  if (!ours || strncmp(text + 2 * 80, head, sizeof head - 1) != 0) return 0;
  char *p = text + 2 * 80 + sizeof head - 1, *e = text + 3 * 80;
  while (e > p && e[-1] == ' ') e--;
  *e = '\0';
  const char *slash = strrchr(p, '/'), *base = slash ? slash + 1 : p;
  if ((!slash && e - p >= 66) || !*base || strlen(base) >= n) return 0; /* (66: tail()'s room on that line) */
  memcpy(name, base, strlen(base) + 1);
  return 1;
}

int tw_segy_describes_other(const char *sgy, const char *h5path, char *other, size_t n) {
  return result_name(sgy, other, n) && tw_other_output_beside(h5path, other);
}

/* A SEG-Y file torrewave wrote beside an HDF5 output of the same name is stale once that output
 * is rewritten without output.segy: remove it, but only one that carries our marker, and not the
 * SEG-Y file of another output that is there ("q" and "q.h5" share "q.sgy": a run onto "q" removed
 * the SEG-Y file of "q.h5"). */
void tw_segy_remove_stale(const char *h5path) {
  char *path = tw_segy_path(h5path), other[512];
  if (path && tw_segy_ours(path) && !tw_segy_describes_other(path, h5path, other, sizeof other)) unlink(path);
  free(path);
}

/* ---------------------------------------------------------------- in: velocity cubes */

static int known_format(int f) {
  return f == SEGY_IBM_FLOAT_4_BYTE || f == SEGY_IEEE_FLOAT_4_BYTE || f == SEGY_SIGNED_INTEGER_4_BYTE ||
         f == SEGY_SIGNED_SHORT_2_BYTE || f == SEGY_SIGNED_CHAR_1_BYTE;
}

/* Samples as segyio hands them over after segy_to_native (floats converted; integers in host
 * order) → float. */
static void to_float(int format, const void *buf, int n, float *out) {
  for (int k = 0; k < n; k++) {
    switch (format) {
      case SEGY_SIGNED_INTEGER_4_BYTE: out[k] = (float)((const int32_t *)buf)[k]; break;
      case SEGY_SIGNED_SHORT_2_BYTE: out[k] = (float)((const int16_t *)buf)[k]; break;
      case SEGY_SIGNED_CHAR_1_BYTE: out[k] = (float)((const int8_t *)buf)[k]; break;
      default: out[k] = ((const float *)buf)[k];
    }
  }
}

typedef struct {
  const char *where, *path;
  segy_file *fp;
  int format, ns, bsize, traces, sorting, nil, nxl;
  long trace0;
  int *ilines, *xlines;   /* the line numbers, in file order */
  tw_error *err;
} reader;

static tw_status rfail(const reader *m, int code, const char *what) {
  return tw_error_set(m->err, code == SEGY_INVALID_SORTING ? TW_EFORMAT : TW_EIO, "%s: model.file: '%s': %s: %s",
                      m->where, m->path, what, segy_reason(code));
}

/* Binary header: format (and from it the byte order), samples, first trace. */
static tw_status read_layout(reader *m) {
  char bin[SEGY_BINARY_HEADER_SIZE];
  int rc = segy_binheader(m->fp, bin);
  if (rc) return rfail(m, rc, "reading the binary header failed (not a SEG-Y file?)");
  int format = segy_format(bin), lsb = 0;
  if (!known_format(format)) { /* little-endian files read as a big-endian code (5 → 1280) */
    const int le = segy_set_format(m->fp, SEGY_LSB) == SEGY_OK && segy_binheader(m->fp, bin) == SEGY_OK
                       ? segy_format(bin) : format;
    if (!known_format(le)) {
      char code[64]; /* a little-endian file's code is its own: 6, not 1536 */
      const int small = le > 0 && le < 256;
      snprintf(code, sizeof code, small && le != format ? "%d (little-endian)" : "%d", small ? le : format);
      return tw_error_set(m->err, TW_EFORMAT,
                          "%s: model.file: '%s': sample format code %s (binary header bytes 3225-3226) is not one of "
                          "1 (IBM float), 5 (IEEE float), 2, 3, 8 (4-, 2-, 1-byte integers)",
                          m->where, m->path, code);
    }
    lsb = 1, format = le;
  }
  m->format = format;
  m->ns = segy_samples(bin);
  m->trace0 = segy_trace0(bin);
  if (m->ns < 1)
    return tw_error_set(m->err, TW_EFORMAT, "%s: model.file: '%s': %d samples per trace (binary header bytes "
                        "3221-3222)", m->where, m->path, m->ns);
  m->bsize = segy_trsize(format, m->ns);
  if (segy_set_format(m->fp, format | (lsb ? SEGY_LSB : SEGY_MSB)))
    return rfail(m, SEGY_INVALID_ARGS, "setting the sample format failed");
  rc = segy_traces(m->fp, &m->traces, m->trace0, m->bsize);
  return rc ? rfail(m, rc, "counting the traces failed") : TW_OK;
}

/* segyio's geometry: sorted by inline and crossline, post-stack, a full cube. */
static tw_status read_geometry(reader *m, const tw_job *job) {
  const int il = job->model.inline_byte, xl = job->model.crossline_byte;
  int offsets = 0;
  int rc = segy_sorting(m->fp, il, xl, SEGY_TR_OFFSET, &m->sorting, m->trace0, m->bsize);
  if (!rc && m->sorting == SEGY_UNKNOWN_SORTING) rc = SEGY_INVALID_SORTING;
  if (rc)
    return tw_error_set(m->err, TW_EFORMAT,
                        "%s: model.file: '%s': not a 3-D cube sorted by inline and crossline (segyio: %s; inline "
                        "numbers read from trace-header bytes %d, crosslines from %d: model.inline_byte and "
                        "model.crossline_byte choose others)",
                        m->where, m->path, segy_reason(rc), il, xl);
  rc = segy_offsets(m->fp, il, xl, m->traces, &offsets, m->trace0, m->bsize);
  if (rc) return rfail(m, rc, "counting the offsets failed");
  if (offsets != 1)
    return tw_error_set(m->err, TW_EFORMAT, "%s: model.file: '%s': %d offsets per inline/crossline (pre-stack data); "
                        "a velocity model has one trace per (inline, crossline)", m->where, m->path, offsets);
  rc = segy_lines_count(m->fp, il, xl, m->sorting, offsets, &m->nil, &m->nxl, m->trace0, m->bsize);
  if (rc) return rfail(m, rc, "counting the inlines and crosslines failed");
  if ((long)m->nil * m->nxl != m->traces) { /* segyio's counts come from the first line: say so */
    const int inl = m->sorting == SEGY_INLINE_SORTING;
    return tw_error_set(m->err, TW_EFORMAT, "%s: model.file: '%s': %d traces are not a full cube: the first %s holds "
                        "%d traces, and %d traces are not a whole number of such lines (a trace missing or repeated; "
                        "segyio reads %d %s x %d %s)", m->where, m->path, m->traces, inl ? "inline" : "crossline",
                        inl ? m->nxl : m->nil, m->traces, m->nil, "inlines", m->nxl, "crosslines");
  }
  if (!(m->ilines = malloc((size_t)m->nil * sizeof(int))) || !(m->xlines = malloc((size_t)m->nxl * sizeof(int))))
    return tw_error_set(m->err, TW_ENOMEM, "%s: model: out of memory", m->where);
  rc = segy_inline_indices(m->fp, il, m->sorting, m->nil, m->nxl, offsets, m->ilines, m->trace0, m->bsize);
  if (!rc) rc = segy_crossline_indices(m->fp, xl, m->sorting, m->nil, m->nxl, offsets, m->xlines, m->trace0, m->bsize);
  if (rc) return rfail(m, rc, "reading the line numbers failed");
  const int *lines[2] = {m->ilines, m->xlines}, count[2] = {m->nil, m->nxl}, byte[2] = {il, xl};
  for (int a = 0; a < 2; a++) /* segyio infers the counts from where numbers repeat: they must be distinct */
    for (int i = 1; i < count[a]; i++) {
      const int *v = lines[a];
      if (v[i] != v[i - 1] && (v[i] > v[i - 1]) == (v[1] > v[0])) continue;
      return tw_error_set(m->err, TW_EFORMAT,
                          "%s: model.file: '%s': the %s numbers (trace-header bytes %d-%d) are not distinct and "
                          "ordered: %d, %d, ..., %d, %d (model.%s_byte chooses another field)",
                          m->where, m->path, a ? "crossline" : "inline", byte[a], byte[a] + 3, v[0],
                          count[a] > 1 ? v[1] : v[0], v[i - 1], v[i], a ? "crossline" : "inline");
    }
  const int *n = job->n;
  if (m->nil != n[0] || m->nxl != n[1] || m->ns != n[2])
    return tw_error_set(m->err, TW_EMISMATCH,
                        "%s: model.file: '%s' is a cube of %d inlines x %d crosslines x %d samples, but grid.n = [%d, "
                        "%d, %d] (x along the inlines, y along the crosslines, z along the samples)",
                        m->where, m->path, m->nil, m->nxl, m->ns, n[0], n[1], n[2]);
  return TW_OK;
}

/* Trace t must carry the inline and crossline numbers of its place in the cube. */
static tw_status check_trace_lines(const reader *m, const tw_job *job, int t, size_t i, size_t j) {
  char th[SEGY_TRACE_HEADER_SIZE];
  int32_t il = 0, xl = 0;
  int rc = segy_traceheader(m->fp, t, th, m->trace0, m->bsize);
  if (!rc) rc = segy_get_field(th, job->model.inline_byte, &il);
  if (!rc) rc = segy_get_field(th, job->model.crossline_byte, &xl);
  if (rc) return rfail(m, rc, "reading a trace header failed");
  if (il == m->ilines[i] && xl == m->xlines[j]) return TW_OK;
  return tw_error_set(m->err, TW_EFORMAT,
                      "%s: model.file: '%s': trace %d has inline %d, crossline %d where the cube's order puts inline "
                      "%d, crossline %d (every (inline, crossline) once, sorted by one of them)",
                      m->where, m->path, t + 1, (int)il, (int)xl, m->ilines[i], m->xlines[j]);
}

tw_status tw_segy_read_model(const tw_job *job, const char *where, float *vp, tw_error *err) {
  reader m = {where, job->model.file, NULL, 0, 0, 0, 0, 0, 0, 0, 0, NULL, NULL, err};
  m.fp = segy_open(m.path, "rb");
  if (!m.fp) return tw_error_set(err, TW_EIO, "%s: model.file: cannot open '%s': %s", where, m.path, strerror(errno));
  /* Mapped, segyio reads a trace and its header with a memcpy each, not a seek and a read(2) each
   * (four system calls a trace, a million traces in a 1000 x 1000 cube); unmapped when it cannot.
   * (A file another process cuts short while it is read would now end the run with SIGBUS.) */
  segy_mmap(m.fp);
  tw_status st = read_layout(&m);
  if (!st) st = read_geometry(&m, job);
  void *buf = st ? NULL : malloc((size_t)m.bsize);
  if (!st && !buf) st = tw_error_set(err, TW_ENOMEM, "%s: model: out of memory", where);
  const size_t ny = (size_t)job->n[1], nz = (size_t)job->n[2];
  for (int t = 0; !st && t < m.traces; t++) {
    int rc = segy_readtrace(m.fp, t, buf, m.trace0, m.bsize);
    if (!rc) rc = segy_to_native(m.format, m.ns, buf);
    if (rc) {
      char what[64];
      snprintf(what, sizeof what, "reading trace %d failed", t + 1);
      st = rfail(&m, rc, what);
      break;
    }
    /* inline sorting: the crosslines of one inline are consecutive traces */
    size_t i = (size_t)(m.sorting == SEGY_INLINE_SORTING ? t / m.nxl : t % m.nil);
    size_t j = (size_t)(m.sorting == SEGY_INLINE_SORTING ? t % m.nxl : t / m.nil);
    st = check_trace_lines(&m, job, t, i, j);
    if (!st) to_float(m.format, buf, m.ns, vp + (i * ny + j) * nz);
  }
  free(buf);
  free(m.ilines);
  free(m.xlines);
  segy_close(m.fp);
  return st;
}

#endif /* TW_HAVE_SEGYIO */
