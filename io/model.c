/* model.c — the velocity model on the model's own grid (docs/design.md §1b "model"): constant, layered,
 * gradient, an HDF5 dataset, a raw float32 file or a SEG-Y cube (segy.c). The result is
 * [nx][ny][nz], z fastest, every value inside the physical range model.vp_range (checked here, so no
 * solver ever sees a bad velocity; a value outside is refused with a units or byte-order hint).
 *
 * Errors start with "<job file>:<model line>: model...:" and name the file, the dataset, the
 * attribute and the values involved. Nothing here prints. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"

/* "job.cfg:12" or "job.cfg: --set model=..." (where the model group is given; the job file when not
 * known): the prefix of every message. */
static void model_where(const tw_job *job, char *buf, size_t len) {
  snprintf(buf, len, "%s", job->model.where ? job->model.where : job->path ? job->path : "<job>");
}

/* ---------------------------------------------------------------- value check */

/* Linear index → (i, j, k) for [n0][n1][n2], z fastest. */
static void unravel(size_t idx, const int n[3], int ijk[3]) {
  ijk[2] = (int)(idx % (size_t)n[2]);
  idx /= (size_t)n[2];
  ijk[1] = (int)(idx % (size_t)n[1]);
  ijk[0] = (int)(idx / (size_t)n[1]);
}

void tw_vp_range(const tw_model_spec *m, double range[2]) {
  const int given = m->vp_range[1] > 0;
  range[0] = given ? m->vp_range[0] : TW_VP_MIN;
  range[1] = given ? m->vp_range[1] : TW_VP_MAX;
}

const char *tw_velocity_hint(double v, const double range[2], char *buf, size_t len) {
  if (v > 0 && v * 1000.0 >= range[0] && v * 1000.0 <= range[1])
    snprintf(buf, len, "is the model in km/s? velocities are in m/s (multiply by 1000)");
  else if (v > range[1] && v * 0.3048 >= range[0] && v * 0.3048 <= range[1])
    snprintf(buf, len, "is the model in ft/s? velocities are in m/s (multiply by 0.3048)");
  else
    snprintf(buf, len, "%s", "");
  return buf;
}

static float swapped(float x) {
  unsigned char b[4], t;
  memcpy(b, &x, 4);
  t = b[0], b[0] = b[3], b[3] = t;
  t = b[1], b[1] = b[2], b[2] = t;
  memcpy(&x, b, 4);
  return x;
}

/* Every value inside the model's allowed range (tw_vp_range: positive, finite, physical); fills
 * vmin/vmax. `what` names the source of the values in the message ("'vp.h5':/vp", "gradient
 * model"). The first bad value is reported, with a hint: a raw file whose bytes, swapped, give
 * a velocity in range is big-endian; one in range times 1000 is in km/s. The range in parallel (a
 * bad value shows in the reduction: min and max of floats are exact in any order), the first bad
 * value, only when there is one, in order. For a compact model the profile stands for every
 * column: a bad value is reported at column (0, 0). */
