/* result.c — reading a result file back (compare, reference runs, tests).
 *
 * Everything small is read at open: root attributes, receiver coordinates, the full traces,
 * snapshot steps/times/shape. Snapshots themselves are read on demand (the file is reopened for
 * each: tw_result holds no HDF5 handle, so it stays a plain struct that may be copied).
 *
 * Files may come from other tools: numeric data is converted by HDF5 to the native type we
 * want (any integer/float width), strings may be fixed-length or variable-length, and every
 * missing piece is reported by name with the file. A group with a "count" attribute of 0 (our
 * files with no receivers) needs no datasets; /snapshots may be absent (no snapshots). */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"

typedef struct {
  const char *path;
  hid_t file;
  tw_error *err;
} rctx;

static tw_status h5err(const rctx *c, tw_status code, const char *what) {
  char why[512];
  tw_h5_reason(why, sizeof why);
  return tw_error_set(c->err, code, "result '%s': %s%s%s", c->path, what, why[0] ? ": " : "", why);
}

static tw_status missing(const rctx *c, const char *kind, const char *name) {
  return tw_error_set(c->err, TW_EFORMAT, "result '%s': %s '%s' is missing (not a torrewave result file?)", c->path,
                      kind, name);
}

/* ---------------------------------------------------------------- attributes */

/* Numeric attribute `name` of obj into out[n] (converted to mtype by HDF5). Must hold exactly n
 * values. required = 0: absent leaves out untouched and returns OK. */
static tw_status read_attr(const rctx *c, hid_t obj, const char *objname, const char *name, hid_t mtype, int n,
                           void *out, int required) {
  char what[400];
  htri_t ex = H5Aexists(obj, name);
  if (ex < 0) {
    snprintf(what, sizeof what, "attribute '%s' of %s: query failed", name, objname);
    return h5err(c, TW_EIO, what);
  }
  if (ex == 0) {
    if (!required) return TW_OK;
    snprintf(what, sizeof what, "%s attribute", objname);
    return missing(c, what, name);
  }
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
  hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  tw_status st = TW_OK;
  snprintf(what, sizeof what, "attribute '%s' of %s: read failed", name, objname);
  if (a < 0 || sp < 0)
    st = h5err(c, TW_EIO, what);
  else if (np != n)
    st = tw_error_set(c->err, TW_EFORMAT, "result '%s': attribute '%s' of %s holds %lld values, expected %d", c->path,
                      name, objname, (long long)np, n);
  else if (H5Aread(a, mtype, out) < 0)
    st = h5err(c, TW_EFORMAT, what);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  return st;
}

/* Scalar string attribute (fixed or variable length) → malloc'd copy; absent → "". */
static tw_status read_attr_string(const rctx *c, hid_t obj, const char *name, char **out) {
  *out = NULL;
  char what[300];
  snprintf(what, sizeof what, "string attribute '%s' of /: read failed", name);
  htri_t ex = H5Aexists(obj, name);
  if (ex < 0) return h5err(c, TW_EIO, what);
  if (ex == 0) return (*out = strdup("")) ? TW_OK : tw_error_set(c->err, TW_ENOMEM, "result: out of memory");
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT);
  hid_t ft = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
  hid_t mt = H5Tcopy(H5T_C_S1);
  tw_status st = TW_OK;
  if (a < 0 || ft < 0 || mt < 0) {
    st = h5err(c, TW_EIO, what);
  } else if (H5Tget_class(ft) != H5T_STRING) {
    st = tw_error_set(c->err, TW_EFORMAT, "result '%s': attribute '%s' of / is not a string", c->path, name);
  } else if (H5Tis_variable_str(ft) > 0) {
    char *s = NULL;
    if (H5Tset_size(mt, H5T_VARIABLE) < 0 || H5Tset_cset(mt, H5Tget_cset(ft)) < 0 || H5Aread(a, mt, &s) < 0)
      st = h5err(c, TW_EFORMAT, what);
    else if (!(*out = strdup(s ? s : "")))
      st = tw_error_set(c->err, TW_ENOMEM, "result: out of memory");
    if (s) H5free_memory(s);
  } else {
    size_t size = H5Tget_size(ft);
    char *buf = malloc(size + 1);
    if (!buf)
      st = tw_error_set(c->err, TW_ENOMEM, "result: out of memory");
    else if (H5Tset_size(mt, size + 1) < 0 || H5Tset_strpad(mt, H5T_STR_NULLTERM) < 0 || H5Aread(a, mt, buf) < 0)
      st = h5err(c, TW_EFORMAT, what);
    if (st)
      free(buf);
    else
      buf[size] = '\0', *out = buf;
  }
  if (mt >= 0) H5Tclose(mt);
  if (ft >= 0) H5Tclose(ft);
  if (a >= 0) H5Aclose(a);
  return st;
}

