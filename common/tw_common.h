/* tw_common.h — what every torrewave module shares: the error table, the padded grid, small
 * utilities (memory sizes, clocks). No module below app/ prints or exits; each returns a
 * tw_status and fills a tw_error whose message says what was wrong and where. */
#ifndef TW_COMMON_H
#define TW_COMMON_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define TW_VERSION "0.1.0"

/* Limits that catch nonsense DiamondTorre parameters (not hardware limits): the tile R = r·dts ≤
 * TW_TILE_MAX cells, the tower height ≤ TW_TOWER_HEIGHT_MAX steps. tw_schedule_params refuses beyond
 * them; the job's parse names the same ranges for a value below 1 (it gave 1..1048576 for a height
 * of 0, where 100000 is refused). */
#define TW_TILE_MAX 256
#define TW_TOWER_HEIGHT_MAX 65536

/* Error table (libuv style): code, short name, meaning. TW_OK is 0; every error is > 0. */
#define TW_STATUS_MAP(X)                                                         \
  X(TW_OK, "ok", "success")                                                      \
  X(TW_EINVAL, "EINVAL", "invalid argument")                                     \
  X(TW_ECONFIG, "ECONFIG", "invalid job file")                                   \
  X(TW_ERANGE, "ERANGE", "value out of range")                                   \
  X(TW_ENOMEM, "ENOMEM", "out of memory")                                        \
  X(TW_EIO, "EIO", "input/output error")                                         \
  X(TW_EFORMAT, "EFORMAT", "malformed input file")                               \
  X(TW_EUNSTABLE, "EUNSTABLE", "time step above the stability limit")           \
  X(TW_EUNSUPPORTED, "EUNSUPPORTED", "not supported by this build or kernel")    \
  X(TW_ENODEV, "ENODEV", "no GPU available")                                     \
  X(TW_ECUDA, "ECUDA", "CUDA error")                                             \
  X(TW_EMISMATCH, "EMISMATCH", "incompatible inputs")                            \
  X(TW_EINTR, "EINTR", "interrupted")                                            \
  X(TW_ESUSPEND, "ESUSPEND", "stopped after a checkpoint: resumable")            \
  X(TW_EMPI, "EMPI", "MPI error")                                                \
  X(TW_EINTERNAL, "EINTERNAL", "internal error")                                \
  X(TW_EBUSY, "EBUSY", "in use by another process")

typedef enum {
#define TW_X(code, name, text) code,
  TW_STATUS_MAP(TW_X)
#undef TW_X
  TW_STATUS_COUNT
} tw_status;

/* A message's bytes: room for two or three full paths of a cluster's file systems beside the
 * reason (a refused publish names the output, where its result is kept and its checkpoint). */
#define TW_ERROR_MSG 2048
typedef struct tw_error {
  tw_status code;
  char msg[TW_ERROR_MSG];
} tw_error;

