#define _DEFAULT_SOURCE /* madvise */
#define _POSIX_C_SOURCE 200809L
#include "tw_common.h"

#include <ctype.h>
#include <float.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

static const char *const status_names[] = {
#define TW_X(code, name, text) name,
    TW_STATUS_MAP(TW_X)
#undef TW_X
};
static const char *const status_texts[] = {
#define TW_X(code, name, text) text,
    TW_STATUS_MAP(TW_X)
#undef TW_X
};

const char *tw_status_name(tw_status s) {
  return (s >= 0 && s < TW_STATUS_COUNT) ? status_names[s] : "EUNKNOWN";
}
const char *tw_status_text(tw_status s) {
  return (s >= 0 && s < TW_STATUS_COUNT) ? status_texts[s] : "unknown error";
}

tw_status tw_error_set(tw_error *err, tw_status code, const char *fmt, ...) {
  if (err) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err->msg, sizeof err->msg, fmt, ap);
    va_end(ap);
    err->code = code;
  }
  return code;
}

tw_status tw_error_prefix(tw_error *err, const char *fmt, ...) {
  if (!err) return TW_EINTERNAL;
  char head[TW_ERROR_MSG], old[TW_ERROR_MSG];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(head, sizeof head, fmt, ap);
  va_end(ap);
  memcpy(old, err->msg, sizeof old);
  /* head + ": " + old, truncated to the message size. */
  size_t hl = strnlen(head, sizeof err->msg - 1), ol = strnlen(old, sizeof old);
  size_t room = sizeof err->msg - 1;
  memcpy(err->msg, head, hl);
  size_t at = hl;
  if (at + 2 <= room) memcpy(err->msg + at, ": ", 2), at += 2;
  if (ol > room - at) ol = room - at;
  memcpy(err->msg + at, old, ol);
  err->msg[at + ol] = '\0';
  return err->code;
}

void tw_error_clear(tw_error *err) {
  if (err) {
    err->code = TW_OK;
    err->msg[0] = '\0';
  }
}

tw_status tw_parse_memsize(const char *text, uint64_t *bytes, tw_error *err) {
  if (!text || !*text) return tw_error_set(err, TW_EINVAL, "empty memory size (expected e.g. \"512M\", \"8G\")");
  char *end = NULL;
  double v = strtod(text, &end);
  if (end == text || !isfinite(v) || v < 0)
    return tw_error_set(err, TW_EINVAL, "memory size \"%s\" is not a non-negative number with optional K, M, G or T suffix", text);
  double mult = 1.0;
  if (*end) {
    switch (toupper((unsigned char)*end)) {
      case 'K': mult = 1024.0; break;
      case 'M': mult = 1024.0 * 1024; break;
      case 'G': mult = 1024.0 * 1024 * 1024; break;
      case 'T': mult = 1024.0 * 1024 * 1024 * 1024; break;
      default:
        return tw_error_set(err, TW_EINVAL, "memory size \"%s\": unknown suffix '%c' (allowed: K, M, G, T)", text, *end);
    }
    end++;
    if (*end == 'i') end++;                          /* "8GiB", "8Gi": the binary units, as the logs write them */
    if (toupper((unsigned char)*end) == 'B') end++; /* accept "8GB" too */
    if (*end) return tw_error_set(err, TW_EINVAL, "memory size \"%s\": trailing characters \"%s\"", text, end);
  }
  double b = v * mult;
  if (b > 1.8e19) return tw_error_set(err, TW_ERANGE, "memory size \"%s\" is too large", text);
  *bytes = (uint64_t)b;
  return TW_OK;
}