static tw_status check_values(const tw_job *job, tw_velocity *v, const char *what, tw_error *err) {
  const float *vals = v->profile ? v->profile : v->vp;
  const long ncell = v->profile ? (long)v->n[2] : (long)v->n[0] * v->n[1] * v->n[2];
  double range[2];
  tw_vp_range(&job->model, range);
  const float rlo = (float)range[0], rhi = (float)range[1];
  float lo = INFINITY, hi = -INFINITY;
  int bad = 0;
#pragma omp parallel for reduction(min : lo) reduction(max : hi) reduction(| : bad) schedule(static)
  for (long c = 0; c < ncell; c++) {
    const float x = vals[c];
    bad |= !(x >= rlo && x <= rhi); /* also NaN */
    lo = x < lo ? x : lo;
    hi = x > hi ? x : hi;
  }
  for (long c = 0; bad && c < ncell; c++) {
    const float x = vals[c];
    if (!(x >= rlo && x <= rhi)) {
      char where[1200], hint[200] = "", rng[96];
      int ijk[3];
      model_where(job, where, sizeof where);
      unravel((size_t)c, v->n, ijk);
      const float sw = swapped(x);
      if (job->model.type == TW_MODEL_RAW && sw >= rlo && sw <= rhi)
        snprintf(hint, sizeof hint, "; the file looks big-endian (this value byte-swapped is %g m/s): raw models are "
                 "float32 little-endian, convert it (numpy: a.astype('<f4').tofile(...))", (double)sw);
      else if (isfinite(x)) {
        char h[160];
        if (tw_velocity_hint(x, range, h, sizeof h)[0]) snprintf(hint, sizeof hint, "; %s", h);
      }
      snprintf(rng, sizeof rng, "%g..%g m/s", range[0], range[1]);
      return tw_error_set(err, TW_EFORMAT,
                          "%s: model: %s: velocity %g at cell (i, j, k) = (%d, %d, %d) is outside the physical "
                          "range: allowed %s (model.vp_range widens it)%s",
                          where, what, (double)x, ijk[0], ijk[1], ijk[2], rng, hint);
    }
  }
  v->vmin = lo;
  v->vmax = hi;
  return TW_OK;
}

/* ---------------------------------------------------------------- analytic models */

/* Fill every (i, j) column with the same depth profile prof[k] (in parallel: the pages are
 * touched for the first time here). */
static void fill_columns(tw_velocity *v, const float *prof) {
  const long ncol = (long)v->n[0] * v->n[1];
  const size_t nz = (size_t)v->n[2];
#pragma omp parallel for schedule(static)
  for (long c = 0; c < ncol; c++) memcpy(v->vp + (size_t)c * nz, prof, nz * sizeof(float));
}

/* Depth of cell k: z = origin[2] + k * d[2] (z positive down, docs/design.md §1). */
static double cell_depth(const tw_job *job, int k) { return job->origin[2] + (double)k * job->d[2]; }

/* Layered: the last layer whose top <= z; cells above the first top take the first layer. A top
 * within the positions' slack of cell k (tw_axis_reached, docs/design.md §1.4) is at it: k·d rounds
 * below a top written at that depth (3 × 15.2 = 45.599999999999994 < 45.6), and a source placed at
 * the top lies in cell k. */
static float layered_vp(const tw_job *job, int k) {
  const tw_model_spec *m = &job->model;
  double vp = m->layers[0].vp;
  for (int l = 1; l < m->nlayers; l++)
    if (tw_axis_reached(job->origin[2], job->d[2], k, m->layers[l].top)) vp = m->layers[l].vp;
  return (float)vp;
}

/* The depth profile of an analytic model into v->profile, and into every column of v->vp when
 * v->vp is allocated. */
static tw_status fill_analytic(const tw_job *job, tw_velocity *v, tw_error *err) {
  const tw_model_spec *m = &job->model;
  if (m->type == TW_MODEL_LAYERED && (m->nlayers < 1 || !m->layers)) {
    char where[1200];
    model_where(job, where, sizeof where);
    return tw_error_set(err, TW_ECONFIG, "%s: model.layers: a layered model needs at least one layer", where);
  }
  float *prof = malloc((size_t)v->n[2] * sizeof(float));
  if (!prof) return tw_error_set(err, TW_ENOMEM, "model: out of memory");
  for (int k = 0; k < v->n[2]; k++) {
    double z = cell_depth(job, k);
    switch (m->type) {
      case TW_MODEL_CONSTANT: prof[k] = (float)m->vp; break;
      case TW_MODEL_LAYERED: prof[k] = layered_vp(job, k); break;
      default: prof[k] = (float)(m->vp0 + m->gradient * z); break; /* gradient */
    }
  }
  if (v->vp) {
    fill_columns(v, prof);
    free(prof);
  } else {
    v->profile = prof;
  }
  return TW_OK;
}

/* ---------------------------------------------------------------- files: common */

