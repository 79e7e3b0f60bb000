#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include "tw_sources.h"

#include <ctype.h>
#include <errno.h>
#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char axis_name[3] = {'x', 'y', 'z'};

tw_status tw_place(const tw_grid *g, const double pos[3], tw_interp interp, int drop_surface, tw_taps *out,
                   tw_error *err) {
  int i0[3];
  double fr[3];
  for (int a = 0; a < 3; a++) {
    /* Inside as the validation tests it (tw_axis_inside), with twice its slack: a point between two
     * the validation accepted (a receiver line's) may round an ulp past the farther one. A point
     * up to the slack outside is placed on the edge cell (the clamps below). */
    const double u = tw_axis_cells(g->origin[a], g->d[a], pos[a]), umax = g->n[a] - 1;
    const double slack = 2.0 * tw_axis_slack(g->origin[a], g->d[a], pos[a]);
    if (!(u >= -slack) || !(u <= umax + slack))
      return tw_error_set(err, TW_ERANGE, "%c = %.15g m is outside the model: allowed %.15g .. %.15g m", axis_name[a],
                          pos[a], g->origin[a], g->origin[a] + umax * g->d[a]);
    if (interp == TW_INTERP_NEAREST) {
      i0[a] = (int)floor(u + 0.5);
      fr[a] = 0.0;
    } else {
      i0[a] = (int)floor(u);
      fr[a] = u - i0[a];
    }
    if (i0[a] < 0) i0[a] = 0, fr[a] = 0.0;
    if (i0[a] >= g->n[a] - 1 && fr[a] > 0.0) fr[a] = 0.0; /* the upper neighbour would be outside */
    if (i0[a] > g->n[a] - 1) i0[a] = g->n[a] - 1;
    if (fr[a] < 1e-12) fr[a] = 0.0;
  }
  out->ntap = 0;
  for (int a = 0; a < 2; a++)
    for (int b = 0; b < 2; b++)
      for (int c = 0; c < 2; c++) {
        const double w = (a ? fr[0] : 1.0 - fr[0]) * (b ? fr[1] : 1.0 - fr[1]) * (c ? fr[2] : 1.0 - fr[2]);
        if (w == 0.0) continue;
        const int K = g->lo[2] + i0[2] + c;
        if (drop_surface && K == 0) continue;
        int t = out->ntap++;
        out->ijk[t][0] = g->lo[0] + i0[0] + a;
        out->ijk[t][1] = g->lo[1] + i0[1] + b;
        out->ijk[t][2] = K;
        out->w[t] = w;
      }
  return TW_OK;
}

double tw_ricker(double t, double f, double t0, double amplitude) {
  const double pi = 3.14159265358979323846;
  double a = pi * pi * f * f * (t - t0) * (t - t0);
  if (!isfinite(a)) {
    /* π²f² overflows above f ≈ 4e153 Hz, and the product for a delay beyond 1e152 s: an infinite a
     * gave (1 − 2a)·exp(−a) = −inf·0 = NaN (and f² = inf times τ = 0 a NaN a), which check took for
     * a silent wavelet and the run met as a non-finite wavefield. The same square in an order that
     * overflows only with the pulse's own argument (π f τ), whose value there is −0, as for a finite
     * a that large. A finite a keeps the formula above, and its bits. */
    const double u = pi * (f * (t - t0));
    a = u * u;
    if (isinf(a)) return -0.0 * amplitude;
  }
  /* exp(−a) is +0 beyond a ≈ 745.2 (the smallest double's exponent): said without calling exp, whose
   * underflow path (errno) took most of `reference`'s time on the pulse's long zero tails. Same bits. */
  return amplitude * (1.0 - 2.0 * a) * (a > 746.0 ? 0.0 : exp(-a));
}

/* ---------------------------------------------------------------- wavelet files
 * One sample per line: "amplitude", or "time amplitude" (whitespace or a comma between them);
 * lines end in LF, CRLF or CR; blank lines and '#' comments are skipped. Every line of a file has
 * the same number of columns; amplitudes must fit float32 (|s| <= 3.4e38: s(t_n) is stored in
 * float32); two-column times must increase evenly (to 1 % of their spacing), which gives the
 * file's sampling and start time. */

/* "job.cfg:LINE: sources[i].wavelet.file: 'w.txt'" (where the wavelet is given: its line, or the
 * --set; the job file when not known), or "wavelet file 'w.txt'" without a job. */
static void file_where(const tw_wavelet_spec *w, const char *job_path, char *buf, size_t len) {
  if (job_path)
    snprintf(buf, len, "%s: sources[%d].wavelet.file: '%s'", w->where ? w->where : job_path, w->source, w->file);
  else
    snprintf(buf, len, "wavelet file '%s'", w->file);
}

