/* checkpoint.c — checkpoint files, their journal, and the job identity they carry (tw_io.h has
 * the layout and the contract).
 *
 * Why a plain binary file and not HDF5: a checkpoint is two arrays written whole and read whole,
 * 4.4 GB for the 0.55 G-cell job. Written with write(2) in 32 MiB chunks it goes at the disk's
 * speed; HDF5's fletcher32 filter would push every chunk through its filter pipeline (one more
 * pass over the data and a copy) and gives no better message than a chunk's crc32 here does. zlib's
 * crc32 runs at ~2.5 GB/s on one core (1.2.13, measured here), about local-disk speed; in the
 * background path a second thread computes the checksums while the first writes, so neither waits
 * for the other.
 *
 * The journal keeps the output written so far (samples and snapshots) because an HDF5 file that
 * was being written when the process died cannot be trusted: its metadata may be half-updated.
 * Appending to a plain file never touches bytes already there, so the prefix a checkpoint names
 * (its length and crc32) survives any crash after it was fsync'ed. */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <zlib.h>

#include "io_internal.h"
#include "tw_io.h"

#define HEADER_BYTES 4096
#define CHUNK_TARGET (32u << 20) /* bytes of one chunk (both levels) */
static const char CKPT_MAGIC[8] = {'T', 'W', 'C', 'K', 'P', 'T', '0', '1'};
static const char CKPT_END[8] = {'T', 'W', 'C', 'K', 'E', 'N', 'D', '1'};
static const char JRNL_MAGIC[8] = {'T', 'W', 'J', 'R', 'N', 'L', '0', '1'};
#define CKPT_VERSION 1u
#define ENDIAN_MARK 0x01020304u

/* The header as stored: fixed-size fields only, zero-padded to HEADER_BYTES − 4, crc32 last. */
typedef struct {
  char magic[8];
  uint32_t version, header_bytes, endian, ppc;
  int32_t N[3], n[3], order, pad0;
  int64_t step, steps;
  double dt, d[3];
  uint64_t run_id, journal_len;
  uint32_t journal_crc, nchunks;
  double compute_s, wall_s, written;
  uint64_t hash[TW_CKPT_NPART];
  char kernel[32];
  char job_path[256];
} header_t;
_Static_assert(sizeof(header_t) <= HEADER_BYTES - 4, "checkpoint header too large");

typedef struct {
  char magic[8];
  uint64_t file_bytes;
  uint32_t table_crc, pad;
} trailer_t;

/* ---------------------------------------------------------------- small helpers */

static size_t plane_floats(const int N[3]) { return (size_t)N[1] * (size_t)N[2]; }

/* Planes per chunk a writer uses: a chunk (both levels) near CHUNK_TARGET bytes (testing:
 * TW_CHECKPOINT_CHUNK_BYTES), at least one plane. The header records it; readers take it from there. */
static int planes_per_chunk(const int N[3]) {
  const char *e = getenv("TW_CHECKPOINT_CHUNK_BYTES");
  const size_t target = e && atol(e) > 0 ? (size_t)atol(e) : CHUNK_TARGET, per = 8 * plane_floats(N);
  size_t p = per ? target / per : 1;
  if (p < 1) p = 1;
  if (p > (size_t)N[0]) p = (size_t)N[0];
  return (int)p;
}

static int chunk_count(const int N[3], int ppc) { return (N[0] + ppc - 1) / ppc; }

static uint64_t file_bytes(const int N[3], int ppc) {
  return HEADER_BYTES + 8ull * (uint64_t)N[0] * plane_floats(N) + 4ull * (uint64_t)chunk_count(N, ppc) +
         sizeof(trailer_t);
}

uint64_t tw_ckpt_file_bytes(const int N[3]) { return file_bytes(N, planes_per_chunk(N)); }

/* crc32 of any length (zlib's takes uInt). */
static uint32_t crc_of(uint32_t crc, const void *p, size_t n) {
  const unsigned char *b = p;
  while (n) {
    const uInt k = n > (1u << 30) ? 1u << 30 : (uInt)n;
    crc = (uint32_t)crc32(crc, b, k);
    b += k;
    n -= k;
  }
  return crc;
}

static char *suffixed(const char *path, const char *suffix) {
  const size_t a = strlen(path), b = strlen(suffix);
  char *r = malloc(a + b + 1);
  if (r) memcpy(r, path, a), memcpy(r + a, suffix, b + 1);
  return r;
}

char *tw_checkpoint_path(const tw_job *job, const char *output) {
  if (job->ckpt_file) return strdup(job->ckpt_file);
  return suffixed(output ? output : job->output, ".ckpt");
}

int tw_checkpoint_exists(const char *path) {
  struct stat sb;
  return stat(path, &sb) == 0;
}

void tw_checkpoint_remove(const char *path) {
  char *j = suffixed(path, ".journal"), *t = suffixed(path, ".tmp");
  unlink(path);
  if (j) unlink(j);
  if (t) unlink(t);
  free(j), free(t);
}

