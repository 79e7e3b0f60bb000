/* output.c — the HDF5 result file of docs/design.md §5.
 *
 * The file is written under "<path>.part-<pid>" and renamed to <path> only in tw_output_close,
 * after HDF5 has closed it and the data is on disk (fsync): a crash or an error never leaves a
 * file under the final name that looks finished. tw_output_abort deletes the temporary file. A
 * complete file whose names are refused at close is kept as "<stem>.kept-<pid>.h5" (keep_result).
 *
 * Layout (every group/dataset below is created in tw_output_create, filled as the run goes):
 *   /                  attributes: program, version, job, job_file, kernel, n, d, origin, dt, steps,
 *                      order, absorbing, free_surface, receiver_interval, shot, vp_min, vp_max;
 *                      then set_attr_* ones
 *   /receivers         attribute count; coords [nrec][3] f64; traces [nrec][nsamples] f32
 *                      (attributes dt, interval) — datasets only when nrec > 0
 *   /sources           attribute count; coords [nsrc][3] f64; wavelets [nsrc][steps+1] f32 (dt)
 *   /snapshots         only when nsnap > 0: p [nsnap][nz][ny][nx] f32 (x fastest: see
 *                      io_internal.h), steps i64 (−1 = not written), times f64; attributes count,
 *                      decimate, first_cell, origin, spacing (x, y, z order); at close, views/
 *                      step_NNNNNN: one virtual dataset per written snapshot (no data of its own)
 *                      for ParaView's Xdmf3 readers, which cannot read a hyperslab (and views/vp)
 *   /model             only with output.model: vp [nz][ny][nx] f32, the whole model
 * Units: every dataset has "units" (and p, traces and wavelets a "description" of what the unit
 * means physically); every attribute with a unit X has a string attribute "X_units" beside it
 * (one table, attr_units below).
 *
 * Traces arrive as time slabs [nrec][count] with small counts. A chunk holds T samples of a block
 * of receivers; this module buffers one chunk column (all receivers × T samples) and hands it to
 * HDF5 when complete, so every chunk is written once, whole, instead of read-modified-written
 * for every slab. Every HDF5 return value is checked; a failure is reported with the dataset and
 * the file, and marks the output failed (close then discards it). */
#define _GNU_SOURCE /* memfd_create (Linux); everything else is POSIX.1-2008 */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"

struct tw_output {
  char *path, *temp;
  const tw_job *job;     /* its inputs and output settings, for the names' check at close */
  tw_output_role role;
  hid_t file, traces, snap_p, snap_steps, snap_times;
  long nrec, nsamples, steps;
  double dt;
  int nsnap, snap_n[3], snap_lo[3], snap_dec;
  double snap_origin[3], snap_spacing[3];
  long *snap_step;       /* per snapshot: the step written, −1 until written */
  float *slab;           /* one z-slab [k][ny][nx] (the file's order) on its way to the file */
  size_t slab_cap;       /* floats in slab */
  int snap_slab_k;       /* z-planes per snapshot slab: the chunks' z extent */
  int model_n[3];        /* /model/vp [nz][ny][nx] written (0: no model stored) */
  int segy;              /* output.segy: write the SEG-Y file at close */
  /* trace buffer: [nrec][tchunk] floats for chunk column tcol, valid samples [tlo, thi) */
  float *tbuf;
  long tchunk, tcol, tlo, thi;
  int failed;            /* an HDF5/I/O operation failed: the file cannot be trusted */
};

/* HDF5 1.10 cannot recover from a failed H5Dclose/H5Fclose: the id is left pointing at freed memory,
 * and HDF5's own shutdown at exit (H5_term_library, registered with atexit when the library starts)
 * closes what is still open and crashes on it. tw_output_abort makes the closes of a discarded file
 * succeed by pointing it at an in-memory file, but a file size limit (RLIMIT_FSIZE, with SIGXFSZ
 * ignored) refuses that file too: the run said "File too large" and then ended in a segmentation
 * fault (status 139, not 1). Every file written here is closed, fsync'ed and renamed explicitly and
 * nothing relies on that shutdown, so it is not registered (before any HDF5 call: a constructor). */
#if defined(__GNUC__)
__attribute__((constructor)) static void no_hdf5_atexit(void) { H5dont_atexit(); }
#endif

/* ---------------------------------------------------------------- errors */

/* An HDF5 call failed: say what (dataset, operation), where (temporary file), and HDF5's reason.
 * Must be called right after the failing call (the reason is read from HDF5's error stack). */
static tw_status h5fail(tw_output *o, tw_error *err, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 3, 4)))
#endif
    ;
static tw_status h5fail(tw_output *o, tw_error *err, const char *fmt, ...) {
  char why[512], what[512];
  tw_h5_reason(why, sizeof why);
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(what, sizeof what, fmt, ap);
  va_end(ap);
  o->failed = 1;
  return tw_error_set(err, TW_EIO, "output '%s': %s%s%s", o->temp, what, why[0] ? ": " : "", why);
}

static void close_id(hid_t *id, herr_t (*closer)(hid_t)) {
  if (*id >= 0) closer(*id);
  *id = H5I_INVALID_HID;
}

/* ---------------------------------------------------------------- attributes */

/* Units of the numeric attributes: each one named here gets "<name>_units" beside it. */
static const char *attr_units(const char *name) {
  static const char *const table[][2] = {
      {"d", "m"},          {"origin", "m"},       {"spacing", "m"},  {"dt", "s"},
      {"wall_time", "s"},  {"compute_time", "s"}, {"vp_min", "m/s"}, {"vp_max", "m/s"},
      {"n", "cells"},      {"absorbing", "cells"}, {"first_cell", "cells"}, {"decimate", "cells"},
      {"steps", "time steps"}, {"interval", "time steps"}, {"receiver_interval", "time steps"},
      {"gcells_per_s", "1e9 cell updates per second"}};
  for (size_t i = 0; i < sizeof table / sizeof table[0]; i++)
    if (strcmp(name, table[i][0]) == 0) return table[i][1];
  return NULL;
}

static tw_status attr_string(tw_output *o, hid_t obj, const char *objname, const char *name, const char *s,
                             tw_error *err);

/* Attribute `name` on obj: scalar when count == 0, else 1-D [count]. An existing one is replaced
 * (set_attr_* may be called twice with the same name). */
static tw_status attr_write(tw_output *o, hid_t obj, const char *objname, const char *name, hid_t ftype, hid_t mtype,
                            int count, const void *buf, tw_error *err) {
  htri_t ex = H5Aexists(obj, name);
  if (ex < 0) return h5fail(o, err, "attribute '%s' of %s: query failed", name, objname);
  if (ex > 0 && H5Adelete(obj, name) < 0) return h5fail(o, err, "attribute '%s' of %s: replace failed", name, objname);
  hsize_t dim = (hsize_t)count;
  hid_t sp = count ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_SCALAR);
  if (sp < 0) return h5fail(o, err, "attribute '%s' of %s: dataspace failed", name, objname);
  hid_t a = H5Acreate2(obj, name, ftype, sp, H5P_DEFAULT, H5P_DEFAULT);
  tw_status st = TW_OK;
  if (a < 0)
    st = h5fail(o, err, "attribute '%s' of %s: create failed", name, objname);
  else if (H5Awrite(a, mtype, buf) < 0)
    st = h5fail(o, err, "attribute '%s' of %s: write failed", name, objname);
  if (a >= 0 && H5Aclose(a) < 0 && !st) st = h5fail(o, err, "attribute '%s' of %s: close failed", name, objname);
  H5Sclose(sp);
  const char *units = H5Tget_class(ftype) == H5T_STRING ? NULL : attr_units(name);
  if (!st && units) {
    char uname[128];
    snprintf(uname, sizeof uname, "%s_units", name);
    st = attr_string(o, obj, objname, uname, units, err);
  }
  return st;
}

/* Variable-length UTF-8 string: h5py reads it as str, and no 64 KiB attribute limit applies
 * (the job text can be long). */
static tw_status attr_string(tw_output *o, hid_t obj, const char *objname, const char *name, const char *s,
                             tw_error *err) {
  hid_t t = H5Tcopy(H5T_C_S1);
  if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0) {
    tw_status st = h5fail(o, err, "attribute '%s' of %s: string type failed", name, objname);
    if (t >= 0) H5Tclose(t);
    return st;
  }
  const char *p = s ? s : "";
  tw_status st = attr_write(o, obj, objname, name, t, t, 0, &p, err);
  H5Tclose(t);
  return st;
}

static tw_status attr_doubles(tw_output *o, hid_t obj, const char *objname, const char *name, int count,
                              const double *v, tw_error *err) {
  return attr_write(o, obj, objname, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, count, v, err);
}
static tw_status attr_ints(tw_output *o, hid_t obj, const char *objname, const char *name, int count, const int *v,
                           tw_error *err) {
  return attr_write(o, obj, objname, name, H5T_STD_I32LE, H5T_NATIVE_INT, count, v, err);
}
static tw_status attr_long(tw_output *o, hid_t obj, const char *objname, const char *name, long v, tw_error *err) {
  long long x = v;
  return attr_write(o, obj, objname, name, H5T_STD_I64LE, H5T_NATIVE_LLONG, 0, &x, err);
}