static tw_status read_root(const rctx *c, tw_result *r) {
  hid_t f = c->file;
  long long steps = 0;
  tw_status st = read_attr_string(c, f, "kernel", &r->kernel);
  if (!st) st = read_attr_string(c, f, "job", &r->job_text);
  if (!st) st = read_attr_string(c, f, "job_file", &r->job_file);
  if (!st) st = read_attr_string(c, f, "version", &r->version);
  long long shot = 0;
  if (!st) st = read_attr(c, f, "/", "shot", H5T_NATIVE_LLONG, 1, &shot, 0);
  r->shot = (long)shot;
  if (!st) st = read_attr(c, f, "/", "n", H5T_NATIVE_INT, 3, r->n, 1);
  if (!st) st = read_attr(c, f, "/", "d", H5T_NATIVE_DOUBLE, 3, r->d, 1);
  if (!st) st = read_attr(c, f, "/", "origin", H5T_NATIVE_DOUBLE, 3, r->origin, 1);
  if (!st) st = read_attr(c, f, "/", "dt", H5T_NATIVE_DOUBLE, 1, &r->dt, 1);
  if (!st) st = read_attr(c, f, "/", "steps", H5T_NATIVE_LLONG, 1, &steps, 1);
  if (!st) st = read_attr(c, f, "/", "order", H5T_NATIVE_INT, 1, &r->order, 1);
  r->steps = (long)steps;
  return st;
}

/* ---------------------------------------------------------------- datasets */

/* Open dataset `name`, check its rank, return its dims. Missing → named error. */
static hid_t open_dataset(const rctx *c, const char *name, int rank, hsize_t *dims) {
  int ex = tw_h5_path_exists(c->file, name);
  if (ex <= 0) {
    if (ex < 0)
      h5err(c, TW_EIO, "link query failed");
    else
      missing(c, "dataset", name);
    return H5I_INVALID_HID;
  }
  char what[300];
  snprintf(what, sizeof what, "dataset '%s': open failed", name);
  hid_t ds = H5Dopen2(c->file, name, H5P_DEFAULT);
  if (ds < 0) {
    h5err(c, TW_EFORMAT, what);
    return H5I_INVALID_HID;
  }
  hid_t sp = H5Dget_space(ds);
  int got = sp >= 0 ? H5Sget_simple_extent_ndims(sp) : -1;
  if (got == rank) H5Sget_simple_extent_dims(sp, dims, NULL);
  if (sp >= 0) H5Sclose(sp);
  if (got != rank) {
    tw_error_set(c->err, TW_EFORMAT, "result '%s': dataset '%s' has rank %d, expected %d", c->path, name, got, rank);
    H5Dclose(ds);
    return H5I_INVALID_HID;
  }
  return ds;
}

/* Read a whole dataset (already opened) into a new buffer of n elements of `size` bytes. */
static tw_status read_whole(const rctx *c, hid_t ds, const char *name, hid_t mtype, size_t n, size_t size, void **out) {
  *out = malloc(n ? n * size : 1);
  if (!*out) return tw_error_set(c->err, TW_ENOMEM, "result '%s': out of memory reading '%s'", c->path, name);
  if (n && H5Dread(ds, mtype, H5S_ALL, H5S_ALL, H5P_DEFAULT, *out) < 0) {
    char what[300];
    snprintf(what, sizeof what, "dataset '%s': read failed", name);
    free(*out);
    *out = NULL;
    return h5err(c, TW_EIO, what);
  }
  return TW_OK;
}

/* Group with an optional "count" attribute: *empty = 1 when it says 0 items (no datasets
 * expected) or, for an optional group, when it is absent; 0 when datasets are expected. */
static tw_status group_is_empty(const rctx *c, const char *group, int required, int *empty) {
  *empty = 0;
  int ex = tw_h5_path_exists(c->file, group);
  if (ex < 0) return h5err(c, TW_EIO, "link query failed");
  if (ex == 0) {
    *empty = 1;
    return required ? missing(c, "group", group) : TW_OK;
  }
  hid_t g = H5Oopen(c->file, group, H5P_DEFAULT);
  if (g < 0) return h5err(c, TW_EFORMAT, "group open failed");
  long long count = -1;
  tw_status st = read_attr(c, g, group, "count", H5T_NATIVE_LLONG, 1, &count, 0);
  H5Oclose(g);
  *empty = count == 0;
  return st;
}