/* Up to 40 bytes of a line as text: printable ASCII as is, anything else as \xNN. */
static void printable(const char *s, size_t n, char *buf, size_t len) {
  size_t o = 0;
  for (size_t i = 0; i < n && i < 40 && o + 5 < len; i++) {
    const unsigned char ch = (unsigned char)s[i];
    if (ch >= 0x20 && ch < 0x7f && ch != '"' && ch != '\\') buf[o++] = (char)ch;
    else o += (size_t)snprintf(buf + o, len - o, "\\x%02x", ch);
  }
  if (n > 40 && o + 4 < len) memcpy(buf + o, "...", 3), o += 3;
  buf[o] = '\0';
}

static tw_status line_error(const tw_wavelet_spec *w, const char *job_path, long line, const char *what,
                            const char *s, size_t n, tw_error *err) {
  char where[1400], got[200];
  file_where(w, job_path, where, sizeof where);
  printable(s, n, got, sizeof got);
  return tw_error_set(err, TW_EFORMAT, "%s line %ld: %s: got \"%s\"; allowed one number per line (the amplitude), "
                      "or two (time and amplitude), '#' comments", where, line, what, got);
}

/* Parse one data line (s, n bytes, no newline) into v[0..*cols). Returns 0, or an error text. */
static const char *parse_line(const char *s, size_t n, double v[2], int *cols) {
  char buf[256];
  if (n >= sizeof buf) return "a line longer than 255 characters";
  memcpy(buf, s, n);
  buf[n] = '\0';
  for (size_t i = 0; i < n; i++)
    if (buf[i] == '\0' || ((unsigned char)buf[i] < 0x20 && !isspace((unsigned char)buf[i])))
      return "not text (a binary file?)";
  char *p = buf, *e;
  *cols = 0;
  while (*cols < 3) {
    while (isspace((unsigned char)*p)) p++;
    if (*cols && *p == ',') {
      p++;
      while (isspace((unsigned char)*p)) p++;
    }
    if (!*p || *p == '#') break;
    const double x = strtod(p, &e);
    if (e == p) return "not a number";
    if (!isfinite(x)) return "not a finite number";
    if (*cols < 2) v[*cols] = x;
    (*cols)++;
    p = e;
    if (*p && !isspace((unsigned char)*p) && *p != ',' && *p != '#') return "not a number";
  }
  if (*cols > 2) return "more than two numbers";
  return NULL;
}

/* The whole file in memory (NUL bytes are content too: n is the size). */
static char *slurp(const char *path, size_t *n, int *eno) {
  FILE *f = fopen(path, "rb");
  if (!f) return *eno = errno, NULL;
  size_t cap = 1 << 16, len = 0;
  char *buf = malloc(cap);
  while (buf) {
    len += fread(buf + len, 1, cap - len, f);
    if (len < cap) break;
    char *nb = realloc(buf, cap *= 2);
    if (!nb) free(buf);
    buf = nb;
  }
  const int bad = ferror(f);
  fclose(f);
  if (!buf || bad) return free(buf), *eno = buf ? EIO : ENOMEM, NULL;
  *n = len;
  return buf;
}