/* What p means (docs/design.md §1: (1/c²) p_tt − ∇²p = s(t) δ(x − x_s), δ in 1/m³): with the source
 * strength s in kg/s² — density times the rate of change of the injected volume flow — p is in
 * pascals, and a wavelet of amplitude A is a source whose s peaks at A kg/s². */
static const char p_meaning[] =
    "pressure in Pa for the source strength s(t) of /sources/wavelets taken in kg/s^2 (s = rho dQ/dt: density "
    "times the rate of change of the injected volume flow Q, m^3/s); the equation is (1/c^2) p_tt - lap p = "
    "s(t) delta(x - x_s), so a wavelet amplitude of 1 is a peak s of 1 kg/s^2 and p scales with it; per unit of "
    "source p is in 1/m (free space: p = s(t - r/c) / (4 pi r))";

/* "units" (and "description" when given) of dataset `name`. */
static tw_status dataset_units(tw_output *o, hid_t ds, const char *name, const char *units, const char *description,
                               tw_error *err) {
  tw_status st = attr_string(o, ds, name, "units", units, err);
  if (!st && description) st = attr_string(o, ds, name, "description", description, err);
  return st;
}

/* ---------------------------------------------------------------- datasets */

/* Create dataset `name` (absolute path) of rank/dims; chunked when chunk != NULL; fill value
 * `fill` (in mtype) when given. */