/* write(2) all of it (EINTR retried). */
static int write_all(int fd, const void *p, size_t n) {
  const char *b = p;
  while (n) {
    ssize_t k = write(fd, b, n > (1u << 30) ? 1u << 30 : n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return -1;
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

/* read(2) exactly n bytes: 0, or −1 with errno (0 = the file ended first). */
static int read_all(int fd, void *p, size_t n) {
  char *b = p;
  while (n) {
    ssize_t k = read(fd, b, n > (1u << 30) ? 1u << 30 : n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) {
      if (k == 0) errno = 0;
      return -1;
    }
    b += k;
    n -= (size_t)k;
  }
  return 0;
}

/* fsync; file systems without it (EINVAL, EROFS) count as done. */
static int sync_fd(int fd) {
  if (fsync(fd) == 0) return 0;
  return errno == EINVAL || errno == EROFS ? 0 : -1;
}

/* Streaming writes: start the disk writing the chunk just written [off, off + len), wait for the one
 * before it [poff, poff + plen) and drop its pages. The file then goes out at the disk's speed
 * while it is written, instead of piling up gigabytes of dirty pages for the final fsync (which
 * cannot be interrupted: a write abandoned at the end of a run would wait for all of it), and a
 * checkpoint does not push the page cache out. Linux only; elsewhere the final fsync does it all. */
static void stream_out(int fd, uint64_t off, uint64_t len, uint64_t poff, uint64_t plen) {
#if defined(__linux__) && defined(SYNC_FILE_RANGE_WRITE)
  sync_file_range(fd, (off_t)off, (off_t)len, SYNC_FILE_RANGE_WRITE);
  if (plen) {
    sync_file_range(fd, (off_t)poff, (off_t)plen,
                    SYNC_FILE_RANGE_WAIT_BEFORE | SYNC_FILE_RANGE_WRITE | SYNC_FILE_RANGE_WAIT_AFTER);
    posix_fadvise(fd, (off_t)poff, (off_t)plen, POSIX_FADV_DONTNEED);
  }
#else
  (void)fd, (void)off, (void)len, (void)poff, (void)plen;
#endif
}

/* Make a rename durable: fsync the folder (best effort). */
static void sync_dir_of(const char *path) {
  char *dir = tw_dir_of(path);
  if (!dir) return;
  int fd = open(dir, O_RDONLY);
  if (fd >= 0) fsync(fd), close(fd);
  free(dir);
}

/* ---------------------------------------------------------------- identity */

/* A 64-bit hash, 8 bytes at a time (~5 GB/s): tells data apart, not a cryptographic digest. */
static uint64_t hash_bytes(uint64_t h, const void *p, size_t n) {
  const unsigned char *b = p;
  h ^= (uint64_t)n * 0xC2B2AE3D27D4EB4Full;
  for (; n >= 8; n -= 8, b += 8) {
    uint64_t w;
    memcpy(&w, b, 8);
    h = (h ^ w) * 0x9E3779B97F4A7C15ull;
    h ^= h >> 29;
  }
  uint64_t w = 0;
  memcpy(&w, b, n);
  h = (h ^ w ^ (uint64_t)n << 56) * 0x9E3779B97F4A7C15ull;
  return h ^ (h >> 32);
}
#define HASH(h, v) ((h) = hash_bytes((h), &(v), sizeof(v)))

void tw_ckpt_ident_make(const tw_job *job, const float *vp, const float *wavelets, tw_ckpt_ident *id) {
  memset(id, 0, sizeof *id);
  const uint64_t seed = 0xCBF29CE484222325ull;
  for (int k = 0; k < TW_CKPT_NPART; k++) id->hash[k] = seed + (uint64_t)k;
  uint64_t *h = id->hash;
  HASH(h[TW_CKPT_GRID], job->n), HASH(h[TW_CKPT_GRID], job->d), HASH(h[TW_CKPT_GRID], job->origin);
  HASH(h[TW_CKPT_GRID], job->order);
  HASH(h[TW_CKPT_TIME], job->dt), HASH(h[TW_CKPT_TIME], job->steps);
  const size_t cells = (size_t)job->n[0] * (size_t)job->n[1] * (size_t)job->n[2];
  if (vp) h[TW_CKPT_MODEL] = hash_bytes(h[TW_CKPT_MODEL], vp, cells * sizeof(float));
  HASH(h[TW_CKPT_BOUNDARY], job->absorb), HASH(h[TW_CKPT_BOUNDARY], job->free_surface);
  HASH(h[TW_CKPT_SOURCES], job->nsources);
  for (int s = 0; s < job->nsources; s++)
    HASH(h[TW_CKPT_SOURCES], job->sources[s].pos), HASH(h[TW_CKPT_SOURCES], job->sources[s].interp);
  if (wavelets)
    h[TW_CKPT_SOURCES] =
        hash_bytes(h[TW_CKPT_SOURCES], wavelets, (size_t)job->nsources * (size_t)(job->steps + 1) * sizeof(float));
  const int interval = job->rec_interval > 0 ? job->rec_interval : 1;
  HASH(h[TW_CKPT_RECEIVERS], interval), HASH(h[TW_CKPT_RECEIVERS], job->rec_interp);
  HASH(h[TW_CKPT_RECEIVERS], job->nrec);
  if (job->nrec)
    h[TW_CKPT_RECEIVERS] = hash_bytes(h[TW_CKPT_RECEIVERS], job->rec, (size_t)job->nrec * sizeof *job->rec);
  HASH(h[TW_CKPT_SNAPSHOTS], job->nsnap), HASH(h[TW_CKPT_SNAPSHOTS], job->snap_decimate);
  if (job->nsnap)
    h[TW_CKPT_SNAPSHOTS] = hash_bytes(h[TW_CKPT_SNAPSHOTS], job->snap_steps, (size_t)job->nsnap * sizeof(long));
  HASH(h[TW_CKPT_SNAPSHOTS], job->snap_from), HASH(h[TW_CKPT_SNAPSHOTS], job->snap_to);
  memcpy(id->n, job->n, sizeof id->n);
  memcpy(id->d, job->d, sizeof id->d);
  id->order = job->order;
  id->dt = job->dt;
  id->steps = job->steps;
}

tw_status tw_ckpt_match(const char *path, const tw_ckpt_info *found, const tw_ckpt_ident *want, tw_error *err) {
  static const char *const what[TW_CKPT_NPART] = {
      "grid (grid.n, grid.d, grid.origin, scheme.order)", "time (dt, steps)", "velocity model's values",
      "boundary (absorbing, free_surface)", "sources (positions, interpolation, wavelets)",
      "receivers (positions, interval, interpolation)", "snapshots (steps, region, decimate)"};
  const tw_ckpt_ident *f = &found->id;
  char msg[TW_ERROR_MSG] = "";
  size_t len = 0;
  for (int k = 0; k < TW_CKPT_NPART; k++) {
    if (f->hash[k] == want->hash[k]) continue;
    char extra[200] = "";
    if (k == TW_CKPT_GRID)
      snprintf(extra, sizeof extra, ": n [%d, %d, %d], d [%g, %g, %g], order %d in the checkpoint; [%d, %d, %d], "
               "[%g, %g, %g], %d in this job", f->n[0], f->n[1], f->n[2], f->d[0], f->d[1], f->d[2], f->order,
               want->n[0], want->n[1], want->n[2], want->d[0], want->d[1], want->d[2], want->order);
    if (k == TW_CKPT_TIME)
      snprintf(extra, sizeof extra, ": %ld steps of %.9g s in the checkpoint, %ld of %.9g s in this job", f->steps,
               f->dt, want->steps, want->dt);
    len += (size_t)snprintf(msg + len, len < sizeof msg ? sizeof msg - len : 0, "%sthe %s differ%s%s",
                            len ? "; " : "", what[k], k == TW_CKPT_GRID || k == TW_CKPT_TIME ? "s" : "", extra);
    if (len >= sizeof msg) len = sizeof msg - 1;
  }
  if (!len) return TW_OK;
  return tw_error_set(err, TW_EMISMATCH, "checkpoint '%s' is of another job (written for '%s' by %s at step %ld): "
                      "%s. Only solver.*, output.file, checkpoint.* and the job file's layout may change before a "
                      "resume; start over by removing '%s' and '%s.journal'", path, found->job_path, found->kernel,
                      found->step, msg, path, path);
}

/* ---------------------------------------------------------------- header */

static void header_pack(const tw_ckpt_info *in, int ppc, unsigned char buf[HEADER_BYTES]) {
  header_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, CKPT_MAGIC, 8);
  h.version = CKPT_VERSION, h.header_bytes = HEADER_BYTES, h.endian = ENDIAN_MARK;
  h.ppc = (uint32_t)ppc;
  h.nchunks = (uint32_t)chunk_count(in->N, ppc);
  for (int a = 0; a < 3; a++) h.N[a] = in->N[a], h.n[a] = in->id.n[a], h.d[a] = in->id.d[a];
  h.order = in->id.order;
  h.step = in->step, h.steps = in->id.steps, h.dt = in->id.dt;
  h.run_id = in->run_id, h.journal_len = in->journal_len, h.journal_crc = in->journal_crc;
  h.compute_s = in->compute_s, h.wall_s = in->wall_s, h.written = in->written;
  memcpy(h.hash, in->id.hash, sizeof h.hash);
  snprintf(h.kernel, sizeof h.kernel, "%s", in->kernel);
  snprintf(h.job_path, sizeof h.job_path, "%s", in->job_path);
  memset(buf, 0, HEADER_BYTES);
  memcpy(buf, &h, sizeof h);
  const uint32_t crc = crc_of(0, buf, HEADER_BYTES - 4);
  memcpy(buf + HEADER_BYTES - 4, &crc, 4);
}

static tw_status header_unpack(const char *path, const unsigned char buf[HEADER_BYTES], tw_ckpt_info *out,
                               int *ppc, tw_error *err) {
  header_t h;
  memcpy(&h, buf, sizeof h);
  if (memcmp(h.magic, CKPT_MAGIC, 6) != 0)
    return tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is not a torrewave checkpoint (it does not start with "
                        "\"TWCKPT\")", path);
  if (h.endian != ENDIAN_MARK)
    return tw_error_set(err, TW_EFORMAT, "checkpoint '%s' was written on a machine of the other byte order", path);
  if (memcmp(h.magic, CKPT_MAGIC, 8) != 0 || h.version != CKPT_VERSION || h.header_bytes != HEADER_BYTES)
    return tw_error_set(err, TW_EFORMAT, "checkpoint '%s' has format version %u (\"%.8s\"); this torrewave reads "
                        "version %u", path, h.version, h.magic, CKPT_VERSION);
  uint32_t crc;
  memcpy(&crc, buf + HEADER_BYTES - 4, 4);
  if (crc != crc_of(0, buf, HEADER_BYTES - 4))
    return tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is corrupted: its header fails its checksum", path);
  memset(out, 0, sizeof *out);
  for (int a = 0; a < 3; a++) out->N[a] = h.N[a], out->id.n[a] = h.n[a], out->id.d[a] = h.d[a];
  if (h.N[0] < 1 || h.N[1] < 1 || h.N[2] < 1 || h.ppc < 1 || h.ppc > (uint32_t)h.N[0] ||
      (int)h.nchunks != chunk_count(out->N, (int)h.ppc) || h.step < 1 || h.step > h.steps)
    return tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is corrupted: its header is inconsistent (grid %d x %d x %d, "
                        "%u planes per chunk, step %lld of %lld)", path, h.N[0], h.N[1], h.N[2], h.ppc,
                        (long long)h.step, (long long)h.steps);
  out->id.order = h.order;
  out->step = h.step, out->id.steps = h.steps, out->id.dt = h.dt;
  out->run_id = h.run_id, out->journal_len = h.journal_len, out->journal_crc = h.journal_crc;
  out->compute_s = h.compute_s, out->wall_s = h.wall_s, out->written = h.written;
  memcpy(out->id.hash, h.hash, sizeof h.hash);
  snprintf(out->kernel, sizeof out->kernel, "%.*s", (int)sizeof h.kernel, h.kernel);
  snprintf(out->job_path, sizeof out->job_path, "%.*s", (int)sizeof h.job_path, h.job_path);
  *ppc = (int)h.ppc;
  out->file_bytes = file_bytes(out->N, *ppc);
  return TW_OK;
}

/* ---------------------------------------------------------------- writing */

struct tw_ckpt_writer {
  char *path, *tmp;
  int N[3], ppc, nchunks;
  size_t plane;
  float *buf[2];           /* background: both levels [N0][N1][N2]; NULL: synchronous */
  float *stage[2];         /* synchronous: one chunk of each level */
  uint32_t *crc;           /* [nchunks] */
  uint64_t crash_at;       /* testing: TW_CHECKPOINT_CRASH_AFTER */
  uint64_t total;          /* bytes of checkpoints written by this writer so far (all files) */
  /* the background write */
  pthread_t thread;
  int running;
  atomic_int cancel;
  tw_ckpt_info info;
  int journal_fd;
  tw_status bg_st;
  tw_error bg_err;
  tw_ckpt_stats stats;
};

/* Background: the checksums of all chunks, computed beside the thread that writes them. */

static uint32_t chunk_crc(const float *cur, const float *prev, size_t n) {
  return crc_of(crc_of(0, cur, n * sizeof(float)), prev, n * sizeof(float));
}

static void *crc_thread(void *arg) {
  tw_ckpt_writer *w = arg;
  for (int c = 0; c < w->nchunks && !atomic_load(&w->cancel); c++) {
    const int x0 = c * w->ppc, nx = x0 + w->ppc <= w->N[0] ? w->ppc : w->N[0] - x0;
    const size_t off = (size_t)x0 * w->plane;
    w->crc[c] = chunk_crc(w->buf[0] + off, w->buf[1] + off, (size_t)nx * w->plane);
  }
  return NULL;
}

static tw_status io_fail(tw_ckpt_writer *w, int fd, const char *what, tw_error *err) {
  const int e = errno;
  if (fd >= 0) close(fd);
  unlink(w->tmp);
  return tw_error_set(err, TW_EIO, "checkpoint '%s': %s: %s (the previous checkpoint, if any, is unchanged)",
                      w->tmp, what, e ? strerror(e) : "unexpected end of file");
}

/* The crash test hook: bytes of this writer's checkpoints so far, this file's included. */
static void maybe_crash(const tw_ckpt_writer *w, uint64_t written) {
  if (w->crash_at && w->total + written >= w->crash_at) raise(SIGKILL);
}

/* Write the whole file under tmp, then rename it to path. get != NULL: synchronous (planes come
 * from get, chunk by chunk); else from the background buffer. */
static tw_status write_file(tw_ckpt_writer *w, const tw_ckpt_info *info, tw_ckpt_planes_fn get, void *ctx,
                            int journal_fd, tw_error *err) {
  const double t0 = tw_wall_seconds();
  unsigned char head[HEADER_BYTES];
  header_pack(info, w->ppc, head);
  int fd = open(w->tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return io_fail(w, -1, "cannot create it", err);
  if (write_all(fd, head, HEADER_BYTES)) return io_fail(w, fd, "writing the header failed", err);
  pthread_t ct;
  const int helper = !get && pthread_create(&ct, NULL, crc_thread, w) == 0;
  uint64_t written = HEADER_BYTES, prev_len = 0;
  tw_status st = TW_OK;
  for (int c = 0; c < w->nchunks && !st; c++) {
    const int x0 = c * w->ppc, nx = x0 + w->ppc <= w->N[0] ? w->ppc : w->N[0] - x0;
    const size_t n = (size_t)nx * w->plane;
    const float *cur, *prev;
    if (get) {
      if ((st = get(ctx, x0, nx, w->stage[0], w->stage[1], err))) break;
      cur = w->stage[0], prev = w->stage[1];
      w->crc[c] = chunk_crc(cur, prev, n);
    } else {
      cur = w->buf[0] + (size_t)x0 * w->plane, prev = w->buf[1] + (size_t)x0 * w->plane;
      if (!helper) w->crc[c] = chunk_crc(cur, prev, n);
    }
    if (atomic_load(&w->cancel)) st = tw_error_set(err, TW_EINTR, "checkpoint '%s': abandoned", w->path);
    else if (write_all(fd, cur, n * sizeof(float)) || write_all(fd, prev, n * sizeof(float)))
      st = io_fail(w, fd, "writing the field failed", err), fd = -1;
    if (!st) stream_out(fd, written, 2 * n * sizeof(float), written - prev_len, prev_len);
    prev_len = 2 * n * sizeof(float);
    written += prev_len;
    maybe_crash(w, written);
  }
  if (helper) {
    if (st) atomic_store(&w->cancel, 1);
    pthread_join(ct, NULL);
  }
  if (st) {
    if (fd >= 0) close(fd), unlink(w->tmp);
    return st;
  }
  trailer_t tr;
  memset(&tr, 0, sizeof tr);
  memcpy(tr.magic, CKPT_END, 8);
  tr.file_bytes = file_bytes(w->N, w->ppc);
  tr.table_crc = crc_of(0, w->crc, (size_t)w->nchunks * 4);
  if (write_all(fd, w->crc, (size_t)w->nchunks * 4) || write_all(fd, &tr, sizeof tr))
    return io_fail(w, fd, "writing the trailer failed", err);
  if (sync_fd(fd)) return io_fail(w, fd, "fsync failed", err);
  if (close(fd)) return io_fail(w, -1, "close failed", err);
  if (journal_fd >= 0 && fdatasync(journal_fd) && errno != EINVAL && errno != EROFS)
    return io_fail(w, -1, "fsync of the journal failed", err);
  if (rename(w->tmp, w->path)) return io_fail(w, -1, "renaming it to the checkpoint's name failed", err);
  sync_dir_of(w->path);
  w->total += file_bytes(w->N, w->ppc);
  const double dt = tw_wall_seconds() - t0;
  w->stats.written++;
  w->stats.last_s = dt;
  w->stats.write_s += dt;
  return TW_OK;
}

static void *write_thread(void *arg) {
  tw_ckpt_writer *w = arg;
  w->bg_st = write_file(w, &w->info, NULL, NULL, w->journal_fd, &w->bg_err);
  return NULL;
}

tw_status tw_ckpt_writer_create(const char *path, const int N[3], int background, tw_ckpt_writer **out,
                                tw_error *err) {
  *out = NULL;
  tw_ckpt_writer *w = calloc(1, sizeof *w);
  if (!w) return tw_error_set(err, TW_ENOMEM, "checkpoint: out of memory");
  memcpy(w->N, N, sizeof w->N);
  w->plane = plane_floats(N);
  w->ppc = planes_per_chunk(N);
  w->nchunks = chunk_count(N, w->ppc);
  w->path = strdup(path);
  w->tmp = suffixed(path, ".tmp");
  w->crc = malloc((size_t)w->nchunks * 4);
  w->stats.bytes = (double)file_bytes(N, w->ppc);
  const char *crash = getenv("TW_CHECKPOINT_CRASH_AFTER");
  if (crash && *crash) w->crash_at = strtoull(crash, NULL, 10);
  const size_t all = (size_t)N[0] * w->plane, chunk = (size_t)w->ppc * w->plane;
  for (int a = 0; a < 2; a++) {
    if (background) w->buf[a] = malloc(all * sizeof(float));
    else w->stage[a] = malloc(chunk * sizeof(float));
  }
  if (!w->path || !w->tmp || !w->crc || (background ? !w->buf[0] || !w->buf[1] : !w->stage[0] || !w->stage[1])) {
    char b[32];
    tw_ckpt_writer_destroy(w);
    return tw_error_set(err, TW_ENOMEM, "checkpoint '%s': cannot allocate %s for its %s", path,
                        tw_format_bytes(2.0 * (double)(background ? all : chunk) * sizeof(float), b, sizeof b),
                        background ? "background copy" : "staging buffer");
  }
  *out = w;
  return TW_OK;
}

tw_status tw_ckpt_writer_wait(tw_ckpt_writer *w, tw_error *err) {
  if (!w->running) return TW_OK;
  pthread_join(w->thread, NULL);
  w->running = 0;
  if (w->bg_st && err) *err = w->bg_err;
  return w->bg_st;
}

tw_status tw_ckpt_writer_submit(tw_ckpt_writer *w, const tw_ckpt_info *info, tw_ckpt_planes_fn get, void *ctx,
                                int journal_fd, tw_error *err) {
  tw_status st = tw_ckpt_writer_wait(w, err);
  if (st) return st;
  if (!w->buf[0]) return write_file(w, info, get, ctx, journal_fd, err);
  /* Background: the copy now (the caller's fields move on after this returns), the file later. */
  if ((st = get(ctx, 0, w->N[0], w->buf[0], w->buf[1], err))) return st;
  w->info = *info;
  w->journal_fd = journal_fd;
  w->bg_st = TW_OK;
  atomic_store(&w->cancel, 0);
  if (pthread_create(&w->thread, NULL, write_thread, w) != 0)
    return write_file(w, info, NULL, NULL, journal_fd, err); /* no thread: write it here */
  w->running = 1;
  return TW_OK;
}

int tw_ckpt_writer_background(const tw_ckpt_writer *w) { return w->buf[0] != NULL; }
tw_ckpt_stats tw_ckpt_writer_stats(const tw_ckpt_writer *w) { return w->stats; }

void tw_ckpt_writer_destroy(tw_ckpt_writer *w) {
  if (!w) return;
  if (w->running) {
    atomic_store(&w->cancel, 1);
    pthread_join(w->thread, NULL);
  }
  for (int a = 0; a < 2; a++) free(w->buf[a]), free(w->stage[a]);
  free(w->crc), free(w->path), free(w->tmp);
  free(w);
}

/* ---------------------------------------------------------------- reading */

/* Open, read and check the header, the size and the trailer; *fd is left after the header. */
static tw_status open_checked(const char *path, tw_ckpt_info *info, int *ppc, uint32_t **crc, int *fdp,
                              tw_error *err) {
  char b1[32], b2[32];
  *fdp = -1;
  if (crc) *crc = NULL;
  struct stat sb;
  const char *kind;
  int fd = tw_open_regular(path, O_RDONLY, 0, &sb, &kind); /* a FIFO: no wait for a writer */
  if (fd < 0 && kind)
    return tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is %s, not a checkpoint file", path, kind);
  if (fd < 0)
    return tw_error_set(err, errno == ENOENT ? TW_EINVAL : TW_EIO, "checkpoint '%s': cannot open it: %s", path,
                        strerror(errno));
  unsigned char head[HEADER_BYTES];
  tw_status st = TW_OK;
  memset(head, 0, sizeof head);
  if ((uint64_t)sb.st_size < HEADER_BYTES) {
    const ssize_t got = read(fd, head, sizeof head);
    st = got >= 6 && !memcmp(head, CKPT_MAGIC, 6)
             ? tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is truncated: %lld bytes, shorter than its %d-byte "
                            "header", path, (long long)sb.st_size, HEADER_BYTES)
             : tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is not a torrewave checkpoint (%lld bytes, not starting "
                            "with \"TWCKPT\")", path, (long long)sb.st_size);
  } else if (read_all(fd, head, HEADER_BYTES)) {
    st = tw_error_set(err, TW_EIO, "checkpoint '%s': reading the header: %s", path, strerror(errno));
  } else if (!(st = header_unpack(path, head, info, ppc, err))) {
    const uint64_t want = info->file_bytes, got = (uint64_t)sb.st_size;
    if (got < want)
      st = tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is truncated: %s of %s (%llu of %llu bytes; the copy or "
                        "the disk lost its end)", path, tw_format_bytes((double)got, b1, sizeof b1),
                        tw_format_bytes((double)want, b2, sizeof b2), (unsigned long long)got,
                        (unsigned long long)want);
    else if (got > want)
      st = tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is corrupted: %llu bytes, its header says %llu", path,
                        (unsigned long long)got, (unsigned long long)want);
  }
  const int nch = st ? 0 : chunk_count(info->N, *ppc);
  uint32_t *table = st ? NULL : malloc((size_t)nch * 4);
  trailer_t tr;
  if (!st && !table) st = tw_error_set(err, TW_ENOMEM, "checkpoint '%s': out of memory", path);
  if (!st && (pread(fd, table, (size_t)nch * 4, (off_t)(info->file_bytes - sizeof tr - (size_t)nch * 4)) !=
                  (ssize_t)nch * 4 ||
              pread(fd, &tr, sizeof tr, (off_t)(info->file_bytes - sizeof tr)) != (ssize_t)sizeof tr))
    st = tw_error_set(err, TW_EIO, "checkpoint '%s': reading the trailer: %s", path, strerror(errno));
  if (!st && (memcmp(tr.magic, CKPT_END, 8) || tr.file_bytes != info->file_bytes ||
              tr.table_crc != crc_of(0, table, (size_t)nch * 4)))
    st = tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is corrupted: its trailer (checksum table) is damaged", path);
  if (st || !crc) free(table);
  if (st) {
    close(fd);
    return st;
  }
  if (crc) *crc = table;
  *fdp = fd;
  return TW_OK;
}

tw_status tw_ckpt_read_info(const char *path, tw_ckpt_info *info, tw_error *err) {
  int fd, ppc;
  tw_status st = open_checked(path, info, &ppc, NULL, &fd, err);
  if (!st) close(fd);
  return st;
}

tw_status tw_ckpt_read_fields(const char *path, tw_ckpt_planes_fn put, void *ctx, tw_error *err) {
  tw_ckpt_info info;
  uint32_t *crc;
  int fd, ppc;
  tw_status st = open_checked(path, &info, &ppc, &crc, &fd, err);
  if (st) return st;
  const int nch = chunk_count(info.N, ppc);
  const size_t plane = plane_floats(info.N);
#ifdef POSIX_FADV_SEQUENTIAL
  posix_fadvise(fd, 0, 0, POSIX_FADV_SEQUENTIAL); /* one pass, front to back: read ahead */
#endif
  float *buf = malloc(2 * (size_t)ppc * plane * sizeof(float));
  if (!buf) st = tw_error_set(err, TW_ENOMEM, "checkpoint '%s': out of memory for a chunk", path);
  uint64_t off = HEADER_BYTES;
  for (int c = 0; c < nch && !st; c++) {
    const int x0 = c * ppc, nx = x0 + ppc <= info.N[0] ? ppc : info.N[0] - x0;
    const size_t n = (size_t)nx * plane;
    if (read_all(fd, buf, 2 * n * sizeof(float)))
      st = tw_error_set(err, TW_EIO, "checkpoint '%s': reading x-planes %d..%d: %s", path, x0, x0 + nx - 1,
                        errno ? strerror(errno) : "unexpected end of file");
    else if (chunk_crc(buf, buf + n, n) != crc[c])
      st = tw_error_set(err, TW_EFORMAT, "checkpoint '%s' is corrupted: x-planes %d..%d (bytes %llu..%llu) fail "
                        "their checksum", path, x0, x0 + nx - 1, (unsigned long long)off,
                        (unsigned long long)(off + 2 * n * sizeof(float) - 1));
    else
      st = put(ctx, x0, nx, buf, buf + n, err);
    off += 2 * n * sizeof(float);
  }
  free(buf);
  free(crc);
  close(fd);
  return st;
}

/* ---------------------------------------------------------------- the journal */

enum { REC_TRACES = 0x53434552u /* "RECS" */, REC_SNAPSHOT = 0x50414E53u /* "SNAP" */ };
typedef struct {
  uint32_t type, pad;
  int64_t a, b;              /* traces: first, count; snapshot: index, step */
  uint64_t bytes;            /* payload */
} record_t;
typedef struct {
  char magic[8];
  uint64_t run_id;
} jheader_t;

struct tw_journal {
  char *path;
  int fd;
  uint64_t len;
  uint32_t crc;
};

static tw_status journal_append(tw_journal *j, const void *a, size_t na, const void *b, size_t nb, tw_error *err) {
  if (write_all(j->fd, a, na) || (nb && write_all(j->fd, b, nb))) {
    const int e = errno;
    /* Cut back to the last whole record: a later checkpoint must never name a torn one. */
    if (ftruncate(j->fd, (off_t)j->len) == 0) lseek(j->fd, (off_t)j->len, SEEK_SET);
    return tw_error_set(err, TW_EIO, "checkpoint journal '%s': write failed: %s", j->path, strerror(e));
  }
  j->crc = crc_of(crc_of(j->crc, a, na), b, nb);
  j->len += na + nb;
  return TW_OK;
}

static tw_status journal_open(const char *path, int flags, tw_journal **out, tw_error *err) {
  tw_journal *j = calloc(1, sizeof *j);
  if (!j || !(j->path = strdup(path))) {
    free(j);
    return tw_error_set(err, TW_ENOMEM, "checkpoint journal: out of memory");
  }
  const char *kind;
  j->fd = tw_open_regular(path, flags, 0644, NULL, &kind); /* a FIFO's reads would wait for a writer */
  tw_status st = TW_OK;
  if (j->fd < 0 && kind)
    st = tw_error_set(err, TW_EFORMAT, "checkpoint journal '%s' is %s, not a journal file", path, kind);
  else if (j->fd < 0)
    st = tw_error_set(err, errno == ENOENT ? TW_EINVAL : TW_EIO, "checkpoint journal '%s': cannot open it: %s", path,
                      strerror(errno));
  if (st) {
    tw_journal_close(j);
    return st;
  }
  *out = j;
  return TW_OK;
}

tw_status tw_journal_create(const char *path, uint64_t run_id, tw_journal **out, tw_error *err) {
  *out = NULL;
  tw_journal *j = NULL;
  tw_status st = journal_open(path, O_RDWR | O_CREAT | O_TRUNC, &j, err);
  if (st) return st;
  jheader_t h;
  memset(&h, 0, sizeof h);
  memcpy(h.magic, JRNL_MAGIC, 8);
  h.run_id = run_id;
  if ((st = journal_append(j, &h, sizeof h, NULL, 0, err))) {
    tw_journal_close(j);
    return st;
  }
  *out = j;
  return TW_OK;
}

tw_status tw_journal_traces(tw_journal *j, long first, long count, long nrec, const float *traces, tw_error *err) {
  record_t r = {REC_TRACES, 0, first, count, (uint64_t)nrec * (uint64_t)count * sizeof(float)};
  return journal_append(j, &r, sizeof r, traces, (size_t)r.bytes, err);
}

tw_status tw_journal_snapshot(tw_journal *j, int isnap, long step, size_t n, const float *data, tw_error *err) {
  record_t r = {REC_SNAPSHOT, 0, isnap, step, (uint64_t)n * sizeof(float)};
  return journal_append(j, &r, sizeof r, data, (size_t)r.bytes, err);
}

/* Replay the records of [sizeof header, info->journal_len) into sink; their crc32 into *crc. */
static tw_status journal_replay(tw_journal *j, const tw_ckpt_info *info, const tw_journal_sink *sink, uint32_t *crc,
                                tw_error *err) {
  void *buf = NULL;
  size_t cap = 0;
  uint64_t pos = j->len;
  tw_status st = TW_OK;
  while (!st && pos < info->journal_len) {
    record_t r;
    if (pos + sizeof r > info->journal_len || read_all(j->fd, &r, sizeof r) ||
        (r.type != REC_TRACES && r.type != REC_SNAPSHOT) || r.bytes > info->journal_len - pos - sizeof r) {
      st = tw_error_set(err, TW_EFORMAT, "checkpoint journal '%s' is corrupted: no valid record at byte %llu", j->path,
                        (unsigned long long)pos);
      break;
    }
    /* Its payload the size its count says: the crc32 is known only at the end, and the sink reads
     * count × nrec floats (a damaged count read past the buffer). */
    const uint64_t row = 4ull * (uint64_t)(sink->nrec > 0 ? sink->nrec : 0);
    const int fits = r.type == REC_TRACES ? r.b >= 0 && (row ? r.bytes % row == 0 && r.bytes / row == (uint64_t)r.b
                                                             : r.bytes == 0)
                                          : r.bytes == 4ull * (uint64_t)sink->snap_floats;
    if (!fits) {
      char want[96];
      if (r.type == REC_TRACES)
        snprintf(want, sizeof want, "%lld samples of %ld receivers", (long long)r.b, sink->nrec);
      else
        snprintf(want, sizeof want, "a snapshot of %zu values", sink->snap_floats);
      st = tw_error_set(err, TW_EFORMAT, "checkpoint journal '%s' is corrupted: the record at byte %llu holds %llu "
                        "bytes, not %s", j->path, (unsigned long long)pos, (unsigned long long)r.bytes, want);
      break;
    }
    if (r.bytes > cap) {
      free(buf);
      cap = (size_t)r.bytes;
      if (!(buf = malloc(cap))) {
        st = tw_error_set(err, TW_ENOMEM, "checkpoint journal '%s': out of memory (%llu bytes)", j->path,
                          (unsigned long long)r.bytes);
        break;
      }
    }
    if (read_all(j->fd, buf, (size_t)r.bytes)) {
      st = tw_error_set(err, TW_EIO, "checkpoint journal '%s': reading byte %llu: %s", j->path,
                        (unsigned long long)pos, errno ? strerror(errno) : "unexpected end of file");
      break;
    }
    *crc = crc_of(crc_of(*crc, &r, sizeof r), buf, (size_t)r.bytes);
    pos += sizeof r + r.bytes;
    st = r.type == REC_TRACES ? sink->traces(sink->user, (long)r.a, (long)r.b, buf, err)
                              : sink->snapshot(sink->user, (int)r.a, (long)r.b, buf, err);
    if (st) tw_error_prefix(err, "replaying checkpoint journal '%s'", j->path);
  }
  free(buf);
  if (!st && *crc != info->journal_crc)
    st = tw_error_set(err, TW_EFORMAT, "checkpoint journal '%s' is corrupted: its first %llu bytes fail their "
                      "checksum", j->path, (unsigned long long)info->journal_len);
  return st;
}

tw_status tw_journal_resume(const char *path, const tw_ckpt_info *info, const tw_journal_sink *sink,
                            tw_journal **out, tw_error *err) {
  *out = NULL;
  tw_journal *j = NULL;
  tw_status st = journal_open(path, O_RDWR, &j, err);
  if (st) return st;
  struct stat sb;
  jheader_t h;
  if (fstat(j->fd, &sb) || read_all(j->fd, &h, sizeof h)) {
    st = tw_error_set(err, TW_EFORMAT, "checkpoint journal '%s' is truncated or unreadable: %s", path,
                      errno ? strerror(errno) : "shorter than its header");
  } else if (memcmp(h.magic, JRNL_MAGIC, 8) != 0) {
    st = tw_error_set(err, TW_EFORMAT, "'%s' is not a torrewave checkpoint journal", path);
  } else if (h.run_id != info->run_id) {
    st = tw_error_set(err, TW_EMISMATCH, "checkpoint journal '%s' belongs to another run than the checkpoint "
                      "(run %016llx, the checkpoint's %016llx)", path, (unsigned long long)h.run_id,
                      (unsigned long long)info->run_id);
  } else if ((uint64_t)sb.st_size < info->journal_len) {
    st = tw_error_set(err, TW_EFORMAT, "checkpoint journal '%s' is truncated: %lld bytes, the checkpoint needs the "
                      "first %llu", path, (long long)sb.st_size, (unsigned long long)info->journal_len);
  } else {
    uint32_t crc = crc_of(0, &h, sizeof h);
    j->len = sizeof h;
    st = journal_replay(j, info, sink, &crc, err);
    j->len = info->journal_len;
    j->crc = crc;
    /* What follows belongs to work after the checkpoint: dropped, it will be written again. */
    if (!st && (ftruncate(j->fd, (off_t)j->len) || lseek(j->fd, (off_t)j->len, SEEK_SET) < 0))
      st = tw_error_set(err, TW_EIO, "checkpoint journal '%s': cannot cut it at byte %llu: %s", path,
                        (unsigned long long)j->len, strerror(errno));
  }
  if (st) {
    tw_journal_close(j);
    return st;
  }
  *out = j;
  return TW_OK;
}

void tw_journal_position(const tw_journal *j, uint64_t *len, uint32_t *crc) {
  *len = j->len;
  *crc = j->crc;
}

int tw_journal_fd(const tw_journal *j) { return j->fd; }

void tw_journal_close(tw_journal *j) {
  if (!j) return;
  if (j->fd >= 0) close(j->fd);
  free(j->path);
  free(j);
}

/* ---------------------------------------------------------------- disk speed */

tw_status tw_disk_write_rate(const char *path, size_t bytes, double *bytes_per_s, tw_error *err) {
  char probe[4096];
  snprintf(probe, sizeof probe, "%s.probe-%ld", path, (long)getpid());
  const size_t block = 4u << 20;
  unsigned char *buf = malloc(block);
  if (!buf) return tw_error_set(err, TW_ENOMEM, "out of memory");
  for (size_t i = 0; i < block; i++) buf[i] = (unsigned char)(i * 131u + 7u); /* not all zeros: no sparse files */
  int fd = open(probe, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  tw_status st = TW_OK;
  const double t0 = tw_wall_seconds();
  if (fd < 0) {
    st = tw_error_set(err, TW_EIO, "checkpoint folder of '%s' is not writable: %s", path, strerror(errno));
  } else {
    for (size_t done = 0; done < bytes && !st; done += block)
      if (write_all(fd, buf, block)) st = tw_error_set(err, TW_EIO, "writing '%s': %s", probe, strerror(errno));
    if (!st && sync_fd(fd)) st = tw_error_set(err, TW_EIO, "fsync of '%s': %s", probe, strerror(errno));
    close(fd);
    unlink(probe);
  }
  const double dt = tw_wall_seconds() - t0;
  free(buf);
  *bytes_per_s = !st && dt > 0 ? (double)((bytes + block - 1) / block * block) / dt : 0.0;
  return st;
}
