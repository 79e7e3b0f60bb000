/* torrewave compare A.h5 B.h5 [--rtol X] [--json] [--traces-only] [--strict]
 * The comparison is io/compare.c (tw_compare); this file parses options and prints the report,
 * as a table or as JSON. Exit status like diff(1): 0 within rtol, 1 above it, 2 when the files
 * cannot be compared (different grids, dt, sample dt, nothing in common; unreadable files) or on
 * a usage error. */
#define _POSIX_C_SOURCE 200809L
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "app.h"
#include "tw_io.h"

#define EXIT_DIFFERENT 1
#define EXIT_TROUBLE 2
#define MAX_LISTED 10 /* unmatched receivers named in the table */

typedef struct {
  const char *a, *b;
  tw_compare_opts opts;
  int json;
} compare_args;

static int parse_args(int argc, char **argv, compare_args *c) {
  enum { RTOL, JSON, TRACES_ONLY, STRICT, NOPTS };
  static const tw_app_opt opts[NOPTS] = {[RTOL] = {NULL, "--rtol", "X"}, [JSON] = {NULL, "--json", NULL},
                                         [TRACES_ONLY] = {NULL, "--traces-only", NULL},
                                         [STRICT] = {NULL, "--strict", NULL}};
  tw_app_args it = {"compare", argc, argv, opts, NOPTS, 1, 0, {0}};
  const char *v;
  memset(c, 0, sizeof *c);
  c->opts.rtol = 1e-5;
  for (int k; (k = tw_app_next(&it, &v)) != TW_APP_END;) {
    switch (k) {
      case TW_APP_BAD: return TW_EXIT_USAGE;
      case TW_APP_OPERAND:
        if (c->b) return tw_app_usage("compare", "takes two files, got a third: \"%s\"", v);
        *(c->a ? &c->b : &c->a) = v;
        break;
      case RTOL:
        if (!tw_app_double(v, &c->opts.rtol) || !(c->opts.rtol >= 0))
          return tw_app_usage("compare", "--rtol takes a number >= 0, got \"%s\"", v);
        /* 0 is "no value differs", as every X <= 1e-30 (the library reads an rtol of 0 as its default) */
        if (c->opts.rtol < TW_COMPARE_EXACT_RTOL) c->opts.rtol = TW_COMPARE_EXACT_RTOL;
        break;
      case JSON: c->json = 1; break;
      case TRACES_ONLY: c->opts.skip_snapshots = 1; break;
      case STRICT: c->opts.strict = 1; break;
    }
  }
  if (!c->b) return tw_app_usage("compare", "needs two result files: A.h5 B.h5");
  return 0;
}

/* ---------------------------------------------------------------- JSON */

/* JSON has no inf/NaN: they become null (a NaN difference is a failure either way). */
static void json_num(FILE *o, double v) {
  if (isfinite(v))
    fprintf(o, "%.9g", v);
  else
    fputs("null", o);
}

static void json_str(FILE *o, const char *s) {
  fputc('"', o);
  for (; s && *s; s++) {
    unsigned char ch = (unsigned char)*s;
    if (ch == '"' || ch == '\\')
      fprintf(o, "\\%c", ch);
    else if (ch < 0x20)
      fprintf(o, "\\u%04x", ch);
    else
      fputc(ch, o);
  }
  fputc('"', o);
}

static void json_vec(FILE *o, const double *v) {
  fputc('[', o);
  for (int x = 0; x < 3; x++) {
    if (x) fputs(", ", o);
    json_num(o, v[x]);
  }
  fputc(']', o);
}

static void json_longs(FILE *o, const long *v, long n) {
  fputc('[', o);
  for (long k = 0; k < n; k++) fprintf(o, "%s%ld", k ? ", " : "", v[k]);
  fputc(']', o);
}

static void json_file(FILE *o, const char *key, const tw_result *r) {
  fprintf(o, "  \"%s\": {\"path\": ", key);
  json_str(o, r->path);
  fputs(", \"kernel\": ", o);
  json_str(o, r->kernel);
  fprintf(o, ", \"n\": [%d, %d, %d], \"d\": ", r->n[0], r->n[1], r->n[2]);
  json_vec(o, r->d);
  fputs(", \"dt\": ", o);
  json_num(o, r->dt);
  fprintf(o, ", \"steps\": %ld, \"receivers\": %ld, \"samples\": %ld, \"snapshots\": %d},\n", r->steps, r->nrec,
          r->nsamples, r->nsnap);
}