/* Can the file be opened at all? Gives the errno reason HDF5 would hide. */
static tw_status check_readable(const char *where, const char *path, tw_error *err) {
  int fd = open(path, O_RDONLY);
  if (fd < 0) return tw_error_set(err, TW_EIO, "%s: model.file: cannot open '%s': %s", where, path, strerror(errno));
  struct stat st;
  int isdir = fstat(fd, &st) == 0 && S_ISDIR(st.st_mode);
  close(fd);
  if (isdir) return tw_error_set(err, TW_EIO, "%s: model.file: cannot open '%s': is a directory", where, path);
  return TW_OK;
}

/* ---------------------------------------------------------------- HDF5 model */

typedef struct {
  const char *where, *path, *dset;
} h5ctx;

/* Relative comparison for the grid attributes; `scale` floors the magnitude so that an origin
 * of 0 vs 1e-12 (rounding in another tool) still matches. */
static int close_enough(double a, double b, double scale) {
  double m = fmax(fmax(fabs(a), fabs(b)), scale);
  return fabs(a - b) <= 1e-6 * m;
}

/* Optional attribute `name` (3 numbers) on the dataset, checked against want[3] (`key` names the
 * job-file value). Absent is fine. */
static tw_status check_grid_attr(const h5ctx *c, hid_t ds, const char *name, const double want[3], const char *key,
                                 const double scale[3], tw_error *err) {
  htri_t ex = H5Aexists(ds, name);
  if (ex == 0) return TW_OK;
  char why[512];
  if (ex < 0)
    return tw_error_set(err, TW_EIO, "%s: model: '%s':%s: cannot query attribute '%s': %s", c->where, c->path,
                        c->dset, name, tw_h5_reason(why, sizeof why));
  hid_t a = H5Aopen(ds, name, H5P_DEFAULT);
  hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID;
  hssize_t np = sp >= 0 ? H5Sget_simple_extent_npoints(sp) : -1;
  hid_t ty = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
  H5T_class_t cls = ty >= 0 ? H5Tget_class(ty) : H5T_NO_CLASS;
  double got[3] = {0, 0, 0};
  tw_status st = TW_OK;
  if (a < 0 || sp < 0 || ty < 0) {
    st = tw_error_set(err, TW_EIO, "%s: model: '%s':%s: cannot open attribute '%s': %s", c->where, c->path, c->dset,
                      name, tw_h5_reason(why, sizeof why));
  } else if (np != 3 || (cls != H5T_FLOAT && cls != H5T_INTEGER)) {
    st = tw_error_set(err, TW_EFORMAT, "%s: model: '%s':%s: attribute '%s' must hold 3 numbers (x, y, z), found %lld %s",
                      c->where, c->path, c->dset, name, (long long)np,
                      (cls == H5T_FLOAT || cls == H5T_INTEGER) ? "numbers" : "values of a non-numeric type");
  } else if (H5Aread(a, H5T_NATIVE_DOUBLE, got) < 0) {
    st = tw_error_set(err, TW_EIO, "%s: model: '%s':%s: cannot read attribute '%s': %s", c->where, c->path, c->dset,
                      name, tw_h5_reason(why, sizeof why));
  }
  if (ty >= 0) H5Tclose(ty);
  if (sp >= 0) H5Sclose(sp);
  if (a >= 0) H5Aclose(a);
  if (st) return st;
  for (int ax = 0; ax < 3; ax++)
    if (!close_enough(got[ax], want[ax], scale[ax]))
      return tw_error_set(err, TW_EMISMATCH,
                          "%s: model: '%s':%s: attribute '%s' = [%.9g, %.9g, %.9g] does not match %s = [%.9g, "
                          "%.9g, %.9g] (relative tolerance 1e-6)",
                          c->where, c->path, c->dset, name, got[0], got[1], got[2], key, want[0], want[1], want[2]);
  return TW_OK;
}

/* The dataset must be float32/float64, rank 3, shape == grid.n ([nz][ny][nx] when zyx: a model
 * torrewave stored with output.model). */