/* with_traces = 0: coordinates and shape only (tw_result_open_meta). */
static tw_status read_receivers(const rctx *c, tw_result *r, int with_traces) {
  int empty;
  tw_status st = group_is_empty(c, "/receivers", 1, &empty);
  if (st || empty) return st;
  hsize_t cd[2], td[2];
  hid_t dc = open_dataset(c, "/receivers/coords", 2, cd);
  if (dc < 0) return c->err ? c->err->code : TW_EFORMAT;
  hid_t dtr = open_dataset(c, "/receivers/traces", 2, td);
  if (dtr < 0) st = c->err ? c->err->code : TW_EFORMAT;
  if (!st && (cd[1] != 3 || cd[0] != td[0]))
    st = tw_error_set(c->err, TW_EFORMAT,
                      "result '%s': /receivers/coords is [%llu][%llu], expected [%llu][3] (one row per trace)", c->path,
                      (unsigned long long)cd[0], (unsigned long long)cd[1], (unsigned long long)td[0]);
  if (!st) {
    r->nrec = (long)td[0];
    r->nsamples = (long)td[1];
    st = read_attr(c, dtr, "/receivers/traces", "dt", H5T_NATIVE_DOUBLE, 1, &r->sample_dt, 1);
  }
  if (!st) st = read_whole(c, dc, "/receivers/coords", H5T_NATIVE_DOUBLE, (size_t)cd[0] * 3, sizeof(double), (void **)&r->rec);
  if (!st && with_traces)
    st = read_whole(c, dtr, "/receivers/traces", H5T_NATIVE_FLOAT, (size_t)td[0] * (size_t)td[1], sizeof(float),
                    (void **)&r->traces);
  H5Dclose(dc);
  if (dtr >= 0) H5Dclose(dtr);
  return st;
}

/* /sources/coords [nsrc][3] (absent or count 0: no sources). */
static tw_status read_sources(const rctx *c, tw_result *r) {
  int empty;
  tw_status st = group_is_empty(c, "/sources", 0, &empty);
  if (st || empty || tw_h5_path_exists(c->file, "/sources/coords") <= 0) return st;
  hsize_t cd[2];
  hid_t dc = open_dataset(c, "/sources/coords", 2, cd);
  if (dc < 0) return c->err ? c->err->code : TW_EFORMAT;
  if (cd[1] != 3)
    st = tw_error_set(c->err, TW_EFORMAT, "result '%s': /sources/coords is [%llu][%llu], expected [nsrc][3]", c->path,
                      (unsigned long long)cd[0], (unsigned long long)cd[1]);
  else if (!(st = read_whole(c, dc, "/sources/coords", H5T_NATIVE_DOUBLE, (size_t)cd[0] * 3, sizeof(double),
                             (void **)&r->src)))
    r->nsrc = (int)cd[0];
  H5Dclose(dc);
  return st;
}

static tw_status read_snapshot_meta(const rctx *c, tw_result *r) {
  int empty;
  tw_status st = group_is_empty(c, "/snapshots", 0, &empty);
  if (st || empty) return st;
  hsize_t pd[4], sd[1], td[1];
  hid_t dp = open_dataset(c, "/snapshots/p", 4, pd);
  hid_t ds = dp >= 0 ? open_dataset(c, "/snapshots/steps", 1, sd) : H5I_INVALID_HID;
  hid_t dt = ds >= 0 ? open_dataset(c, "/snapshots/times", 1, td) : H5I_INVALID_HID;
  if (dp < 0 || ds < 0 || dt < 0) {
    st = c->err ? c->err->code : TW_EFORMAT;
  } else if (sd[0] != pd[0] || td[0] != pd[0]) {
    st = tw_error_set(c->err, TW_EFORMAT,
                      "result '%s': /snapshots/steps (%llu) and /snapshots/times (%llu) must have one entry per "
                      "snapshot in /snapshots/p (%llu)",
                      c->path, (unsigned long long)sd[0], (unsigned long long)td[0], (unsigned long long)pd[0]);
  } else {
    /* Files since the layout [nsnap][nz][ny][nx] say so in p's "axes"; older ones are
     * [nsnap][nx][ny][nz]. snap_shape is [nx][ny][nz] either way. */
    r->snap_zyx = tw_h5_attr_is(dp, "axes", TW_SNAPSHOT_AXES);
    r->nsnap = (int)pd[0];
    for (int a = 0; a < 3; a++) r->snap_shape[a] = (int)pd[r->snap_zyx ? 3 - a : a + 1];
  }
  if (!st) {
    st = read_whole(c, ds, "/snapshots/steps", H5T_NATIVE_LONG, (size_t)pd[0], sizeof(long), (void **)&r->snap_steps);
    if (!st)
      st = read_whole(c, dt, "/snapshots/times", H5T_NATIVE_DOUBLE, (size_t)pd[0], sizeof(double),
                      (void **)&r->snap_times);
  }
  if (dp >= 0) H5Dclose(dp);
  if (ds >= 0) H5Dclose(ds);
  if (dt >= 0) H5Dclose(dt);
  return st;
}