static void json_stat(FILE *o, const tw_compare_stat *t) {
  const int tr = t->kind == TW_COMPARE_TRACES;
  fprintf(o, "    {\"dataset\": \"%s\", \"step\": %ld, \"count\": %ld, \"rel_l2\": ",
          tr ? "receivers/traces" : "snapshots/p", t->step, t->count);
  json_num(o, t->rel_l2);
  fputs(", \"max_abs\": ", o);
  json_num(o, t->max_abs);
  fputs(", \"peak\": ", o);
  json_num(o, t->peak);
  fprintf(o, ", \"differ\": %ld, \"pass\": %s, \"worst\": {", t->ndiff, t->pass ? "true" : "false");
  if (tr) {
    fprintf(o, "\"receiver_a\": %ld, \"receiver_b\": %ld, \"sample\": %ld, \"time\": ", t->rec_a, t->rec_b,
            t->sample);
    json_num(o, t->at_time);
    fputs(", \"position\": ", o);
    json_vec(o, t->pos);
    fprintf(o, "}, \"worst_receiver\": {\"receiver_a\": %ld, \"receiver_b\": %ld, \"rel_l2\": ", t->worst_rec_a,
            t->worst_rec_b);
    json_num(o, t->worst_rec_rel_l2);
    fputc('}', o);
  } else {
    /* model_cell: the model's cell index; snapshot_cell: the cell of the stored (cropped, decimated)
     * snapshot, an index into /snapshots/p (x y z order) */
    fputs("\"time\": ", o);
    json_num(o, t->time);
    if (t->pos_known)
      fprintf(o, ", \"model_cell\": [%d, %d, %d]", t->model_cell[0], t->model_cell[1], t->model_cell[2]);
    else
      fputs(", \"model_cell\": null", o);
    fprintf(o, ", \"snapshot_cell\": [%d, %d, %d], \"position\": ", t->snap_cell[0], t->snap_cell[1], t->snap_cell[2]);
    if (t->pos_known)
      json_vec(o, t->pos);
    else
      fputs("null", o);
    fputc('}', o);
  }
  fputc('}', o);
}

/* status: "pass", "fail" or "incompatible" (then reason is the message, rep may be empty). */
static void print_json(FILE *o, const tw_result *a, const tw_result *b, const tw_compare_report *rep,
                       const char *status, const char *reason) {
  fputs("{\n  \"status\": ", o);
  json_str(o, status);
  fputs(",\n", o);
  if (reason) {
    fputs("  \"reason\": ", o);
    json_str(o, reason);
    fputs(",\n", o);
  }
  json_file(o, "a", a);
  json_file(o, "b", b);
  fputs("  \"rtol\": ", o);
  json_num(o, rep->rtol);
  fprintf(o, ",\n  \"receivers\": {\"pairs\": %ld, \"tolerance_m\": ", rep->npairs);
  json_num(o, rep->coord_tol_m);
  fputs(", \"unmatched_a\": ", o);
  json_longs(o, rep->unmatched_a, rep->nunmatched_a);
  fputs(", \"unmatched_b\": ", o);
  json_longs(o, rep->unmatched_b, rep->nunmatched_b);
  fprintf(o, ", \"samples_compared\": %ld, \"sample_dt\": ", rep->nsamples);
  json_num(o, rep->sample_dt);
  fprintf(o, "},\n  \"snapshots\": {\"a\": %d, \"b\": %d, \"common\": %d, \"compared\": %s},\n  \"datasets\": [\n",
          rep->nsnap_a, rep->nsnap_b, rep->nsnap_common, rep->snapshots_skipped ? "false" : "true");
  for (int k = 0; k < rep->nstat; k++) {
    json_stat(o, &rep->stat[k]);
    fputs(k + 1 < rep->nstat ? ",\n" : "\n", o);
  }
  fprintf(o, "  ],\n  \"failed\": %d\n}\n", rep->nfail);
}

/* ---------------------------------------------------------------- table */

static void print_file(FILE *o, const char *tag, const tw_result *r) {
  fprintf(o, "%s: %s (kernel %s, grid %dx%dx%d, dt %.6g s, %ld steps, %ld receivers x %ld samples, %d snapshots)\n",
          tag, r->path, r->kernel && r->kernel[0] ? r->kernel : "?", r->n[0], r->n[1], r->n[2], r->dt, r->steps,
          r->nrec, r->nsamples, r->nsnap);
}