static tw_status check_h5_layout(const h5ctx *c, hid_t ds, const int n[3], int zyx, tw_error *err) {
  char why[512];
  hid_t ty = H5Dget_type(ds), sp = H5Dget_space(ds);
  tw_status st = TW_OK;
  if (ty < 0 || sp < 0) {
    st = tw_error_set(err, TW_EIO, "%s: model: '%s':%s: cannot read the dataset's type or shape: %s", c->where,
                      c->path, c->dset, tw_h5_reason(why, sizeof why));
    goto done;
  }
  size_t tsize = H5Tget_size(ty);
  if (H5Tget_class(ty) != H5T_FLOAT || (tsize != 4 && tsize != 8)) {
    st = tw_error_set(err, TW_EFORMAT, "%s: model: '%s':%s: type must be float32 or float64 (found a %zu-byte %s)",
                      c->where, c->path, c->dset, tsize, H5Tget_class(ty) == H5T_INTEGER ? "integer" : "non-float type");
    goto done;
  }
  int rank = H5Sget_simple_extent_ndims(sp);
  hsize_t dims[H5S_MAX_RANK] = {0};
  const int a0 = zyx ? 2 : 0, a2 = zyx ? 0 : 2;
  if (rank != 3 || H5Sget_simple_extent_dims(sp, dims, NULL) != 3 || dims[0] != (hsize_t)n[a0] ||
      dims[1] != (hsize_t)n[1] || dims[2] != (hsize_t)n[a2]) {
    char found[160] = "";
    if (rank > 0) {
      H5Sget_simple_extent_dims(sp, dims, NULL);
      size_t at = 0;
      for (int r = 0; r < rank && at < sizeof found - 24; r++)
        at += (size_t)snprintf(found + at, sizeof found - at, "[%llu]", (unsigned long long)dims[r]);
    } else {
      snprintf(found, sizeof found, "a scalar");
    }
    st = tw_error_set(err, TW_EMISMATCH, "%s: model: '%s':%s: shape %s, expected [%d][%d][%d] (grid.n, %s)",
                      c->where, c->path, c->dset, found, n[a0], n[1], n[a2],
                      zyx ? "[nz][ny][nx]: its attribute axes says \"z y x\"" : "[nx][ny][nz]");
  }
done:
  if (ty >= 0) H5Tclose(ty);
  if (sp >= 0) H5Sclose(sp);
  return st;
}

/* The dataset's optional attribute `axes`: "z y x" ([nz][ny][nx], as output.model stores it) or
 * "x y z" ([nx][ny][nz], the order without the attribute). Any other value is refused: read as
 * [nx][ny][nz], a cube written in another order (say "zyx" or "Z Y X") would pass the shape check
 * on a grid whose sizes allow both orders and run transposed. */
static tw_status read_axes(const h5ctx *c, hid_t ds, int *zyx, tw_error *err) {
  char axes[64];
  const int got = tw_h5_attr_text(ds, "axes", axes, sizeof axes);
  *zyx = got == 1 && strcmp(axes, TW_MODEL_AXES) == 0;
  if (got == 0 || *zyx || (got == 1 && strcmp(axes, "x y z") == 0)) return TW_OK;
  char shown[96];
  if (got == 1)
    snprintf(shown, sizeof shown, "\"%s\"", axes);
  else
    snprintf(shown, sizeof shown, "%s", axes);
  return tw_error_set(err, TW_EFORMAT,
                      "%s: model: '%s':%s: attribute 'axes' is %s; allowed \"z y x\" (the dataset is [nz][ny][nx], as "
                      "output.model stores /model/vp) or \"x y z\" ([nx][ny][nz], the order without the attribute)",
                      c->where, c->path, c->dset, shown);
}

typedef struct {
  char buf[256];
  size_t at;
} name_list;

