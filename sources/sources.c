#define _POSIX_C_SOURCE 200809L
#define _DEFAULT_SOURCE
#include "tw_sources.h"

#include <ctype.h>
#include <errno.h>
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
    const double u = (pos[a] - g->origin[a]) / g->d[a], umax = g->n[a] - 1;
    if (!(u >= -1e-9) || !(u <= umax + 1e-9))
      return tw_error_set(err, TW_ERANGE, "%c = %g m is outside the model: allowed %g .. %g m", axis_name[a], pos[a],
                          g->origin[a], g->origin[a] + umax * g->d[a]);
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
  const double a = pi * pi * f * f * (t - t0) * (t - t0);
  return amplitude * (1.0 - 2.0 * a) * exp(-a);
}

/* One number per line; blank lines and '#' comments are skipped. */
static tw_status read_samples(const char *path, double **vals, long *count, tw_error *err) {
  FILE *f = fopen(path, "r");
  if (!f) return tw_error_set(err, TW_EIO, "wavelet file '%s': %s", path, strerror(errno));
  long n = 0, cap = 1024, line = 0;
  double *v = malloc((size_t)cap * sizeof *v);
  char buf[512];
  tw_status st = v ? TW_OK : tw_error_set(err, TW_ENOMEM, "wavelet file '%s': out of memory", path);
  while (st == TW_OK && fgets(buf, sizeof buf, f)) {
    line++;
    char *s = buf;
    while (isspace((unsigned char)*s)) s++;
    if (!*s || *s == '#') continue;
    char *end;
    double x = strtod(s, &end);
    while (isspace((unsigned char)*end)) end++;
    if (end == s || (*end && *end != '#') || !isfinite(x)) {
      st = tw_error_set(err, TW_EFORMAT, "wavelet file '%s', line %ld: not a finite number: \"%.40s\"", path, line, s);
      break;
    }
    if (n == cap) {
      double *nv = realloc(v, (size_t)(cap *= 2) * sizeof *v);
      if (!nv) {
        st = tw_error_set(err, TW_ENOMEM, "wavelet file '%s': out of memory", path);
        break;
      }
      v = nv;
    }
    v[n++] = x;
  }
  fclose(f);
  if (st == TW_OK && n == 0) st = tw_error_set(err, TW_EFORMAT, "wavelet file '%s' holds no samples", path);
  if (st != TW_OK) {
    free(v);
    return st;
  }
  *vals = v;
  *count = n;
  return TW_OK;
}

tw_status tw_wavelet_sample(const tw_wavelet_spec *w, const char *job_path, double dt, long nsteps, float *out,
                            tw_error *err) {
  if (w->type == TW_WAVELET_RICKER) {
    for (long n = 0; n <= nsteps; n++) out[n] = (float)tw_ricker(n * dt, w->frequency, w->delay, w->amplitude);
    return TW_OK;
  }
  double *v;
  long cnt;
  tw_status st = read_samples(w->file, &v, &cnt, err);
  if (st) return job_path ? tw_error_prefix(err, "%s: wavelet line %d", job_path, w->line) : st;
  const double fdt = w->file_dt > 0 ? w->file_dt : dt;
  for (long n = 0; n <= nsteps; n++) { /* linear interpolation; zero past the last sample */
    const double u = n * dt / fdt;
    const long i = (long)floor(u);
    const double f = u - i;
    double s = 0.0;
    if (i < cnt) s = v[i] * (1.0 - f) + (i + 1 < cnt ? v[i + 1] : 0.0) * f;
    out[n] = (float)s;
  }
  free(v);
  return TW_OK;
}