static void print_unmatched(FILE *o, const char *tag, const tw_result *r, const long *idx, long n) {
  if (n == 0) return;
  fprintf(o, "  %ld receiver%s of %s without a partner:", n, n == 1 ? "" : "s", tag);
  for (long k = 0; k < n && k < MAX_LISTED; k++) {
    const double *p = r->rec + 3 * idx[k];
    fprintf(o, " %ld (%.10g, %.10g, %.10g)", idx[k], p[0], p[1], p[2]);
  }
  fprintf(o, "%s\n", n > MAX_LISTED ? " ..." : "");
}

static void print_where(FILE *o, const tw_compare_report *rep, const tw_compare_stat *t) {
  if (t->max_abs == 0) {
    fputs("(no difference)", o);
    return;
  }
  if (t->kind == TW_COMPARE_TRACES) {
    fprintf(o, "receiver %ld", t->rec_a);
    if (t->rec_b != t->rec_a) fprintf(o, " (B: %ld)", t->rec_b);
    fprintf(o, " at (%.10g, %.10g, %.10g) m, t = %.6g s (sample %ld)", t->pos[0], t->pos[1], t->pos[2], t->at_time,
            t->sample);
  } else if (!t->pos_known) {
    fprintf(o, "snapshot cell [%d, %d, %d] (the files do not say which model cell it is)", t->snap_cell[0],
            t->snap_cell[1], t->snap_cell[2]);
  } else {
    /* the model's cell; the stored snapshot's own cell beside it when a region or a decimation makes
     * them differ (alone, it was read as a model cell) */
    const int *f = rep->snap_first_cell, dec = rep->snap_decimate, moved = f[0] || f[1] || f[2];
    fprintf(o, "model cell [%d, %d, %d] at (%.10g, %.10g, %.10g) m", t->model_cell[0], t->model_cell[1],
            t->model_cell[2], t->pos[0], t->pos[1], t->pos[2]);
    if (moved || dec != 1)
      fprintf(o, " (snapshot cell [%d, %d, %d]:", t->snap_cell[0], t->snap_cell[1], t->snap_cell[2]);
    if (moved) fprintf(o, " first_cell [%d, %d, %d]%s", f[0], f[1], f[2], dec != 1 ? "," : ")");
    if (dec != 1) fprintf(o, " decimate %d)", dec);
  }
}

static void print_table(FILE *o, const tw_result *a, const tw_result *b, const tw_compare_report *rep) {
  const int exact = rep->rtol <= TW_COMPARE_EXACT_RTOL;
  print_file(o, "A", a);
  print_file(o, "B", b);
  if (rep->nrec_a || rep->nrec_b) {
    fprintf(o, "receivers: %ld paired by coordinates (within %.3g m)", rep->npairs, rep->coord_tol_m);
    if (rep->npairs) fprintf(o, ", %ld samples compared (sample dt %.6g s)", rep->nsamples, rep->sample_dt);
    fputc('\n', o);
    if (rep->npairs && rep->nsamples_a != rep->nsamples_b)
      fprintf(o, "  note: A has %ld samples, B %ld: compared the first %ld\n", rep->nsamples_a, rep->nsamples_b,
              rep->nsamples);
    print_unmatched(o, "A", a, rep->unmatched_a, rep->nunmatched_a);
    print_unmatched(o, "B", b, rep->unmatched_b, rep->nunmatched_b);
  }
  if (rep->snapshots_skipped && (rep->nsnap_a || rep->nsnap_b))
    fprintf(o, "snapshots: not compared (--traces-only; A has %d, B %d)\n", rep->nsnap_a, rep->nsnap_b);
  else if (rep->nsnap_a || rep->nsnap_b)
    fprintf(o, "snapshots: %d common step%s (A has %d, B %d)\n", rep->nsnap_common, rep->nsnap_common == 1 ? "" : "s",
            rep->nsnap_a, rep->nsnap_b);
  fprintf(o, "\n%-22s %-11s %-11s %-9s  %s\n", "dataset", "rel L2", "max |A-B|", "/peak", "largest difference at");
  for (int k = 0; k < rep->nstat; k++) {
    const tw_compare_stat *t = &rep->stat[k];
    char name[64];
    if (t->kind == TW_COMPARE_TRACES)
      snprintf(name, sizeof name, "receivers/traces");
    else
      snprintf(name, sizeof name, "snapshots/p step %ld", t->step);
    fprintf(o, "%-22s %-11.4g %-11.4g %-9.3g  ", name, t->rel_l2, t->max_abs, t->peak > 0 ? t->max_abs / t->peak : 0.0);
    print_where(o, rep, t);
    if (t->ndiff) fprintf(o, "; %ld of %ld values differ", t->ndiff, t->count);
    fprintf(o, "%s\n", t->pass ? "" : exact ? "  VALUES DIFFER" : "  ABOVE rtol");
    if (t->kind == TW_COMPARE_TRACES && rep->npairs > 1 && t->max_abs > 0)
      fprintf(o, "%-22s worst receiver by L2: %ld (B: %ld), its rel L2 %.4g\n", "", t->worst_rec_a, t->worst_rec_b,
              t->worst_rec_rel_l2);
  }
  if (rep->pass && exact)
    fprintf(o, "\nPASS: the same numbers in every dataset (rtol %g <= %g: no value differs)\n", rep->rtol,
            TW_COMPARE_EXACT_RTOL);
  else if (exact)
    fprintf(o, "\nFAIL: %d of %d dataset%s hold other numbers (rtol %g <= %g asks for the same numbers)\n", rep->nfail,
            rep->nstat, rep->nstat == 1 ? "" : "s", rep->rtol, TW_COMPARE_EXACT_RTOL);
  else if (rep->pass)
    fprintf(o, "\nPASS: every dataset within rtol %g (relative L2 = ||A-B|| / max(||A||, ||B||))\n", rep->rtol);
  else
    fprintf(o, "\nFAIL: %d of %d dataset%s above rtol %g (relative L2 = ||A-B|| / max(||A||, ||B||))\n", rep->nfail,
            rep->nstat, rep->nstat == 1 ? "" : "s", rep->rtol);
}

