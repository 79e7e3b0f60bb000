/* io_internal.h — helpers shared by the io module's HDF5 code (model.c, output.c, result.c,
 * xdmf.c). Not installed, not part of the public interface: nothing outside io/ includes it.
 *
 * HDF5 error handling: the library's automatic error printing is switched off (library code
 * never prints); after a failed call, tw_h5_reason() reads the innermost entry of HDF5's error
 * stack so that messages can say why ("errno = 28, error message = 'No space left on device'").
 * It must run right after the failing call: every HDF5 API call clears the stack on entry. */
#ifndef TW_IO_INTERNAL_H
#define TW_IO_INTERNAL_H

#include <errno.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "tw_io.h"

/* Switch off HDF5's automatic error printing (process-wide; idempotent, cheap). */
static inline void tw_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

typedef struct {
  char *buf;
  size_t len;
} tw_h5_walk_data;

/* H5E_WALK_UPWARD visits the most specific error first (n == 0): that is the useful one. A failed
 * system call's description holds the time, file, descriptor, buffer address and sizes besides
 * "errno = 28, error message = 'No space left on device'": only the reason is kept (and, for a
 * full disk, what to do). */
static inline herr_t tw_h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
  tw_h5_walk_data *w = (tw_h5_walk_data *)data;
  if (n != 0 || !e || !e->desc || !e->desc[0]) return 0;
  const char *en = strstr(e->desc, "errno = ");
  if (en) {
    const int code = atoi(en + 8);
    snprintf(w->buf, w->len, "%s (errno %d)%s", strerror(code), code,
             code == ENOSPC ? "; the file system is full: free space, or write the output elsewhere (-o)" : "");
  } else {
    snprintf(w->buf, w->len, "%s", e->desc);
  }
  return 0;
}

/* The innermost HDF5 error description, or "" when the stack is empty. */
static inline const char *tw_h5_reason(char *buf, size_t len) {
  tw_h5_walk_data w = {buf, len};
  if (len) buf[0] = '\0';
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, tw_h5_walk_cb, &w);
  return buf;
}

/* Does the (possibly nested, "a/b/c") link path exist under loc? H5Lexists needs every
 * intermediate component to exist, so walk them one at a time. Returns 1, 0, or < 0 on error. */
static inline int tw_h5_path_exists(hid_t loc, const char *path) {
  char part[1024];
  size_t len = strlen(path);
  if (len == 0 || len >= sizeof part) return 0;
  memcpy(part, path, len + 1);
  for (char *p = part + (part[0] == '/' ? 1 : 0);; p++) {
    if (*p == '/' || *p == '\0') {
      char save = *p;
      *p = '\0';
      if (strcmp(part, "/") != 0 && part[0] != '\0') {
        htri_t e = H5Lexists(loc, part, H5P_DEFAULT);
        if (e <= 0) return (int)e;
      }
      *p = save;
      if (save == '\0') break;
    }
  }
  return 1;
}

/* ---------------------------------------------------------------- 3-D arrays in the output
 * Snapshots and the stored model are written [nz][ny][nx], x fastest: that is how VTK (ParaView)
 * lays out image points (its X axis is the fastest index), so the XDMF sidecar can show x, y and
 * depth on ParaView's X, Y and Z. The solver hands over, and the readers return, [nx][ny][nz] with
 * z fastest (the model's order); tw_zyx_slab copies the z-slab [k0, k0 + kc) between the two:
 * to_xyz = 0: slab[k - k0][j][i] = xyz[i][j][k]; to_xyz = 1: the reverse. Cost: one read and one
 * write per value through a 64 x 64 tile (64 rows of xyz, 64 z cells each), OpenMP over y. What
 * makes it fast is the slab's depth, not the tile: a row of xyz is read kc cells at a time, and rows
 * are n[1]·n[2] cells apart, so a slab of one z-plane read one float per cache line and per page:
 * 13 s for a 1000 x 1000 x 500 snapshot (2 GB) on 1 core, against ~1 s with slabs of 32 planes
 * (docs/performance.md, session 25). tw_zyx_slab_planes sizes the slabs: as many whole planes as
 * TW_ZYX_SLAB_BYTES holds (at least one), a multiple of `multiple` (the chunks' z extent: a slab
 * writes whole chunks, never part of one). */
