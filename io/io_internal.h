/* io_internal.h — helpers shared by the io module's HDF5 code (model.c, output.c, result.c,
 * xdmf.c). Not installed, not part of the public interface: nothing outside io/ includes it.
 *
 * HDF5 error handling: the library's automatic error printing is switched off (library code
 * never prints); after a failed call, tw_h5_reason() reads the innermost entry of HDF5's error
 * stack so that messages can say why ("errno = 28, error message = 'No space left on device'").
 * It must run right after the failing call: every HDF5 API call clears the stack on entry. */
#ifndef TW_IO_INTERNAL_H
#define TW_IO_INTERNAL_H

#include <hdf5.h>
#include <stdio.h>
#include <string.h>

#include "tw_io.h"

/* Switch off HDF5's automatic error printing (process-wide; idempotent, cheap). */
static inline void tw_h5_quiet(void) { H5Eset_auto2(H5E_DEFAULT, NULL, NULL); }

typedef struct {
  char *buf;
  size_t len;
} tw_h5_walk_data;

/* H5E_WALK_UPWARD visits the most specific error first (n == 0): that is the useful one. */
static inline herr_t tw_h5_walk_cb(unsigned n, const H5E_error2_t *e, void *data) {
  tw_h5_walk_data *w = (tw_h5_walk_data *)data;
  if (n == 0 && e && e->desc && e->desc[0]) snprintf(w->buf, w->len, "%s", e->desc);
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

/* ---------------------------------------------------------------- output.c */

/* Bytes the output may use to buffer one chunk column of traces (default 64 MiB). Tests lower
 * it to make the trace chunks short and exercise writes that cross chunk columns; set it before
 * tw_output_create. */
extern long tw_output_trace_buffer_cap;

/* ---------------------------------------------------------------- XDMF sidecar (xdmf.c) */

/* What the sidecar describes: the snapshots written to <h5path>:/snapshots/p, whose shape is
 * [nsnap_total][n0][n1][n2]. Only the `count` snapshots listed (dataset index, step, time) get
 * a grid; unwritten ones are left out. origin/spacing are in model coordinates, axis order
 * x, y, z (the array's slowest to fastest). */
typedef struct {
  const char *h5path;   /* final name of the .h5 file (the sidecar goes beside it) */
  long nsnap_total;
  int n[3];
  double origin[3], spacing[3];
  int count;
  const int *index;
  const long *step;
  const double *time;
} tw_xdmf_desc;

/* "<dir>/<base>.xdmf" for "<dir>/<base>.h5" (".hdf5", ".he5" likewise; other names get ".xdmf"
 * appended). malloc'd; NULL when out of memory. */
char *tw_xdmf_path(const char *h5path);
/* Write the sidecar via "<xdmf>.part-<pid>" + rename, so a reader never sees half a file. */
tw_status tw_xdmf_write(const tw_xdmf_desc *d, tw_error *err);
/* Remove a sidecar left by an earlier run under the same name, but only one torrewave wrote
 * (it carries our marker): a stale sidecar would point into a file without snapshots. */
void tw_xdmf_remove_stale(const char *h5path);

#define TW_XDMF_MARKER "written by torrewave"

#endif