tw_status tw_wavelet_read(const tw_wavelet_spec *w, const char *job_path, double run_dt, tw_wavelet_samples *out,
                          tw_error *err) {
  memset(out, 0, sizeof *out);
  char where[1400];
  file_where(w, job_path, where, sizeof where);
  size_t len = 0;
  int eno = 0;
  char *text = slurp(w->file, &len, &eno);
  if (!text) return tw_error_set(err, TW_EIO, "%s: cannot read: %s", where, strerror(eno));
  long n = 0, cap = 0, line = 0, first_line = 0;
  double *t = NULL, *v = NULL;
  int columns = 0;
  tw_status st = TW_OK;
  for (size_t at = 0; at < len && !st;) {
    /* A line ends at LF, CRLF or a CR alone (old Mac files: read as one line, two samples were
     * taken for one sample's time and amplitude) */
    const char *s = text + at;
    size_t ln = 0;
    while (at + ln < len && s[ln] != '\n' && s[ln] != '\r') ln++;
    at += ln;
    if (at < len) at += text[at] == '\r' && at + 1 < len && text[at + 1] == '\n' ? 2 : 1;
    line++;
    double x[2];
    int cols = 0;
    const char *why = parse_line(s, ln, x, &cols);
    if (why) {
      st = line_error(w, job_path, line, why, s, ln, err);
      break;
    }
    if (!cols) continue;
    if (!columns) columns = cols, first_line = line;
    if (cols != columns) {
      char what[96];
      snprintf(what, sizeof what, "%d number%s, but line %ld has %d", cols, cols > 1 ? "s" : "", first_line, columns);
      st = line_error(w, job_path, line, what, s, ln, err);
      break;
    }
    const double amp = x[cols - 1];
    if (fabs(amp) > FLT_MAX) {
      st = line_error(w, job_path, line, "an amplitude beyond the float32 range (|s| <= 3.4e38)", s, ln, err);
      break;
    }
    if (cols == 2 && n > 0 && !(x[0] > t[n - 1])) {
      st = line_error(w, job_path, line, "a time that does not increase", s, ln, err);
      break;
    }
    if (n == cap) {
      cap = cap ? 2 * cap : 1024;
      double *nv = realloc(v, (size_t)cap * sizeof *v), *nt = nv ? realloc(t, (size_t)cap * sizeof *t) : NULL;
      if (nv) v = nv;
      if (nt) t = nt;
      if (!nv || !nt) {
        st = tw_error_set(err, TW_ENOMEM, "%s: out of memory", where);
        break;
      }
    }
    v[n] = amp;
    t[n] = cols == 2 ? x[0] : 0.0;
    n++;
  }
  free(text);
  if (!st && n == 0)
    st = tw_error_set(err, TW_EFORMAT, "%s: holds no samples (%s); allowed one number per line (the amplitude), or "
                      "two (time and amplitude), '#' comments", where, len ? "only blank lines and comments" : "empty");
  double fdt = w->file_dt > 0 ? w->file_dt : run_dt, t0 = 0.0;
  if (!st && columns == 2) {
    t0 = t[0];
    if (n > 1) {
      const double spacing = (t[n - 1] - t[0]) / (double)(n - 1);
      for (long i = 0; i < n && !st; i++)
        if (fabs(t[i] - (t0 + (double)i * spacing)) > 0.01 * spacing)
          st = tw_error_set(err, TW_EFORMAT, "%s: times are not evenly spaced: got %.9g s for sample %ld, expected "
                            "%.9g s (their mean spacing is %.6g s); allowed evenly spaced times (to 1 %% of the "
                            "spacing)", where, t[i], i, t0 + (double)i * spacing, spacing);
      if (!st && w->file_dt > 0 && fabs(w->file_dt - spacing) > 1e-3 * spacing)
        st = tw_error_set(err, TW_EFORMAT, "%s: its times are spaced %.6g s, but sources[%d].wavelet.dt = %.6g s; "
                          "allowed: omit wavelet.dt with a two-column file (the times give the sampling)", where,
                          spacing, w->source, w->file_dt);
      fdt = spacing;
    }
  }
  free(t);
  if (st) {
    free(v);
    return st;
  }
  out->v = v;
  out->n = n;
  out->t0 = t0;
  out->dt = fdt;
  out->columns = columns;
  return TW_OK;
}

void tw_wavelet_samples_free(tw_wavelet_samples *s) {
  if (!s) return;
  free(s->v);
  memset(s, 0, sizeof *s);
}

/* ---------------------------------------------------------------- resampling */

/* Modified Bessel function I0 (the Kaiser window), by its power series. */
static double bessel_i0(double x) {
  double sum = 1.0, term = 1.0;
  for (int k = 1; k < 200 && term > 1e-17 * sum; k++) {
    const double h = x / (2.0 * k);
    term *= h * h;
    sum += term;
  }
  return sum;
}

#define TW_RESAMPLE_HALF 16   /* the low-pass kernel spans ±16 run steps */
#define TW_RESAMPLE_BETA 8.0  /* Kaiser β: sidelobes near −80 dB */