#define TW_ZYX_SLAB_BYTES TW_OUTPUT_SLAB_BYTES
int tw_zyx_slab_planes(const int n[3], int multiple);
#define TW_SNAPSHOT_AXES "snapshot z y x" /* attribute "axes" of /snapshots/p */
#define TW_MODEL_AXES "z y x"             /* attribute "axes" of /model/vp */
void tw_zyx_slab(float *xyz, const int n[3], int k0, int kc, float *slab, int to_xyz);
/* Read the [nz][ny][nx] array of dataset ds (rank 3, or rank 4 at index lead of the first axis)
 * into xyz [nx][ny][nz], in z-slabs of tw_zyx_slab_planes. 0, −1 when an HDF5 call failed (its reason
 * on HDF5's error stack: tw_h5_reason), −2 out of memory. */
int tw_h5_read_zyx(hid_t ds, int rank, hsize_t lead, const int n[3], float *xyz);

/* ---------------------------------------------------------------- files (output.c, xdmf.c)
 * Every output file is written under a temporary name and published by rename(2): tw_io_temp_name,
 * tw_io_fsync, tw_io_publish (tw_io.h: `bench --json` writes its file so too). */
/* "<dir>/<base><ext>" for "<dir>/<base>.h5" (".hdf5", ".he5", ".hdf" likewise; other names get
 * ext appended). malloc'd; NULL when out of memory. */
char *tw_sibling_path(const char *h5path, const char *ext);
/* "dir" of "dir/name" ("." for "name", "/" for "/name"), malloc'd; the "name" of it (outpath.c). */
char *tw_dir_of(const char *path);
const char *tw_base_of(const char *path);
/* 1 when `name` (a sidecar's record of the result it describes) is another output than h5path: a
 * different name, and a regular file in h5path's folder ("q" and "q.h5" share their sidecars). */
int tw_other_output_beside(const char *h5path, const char *name);
/* What a file that is not a regular one is, for messages: "a directory", "a FIFO (named pipe)", ... */
const char *tw_file_kind(mode_t mode);
/* Open a file that must be regular (a job file, a model, a result, a checkpoint, its journal),
 * never waiting: a FIFO without a writer would block open(2) and a device or folder is no file, so
 * the open does not wait (O_NONBLOCK) and fstat decides; a regular file's descriptor is made
 * blocking again. flags: O_RDONLY, O_RDWR | O_CREAT, ... (mode for O_CREAT). Returns the descriptor,
 * or −1 with *kind naming what the file is (tw_file_kind) when it is not regular, else with errno
 * set and *kind NULL. st: the file's fstat (NULL: not wanted). */
int tw_open_regular(const char *path, int flags, mode_t mode, struct stat *st, const char **kind);

/* ---------------------------------------------------------------- segy.c */

/* The velocity cube of model.file into vp [nx][ny][nz] (tw_velocity_load; `where` starts every
 * message). Sizes are checked against grid.n, values by the caller. */
tw_status tw_segy_read_model(const tw_job *job, const char *where, float *vp, tw_error *err);
/* Remove "<base>.sgy" beside h5path when torrewave wrote it (its textual header carries
 * TW_SEGY_MARKER): called when the output is rewritten without output.segy. */
void tw_segy_remove_stale(const char *h5path);
#define TW_SEGY_MARKER "written by torrewave"
/* The torrewave SEG-Y file at sgy was written from another .h5 than h5path ("q" and "q.h5" share
 * "q.sgy", as they share "q.xdmf"), and that file is there beside h5path: 1, its name in other[n]. */
int tw_segy_describes_other(const char *sgy, const char *h5path, char *other, size_t n);
/* tw_segy_export, but with via: written complete (fsync'ed) under the name via and left there,
 * unpublished (the caller names it; on failure via is removed). A refused result's kept SEG-Y file
 * goes so through the output's own SEG-Y temporary, a name the output's check allows for, where
 * "<kept>.sgy.part-<pid>" can pass the file system's limit (output.c: keep_result). */
tw_status tw_segy_export_via(const char *h5path, const char *sgypath, const char *via, tw_error *err);

/* The string attribute `name` of obj (fixed or variable length, any padding) into buf[len]:
 * 1 when obj carries it as a scalar string that fits, 0 when it is absent, −1 when it is there but
 * is not such a string (another type, an array, too long: buf then says what it holds). */