static herr_t collect_name(hid_t g, const char *name, const H5L_info_t *info, void *data) {
  (void)g, (void)info;
  name_list *l = (name_list *)data;
  size_t room = sizeof l->buf - l->at;
  int n = snprintf(l->buf + l->at, room, "%s%s", l->at ? ", " : "", name);
  if (n < 0 || (size_t)n >= room) {
    memcpy(l->buf + sizeof l->buf - 6, ", ...", 6); /* truncated: stop iterating */
    l->at = sizeof l->buf - 1;
    return 1;
  }
  l->at += (size_t)n;
  return 0;
}

/* Open dataset c->dset; a missing one is reported with the names at the file's top level. */
static hid_t open_model_dataset(const h5ctx *c, hid_t f, tw_error *err) {
  char why[512];
  int ex = tw_h5_path_exists(f, c->dset);
  if (ex <= 0) {
    name_list l = {{0}, 0};
    hsize_t idx = 0;
    H5Literate(f, H5_INDEX_NAME, H5_ITER_INC, &idx, collect_name, &l);
    tw_error_set(err, TW_EFORMAT, "%s: model.dataset: '%s' has no dataset '%s' (top level: %s)", c->where, c->path,
                 c->dset, l.at ? l.buf : "empty");
    return H5I_INVALID_HID;
  }
  hid_t ds = H5Dopen2(f, c->dset, H5P_DEFAULT);
  if (ds < 0)
    tw_error_set(err, TW_EFORMAT, "%s: model.dataset: '%s': cannot open '%s' as a dataset: %s", c->where, c->path,
                 c->dset, tw_h5_reason(why, sizeof why));
  return ds;
}

/* A filter of the dataset's pipeline that this HDF5 library cannot apply (h5py's lzf, hdf5plugin's
 * blosc or zstd without their plugin): 1 with buf = "HDF5 filter 32000 (lzf)"; else 0. Asked only
 * after a failed read: a chunk that an optional filter could not shrink is stored without it. */
static int missing_filter(hid_t ds, char *buf, size_t len) {
  hid_t dcpl = H5Dget_create_plist(ds);
  const int nf = dcpl >= 0 ? H5Pget_nfilters(dcpl) : 0;
  int missing = 0;
  for (int i = 0; i < nf && !missing; i++) {
    unsigned flags = 0, cd[8];
    size_t ncd = 8;
    char name[96] = "";
    const H5Z_filter_t id = H5Pget_filter2(dcpl, (unsigned)i, &flags, &ncd, cd, sizeof name, name, NULL);
    if (id >= 0 && H5Zfilter_avail(id) <= 0) {
      missing = 1;
      snprintf(buf, len, "HDF5 filter %d%s%s%s", (int)id, name[0] ? " (" : "", name, name[0] ? ")" : "");
    }
  }
  if (dcpl >= 0) H5Pclose(dcpl);
  return missing;
}

static tw_status read_hdf5(const tw_job *job, const char *where, const char *path, tw_velocity *v, tw_error *err) {
  const char *dset = job->model.dataset && job->model.dataset[0] ? job->model.dataset : "vp";
  h5ctx c = {where, path, dset};
  char why[512];
  tw_status st;
  tw_h5_quiet();
  if (H5Fis_hdf5(path) <= 0)
    return tw_error_set(err, TW_EFORMAT, "%s: model.file: '%s' is not an HDF5 file", where, path);
  hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
  if (f < 0)
    return tw_error_set(err, TW_EIO, "%s: model.file: cannot open '%s': %s", where, path, tw_h5_reason(why, sizeof why));
  hid_t ds = open_model_dataset(&c, f, err);
  if (ds < 0) {
    H5Fclose(f);
    return err ? err->code : TW_EFORMAT;
  }
  const double noscale[3] = {0, 0, 0};
  int zyx = 0;
  st = read_axes(&c, ds, &zyx, err);
  if (!st) st = check_h5_layout(&c, ds, job->n, zyx, err);
  if (!st) st = check_grid_attr(&c, ds, "spacing", job->d, "grid.d", noscale, err);
  if (!st) st = check_grid_attr(&c, ds, "d", job->d, "grid.d", noscale, err);
  if (!st) st = check_grid_attr(&c, ds, "origin", job->origin, "grid.origin", job->d, err);
  /* HDF5 converts float64 → float32 itself (a C cast per value, like ours would be). */
  int rc = st ? 0
           : zyx ? tw_h5_read_zyx(ds, 3, 0, v->n, v->vp) /* [nz][ny][nx]: transposed */
                 : H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, v->vp) < 0 ? -1 : 0;
  if (rc) {
    tw_h5_reason(why, sizeof why);
    char filter[160];
    st = rc == -2 ? tw_error_set(err, TW_ENOMEM, "%s: model: out of memory", where)
         : missing_filter(ds, filter, sizeof filter)
             ? tw_error_set(err, TW_EIO, "%s: model: '%s':%s: read failed: it is compressed with %s, which this "
                            "HDF5 library lacks (a plugin: HDF5_PLUGIN_PATH); rewrite it without (h5repack -f NONE "
                            "IN.h5 OUT.h5, with the plugin) or with gzip",
                            where, path, dset, filter)
             : tw_error_set(err, TW_EIO, "%s: model: '%s':%s: read failed: %s", where, path, dset,
                            why[0] ? why : "HDF5 gave no reason");
  }
  H5Dclose(ds);
  H5Fclose(f);
  return st;
}

