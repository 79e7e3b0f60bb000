/* xdmf.c — the XDMF sidecar that lets ParaView/VisIt open the snapshots of a result file
 * directly: "shot.xdmf" beside "shot.h5", a temporal collection with one uniform grid per written
 * snapshot, each with attribute "p" (and "vp" with output.model) read from the snapshot's view
 * shot.h5:/snapshots/views/step_NNNNNN (output.c: a virtual dataset onto /snapshots/p[isnap]).
 *
 * What ParaView shows (checked with pvpython by tests/cli/xdmf.sh, ParaView 5.11):
 *   - its default readers, Xdmf3ReaderS/T, do not read XDMF hyperslabs (they skip the array as
 *     "unrecognized array type [None]"): hence one plain dataset per snapshot, the views;
 *   - VTK's X axis is the fastest index of the array, so the data are stored x fastest,
 *     [nz][ny][nx] (io_internal.h): Topology Dimensions "nz ny nx", and ORIGIN_DXDYDZ lists its
 *     values slowest axis first, (z, y, x);
 *   - z down: ParaView's Z is −depth (origin −z0, spacing −dz), so the surface is on top and
 *     deeper cells lie lower; x and y are the model's, all in metres.
 *
 * The .h5 is referenced by its base name so that the pair can be moved together; that name is
 * the only free text and goes into attributes and text escaped (never into a comment: "--" ends
 * one). A name XML cannot carry (invalid UTF-8, control characters) or XDMF cannot (':', which
 * separates file and dataset) gets no sidecar, with an error that says why. The sidecar is written
 * to "<name>.part-<pid>" and renamed into place, like the .h5. */
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

char *tw_sibling_path(const char *h5path, const char *ext) {
  static const char *const exts[] = {".h5", ".hdf5", ".he5", ".hdf"};
  size_t keep = strlen(h5path), le = strlen(ext);
  for (size_t i = 0; i < sizeof exts / sizeof exts[0]; i++)
    if (ends_with(h5path, exts[i]) && strlen(h5path) > strlen(exts[i])) {
      keep = strlen(h5path) - strlen(exts[i]);
      break;
    }
  char *out = malloc(keep + le + 1);
  if (!out) return NULL;
  memcpy(out, h5path, keep);
  memcpy(out + keep, ext, le + 1);
  return out;
}

char *tw_xdmf_path(const char *h5path) { return tw_sibling_path(h5path, ".xdmf"); }

/* The "about" line names the .h5 after this (tw_xdmf_describes_other reads it back). */
#define XDMF_ABOUT "snapshots of the pressure p (Pa) in "


/* Attribute/text escaping for the file name (the only free text in the document). */
static void put_escaped(FILE *f, const char *s) {
  for (; *s; s++) {
    switch (*s) {
      case '&': fputs("&amp;", f); break;
      case '<': fputs("&lt;", f); break;
      case '>': fputs("&gt;", f); break;
      case '"': fputs("&quot;", f); break;
      case '\'': fputs("&apos;", f); break;
      default: fputc(*s, f);
    }
  }
}

/* Why name cannot be referenced from the sidecar, or NULL: XML 1.0 text is valid UTF-8 without
 * control characters, and XDMF splits "file:dataset" at the first ':'. */
static const char *unreferable(const char *name) {
  const unsigned char *p = (const unsigned char *)name;
  while (*p) {
    if (*p < 0x20 || *p == 0x7f) return "it contains a control character";
    if (*p == ':') return "it contains ':', which XDMF reads as the end of the file name";
    int len = *p < 0x80 ? 1 : (*p & 0xe0) == 0xc0 ? 2 : (*p & 0xf0) == 0xe0 ? 3 : (*p & 0xf8) == 0xf0 ? 4 : 0;
    if (!len || (len == 2 && *p < 0xc2)) return "it is not valid UTF-8";
    for (int i = 1; i < len; i++)
      if ((p[i] & 0xc0) != 0x80) return "it is not valid UTF-8";
    p += len;
  }
  return NULL;
}

/* Shortest of %.15g / %.17g that reads back as the same double: "0.03", not
 * "0.029999999999999999", and still exact. */
static const char *num(char *buf, size_t len, double v) {
  snprintf(buf, len, "%.15g", v);
  if (strtod(buf, NULL) != v) snprintf(buf, len, "%.17g", v);
  return buf;
}

/* An attribute of one grid: a whole dataset of the .h5, [nz][ny][nx] float32. */
static void put_attribute(FILE *f, const tw_xdmf_desc *d, const char *name, const char *h5base, const char *dataset) {
  fprintf(f, "        <Attribute Name=\"%s\" AttributeType=\"Scalar\" Center=\"Node\">\n", name);
  fprintf(f, "          <DataItem Dimensions=\"%d %d %d\" NumberType=\"Float\" Precision=\"4\" Format=\"HDF\">",
          d->n[2], d->n[1], d->n[0]);
  put_escaped(f, h5base);
  fprintf(f, ":%s</DataItem>\n        </Attribute>\n", dataset);
}