/* ---------------------------------------------------------------- command */

static int run_compare(int argc, char **argv) {
  compare_args c;
  int rc = parse_args(argc, argv, &c);
  if (rc) return rc;
  tw_error err = {0};
  tw_result *a = NULL, *b = NULL;
  if (tw_result_open(c.a, &a, &err) || tw_result_open(c.b, &b, &err)) {
    tw_app_fail(&err);
    tw_result_close(a);
    return EXIT_TROUBLE;
  }
  tw_compare_report rep;
  tw_status st = tw_compare(a, b, &c.opts, &rep, &err);
  if (st == TW_EMISMATCH) {
    if (c.json) print_json(stdout, a, b, &rep, "incompatible", err.msg);
    fprintf(stderr, "torrewave compare: incompatible: %s\n", err.msg);
    rc = EXIT_TROUBLE;
  } else if (st) {
    tw_app_fail(&err);
    rc = EXIT_TROUBLE;
  } else {
    if (c.json)
      print_json(stdout, a, b, &rep, rep.pass ? "pass" : "fail", NULL);
    else
      print_table(stdout, a, b, &rep);
    rc = rep.pass ? TW_EXIT_OK : EXIT_DIFFERENT;
  }
  tw_compare_report_free(&rep);
  tw_result_close(a);
  tw_result_close(b);
  return rc;
}

static void help_compare(FILE *o) {
  fprintf(o,
          "usage: torrewave compare A.h5 B.h5 [--rtol X] [--json] [--traces-only] [--strict]\n\n"
          "Compare two result files (two kernels, two versions, a run and `torrewave reference`).\n"
          "Receivers are paired by coordinates (within 1e-6 of the grid spacing; unpaired ones are listed),\n"
          "snapshots by step. Per dataset (all paired traces together; each common snapshot): the relative\n"
          "L2 difference ||A-B|| / max(||A||, ||B||), the largest |A-B| and where it is (receiver, time;\n"
          "snapshot: the model cell and its coordinates, and the stored snapshot's own cell when a region\n"
          "or decimation makes it another). When one file has more samples at the same sample dt, the\n"
          "common leading samples are compared.\n\n"
          "  --rtol X         pass when every relative L2 is <= X (default 1e-5); X <= 1e-30 (0 too): when\n"
          "                   no value differs (a relative L2 that small alone would let values far below\n"
          "                   the peak differ)\n"
          "  --json           machine-readable report on stdout\n"
          "  --traces-only    skip the snapshots\n"
          "  --strict         every receiver, sample and snapshot of both files must pair (unpaired ones,\n"
          "                   extra samples or snapshot steps make the files not comparable, 2): with\n"
          "                   --rtol 1e-30, exit 0 means the files hold the same numbers\n\n"
          "Exit status: 0 all datasets within rtol, 1 some above, 2 the files cannot be compared (different\n"
          "grid n, d or origin, dt, sample dt, no common receivers or snapshots: the message says which),\n"
          "a file cannot be read, or a usage error.\n");
}

const tw_command tw_cmd_compare = {"compare", "compare two result files (traces, snapshots) within a tolerance",
                                   run_compare, help_compare, 1};