static hid_t make_dataset(tw_output *o, const char *name, hid_t ftype, int rank, const hsize_t *dims,
                          const hsize_t *chunk, hid_t mtype, const void *fill, tw_error *err) {
  hid_t sp = H5Screate_simple(rank, dims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  hid_t ds = H5I_INVALID_HID;
  if (sp < 0 || dcpl < 0)
    h5fail(o, err, "dataset %s: dataspace/property list failed", name);
  else if (chunk && H5Pset_chunk(dcpl, rank, chunk) < 0)
    h5fail(o, err, "dataset %s: chunk layout failed", name);
  else if (fill && H5Pset_fill_value(dcpl, mtype, fill) < 0)
    h5fail(o, err, "dataset %s: fill value failed", name);
  else if ((ds = H5Dcreate2(o->file, name, ftype, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    h5fail(o, err, "dataset %s: create failed", name);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (sp >= 0) H5Sclose(sp);
  return ds;
}

/* A whole dataset written at once (coordinates, wavelets), with its units; closed again unless
 * keep != NULL. */
static tw_status write_whole(tw_output *o, const char *name, hid_t ftype, hid_t mtype, int rank, const hsize_t *dims,
                             const void *data, const char *units, const char *description, hid_t *keep, tw_error *err) {
  hid_t ds = make_dataset(o, name, ftype, rank, dims, NULL, mtype, NULL, err);
  if (ds < 0) return TW_EIO;
  tw_status st = TW_OK;
  if (H5Dwrite(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, data) < 0) st = h5fail(o, err, "dataset %s: write failed", name);
  if (!st) st = dataset_units(o, ds, name, units, description, err);
  if (keep && !st)
    *keep = ds;
  else if (H5Dclose(ds) < 0 && !st)
    st = h5fail(o, err, "dataset %s: close failed", name);
  return st;
}

static hid_t make_group(tw_output *o, const char *name, tw_error *err) {
  hid_t g = H5Gcreate2(o->file, name, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
  if (g < 0) h5fail(o, err, "group %s: create failed", name);
  return g;
}

/* ---------------------------------------------------------------- layout */

static tw_status write_root_attrs(tw_output *o, const tw_output_desc *d, tw_error *err) {
  const tw_job *j = d->job;
  const char *r = "/";
  tw_status st = attr_string(o, o->file, r, "program", "torrewave", err);
  if (!st) st = attr_string(o, o->file, r, "version", TW_VERSION, err);
  if (!st) st = attr_string(o, o->file, r, "job", j->text, err);
  if (!st) st = attr_string(o, o->file, r, "job_file", j->path, err);
  if (!st) st = attr_string(o, o->file, r, "kernel", d->kernel ? d->kernel : "unknown", err);
  if (!st) st = attr_ints(o, o->file, r, "n", 3, j->n, err);
  if (!st) st = attr_doubles(o, o->file, r, "d", 3, j->d, err);
  if (!st) st = attr_doubles(o, o->file, r, "origin", 3, j->origin, err);
  if (!st) st = attr_doubles(o, o->file, r, "dt", 0, &d->dt, err);
  if (!st) st = attr_long(o, o->file, r, "steps", d->steps, err);
  if (!st) st = attr_ints(o, o->file, r, "order", 0, &j->order, err);
  if (!st) st = attr_ints(o, o->file, r, "absorbing", 3, j->absorb, err);
  if (!st) st = attr_ints(o, o->file, r, "free_surface", 0, &j->free_surface, err);
  int interval = j->rec_interval > 0 ? j->rec_interval : 1;
  if (!st) st = attr_ints(o, o->file, r, "receiver_interval", 0, &interval, err);
  if (!st) st = attr_long(o, o->file, r, "shot", d->shot, err);
  if (!st && d->vp_max > 0) st = attr_doubles(o, o->file, r, "vp_min", 0, &d->vp_min, err);
  if (!st && d->vp_max > 0) st = attr_doubles(o, o->file, r, "vp_max", 0, &d->vp_max, err);
  return st;
}

long tw_output_trace_buffer_cap = 64L << 20;

/* Trace chunk [R][T]: the module buffers nrec × T floats (one chunk column), so T is set to keep
 * that buffer near tw_output_trace_buffer_cap (at least 8 samples, at most 1024); R makes a
 * chunk about 512 KiB. */
static void trace_chunk(long nrec, long nsamples, hsize_t chunk[2]) {
  long t = tw_output_trace_buffer_cap / (4 * nrec);
  t = t < 8 ? 8 : t > 1024 ? 1024 : t;
  if (t > nsamples) t = nsamples;
  long r = (128L << 10) / t;
  if (r < 64) r = 64;
  if (r > nrec) r = nrec;
  chunk[0] = (hsize_t)r;
  chunk[1] = (hsize_t)t;
}

static const char coords_meaning[] = "x, y, z in metres, model coordinates (z is depth, positive down)";

/* /<group>/cells, weights, coords_used (and interpolation: a dataset per point when per_point, else
 * an attribute of the group) from pt (tw_points_at). */
static tw_status write_points(tw_output *o, hid_t g, const char *group, const tw_points_at *pt, int per_point,
                              tw_error *err) {
  if (!pt || pt->n <= 0 || !pt->cells) return TW_OK;
  static const char *const names[2] = {"nearest", "trilinear"};
  char name[64];
  hsize_t cd[3] = {(hsize_t)pt->n, (hsize_t)pt->taps, 3};
  snprintf(name, sizeof name, "%s/cells", group);
  tw_status st = write_whole(o, name, H5T_STD_I32LE, H5T_NATIVE_INT, 3, cd, pt->cells, "1",
                             "model cells (i, j, k) each point reads or feeds (tw_place), -1 in unused slots; with a "
                             "free surface, cells with k = 0 add or record nothing (p = 0 there)", NULL, err);
  snprintf(name, sizeof name, "%s/weights", group);
  if (!st) st = write_whole(o, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, cd, pt->weights, "1",
                            "interpolation weights of those cells (sum 1; 0 in unused slots)", NULL, err);
  hsize_t ud[2] = {(hsize_t)pt->n, 3};
  snprintf(name, sizeof name, "%s/coords_used", group);
  if (!st) st = write_whole(o, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, ud, pt->used, "m",
                            "the position the weights stand for, sum of w * x(cell): a nearest point's cell, a "
                            "trilinear point itself; x, y, z in metres, model coordinates", NULL, err);
  if (st || !per_point) return st ? st : attr_string(o, g, group, "interpolation", names[pt->interp[0] != 0], err);
  const char **v = malloc((size_t)pt->n * sizeof *v);
  if (!v) return tw_error_set(err, TW_ENOMEM, "output '%s': out of memory", o->path);
  for (long i = 0; i < pt->n; i++) v[i] = names[pt->interp[i] != 0];
  hid_t t = H5Tcopy(H5T_C_S1);
  snprintf(name, sizeof name, "%s/interpolation", group);
  if (t < 0 || H5Tset_size(t, H5T_VARIABLE) < 0 || H5Tset_cset(t, H5T_CSET_UTF8) < 0)
    st = h5fail(o, err, "dataset %s: string type failed", name);
  hsize_t nd = (hsize_t)pt->n;
  if (!st) st = write_whole(o, name, t, t, 1, &nd, v, "1", "\"nearest\" or \"trilinear\", per source", NULL, err);
  if (t >= 0) H5Tclose(t);
  free(v);
  return st;
}

static tw_status write_receivers(tw_output *o, const tw_output_desc *d, tw_error *err) {
  hid_t g = make_group(o, "/receivers", err);
  if (g < 0) return TW_EIO;
  tw_status st = attr_long(o, g, "/receivers", "count", d->nrec, err);
  if (!st && d->nrec > 0) {
    hsize_t cd[2] = {(hsize_t)d->nrec, 3};
    st = write_whole(o, "/receivers/coords", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, cd, d->rec, "m", coords_meaning,
                     NULL, err);
  }
  if (!st && d->nrec > 0) {
    hsize_t td[2] = {(hsize_t)d->nrec, (hsize_t)d->nsamples}, ch[2];
    trace_chunk(d->nrec, d->nsamples, ch);
    o->tchunk = (long)ch[1];
    o->traces = make_dataset(o, "/receivers/traces", H5T_IEEE_F32LE, 2, td, ch, H5T_NATIVE_FLOAT, NULL, err);
    if (o->traces < 0) st = TW_EIO;
    int interval = d->job->rec_interval > 0 ? d->job->rec_interval : 1;
    double sdt = interval * d->dt;
    if (!st) st = dataset_units(o, o->traces, "/receivers/traces", "Pa", p_meaning, err);
    if (!st) st = attr_doubles(o, o->traces, "/receivers/traces", "dt", 0, &sdt, err);
    if (!st) st = attr_ints(o, o->traces, "/receivers/traces", "interval", 0, &interval, err);
    if (!st && !(o->tbuf = malloc((size_t)d->nrec * (size_t)o->tchunk * sizeof(float))))
      st = tw_error_set(err, TW_ENOMEM, "output '%s': cannot allocate the trace buffer (%ld x %ld floats)", o->path,
                        d->nrec, o->tchunk);
  }
  if (!st && d->rec_at && d->rec_at->n == d->nrec) st = write_points(o, g, "/receivers", d->rec_at, 0, err);
  if (H5Gclose(g) < 0 && !st) st = h5fail(o, err, "group /receivers: close failed");
  return st;
}

static tw_status write_sources(tw_output *o, const tw_output_desc *d, tw_error *err) {
  hid_t g = make_group(o, "/sources", err);
  if (g < 0) return TW_EIO;
  tw_status st = attr_long(o, g, "/sources", "count", d->nsrc, err);
  if (!st && d->nsrc > 0) {
    hsize_t cd[2] = {(hsize_t)d->nsrc, 3};
    st = write_whole(o, "/sources/coords", H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 2, cd, d->src, "m", coords_meaning, NULL,
                     err);
  }
  if (!st && d->nsrc > 0 && d->wavelets) {
    hsize_t wd[2] = {(hsize_t)d->nsrc, (hsize_t)d->steps + 1};
    hid_t ds = H5I_INVALID_HID;
    st = write_whole(o, "/sources/wavelets", H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 2, wd, d->wavelets, "kg s-2",
                     "source strength s(t_n) of each source at t_n = n dt (n = 0 .. steps): in kg/s^2, density "
                     "times the rate of change of the injected volume flow; p (/receivers/traces) is in Pa for it",
                     &ds, err);
    if (!st) st = attr_doubles(o, ds, "/sources/wavelets", "dt", 0, &d->dt, err);
    if (ds >= 0 && H5Dclose(ds) < 0 && !st) st = h5fail(o, err, "dataset /sources/wavelets: close failed");
  }
  if (!st && d->src_at && d->src_at->n == d->nsrc) st = write_points(o, g, "/sources", d->src_at, 1, err);
  if (H5Gclose(g) < 0 && !st) st = h5fail(o, err, "group /sources: close failed");
  return st;
}

/* Chunk [c0][c1][c2] of a 3-D array [n0][n1][n2] (the file's order: n0 = nz, n2 = nx) of at most
 * 1 Mi floats (4 MiB): whole n0-planes when a plane fits (several of them up to the budget), else
 * rows of a plane, else pieces of a row. Snapshots and the model are written in slabs of whole
 * chunks, so chunks are written once, never read back. */
static void chunk3(const int n[3], hsize_t chunk[3]) {
  const hsize_t budget = (hsize_t)1 << 20;
  hsize_t n0 = (hsize_t)n[0], n1 = (hsize_t)n[1], n2 = (hsize_t)n[2];
  if (n2 >= budget) {
    chunk[0] = 1, chunk[1] = 1, chunk[2] = budget;
  } else if (n1 * n2 >= budget) {
    chunk[0] = 1, chunk[1] = budget / n2, chunk[2] = n2;
  } else {
    hsize_t c0 = budget / (n1 * n2);
    chunk[0] = c0 < n0 ? c0 : n0, chunk[1] = n1, chunk[2] = n2;
  }
}

/* [nz][ny][nx] of a model-order shape [nx][ny][nz]. */
static void zyx(const int n[3], int out[3]) { out[0] = n[2], out[1] = n[1], out[2] = n[0]; }

/* Write xyz [nx][ny][nz] (model order) into the 3-D selection [z][y][x] of ds that starts at
 * lead (the snapshot index for /snapshots/p; rank 4 then, else 3), kslab z-planes at a time
 * through o->slab (which must hold kslab planes). */
static tw_status write_zyx(tw_output *o, hid_t ds, const char *name, int rank, hsize_t lead, const float *xyz,
                           const int n[3], int kslab, tw_error *err) {
  tw_status st = TW_OK;
  hid_t fs = H5Dget_space(ds);
  if (fs < 0) return h5fail(o, err, "dataset %s: dataspace failed", name);
  for (int k0 = 0; !st && k0 < n[2]; k0 += kslab) {
    int kc = n[2] - k0 < kslab ? n[2] - k0 : kslab;
    tw_zyx_slab((float *)xyz, n, k0, kc, o->slab, 0);
    hsize_t off[4] = {lead, (hsize_t)k0, 0, 0}, cnt[4] = {1, (hsize_t)kc, (hsize_t)n[1], (hsize_t)n[0]};
    hsize_t *o3 = rank == 4 ? off : off + 1, *c3 = rank == 4 ? cnt : cnt + 1;
    hid_t ms = H5Screate_simple(rank, c3, NULL);
    if (ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, o3, NULL, c3, NULL) < 0)
      st = h5fail(o, err, "dataset %s: selecting z-slab [%d, %d) failed", name, k0, k0 + kc);
    else if (H5Dwrite(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, o->slab) < 0)
      st = h5fail(o, err, "dataset %s: writing z-slab [%d, %d) failed", name, k0, k0 + kc);
    if (ms >= 0) H5Sclose(ms);
  }
  H5Sclose(fs);
  return st;
}

/* o->slab holds at least `floats` values. */
static tw_status ensure_slab(tw_output *o, size_t floats, tw_error *err) {
  if (floats <= o->slab_cap) return TW_OK;
  free(o->slab); /* nothing to keep: every slab is filled before it is written */
  o->slab = NULL, o->slab_cap = 0;
  float *b = tw_alloc_large(floats * sizeof(float));
  if (!b) return tw_error_set(err, TW_ENOMEM, "output '%s': out of memory for a z-slab of %zu values", o->path, floats);
  o->slab = b;
  o->slab_cap = floats;
  return TW_OK;
}

static tw_status write_snapshot_layout(tw_output *o, const tw_output_desc *d, tw_error *err) {
  if (d->nsnap <= 0) return TW_OK;
  hid_t g = make_group(o, "/snapshots", err);
  if (g < 0) return TW_EIO;
  const tw_job *j = d->job;
  int dec = d->snap_dec > 0 ? d->snap_dec : 1;
  for (int a = 0; a < 3; a++) {
    o->snap_origin[a] = j->origin[a] + (double)d->snap_lo[a] * j->d[a];
    o->snap_spacing[a] = j->d[a] * dec;
  }
  memcpy(o->snap_lo, d->snap_lo, sizeof o->snap_lo);
  o->snap_dec = dec;
  const char *gn = "/snapshots";
  tw_status st = attr_long(o, g, gn, "count", d->nsnap, err);
  if (!st) st = attr_ints(o, g, gn, "decimate", 0, &dec, err);
  if (!st) st = attr_ints(o, g, gn, "first_cell", 3, d->snap_lo, err);
  if (!st) st = attr_doubles(o, g, gn, "origin", 3, o->snap_origin, err);
  if (!st) st = attr_doubles(o, g, gn, "spacing", 3, o->snap_spacing, err);
  if (H5Gclose(g) < 0 && !st) st = h5fail(o, err, "group /snapshots: close failed");
  if (st) return st;
  int fz[3];
  zyx(d->snap_n, fz);
  hsize_t pd[4] = {(hsize_t)d->nsnap, (hsize_t)fz[0], (hsize_t)fz[1], (hsize_t)fz[2]}, ch[4] = {1, 0, 0, 0};
  chunk3(fz, ch + 1);
  o->snap_p = make_dataset(o, "/snapshots/p", H5T_IEEE_F32LE, 4, pd, ch, H5T_NATIVE_FLOAT, NULL, err);
  if (o->snap_p < 0) return TW_EIO;
  st = dataset_units(o, o->snap_p, "/snapshots/p", "Pa", p_meaning, err);
  if (!st) st = attr_string(o, o->snap_p, "/snapshots/p", "axes", TW_SNAPSHOT_AXES, err);
  o->snap_slab_k = tw_zyx_slab_planes(d->snap_n, (int)ch[1]);
  if (!st) st = ensure_slab(o, (size_t)o->snap_slab_k * (size_t)d->snap_n[0] * (size_t)d->snap_n[1], err);
  if (st) return st;
  hsize_t nd = (hsize_t)d->nsnap;
  long long unset = -1;
  double nan_time = NAN;
  o->snap_steps = make_dataset(o, "/snapshots/steps", H5T_STD_I64LE, 1, &nd, NULL, H5T_NATIVE_LLONG, &unset, err);
  if (o->snap_steps < 0) return TW_EIO;
  o->snap_times = make_dataset(o, "/snapshots/times", H5T_IEEE_F64LE, 1, &nd, NULL, H5T_NATIVE_DOUBLE, &nan_time, err);
  if (o->snap_times < 0) return TW_EIO;
  st = dataset_units(o, o->snap_steps, "/snapshots/steps", "time steps", "-1: not written (the run stopped early)",
                     err);
  if (!st) st = dataset_units(o, o->snap_times, "/snapshots/times", "s", NULL, err);
  return st;
}

/* output.model: the velocity model, whole, as /model/vp [nz][ny][nx] (the order of the snapshots,
 * so that the sidecar can show it beside p). */
static tw_status write_model(tw_output *o, const tw_output_desc *d, tw_error *err) {
  if (!d->vp) return TW_OK;
  const tw_job *j = d->job;
  hid_t g = make_group(o, "/model", err);
  if (g < 0) return TW_EIO;
  if (H5Gclose(g) < 0) return h5fail(o, err, "group /model: close failed");
  int fz[3];
  zyx(j->n, fz);
  hsize_t dims[3] = {(hsize_t)fz[0], (hsize_t)fz[1], (hsize_t)fz[2]}, ch[3];
  chunk3(fz, ch);
  hid_t ds = make_dataset(o, "/model/vp", H5T_IEEE_F32LE, 3, dims, ch, H5T_NATIVE_FLOAT, NULL, err);
  if (ds < 0) return TW_EIO;
  const char *name = "/model/vp";
  tw_status st = dataset_units(o, ds, name, "m/s", "P-wave velocity of the model, cell (i, j, k) at origin + "
                               "(i dx, j dy, k dz); stored [nz][ny][nx] like the snapshots", err);
  if (!st) st = attr_string(o, ds, name, "axes", TW_MODEL_AXES, err);
  if (!st) st = attr_doubles(o, ds, name, "origin", 3, j->origin, err);
  if (!st) st = attr_doubles(o, ds, name, "spacing", 3, j->d, err);
  const int kslab = tw_zyx_slab_planes(j->n, (int)ch[0]);
  if (!st) st = ensure_slab(o, (size_t)kslab * (size_t)j->n[0] * (size_t)j->n[1], err);
  if (!st) st = write_zyx(o, ds, name, 3, 0, d->vp, j->n, kslab, err);
  if (H5Dclose(ds) < 0 && !st) st = h5fail(o, err, "dataset %s: close failed", name);
  if (!st) memcpy(o->model_n, j->n, sizeof o->model_n);
  return st;
}

/* ---------------------------------------------------------------- create */

static tw_status check_desc(const tw_output_desc *d, tw_error *err) {
  if (!d || !d->job || !d->path || !d->path[0])
    return tw_error_set(err, TW_EINVAL, "tw_output_create: missing job or output path");
  if (d->nrec < 0 || d->nsrc < 0 || d->nsnap < 0 || d->steps < 0 || (d->nrec > 0 && (!d->rec || d->nsamples < 1)) ||
      (d->nsrc > 0 && !d->src))
    return tw_error_set(err, TW_EINVAL, "output '%s': invalid description (nrec %ld, nsamples %ld, nsrc %d, steps %ld)",
                        d->path, d->nrec, d->nsamples, d->nsrc, d->steps);
  if (d->nsnap > 0 && (d->snap_n[0] < 1 || d->snap_n[1] < 1 || d->snap_n[2] < 1))
    return tw_error_set(err, TW_EINVAL, "output '%s': snapshot shape [%d][%d][%d] must be positive", d->path,
                        d->snap_n[0], d->snap_n[1], d->snap_n[2]);
  const int dec = d->snap_dec > 0 ? d->snap_dec : 1;
  for (int a = 0; d->vp && d->nsnap > 0 && a < 3; a++) /* the model's view reads the snapshot box */
    if (d->snap_lo[a] < 0 || d->snap_lo[a] + (long)(d->snap_n[a] - 1) * dec >= d->job->n[a])
      return tw_error_set(err, TW_EINVAL, "output '%s': snapshot box (first cell %d, %d cells every %d) outside the "
                          "model's %d cells on axis %d", d->path, d->snap_lo[a], d->snap_n[a], dec, d->job->n[a], a);
  struct stat sb;
  if (stat(d->path, &sb) == 0 && S_ISDIR(sb.st_mode))
    return tw_error_set(err, TW_EINVAL, "output '%s' is a directory", d->path);
  return TW_OK;
}

/* Where sources or receivers act: 12 B per tap cell, 8 per weight, 24 for the position used. */
static double points_bytes(const tw_points_at *pt) {
  return pt ? (double)pt->n * (20.0 * pt->taps + 24.0) : 0.0;
}

/* Values a chunked 3-D dataset of shape n (model order) allocates: HDF5 writes whole chunks. */
static double chunked3(const int n[3]) {
  int fz[3];
  zyx(n, fz);
  hsize_t c[3];
  chunk3(fz, c);
  double v = 1.0;
  for (int a = 0; a < 3; a++) v *= ceil((double)fz[a] / (double)c[a]) * (double)c[a];
  return v;
}

double tw_output_expected_bytes(const tw_output_desc *d) {
  /* every dataset rounded up to whole chunks (a trace chunk of 16384 receivers x 8 samples holds a
   * 9th sample in 16 columns: the estimate was 20 % short on 2e6 receivers over 8 steps) */
  double traces = 0.0;
  if (d->nrec > 0 && d->nsamples > 0) {
    hsize_t ch[2];
    trace_chunk(d->nrec, d->nsamples, ch);
    traces = ceil((double)d->nrec / (double)ch[0]) * (double)ch[0] * ceil((double)d->nsamples / (double)ch[1]) *
             (double)ch[1];
  }
  const double snap = d->nsnap > 0 ? (double)d->nsnap * chunked3(d->snap_n) : 0.0;
  const double model = d->vp ? chunked3(d->job->n) : 0.0;
  double values = traces + snap + model + (double)d->nsrc * (double)(d->steps + 1);
  /* output.segy: OUT.sgy beside it, 3600 bytes of headers and per trace 240 + its samples */
  if (d->job && d->job->output_segy) values += (3600.0 + (double)d->nrec * (240.0 + 4.0 * (double)d->nsamples)) / 4.0;
  double data = 4.0 * values + 24.0 * ((double)d->nrec + d->nsrc) + points_bytes(d->src_at) + points_bytes(d->rec_at);
  return data * 1.01 + (1 << 20);
}

/* Fail at the start, not hours into the run, when the file system obviously cannot hold the
 * result. Best effort (others may fill the disk meanwhile; the writes are checked anyway);
 * skipped where the file system reports no sizes. */
static tw_status check_space(const tw_output_desc *d, tw_error *err) {
  char *dir = strdup(d->path);
  if (!dir) return TW_OK;
  char *slash = strrchr(dir, '/');
  if (slash) slash[slash == dir ? 1 : 0] = '\0';
  struct statvfs sv;
  int ok = statvfs(slash ? dir : ".", &sv) == 0;
  free(dir);
  if (!ok || sv.f_blocks == 0) return TW_OK;
  double avail = (double)sv.f_bavail * (double)sv.f_frsize, need = tw_output_expected_bytes(d);
  if (need <= avail) return TW_OK;
  char nb[32], ab[32];
  return tw_error_set(err, TW_EIO, "output '%s': needs about %s, but only %s is free on that file system", d->path,
                      tw_format_bytes(need, nb, sizeof nb), tw_format_bytes(avail, ab, sizeof ab));
}

static tw_output *alloc_output(const tw_output_desc *d) {
  tw_output *o = calloc(1, sizeof *o);
  if (!o) return NULL;
  o->file = o->traces = o->snap_p = o->snap_steps = o->snap_times = H5I_INVALID_HID;
  o->tcol = -1;
  size_t len = strlen(d->path);
  o->path = malloc(len + 1);
  o->temp = tw_io_temp_name(d->path);
  if (d->nsnap > 0) o->snap_step = malloc((size_t)d->nsnap * sizeof(long));
  if (!o->path || !o->temp || (d->nsnap > 0 && !o->snap_step)) {
    free(o->path), free(o->temp), free(o->snap_step), free(o);
    return NULL;
  }
  memcpy(o->path, d->path, len + 1);
  for (int s = 0; s < d->nsnap; s++) o->snap_step[s] = -1;
  o->nrec = d->nrec, o->nsamples = d->nsamples, o->steps = d->steps, o->dt = d->dt, o->nsnap = d->nsnap;
  o->segy = d->job->output_segy;
  o->job = d->job, o->role = d->role;
  memcpy(o->snap_n, d->snap_n, sizeof o->snap_n);
  return o;
}

/* Create the temporary file. open(2) first: HDF5 hides errno, and "No such file or directory"
 * is what the user needs to read. */
static tw_status create_file(tw_output *o, tw_error *err) {
  int fd = open(o->temp, O_WRONLY | O_CREAT | O_TRUNC, 0666);
  if (fd < 0)
    return tw_error_set(err, TW_EIO, "output '%s': cannot create temporary file '%s': %s", o->path, o->temp,
                        strerror(errno));
  close(fd);
  /* STRONG: H5Fclose also closes anything still open, so an abort after a partial failure
   * really releases the file. */
  hid_t fapl = H5Pcreate(H5P_FILE_ACCESS);
  if (fapl < 0 || H5Pset_fclose_degree(fapl, H5F_CLOSE_STRONG) < 0) {
    if (fapl >= 0) H5Pclose(fapl);
    return h5fail(o, err, "file access properties failed");
  }
  o->file = H5Fcreate(o->temp, H5F_ACC_TRUNC, H5P_DEFAULT, fapl);
  H5Pclose(fapl);
  if (o->file < 0) return h5fail(o, err, "cannot create HDF5 file");
  return TW_OK;
}

tw_status tw_output_create(const tw_output_desc *desc, tw_output **out, tw_error *err) {
  if (!out) return tw_error_set(err, TW_EINVAL, "tw_output_create: NULL output pointer");
  *out = NULL;
  tw_status st = check_desc(desc, err);
  if (!st) st = check_space(desc, err);
  if (st) return st;
  tw_h5_quiet();
  tw_output *o = alloc_output(desc);
  if (!o) return tw_error_set(err, TW_ENOMEM, "output '%s': out of memory", desc->path);
  st = create_file(o, err);
  if (!st) st = write_root_attrs(o, desc, err);
  if (!st) st = write_receivers(o, desc, err);
  if (!st) st = write_sources(o, desc, err);
  if (!st) st = write_snapshot_layout(o, desc, err);
  if (!st) st = write_model(o, desc, err);
  if (st) {
    tw_output_abort(o);
    return st;
  }
  *out = o;
  return TW_OK;
}

/* ---------------------------------------------------------------- traces */

/* Hand the buffered samples [tlo, thi) of chunk column tcol to HDF5. */
static tw_status flush_traces(tw_output *o, tw_error *err) {
  if (o->tcol < 0 || o->thi <= o->tlo) {
    o->tcol = -1;
    return TW_OK;
  }
  long base = o->tcol * o->tchunk, count = o->thi - o->tlo;
  hsize_t mdims[2] = {(hsize_t)o->nrec, (hsize_t)o->tchunk};
  hsize_t moff[2] = {0, (hsize_t)(o->tlo - base)}, foff[2] = {0, (hsize_t)o->tlo};
  hsize_t cnt[2] = {(hsize_t)o->nrec, (hsize_t)count};
  hid_t ms = H5Screate_simple(2, mdims, NULL), fs = H5Dget_space(o->traces);
  tw_status st = TW_OK;
  if (ms < 0 || fs < 0 || H5Sselect_hyperslab(ms, H5S_SELECT_SET, moff, NULL, cnt, NULL) < 0 ||
      H5Sselect_hyperslab(fs, H5S_SELECT_SET, foff, NULL, cnt, NULL) < 0)
    st = h5fail(o, err, "dataset /receivers/traces: selecting samples [%ld, %ld) failed", o->tlo, o->thi);
  else if (H5Dwrite(o->traces, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, o->tbuf) < 0)
    st = h5fail(o, err, "dataset /receivers/traces: writing samples [%ld, %ld) failed", o->tlo, o->thi);
  if (ms >= 0) H5Sclose(ms);
  if (fs >= 0) H5Sclose(fs);
  o->tcol = -1;
  o->tlo = o->thi = 0;
  return st;
}

/* Copy samples [s, e) (within one chunk column) of the slab that starts at `first`. */
static void buffer_piece(tw_output *o, long first, long count, const float *traces, long s, long e) {
  long base = o->tcol * o->tchunk;
  for (long r = 0; r < o->nrec; r++)
    memcpy(o->tbuf + (size_t)r * (size_t)o->tchunk + (size_t)(s - base), traces + (size_t)r * (size_t)count + (size_t)(s - first),
           (size_t)(e - s) * sizeof(float));
}

tw_status tw_output_write_traces(tw_output *o, long first, long count, const float *traces, tw_error *err) {
  if (!o) return tw_error_set(err, TW_EINVAL, "tw_output_write_traces: NULL output");
  if (first < 0 || count < 0 || first > o->nsamples - count)
    return tw_error_set(err, TW_ERANGE, "output '%s': trace samples [%ld, %ld) outside [0, %ld)", o->path, first,
                        first + count, o->nsamples);
  if (o->failed) return tw_error_set(err, TW_EIO, "output '%s': an earlier write failed", o->path);
  if (o->nrec == 0 || count == 0) return TW_OK;
  if (!traces) return tw_error_set(err, TW_EINVAL, "tw_output_write_traces: NULL traces");
  for (long s = first; s < first + count;) {
    long col = s / o->tchunk;
    long col_end = (col + 1) * o->tchunk < o->nsamples ? (col + 1) * o->tchunk : o->nsamples;
    long e = first + count < col_end ? first + count : col_end;
    if (col != o->tcol || s != o->thi) { /* not a continuation of the buffered run */
      tw_status st = flush_traces(o, err);
      if (st) return st;
      o->tcol = col, o->tlo = o->thi = s;
    }
    buffer_piece(o, first, count, traces, s, e);
    o->thi = e;
    if (e == col_end) { /* chunk column complete */
      tw_status st = flush_traces(o, err);
      if (st) return st;
    }
    s = e;
  }
  return TW_OK;
}

/* ---------------------------------------------------------------- snapshots */

static tw_status write_one(tw_output *o, hid_t ds, const char *name, int isnap, hid_t mtype, const void *v,
                           tw_error *err) {
  hsize_t off = (hsize_t)isnap, one = 1;
  hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(1, &one, NULL);
  tw_status st = TW_OK;
  if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, &off, NULL, &one, NULL) < 0 ||
      H5Dwrite(ds, mtype, ms, fs, H5P_DEFAULT, v) < 0)
    st = h5fail(o, err, "dataset %s: writing element %d failed", name, isnap);
  if (fs >= 0) H5Sclose(fs);
  if (ms >= 0) H5Sclose(ms);
  return st;
}

tw_status tw_output_write_snapshot(tw_output *o, int isnap, long step, const float *data, tw_error *err) {
  if (!o || !data) return tw_error_set(err, TW_EINVAL, "tw_output_write_snapshot: NULL argument");
  tw_h5_quiet(); /* this thread's too: the run stores snapshots from a thread of its own (HDF5's
                    thread-safe build keeps the setting per thread) */
  if (isnap < 0 || isnap >= o->nsnap)
    return tw_error_set(err, TW_ERANGE, "output '%s': snapshot index %d outside [0, %d)", o->path, isnap, o->nsnap);
  if (step < 0 || step > o->steps)
    return tw_error_set(err, TW_ERANGE, "output '%s': snapshot step %ld outside [0, %ld]", o->path, step, o->steps);
  if (o->failed) return tw_error_set(err, TW_EIO, "output '%s': an earlier write failed", o->path);
  tw_status st = write_zyx(o, o->snap_p, "/snapshots/p", 4, (hsize_t)isnap, data, o->snap_n, o->snap_slab_k, err);
  long long st64 = step;
  double t = (double)step * o->dt;
  if (!st) st = write_one(o, o->snap_steps, "/snapshots/steps", isnap, H5T_NATIVE_LLONG, &st64, err);
  if (!st) st = write_one(o, o->snap_times, "/snapshots/times", isnap, H5T_NATIVE_DOUBLE, &t, err);
  if (!st) o->snap_step[isnap] = step;
  return st;
}

/* ---------------------------------------------------------------- root attributes */

static tw_status check_attr_args(const tw_output *o, const char *name, tw_error *err) {
  if (!o || !name || !name[0]) return tw_error_set(err, TW_EINVAL, "tw_output_set_attr: NULL output or empty name");
  if (o->file < 0) return tw_error_set(err, TW_EINVAL, "output '%s': file is not open", o->path);
  return TW_OK;
}

tw_status tw_output_set_attr_double(tw_output *o, const char *name, double v, tw_error *err) {
  tw_status st = check_attr_args(o, name, err);
  return st ? st : attr_doubles(o, o->file, "/", name, 0, &v, err);
}

tw_status tw_output_set_attr_string(tw_output *o, const char *name, const char *v, tw_error *err) {
  tw_status st = check_attr_args(o, name, err);
  return st ? st : attr_string(o, o->file, "/", name, v, err);
}

tw_status tw_output_set_attr_long(tw_output *o, const char *name, long v, tw_error *err) {
  tw_status st = check_attr_args(o, name, err);
  return st ? st : attr_long(o, o->file, "/", name, v, err);
}

tw_status tw_output_set_attr_doubles(tw_output *o, const char *name, int count, const double *v, tw_error *err) {
  tw_status st = check_attr_args(o, name, err);
  return st ? st : attr_doubles(o, o->file, "/", name, count, v, err);
}

/* ---------------------------------------------------------------- close / abort */

/* Virtual dataset `name` [nz][ny][nx] (snapshot shape) that reads the selection start/stride of
 * `src` (rank `rank`, dims sdims) in this same file ("."): no data of its own. */
static tw_status make_view(tw_output *o, const char *name, const char *src, int rank, const hsize_t *sdims,
                           const hsize_t *start, const hsize_t *stride, tw_error *err) {
  hsize_t vd[3] = {(hsize_t)o->snap_n[2], (hsize_t)o->snap_n[1], (hsize_t)o->snap_n[0]}, cnt[4] = {1, 1, 1, 1};
  memcpy(cnt + rank - 3, vd, sizeof vd);
  hid_t vs = H5Screate_simple(3, vd, NULL), ss = H5Screate_simple(rank, sdims, NULL);
  hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE), ds = H5I_INVALID_HID;
  tw_status st = TW_OK;
  if (vs < 0 || ss < 0 || dcpl < 0 || H5Sselect_hyperslab(ss, H5S_SELECT_SET, start, stride, cnt, NULL) < 0 ||
      H5Pset_virtual(dcpl, vs, ".", src, ss) < 0)
    st = h5fail(o, err, "dataset %s: virtual mapping onto %s failed", name, src);
  else if ((ds = H5Dcreate2(o->file, name, H5T_IEEE_F32LE, vs, H5P_DEFAULT, dcpl, H5P_DEFAULT)) < 0)
    st = h5fail(o, err, "dataset %s: create failed", name);
  if (!st) st = dataset_units(o, ds, name, strcmp(src, "/model/vp") ? "Pa" : "m/s", "a view of one snapshot (or of "
                              "the model on the snapshot grid) for ParaView: the data lives in the dataset named by "
                              "this view's mapping", err);
  if (ds >= 0 && H5Dclose(ds) < 0 && !st) st = h5fail(o, err, "dataset %s: close failed", name);
  if (dcpl >= 0) H5Pclose(dcpl);
  if (vs >= 0) H5Sclose(vs);
  if (ss >= 0) H5Sclose(ss);
  return st;
}

/* /snapshots/views: one view per written snapshot, and the model on the snapshot grid when it is
 * stored. ParaView's Xdmf3 readers read a plain dataset reference but not an XDMF hyperslab
 * ("Skipping unrecognized array type [None]"), so the sidecar names these. */
static tw_status write_views(tw_output *o, tw_error *err) {
  int any = 0;
  for (int s = 0; s < o->nsnap; s++) any |= o->snap_step[s] >= 0;
  if (!any) return TW_OK;
  hid_t g = make_group(o, TW_VIEWS, err);
  if (g < 0) return TW_EIO;
  if (H5Gclose(g) < 0) return h5fail(o, err, "group %s: close failed", TW_VIEWS);
  hsize_t pd[4] = {(hsize_t)o->nsnap, (hsize_t)o->snap_n[2], (hsize_t)o->snap_n[1], (hsize_t)o->snap_n[0]};
  tw_status st = TW_OK;
  char name[96];
  for (int s = 0; !st && s < o->nsnap; s++) {
    if (o->snap_step[s] < 0) continue;
    hsize_t start[4] = {(hsize_t)s, 0, 0, 0};
    tw_view_name(name, sizeof name, o->snap_step[s]);
    st = make_view(o, name, "/snapshots/p", 4, pd, start, NULL, err);
  }
  if (!st && o->model_n[0]) {
    hsize_t md[3] = {(hsize_t)o->model_n[2], (hsize_t)o->model_n[1], (hsize_t)o->model_n[0]};
    hsize_t start[3] = {(hsize_t)o->snap_lo[2], (hsize_t)o->snap_lo[1], (hsize_t)o->snap_lo[0]};
    hsize_t stride[3] = {(hsize_t)o->snap_dec, (hsize_t)o->snap_dec, (hsize_t)o->snap_dec};
    st = make_view(o, TW_VIEWS "/vp", "/model/vp", 3, md, start, stride, err);
  }
  return st;
}

/* Flush everything while every object is still open, then close. The order matters: with a full
 * disk the failure often shows only when cached chunks and metadata are written, and HDF5 1.10
 * cannot recover from a failed H5Dclose/H5Fclose (the file id is left pointing at freed memory
 * and the library crashes at exit). A failed flush leaves everything open, so the abort path
 * (discard_storage, then close) can still release it cleanly. Then fsync, so that the rename
 * publishes data that is really on disk. */
static tw_status finish_file(tw_output *o, tw_error *err) {
  hid_t *ids[4] = {&o->traces, &o->snap_p, &o->snap_steps, &o->snap_times};
  const char *names[4] = {"/receivers/traces", "/snapshots/p", "/snapshots/steps", "/snapshots/times"};
  tw_status st = write_views(o, err);
  if (st) return st;
  for (int i = 0; i < 4; i++)
    if (*ids[i] >= 0 && H5Dflush(*ids[i]) < 0) return h5fail(o, err, "dataset %s: flush failed", names[i]);
  if (H5Fflush(o->file, H5F_SCOPE_GLOBAL) < 0) return h5fail(o, err, "flush failed");
  for (int i = 0; i < 4; i++) {
    if (*ids[i] < 0) continue;
    herr_t r = H5Dclose(*ids[i]);
    *ids[i] = H5I_INVALID_HID; /* H5Dclose releases the id even when it fails */
    if (r < 0) return h5fail(o, err, "dataset %s: close failed", names[i]);
  }
  herr_t r = H5Fclose(o->file);
  o->file = H5I_INVALID_HID; /* after a failure the id cannot be used again (see above) */
  if (r < 0) return h5fail(o, err, "close failed");
  return tw_io_fsync(o->temp, err);
}

tw_status tw_io_fsync(const char *path, tw_error *err) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return tw_error_set(err, TW_EIO, "output '%s': cannot reopen for fsync: %s", path, strerror(errno));
  int rc = fsync(fd), e = errno;
  close(fd);
  if (rc != 0 && e != EINVAL && e != EROFS) /* EINVAL/EROFS: no fsync on this file system */
    return tw_error_set(err, TW_EIO, "output '%s': fsync failed: %s", path, strerror(e));
  return TW_OK;
}