const char *tw_status_name(tw_status s);   /* "ECONFIG" */
const char *tw_status_text(tw_status s);   /* "invalid job file" */
/* Fill err (may be NULL) with code and a printf-style message; returns code. */
tw_status tw_error_set(tw_error *err, tw_status code, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
/* Prefix an existing message: "context: old message". Returns err->code. */
tw_status tw_error_prefix(tw_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;
void tw_error_clear(tw_error *err);

/* The padded grid (docs/design.md §1): the model's n cells per axis plus absorbing cells before (lo) and
 * after (hi). Axis 0 = x (slowest), 1 = y, 2 = z (fastest, depth). Padded index P = model
 * index + lo. Invariant: N[a] = lo[a] + n[a] + hi[a]; with a free surface lo[2] == 0. */
typedef struct tw_grid {
  int n[3];
  int lo[3], hi[3];
  int N[3];
  double d[3];
  double origin[3];
} tw_grid;

static inline size_t tw_grid_cells(const tw_grid *g) {
  return (size_t)g->N[0] * (size_t)g->N[1] * (size_t)g->N[2];
}
/* Linear index of padded cell (i, j, k), z fastest, no z padding. */
static inline size_t tw_grid_index(const tw_grid *g, int i, int j, int k) {
  return ((size_t)i * (size_t)g->N[1] + (size_t)j) * (size_t)g->N[2] + (size_t)k;
}

/* A coordinate v on an axis of n cells at origin + i·d, in cells: tw_axis_cells = (v − origin) / d.
 * Every test of it against whole cells allows tw_axis_slack: 1e-9 cells plus the rounding of v and
 * origin in double, which is the larger where |origin| is far above d (a 10 cm grid in UTM
 * coordinates: y = 5e6 m is known to 4.7e-10 m, 4.7e-9 cells). So origin + (n − 1)·d, written in
 * the job or computed, is the last cell wherever it is tested: the validation (tw_axis_inside),
 * the placement of sources and receivers (tw_place) and the snapshot box (tw_snapshot_box) agree,
 * and what check accepts, run places. */
double tw_axis_cells(double origin, double d, double v);
double tw_axis_slack(double origin, double d, double v);
int tw_axis_inside(double origin, double d, int n, double v); /* within [0, n − 1] cells, with the slack */
int tw_axis_reached(double origin, double d, int k, double v); /* cell k at or past v, with the slack */
/* The cells [*first, *last] of the axis whose positions lie in [from, to], the slack allowed at both ends,
 * and within [0, n − 1]; their count, 0 when from and to lie between two cells (then *first = *last + 1:
 * the cells above and below them). The snapshot region's box per axis: the parser refuses a region with
 * none, the box takes exactly these, so no cell outside the region is written. */
int tw_axis_span(double origin, double d, int n, double from, double to, int *first, int *last);

/* Memory sizes: "512M", "80G", "1.5T", "4096" (bytes). K/M/G/T are powers of 1024. */
tw_status tw_parse_memsize(const char *text, uint64_t *bytes, tw_error *err);
/* "1.50 GiB" style formatting into buf. */
const char *tw_format_bytes(double bytes, char *buf, size_t len);
/* v with `decimals` decimals ("%.1f") where that is short and shows it (0, or 10^-decimals <= |v| <
 * 1e6), else 3 significant digits ("%.3g"): "%.1f" of an extreme but valid input took hundreds of
 * characters (a Ricker of 1e300 Hz: 2.5e300 Hz, 301 digits) or hid it (8e-299 points per wavelength
 * as 0.0). */
const char *tw_format_decimal(double v, int decimals, char *buf, size_t len);

/* A large array (fields, c²dt², a model): aligned to 2 MiB and, on Linux, marked for transparent
 * huge pages, so that its first touch faults in 2 MiB pages instead of 4 KiB ones (a 2 GiB array:
 * 1 000 faults instead of 500 000, most of its fill time). Not zeroed. Free it with free(). */
void *tw_alloc_large(size_t bytes);

double tw_wall_seconds(void);          /* monotonic clock */
uint64_t tw_host_memory_available(void); /* MemAvailable from /proc/meminfo, or 0 if unknown */

/* The one table of centred second-derivative coefficients (docs/design.md §1): C_m, m = 1..r, for
 * order 2r, r = 1..8, from C_m = 2 (−1)^{m+1} (r!)² / (m² (r − m)! (r + m)!), so that
 * f''(0) d² ≈ Σ_m C_m (f(m) + f(−m) − 2 f(0)), exact for polynomials of degree ≤ 2r + 1.
 * Returns r, or 0 for an order that is not even in 2..16. */
int tw_fd_coefficients(int order, double C[9]);
/* Largest eigenvalue of one axis's second difference times d²: Σ_m 4 C_m sin²(mπ/2). */
double tw_fd_lambda(int order);

/* FNV-1a, 64 bits: h = tw_hash_bytes(h, p, n) continues the hash h (start from TW_HASH_INIT) over n
 * bytes. For identities (a survey's job hash), not for security. */
#define TW_HASH_INIT 0xcbf29ce484222325ull
uint64_t tw_hash_bytes(uint64_t h, const void *p, size_t n);
uint64_t tw_hash_string(uint64_t h, const char *s); /* the bytes of s and its terminating NUL */

/* Edit distance for "did you mean" suggestions. */
int tw_edit_distance(const char *a, const char *b);

#ifdef __cplusplus
}
#endif
#endif