const char *tw_format_bytes(double bytes, char *buf, size_t len) {
  const char *unit[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
  int u = 0;
  while (bytes >= 1024.0 && u < 5) {
    bytes /= 1024.0;
    u++;
  }
  snprintf(buf, len, u ? "%.2f %s" : "%.0f %s", bytes, unit[u]);
  return buf;
}

const char *tw_format_decimal(double v, int decimals, char *buf, size_t len) {
  const double a = fabs(v);
  if (v == 0.0 || (a >= pow(10.0, -decimals) && a < 1e6))
    snprintf(buf, len, "%.*f", decimals, v);
  else
    snprintf(buf, len, "%.3g", v);
  return buf;
}

void *tw_alloc_large(size_t bytes) {
  const size_t huge = (size_t)2 << 20;
  if (bytes < huge) return malloc(bytes ? bytes : 1);
  void *p = NULL;
  if (posix_memalign(&p, huge, bytes) != 0) return NULL;
#ifdef MADV_HUGEPAGE
  madvise(p, bytes, MADV_HUGEPAGE); /* advice only: without THP the pages are simply small */
#endif
  return p;
}

double tw_wall_seconds(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

uint64_t tw_host_memory_available(void) {
  FILE *f = fopen("/proc/meminfo", "r");
  if (!f) return 0;
  char line[256];
  unsigned long long kb = 0;
  while (fgets(line, sizeof line, f))
    if (sscanf(line, "MemAvailable: %llu kB", &kb) == 1) break;
  fclose(f);
  return (uint64_t)kb * 1024u;
}

uint64_t tw_hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull;
  return h;
}

uint64_t tw_hash_string(uint64_t h, const char *s) { return tw_hash_bytes(h, s ? s : "", strlen(s ? s : "") + 1); }

double tw_axis_cells(double origin, double d, double v) { return (v - origin) / d; }

/* ε(|v| + |origin|) bounds the rounding of the grid's own origin + (n − 1)·d and of the subtraction,
 * ε/2 each the rounding of v and origin written in decimal: 2ε, about 2 ulps of the coordinates, no
 * more (coordinates are known to no better; at 5e6 m, 2e-9 m). The division and (n − 1)·d add
 * below 2^-53·n cells, within the 1e-9 for any n up to 2^20. */
double tw_axis_slack(double origin, double d, double v) {
  return 1e-9 + 2.0 * DBL_EPSILON * (fabs(origin) + fabs(v)) / d;
}

int tw_axis_inside(double origin, double d, int n, double v) {
  const double u = tw_axis_cells(origin, d, v), s = tw_axis_slack(origin, d, v);
  return u >= -s && u <= (n - 1) + s;
}

int tw_axis_reached(double origin, double d, int k, double v) {
  return tw_axis_cells(origin, d, v) <= k + tw_axis_slack(origin, d, v);
}

int tw_axis_span(double origin, double d, int n, double from, double to, int *first, int *last) {
  int i0 = (int)ceil(tw_axis_cells(origin, d, from) - tw_axis_slack(origin, d, from));
  int i1 = (int)floor(tw_axis_cells(origin, d, to) + tw_axis_slack(origin, d, to));
  if (i0 < 0) i0 = 0;
  if (i1 > n - 1) i1 = n - 1;
  *first = i0, *last = i1;
  return i1 >= i0 ? i1 - i0 + 1 : 0;
}

int tw_edit_distance(const char *a, const char *b) {
  size_t la = strlen(a), lb = strlen(b);
  if (la > 63 || lb > 63) return 99;
  int row[64];
  for (size_t j = 0; j <= lb; j++) row[j] = (int)j;
  for (size_t i = 1; i <= la; i++) {
    int prev = row[0];
    row[0] = (int)i;
    for (size_t j = 1; j <= lb; j++) {
      int cur = row[j];
      int cost = (tolower((unsigned char)a[i - 1]) == tolower((unsigned char)b[j - 1])) ? 0 : 1;
      int best = prev + cost;
      if (row[j] + 1 < best) best = row[j] + 1;
      if (row[j - 1] + 1 < best) best = row[j - 1] + 1;
      row[j] = best;
      prev = cur;
    }
  }
  return row[lb];
}

int tw_fd_coefficients(int order, double C[9]) {
  if (order < 2 || order > 16 || order % 2) return 0;
  int r = order / 2;
  double fr = 1.0;
  for (int i = 2; i <= r; i++) fr *= i;
  for (int m = 1; m <= r; m++) {
    double a = 1.0, b = 1.0; /* (r − m)!, (r + m)! */
    for (int i = 2; i <= r - m; i++) a *= i;
    for (int i = 2; i <= r + m; i++) b *= i;
    C[m] = 2.0 * ((m % 2) ? 1.0 : -1.0) * fr * fr / ((double)m * m * a * b);
  }
  C[0] = 0.0;
  return r;
}

double tw_fd_lambda(int order) {
  double C[9];
  int r = tw_fd_coefficients(order, C);
  double lam = 0.0;
  for (int m = 1; m <= r; m += 2) lam += 4.0 * C[m]; /* sin²(mπ/2) = 1 for odd m, 0 for even */
  return lam;
}