void tw_wavelet_resample(const double *x, long n, double t0, double fdt, double dt, long nsteps, float *out) {
  const double pi = 3.14159265358979323846;
  if (dt <= fdt * (1.0 + 1e-9)) { /* as fine as the file or finer: linear interpolation */
    for (long m = 0; m <= nsteps; m++) {
      const double u = ((double)m * dt - t0) / fdt;
      const double fl = floor(u);
      const long i = (long)fl;
      const double f = u - fl;
      const double a = i >= 0 && i < n ? x[i] : 0.0, b = i + 1 >= 0 && i + 1 < n ? x[i + 1] : 0.0;
      out[m] = (float)(a * (1.0 - f) + b * f);
    }
    return;
  }
  /* Coarser: low-pass at the run's Nyquist frequency fc = 1/(2 dt) with a Kaiser-windowed sinc of
   * half width H = 16 dt, then sample. The transition band is about ±0.08/dt around fc, so the
   * band below 0.42/dt passes (within 1e-4) and nothing above 0.58/dt aliases into it. The kernel
   * is normalized per output sample (Σ weights = 1: a constant passes exactly). */
  const double fc = 0.5 / dt, H = TW_RESAMPLE_HALF * dt, i0b = bessel_i0(TW_RESAMPLE_BETA);
  for (long m = 0; m <= nsteps; m++) {
    const double t = (double)m * dt;
    const long lo = (long)ceil((t - H - t0) / fdt), hi = (long)floor((t + H - t0) / fdt);
    if (hi < 0 || lo >= n) {
      out[m] = 0.0f;
      continue;
    }
    double sum = 0.0, wsum = 0.0;
    for (long i = lo; i <= hi; i++) {
      const double tau = t - (t0 + (double)i * fdt), r = tau / H;
      if (r <= -1.0 || r >= 1.0) continue;
      const double arg = 2.0 * pi * fc * tau;
      const double sinc = fabs(arg) < 1e-12 ? 1.0 : sin(arg) / arg;
      const double k = sinc * bessel_i0(TW_RESAMPLE_BETA * sqrt(1.0 - r * r)) / i0b;
      wsum += k;
      if (i >= 0 && i < n) sum += k * x[i];
    }
    out[m] = wsum != 0.0 ? (float)(sum / wsum) : 0.0f;
  }
}

tw_status tw_wavelet_sample(const tw_wavelet_spec *w, const char *job_path, double dt, long nsteps, float *out,
                            tw_error *err) {
  if (w->type == TW_WAVELET_RICKER) {
    for (long n = 0; n <= nsteps; n++) out[n] = (float)tw_ricker(n * dt, w->frequency, w->delay, w->amplitude);
    return TW_OK;
  }
  tw_wavelet_samples fs;
  tw_status st = tw_wavelet_read(w, job_path, dt, &fs, err);
  if (st) return st;
  tw_wavelet_resample(fs.v, fs.n, fs.t0, fs.dt, dt, nsteps, out);
  tw_wavelet_samples_free(&fs);
  for (long n = 0; n <= nsteps; n++)
    if (!isfinite(out[n])) {
      char where[1400];
      file_where(w, job_path, where, sizeof where);
      return tw_error_set(err, TW_EFORMAT, "%s: resampled to dt = %g s, the wavelet overflows float32 at step %ld; "
                          "allowed amplitudes well within 3.4e38", where, dt, n);
    }
  return TW_OK;
}

/* ---------------------------------------------------------------- spectrum */

/* In-place radix-2 FFT of re/im[n], n a power of two. */
static void fft(double *re, double *im, long n) {
  for (long i = 1, j = 0; i < n; i++) {
    long bit = n >> 1;
    for (; j & bit; bit >>= 1) j ^= bit;
    j ^= bit;
    if (i < j) {
      double t = re[i];
      re[i] = re[j], re[j] = t;
      t = im[i], im[i] = im[j], im[j] = t;
    }
  }
  const double pi = 3.14159265358979323846;
  for (long len = 2; len <= n; len <<= 1) {
    const double ang = -2.0 * pi / (double)len;
    for (long i = 0; i < n; i += len)
      for (long k = 0; k < len / 2; k++) {
        const double c = cos(ang * (double)k), s = sin(ang * (double)k);
        const long a = i + k, b = i + k + len / 2;
        const double xr = re[b] * c - im[b] * s, xi = re[b] * s + im[b] * c;
        re[b] = re[a] - xr, im[b] = im[a] - xi;
        re[a] += xr, im[a] += xi;
      }
  }
}

double tw_wavelet_fmax(const float *s, long n, double dt) {
  long len = n;
  while (len > 0 && s[len - 1] == 0.0f) len--;
  if (len == 0 || !(dt > 0)) return 0.0;
  long N = 1024;
  while (N < 4 * len && N < (1L << 22)) N <<= 1;
  if (len > N) len = N;
  double *re = calloc((size_t)N, sizeof *re), *im = calloc((size_t)N, sizeof *im);
  if (!re || !im) {
    free(re), free(im);
    return -1.0;
  }
  for (long i = 0; i < len; i++) re[i] = s[i];
  fft(re, im, N);
  double peak = 0.0;
  for (long k = 0; k <= N / 2; k++) re[k] = hypot(re[k], im[k]), peak = re[k] > peak ? re[k] : peak;
  const double thr = TW_FMAX_FRACTION * peak;
  long k = N / 2;
  while (k > 0 && re[k] < thr) k--;
  /* between bin k (>= thr) and k + 1 (< thr): where the spectrum crosses thr, linearly */
  double f = (double)k;
  if (k < N / 2 && re[k] > re[k + 1]) f += (re[k] - thr) / (re[k] - re[k + 1]);
  free(re), free(im);
  return f / ((double)N * dt);
}