static inline int tw_h5_attr_text(hid_t obj, const char *name, char *buf, size_t len) {
  if (len) buf[0] = '\0';
  if (H5Aexists(obj, name) <= 0) return 0;
  hid_t a = H5Aopen(obj, name, H5P_DEFAULT), ft = a >= 0 ? H5Aget_type(a) : H5I_INVALID_HID;
  hid_t sp = a >= 0 ? H5Aget_space(a) : H5I_INVALID_HID, mt = H5Tcopy(H5T_C_S1);
  const H5T_class_t cls = ft >= 0 ? H5Tget_class(ft) : H5T_NO_CLASS;
  int got = -1;
  if (cls == H5T_STRING && sp >= 0 && H5Sget_simple_extent_npoints(sp) == 1 && mt >= 0 &&
      H5Tset_cset(mt, H5Tget_cset(ft)) >= 0) {
    if (H5Tis_variable_str(ft) > 0) {
      char *s = NULL;
      if (H5Tset_size(mt, H5T_VARIABLE) >= 0 && H5Aread(a, mt, &s) >= 0 && s && strlen(s) < len)
        snprintf(buf, len, "%s", s), got = 1;
      if (s) H5free_memory(s);
    } else {
      const size_t n = H5Tget_size(ft);
      if (n < len && H5Tset_size(mt, n + 1) >= 0 && H5Aread(a, mt, buf) >= 0) buf[n] = '\0', got = 1;
    }
  }
  if (got < 0)
    snprintf(buf, len, "%s", cls == H5T_STRING ? "a string array or a string too long" : "a value that is not a string");
  if (mt >= 0) H5Tclose(mt);
  if (sp >= 0) H5Sclose(sp);
  if (ft >= 0) H5Tclose(ft);
  if (a >= 0) H5Aclose(a);
  return got;
}

/* Does obj carry the string attribute `name` with value `want`? */
static inline int tw_h5_attr_is(hid_t obj, const char *name, const char *want) {
  char buf[64];
  return tw_h5_attr_text(obj, name, buf, sizeof buf) == 1 && strcmp(buf, want) == 0;
}

/* ---------------------------------------------------------------- output.c */

/* Bytes the output may use to buffer one chunk column of traces (default 64 MiB). Tests lower
 * it to make the trace chunks short and exercise writes that cross chunk columns; set it before
 * tw_output_create. */
extern long tw_output_trace_buffer_cap;

/* ---------------------------------------------------------------- XDMF sidecar (xdmf.c) */

/* What the sidecar describes: the `count` snapshots written, each read through its view
 * <h5path>:TW_VIEWS/step_NNNNNN ([nz][ny][nx]), and the model's view TW_VIEWS/vp when has_vp.
 * n, origin and spacing are the snapshot grid's, in x, y, z order. */
typedef struct {
  const char *h5path;   /* final name of the .h5 file (the sidecar goes beside it) */
  int n[3];
  double origin[3], spacing[3];
  int count;
  const long *step;
  const double *time;
  int has_vp;
  const char *write_to; /* NULL: the sidecar's own name (via a temporary + rename); else this file,
                           written directly (output.c publishes the pair itself) */
} tw_xdmf_desc;

#define TW_VIEWS "/snapshots/views"
static inline void tw_view_name(char *buf, size_t len, long step) {
  snprintf(buf, len, TW_VIEWS "/step_%06ld", step);
}

/* "<dir>/<base>.xdmf" beside "<dir>/<base>.h5" (tw_sibling_path). */
char *tw_xdmf_path(const char *h5path);
/* Write the sidecar via "<xdmf>.part-<pid>" + rename, so a reader never sees half a file. */
tw_status tw_xdmf_write(const tw_xdmf_desc *d, tw_error *err);
/* Remove a sidecar left by an earlier run under the same name, but only one torrewave wrote
 * (it carries our marker): a stale sidecar would point into a file without snapshots. */
void tw_xdmf_remove_stale(const char *h5path);
/* 1 when the file at path carries our marker in its head (a sidecar torrewave wrote), else 0. */
int tw_xdmf_ours(const char *path);

#define TW_XDMF_MARKER "written by torrewave"
/* The torrewave sidecar at xdmf describes another .h5 than h5path ("q" and "q.h5" share "q.xdmf"),
 * and that file is there: 1, its name in other[n]. */
int tw_xdmf_describes_other(const char *xdmf, const char *h5path, char *other, size_t n);

#endif