/* rename(2) is atomic: the final name is either the old file (or absent) or the complete one. */
static tw_status publish(tw_output *o, tw_error *err) { return tw_io_publish(o->temp, o->path, err); }

char *tw_io_temp_name(const char *path) {
  char *t = malloc(strlen(path) + 32);
  if (t) sprintf(t, "%s.part-%ld", path, (long)getpid());
  return t;
}

tw_status tw_io_publish(const char *temp, const char *path, tw_error *err) {
  if (rename(temp, path) != 0)
    return tw_error_set(err, TW_EIO, "output: cannot rename '%s' to '%s': %s", temp, path, strerror(errno));
  /* Make the rename itself durable; best effort (not every file system allows it). */
  char *dir = strdup(path);
  if (dir) {
    char *slash = strrchr(dir, '/');
    if (slash) slash[slash == dir ? 1 : 0] = '\0'; /* "/x.h5" → "/", "a/x.h5" → "a" */
    int fd = open(slash ? dir : ".", O_RDONLY);
    if (fd >= 0) {
      fsync(fd);
      close(fd);
    }
    free(dir);
  }
  return TW_OK;
}

/* The XDMF sidecar lists the snapshots that were written; none written → no sidecar. It describes
 * the .h5 named h5path (o->path, or a refused result's kept name) and is written to the output's
 * "<sidecar>.part-<pid>" (*temp, malloc'd) before the .h5 is published; NULL when none. */
