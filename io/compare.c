/* compare.c — comparing two result files (`torrewave compare`, accuracy tests).
 *
 * Order of work: check that the files describe the same discretization (grid, dt, sample dt),
 * pair receivers by coordinates, pair snapshots by step, then one statistic per dataset: the
 * traces of all paired receivers as one dataset, and each common snapshot. The relative L2 is
 * symmetric, ||A − B|| / max(||A||, ||B||), so that the verdict does not depend on argument
 * order and stays finite when one side is all zeros. Sums are in double. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "io_internal.h"
#include "tw_io.h"

#define DEFAULT_RTOL 1e-5
#define DEFAULT_COORD_TOL 1e-6
#define REL_EPS 1e-9 /* relative tolerance for equal d, dt, sample dt (they are stored as doubles) */

/* ---------------------------------------------------------------- reasons for a mismatch */

typedef struct {
  char s[TW_ERROR_MSG];
  size_t len;
  int count;
} reasons;

static void reason(reasons *r, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
static void reason(reasons *r, const char *fmt, ...) {
  if (r->len + 8 >= sizeof r->s) return;
  if (r->count++) r->len += (size_t)snprintf(r->s + r->len, sizeof r->s - r->len, "; ");
  va_list ap;
  va_start(ap, fmt);
  int k = vsnprintf(r->s + r->len, sizeof r->s - r->len, fmt, ap);
  va_end(ap);
  if (k > 0) r->len += (size_t)k;
  if (r->len >= sizeof r->s) r->len = sizeof r->s - 1;
}

static int close_rel(double x, double y) { return fabs(x - y) <= REL_EPS * fmax(fabs(x), fabs(y)); }

static double min_d(const tw_result *r) { return fmin(r->d[0], fmin(r->d[1], r->d[2])); }

/* Grid and time step: everything that makes two discretizations the same. */
static void check_grid(const tw_result *a, const tw_result *b, reasons *why) {
  if (memcmp(a->n, b->n, sizeof a->n))
    reason(why, "grid n differs: A [%d, %d, %d], B [%d, %d, %d]", a->n[0], a->n[1], a->n[2], b->n[0], b->n[1],
           b->n[2]);
  if (!close_rel(a->d[0], b->d[0]) || !close_rel(a->d[1], b->d[1]) || !close_rel(a->d[2], b->d[2]))
    reason(why, "grid d differs: A [%.10g, %.10g, %.10g] m, B [%.10g, %.10g, %.10g] m", a->d[0], a->d[1], a->d[2],
           b->d[0], b->d[1], b->d[2]);
  const double otol = DEFAULT_COORD_TOL * fmin(min_d(a), min_d(b));
  for (int x = 0; x < 3; x++)
    if (fabs(a->origin[x] - b->origin[x]) > otol) {
      reason(why, "grid origin differs: A [%.10g, %.10g, %.10g] m, B [%.10g, %.10g, %.10g] m", a->origin[0],
             a->origin[1], a->origin[2], b->origin[0], b->origin[1], b->origin[2]);
      break;
    }
  if (!close_rel(a->dt, b->dt)) reason(why, "dt differs: A %.9g s, B %.9g s", a->dt, b->dt);
}

/* ---------------------------------------------------------------- pairing receivers */

/* Receivers of B binned on a grid of cell h = 2·tol: a partner within tol of a point lies in
 * the point's bin or a neighbouring one, so each query is 27 binary searches, whatever the
 * layout (a line along y at one x would make a sort on x alone quadratic). */
typedef struct {
  long long key[3];
  long idx;
} binned;

static int cmp_binned(const void *pa, const void *pb) {
  const binned *a = pa, *b = pb;
  for (int x = 0; x < 3; x++)
    if (a->key[x] != b->key[x]) return a->key[x] < b->key[x] ? -1 : 1;
  return a->idx < b->idx ? -1 : a->idx > b->idx;
}

static int cmp_key(const long long k[3], const binned *e) {
  for (int x = 0; x < 3; x++)
    if (k[x] != e->key[x]) return k[x] < e->key[x] ? -1 : 1;
  return 0;
}

/* First entry whose key is >= k. */
static long lower_bound(const binned *v, long n, const long long k[3]) {
  long lo = 0, hi = n;
  while (lo < hi) {
    long mid = lo + (hi - lo) / 2;
    if (cmp_key(k, &v[mid]) > 0)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

static int within(const double *p, const double *q, double tol) {
  return fabs(p[0] - q[0]) <= tol && fabs(p[1] - q[1]) <= tol && fabs(p[2] - q[2]) <= tol;
}

/* The unused receiver of B within tol of p with the lowest index, or −1. Lowest index keeps
 * duplicates (two receivers at one place) paired in file order. */
static long find_partner(const binned *v, long n, const double *brec, const char *used, const double *p, double h,
                         double tol) {
  long best = -1;
  long long c[3];
  for (int x = 0; x < 3; x++) c[x] = (long long)floor(p[x] / h);
  for (int dx = -1; dx <= 1; dx++)
    for (int dy = -1; dy <= 1; dy++)
      for (int dz = -1; dz <= 1; dz++) {
        const long long k[3] = {c[0] + dx, c[1] + dy, c[2] + dz};
        for (long e = lower_bound(v, n, k); e < n && cmp_key(k, &v[e]) == 0; e++) {
          const long j = v[e].idx;
          if (!used[j] && (best < 0 || j < best) && within(p, brec + 3 * j, tol)) best = j;
        }
      }
  return best;
}

static tw_status pair_receivers(const tw_result *a, const tw_result *b, double tol, tw_compare_report *rep,
                                tw_error *err) {
  const long na = a->nrec, nb = b->nrec;
  const double h = 2.0 * tol;
  binned *v = malloc((size_t)(nb ? nb : 1) * sizeof *v);
  char *used = calloc((size_t)(nb ? nb : 1), 1);
  rep->pair_a = malloc((size_t)(na ? na : 1) * sizeof(long));
  rep->pair_b = malloc((size_t)(na ? na : 1) * sizeof(long));
  rep->unmatched_a = malloc((size_t)(na ? na : 1) * sizeof(long));
  rep->unmatched_b = malloc((size_t)(nb ? nb : 1) * sizeof(long));
  tw_status st = TW_OK;
  if (!v || !used || !rep->pair_a || !rep->pair_b || !rep->unmatched_a || !rep->unmatched_b) {
    st = tw_error_set(err, TW_ENOMEM, "compare: out of memory pairing %ld and %ld receivers", na, nb);
  } else {
    for (long j = 0; j < nb; j++) {
      for (int x = 0; x < 3; x++) v[j].key[x] = (long long)floor(b->rec[3 * j + x] / h);
      v[j].idx = j;
    }
    qsort(v, (size_t)nb, sizeof *v, cmp_binned);
    for (long i = 0; i < na; i++) {
      const long j = find_partner(v, nb, b->rec, used, a->rec + 3 * i, h, tol);
      if (j < 0) {
        rep->unmatched_a[rep->nunmatched_a++] = i;
        continue;
      }
      used[j] = 1;
      rep->pair_a[rep->npairs] = i;
      rep->pair_b[rep->npairs++] = j;
    }
    for (long j = 0; j < nb; j++)
      if (!used[j]) rep->unmatched_b[rep->nunmatched_b++] = j;
  }
  free(v);
  free(used);
  return st;
}

/* ---------------------------------------------------------------- statistics */

/* Running sums of one dataset. */
typedef struct {
  double saa, sbb, sdd, max_abs, peak;
  long argmax, count, ndiff; /* argmax: index of max |A − B| in the caller's numbering */
} sums;

/* The sums are taken in a fixed partition, so that the norms are the same bits run to run and for
 * any number of threads: a block of SUM_BLOCK values is summed in one chain, the blocks of a span of
 * SUM_SPAN values are added in index order, and the spans in index order (sums_add); only whole
 * spans are shared among threads. Also more accurate than the one chain of half a billion sums it
 * replaced (0.96 s for a 0.5 G-cell snapshot here; now 0.53 s on two threads). The maximum, its place, the peak and the
 * count of differing values are exact in any order; they come out as the one chain had them: the
 * first index of the largest |A − B|, or of the first NaN. (Interleaved chains within a block, for
 * the compiler to vectorize, ran slower here: the compiler kept them scalar, in memory.) */
enum { SUM_BLOCK = 4096, SUM_SPAN = 256 * SUM_BLOCK };
static long span_len(long n, long i) { return n - i * SUM_SPAN < SUM_SPAN ? n - i * SUM_SPAN : SUM_SPAN; }

/* One block (n <= SUM_BLOCK) into o, argmax numbered from the block's start (−1: no value differs).
 * Equal infinities are no difference, and stay out of the norms too: inf − inf is NaN (a file with
 * an infinity compared with itself said "VALUES DIFFER" with no value differing), and an infinite
 * norm would make every relative L2 0, hiding the differences elsewhere. */
static void block_sums(sums *o, const float *a, const float *b, long n) {
  double saa = 0, sbb = 0, sdd = 0, max_abs = 0, peak = 0;
  long argmax = -1, ndiff = 0;
  for (long k = 0; k < n; k++) {
    const double x = a[k], y = b[k];
    const int same_inf = x == y && isinf(x);
    const double d = same_inf ? 0.0 : x - y, ad = fabs(d);
    if (!same_inf) saa += x * x, sbb += y * y;
    sdd += d * d;
    if (ad > max_abs || (isnan(ad) && !isnan(max_abs))) max_abs = ad, argmax = k;
    if (fabs(x) > peak) peak = fabs(x);
    if (fabs(y) > peak) peak = fabs(y);
    ndiff += !(x == y);
  }
  *o = (sums){saa, sbb, sdd, max_abs, peak, argmax, n, ndiff};
}

/* Add o (whose argmax counts from offset) into s; the maximum as the serial scan would keep it: a
 * later one only when larger, a NaN over a number, never a later NaN. */
static void sums_merge(sums *s, const sums *o, long offset) {
  s->saa += o->saa, s->sbb += o->sbb, s->sdd += o->sdd;
  if (o->max_abs > s->max_abs || (isnan(o->max_abs) && !isnan(s->max_abs)))
    s->max_abs = o->max_abs, s->argmax = offset + o->argmax;
  if (o->peak > s->peak) s->peak = o->peak;
  s->count += o->count;
  s->ndiff += o->ndiff;
}

/* One span (n <= SUM_SPAN) into a zeroed s, argmax numbered from the span's start: its blocks in
 * index order. */
static void span_sums(sums *s, const float *a, const float *b, long n) {
  s->argmax = -1;
  for (long k0 = 0; k0 < n; k0 += SUM_BLOCK) {
    sums o;
    block_sums(&o, a + k0, b + k0, n - k0 < SUM_BLOCK ? n - k0 : SUM_BLOCK);
    sums_merge(s, &o, k0);
  }
}

/* n values into s (argmax numbered from base): the spans summed by the threads as they come, each
 * into its own part, and the parts added in index order. */
static void sums_add(sums *s, const float *a, const float *b, long n, long base) {
  const long nspan = (n + SUM_SPAN - 1) / SUM_SPAN;
  sums *part = nspan > 1 ? calloc((size_t)nspan, sizeof *part) : NULL;
  if (part) {
#pragma omp parallel for schedule(dynamic)
    for (long i = 0; i < nspan; i++) span_sums(&part[i], a + i * SUM_SPAN, b + i * SUM_SPAN, span_len(n, i));
  }
  for (long i = 0; i < nspan; i++) { /* one span, or no memory for the parts: the same spans in turn */
    sums one = {0};
    if (!part) span_sums(&one, a + i * SUM_SPAN, b + i * SUM_SPAN, span_len(n, i));
    sums_merge(s, part ? &part[i] : &one, base + i * SUM_SPAN);
  }
  free(part);
}

static double rel_of(double saa, double sbb, double sdd) {
  const double den = sqrt(fmax(saa, sbb));
  if (den > 0) return sqrt(sdd) / den;
  return sdd > 0 || isnan(sdd) ? (isnan(sdd) ? NAN : INFINITY) : 0.0;
}

static void stat_from_sums(tw_compare_stat *t, const sums *s, double rtol) {
  t->count = s->count;
  t->norm_a = sqrt(s->saa);
  t->norm_b = sqrt(s->sbb);
  t->rel_l2 = rel_of(s->saa, s->sbb, s->sdd);
  t->max_abs = s->max_abs;
  t->peak = s->peak;
  t->ndiff = s->ndiff;
  t->pass = t->rel_l2 <= rtol && (rtol > TW_COMPARE_EXACT_RTOL || s->ndiff == 0); /* a NaN fails */
}

/* The receiver whose traces differ most (largest sum of squared differences; the first of equals, a
 * NaN over any number): pair p, its sum and relative L2. p = −1: none yet. */
typedef struct {
  double sdd, rel;
  long p;
} worst_rec;

static void worst_take(worst_rec *w, const worst_rec *o) {
  if (o->p >= 0 && (w->p < 0 || o->sdd > w->sdd || (isnan(o->sdd) && !isnan(w->sdd)))) *w = *o;
}

/* Pairs [p0, p1) of the traces: their sums (argmax numbered pair by pair from pair 0) and the worst. */
typedef struct {
  sums s;
  worst_rec w;
} trace_group;

static void group_sums(const tw_result *a, const tw_result *b, const tw_compare_report *rep, long p0, long p1,
                       trace_group *g) {
  const long ns = rep->nsamples;
  g->s = (sums){0};
  g->s.argmax = -1;
  g->w = (worst_rec){0, 0, -1};
  for (long p = p0; p < p1; p++) {
    sums one = {0};
    one.argmax = -1;
    sums_add(&one, a->traces + (size_t)rep->pair_a[p] * (size_t)a->nsamples,
             b->traces + (size_t)rep->pair_b[p] * (size_t)b->nsamples, ns, 0);
    const worst_rec w = {one.sdd, rel_of(one.saa, one.sbb, one.sdd), p};
    worst_take(&g->w, &w);
    sums_merge(&g->s, &one, p * ns);
  }
}

/* All paired traces as one dataset. The pairs go in groups of about a span's samples (fixed by the
 * trace length, not by the threads), each summed by one thread into its part, and the parts added
 * in order: the same bits for any number of threads. */
static void trace_stat(const tw_result *a, const tw_result *b, tw_compare_report *rep, tw_compare_stat *t) {
  const long ns = rep->nsamples, np = rep->npairs;
  const long per = ns >= SUM_SPAN ? 1 : SUM_SPAN / (ns > 0 ? ns : 1), ngroup = (np + per - 1) / per;
  trace_group *part = ngroup > 1 ? malloc((size_t)ngroup * sizeof *part) : NULL;
  if (part) {
#pragma omp parallel for schedule(dynamic)
    for (long g = 0; g < ngroup; g++) group_sums(a, b, rep, g * per, g * per + per < np ? g * per + per : np, &part[g]);
  }
  sums all = {0};
  all.argmax = -1;
  worst_rec worst = {0, 0, -1};
  for (long g = 0; g < ngroup; g++) { /* one group, or no memory for the parts: the same groups in turn */
    trace_group one;
    if (!part) group_sums(a, b, rep, g * per, g * per + per < np ? g * per + per : np, &one);
    const trace_group *q = part ? &part[g] : &one;
    sums_merge(&all, &q->s, 0);
    worst_take(&worst, &q->w);
  }
  free(part);
  t->kind = TW_COMPARE_TRACES;
  t->step = -1;
  t->worst_rec_a = rep->pair_a[worst.p];
  t->worst_rec_b = rep->pair_b[worst.p];
  t->worst_rec_rel_l2 = worst.rel;
  stat_from_sums(t, &all, rep->rtol);
  const long p = all.argmax >= 0 && ns > 0 ? all.argmax / ns : 0;
  t->rec_a = rep->pair_a[p];
  t->rec_b = rep->pair_b[p];
  t->sample = all.argmax >= 0 && ns > 0 ? all.argmax % ns : 0;
  t->at_time = (double)t->sample * rep->sample_dt;
  memcpy(t->pos, a->rec + 3 * t->rec_a, sizeof t->pos);
}

/* Where a result's snapshot region lies: the /snapshots attributes origin and spacing (model
 * coordinates of the stored cell [0][0][0] and the step between stored cells), first_cell and
 * decimate (the model cell that stored cell is, and the model cells between stored ones: a stored
 * cell's index is not the model cell's once a region or a decimation applies). 0 when any is absent. */
typedef struct {
  double origin[3], spacing[3];
  int first[3], dec;
} snap_geo;

static int snapshot_geometry(const tw_result *r, snap_geo *geo) {
  tw_h5_quiet();
  hid_t f = H5Fopen(r->path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0) return 0;
  int ok = 0;
  hid_t g = tw_h5_path_exists(f, "/snapshots") > 0 ? H5Gopen2(f, "/snapshots", H5P_DEFAULT) : H5I_INVALID_HID;
  static const char *const names[4] = {"origin", "spacing", "first_cell", "decimate"};
  void *const dst[4] = {geo->origin, geo->spacing, geo->first, &geo->dec};
  for (int k = 0; g >= 0 && k < 4; k++) {
    hid_t at = H5Aexists(g, names[k]) > 0 ? H5Aopen(g, names[k], H5P_DEFAULT) : H5I_INVALID_HID;
    ok = at >= 0 && H5Aread(at, k < 2 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_INT, dst[k]) >= 0;
    if (at >= 0) H5Aclose(at);
    if (!ok) break;
  }
  if (g >= 0) H5Gclose(g);
  H5Fclose(f);
  return ok && geo->dec > 0;
}

typedef struct {
  int ia, ib; /* snapshot index in A and B */
} snap_pair;

/* Snapshots present in both files, by step, in A's order. */
static int pair_snapshots(const tw_result *a, const tw_result *b, snap_pair *out) {
  int n = 0;
  for (int i = 0; i < a->nsnap; i++)
    for (int j = 0; j < b->nsnap; j++)
      if (a->snap_steps[i] == b->snap_steps[j]) {
        out[n].ia = i, out[n].ib = j, n++;
        break;
      }
  return n;
}

static tw_status snapshot_stat(const tw_result *a, const tw_result *b, snap_pair sp, const snap_geo *geo, int geo_ok,
                               float *bufa, float *bufb, double rtol, tw_compare_stat *t, tw_error *err) {
  const int *sh = a->snap_shape;
  const long n = (long)sh[0] * sh[1] * sh[2];
  tw_status st = tw_result_read_snapshot(a, sp.ia, bufa, err);
  if (!st) st = tw_result_read_snapshot(b, sp.ib, bufb, err);
  if (st) return st;
  sums s = {0};
  s.argmax = 0;
  sums_add(&s, bufa, bufb, n, 0);
  t->kind = TW_COMPARE_SNAPSHOT;
  t->step = a->snap_steps[sp.ia];
  t->time = t->at_time = a->snap_times[sp.ia];
  t->rec_a = t->rec_b = t->worst_rec_a = t->worst_rec_b = -1;
  stat_from_sums(t, &s, rtol);
  const long c = s.argmax;
  t->snap_cell[2] = (int)(c % sh[2]);
  t->snap_cell[1] = (int)((c / sh[2]) % sh[1]);
  t->snap_cell[0] = (int)(c / ((long)sh[2] * sh[1]));
  t->pos_known = geo_ok;
  for (int x = 0; geo_ok && x < 3; x++) {
    t->model_cell[x] = geo->first[x] + t->snap_cell[x] * geo->dec;
    t->pos[x] = geo->origin[x] + t->snap_cell[x] * geo->spacing[x];
  }
  return TW_OK;
}

/* ---------------------------------------------------------------- the comparison */

/* Receivers: sample dt, pairing, common sample range. Adds reasons for a mismatch. */
static tw_status compare_receivers(const tw_result *a, const tw_result *b, tw_compare_report *rep, reasons *why,
                                   tw_error *err) {
  rep->nrec_a = a->nrec, rep->nrec_b = b->nrec;
  rep->nsamples_a = a->nsamples, rep->nsamples_b = b->nsamples;
  tw_status st = pair_receivers(a, b, rep->coord_tol_m, rep, err);
  if (st || a->nrec == 0 || b->nrec == 0) return st;
  if (!close_rel(a->sample_dt, b->sample_dt))
    reason(why, "sample dt differs: A %.9g s, B %.9g s", a->sample_dt, b->sample_dt);
  if (rep->npairs == 0)
    reason(why, "no common receivers: A has %ld, B %ld, none at the same coordinates (within %g m)", a->nrec,
           b->nrec, rep->coord_tol_m);
  rep->sample_dt = a->sample_dt;
  rep->nsamples = a->nsamples < b->nsamples ? a->nsamples : b->nsamples;
  if (rep->npairs > 0 && rep->nsamples == 0) /* nothing compared is no pass */
    reason(why, "no trace samples to compare: A has %ld samples per trace, B %ld", a->nsamples, b->nsamples);
  return TW_OK;
}

/* Snapshots: the common steps must have the same shape and region. */
static void check_snapshots(const tw_result *a, const tw_result *b, int ncommon, const snap_geo *ga, const snap_geo *gb,
                            int geo_ok, reasons *why) {
  if (ncommon == 0) return;
  if (memcmp(a->snap_shape, b->snap_shape, sizeof a->snap_shape))
    reason(why, "snapshot shape differs: A [%d, %d, %d], B [%d, %d, %d]", a->snap_shape[0], a->snap_shape[1],
           a->snap_shape[2], b->snap_shape[0], b->snap_shape[1], b->snap_shape[2]);
  const double tol = DEFAULT_COORD_TOL * min_d(a);
  for (int x = 0; geo_ok && x < 3; x++)
    if (fabs(ga->origin[x] - gb->origin[x]) > tol || fabs(ga->spacing[x] - gb->spacing[x]) > tol) {
      reason(why,
             "snapshot region differs: A origin [%g, %g, %g] spacing [%g, %g, %g], B origin [%g, %g, %g] "
             "spacing [%g, %g, %g]",
             ga->origin[0], ga->origin[1], ga->origin[2], ga->spacing[0], ga->spacing[1], ga->spacing[2], gb->origin[0],
             gb->origin[1], gb->origin[2], gb->spacing[0], gb->spacing[1], gb->spacing[2]);
      break;
    }
}

static tw_status compare_snapshots(const tw_result *a, const tw_result *b, const snap_pair *sp, int n,
                                   const snap_geo *geo, int geo_ok, tw_compare_report *rep, tw_error *err) {
  const size_t cells = (size_t)a->snap_shape[0] * (size_t)a->snap_shape[1] * (size_t)a->snap_shape[2];
  float *fa = malloc((cells ? cells : 1) * sizeof(float)), *fb = malloc((cells ? cells : 1) * sizeof(float));
  tw_status st = TW_OK;
  if (!fa || !fb) st = tw_error_set(err, TW_ENOMEM, "compare: out of memory for two snapshots of %zu cells", cells);
  for (int k = 0; k < n && !st; k++)
    st = snapshot_stat(a, b, sp[k], geo, geo_ok, fa, fb, rep->rtol, &rep->stat[rep->nstat++], err);
  free(fa);
  free(fb);
  return st;
}

tw_status tw_compare(const tw_result *a, const tw_result *b, const tw_compare_opts *opts, tw_compare_report *rep,
                     tw_error *err) {
  memset(rep, 0, sizeof *rep);
  if (!a || !b) return tw_error_set(err, TW_EINVAL, "tw_compare: NULL result");
  rep->rtol = opts && opts->rtol > 0 ? opts->rtol : DEFAULT_RTOL;
  rep->coord_tol_m = (opts && opts->coord_tol > 0 ? opts->coord_tol : DEFAULT_COORD_TOL) * fmin(min_d(a), min_d(b));
  rep->nsnap_a = a->nsnap, rep->nsnap_b = b->nsnap;
  reasons why = {{0}, 0, 0};
  check_grid(a, b, &why);
  tw_status st = compare_receivers(a, b, rep, &why, err);
  if (st) return st;

  const int skip = opts && opts->skip_snapshots;
  snap_pair *sp = malloc((size_t)(a->nsnap ? a->nsnap : 1) * sizeof *sp);
  if (!sp) return tw_error_set(err, TW_ENOMEM, "compare: out of memory");
  const int nsp = skip ? 0 : pair_snapshots(a, b, sp);
  snap_geo ga = {{0}, {0}, {0}, 0}, gb = ga;
  const int geo_ok = nsp > 0 && snapshot_geometry(a, &ga) && snapshot_geometry(b, &gb);
  check_snapshots(a, b, nsp, &ga, &gb, geo_ok, &why);
  rep->nsnap_common = nsp;
  rep->snap_geo_known = geo_ok;
  memcpy(rep->snap_first_cell, ga.first, sizeof ga.first);
  rep->snap_decimate = ga.dec;
  rep->snapshots_skipped = skip;
  if (!skip && nsp == 0 && a->nsnap > 0 && b->nsnap > 0) /* both have snapshots: none compared is no pass */
    reason(&why, "no snapshot step is in both (A has %d snapshots from step %ld, B %d from step %ld); compare the "
                 "traces alone with --traces-only", a->nsnap, a->snap_steps[0], b->nsnap, b->snap_steps[0]);
  if (opts && opts->strict) { /* equal files: nothing of either left out */
    if (rep->nunmatched_a || rep->nunmatched_b)
      reason(&why, "--strict: receivers without a partner: %ld in A, %ld in B", rep->nunmatched_a,
             rep->nunmatched_b);
    if (a->nrec && b->nrec && a->nsamples != b->nsamples)
      reason(&why, "--strict: A has %ld samples per trace, B %ld", a->nsamples, b->nsamples);
    if (!skip && (nsp != a->nsnap || nsp != b->nsnap))
      reason(&why, "--strict: snapshots: %d common steps, A has %d, B %d", nsp, a->nsnap, b->nsnap);
  }
  if (rep->npairs == 0 && nsp == 0 && why.count == 0)
    reason(&why, "nothing to compare: %s", a->nrec || b->nrec ? "one file has no receivers and no snapshot step is "
                                                               "in both"
                                                             : "no receivers, and no snapshot step is in both");
  if (why.count) {
    free(sp);
    return tw_error_set(err, TW_EMISMATCH, "cannot compare '%s' (A) and '%s' (B): %s", a->path, b->path, why.s);
  }

  rep->stat = calloc((size_t)nsp + 1, sizeof *rep->stat);
  if (!rep->stat) st = tw_error_set(err, TW_ENOMEM, "compare: out of memory");
  if (!st && rep->npairs > 0) trace_stat(a, b, rep, &rep->stat[rep->nstat++]);
  if (!st) st = compare_snapshots(a, b, sp, nsp, &ga, geo_ok, rep, err);
  free(sp);
  for (int k = 0; k < rep->nstat; k++) rep->nfail += !rep->stat[k].pass;
  rep->pass = !st && rep->nfail == 0;
  return st;
}

void tw_compare_report_free(tw_compare_report *rep) {
  if (!rep) return;
  free(rep->pair_a);
  free(rep->pair_b);
  free(rep->unmatched_a);
  free(rep->unmatched_b);
  free(rep->stat);
  memset(rep, 0, sizeof *rep);
}