/* One snapshot grid: topology, geometry (ParaView X, Y, Z = x, y, −depth), p and vp. */
static void put_grid(FILE *f, const tw_xdmf_desc *d, int c, const char *h5base) {
  const int *n = d->n;
  const double *o = d->origin, *sp = d->spacing;
  char a[32], b[32], e[32], view[96];
  fprintf(f, "      <Grid Name=\"step_%06ld\" GridType=\"Uniform\">\n", d->step[c]);
  fprintf(f, "        <Time Value=\"%s\"/>\n", num(a, sizeof a, d->time[c]));
  fprintf(f, "        <Topology TopologyType=\"3DCoRectMesh\" Dimensions=\"%d %d %d\"/>\n", n[2], n[1], n[0]);
  fprintf(f, "        <Geometry GeometryType=\"ORIGIN_DXDYDZ\">\n");
  fprintf(f, "          <DataItem Name=\"Origin\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
             "Format=\"XML\">%s %s %s</DataItem>\n",
          num(a, sizeof a, -o[2] + 0.0), num(b, sizeof b, o[1]), num(e, sizeof e, o[0]));
  fprintf(f, "          <DataItem Name=\"Spacing\" Dimensions=\"3\" NumberType=\"Float\" Precision=\"8\" "
             "Format=\"XML\">%s %s %s</DataItem>\n",
          num(a, sizeof a, -sp[2]), num(b, sizeof b, sp[1]), num(e, sizeof e, sp[0]));
  fprintf(f, "        </Geometry>\n");
  tw_view_name(view, sizeof view, d->step[c]);
  put_attribute(f, d, "p", h5base, view);
  if (d->has_vp) put_attribute(f, d, "vp", h5base, TW_VIEWS "/vp");
  fprintf(f, "      </Grid>\n");
}

static void put_document(FILE *f, const tw_xdmf_desc *d) {
  const char *h5base = tw_base_of(d->h5path);
  fprintf(f, "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
  fprintf(f, "<!-- " TW_XDMF_MARKER " " TW_VERSION " -->\n");
  fprintf(f, "<Xdmf Version=\"3.0\" xmlns:xi=\"http://www.w3.org/2001/XInclude\">\n  <Domain>\n");
  fprintf(f, "    <Information Name=\"about\" Value=\"" XDMF_ABOUT);
  put_escaped(f, h5base);
  fprintf(f, "; ParaView axes: X = x, Y = y, Z = -depth (m)\"/>\n");
  fprintf(f, "    <Grid Name=\"snapshots\" GridType=\"Collection\" CollectionType=\"Temporal\">\n");
  for (int c = 0; c < d->count; c++) put_grid(f, d, c, h5base);
  fprintf(f, "    </Grid>\n  </Domain>\n</Xdmf>\n");
}

tw_status tw_xdmf_write(const tw_xdmf_desc *d, tw_error *err) {
  if (!d || !d->h5path || d->count < 0 || (d->count > 0 && (!d->step || !d->time)))
    return tw_error_set(err, TW_EINVAL, "tw_xdmf_write: invalid description");
  const char *why = unreferable(tw_base_of(d->h5path));
  if (why)
    return tw_error_set(err, TW_EUNSUPPORTED, "XDMF sidecar: the name '%s' cannot be referenced from XML/XDMF: %s; "
                        "choose another output name to get a sidecar", tw_base_of(d->h5path), why);
  char *path = tw_xdmf_path(d->h5path);
  char *temp = path ? tw_io_temp_name(path) : NULL;
  if (!temp) {
    free(path);
    return tw_error_set(err, TW_ENOMEM, "XDMF sidecar: out of memory");
  }
  const char *dest = d->write_to ? d->write_to : temp;
  tw_status st = TW_OK;
  FILE *f = fopen(dest, "w");
  if (!f) {
    st = tw_error_set(err, TW_EIO, "XDMF sidecar: cannot create '%s': %s", dest, strerror(errno));
  } else {
    put_document(f, d);
    /* fprintf errors are sticky: one check of ferror + fclose covers them all (full disk). */
    int bad = ferror(f);
    if (fclose(f) != 0 || bad) {
      st = tw_error_set(err, TW_EIO, "XDMF sidecar: writing '%s' failed: %s", dest, strerror(errno));
      unlink(dest);
    } else if (!d->write_to && rename(temp, path) != 0) {
      st = tw_error_set(err, TW_EIO, "XDMF sidecar: cannot rename '%s' to '%s': %s", temp, path, strerror(errno));
      unlink(temp);
    }
  }
  free(temp);
  free(path);
  return st;
}

int tw_xdmf_describes_other(const char *xdmf, const char *h5path, char *other, size_t n) {
  FILE *f = fopen(xdmf, "r");
  if (!f) return 0;
  char head[2048];
  const size_t k = fread(head, 1, sizeof head - 1, f);
  fclose(f);
  head[k] = '\0';
  const char *a = strstr(head, TW_XDMF_MARKER) ? strstr(head, XDMF_ABOUT) : NULL;
  if (!a) return 0;
  a += sizeof XDMF_ABOUT - 1;
  const char *e = strchr(a, ';');
  if (!e || (size_t)(e - a) >= n || memchr(a, '&', (size_t)(e - a))) return 0; /* (an escaped name: not compared) */
  memcpy(other, a, (size_t)(e - a));
  other[e - a] = '\0';
  return tw_other_output_beside(h5path, other);
}

int tw_xdmf_ours(const char *path) {
  FILE *f = path ? fopen(path, "r") : NULL;
  if (!f) return 0;
  char head[512];
  size_t n = fread(head, 1, sizeof head - 1, f);
  head[n] = '\0';
  fclose(f);
  return strstr(head, TW_XDMF_MARKER) != NULL;
}

void tw_xdmf_remove_stale(const char *h5path) {
  char *path = tw_xdmf_path(h5path), other[512];
  /* ours, and not the sidecar of another output that is there ("q" and "q.h5" share "q.xdmf") */
  if (path && tw_xdmf_ours(path) && !tw_xdmf_describes_other(path, h5path, other, sizeof other)) unlink(path);
  free(path);
}