/* ---------------------------------------------------------------- raw model */

static int host_is_big_endian(void) {
  const uint32_t one = 1;
  unsigned char b;
  memcpy(&b, &one, 1);
  return b == 0;
}

static void swap4(float *x, size_t n) {
  unsigned char *p = (unsigned char *)x;
  for (size_t i = 0; i < n; i++, p += 4) {
    unsigned char t0 = p[0], t1 = p[1];
    p[0] = p[3];
    p[1] = p[2];
    p[2] = t1;
    p[3] = t0;
  }
}

/* float32 little-endian, [nx][ny][nz] z fastest; the size must match exactly. Read in chunks so
 * that a short read or an I/O error is seen where it happens. */
static tw_status read_raw(const char *where, const char *path, tw_velocity *v, tw_error *err) {
  tw_status st = TW_OK;
  FILE *f = fopen(path, "rb");
  if (!f) return tw_error_set(err, TW_EIO, "%s: model.file: cannot open '%s': %s", where, path, strerror(errno));
  size_t ncell = (size_t)v->n[0] * (size_t)v->n[1] * (size_t)v->n[2];
  struct stat sb;
  if (fstat(fileno(f), &sb) != 0) {
    st = tw_error_set(err, TW_EIO, "%s: model.file: cannot stat '%s': %s", where, path, strerror(errno));
  } else if ((uint64_t)sb.st_size != (uint64_t)ncell * 4u) {
    st = tw_error_set(err, TW_EMISMATCH,
                      "%s: model.file: '%s' has %lld bytes, expected %zu = %d x %d x %d x 4 (float32 [nx][ny][nz], "
                      "z fastest)",
                      where, path, (long long)sb.st_size, ncell * 4, v->n[0], v->n[1], v->n[2]);
  }
  const size_t chunk = (size_t)4 << 20; /* values per read: 16 MiB */
  for (size_t done = 0; !st && done < ncell;) {
    size_t want = ncell - done < chunk ? ncell - done : chunk;
    size_t got = fread(v->vp + done, 4, want, f);
    if (got != want) {
      st = ferror(f) ? tw_error_set(err, TW_EIO, "%s: model.file: reading '%s' failed: %s", where, path, strerror(errno))
                     : tw_error_set(err, TW_EIO, "%s: model.file: '%s' ended after %zu of %zu values (changed while read?)",
                                    where, path, done + got, ncell);
    }
    done += got;
  }
  fclose(f);
  if (!st && host_is_big_endian()) swap4(v->vp, ncell);
  return st;
}

/* ---------------------------------------------------------------- entry points */

