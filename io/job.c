/* job.c — the job file (docs/design.md §1b): libconfig text → validated tw_job.
 *
 * Layout of this file:
 *   1. messages: setting paths, rendered values, "file:line" locations (override-aware)
 *   2. the typed getter layer: every type / range / unknown-key / missing-key message is made here
 *   3. overrides (--set key=value) and building the config from text
 *   4. one parser per group: grid, time, scheme, boundary, model, sources, receivers, snapshots,
 *      output, solver
 *   5. the public API: load, destroy, finalize, stability and dispersion helpers
 *
 * Every error reads "<jobfile>:<line>: <key.path>: <what is wrong>: got <value>; <what is allowed>".
 * A value that came from an override reads "<jobfile>: --set k=v: <key.path>: ..." instead. */
#define _POSIX_C_SOURCE 200809L
#include "tw_io.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <float.h>
#include <libconfig.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"

#define MAX_N (1L << 20)                 /* cells per axis */
#define MAX_CELLS 1099511627776.0        /* 2^40 cells in the model */
#define MAX_STEPS 2147483647L
#define MAX_REC 100000000L               /* receivers in all */
#define MAX_SHOTS 10000000L              /* shots of a survey */
#define MAX_SNAPS 1000000L
#define MAX_ABSORB 1000L
#define DEFAULT_ABSORB 20
#define DEFAULT_ORDER 8
#define DEFAULT_MARGIN 0.9
#define SET_PREFIX "# --set "

#define TRY(x)                    \
  do {                            \
    tw_status st_ = (x);          \
    if (st_ != TW_OK) return st_; \
  } while (0)

typedef struct {
  const char *name; /* job file path as given (messages; relative files resolve from its folder) */
  tw_error *err;
} ctx;

/* ================================================================ 1. messages */

typedef struct {
  char s[320];
  size_t len;
} sbuf;