static tw_status sidecar_prepare(tw_output *o, const char *h5path, char **temp, tw_error *err) {
  *temp = NULL;
  int count = 0;
  for (int s = 0; s < o->nsnap; s++) count += o->snap_step[s] >= 0;
  if (count == 0) return TW_OK;
  char *xpath = tw_xdmf_path(o->path);
  long *step = malloc((size_t)count * sizeof *step);
  double *time = malloc((size_t)count * sizeof *time);
  char *t = xpath ? tw_io_temp_name(xpath) : NULL;
  tw_status st = TW_OK;
  if (!step || !time || !t) {
    st = tw_error_set(err, TW_ENOMEM, "output '%s': out of memory writing the XDMF sidecar", o->path);
  } else {
    int c = 0;
    for (int s = 0; s < o->nsnap; s++)
      if (o->snap_step[s] >= 0) step[c] = o->snap_step[s], time[c] = (double)o->snap_step[s] * o->dt, c++;
    tw_xdmf_desc xd = {h5path,
                       {o->snap_n[0], o->snap_n[1], o->snap_n[2]},
                       {o->snap_origin[0], o->snap_origin[1], o->snap_origin[2]},
                       {o->snap_spacing[0], o->snap_spacing[1], o->snap_spacing[2]},
                       count,
                       step,
                       time,
                       o->model_n[0] > 0,
                       t};
    st = tw_xdmf_write(&xd, err);
  }
  if (!st) *temp = t;
  else free(t);
  free(step), free(time), free(xpath);
  return st;
}