/* ---------------------------------------------------------------- open / read / close */

/* HDF5 hides errno: open(2) first so that "No such file or directory" reaches the user; and a
 * result must be a regular file: HDF5's own open of a FIFO without a writer waits for one forever
 * (`compare`, `export` hung), so this open does not wait (O_NONBLOCK) and fstat decides. */
static tw_status open_file(const char *path, hid_t *file, tw_error *err) {
  const char *kind;
  const int fd = tw_open_regular(path, O_RDONLY, 0, NULL, &kind);
  if (fd < 0 && kind)
    return tw_error_set(err, TW_EFORMAT, "result '%s' is %s, not a result file (HDF5, a regular file)", path, kind);
  if (fd < 0) return tw_error_set(err, TW_EIO, "result '%s': cannot open: %s", path, strerror(errno));
  close(fd);
  tw_h5_quiet();
  if (H5Fis_hdf5(path) <= 0) return tw_error_set(err, TW_EFORMAT, "result '%s': not an HDF5 file", path);
  *file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (*file < 0) {
    rctx c = {path, H5I_INVALID_HID, err};
    return h5err(&c, TW_EIO, "cannot open");
  }
  return TW_OK;
}

static tw_status result_open(const char *path, int with_traces, tw_result **out, tw_error *err) {
  if (!path || !out) return tw_error_set(err, TW_EINVAL, "tw_result_open: NULL argument");
  *out = NULL;
  tw_result *r = calloc(1, sizeof *r);
  if (!r || !(r->path = strdup(path))) {
    free(r);
    return tw_error_set(err, TW_ENOMEM, "result '%s': out of memory", path);
  }
  hid_t f = H5I_INVALID_HID;
  tw_status st = open_file(path, &f, err);
  rctx c = {path, f, err};
  if (!st) st = read_root(&c, r);
  if (!st) st = read_receivers(&c, r, with_traces);
  if (!st) st = read_sources(&c, r);
  if (!st) st = read_snapshot_meta(&c, r);
  if (f >= 0 && H5Fclose(f) < 0 && !st) st = h5err(&c, TW_EIO, "close failed");
  if (st) {
    tw_result_close(r);
    return st;
  }
  *out = r;
  return TW_OK;
}

tw_status tw_result_open(const char *path, tw_result **out, tw_error *err) { return result_open(path, 1, out, err); }
tw_status tw_result_open_meta(const char *path, tw_result **out, tw_error *err) {
  return result_open(path, 0, out, err);
}

tw_status tw_result_read_traces(const tw_result *r, long first, long count, float *traces, tw_error *err) {
  if (!r || (!traces && count > 0)) return tw_error_set(err, TW_EINVAL, "tw_result_read_traces: NULL argument");
  if (first < 0 || count < 0 || first > r->nrec - count)
    return tw_error_set(err, TW_ERANGE, "result '%s': receivers [%ld, %ld) outside [0, %ld)", r->path, first,
                        first + count, r->nrec);
  if (count == 0) return TW_OK;
  hid_t f = H5I_INVALID_HID;
  tw_status st = open_file(r->path, &f, err);
  if (st) return st;
  rctx c = {r->path, f, err};
  hsize_t td[2];
  hid_t ds = open_dataset(&c, "/receivers/traces", 2, td);
  if (ds < 0) {
    H5Fclose(f);
    return err ? err->code : TW_EFORMAT;
  }
  if (td[0] != (hsize_t)r->nrec || td[1] != (hsize_t)r->nsamples) {
    st = tw_error_set(err, TW_EMISMATCH, "result '%s': /receivers/traces changed shape since it was opened", r->path);
  } else {
    hsize_t off[2] = {(hsize_t)first, 0}, cnt[2] = {(hsize_t)count, td[1]};
    hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(2, cnt, NULL);
    char what[160];
    snprintf(what, sizeof what, "dataset '/receivers/traces': reading receivers [%ld, %ld) failed", first,
             first + count);
    if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0 ||
        H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, traces) < 0)
      st = h5err(&c, TW_EIO, what);
    if (fs >= 0) H5Sclose(fs);
    if (ms >= 0) H5Sclose(ms);
  }
  H5Dclose(ds);
  H5Fclose(f);
  return st;
}