static void sb_put(sbuf *b, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void sb_put(sbuf *b, const char *fmt, ...) {
  if (b->len + 1 >= sizeof b->s) return;
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(b->s + b->len, sizeof b->s - b->len, fmt, ap);
  va_end(ap);
  if (k < 0) return;
  b->len += (size_t)k;
  if (b->len >= sizeof b->s) {
    b->len = sizeof b->s - 1;
    memcpy(b->s + b->len - 3, "...", 3);
  }
}

/* A double as the job file would spell it: 200 → "200.0", 0.0008 → "0.0008". */
static void fmt_double(char *buf, size_t n, double v) {
  snprintf(buf, n, "%.10g", v);
  if (isfinite(v) && !strpbrk(buf, ".eE") && strlen(buf) + 2 < n) strcat(buf, ".0");
}

/* A value the job gave, as fmt_double but with the digits that tell it from its neighbours (up to
 * 17, the fewest that read back as v): 10 digits showed 5000010.0000001, a region's from between two
 * cells of a UTM grid, as the cell 5000010.0, and 500190.00001, past the model's edge, as the edge. */
static void fmt_given(char *buf, size_t n, double v) {
  for (int digits = 10; digits <= 17; digits++) {
    snprintf(buf, n, "%.*g", digits, v);
    if (!isfinite(v) || strtod(buf, NULL) == v) break;
  }
  if (isfinite(v) && !strpbrk(buf, ".eE") && strlen(buf) + 2 < n) strcat(buf, ".0");
}

static void render(sbuf *b, const config_setting_t *s, int depth) {
  char num[64];
  switch (config_setting_type(s)) {
    case CONFIG_TYPE_INT: sb_put(b, "%d", config_setting_get_int(s)); break;
    case CONFIG_TYPE_INT64: sb_put(b, "%lld", config_setting_get_int64(s)); break;
    case CONFIG_TYPE_FLOAT:
      fmt_given(num, sizeof num, config_setting_get_float(s));
      sb_put(b, "%s", num);
      break;
    case CONFIG_TYPE_STRING: sb_put(b, "\"%s\"", config_setting_get_string(s)); break;
    case CONFIG_TYPE_BOOL: sb_put(b, "%s", config_setting_get_bool(s) ? "true" : "false"); break;
    case CONFIG_TYPE_ARRAY:
    case CONFIG_TYPE_LIST:
    case CONFIG_TYPE_GROUP: {
      int t = config_setting_type(s), n = config_setting_length(s);
      const char *open = t == CONFIG_TYPE_ARRAY ? "[" : t == CONFIG_TYPE_LIST ? "(" : "{ ";
      const char *close = t == CONFIG_TYPE_ARRAY ? "]" : t == CONFIG_TYPE_LIST ? ")" : " }";
      if (depth > 2) {
        sb_put(b, "%s...%s", open, close);
        break;
      }
      sb_put(b, "%s", open);
      for (int i = 0; i < n && i < 8; i++) {
        const config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
        if (i) sb_put(b, "%s", t == CONFIG_TYPE_GROUP ? "; " : ", ");
        if (t == CONFIG_TYPE_GROUP) sb_put(b, "%s = ", config_setting_name(e));
        render(b, e, depth + 1);
      }
      if (n > 8) sb_put(b, ", ...");
      sb_put(b, "%s", close);
      break;
    }
    default: sb_put(b, "(nothing)"); break;
  }
}

/* "grid.n[2]", "sources[0].wavelet.frequency". */
static void path_of(const config_setting_t *s, char *buf, size_t n) {
  buf[0] = '\0';
  if (!s || !config_setting_parent(s)) return;
  path_of(config_setting_parent(s), buf, n);
  size_t l = strlen(buf);
  if (config_setting_name(s))
    snprintf(buf + l, n - l, "%s%s", l ? "." : "", config_setting_name(s));
  else
    snprintf(buf + l, n - l, "[%d]", config_setting_index(s));
}

static void child_path(const config_setting_t *parent, const char *key, char *buf, size_t n) {
  char p[256];
  path_of(parent, p, sizeof p);
  snprintf(buf, n, "%s%s%s", p, p[0] ? "." : "", key);
}

/* Settings made by an override carry the override's text as their hook. */
static const char *override_of(const config_setting_t *s) {
  for (; s; s = config_setting_parent(s))
    if (config_setting_get_hook(s)) return (const char *)config_setting_get_hook(s);
  return NULL;
}

/* "job.cfg:12" or "job.cfg: --set grid.n=oops". */
static void where(const ctx *c, const config_setting_t *s, char *buf, size_t n) {
  const char *ov = override_of(s);
  if (ov) {
    snprintf(buf, n, "%s: --set %s", c->name, ov);
    return;
  }
  unsigned line = 0;
  for (const config_setting_t *p = s; p && !line; p = config_setting_parent(p)) line = config_setting_source_line(p);
  snprintf(buf, n, "%s:%u", c->name, line ? line : 1u);
}

/* The one error formatter for a value that is present. */
static tw_status bad(const ctx *c, const config_setting_t *s, const char *what, const char *allowed) {
  char loc[512], path[256];
  sbuf v = {{0}, 0};
  where(c, s, loc, sizeof loc);
  path_of(s, path, sizeof path);
  render(&v, s, 0);
  return tw_error_set(c->err, TW_ECONFIG, "%s: %s: %s: got %s; %s", loc, path, what, v.s, allowed);
}

/* ... and for a required key that is absent (located at its parent group). */
static tw_status missing(const ctx *c, const config_setting_t *parent, const char *key, const char *expected) {
  char loc[512], path[400];
  where(c, parent, loc, sizeof loc);
  child_path(parent, key, path, sizeof path);
  return tw_error_set(c->err, TW_ECONFIG, "%s: %s: required key is missing: got nothing; expected %s", loc, path,
                      expected);
}

static tw_status oom(const ctx *c) { return tw_error_set(c->err, TW_ENOMEM, "%s: out of memory", c->name); }

/* Where setting s is given, as errors name it, kept for messages after parsing (*out, malloc'd). */
static tw_status keep_where(const ctx *c, const config_setting_t *s, char **out) {
  char loc[TW_WHERE_MAX];
  where(c, s, loc, sizeof loc);
  return (*out = strdup(loc)) ? TW_OK : oom(c);
}

/* ================================================================ 2. typed getters */

static config_setting_t *member(const config_setting_t *g, const char *key) {
  return (g && config_setting_is_group(g)) ? config_setting_get_member(g, key) : NULL;
}

static int is_int(const config_setting_t *s) {
  return config_setting_type(s) == CONFIG_TYPE_INT || config_setting_type(s) == CONFIG_TYPE_INT64;
}

static const char *closest(const char *word, const char *const *names) {
  const char *best = NULL;
  int bd = 99;
  for (; *names; names++) {
    int d = tw_edit_distance(word, *names);
    if (d < bd && d < (int)strlen(*names)) bd = d, best = *names;
  }
  return bd <= 2 ? best : NULL;
}

static void list_names(char *buf, size_t n, const char *const *names) {
  buf[0] = '\0';
  for (int i = 0; names[i]; i++) {
    size_t l = strlen(buf);
    snprintf(buf + l, n - l, "%s%s", i ? ", " : "", names[i]);
  }
}

static void range_text(char *buf, size_t n, double lo, double hi, int lo_open) {
  char a[64], b[64];
  fmt_double(a, sizeof a, lo);
  fmt_double(b, sizeof b, hi);
  if (isinf(lo) && isinf(hi))
    snprintf(buf, n, "allowed any finite number");
  else if (isinf(hi))
    snprintf(buf, n, "allowed %s %s", lo_open ? ">" : ">=", a);
  else if (isinf(lo))
    snprintf(buf, n, "allowed <= %s", b);
  else
    snprintf(buf, n, lo_open ? "allowed (%s, %s]" : "allowed %s..%s", a, b);
}

static tw_status as_long(const ctx *c, const config_setting_t *s, long lo, long hi, const char *desc, long *out) {
  char what[160], allowed[96];
  snprintf(allowed, sizeof allowed, "allowed %ld..%ld", lo, hi);
  if (config_setting_type(s) == CONFIG_TYPE_FLOAT) {
    snprintf(what, sizeof what, "must be %s, not a floating-point number", desc);
    return bad(c, s, what, allowed);
  }
  long long v = is_int(s) ? config_setting_get_int64(s) : 0;
  if (!is_int(s) || v < lo || v > hi) {
    snprintf(what, sizeof what, "must be %s", desc);
    return bad(c, s, what, allowed);
  }
  *out = (long)v;
  return TW_OK;
}

static tw_status as_int(const ctx *c, const config_setting_t *s, long lo, long hi, const char *desc, int *out) {
  long v;
  TRY(as_long(c, s, lo, hi, desc, &v));
  *out = (int)v;
  return TW_OK;
}

static tw_status as_double(const ctx *c, const config_setting_t *s, double lo, double hi, int lo_open,
                           const char *desc, double *out) {
  char what[160], allowed[128];
  range_text(allowed, sizeof allowed, lo, hi, lo_open);
  snprintf(what, sizeof what, "must be %s", desc);
  if (!config_setting_is_number(s)) return bad(c, s, what, allowed);
  double v = config_setting_get_float(s);
  if (is_int(s)) v = (double)config_setting_get_int64(s);
  if (!isfinite(v) || v < lo || v > hi || (lo_open && v == lo)) return bad(c, s, what, allowed);
  *out = v;
  return TW_OK;
}

static tw_status as_string(const ctx *c, const config_setting_t *s, const char *desc, const char **out) {
  char what[160];
  snprintf(what, sizeof what, "must be %s", desc);
  if (config_setting_type(s) != CONFIG_TYPE_STRING) return bad(c, s, what, "allowed a quoted string");
  if (!config_setting_get_string(s)[0]) return bad(c, s, what, "allowed a non-empty string");
  *out = config_setting_get_string(s);
  return TW_OK;
}

static tw_status as_choice(const ctx *c, const config_setting_t *s, const char *const *names, const char *desc,
                           int *out) {
  char what[160], allowed[320], all[256];
  list_names(all, sizeof all, names);
  snprintf(what, sizeof what, "must be a string naming the %s", desc);
  snprintf(allowed, sizeof allowed, "allowed %s", all);
  if (config_setting_type(s) != CONFIG_TYPE_STRING) return bad(c, s, what, allowed);
  const char *v = config_setting_get_string(s);
  for (int i = 0; names[i]; i++)
    if (!strcmp(v, names[i])) return *out = i, TW_OK;
  const char *near = closest(v, names);
  snprintf(what, sizeof what, "unknown %s", desc);
  if (near) snprintf(allowed, sizeof allowed, "did you mean '%s'? allowed %s", near, all);
  return bad(c, s, what, allowed);
}

/* Every member of g must be in known; scope names the group for the message's list. */
static tw_status check_keys(const ctx *c, const config_setting_t *g, const char *const *known, const char *scope) {
  char allowed[800], all[256], path[256];
  list_names(all, sizeof all, known);
  path_of(g, path, sizeof path);
  for (int i = 0; i < config_setting_length(g); i++) {
    const config_setting_t *m = config_setting_get_elem(g, (unsigned)i);
    const char *name = config_setting_name(m);
    int ok = 0;
    for (int k = 0; known[k] && !ok; k++) ok = !strcmp(name, known[k]);
    if (ok) continue;
    const char *near = closest(name, known);
    const char *in = scope ? scope : (path[0] ? path : "the job file");
    if (near)
      snprintf(allowed, sizeof allowed, "did you mean '%s'? keys allowed in %s: %s", near, in, all);
    else
      snprintf(allowed, sizeof allowed, "keys allowed in %s: %s", in, all);
    return bad(c, m, "unknown key", allowed);
  }
  return TW_OK;
}

/* key_*: look the key up in group g; absent → error when required, else *out is left as is. */
static const char *group_example(const char *key) {
  static const char *const eg[][2] = {
      {"grid", "a group { n = [nx, ny, nz]; d = [dx, dy, dz]; }"},
      {"time", "a group { steps = 1000; } or { duration = 1.0; }"},
      {"model", "a group { type = \"constant\"; vp = 2000.0; }"},
      {"wavelet", "a group { type = \"ricker\"; frequency = 10.0; }"},
      {"region", "a group { from = [x, y, z]; to = [x, y, z]; }"},
      {"shots", "a group { positions = ( [x, y, z], ... ); receivers = \"fixed\"; }"}};
  for (size_t i = 0; i < sizeof eg / sizeof eg[0]; i++)
    if (!strcmp(key, eg[i][0])) return eg[i][1];
  return "a group { key = value; ... }";
}

static tw_status key_group(const ctx *c, const config_setting_t *g, const char *key, int required,
                           config_setting_t **out) {
  config_setting_t *s = member(g, key);
  char allowed[160];
  *out = NULL;
  if (!s) return required ? missing(c, g, key, group_example(key)) : TW_OK;
  snprintf(allowed, sizeof allowed, "expected %s", group_example(key));
  if (!config_setting_is_group(s)) return bad(c, s, "must be a group", allowed);
  *out = s;
  return TW_OK;
}

/* A list ( ... ) of groups, possibly empty. */
static tw_status key_list(const ctx *c, const config_setting_t *g, const char *key, int required, const char *eg,
                          config_setting_t **out) {
  config_setting_t *s = member(g, key);
  *out = NULL;
  if (!s) return required ? missing(c, g, key, eg) : TW_OK;
  if (!config_setting_is_list(s) && !(config_setting_is_array(s) && config_setting_length(s) == 0)) {
    char allowed[256];
    snprintf(allowed, sizeof allowed, "expected %s", eg);
    return bad(c, s, "must be a list ( ... )", allowed);
  }
  *out = s;
  return TW_OK;
}

static tw_status key_long(const ctx *c, const config_setting_t *g, const char *key, int required, long lo, long hi,
                          const char *desc, long *out) {
  config_setting_t *s = member(g, key);
  if (!s) return required ? missing(c, g, key, desc) : TW_OK;
  return as_long(c, s, lo, hi, desc, out);
}

static tw_status key_int(const ctx *c, const config_setting_t *g, const char *key, long lo, long hi,
                         const char *desc, int *out) {
  long v = *out;
  TRY(key_long(c, g, key, 0, lo, hi, desc, &v));
  *out = (int)v;
  return TW_OK;
}

/* An optional positive int whose upper limit another check enforces with its own reason: refused here
 * below 1 (or beyond int), with `allowed`, the range that check takes. */
static tw_status key_positive(const ctx *c, const config_setting_t *g, const char *key, const char *allowed, int *out) {
  config_setting_t *s = member(g, key);
  if (!s) return TW_OK;
  if (config_setting_type(s) == CONFIG_TYPE_FLOAT)
    return bad(c, s, "must be a positive integer, not a floating-point number", allowed);
  const long long v = is_int(s) ? config_setting_get_int64(s) : 0;
  if (!is_int(s) || v < 1 || v > INT_MAX) return bad(c, s, "must be a positive integer", allowed);
  *out = (int)v;
  return TW_OK;
}

static tw_status key_double(const ctx *c, const config_setting_t *g, const char *key, int required, double lo,
                            double hi, int lo_open, const char *desc, double *out) {
  config_setting_t *s = member(g, key);
  if (!s) return required ? missing(c, g, key, desc) : TW_OK;
  return as_double(c, s, lo, hi, lo_open, desc, out);
}

static tw_status key_string(const ctx *c, const config_setting_t *g, const char *key, int required,
                            const char *desc, const char **out) {
  config_setting_t *s = member(g, key);
  if (!s) return required ? missing(c, g, key, desc) : TW_OK;
  return as_string(c, s, desc, out);
}

static tw_status key_bool(const ctx *c, const config_setting_t *g, const char *key, int *out) {
  config_setting_t *s = member(g, key);
  if (!s) return TW_OK;
  if (config_setting_type(s) != CONFIG_TYPE_BOOL) return bad(c, s, "must be a boolean", "allowed true or false");
  *out = config_setting_get_bool(s);
  return TW_OK;
}

static tw_status key_choice(const ctx *c, const config_setting_t *g, const char *key, int required,
                            const char *const *names, const char *desc, int *out) {
  config_setting_t *s = member(g, key);
  if (!s) {
    if (!required) return TW_OK;
    char all[256], exp[300];
    list_names(all, sizeof all, names);
    snprintf(exp, sizeof exp, "the %s: one of %s", desc, all);
    return missing(c, g, key, exp);
  }
  return as_choice(c, s, names, desc, out);
}

/* An array [..] or list (..) of exactly dim elements. */
static tw_status as_tuple(const ctx *c, const config_setting_t *s, int dim, const char *kind) {
  if ((config_setting_is_array(s) || config_setting_is_list(s)) && config_setting_length(s) == dim) return TW_OK;
  char what[96], allowed[96];
  snprintf(what, sizeof what, "must be an array of %d %s", dim, kind);
  snprintf(allowed, sizeof allowed, "expected %s", dim == 3 ? "[x, y, z]" : "[x, y]");
  return bad(c, s, what, allowed);
}

static tw_status as_vec(const ctx *c, const config_setting_t *s, int dim, double lo, double hi, int lo_open,
                        const char *desc, double *out) {
  TRY(as_tuple(c, s, dim, "numbers"));
  for (int i = 0; i < dim; i++)
    TRY(as_double(c, config_setting_get_elem(s, (unsigned)i), lo, hi, lo_open, desc, &out[i]));
  return TW_OK;
}

static tw_status key_vec(const ctx *c, const config_setting_t *g, const char *key, int required, int dim, double lo,
                         double hi, int lo_open, const char *desc, double *out) {
  config_setting_t *s = member(g, key);
  if (!s) return required ? missing(c, g, key, dim == 3 ? "[x, y, z]" : "[x, y]") : TW_OK;
  return as_vec(c, s, dim, lo, hi, lo_open, desc, out);
}

static tw_status key_ivec(const ctx *c, const config_setting_t *g, const char *key, int dim, long lo, long hi,
                          const char *desc, long *out) {
  config_setting_t *s = member(g, key);
  if (!s) return missing(c, g, key, dim == 3 ? "[nx, ny, nz] (integers)" : "[nx, ny] (integers)");
  TRY(as_tuple(c, s, dim, "integers"));
  for (int i = 0; i < dim; i++) TRY(as_long(c, config_setting_get_elem(s, (unsigned)i), lo, hi, desc, &out[i]));
  return TW_OK;
}

/* ---------------------------------------------------------------- model box and files */

/* The test the run's placement makes too (tw_axis_inside, common/tw_common.h). */
static int inside_axis(const tw_job *j, int a, double v) { return tw_axis_inside(j->origin[a], j->d[a], j->n[a], v); }

static void box_text(const tw_job *j, char *buf, size_t n, int axes) {
  static const char xyz[] = "xyz";
  buf[0] = '\0';
  for (int a = 0; a < axes; a++) {
    char lo[64], hi[64];
    size_t l = strlen(buf);
    fmt_double(lo, sizeof lo, j->origin[a]);
    fmt_double(hi, sizeof hi, j->origin[a] + (j->n[a] - 1) * j->d[a]);
    snprintf(buf + l, n - l, "%s%c in [%s, %s]", a ? ", " : "", xyz[a], lo, hi);
  }
}

static tw_status check_inside(const ctx *c, const config_setting_t *s, const tw_job *j, const double p[3]) {
  for (int a = 0; a < 3; a++)
    if (!inside_axis(j, a, p[a])) {
      char box[256], allowed[300];
      box_text(j, box, sizeof box, 3);
      snprintf(allowed, sizeof allowed, "allowed inside the model: %s", box);
      return bad(c, s, "outside the model", allowed);
    }
  return TW_OK;
}

/* Relative names resolve from the job file's folder (absolute ones stay). */
static char *resolve_rel(const char *jobname, const char *file) {
  const char *slash = jobname ? strrchr(jobname, '/') : NULL;
  if (file[0] == '/' || !slash) return strdup(file);
  size_t dl = (size_t)(slash - jobname) + 1, fl = strlen(file);
  char *r = malloc(dl + fl + 1);
  if (!r) return NULL;
  memcpy(r, jobname, dl);
  memcpy(r + dl, file, fl + 1);
  return r;
}

/* Open a file the job names, or the job file itself, for reading: regular files only (a FIFO would
 * block, /dev/zero never ends, a directory holds no text: tw_open_regular). NULL with *kind
 * (tw_file_kind) or *eno set. */
static FILE *open_regular(const char *path, struct stat *st, const char **kind, int *eno) {
  *eno = 0;
  const int fd = tw_open_regular(path, O_RDONLY, 0, st, kind);
  FILE *f = fd >= 0 ? fdopen(fd, "rb") : NULL;
  if (!f && !*kind) *eno = errno;
  if (!f && fd >= 0) close(fd);
  return f;
}

/* The file named by setting s must be a readable regular file; *out gets the resolved name. */
static tw_status key_file(const ctx *c, const config_setting_t *g, const char *key, const char *desc, char **out,
                          struct stat *st) {
  const char *name = NULL, *kind;
  char what[600];
  int e;
  TRY(key_string(c, g, key, 1, desc, &name));
  config_setting_t *s = member(g, key);
  char *path = resolve_rel(c->name, name);
  if (!path) return oom(c);
  FILE *f = open_regular(path, st, &kind, &e);
  if (f) {
    fclose(f);
    *out = path;
    return TW_OK;
  }
  if (kind) snprintf(what, sizeof what, "cannot read \"%s\" (it is %s, not a regular file)", path, kind);
  else snprintf(what, sizeof what, "cannot read \"%s\" (%s)", path, strerror(e));
  free(path);
  return bad(c, s, what, "expected a readable regular file; relative names resolve from the job file's folder");
}

/* ================================================================ 3. overrides and the config */

static int valid_name(const char *s, size_t n) {
  if (n == 0 || !(((s[0] | 32) >= 'a' && (s[0] | 32) <= 'z') || s[0] == '*')) return 0;
  for (size_t i = 1; i < n; i++) {
    char ch = s[i];
    if (!(((ch | 32) >= 'a' && (ch | 32) <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '*'))
      return 0;
  }
  return 1;
}

static int bare_word(const char *v) {
  if (!*v) return 0;
  for (; *v; v++)
    if (strchr(" \t\r\n\"\\[](){};=,#", *v)) return 0;
  return 1;
}

/* Deep copy of src as a new member `name` of parent (name NULL inside lists and arrays). */
static config_setting_t *copy_setting(config_setting_t *parent, const char *name, const config_setting_t *src) {
  config_setting_t *d = config_setting_add(parent, name, config_setting_type(src));
  if (!d) return NULL;
  switch (config_setting_type(src)) {
    case CONFIG_TYPE_INT: config_setting_set_int(d, config_setting_get_int(src)); break;
    case CONFIG_TYPE_INT64: config_setting_set_int64(d, config_setting_get_int64(src)); break;
    case CONFIG_TYPE_FLOAT: config_setting_set_float(d, config_setting_get_float(src)); break;
    case CONFIG_TYPE_BOOL: config_setting_set_bool(d, config_setting_get_bool(src)); break;
    case CONFIG_TYPE_STRING: config_setting_set_string(d, config_setting_get_string(src)); break;
    default:
      for (int i = 0; i < config_setting_length(src); i++) {
        const config_setting_t *e = config_setting_get_elem(src, (unsigned)i);
        if (!copy_setting(d, config_setting_is_group(src) ? config_setting_name(e) : NULL, e)) return NULL;
      }
  }
  config_setting_set_format(d, config_setting_get_format(src));
  return d;
}

/* ---------------------------------------------------------------- integer literals
 * libconfig 1.5 (Debian and Ubuntu's) stores a decimal integer without an L suffix in 32 bits: 3000000000
 * silently becomes −1294967296 and 99999999999999999999 becomes −1; with an L it clamps at 2^63 − 1.
 * So the text is scanned before libconfig sees it: a literal beyond 32 bits gets its L (newer
 * libconfig does that itself), one beyond 64 bits is an error that shows the literal as written. */

/* Where the scan is in the setting tree, so that a literal it refuses is named as errors name a
 * setting ("grid.n[2]", path_of): a frame per open group, list or array, with a group's current
 * member (the last name before '=' or ':') and a list's or array's current element (commas seen).
 * An override's value starts in a frame of its own, named by the override's key. */
#define SCAN_DEPTH 16
typedef struct {
  char open;                /* '{', '(', '[', or 'v' (an override's value) */
  int index;
  char name[64];
  const char *start;        /* an array's '[' */
  char kind;                /* an array's numbers so far: 'i' integers, 'f' floating-point, 0 none yet */
  int first;                /* a group's members: members[first..nmembers) */
} scan_frame;

#define SCAN_WIDE 16
typedef struct {
  const ctx *c;
  const char *ov;           /* the override, when the text is an override's value */
  const char *text;
  scan_frame f[SCAN_DEPTH];
  int depth;                /* f[depth] is the innermost frame (deeper ones are not kept) */
  const char *wide[SCAN_WIDE]; /* the arrays ('[') holding an integer beyond 32 bits or with an L */
  int nwide;
  const char **members;     /* the names of the open groups' members so far, innermost group last */
  int nmembers, cap_members;
} int_scan;

/* The array of the innermost frame is wide (one of its integers is beyond 32 bits, or written with
 * an L): libconfig reads an array of one type only, so every integer of it gets its L, not that one
 * alone (which made [3000000000, 1, 1] "syntax error: mismatched element type in array", not
 * grid.n's range). */
static int in_wide_array(const int_scan *sc) {
  if (sc->depth >= SCAN_DEPTH || sc->f[sc->depth].open != '[') return 0;
  for (int i = 0; i < sc->nwide; i++)
    if (sc->wide[i] == sc->f[sc->depth].start) return 1;
  return 0;
}

static void mark_wide(int_scan *sc) {
  if (sc->depth < SCAN_DEPTH && sc->f[sc->depth].open == '[' && !in_wide_array(sc) && sc->nwide < SCAN_WIDE)
    sc->wide[sc->nwide++] = sc->f[sc->depth].start;
}

static int name_char(char ch) {
  return ((ch | 32) >= 'a' && (ch | 32) <= 'z') || (ch >= '0' && ch <= '9') || ch == '-' || ch == '_' || ch == '*';
}

static void scan_open(int_scan *sc, const char *p) {
  if (++sc->depth < SCAN_DEPTH) sc->f[sc->depth] = (scan_frame){*p, 0, "", p, 0, sc->nmembers};
}

static void scan_close(int_scan *sc) {
  if (sc->depth < SCAN_DEPTH) sc->nmembers = sc->f[sc->depth].first; /* its members are done with */
  sc->depth -= sc->depth > 0;
}

/* A name at p..e: a group's member when '=' or ':' follows it (1), else 0. */
static int scan_name(int_scan *sc, const char *p, const char *e) {
  const char *q = e;
  while (*q == ' ' || *q == '\t' || *q == '\r' || *q == '\n') q++;
  if (sc->depth >= SCAN_DEPTH || sc->f[sc->depth].open != '{' || (*q != '=' && *q != ':')) return 0;
  snprintf(sc->f[sc->depth].name, sizeof sc->f[0].name, "%.*s", (int)(e - p), p);
  return 1;
}

static void scan_path(const int_scan *sc, char *buf, size_t n) {
  const char *eq = sc->ov ? strchr(sc->ov, '=') : NULL;
  snprintf(buf, n, "%.*s", eq ? (int)(eq - sc->ov) : 0, sc->ov ? sc->ov : "");
  for (int d = 0; d <= sc->depth && d < SCAN_DEPTH; d++) {
    const scan_frame *f = &sc->f[d];
    const size_t l = strlen(buf);
    if (f->open == '{') snprintf(buf + l, n - l, "%s%s", l ? "." : "", f->name);
    else if (f->open != 'v') snprintf(buf + l, n - l, "[%d]", f->index);
  }
}

/* Where text at p is given: "job.cfg:12", or the override that gave it. */
static void scan_where(const int_scan *sc, const char *p, char *loc, size_t n) {
  if (sc->ov) {
    snprintf(loc, n, "%s: --set %s", sc->c->name, sc->ov);
  } else {
    int line = 1;
    for (const char *q = sc->text; q < p; q++) line += *q == '\n';
    snprintf(loc, n, "%s:%d", sc->c->name, line);
  }
}

/* A group's member p..e named twice in that group: libconfig said only "syntax error: duplicate
 * setting name; check this line and the one before it (a missing ';', quote or bracket)", naming no
 * key. Named here as every other error: where, the full key, and where the first one is. */
static tw_status scan_member(int_scan *sc, const char *p, const char *e) {
  const scan_frame *f = &sc->f[sc->depth];
  const size_t len = (size_t)(e - p);
  for (int i = f->first; i < sc->nmembers; i++) {
    const char *m = sc->members[i];
    if (strncmp(m, p, len) || name_char(m[len])) continue;
    char key[256], loc[512], first[64] = "";
    scan_path(sc, key, sizeof key);
    scan_where(sc, p, loc, sizeof loc);
    if (!sc->ov) {
      int line = 1;
      for (const char *q = sc->text; q < m; q++) line += *q == '\n';
      snprintf(first, sizeof first, " (the first on line %d)", line);
    }
    return tw_error_set(sc->c->err, TW_ECONFIG, "%s: %s: given twice in its group: got a second '%.*s'%s; allowed "
                        "each key once in its group: remove one", loc, key, (int)len, p, first);
  }
  if (sc->nmembers == sc->cap_members) {
    const int cap = sc->cap_members ? 2 * sc->cap_members : 64;
    const char **m = realloc(sc->members, (size_t)cap * sizeof *m);
    if (!m) return oom(sc->c);
    sc->members = m, sc->cap_members = cap;
  }
  sc->members[sc->nmembers++] = p;
  return TW_OK;
}

static tw_status int_too_large(const int_scan *sc, const char *lit, size_t len) {
  char key[256], loc[512];
  scan_path(sc, key, sizeof key);
  scan_where(sc, lit, loc, sizeof loc);
  return tw_error_set(sc->c->err, TW_ECONFIG, "%s: %s%sinteger out of range: got %.*s; allowed "
                      "-9223372036854775808..9223372036854775807 (64-bit integers)", loc, key, key[0] ? ": " : "",
                      (int)(len > 60 ? 60 : len), lit);
}

/* A number of kind ('i' or 'f') at lit, inside an array: libconfig reads an array of one kind only,
 * and said of [10.5, 9, 8] or [10, 10.0, 12.5] no more than "syntax error: mismatched element type
 * in array; check this line and the one before it (a missing ';', quote or bracket)". Named here as
 * every other error: where, the array's key, the array as written, and what is allowed. */
static tw_status array_kind(int_scan *sc, char kind, const char *lit) {
  if (sc->depth >= SCAN_DEPTH || sc->f[sc->depth].open != '[') return TW_OK;
  scan_frame *f = &sc->f[sc->depth];
  if (!f->kind || f->kind == kind) {
    f->kind = kind;
    return TW_OK;
  }
  char key[256], loc[512];
  sc->depth--; /* the array's own name, not its element's */
  scan_path(sc, key, sizeof key);
  sc->depth++;
  scan_where(sc, lit, loc, sizeof loc);
  const char *end = strchr(f->start, ']');
  const int len = end ? (int)(end - f->start + 1) : (int)strlen(f->start);
  return tw_error_set(sc->c->err, TW_ECONFIG,
                      "%s: %s%sintegers and floating-point numbers mixed in one array: "
                      "got %.*s%s; allowed numbers of one kind: integers where the key counts (grid.n = [10, 9, 8]), "
                      "else numbers with a decimal point (grid.d = [10.0, 10.0, 12.5])",
                      loc, key, key[0] ? ": " : "", len > 80 ? 80 : len, f->start, len > 80 ? "..." : "");
}

/* Integer literal at p (after an optional sign at lit): its end in *end, 1 when it needs an L
 * (beyond 32 bits, no suffix), 0 when not, −1 when beyond 64 bits. */
static int int_literal(const char *lit, const char *p, const char **end) {
  const int neg = lit < p && *lit == '-', hex = p[0] == '0' && (p[1] | 32) == 'x';
  const char *d = hex ? p + 2 : p;
  unsigned long long v = 0;
  int over = 0;
  for (; hex ? isxdigit((unsigned char)*d) : isdigit((unsigned char)*d); d++) {
    const unsigned dig = isdigit((unsigned char)*d) ? (unsigned)(*d - '0') : (unsigned)((*d | 32) - 'a' + 10);
    const unsigned base = hex ? 16u : 10u;
    if (v > (~0ull - dig) / base) over = 1;
    else v = v * base + dig;
  }
  *end = d;
  const int suffix = *d == 'L';
  while (**end == 'L') (*end)++;
  const unsigned long long lim64 = neg ? 9223372036854775808ull : 9223372036854775807ull;
  if (over || v > lim64) return -1; /* (hex too: libconfig would read 0xFFFFFFFFFFFFFFFF as −1) */
  const unsigned long long lim32 = neg ? 2147483648ull : 2147483647ull;
  return !suffix && v > lim32;
}

/* A copy of text with the Ls added (*out, malloc'd), or an error for a literal beyond 64 bits or
 * a key given twice in a group. Pass 0 finds the wide arrays and checks the members, pass 1 writes
 * (every literal gains one L at most: 2n bytes). */
static tw_status scan_text(int_scan *sc, const char *ov, char **out) {
  const ctx *c = sc->c;
  const char *text = sc->text;
  size_t n = strlen(text);
  for (int pass = 0; pass < 2; pass++) {
    sc->depth = 0;
    sc->nmembers = 0;
    sc->f[0] = (scan_frame){.open = ov ? 'v' : '{'};
    char *o = pass ? malloc(2 * n + 1) : NULL;
    if (pass && !o) return oom(c);
    size_t w = 0;
    const char *p = text;
#define EMIT(from, to)                                        \
  do {                                                        \
    if (o) memcpy(o + w, (from), (size_t)((to) - (from)));   \
    w += (size_t)((to) - (from));                             \
  } while (0)
    while (*p) {
      const char *s = p;
      if (*p == '"') { /* a string, with backslash escapes */
        for (p++; *p && *p != '"'; p++)
          if (*p == '\\' && p[1]) p++;
        if (*p) p++;
      } else if (*p == '#' || (p[0] == '/' && p[1] == '/') || *p == '@') {
        while (*p && *p != '\n') p++;
      } else if (p[0] == '/' && p[1] == '*') {
        const char *e = strstr(p + 2, "*/");
        p = e ? e + 2 : p + strlen(p);
      } else if (((*p | 32) >= 'a' && (*p | 32) <= 'z') || *p == '*') {
        while (name_char(*p)) p++;
        if (scan_name(sc, s, p) && !pass) {
          const tw_status twice = scan_member(sc, s, p);
          if (twice) return twice;
        }
      } else if (*p == '{' || *p == '(' || *p == '[') {
        scan_open(sc, p++);
      } else if (*p == '}' || *p == ')' || *p == ']') {
        scan_close(sc);
        p++;
      } else if (*p == ',') {
        if (sc->depth < SCAN_DEPTH) sc->f[sc->depth].index++;
        p++;
      } else if (isdigit((unsigned char)*p) || ((*p == '-' || *p == '+') && isdigit((unsigned char)p[1]))) {
        const char *digits = isdigit((unsigned char)*p) ? p : p + 1, *e;
        const int hex = digits[0] == '0' && (digits[1] | 32) == 'x';
        const char *q = digits;
        while (isdigit((unsigned char)*q)) q++;
        const int is_float = !hex && (*q == '.' || (*q | 32) == 'e');
        const int need = is_float ? 0 : int_literal(p, digits, &e);
        if (need < 0) {
          free(o);
          return int_too_large(sc, p, (size_t)(e - p));
        }
        const tw_status mixed = array_kind(sc, is_float ? 'f' : 'i', p);
        if (mixed) {
          free(o);
          return mixed;
        }
        if (is_float) { /* skip it whole */
          if (*q == '.') q++;
          while (isdigit((unsigned char)*q)) q++;
          if ((*q | 32) == 'e') {
            q++;
            if (*q == '-' || *q == '+') q++;
            while (isdigit((unsigned char)*q)) q++;
          }
          p = q;
        } else {
          const char *digits_end = e;
          while (digits_end > digits && digits_end[-1] == 'L') digits_end--;
          const int has_l = digits_end != e; /* (an L written in the job makes its array wide too) */
          if (!pass && (need || has_l)) mark_wide(sc);
          if (need || (!has_l && in_wide_array(sc))) {
            EMIT(s, digits_end);
            EMIT("L", "L" + 1);
            s = digits_end;
          }
          p = e;
        }
      } else {
        p++;
      }
      EMIT(s, p);
    }
#undef EMIT
    if (pass) {
      o[w] = '\0';
      *out = o;
    }
  }
  return TW_OK;
}

static tw_status fix_integers(const ctx *c, const char *text, const char *ov, char **out) {
  int_scan sc = {.c = c, .ov = ov, .text = text};
  const tw_status st = scan_text(&sc, ov, out);
  free(sc.members);
  return st;
}

/* Parse "v = VALUE;" into scratch (a bare word is retried as a string). Returns the value or NULL. */
static const config_setting_t *parse_value(config_t *scratch, const char *val, const char **why) {
  size_t n = strlen(val) + 16;
  char *text = malloc(n);
  if (!text) return *why = "out of memory", NULL;
  snprintf(text, n, "v = %s;", val);
  int ok = config_read_string(scratch, text);
  if (!ok && bare_word(val)) {
    config_destroy(scratch);
    config_init(scratch);
    snprintf(text, n, "v = \"%s\";", val);
    ok = config_read_string(scratch, text);
  }
  free(text);
  if (!ok) return *why = config_error_text(scratch), NULL;
  config_setting_t *root = config_root_setting(scratch);
  if (config_setting_length(root) != 1 || !config_setting_get_member(root, "v"))
    return *why = "the value must be one job-file value, e.g. 10, 2.5, \"text\", [1, 2, 3] or { a = 1; }", NULL;
  return config_setting_get_member(root, "v");
}

/* time.steps and time.duration (time.dt and time.dt_margin; snapshots.every and .steps) are
 * alternatives: an override of one removes the other, so `--set time.steps=500` works on a job that
 * gives a duration. */
static void drop_alternative(config_setting_t *parent, const char *gpath, const char *leaf) {
  static const char *const alt[][3] = {
      {"time", "steps", "duration"}, {"time", "duration", "steps"}, {"time", "dt", "dt_margin"}, {"time", "dt_margin", "dt"},
      {"snapshots", "every", "steps"}, {"snapshots", "steps", "every"}};
  for (size_t i = 0; i < sizeof alt / sizeof alt[0]; i++)
    if (!strcmp(gpath, alt[i][0]) && !strcmp(leaf, alt[i][1]) && config_setting_get_member(parent, alt[i][2]))
      config_setting_remove(parent, alt[i][2]);
}

static tw_status ov_error(const ctx *c, const char *ov, const char *what) {
  return tw_error_set(c->err, TW_ECONFIG, "%s: --set %s: %s", c->name, ov, what);
}

/* Walk "a.b.c" from root, creating missing groups (hooked to the override); *leaf = "c". */
static tw_status ov_parent(const ctx *c, config_t *cfg, const char *ov, const char *key, size_t klen,
                           config_setting_t **parent, const char **leaf, char *gpath, size_t gn) {
  config_setting_t *g = config_root_setting(cfg);
  const char *p = key;
  char msg[400], part[128];
  gpath[0] = '\0';
  for (;;) {
    const char *dot = memchr(p, '.', klen - (size_t)(p - key));
    size_t l = dot ? (size_t)(dot - p) : klen - (size_t)(p - key);
    if (!valid_name(p, l) || l >= sizeof part) {
      snprintf(msg, sizeof msg, "bad key \"%.*s\": got \"%.*s\"; allowed a dotted path of names, e.g. grid.n "
               "(list elements cannot be set: give the whole list)", (int)klen, key, (int)l, p);
      return ov_error(c, ov, msg);
    }
    memcpy(part, p, l);
    part[l] = '\0';
    if (!dot) break;
    config_setting_t *m = config_setting_get_member(g, part);
    if (!m) {
      if (!(m = config_setting_add(g, part, CONFIG_TYPE_GROUP))) return oom(c);
      config_setting_set_hook(m, (void *)ov);
    } else if (!config_setting_is_group(m)) {
      snprintf(msg, sizeof msg, "\"%.*s\" is not a group, so \"%.*s\" cannot be set inside it", (int)(dot - key),
               key, (int)klen, key);
      return ov_error(c, ov, msg);
    }
    g = m;
    size_t gl = strlen(gpath);
    snprintf(gpath + gl, gn - gl, "%s%s", gl ? "." : "", part);
    p = dot + 1;
  }
  *parent = g;
  *leaf = p;
  return TW_OK;
}

static int blank(char ch) { return ch == ' ' || ch == '\t'; }

static tw_status apply_override(const ctx *c, config_t *cfg, const char *ov) {
  const char *eq = strchr(ov, '=');
  char msg[600], gpath[256], leaf[128];
  if (!eq || strchr(ov, '\n'))
    return ov_error(c, ov, "expected key=value on one line (blanks around = allowed), e.g. time.steps=500 or "
                    "grid.n=[200,200,100]");
  /* Blanks around the key and the value, as a job file allows them (`--set 'time.steps = 500'`): the
   * key would have been "time.steps " and a bare word " cpu" no string */
  const char *key = ov, *kend = eq, *vbeg = eq + 1, *vend = eq + strlen(eq);
  while (blank(*key)) key++;
  while (kend > key && blank(kend[-1])) kend--;
  while (blank(*vbeg)) vbeg++;
  while (vend > vbeg && blank(vend[-1])) vend--;
  if (kend == key || vend == vbeg)
    return ov_error(c, ov, kend == key ? "no key before =: expected key=value, e.g. time.steps=500"
                                       : "no value after =: expected key=value, e.g. time.steps=500");
  size_t klen = (size_t)(kend - key);
  config_setting_t *parent = NULL;
  const char *lp = NULL;
  TRY(ov_parent(c, cfg, ov, key, klen, &parent, &lp, gpath, sizeof gpath));
  snprintf(leaf, sizeof leaf, "%.*s", (int)(kend - lp), lp);
  char *value = strndup(vbeg, (size_t)(vend - vbeg)), *val = NULL;
  if (!value) return oom(c);
  const tw_status fst = fix_integers(c, value, ov, &val);
  free(value);
  TRY(fst);
  config_t scratch;
  config_init(&scratch);
  const char *why = NULL;
  const config_setting_t *v = parse_value(&scratch, val, &why);
  free(val);
  if (!v) {
    snprintf(msg, sizeof msg, "cannot parse the value: got %s (%s); allowed a value in job-file syntax, e.g. 10, "
             "2.5, \"text\", [1, 2, 3] (a bare word is a string)", eq + 1, why);
    config_destroy(&scratch);
    return ov_error(c, ov, msg);
  }
  if (config_setting_get_member(parent, leaf)) config_setting_remove(parent, leaf);
  drop_alternative(parent, gpath, leaf);
  config_setting_t *d = copy_setting(parent, leaf, v);
  config_destroy(&scratch);
  if (!d) return oom(c);
  config_setting_set_hook(d, (void *)ov);
  return TW_OK;
}

/* Parse text (libconfig syntax errors become "file:line: syntax error: ...") and apply overrides. */
static tw_status build_config(const ctx *c, const char *text, const char *const *ov, int nov, config_t *cfg) {
  char *fixed = NULL;
  TRY(fix_integers(c, text, NULL, &fixed));
  const int ok = config_read_string(cfg, fixed);
  free(fixed);
  if (!ok) {
    const char *f = config_error_file(cfg) ? config_error_file(cfg) : c->name;
    const char *t = config_error_text(cfg) ? config_error_text(cfg) : "syntax error";
    return tw_error_set(c->err, TW_ECONFIG, "%s:%d: syntax error%s%s; check this line and the one before it "
                        "(a missing ';', quote or bracket)", f, config_error_line(cfg),
                        strcmp(t, "syntax error") ? ": " : "", strcmp(t, "syntax error") ? t : "");
  }
  for (int i = 0; i < nov; i++) TRY(apply_override(c, cfg, ov[i]));
  return TW_OK;
}

/* ================================================================ 4. the groups */

static tw_status parse_grid(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"n", "d", "origin", NULL};
  config_setting_t *g;
  long n[3];
  TRY(key_group(c, root, "grid", 1, &g));
  TRY(check_keys(c, g, keys, "grid"));
  TRY(key_ivec(c, g, "n", 3, 1, MAX_N, "a positive integer", n));
  TRY(keep_where(c, member(g, "n"), &j->n_where));
  if ((double)n[0] * (double)n[1] * (double)n[2] > MAX_CELLS)
    return bad(c, member(g, "n"), "too many cells in the model", "allowed at most 2^40 cells in all");
  for (int a = 0; a < 3; a++) j->n[a] = (int)n[a];
  /* within [1e-9, 1e9] m: the stencil's weights C/d² stay well inside float32 (d = 1e-30 or 5e19
   * overflowed them, and the run failed at its first step as if the wavefield had blown up) */
  TRY(key_vec(c, g, "d", 1, 3, 1e-9, 1e9, 0, "a spacing from 1e-9 to 1e9 metres", j->d));
  return key_vec(c, g, "origin", 0, 3, -INFINITY, INFINITY, 0, "a finite number (metres)", j->origin);
}

static tw_status steps_from_duration(const ctx *c, const config_setting_t *s, tw_job *j) {
  double steps = ceil(j->duration / j->dt - 1e-9);
  if (steps > (double)MAX_STEPS) {
    char allowed[160];
    snprintf(allowed, sizeof allowed, "allowed at most %ld steps (duration / dt = %.6g)", MAX_STEPS,
             j->duration / j->dt);
    return bad(c, s, "too many time steps", allowed);
  }
  j->steps = steps < 1 ? 1 : (long)steps;
  return TW_OK;
}

static tw_status parse_time(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"steps", "duration", "dt", "dt_margin", NULL};
  config_setting_t *t;
  TRY(key_group(c, root, "time", 1, &t));
  TRY(check_keys(c, t, keys, "time"));
  config_setting_t *steps = member(t, "steps"), *dur = member(t, "duration");
  if (steps && dur)
    return bad(c, dur, "conflicts with time.steps", "give either time.steps or time.duration, not both");
  if (!steps && !dur) return missing(c, t, "steps", "time.steps (an integer >= 1) or time.duration (seconds)");
  if (steps) TRY(as_long(c, steps, 1, MAX_STEPS, "a positive integer", &j->steps));
  if (dur) TRY(as_double(c, dur, 0.0, INFINITY, 1, "a positive duration (seconds)", &j->duration));
  j->dt_given = member(t, "dt") != NULL;
  TRY(key_double(c, t, "dt", 0, 0.0, INFINITY, 1, "a positive time step (seconds)", &j->dt));
  j->dt_margin = DEFAULT_MARGIN;
  TRY(key_double(c, t, "dt_margin", 0, 0.0, 1.0, 1, "a fraction of the stable limit", &j->dt_margin));
  if (j->dt_given && member(t, "dt_margin")) /* it would be ignored */
    return bad(c, member(t, "dt_margin"), "has no effect when time.dt is given (dt_margin scales the stable limit "
               "to choose dt)", "give time.dt or time.dt_margin, not both");
  if (dur && j->dt_given) TRY(steps_from_duration(c, dur, j));
  return TW_OK;
}