/* Publish the pair so that no reader ever sees a sidecar that belongs to another .h5: the new
 * sidecar is complete under its temporary name first; then the old sidecar goes (one of ours
 * only, when this run has none), the .h5 is renamed into place, and the new sidecar after it.
 * In between, a reader sees an .h5 without a sidecar, never a mismatched pair. (Other torrewave
 * runs cannot interleave: the run holds the output's lock, outpath.c.) A sidecar that could not
 * be written does not hold back the .h5: it is published, and the error says so. */
static tw_status publish_pair(tw_output *o, tw_error *err) {
  char *xtemp = NULL;
  tw_error xerr = {0};
  const tw_status xst = sidecar_prepare(o, o->path, &xtemp, &xerr);
  char *xpath = tw_xdmf_path(o->path);
  if (xpath && (xst || !xtemp)) tw_xdmf_remove_stale(o->path);
  else if (xpath) unlink(xpath);
  tw_status st = publish(o, err);
  if (st) {
    if (xtemp) unlink(xtemp);
  } else if (xst) {
    *err = xerr;
    st = tw_error_prefix(err, "output '%s' is complete, but its XDMF sidecar is not", o->path);
  } else if (xtemp && xpath && rename(xtemp, xpath) != 0) {
    st = tw_error_set(err, TW_EIO, "output '%s' is complete, but its XDMF sidecar is not: cannot rename '%s' to "
                      "'%s': %s", o->path, xtemp, xpath, strerror(errno));
    unlink(xtemp);
  }
  free(xtemp);
  free(xpath);
  return st;
}