static tw_status load_file(const tw_job *job, const char *where, tw_velocity *v, tw_error *err) {
  const tw_model_type t = job->model.type;
  if (!job->model.file || !job->model.file[0])
    return tw_error_set(err, TW_ECONFIG, "%s: model.file: missing (required for type \"%s\")", where,
                        t == TW_MODEL_HDF5 ? "hdf5" : t == TW_MODEL_SEGY ? "segy" : "raw");
  char *path = strdup(job->model.file); /* resolved by the parser (job.c) */
  if (!path) return tw_error_set(err, TW_ENOMEM, "model: out of memory");
  tw_status st = check_readable(where, path, err);
  if (!st)
    st = t == TW_MODEL_HDF5   ? read_hdf5(job, where, path, v, err)
         : t == TW_MODEL_SEGY ? tw_segy_read_model(job, where, v->vp, err)
                              : read_raw(where, path, v, err);
  if (!st) {
    char what[1300];
    if (job->model.type == TW_MODEL_HDF5)
      snprintf(what, sizeof what, "'%s':%s", path, job->model.dataset && job->model.dataset[0] ? job->model.dataset : "vp");
    else
      snprintf(what, sizeof what, "'%s'", path);
    st = check_values(job, v, what, err);
  }
  free(path);
  return st;
}

static const char *analytic_name(tw_model_type t) {
  return t == TW_MODEL_CONSTANT ? "constant model (model.vp)"
         : t == TW_MODEL_LAYERED ? "layered model (model.layers)"
                                 : "gradient model (vp0 + gradient * depth)";
}

static int is_analytic(tw_model_type t) {
  return t == TW_MODEL_CONSTANT || t == TW_MODEL_LAYERED || t == TW_MODEL_GRADIENT;
}

static tw_status velocity_load(const tw_job *job, int compact, tw_velocity **out, tw_error *err) {
  if (!job || !out) return tw_error_set(err, TW_EINVAL, "tw_velocity_load: NULL argument");
  *out = NULL;
  char where[1200];
  model_where(job, where, sizeof where);
  if (job->n[0] < 1 || job->n[1] < 1 || job->n[2] < 1)
    return tw_error_set(err, TW_EINVAL, "%s: model: grid.n = [%d, %d, %d] must be positive", where, job->n[0],
                        job->n[1], job->n[2]);
  size_t ncell = (size_t)job->n[0] * (size_t)job->n[1] * (size_t)job->n[2];
  tw_velocity *v = calloc(1, sizeof *v);
  const int whole = !(compact && is_analytic(job->model.type));
  if (v && whole) v->vp = tw_alloc_large(ncell * sizeof(float));
  if (!v || (whole && !v->vp)) {
    char b[32];
    tw_velocity_destroy(v);
    return tw_error_set(err, TW_ENOMEM, "%s: model: cannot allocate %s for [%d][%d][%d] velocities", where,
                        tw_format_bytes((double)ncell * 4.0, b, sizeof b), job->n[0], job->n[1], job->n[2]);
  }
  memcpy(v->n, job->n, sizeof v->n);
  tw_status st;
  switch (job->model.type) {
    case TW_MODEL_CONSTANT:
    case TW_MODEL_LAYERED:
    case TW_MODEL_GRADIENT:
      st = fill_analytic(job, v, err);
      if (!st) st = check_values(job, v, analytic_name(job->model.type), err);
      break;
    case TW_MODEL_HDF5:
    case TW_MODEL_RAW:
    case TW_MODEL_SEGY: st = load_file(job, where, v, err); break;
    default: st = tw_error_set(err, TW_ECONFIG, "%s: model.type: unknown model type %d", where, (int)job->model.type);
  }
  if (st) {
    tw_velocity_destroy(v);
    return st;
  }
  *out = v;
  return TW_OK;
}

tw_status tw_velocity_load(const tw_job *job, tw_velocity **out, tw_error *err) {
  return velocity_load(job, 0, out, err);
}

tw_status tw_velocity_load_compact(const tw_job *job, tw_velocity **out, tw_error *err) {
  return velocity_load(job, 1, out, err);
}

void tw_velocity_destroy(tw_velocity *v) {
  if (!v) return;
  free(v->vp);
  free(v->profile);
  free(v);
}