static tw_status parse_scheme(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"order", NULL};
  static const char *allowed = "allowed 2, 4, 6, 8 (and 10, 12, 14, 16 on the CPU kernels)";
  config_setting_t *g;
  j->order = DEFAULT_ORDER;
  TRY(key_group(c, root, "scheme", 0, &g));
  if (!g) return TW_OK;
  TRY(check_keys(c, g, keys, "scheme"));
  config_setting_t *s = member(g, "order");
  long o = 0;
  if (!s) return TW_OK;
  if (!is_int(s)) return as_long(c, s, 2, 16, "an even integer from 2 to 16", &o);
  o = (long)config_setting_get_int64(s);
  if (o < 2 || o > 16 || o % 2) return bad(c, s, "must be an even integer from 2 to 16", allowed);
  j->order = (int)o;
  return TW_OK;
}

static tw_status parse_boundary(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"absorbing", "free_surface", NULL};
  static const char *const axes[] = {"x", "y", "z", NULL};
  config_setting_t *g;
  for (int a = 0; a < 3; a++) j->absorb[a] = DEFAULT_ABSORB;
  TRY(key_group(c, root, "boundary", 0, &g));
  if (!g) return TW_OK;
  TRY(check_keys(c, g, keys, "boundary"));
  TRY(key_bool(c, g, "free_surface", &j->free_surface));
  if (member(g, "free_surface")) TRY(keep_where(c, member(g, "free_surface"), &j->free_surface_where));
  config_setting_t *ab = member(g, "absorbing");
  if (!ab) return TW_OK;
  if (config_setting_is_group(ab)) {
    TRY(check_keys(c, ab, axes, "boundary.absorbing"));
    for (int a = 0; a < 3; a++)
      TRY(key_int(c, ab, axes[a], 0, MAX_ABSORB, "a number of cells (integer >= 0)", &j->absorb[a]));
    return TW_OK;
  }
  TRY(as_int(c, ab, 0, MAX_ABSORB, "a number of cells (integer >= 0) or a group { x = ..; y = ..; z = ..; }",
             &j->absorb[0]));
  j->absorb[1] = j->absorb[2] = j->absorb[0];
  return TW_OK;
}

