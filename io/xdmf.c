/* xdmf.c — the XDMF sidecar that lets ParaView/VisIt open the snapshots of a result file
 * directly: "shot.xdmf" beside "shot.h5", a temporal collection with one uniform grid per written
 * snapshot, each with attribute "p" = the hyperslab [isnap][:][:][:] of shot.h5:/snapshots/p.
 *
 * Axis order (the point to get right): /snapshots/p is C-order [nsnap][nx][ny][nz], z fastest.
 * XDMF lists Dimensions slowest first, so 3DCoRectMesh Dimensions = "nx ny nz" (the HDF5 shape),
 * and ORIGIN_DXDYDZ values follow the same slowest-first order — XDMF calls that order (Z, Y, X),
 * and VTK reverses both (VTK x = Dimensions[2], origin[2], spacing[2]). So Origin is written as
 * "ox oy oz" and Spacing as "dx dy dz" of the model's x, y, z: each value stays with its axis.
 * (In ParaView the model's depth z therefore shows along VTK's X axis; the values are right.)
 *
 * The .h5 is referenced by its basename so that the pair can be moved together. The sidecar is
 * written to "<name>.part-<pid>" and renamed into place, like the .h5. */
#define _POSIX_C_SOURCE 200809L
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "io_internal.h"
#include "tw_io.h"

static int ends_with(const char *s, const char *suffix) {
  size_t ls = strlen(s), lf = strlen(suffix);
  return ls >= lf && strcmp(s + ls - lf, suffix) == 0;
}

char *tw_xdmf_path(const char *h5path) {
  static const char *const exts[] = {".h5", ".hdf5", ".he5", ".hdf"};
  size_t keep = strlen(h5path);
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
    if (ends_with(h5path, exts[i]) && strlen(h5path) > strlen(exts[i])) {
      keep = strlen(h5path) - strlen(exts[i]);
      break;
    }
  char *out = malloc(keep + 6);
  if (!out) return NULL;
  memcpy(out, h5path, keep);
  memcpy(out + keep, ".xdmf", 6);
  return out;
}

static const char *base_name(const char *path) {
  const char *slash = strrchr(path, '/');
  return slash ? slash + 1 : path;
}

/* Attribute/text escaping for the file name (the only free text in the document). */
static void put_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      default: fputc(*s, f);
    }
  }
}

/* Shortest of %.15g / %.17g that reads back as the same double: "0.03", not
 * "0.029999999999999999", and still exact. */
static const char *num(char *buf, size_t len, double v) {
  snprintf(buf, len, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, len, "%.17g", v);
  return buf;
}

/* One snapshot grid: topology, geometry, and "p" as a hyperslab of the 4-D dataset. */
static void put_grid(FILE *f, const tw_xdmf_desc *d, int c, const char *h5base) {
  const int *n = d->n;
  char a[32], b[32], e[32];
  fprintf(f, "      <Grid Name=\"step_%06ld\" GridType=\"Uniform\">\n", d->step[c]);
  fprintf(f, "        <Time Value=\"%s\"/>\n", num(a, sizeof a, d->time[c]));
  fprintf(f, "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%d %d %d\"/>\n", n[0], n[1], n[2]);
  fprintf(f, "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n");
  fprintf(f, "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
             "Format=\"XML\">%s %s %s</DataItem>\n",
          num(a, sizeof a, d->origin[0]), num(b, sizeof b, d->origin[1]), num(e, sizeof e, d->origin[2]));
  fprintf(f, "          <DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
             "Format=\"XML\">%s %s %s</DataItem>\n",
          num(a, sizeof a, d->spacing[0]), num(b, sizeof b, d->spacing[1]), num(e, sizeof e, d->spacing[2]));
  fprintf(f, "        </Geometry>\n");
  fprintf(f, "        <Attribute Name=\"p\" AttributeType=\"Scalar\" Center=\"Node\">\n");
  fprintf(f, "          <DataItem ItemType=\"HyperSlab\" Dimensions=\"%d %d %d\" Type=\"HyperSlab\">\n", n[0], n[1],
          n[2]);
  /* start / stride / count, one row each, over the 4 axes of /snapshots/p */
  fprintf(f, "            <DataItem Dimensions=\"3 4\" NumberType=\"Int\" Format=\"XML\">%d 0 0 0 1 1 1 1 1 %d %d %d</DataItem>\n",
          d->index[c], n[0], n[1], n[2]);
  fprintf(f, "            <DataItem Dimensions=\"%ld %d %d %d\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">",
          d->nsnap_total, n[0], n[1], n[2]);
  put_escaped(f, h5base);
  fputs(":/snapshots/p</DataItem>\n", f);
  fprintf(f, "          </DataItem>\n        </Attribute>\n      </Grid>\n");
}

static void put_document(FILE *f, const tw_xdmf_desc *d) {
  const char *h5base = base_name(d->h5path);
  fprintf(f, "<?xml version=\"1.0\" ?>\n");
  fprintf(f, "<!-- " TW_XDMF_MARKER " " TW_VERSION ": snapshots of the pressure p in ");
  put_escaped(f, h5base);
  fprintf(f, " -->\n");
  fprintf(f, "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n  <Domain>\n");
  fprintf(f, "    <Grid Name=\"snapshots\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
  for (int c = 0; c < d->count; c++) put_grid(f, d, c, h5base);
  fprintf(f, "    </Grid>\n  </Domain>\n</Xdmf>\n");
}

tw_status tw_xdmf_write(const tw_xdmf_desc *d, tw_error *err) {
  if (!d || !d->h5path || d->count < 0 || (d->count > 0 && (!d->index || !d->step || !d->time)))
    return tw_error_set(err, TW_EINVAL, "tw_xdmf_write: invalid description");
  char *path = tw_xdmf_path(d->h5path);
  size_t tlen = path ? strlen(path) + 32 : 0;
  char *temp = path ? malloc(tlen) : NULL;
  if (!temp) {
    free(path);
    return tw_error_set(err, TW_ENOMEM, "XDMF sidecar: out of memory");
  }
  snprintf(temp, tlen, "%s.part-%ld", path, (long)getpid());
  tw_status st = TW_OK;
  FILE *f = fopen(temp, "w");
  if (!f) {
    st = tw_error_set(err, TW_EIO, "XDMF sidecar: cannot create '%s': %s", temp, strerror(errno));
  } else {
    put_document(f, d);
    /* fprintf errors are sticky: one check of ferror + fclose covers them all (full disk). */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
      st = tw_error_set(err, TW_EIO, "XDMF sidecar: writing '%s' failed: %s", temp, strerror(errno));
      unlink(temp);
    } else if (rename(temp, path) != 0) {
      st = tw_error_set(err, TW_EIO, "XDMF sidecar: cannot rename '%s' to '%s': %s", temp, path, strerror(errno));
      unlink(temp);
    }
  }
  free(temp);
  free(path);
  return st;
}

void tw_xdmf_remove_stale(const char *h5path) {
  char *path = tw_xdmf_path(h5path);
  if (!path) return;
  FILE *f = fopen(path, "r");
  if (f) {
    char head[512];
    size_t n = fread(head, 1, sizeof head - 1, f);
    head[n] = '\0';
    fclose(f);
    if (strstr(head, TW_XDMF_MARKER)) unlink(path);
  }
  free(path);
}