/* output.segy: the traces as SEG-Y beside the HDF5 (read back from the published file, so that
 * `torrewave export` and the run write the same bytes); without it, a stale SEG-Y file of ours
 * under that name goes. */
static tw_status write_segy(tw_output *o, tw_error *err) {
  if (!o->segy) {
    tw_segy_remove_stale(o->path);
    return TW_OK;
  }
  char *path = tw_segy_path(o->path);
  tw_status st = path ? tw_segy_export(o->path, path, err)
                      : tw_error_set(err, TW_ENOMEM, "output '%s': out of memory", o->path);
  if (st) {
    tw_segy_remove_stale(o->path);
    tw_error_prefix(err, "output '%s' is complete, but its SEG-Y file is not", o->path);
  }
  free(path);
  return st;
}

/* ---------------------------------------------------------------- a refused result, kept */

/* The file at `from` under the new name `to`, never replacing what is there: link(2) refuses a name
 * that exists (then `from` goes; should that fail, the file has both names, kept all the same); a
 * file system without hard links gets rename(2), lstat having found the name free a moment before.
 * 0, or −1 with errno (EEXIST: the name is taken). */
static int move_to_new(const char *from, const char *to) {
  if (link(from, to) == 0) {
    unlink(from);
    return 0;
  }
  if (errno == EEXIST) return -1;
  struct stat ls;
  if (lstat(to, &ls) == 0) {
    errno = EEXIST;
    return -1;
  }
  return rename(from, to);
}

/* The name a refused result is kept under, beside the output: "<stem>.kept-<pid><ext>" for
 * "<stem><ext>" (tw_sibling_path's stem and HDF5 extension: "o.h5" -> "o.kept-123.h5"); its sidecar
 * and SEG-Y file are named after it as always ("o.kept-123.xdmf", "o.kept-123.sgy"), so that the
 * sidecar, which names its .h5 by its base name, and `torrewave export` go with it. No clean-up
 * removes such a name: they remove "<name>.part-<pid>" and "<name>.check-<pid>" of an output's own
 * names only (outpath.c: tw_output_stale; survey/plan.c). n > 1, for a pid that recurs while an
 * earlier result of its number is still kept: "<stem>.kept-<pid>-<n>", n up to 9, so that each
 * name stays within what outpath.c's check_name allows an output's derived names (".kept-", 7
 * digits, "-9", ".xdmf": 20 characters). malloc'd; NULL when out of memory. */
static char *kept_name(const char *path, int n) {
  char *stem = tw_sibling_path(path, "");
  char *k = stem ? malloc(strlen(path) + 40) : NULL;
  if (k && n > 1) sprintf(k, "%s.kept-%ld-%d%s", stem, (long)getpid(), n, path + strlen(stem));
  else if (k) sprintf(k, "%s.kept-%ld%s", stem, (long)getpid(), path + strlen(stem));
  free(stem);
  return k;
}

/* A complete result whose names were refused at close: the .h5 (o->temp, closed) moved to the first
 * kept name whose .h5, sidecar and SEG-Y names are all free, and, as publishing would have, its
 * XDMF sidecar (snapshots written) and, with output.segy, its SEG-Y file written for that name
 * (the sidecar through the output's own temporary, the SEG-Y file as `torrewave export` writes it).
 * Returns the kept .h5's name (malloc'd) with what became of the others in side[] (", its XDMF
 * sidecar as '...'", ", without its SEG-Y file (why)") and *kept_sidecar, *kept_segy (kept), or NULL
 * with errno when the .h5 could not be moved: it stays as o->temp. */
static char *keep_result(tw_output *o, char *side, size_t len, int *kept_sidecar, int *kept_segy) {
  char *h5 = NULL, *xdmf = NULL, *sgy = NULL;
  int moved = 0, e = 0;
  side[0] = '\0';
  for (int n = 1; n <= 9 && !moved; n++) {
    free(h5), free(xdmf), free(sgy);
    h5 = kept_name(o->path, n);
    xdmf = h5 ? tw_xdmf_path(h5) : NULL;
    sgy = h5 ? tw_segy_path(h5) : NULL;
    struct stat ls;
    if (!xdmf || !sgy) e = ENOMEM;
    else if (lstat(h5, &ls) == 0 || lstat(xdmf, &ls) == 0 || lstat(sgy, &ls) == 0) e = EEXIST; /* an earlier one's */
    else if (!(moved = move_to_new(o->temp, h5) == 0)) e = errno;
    if (e != EEXIST && !moved) break;
  }
  char *xtemp = NULL;
  tw_error xe = {0};
  size_t l = 0;
  *kept_sidecar = *kept_segy = 0;
  if (moved && sidecar_prepare(o, h5, &xtemp, &xe))
    l += (size_t)snprintf(side + l, len - l, ", without its XDMF sidecar (%.400s)", xe.msg);
  else if (xtemp && move_to_new(xtemp, xdmf) != 0)
    l += (size_t)snprintf(side + l, len - l, ", without its XDMF sidecar (cannot name it '%s': %s)",
                          tw_base_of(xdmf), strerror(errno));
  else if (xtemp)
    l += (size_t)snprintf(side + l, len - l, ", its XDMF sidecar as '%s'", tw_base_of(xdmf)), *kept_sidecar = 1;
  if (xtemp) unlink(xtemp); /* (moved: gone already; else a temporary of no use) */
  /* Its SEG-Y file through the output's own SEG-Y temporary too, then to its name: the kept name's
   * own temporary, "<kept>.sgy.part-<pid>", is up to 32 characters longer than the output's name,
   * more than the 20 its check allows for (outpath.c: check_name), so a name near the file system's
   * limit kept the result without it. */
  tw_error se = {0};
  char *own = moved && o->segy ? tw_segy_path(o->path) : NULL, *stemp = own ? tw_io_temp_name(own) : NULL;
  tw_status sst = TW_OK;
  if (moved && o->segy && !stemp) {
    sst = tw_error_set(&se, TW_ENOMEM, "out of memory");
  } else if (stemp && !(sst = tw_segy_export_via(h5, sgy, stemp, &se)) && move_to_new(stemp, sgy) != 0) {
    sst = tw_error_set(&se, TW_EIO, "cannot name it '%s': %s", tw_base_of(sgy), strerror(errno));
    unlink(stemp);
  }
  if (moved && o->segy && l < len && sst)
    snprintf(side + l, len - l, ", without its SEG-Y file (%.400s; `torrewave export` writes it from the kept file)",
             se.msg);
  else if (moved && o->segy && l < len)
    snprintf(side + l, len - l, ", its SEG-Y file as '%s'", tw_base_of(sgy));
  *kept_segy = moved && o->segy && !sst;
  free(xtemp), free(xdmf), free(sgy), free(own), free(stemp);
  if (!moved) free(h5), errno = e;
  return moved ? h5 : NULL;
}

static void free_output(tw_output *o) {
  free(o->tbuf);
  free(o->slab);
  free(o->snap_step);
  free(o->path);
  free(o->temp);
  free(o);
}