/* ---------------------------------------------------------------- model */

static tw_status parse_vp_range(const ctx *c, const config_setting_t *m, tw_job *j) {
  j->model.vp_range[0] = TW_VP_MIN;
  j->model.vp_range[1] = TW_VP_MAX;
  /* within float32's normal numbers, which hold the model: a velocity beyond them became inf or 0
   * and was refused only after parsing, unlocated ("model velocity range [inf, inf] m/s") */
  TRY(key_vec(c, m, "vp_range", 0, 2, FLT_MIN, FLT_MAX, 0, "a positive velocity that float32 holds (m/s)",
              j->model.vp_range));
  if (j->model.vp_range[0] < j->model.vp_range[1]) return TW_OK;
  return bad(c, member(m, "vp_range"), "the range is empty", "expected [slowest, fastest] in m/s, slowest < fastest");
}

/* A velocity of the job file (s: its setting) inside the model's allowed range. */
static tw_status check_vp(const ctx *c, const config_setting_t *s, const tw_job *j, double v, const char *at) {
  if (v >= j->model.vp_range[0] && v <= j->model.vp_range[1]) return TW_OK;
  char allowed[480], hint[160], a[64], b[64], what[160];
  fmt_double(a, sizeof a, j->model.vp_range[0]);
  fmt_double(b, sizeof b, j->model.vp_range[1]);
  tw_velocity_hint(v, j->model.vp_range, hint, sizeof hint);
  snprintf(what, sizeof what, "velocity outside the physical range%s", at);
  snprintf(allowed, sizeof allowed, "allowed %s..%s m/s (model.vp_range widens it)%s%s", a, b, hint[0] ? "; " : "",
           hint);
  return bad(c, s, what, allowed);
}

static tw_status parse_layers(const ctx *c, const config_setting_t *m, tw_job *j) {
  static const char *const keys[] = {"top", "vp", NULL};
  config_setting_t *l;
  TRY(key_list(c, m, "layers", 1, "( { top = 0.0; vp = 1500.0; }, ... )", &l));
  int n = config_setting_length(l);
  if (n == 0) return bad(c, l, "must hold at least one layer", "expected ( { top = 0.0; vp = 1500.0; }, ... )");
  if (!(j->model.layers = calloc((size_t)n, sizeof *j->model.layers))) return oom(c);
  for (int i = 0; i < n; i++) {
    config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
    if (!config_setting_is_group(e)) return bad(c, e, "must be a group", "expected { top = 0.0; vp = 1500.0; }");
    TRY(check_keys(c, e, keys, "a layer"));
    tw_layer *L = &j->model.layers[i];
    TRY(key_double(c, e, "top", 1, -INFINITY, INFINITY, 0, "a depth (metres)", &L->top));
    TRY(key_double(c, e, "vp", 1, 0.0, INFINITY, 1, "a positive velocity (m/s)", &L->vp));
    TRY(check_vp(c, member(e, "vp"), j, L->vp, ""));
    j->model.nlayers = i + 1;
    char allowed[160], v[64];
    fmt_double(v, sizeof v, i ? j->model.layers[i - 1].top : j->origin[2]);
    if (i && L->top <= j->model.layers[i - 1].top) {
      snprintf(allowed, sizeof allowed, "allowed > %s (the previous layer's top)", v);
      return bad(c, member(e, "top"), "layer tops must increase strictly", allowed);
    }
    if (!i && L->top > j->origin[2] + 1e-9 * j->d[2]) {
      snprintf(allowed, sizeof allowed, "allowed <= %s (the model top, grid.origin[2])", v);
      return bad(c, member(e, "top"), "the first layer must start at or above the model top", allowed);
    }
  }
  return TW_OK;
}