tw_status tw_result_read_snapshot(const tw_result *r, int isnap, float *data, tw_error *err) {
  if (!r || !data) return tw_error_set(err, TW_EINVAL, "tw_result_read_snapshot: NULL argument");
  if (isnap < 0 || isnap >= r->nsnap)
    return tw_error_set(err, TW_ERANGE, "result '%s': snapshot index %d outside [0, %d)", r->path, isnap, r->nsnap);
  hid_t f = H5I_INVALID_HID;
  tw_status st = open_file(r->path, &f, err);
  if (st) return st;
  rctx c = {r->path, f, err};
  hsize_t pd[4];
  hid_t ds = open_dataset(&c, "/snapshots/p", 4, pd);
  if (ds < 0) {
    H5Fclose(f);
    return err ? err->code : TW_EFORMAT;
  }
  const int *sh = r->snap_shape, z = r->snap_zyx;
  if (pd[0] != (hsize_t)r->nsnap || pd[1] != (hsize_t)sh[z ? 2 : 0] || pd[2] != (hsize_t)sh[1] ||
      pd[3] != (hsize_t)sh[z ? 0 : 2]) {
    st = tw_error_set(err, TW_EMISMATCH, "result '%s': /snapshots/p changed shape since it was opened", r->path);
  } else {
    char what[128];
    snprintf(what, sizeof what, "dataset '/snapshots/p': reading snapshot %d failed", isnap);
    int rc = 0;
    if (z) { /* [nz][ny][nx] in the file: transposed into data */
      rc = tw_h5_read_zyx(ds, 4, (hsize_t)isnap, sh, data);
    } else {
      hsize_t off[4] = {(hsize_t)isnap, 0, 0, 0}, cnt[4] = {1, pd[1], pd[2], pd[3]};
      hid_t fs = H5Dget_space(ds), ms = H5Screate_simple(4, cnt, NULL);
      if (fs < 0 || ms < 0 || H5Sselect_hyperslab(fs, H5S_SELECT_SET, off, NULL, cnt, NULL) < 0 ||
          H5Dread(ds, H5T_NATIVE_FLOAT, ms, fs, H5P_DEFAULT, data) < 0)
        rc = -1;
      if (fs >= 0) H5Sclose(fs);
      if (ms >= 0) H5Sclose(ms);
    }
    if (rc) st = rc == -2 ? tw_error_set(err, TW_ENOMEM, "result '%s': out of memory", r->path) : h5err(&c, TW_EIO, what);
  }
  H5Dclose(ds);
  H5Fclose(f);
  return st;
}

void tw_result_close(tw_result *r) {
  if (!r) return;
  free(r->path);
  free(r->kernel);
  free(r->job_text);
  free(r->job_file);
  free(r->version);
  free(r->src);
  free(r->rec);
  free(r->traces);
  free(r->snap_steps);
  free(r->snap_times);
  free(r);
}

tw_status tw_shot_stamp_read(const char *path, tw_shot_stamp *s, tw_error *err) {
  if (!path || !s) return tw_error_set(err, TW_EINVAL, "tw_shot_stamp_read: NULL argument");
  memset(s, 0, sizeof *s);
  hid_t f = H5I_INVALID_HID;
  tw_status st = open_file(path, &f, err);
  if (st) return st;
  rctx c = {path, f, err};
  long long index = -1;
  char *hash = NULL;
  st = read_attr(&c, f, "/", "shot", H5T_NATIVE_LLONG, 1, &index, 1);
  if (!st) st = read_attr(&c, f, "/", "source_position", H5T_NATIVE_DOUBLE, 3, s->pos, 1);
  if (!st) st = read_attr_string(&c, f, "job_hash", &hash);
  if (!st && strlen(hash) >= sizeof s->hash)
    st = tw_error_set(err, TW_EFORMAT, "result '%s': attribute 'job_hash' of / is too long", path);
  if (!st) {
    s->index = (long)index;
    snprintf(s->hash, sizeof s->hash, "%s", hash);
  }
  free(hash);
  int none = 1;
  if (!st) st = group_is_empty(&c, "/snapshots", 0, &none);
  s->snapshots = !none;
  if (H5Fclose(f) < 0 && !st) st = h5err(&c, TW_EIO, "close failed");
  return st;
}