tw_status tw_output_close_kept(tw_output *o, int *kept_whole, tw_error *err) {
  if (kept_whole) *kept_whole = 0;
  if (!o) return tw_error_set(err, TW_EINVAL, "tw_output_close: NULL output");
  tw_status st = o->failed ? tw_error_set(err, TW_EIO, "output '%s': an earlier write failed; nothing was written "
                                                       "under this name",
                                          o->path)
                           : flush_traces(o, err);
  if (!st) st = finish_file(o, err);
  if (st) {
    tw_output_abort(o);
    return st;
  }
  /* The names under the start's rules again, before anything is renamed or removed (the old SEG-Y
   * file, the old sidecar): what came under one while the run computed (a folder, a link, a FIFO,
   * one of the job's inputs) stays, and the complete result is kept under names of its own, which
   * no later run removes (its temporary's would be: the next run onto the output removes it as a
   * killed run's). */
  char refused[TW_ERROR_MSG];
  if ((st = tw_output_check_publish(o->path, o->job, o->role, refused, sizeof refused, err))) {
    char why[TW_ERROR_MSG], side[TW_ERROR_MSG];
    snprintf(why, sizeof why, "%s", err->msg);
    int sidecar = 0, segy = 0;
    char *kept = keep_result(o, side, sizeof side, &sidecar, &segy);
    /* Where the result is comes first, its files by their base names (they lie beside the output,
     * whose folder the message names once), then what to do: the result is complete, so what is in
     * the way goes and the kept files take the output's names, their own without the part kept_name
     * put in (a rerun, or --resume from its checkpoint, would compute it again; the sidecar names its
     * .h5 in its text); the reason last, cut to what is left once room is kept for what the caller
     * appends (where the result could not be kept: the checkpoint, named after the output): a
     * message has a fixed size, and a cluster's folders are long (names near the limit: six of them
     * and the reason fit). */
    char head[TW_ERROR_MSG], then[320]; /* (a base name and the words) */
    char *stem = kept ? tw_sibling_path(o->path, "") : NULL; /* kept: stem, ".kept-<pid>[-n]", extension */
    if (kept && !(sidecar || segy))
      snprintf(then, sizeof then, "rename it to '%s'", tw_base_of(o->path));
    else if (stem)
      snprintf(then, sizeof then, "take '%.*s' out of the kept files' names%s", (int)(strlen(kept) - strlen(o->path)),
               kept + strlen(stem), sidecar ? " (and out of the .h5's name in the sidecar's text)" : "");
    else
      snprintf(then, sizeof then, "rename them to the output's names");
    free(stem);
    if (kept)
      snprintf(head, sizeof head, "output '%s': the run is complete, but nothing was published: the result is kept "
               "beside it as '%s'%s (no later run removes what is kept); to put it in place, remove or rename '%s', "
               "then %s; its names no longer pass the start's check (something came under them while it ran): ",
               o->path, tw_base_of(kept), side, tw_base_of(refused[0] ? refused : o->path), then);
    else
      snprintf(head, sizeof head, "output '%s': the run is complete, but nothing was published: the result stays as "
               "'%s' (it could not be kept under a name of its own: %s; move it where you want it: the next run "
               "onto '%s' removes it as a killed run's temporary); its names no longer pass the start's check "
               "(something came under them while it ran): ", o->path, tw_base_of(o->temp), strerror(errno),
               tw_base_of(o->path));
    const int room = (int)sizeof head - (int)strlen(head) - (kept ? 0 : (int)strlen(o->path) + 160);
    tw_error_set(err, st, "%s%.*s", head, room > 80 ? room : 80, why);
    if (kept_whole) *kept_whole = kept != NULL;
    free(kept);
    free_output(o); /* (the file is closed: free_output leaves it) */
    return st;
  }
  /* With output.segy, the old SEG-Y file goes before the new .h5 comes: a run stopped between the two
   * leaves an .h5 without a SEG-Y file (a survey reruns that shot), never an .h5 beside an earlier
   * run's SEG-Y file (export rewrites it from either .h5). TW_OUTPUT_CRASH_BEFORE_SEGY (a test hook):
   * the process kills itself there. */
  if (o->segy) {
    char *sgy = tw_segy_path(o->path);
    if (sgy) unlink(sgy);
    free(sgy);
  }
  st = publish_pair(o, err);
  if (st && tw_output_exists(o->temp)) { /* the .h5 itself was not published */
    tw_output_abort(o);
    return st;
  }
  const char *crash = getenv("TW_OUTPUT_CRASH_BEFORE_SEGY");
  if (o->segy && crash && *crash == '1') raise(SIGKILL);
  tw_error e2 = {0};
  tw_status st2 = write_segy(o, st ? &e2 : err); /* the first error is the one reported */
  if (!st) st = st2;
  free_output(o);
  return st;
}

tw_status tw_output_close(tw_output *o, tw_error *err) { return tw_output_close_kept(o, NULL, err); }

/* The file is being thrown away: point HDF5's descriptor at an in-memory file (memfd; else
 * /dev/null) so that the writes HDF5 makes while closing cannot fail for lack of disk space —
 * a failed close would leave a dangling id that crashes HDF5 1.10 at exit. Only for the default
 * (sec2) driver, whose handle is the file descriptor. */
static void discard_storage(hid_t file) {
  hid_t fapl = H5Fget_access_plist(file);
  int *fdp = NULL;
  if (fapl >= 0 && H5Pget_driver(fapl) == H5FD_SEC2 && H5Fget_vfd_handle(file, fapl, (void **)&fdp) >= 0 && fdp &&
      *fdp >= 0) {
    int sink = -1;
#if defined(__linux__) && defined(MFD_CLOEXEC)
    sink = memfd_create("torrewave-discarded-output", MFD_CLOEXEC); /* supports ftruncate, unlike /dev/null */
#endif
    if (sink < 0) sink = open("/dev/null", O_RDWR);
    if (sink >= 0) {
      dup2(sink, *fdp);
      close(sink);
    }
  }
  if (fapl >= 0) H5Pclose(fapl);
}

void tw_output_abort(tw_output *o) {
  if (!o) return;
  if (o->file >= 0) discard_storage(o->file);
  close_id(&o->traces, H5Dclose);
  close_id(&o->snap_p, H5Dclose);
  close_id(&o->snap_steps, H5Dclose);
  close_id(&o->snap_times, H5Dclose);
  close_id(&o->file, H5Fclose);
  unlink(o->temp);
  free_output(o);
}

const char *tw_output_temp_path(const tw_output *o) { return o ? o->temp : NULL; }

int tw_h5_read_zyx(hid_t ds, int rank, hsize_t lead, const int n[3], float *xyz) {
  const size_t plane = (size_t)n[0] * (size_t)n[1];
  const int kc = tw_zyx_slab_planes(n, 1);
  float *slab = malloc((size_t)kc * plane * sizeof(float));
  if (!slab) return -2;
  hid_t fs = H5Dget_space(ds), es = H5I_INVALID_HID;
  int rc = fs < 0 ? -1 : 0;
  for (int k0 = 0; !rc && k0 < n[2]; k0 += kc) {
    const int k = n[2] - k0 < kc ? n[2] - k0 : kc;
    hsize_t off[4] = {lead, (hsize_t)k0, 0, 0}, cnt[4] = {1, (hsize_t)k, (hsize_t)n[1], (hsize_t)n[0]};
    hsize_t *o3 = rank == 4 ? off : off + 1, *c3 = rank == 4 ? cnt : cnt + 1;
    hid_t ms = H5Screate_simple(rank, c3, NULL);
    if (ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, o3, NULL, c3, NULL) < 0 ||
        H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, slab) < 0)
      rc = -1;
    else
      tw_zyx_slab(xyz, n, k0, k, slab, 1);
    if (rc) es = H5Eget_current_stack(); /* the reason, kept past the closes (each clears the stack) */
    if (ms >= 0) H5Sclose(ms);
  }
  if (fs >= 0) H5Sclose(fs);
  if (es >= 0) H5Eset_current_stack(es); /* for tw_h5_reason; closes es */
  free(slab);
  return rc;
}

void tw_zyx_slab(float *xyz, const int n[3], int k0, int kc, float *slab, int to_xyz) {
  enum { TI = 64, TQ = 64 };
  const long nx = n[0], ny = n[1], nz = n[2], plane = nx * ny;
#pragma omp parallel for schedule(static) if (plane * kc >= (1L << 20))
  for (long j = 0; j < ny; j++) {
    float tmp[TI][TQ];
    for (long i0 = 0; i0 < nx; i0 += TI)
      for (int q0 = 0; q0 < kc; q0 += TQ) {
        const int ni = nx - i0 < TI ? (int)(nx - i0) : TI, nq = kc - q0 < TQ ? kc - q0 : TQ;
        float *a = xyz + (i0 * ny + j) * nz + k0 + q0, *b = slab + q0 * plane + j * nx + i0;
        if (to_xyz) {
          for (int q = 0; q < nq; q++)
            for (int ii = 0; ii < ni; ii++) tmp[ii][q] = b[q * plane + ii];
          for (int ii = 0; ii < ni; ii++) memcpy(a + ii * ny * nz, tmp[ii], (size_t)nq * sizeof(float));
        } else {
          for (int ii = 0; ii < ni; ii++) memcpy(tmp[ii], a + ii * ny * nz, (size_t)nq * sizeof(float));
          for (int q = 0; q < nq; q++)
            for (int ii = 0; ii < ni; ii++) b[q * plane + ii] = tmp[ii][q];
        }
      }
  }
}

int tw_zyx_slab_planes(const int n[3], int multiple) {
  const size_t plane = (size_t)n[0] * (size_t)n[1] * sizeof(float);
  size_t k = TW_ZYX_SLAB_BYTES / plane;
  if (k > (size_t)n[2]) k = (size_t)n[2];
  if (multiple < 1) multiple = 1;
  k = k / (size_t)multiple * (size_t)multiple;
  return k > (size_t)multiple ? (int)k : multiple;
}

int tw_io_threadsafe(void) {
  hbool_t ts = 0;
  return H5is_library_threadsafe(&ts) >= 0 && ts;
}