static tw_status parse_gradient(const ctx *c, const config_setting_t *m, tw_job *j) {
  TRY(key_double(c, m, "vp0", 1, -INFINITY, INFINITY, 0, "a velocity (m/s)", &j->model.vp0));
  TRY(key_double(c, m, "gradient", 0, -INFINITY, INFINITY, 0, "a velocity gradient (1/s)", &j->model.gradient));
  double z0 = j->origin[2], z1 = z0 + (j->n[2] - 1) * j->d[2];
  double v0 = j->model.vp0 + j->model.gradient * z0, v1 = j->model.vp0 + j->model.gradient * z1;
  if (v0 > 0 && v1 > 0) {
    /* a linear profile: its extremes are at the model's top and bottom */
    const double bad_v = (v0 < j->model.vp_range[0] || v0 > j->model.vp_range[1]) ? v0 : v1;
    const double bad_z = bad_v == v0 ? z0 : z1;
    /* the velocity itself: "got" shows the key blamed, the gradient's value where it is the gradient */
    char at[160], zs[64], vs[64];
    fmt_double(zs, sizeof zs, bad_z);
    fmt_double(vs, sizeof vs, bad_v);
    snprintf(at, sizeof at, " (vp0 + gradient * z at z = %s is %s m/s)", zs, vs);
    const config_setting_t *blame = (bad_z == z0 || !member(m, "gradient")) ? member(m, "vp0") : member(m, "gradient");
    return check_vp(c, blame, j, bad_v, at);
  }
  char allowed[512], a[64], b[64], v[64];
  fmt_double(a, sizeof a, z0);
  fmt_double(b, sizeof b, z1);
  fmt_double(v, sizeof v, v0 <= 0 ? v0 : v1);
  snprintf(allowed, sizeof allowed, "vp = vp0 + gradient * z must stay > 0 for z in [%s, %s] (it is %s m/s at z = %s)",
           a, b, v, v0 <= 0 ? a : b);
  const config_setting_t *blame = (v0 <= 0 || !member(m, "gradient")) ? member(m, "vp0") : member(m, "gradient");
  return bad(c, blame, "the velocity becomes non-positive inside the model", allowed);
}

static tw_status parse_raw(const ctx *c, const config_setting_t *m, tw_job *j) {
  struct stat st;
  TRY(key_file(c, m, "file", "a file name (float32, z fastest)", &j->model.file, &st));
  double want = 4.0 * j->n[0] * (double)j->n[1] * j->n[2];
  if ((double)st.st_size == want) return TW_OK;
  char what[600], allowed[200];
  snprintf(what, sizeof what, "raw model \"%s\" has the wrong size", j->model.file);
  snprintf(allowed, sizeof allowed, "expected %.0f bytes (nx*ny*nz*4 = %d*%d*%d*4), actual %lld bytes", want,
           j->n[0], j->n[1], j->n[2], (long long)st.st_size);
  return bad(c, member(m, "file"), what, allowed);
}

/* SEG-Y cube: the file must be readable here; its geometry is checked when it is read (model.c). */
static tw_status parse_segy_model(const ctx *c, const config_setting_t *m, tw_job *j) {
  struct stat st;
  static const char *const desc = "a trace-header byte position (1..237; SEG-Y rev 1: 189 inline, 193 crossline)";
  TRY(key_file(c, m, "file", "a SEG-Y file name", &j->model.file, &st));
  j->model.inline_byte = 189, j->model.crossline_byte = 193;
  TRY(key_int(c, m, "inline_byte", 1, 237, desc, &j->model.inline_byte));
  TRY(key_int(c, m, "crossline_byte", 1, 237, desc, &j->model.crossline_byte));
  if (j->model.inline_byte != j->model.crossline_byte) return TW_OK;
  return bad(c, member(m, "crossline_byte") ? member(m, "crossline_byte") : member(m, "inline_byte"),
             "inline and crossline numbers cannot share one header field", "allowed two different byte positions");
}

static tw_status parse_model_body(const ctx *c, const config_setting_t *m, tw_job *j) {
  struct stat st;
  const char *ds = "vp";
  switch (j->model.type) {
    case TW_MODEL_CONSTANT:
      TRY(key_double(c, m, "vp", 1, 0.0, INFINITY, 1, "a positive velocity (m/s)", &j->model.vp));
      return check_vp(c, member(m, "vp"), j, j->model.vp, "");
    case TW_MODEL_LAYERED: return parse_layers(c, m, j);
    case TW_MODEL_GRADIENT: return parse_gradient(c, m, j);
    case TW_MODEL_HDF5:
      TRY(key_file(c, m, "file", "an HDF5 file name", &j->model.file, &st));
      TRY(key_string(c, m, "dataset", 0, "a dataset name", &ds));
      return (j->model.dataset = strdup(ds)) ? TW_OK : oom(c);
    case TW_MODEL_RAW: return parse_raw(c, m, j);
    case TW_MODEL_SEGY: return parse_segy_model(c, m, j);
  }
  return TW_OK;
}

static tw_status parse_model(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const types[] = {"constant", "layered", "gradient", "hdf5", "raw", "segy", NULL};
  static const char *const k_const[] = {"type", "vp", "vp_range", NULL},
                           *const k_layer[] = {"type", "layers", "vp_range", NULL},
                           *const k_grad[] = {"type", "vp0", "gradient", "vp_range", NULL},
                           *const k_hdf5[] = {"type", "file", "dataset", "vp_range", NULL},
                           *const k_raw[] = {"type", "file", "vp_range", NULL},
                           *const k_segy[] = {"type", "file", "inline_byte", "crossline_byte", "vp_range", NULL};
  static const char *const *const keys[] = {k_const, k_layer, k_grad, k_hdf5, k_raw, k_segy};
  config_setting_t *m;
  int t = 0;
  char scope[200];
  static const char *const k_all[] = {"type", "vp", "layers", "vp0", "gradient", "file", "dataset", "inline_byte",
                                      "crossline_byte", "vp_range", NULL};
  TRY(key_group(c, root, "model", 1, &m));
  TRY(keep_where(c, m, &j->model.where));
  TRY(check_keys(c, m, k_all, "model"));
  TRY(key_choice(c, m, "type", 1, types, "model type", &t));
  j->model.type = (tw_model_type)t;
  /* a --set of model.type alone keeps the file's keys of the old type: say how to replace the group */
  const int type_alone = override_of(member(m, "type")) && !override_of(m);
  static const char *const hint[2] = {
      " (model.type alone was changed by --set: give the whole group instead, --set 'model = { type = \"",
      "\"; ... }')"};
  snprintf(scope, sizeof scope, "a model of type \"%s\"%s%s%s", types[t], type_alone ? hint[0] : "",
           type_alone ? types[t] : "", type_alone ? hint[1] : "");
  TRY(check_keys(c, m, keys[t], scope));
  TRY(parse_vp_range(c, m, j));
  return parse_model_body(c, m, j);
}

/* ---------------------------------------------------------------- sources */

static const char *const interp_names[] = {"nearest", "trilinear", NULL};

static tw_status parse_wavelet(const ctx *c, const config_setting_t *src, tw_wavelet_spec *w) {
  static const char *const types[] = {"ricker", "file", NULL};
  static const char *const k_ricker[] = {"type", "frequency", "delay", "amplitude", NULL};
  static const char *const k_file[] = {"type", "file", "dt", NULL};
  config_setting_t *g;
  int t = 0;
  struct stat st;
  static const char *const k_all[] = {"type", "frequency", "delay", "amplitude", "file", "dt", NULL};
  TRY(key_group(c, src, "wavelet", 1, &g));
  TRY(keep_where(c, g, &w->where));
  TRY(check_keys(c, g, k_all, "wavelet"));
  TRY(key_choice(c, g, "type", 1, types, "wavelet type", &t));
  w->type = (tw_wavelet_type)t;
  TRY(check_keys(c, g, t ? k_file : k_ricker, t ? "a wavelet of type \"file\"" : "a wavelet of type \"ricker\""));
  if (w->type == TW_WAVELET_FILE) {
    TRY(key_file(c, g, "file", "a file name (one sample per line)", &w->file, &st));
    return key_double(c, g, "dt", 0, 0.0, INFINITY, 1, "a positive sampling interval (seconds)", &w->file_dt);
  }
  TRY(key_double(c, g, "frequency", 1, 0.0, INFINITY, 1, "a positive frequency (Hz)", &w->frequency));
  w->delay = 1.5 / w->frequency;
  w->amplitude = 1.0;
  TRY(key_double(c, g, "delay", 0, 0.0, INFINITY, 0, "a delay >= 0 (seconds)", &w->delay));
  /* s(t) is stored in float32 (its peak is the amplitude): beyond FLT_MAX it would be inf */
  return key_double(c, g, "amplitude", 0, -FLT_MAX, FLT_MAX, 0, "an amplitude within the float32 range",
                    &w->amplitude);
}

static tw_status parse_source(const ctx *c, const config_setting_t *e, const tw_job *j, tw_source_spec *s) {
  static const char *const keys[] = {"position", "wavelet", "interpolation", NULL};
  if (!config_setting_is_group(e))
    return bad(c, e, "must be a group", "expected { position = [x, y, z]; wavelet = { ... }; }");
  TRY(keep_where(c, e, &s->where));
  TRY(check_keys(c, e, keys, "a source"));
  if (j->nshots && member(e, "position"))
    return bad(c, member(e, "position"), "not allowed in a survey",
               "each shot fires this source at its own position (shots.positions, shots.lines): remove it");
  if (!j->nshots) {
    TRY(key_vec(c, e, "position", 1, 3, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", s->pos));
    TRY(check_inside(c, member(e, "position"), j, s->pos));
  }
  int it = 0;
  TRY(key_choice(c, e, "interpolation", 0, interp_names, "interpolation", &it));
  s->interp = (tw_interp)it;
  return parse_wavelet(c, e, &s->wavelet);
}

static tw_status parse_sources(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *eg = "( { position = [x, y, z]; wavelet = { type = \"ricker\"; frequency = 10.0; }; } )";
  config_setting_t *l;
  TRY(key_list(c, root, "sources", 1, eg, &l));
  int n = config_setting_length(l);
  if (n == 0) return bad(c, l, "must hold at least one source", "expected ( { position = [x, y, z]; wavelet = ... }, ... )");
  if (j->nshots && n != 1)
    return bad(c, l, "a survey fires one source per shot",
               "expected one source without a position: ( { wavelet = { type = \"ricker\"; frequency = 10.0; }; } )");
  if (!(j->sources = calloc((size_t)n, sizeof *j->sources))) return oom(c);
  j->nsources = n;
  for (int i = 0; i < n; i++) {
    j->sources[i].wavelet.source = i;
    TRY(parse_source(c, config_setting_get_elem(l, (unsigned)i), j, &j->sources[i]));
  }
  return TW_OK;
}

/* ---------------------------------------------------------------- receivers */

/* A growing list of points: the receivers (j->rec) or the shots (j->shots). */
typedef struct {
  double (**p)[3];
  long *n;
  long cap, max;
  const char *what;          /* "receivers", "shots" (messages) */
  int inside;                /* points must lie inside the model (not offsets: moving receivers) */
  tw_rec_group **groups;     /* where each run of points came from (messages) */
  int *ngroups;
} recbuf;

/* Room for `more` points (s is blamed when the total gets too large). */
static tw_status rec_reserve(const ctx *c, const config_setting_t *s, recbuf *rb, double more) {
  if ((double)*rb->n + more > (double)rb->max) {
    char what[64], allowed[64];
    snprintf(what, sizeof what, "too many %s", rb->what);
    snprintf(allowed, sizeof allowed, "allowed at most %ld in all", rb->max);
    return bad(c, s, what, allowed);
  }
  long need = *rb->n + (long)more;
  if (need <= rb->cap) return TW_OK;
  long cap = rb->cap ? rb->cap : 64;
  while (cap < need) cap *= 2;
  double(*p)[3] = realloc(*rb->p, (size_t)cap * sizeof *p);
  if (!p) return oom(c);
  *rb->p = p;
  rb->cap = cap;
  return TW_OK;
}

static void rec_push(recbuf *rb, double x, double y, double z) {
  double *q = (*rb->p)[(*rb->n)++];
  q[0] = x, q[1] = y, q[2] = z;
}

/* Points [first, *n) came from setting s (tw_rec_group). */
static tw_status rec_group(const ctx *c, const config_setting_t *s, const recbuf *rb, long first) {
  if (*rb->n == first) return TW_OK;
  tw_rec_group *g = realloc(*rb->groups, (size_t)(*rb->ngroups + 1) * sizeof *g);
  if (!g) return oom(c);
  *rb->groups = g;
  g += (*rb->ngroups)++;
  g->first = first;
  g->count = *rb->n - first;
  g->line = (int)config_setting_source_line(s);
  path_of(s, g->key, sizeof g->key);
  where(c, s, g->where, sizeof g->where);
  return TW_OK;
}

static tw_status parse_points(const ctx *c, const config_setting_t *r, const char *key, tw_job *j, recbuf *rb) {
  config_setting_t *l;
  TRY(key_list(c, r, key, 0, "( [x, y, z], ... )", &l));
  if (!l) return TW_OK;
  const long first = *rb->n;
  for (int i = 0; i < config_setting_length(l); i++) {
    config_setting_t *e = config_setting_get_elem(l, (unsigned)i);
    double p[3];
    TRY(as_vec(c, e, 3, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", p));
    if (rb->inside) TRY(check_inside(c, e, j, p));
    TRY(rec_reserve(c, e, rb, 1));
    rec_push(rb, p[0], p[1], p[2]);
  }
  return rec_group(c, l, rb, first);
}

static tw_status parse_line(const ctx *c, const config_setting_t *e, tw_job *j, recbuf *rb) {
  static const char *const keys[] = {"from", "to", "count", NULL};
  double a[3], b[3];
  long n = 0;
  if (!config_setting_is_group(e))
    return bad(c, e, "must be a group", "expected { from = [x, y, z]; to = [x, y, z]; count = 10; }");
  /* a line of shots too (shots.lines): named so, and its count allowed up to the shots' limit, not
   * the receivers' (a count of 0 said allowed 1..100000000, where 20000000 is too many shots) */
  TRY(check_keys(c, e, keys, strcmp(rb->what, "shots") == 0 ? "a shot line" : "a receiver line"));
  TRY(key_vec(c, e, "from", 1, 3, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", a));
  TRY(key_vec(c, e, "to", 1, 3, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", b));
  TRY(key_long(c, e, "count", 1, 1, rb->max, "a positive integer", &n));
  /* One point is `from` alone: a `to` elsewhere was dropped without a word (a line whose count was
   * forgotten, or meant for more points). A `to` that is `from` up to rounding (1e-9 of a cell, or
   * 1e-12 of the coordinate: a script's from + 0 * spacing, UTM coordinates) is that point: refused,
   * it read "at from = [0.3, ...] ... got [0.3, ...]; allowed to = from" */
  int apart = 0;
  for (int i = 0; i < 3; i++)
    apart |= fabs(b[i] - a[i]) > 1e-9 * j->d[i] + 1e-12 * fmax(fabs(a[i]), fabs(b[i]));
  if (n == 1 && apart) {
    char what[512];
    sbuf f = {{0}, 0};
    render(&f, member(e, "from"), 0);
    snprintf(what, sizeof what, "with count = 1 the line is its one point, at from = %s, and to would be ignored",
             f.s);
    return bad(c, member(e, "to"), what,
               "allowed to = from (one point), or count >= 2 (points evenly spaced from one end to the other)");
  }
  if (rb->inside) TRY(check_inside(c, member(e, "from"), j, a));
  if (rb->inside && n > 1) TRY(check_inside(c, member(e, "to"), j, b));
  TRY(rec_reserve(c, member(e, "count"), rb, (double)n));
  const long first = *rb->n;
  for (long i = 0; i < n; i++) {
    if (i == n - 1 && n > 1) {
      rec_push(rb, b[0], b[1], b[2]);
      break;
    }
    double t = n > 1 ? (double)i / (double)(n - 1) : 0.0;
    rec_push(rb, a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t, a[2] + (b[2] - a[2]) * t);
  }
  return rec_group(c, e, rb, first);
}

static tw_status check_grid_extent(const ctx *c, const config_setting_t *e, const tw_job *j, const double o[2],
                                   const double s[2], const long n[2], double depth) {
  double p[3] = {o[0], o[1], depth};
  if (!inside_axis(j, 2, depth)) return check_inside(c, member(e, "depth"), j, p);
  if (!inside_axis(j, 0, o[0]) || !inside_axis(j, 1, o[1])) return check_inside(c, member(e, "origin"), j, p);
  double x = o[0] + (double)(n[0] - 1) * s[0], y = o[1] + (double)(n[1] - 1) * s[1];
  if (inside_axis(j, 0, x) && inside_axis(j, 1, y)) return TW_OK;
  char box[256], allowed[512], xs[64], ys[64];
  box_text(j, box, sizeof box, 2);
  fmt_double(xs, sizeof xs, x);
  fmt_double(ys, sizeof ys, y);
  snprintf(allowed, sizeof allowed, "its last point (x = %s, y = %s) must lie inside the model: %s", xs, ys, box);
  return bad(c, member(e, "count"), "the receiver grid extends outside the model", allowed);
}

static tw_status parse_rgrid(const ctx *c, const config_setting_t *e, tw_job *j, recbuf *rb) {
  static const char *const keys[] = {"origin", "spacing", "count", "depth", NULL};
  double o[2], s[2], z = 0;
  long n[2];
  if (!config_setting_is_group(e))
    return bad(c, e, "must be a group",
               "expected { origin = [x, y]; spacing = [dx, dy]; count = [nx, ny]; depth = z; }");
  TRY(check_keys(c, e, keys, "a receiver grid"));
  TRY(key_vec(c, e, "origin", 1, 2, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", o));
  TRY(key_vec(c, e, "spacing", 1, 2, 0.0, INFINITY, 1, "a positive spacing (metres)", s));
  TRY(key_ivec(c, e, "count", 2, 1, MAX_REC, "a positive integer", n));
  TRY(key_double(c, e, "depth", 1, -INFINITY, INFINITY, 0, "a finite depth (metres)", &z));
  if (rb->inside) TRY(check_grid_extent(c, e, j, o, s, n, z));
  TRY(rec_reserve(c, member(e, "count"), rb, (double)n[0] * (double)n[1]));
  const long first = *rb->n;
  for (long ix = 0; ix < n[0]; ix++)
    for (long iy = 0; iy < n[1]; iy++) rec_push(rb, o[0] + (double)ix * s[0], o[1] + (double)iy * s[1], z);
  return rec_group(c, e, rb, first);
}

typedef tw_status (*elem_parser)(const ctx *, const config_setting_t *, tw_job *, recbuf *);

static tw_status parse_each(const ctx *c, const config_setting_t *r, const char *key, const char *eg, tw_job *j,
                            recbuf *rb, elem_parser fn) {
  config_setting_t *l;
  TRY(key_list(c, r, key, 0, eg, &l));
  for (int i = 0; l && i < config_setting_length(l); i++) TRY(fn(c, config_setting_get_elem(l, (unsigned)i), j, rb));
  return TW_OK;
}

static tw_status check_moving(const ctx *c, const config_setting_t *root, const tw_job *j);

static tw_status parse_receivers(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"interval", "interpolation", "points", "lines", "grids", NULL};
  config_setting_t *r;
  recbuf rb = {&j->rec, &j->nrec, 0, MAX_REC, "receivers", !j->rec_moving, &j->rec_groups, &j->nrec_groups};
  int it = 0;
  j->rec_interval = 1;
  TRY(key_group(c, root, "receivers", 0, &r));
  if (!r) return TW_OK;
  TRY(check_keys(c, r, keys, "receivers"));
  TRY(key_int(c, r, "interval", 1, MAX_STEPS, "a positive number of steps", &j->rec_interval));
  TRY(key_choice(c, r, "interpolation", 0, interp_names, "interpolation", &it));
  j->rec_interp = (tw_interp)it;
  TRY(parse_points(c, r, "points", j, &rb));
  TRY(parse_each(c, r, "lines", "( { from = [x, y, z]; to = [x, y, z]; count = n; }, ... )", j, &rb, parse_line));
  TRY(parse_each(c, r, "grids", "( { origin = [x, y]; spacing = [dx, dy]; count = [nx, ny]; depth = z; } )", j,
                 &rb, parse_rgrid));
  return j->rec_moving ? check_moving(c, root, j) : TW_OK;
}

/* ---------------------------------------------------------------- shots (a survey) */

/* shots = { positions = ( [x, y, z], ... ); lines = ( { from; to; count; } ); receivers = "fixed"; }:
 * one shot per position, in job order (positions, then lines). Parsed before sources and
 * receivers: a survey's source has no position of its own, and moving receivers are offsets. */
static tw_status parse_shots(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"positions", "lines", "receivers", NULL};
  static const char *const modes[] = {"fixed", "moving", NULL};
  config_setting_t *g;
  TRY(key_group(c, root, "shots", 0, &g));
  if (!g) return TW_OK;
  TRY(check_keys(c, g, keys, "shots"));
  int m = 0;
  TRY(key_choice(c, g, "receivers", 0, modes, "receiver mode", &m));
  j->rec_moving = m;
  recbuf rb = {&j->shots, &j->nshots, 0, MAX_SHOTS, "shots", 1, &j->shot_groups, &j->nshot_groups};
  TRY(parse_points(c, g, "positions", j, &rb));
  TRY(parse_each(c, g, "lines", "( { from = [x, y, z]; to = [x, y, z]; count = n; }, ... )", j, &rb, parse_line));
  if (j->nshots == 0) {
    /* Blamed on the list that left the survey empty, where it is given: an override of positions or
     * lines first (`--set shots.positions=()` was located at the shots group's line in the file, as
     * if the file were wrong), else an empty list of the file; the group only when it has neither. */
    const config_setting_t *pos = member(g, "positions"), *lines = member(g, "lines");
    const config_setting_t *s = pos && override_of(pos) ? pos : lines && override_of(lines) ? lines : pos ? pos : lines;
    if (!s)
      return bad(c, g, "must hold at least one shot",
                 "expected positions = ( [x, y, z], ... ) and/or lines = ( { from = [x, y, z]; to = [x, y, z]; count = "
                 "n; } )");
    char what[96];
    const config_setting_t *other = s == pos ? lines : pos;
    snprintf(what, sizeof what, "leaves the survey without a shot (shots.%s %s)", s == pos ? "lines" : "positions",
             other ? "gives none" : "is not given");
    return bad(c, s, what,
               "allowed at least one position, positions = ( [x, y, z], ... ), or one shot line, lines = ( { from = "
               "[x, y, z]; to = [x, y, z]; count = n; } )");
  }
  return TW_OK;
}

/* Moving receivers are offsets from the shot: every shot must keep all of them inside the model.
 * The offsets' bounding box against each shot: O(shots + receivers). */
static tw_status check_moving(const ctx *c, const config_setting_t *root, const tw_job *j) {
  double lo[3] = {INFINITY, INFINITY, INFINITY}, hi[3] = {-INFINITY, -INFINITY, -INFINITY};
  for (long r = 0; r < j->nrec; r++)
    for (int a = 0; a < 3; a++) lo[a] = fmin(lo[a], j->rec[r][a]), hi[a] = fmax(hi[a], j->rec[r][a]);
  static const char xyz[] = "xyz";
  for (long s = 0; j->nrec && s < j->nshots; s++)
    for (int a = 0; a < 3; a++) {
      const double e0 = j->shots[s][a] + lo[a], e1 = j->shots[s][a] + hi[a];
      if (inside_axis(j, a, e0) && inside_axis(j, a, e1)) continue;
      char what[600], allowed[400], box[256], p[3][64], v0[64], v1[64];
      for (int b = 0; b < 3; b++) fmt_double(p[b], sizeof p[b], j->shots[s][b]);
      fmt_double(v0, sizeof v0, e0);
      fmt_double(v1, sizeof v1, e1);
      box_text(j, box, sizeof box, 3);
      snprintf(what, sizeof what, "shot %ld at [%s, %s, %s] puts its receivers (moving: offsets from the shot) "
               "outside the model, %c from %s to %s", s, p[0], p[1], p[2], xyz[a], v0, v1);
      snprintf(allowed, sizeof allowed, "allowed inside the model: %s; move the shot or shorten the spread", box);
      return bad(c, member(member(root, "shots"), "receivers"), what, allowed);
    }
  return TW_OK;
}

/* ---------------------------------------------------------------- snapshots */

static int cmp_long(const void *a, const void *b) {
  long x = *(const long *)a, y = *(const long *)b;
  return (x > y) - (x < y);
}

static void sort_unique(long *v, int *n) {
  if (*n < 2) return;
  qsort(v, (size_t)*n, sizeof *v, cmp_long);
  int k = 1;
  for (int i = 1; i < *n; i++)
    if (v[i] != v[k - 1]) v[k++] = v[i];
  *n = k;
}

/* Each snapshot step must be in 1..steps (s: the snapshots.steps setting). */
static tw_status check_snap_range(const ctx *c, const config_setting_t *s, const tw_job *j) {
  for (int i = 0; s && i < config_setting_length(s); i++) {
    config_setting_t *e = config_setting_get_elem(s, (unsigned)i);
    if (config_setting_get_int64(e) <= j->steps) continue;
    char allowed[160];
    snprintf(allowed, sizeof allowed, "allowed 1..%ld (the run's number of steps)", j->steps);
    return bad(c, e, "snapshot step beyond the last time step", allowed);
  }
  return TW_OK;
}

static tw_status parse_snap_steps(const ctx *c, const config_setting_t *s, tw_job *j) {
  int n = config_setting_length(s);
  if (!(config_setting_is_array(s) || config_setting_is_list(s)) || n == 0)
    return bad(c, s, "must be a non-empty array of step numbers", "expected e.g. [500, 1000]");
  if (!(j->snap_steps = malloc((size_t)n * sizeof *j->snap_steps))) return oom(c);
  for (int i = 0; i < n; i++)
    TRY(as_long(c, config_setting_get_elem(s, (unsigned)i), 1, MAX_STEPS, "a positive step number",
                &j->snap_steps[i]));
  j->nsnap = n;
  sort_unique(j->snap_steps, &j->nsnap);
  return j->steps > 0 ? check_snap_range(c, s, j) : TW_OK;
}

static tw_status parse_region(const ctx *c, const config_setting_t *g, tw_job *j) {
  static const char *const keys[] = {"from", "to", NULL};
  config_setting_t *r;
  TRY(key_group(c, g, "region", 0, &r));
  if (!r) return TW_OK;
  TRY(check_keys(c, r, keys, "snapshots.region"));
  TRY(key_vec(c, r, "from", 1, 3, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", j->snap_from));
  TRY(key_vec(c, r, "to", 1, 3, -INFINITY, INFINITY, 0, "a finite coordinate (metres)", j->snap_to));
  TRY(check_inside(c, member(r, "from"), j, j->snap_from));
  TRY(check_inside(c, member(r, "to"), j, j->snap_to));
  for (int a = 0; a < 3; a++)
    if (j->snap_to[a] < j->snap_from[a]) {
      char allowed[160], v[64];
      fmt_given(v, sizeof v, j->snap_from[a]);
      snprintf(allowed, sizeof allowed, "allowed to[%d] >= from[%d] = %s (from <= to on every axis)", a, a, v);
      return bad(c, member(r, "to"), "the region is inverted", allowed);
    }
  /* A snapshot writes the cells inside the region and no other: from and to between two cells hold
   * none on that axis (the box took the next cell up, outside what was asked), refused with the
   * cells on either side, either of which makes it valid. */
  for (int a = 0; a < 3; a++) {
    int above, below;
    if (tw_axis_span(j->origin[a], j->d[a], j->n[a], j->snap_from[a], j->snap_to[a], &above, &below)) continue;
    static const char xyz[] = "xyz";
    char f[64], t[64], lo[64], hi[64], what[400], allowed[200];
    fmt_given(f, sizeof f, j->snap_from[a]);
    fmt_given(t, sizeof t, j->snap_to[a]);
    fmt_double(lo, sizeof lo, j->origin[a] + below * j->d[a]);
    fmt_double(hi, sizeof hi, j->origin[a] + above * j->d[a]);
    snprintf(what, sizeof what,
             "holds no cell on %c: from[%d] = %s and to[%d] = %s lie between the cells at %c = %s and %s m", xyz[a], a,
             f, a, t, xyz[a], lo, hi);
    snprintf(allowed, sizeof allowed, "allowed from[%d] <= %s or to[%d] >= %s (a region holds a cell on every axis)", a,
             lo, a, hi);
    /* where it is given: a --set of from or to alone that left it none, else the region (it was
     * located at the file's region, which holds a cell) */
    const config_setting_t *from = member(r, "from"), *to = member(r, "to");
    const config_setting_t *s = override_of(r) ? r : override_of(to) ? to : override_of(from) ? from : r;
    return bad(c, s, what, allowed);
  }
  return TW_OK;
}

static tw_status parse_snapshots(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"every", "steps", "decimate", "region", NULL};
  config_setting_t *g;
  j->snap_decimate = 1;
  for (int a = 0; a < 3; a++) {
    j->snap_from[a] = j->origin[a];
    j->snap_to[a] = j->origin[a] + (j->n[a] - 1) * j->d[a];
  }
  TRY(key_group(c, root, "snapshots", 0, &g));
  if (!g) return TW_OK;
  TRY(check_keys(c, g, keys, "snapshots"));
  config_setting_t *every = member(g, "every"), *steps = member(g, "steps");
  if (every && steps)
    return bad(c, steps, "conflicts with snapshots.every", "give either snapshots.every or snapshots.steps, not both");
  if (!every && !steps) return missing(c, g, "every", "snapshots.every (steps) or snapshots.steps ([s1, s2, ...])");
  if (every) TRY(as_long(c, every, 1, MAX_STEPS, "a positive number of steps", &j->snap_every));
  if (steps) TRY(parse_snap_steps(c, steps, j));
  TRY(key_int(c, g, "decimate", 1, MAX_N, "a positive integer", &j->snap_decimate));
  return parse_region(c, g, j);
}

/* ---------------------------------------------------------------- output, solver */

/* "<job basename>" + ext: "jobs/survey.cfg" → "survey.h5" (ext ".h5") or "survey" (ext ""). */
static char *default_output(const char *name, const char *ext) {
  const char *base = strrchr(name, '/') ? strrchr(name, '/') + 1 : name;
  size_t n = strlen(base), e = strlen(ext);
  const char *dot = strrchr(base, '.');
  if (dot && dot != base) n = (size_t)(dot - base);
  if (n == 0 || memchr(base, '<', n)) base = "torrewave", n = strlen(base);
  char *r = malloc(n + e + 1);
  if (!r) return NULL;
  memcpy(r, base, n);
  memcpy(r + n, ext, e + 1);
  return r;
}

static tw_status parse_output(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"file", "directory", "segy", "model", NULL};
  config_setting_t *g;
  const char *file = NULL, *dir = NULL;
  TRY(key_group(c, root, "output", 0, &g));
  if (g) {
    TRY(check_keys(c, g, keys, "output"));
    TRY(key_string(c, g, "file", 0, "a file name", &file));
    TRY(key_string(c, g, "directory", 0, "a directory name", &dir));
    TRY(key_bool(c, g, "segy", &j->output_segy));
    TRY(key_bool(c, g, "model", &j->output_model));
  }
  if (j->nshots) {
    if (file)
      return bad(c, member(g, "file"), "a survey writes one file per shot",
                 "give output.directory instead (its files: shot-00000.h5, shot-00001.h5, ...)");
    j->output_dir = dir ? strdup(dir) : default_output(c->name, "");
    if (!j->output_dir) return oom(c);
    return dir ? keep_where(c, member(g, "directory"), &j->output_dir_where) : TW_OK;
  }
  if (dir)
    return bad(c, member(g, "directory"), "only a survey (shots = { ... }) writes a directory", "give output.file");
  j->output = file ? strdup(file) : default_output(c->name, ".h5");
  return j->output ? TW_OK : oom(c);
}

static tw_status parse_memory(const ctx *c, const config_setting_t *s, tw_job *j) {
  static const char *allowed = "allowed a number of bytes with an optional K, M, G or T suffix, e.g. \"8G\"";
  tw_error e;
  if (is_int(s) && config_setting_get_int64(s) >= 0) {
    j->device_memory = (uint64_t)config_setting_get_int64(s);
  } else if (config_setting_type(s) != CONFIG_TYPE_STRING ||
             tw_parse_memsize(config_setting_get_string(s), &j->device_memory, &e) != TW_OK) {
    return bad(c, s, "must be a memory size", allowed);
  }
  if (!j->device_memory) /* not "no cap": that is the key left out; a cap of 0 is a slip */
    return bad(c, s, "must be a positive memory size", "allowed e.g. \"8G\"; leave the key out for no cap");
  return TW_OK;
}

static tw_status parse_solver(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"kernel", "dts", "tower_height", "device_memory", "threads", NULL};
  static const char *const kernels[] = {"auto", "cpu", "cpu-diamond", "gpu-stepwise", "gpu-diamond", NULL};
  config_setting_t *g;
  int k = 0;
  TRY(key_group(c, root, "solver", 0, &g));
  if (g) {
    TRY(check_keys(c, g, keys, "solver"));
    TRY(key_choice(c, g, "kernel", 0, kernels, "kernel", &k));
    /* Above the schedule's limits, tw_schedule_params refuses with the reason (the validation's first
     * step); below 1 this parse does, naming the range the schedule takes (order parsed already). */
    char dts_ok[64], nt_ok[64];
    snprintf(dts_ok, sizeof dts_ok, "allowed 1..%d for order %d", TW_TILE_MAX / (j->order / 2), j->order);
    snprintf(nt_ok, sizeof nt_ok, "allowed 1..%d", TW_TOWER_HEIGHT_MAX);
    TRY(key_positive(c, g, "dts", dts_ok, &j->dts));
    TRY(key_positive(c, g, "tower_height", nt_ok, &j->tower_height));
    TRY(key_int(c, g, "threads", 0, 65536, "a number of threads (0 = all)", &j->threads));
    if (member(g, "device_memory")) TRY(parse_memory(c, member(g, "device_memory"), j));
    static const char *const kept[] = {"kernel", "dts", "tower_height", "device_memory", "threads"};
    char **where[] = {&j->kernel_where, &j->dts_where, &j->height_where, &j->dm_where, &j->threads_where};
    for (int i = 0; i < 5; i++)
      if (member(g, kept[i])) TRY(keep_where(c, member(g, kept[i]), where[i]));
  }
  snprintf(j->kernel, sizeof j->kernel, "%s", kernels[k]);
  return TW_OK;
}

/* checkpoint = { every = 500; every_seconds = 600.0; file = "shot.ckpt"; }: the group's presence
turns checkpoints on (with neither interval: only on SIGTERM / SIGUSR1); both intervals may be
given (whichever comes first). file is kept as given (relative to the working folder, like
output.file); NULL = the output's name + ".ckpt" (tw_checkpoint_path). */
static tw_status parse_checkpoint(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"every", "every_seconds", "file", NULL};
  config_setting_t *g;
  const char *file = NULL;
  TRY(key_group(c, root, "checkpoint", 0, &g));
  if (!g) return TW_OK;
  TRY(check_keys(c, g, keys, "checkpoint"));
  j->ckpt = 1;
  TRY(key_long(c, g, "every", 0, 1, MAX_STEPS, "a positive number of steps", &j->ckpt_every));
  TRY(key_double(c, g, "every_seconds", 0, 0.0, 1e9, 1, "a positive number of seconds", &j->ckpt_every_seconds));
  TRY(key_string(c, g, "file", 0, "a file name", &file));
  if (file && !*file) return bad(c, member(g, "file"), "must not be empty", "allowed a file name, e.g. \"shot.ckpt\"");
  if (file && !(j->ckpt_file = strdup(file))) return oom(c);
  if (file) TRY(keep_where(c, member(g, "file"), &j->ckpt_where));
  return TW_OK;
}

static tw_status parse_job(const ctx *c, const config_setting_t *root, tw_job *j) {
  static const char *const keys[] = {"grid",      "time",      "model",  "scheme", "boundary",   "sources",
                                     "receivers", "snapshots", "output", "solver", "checkpoint", "shots", NULL};
  TRY(check_keys(c, root, keys, "the job file"));
  TRY(parse_grid(c, root, j));
  TRY(parse_time(c, root, j));
  TRY(parse_scheme(c, root, j));
  TRY(parse_boundary(c, root, j));
  TRY(parse_model(c, root, j));
  TRY(parse_shots(c, root, j));
  TRY(parse_sources(c, root, j));
  TRY(parse_receivers(c, root, j));
  TRY(parse_snapshots(c, root, j));
  TRY(parse_output(c, root, j));
  TRY(parse_checkpoint(c, root, j));
  if (j->nshots && j->ckpt)
    return bad(c, member(root, "checkpoint"), "not in a survey",
               "a survey restarts shot by shot (run it again: the complete shots stay); remove the checkpoint group");
  return parse_solver(c, root, j);
}

/* ---------------------------------------------------------------- the job hash (tw_job.hash) */

/* Settings that do not change a shot's files: where the output goes (not what goes into it:
 * output.segy and output.model count), which shots there are (a shot file records its own
 * position), the solver group: the kernel's choice, tuning and resources (the kernels of one
 * family give the same bits; the survey adds the family), and checkpoints. */
static const char *const hash_skip[] = {"output.file", "output.directory", "shots.positions", "shots.lines", "solver",
                                        "checkpoint", NULL};

static int cmp_member(const void *a, const void *b) {
  return strcmp(config_setting_name(*(config_setting_t *const *)a), config_setting_name(*(config_setting_t *const *)b));
}

/* Setting s (at path) in canonical form: numbers as exact doubles (10 and 10.0 alike), strings
 * with their NUL, group members sorted by name, every aggregate closed by a marker; comments,
 * layout and key order do not count. */
static int hash_skipped(const char *path) {
  for (int i = 0; hash_skip[i]; i++)
    if (!strcmp(path, hash_skip[i])) return 1;
  return 0;
}

/* A group with nothing left to hash (all its members left out, or itself empty groups) counts as
 * absent: `output = { directory = "x"; }` and no output group hash alike. */
static int hash_empty(const config_setting_t *g, const char *path) {
  if (!config_setting_is_group(g)) return 0;
  for (int i = 0; i < config_setting_length(g); i++) {
    const config_setting_t *e = config_setting_get_elem(g, (unsigned)i);
    char sub[300];
    snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", config_setting_name(e));
    if (!hash_skipped(sub) && !hash_empty(e, sub)) return 0;
  }
  return 1;
}

static uint64_t hash_setting(uint64_t h, const config_setting_t *s, const char *path) {
  const int t = config_setting_type(s);
  if (config_setting_is_number(s)) {
    const double v = is_int(s) ? (double)config_setting_get_int64(s) : config_setting_get_float(s);
    return tw_hash_bytes(tw_hash_bytes(h, "n", 1), &v, sizeof v);
  }
  if (t == CONFIG_TYPE_STRING) return tw_hash_string(tw_hash_bytes(h, "s", 1), config_setting_get_string(s));
  if (t == CONFIG_TYPE_BOOL) return tw_hash_bytes(h, config_setting_get_bool(s) ? "T" : "F", 1);
  const int n = config_setting_length(s), group = config_setting_is_group(s);
  h = tw_hash_bytes(h, group ? "{" : "(", 1);
  config_setting_t **m = malloc((size_t)(n ? n : 1) * sizeof *m);
  for (int i = 0; m && i < n; i++) m[i] = config_setting_get_elem(s, (unsigned)i);
  if (m && group) qsort(m, (size_t)n, sizeof *m, cmp_member);
  for (int i = 0; i < n; i++) {
    const config_setting_t *e = m ? m[i] : config_setting_get_elem(s, (unsigned)i);
    char sub[300];
    snprintf(sub, sizeof sub, "%s%s%s", path, path[0] ? "." : "", group ? config_setting_name(e) : "[]");
    if (hash_skipped(sub) || (group && hash_empty(e, sub))) continue;
    if (group) h = tw_hash_string(h, config_setting_name(e));
    h = hash_setting(h, e, sub);
  }
  free(m);
  return tw_hash_bytes(h, group ? "}" : ")", 1);
}

/* A file the run reads: its size and modification time (a rewritten model invalidates the shots). */
static uint64_t hash_file(uint64_t h, const char *path) {
  struct stat st;
  if (!path || stat(path, &st) != 0) return tw_hash_string(h, "?");
  const long long v[2] = {(long long)st.st_size, (long long)st.st_mtime};
  return tw_hash_bytes(h, v, sizeof v);
}

static uint64_t job_hash(const config_setting_t *root, const tw_job *j) {
  uint64_t h = hash_setting(TW_HASH_INIT, root, "");
  if (j->model.file) h = hash_file(h, j->model.file);
  for (int i = 0; i < j->nsources; i++)
    if (j->sources[i].wavelet.type == TW_WAVELET_FILE) h = hash_file(h, j->sources[i].wavelet.file);
  return h;
}

/* ================================================================ 5. public API */

static char *with_overrides(const char *text, const char *const *ov, int nov) {
  size_t n = strlen(text) + 2;
  for (int i = 0; i < nov; i++) n += strlen(SET_PREFIX) + strlen(ov[i] ? ov[i] : "") + 1;
  char *r = malloc(n);
  if (!r) return NULL;
  size_t l = strlen(text);
  memcpy(r, text, l + 1);
  if (nov && l && text[l - 1] != '\n') strcat(r, "\n");
  for (int i = 0; i < nov; i++) {
    strcat(r, SET_PREFIX);
    strcat(r, ov[i] ? ov[i] : "");
    strcat(r, "\n");
  }
  return r;
}

/* libconfig's @include directive (a line starting with it) is refused: a job is one file — its text
 * is what the output records (/job) and what the survey's hash and a checkpoint's identity cover,
 * and an included file would escape both, along with the guards this file applies to the text
 * (integers as written, file:line in messages) and the outputs' rule against replacing inputs. */
static tw_status no_include(const ctx *c, const char *text) {
  int line = 1;
  for (const char *p = text; p && *p; line++) {
    const char *q = p;
    while (*q == ' ' || *q == '\t') q++;
    if (strncmp(q, "@include", 8) == 0)
      return tw_error_set(c->err, TW_ECONFIG, "%s:%d: @include: a job file is one file (its text is what the output "
                          "records and a survey's hash and a checkpoint cover, which an included file would escape); "
                          "allowed: the included settings pasted in, or given with --set", c->name, line);
    p = strchr(p, '\n');
    if (p) p++;
  }
  return TW_OK;
}

static tw_status load_text(const char *text, const char *name, const char *const *ov, int nov, tw_job **out,
                           tw_error *err) {
  ctx c = {name, err};
  if (no_include(&c, text)) return TW_ECONFIG;
  tw_job *j = calloc(1, sizeof *j);
  if (!j || !(j->path = strdup(name)) || !(j->text = with_overrides(text, ov, nov))) {
    tw_job_destroy(j);
    return oom(&c);
  }
  for (int i = 0; i < nov; i++)
    if (!ov[i]) {
      tw_job_destroy(j);
      return tw_error_set(err, TW_EINVAL, "%s: --set: a null override", name);
    }
  config_t cfg;
  config_init(&cfg);
  tw_status st = build_config(&c, text, ov, nov, &cfg);
  if (st == TW_OK) st = parse_job(&c, config_root_setting(&cfg), j);
  if (st == TW_OK) j->hash = job_hash(config_root_setting(&cfg), j);
  config_destroy(&cfg);
  if (st != TW_OK) {
    tw_job_destroy(j);
    return st;
  }
  if (err) tw_error_clear(err);
  *out = j;
  return TW_OK;
}

/* The whole of f, NUL-terminated (f is closed). */
static char *read_all(FILE *f, size_t *n, int *eno) {
  char *buf = NULL;
  size_t len = 0, cap = 0;
  for (;;) {
    if (len + 4096 + 1 > cap) {
      cap = cap ? cap * 2 : 8192;
      char *p = realloc(buf, cap);
      if (!p) break;
      buf = p;
    }
    size_t k = fread(buf + len, 1, cap - len - 1, f);
    len += k;
    if (k == 0) {
      int bad_read = ferror(f);
      fclose(f);
      if (bad_read) return free(buf), *eno = EIO, NULL;
      buf[len] = '\0';
      *n = len;
      return buf;
    }
  }
  fclose(f);
  free(buf);
  *eno = ENOMEM;
  return NULL;
}

tw_status tw_job_load(const char *path, const char *const *overrides, int noverrides, tw_job **out, tw_error *err) {
  if (!out || !path) return tw_error_set(err, TW_EINVAL, "tw_job_load: null argument");
  *out = NULL;
  struct stat st;
  const char *kind;
  int eno = 0;
  FILE *f = open_regular(path, &st, &kind, &eno);
  if (kind)
    return tw_error_set(err, TW_EIO, "%s: cannot read the job file: it is %s; allowed a regular file (a FIFO, a "
                        "device or a folder is refused without reading it)", path, kind);
  size_t len = 0;
  char *text = f ? read_all(f, &len, &eno) : NULL;
  if (!text) return tw_error_set(err, TW_EIO, "%s: cannot read the job file: %s", path, strerror(eno));
  const char *nul = memchr(text, '\0', len);
  if (nul) { /* everything after it would be ignored */
    int line = 1;
    for (const char *p = text; p < nul; p++) line += *p == '\n';
    const size_t at = (size_t)(nul - text) + 1;
    free(text);
    return tw_error_set(err, TW_ECONFIG, "%s:%d: a NUL byte (byte %zu of the file): a job file is text; is this the "
                        "right file?", path, line, at);
  }
  tw_status s = load_text(text, path, overrides, noverrides, out, err);
  free(text);
  return s;
}

tw_status tw_job_load_string(const char *text, const char *name, const char *const *overrides, int noverrides,
                             tw_job **out, tw_error *err) {
  if (!out || !text) return tw_error_set(err, TW_EINVAL, "tw_job_load_string: null argument");
  *out = NULL;
  return load_text(text, name ? name : "<string>", overrides, noverrides, out, err);
}

void tw_job_point_where(const tw_job *job, const tw_rec_group *groups, int ngroups, long r, const char *what, char *loc,
                        size_t n) {
  const tw_rec_group *grp = NULL;
  for (int k = 0; k < ngroups; k++)
    if (r >= groups[k].first && r < groups[k].first + groups[k].count) grp = &groups[k];
  const char *key = grp ? grp->key : "";
  const size_t l = strlen(key);
  if (grp && l >= 7 && (!strcmp(key + l - 7, ".points") || (l >= 10 && !strcmp(key + l - 10, ".positions"))))
    snprintf(loc, n, "%s: %s[%ld]", grp->where, key, r - grp->first);
  else if (grp)
    snprintf(loc, n, "%s: %s: %s %ld of it", grp->where, key, what, r - grp->first);
  else
    snprintf(loc, n, "%s: %s %ld", job->path, what, r);
}

void tw_job_destroy(tw_job *job) {
  if (!job) return;
  free(job->path);
  free(job->text);
  free(job->model.layers);
  free(job->model.file);
  free(job->model.dataset);
  free(job->model.where);
  for (int i = 0; job->sources && i < job->nsources; i++)
    free(job->sources[i].wavelet.file), free(job->sources[i].wavelet.where), free(job->sources[i].where);
  free(job->sources);
  free(job->rec);
  free(job->rec_groups);
  free(job->shot_groups);
  free(job->snap_steps);
  free(job->output);
  free(job->ckpt_file);
  free(job->ckpt_where);
  free(job->dm_where);
  free(job->n_where);
  free(job->free_surface_where);
  free(job->kernel_where);
  free(job->dts_where);
  free(job->height_where);
  free(job->threads_where);
  free(job->output_dir_where);
  free(job->shots);
  free(job->output_dir);
  free(job);
}

/* ---------------------------------------------------------------- finalize */

/* The overrides recorded at the end of job->text ("# --set k=v" lines), in order. */
static int recorded_overrides(const char *text, const char **ov, int max) {
  const char *p = text + strlen(text);
  int n = 0;
  while (p > text && n < max) {
    const char *end = p;
    if (end > text && end[-1] == '\n') end--;
    const char *start = end;
    while (start > text && start[-1] != '\n') start--;
    if ((size_t)(end - start) < strlen(SET_PREFIX) || strncmp(start, SET_PREFIX, strlen(SET_PREFIX))) break;
    ov[n++] = start + strlen(SET_PREFIX);
    p = start;
  }
  for (int i = 0; i < n / 2; i++) {
    const char *t = ov[i];
    ov[i] = ov[n - 1 - i];
    ov[n - 1 - i] = t;
  }
  return n;
}

/* An error found in finalize, located by re-reading job->text: key (and, when elem_value >= 0, its
 * element with that value) → "job.cfg:7: time.dt: ...". Falls back to "job.cfg: time.dt: ...". */
static tw_status fin_error(const tw_job *job, tw_error *err, tw_status code, const char *key, long elem_value,
                           const char *what, const char *got, const char *allowed) {
  const char *name = job->path ? job->path : "job";
  char loc[512], path[256];
  snprintf(loc, sizeof loc, "%s", name);
  snprintf(path, sizeof path, "%s", key);
  if (job->text) {
    enum { MAXOV = 64 };
    const char *ovp[MAXOV];
    char *ov[MAXOV] = {0};
    int n = recorded_overrides(job->text, ovp, MAXOV), k = 0;
    for (; k < n; k++) {
      size_t l = strcspn(ovp[k], "\n");
      if (!(ov[k] = malloc(l + 1))) break;
      memcpy(ov[k], ovp[k], l);
      ov[k][l] = '\0';
    }
    config_t cfg;
    config_init(&cfg);
    tw_error scratch;
    ctx c = {name, &scratch};
    if (k == n && build_config(&c, job->text, (const char *const *)ov, n, &cfg) == TW_OK) {
      const config_setting_t *s = config_lookup(&cfg, key);
      for (int i = 0; s && elem_value >= 0 && i < config_setting_length(s); i++)
        if (config_setting_get_int64(config_setting_get_elem(s, (unsigned)i)) == elem_value) {
          s = config_setting_get_elem(s, (unsigned)i);
          break;
        }
      if (s) where(&c, s, loc, sizeof loc), path_of(s, path, sizeof path);
    }
    config_destroy(&cfg);
    for (int i = 0; i < k; i++) free(ov[i]);
  }
  return tw_error_set(err, code, "%s: %s: %s: got %s; %s", loc, path, what, got, allowed);
}

static tw_status fin_dt(tw_job *job, double vmax, tw_error *err) {
  double lim = tw_stable_dt(job->order, job->d, vmax);
  if (!job->dt_given) {
    job->dt = job->dt_margin * lim;
    return TW_OK;
  }
  double cr = tw_courant(job->order, job->d, vmax, job->dt);
  if (cr <= 1.0 + 1e-12) return TW_OK;
  char got[64], allowed[768], d[3][64], l[64], v[64];
  fmt_double(got, sizeof got, job->dt);
  for (int a = 0; a < 3; a++) fmt_double(d[a], sizeof d[a], job->d[a]);
  fmt_double(l, sizeof l, lim);
  fmt_double(v, sizeof v, vmax);
  snprintf(allowed, sizeof allowed, "the stability limit for order %d, d = [%s, %s, %s] m and vmax = %s m/s is %s s "
           "(dt / stable limit = %.4g > 1); use a smaller time.dt or omit it", job->order, d[0], d[1], d[2], v, l, cr);
  return fin_error(job, err, TW_EUNSTABLE, "time.dt", -1, "time step above the stability limit", got, allowed);
}

static tw_status fin_snapshots(tw_job *job, tw_error *err) {
  char got[64], allowed[160];
  if (job->snap_every > 0) {
    long n = job->steps / job->snap_every;
    if (n > MAX_SNAPS) {
      snprintf(got, sizeof got, "%ld", job->snap_every);
      snprintf(allowed, sizeof allowed, "allowed at most %ld snapshots (this run would take %ld)", MAX_SNAPS, n);
      return fin_error(job, err, TW_ECONFIG, "snapshots.every", -1, "too many snapshots", got, allowed);
    }
    long *s = n ? malloc((size_t)n * sizeof *s) : NULL;
    if (n && !s) return tw_error_set(err, TW_ENOMEM, "%s: out of memory", job->path ? job->path : "job");
    for (long i = 0; i < n; i++) s[i] = (i + 1) * job->snap_every;
    free(job->snap_steps);
    job->snap_steps = s;
    job->nsnap = (int)n;
    return TW_OK;
  }
  sort_unique(job->snap_steps, &job->nsnap);
  for (int i = 0; i < job->nsnap; i++)
    if (job->snap_steps[i] < 1 || job->snap_steps[i] > job->steps) {
      snprintf(got, sizeof got, "%ld", job->snap_steps[i]);
      snprintf(allowed, sizeof allowed, "allowed 1..%ld (the run's number of steps)", job->steps);
      return fin_error(job, err, TW_ECONFIG, "snapshots.steps", job->snap_steps[i],
                       "snapshot step beyond the last time step", got, allowed);
    }
  return TW_OK;
}

tw_status tw_job_finalize(tw_job *job, double vmin, double vmax, tw_error *err) {
  if (!job) return tw_error_set(err, TW_EINVAL, "tw_job_finalize: null job");
  if (!(vmin > 0) || !(vmax >= vmin) || !isfinite(vmax))
    return tw_error_set(err, TW_EINVAL, "%s: model velocity range [%g, %g] m/s: expected 0 < vmin <= vmax, finite",
                        job->path ? job->path : "job", vmin, vmax);
  if (tw_fd_coefficients(job->order, (double[9]){0}) == 0)
    return tw_error_set(err, TW_EINVAL, "%s: scheme.order %d: expected an even order 2..16",
                        job->path ? job->path : "job", job->order);
  TRY(fin_dt(job, vmax, err));
  if (job->duration > 0) {
    double steps = ceil(job->duration / job->dt - 1e-9);
    if (steps > (double)MAX_STEPS) {
      char got[64], allowed[160];
      fmt_double(got, sizeof got, job->duration);
      snprintf(allowed, sizeof allowed, "allowed at most %ld steps (duration / dt = %.6g)", MAX_STEPS, steps);
      return fin_error(job, err, TW_ECONFIG, "time.duration", -1, "too many time steps", got, allowed);
    }
    job->steps = steps < 1 ? 1 : (long)steps;
  }
  TRY(fin_snapshots(job, err));
  if (job->output_segy) { /* SEG-Y's limits, known once dt and steps are: before the run, not after it */
    char what[512], got[64], allowed[768];
    tw_status st = tw_segy_check_job(job, what, sizeof what, got, sizeof got, allowed, sizeof allowed);
    if (st) return fin_error(job, err, st, "output.segy", -1, what, got, allowed);
  }
  if (err) tw_error_clear(err);
  return TW_OK;
}

/* ---------------------------------------------------------------- stability, dispersion */

static double lambda_sum(int order, const double d[3]) {
  double s = 0.0;
  for (int a = 0; a < 3; a++) s += 1.0 / (d[a] * d[a]);
  return tw_fd_lambda(order) * s;
}

double tw_stable_dt(int order, const double d[3], double vmax) {
  double s = lambda_sum(order, d);
  if (!(s > 0) || !(vmax > 0)) return 0.0;
  return 2.0 / (vmax * sqrt(s));
}

double tw_courant(int order, const double d[3], double vmax, double dt) {
  return 0.5 * vmax * dt * sqrt(lambda_sum(order, d));
}

double tw_points_per_wavelength(const tw_job *job, double vmin) {
  double f = 0.0, dmax = 0.0;
  for (int i = 0; i < job->nsources; i++)
    if (job->sources[i].wavelet.type == TW_WAVELET_RICKER && job->sources[i].wavelet.frequency > f)
      f = job->sources[i].wavelet.frequency;
  for (int a = 0; a < 3; a++)
    if (job->d[a] > dmax) dmax = job->d[a];
  if (f <= 0 || dmax <= 0) return INFINITY;
  return vmin / (2.5 * f * dmax);
}

double tw_ppw_warn_threshold(int order) {
  if (order <= 2) return 10.0;
  if (order <= 4) return 6.0;
  if (order <= 6) return 5.0;
  return 4.0;
}
