/* tw_io.h — the job file (libconfig → validated tw_job), velocity models, HDF5 output and
 * reading it back, XDMF sidecar. Names in the job file are the public interface (docs/design.md §1b).
 * Every error message names the job file and line, the key, the value and what is allowed. */
#ifndef TW_IO_H
#define TW_IO_H

#include <stdint.h>
#include <stdio.h>

#include "tw_common.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ---------------------------------------------------------------- job file */

typedef enum {
  TW_MODEL_CONSTANT,
  TW_MODEL_LAYERED,
  TW_MODEL_GRADIENT,
  TW_MODEL_HDF5,
  TW_MODEL_RAW,
  TW_MODEL_SEGY
} tw_model_type;

typedef struct { double top, vp; } tw_layer;

/* Velocities a model may hold (m/s), unless model.vp_range says otherwise: 100 m/s is below
 * every gas, fluid and rock of seismic interest (air 343, the slowest near-surface soils
 * ~150-200); 20000 m/s is above any rock or metal (diamond ~18000). A value outside is almost
 * always a units or byte-order error (km/s, a big-endian raw file), so it is refused with a hint. */
#define TW_VP_MIN 100.0
#define TW_VP_MAX 20000.0

typedef struct {
  tw_model_type type;
  double vp_range[2];        /* model.vp_range, default [TW_VP_MIN, TW_VP_MAX]; {0, 0} = the default */
  double vp;                 /* constant */
  tw_layer *layers;          /* layered: tops strictly increasing, first top <= model top */
  int nlayers;
  double vp0, gradient;      /* gradient: vp = vp0 + gradient * depth (depth = z coordinate) */
  char *file;                /* hdf5 / raw / segy; stored resolved from the job file's folder */
  char *dataset;             /* hdf5 dataset name, default "vp" */
  int inline_byte;           /* segy: trace-header bytes of the inline (x) and crossline (y) */
  int crossline_byte;        /*       numbers, default 189 and 193 (SEG-Y rev 1) */
  char *where;               /* where the model group is given, as errors name it (NULL: the job file) */
} tw_model_spec;

typedef enum { TW_WAVELET_RICKER, TW_WAVELET_FILE } tw_wavelet_type;
typedef enum { TW_INTERP_NEAREST, TW_INTERP_TRILINEAR } tw_interp;

typedef struct {
  tw_wavelet_type type;
  double frequency;          /* ricker, Hz */
  double delay;              /* ricker t0, s; default 1.5 / frequency */
  double amplitude;          /* ricker A; default 1 */
  char *file;                /* file: one sample per line; stored resolved, like model.file */
  double file_dt;            /* file: its sampling; 0 = the run's dt (or the file's times) */
  char *where;               /* where the wavelet group is given, as errors name it (NULL: the job file) */
  int source;                /* index of its source (messages: sources[i].wavelet) */
} tw_wavelet_spec;

typedef struct {
  double pos[3];             /* model coordinates, metres */
  tw_interp interp;          /* sources[i].interpolation: "nearest" (default) or "trilinear" */
  tw_wavelet_spec wavelet;
  char *where;               /* where the source is given, as errors name it: "job.cfg:14", or "job.cfg:
                              * --set sources=(...)" (tw_job_where; NULL: the job file) */
} tw_source_spec;

/* The longest location a job keeps for its messages ("job.cfg:12", "job.cfg: --set key=value"): a
 * job file's path in full with its line, as the *_where strings hold it. */
#define TW_WHERE_MAX 600

/* Receivers rec[first .. first + count) (or shots) came from the job-file key `key`
 * ("receivers.points", "receivers.lines[2]", "shots.positions", ...) at `line`; a point of a
 * "points" or "positions" list is element r − first. */
typedef struct {
  long first, count;
  int line;
  char key[40];
  char where[TW_WHERE_MAX];  /* as errors name it: "job.cfg:12", or "job.cfg: --set receivers.points=..." */
} tw_rec_group;

typedef struct tw_job {
  char *path;                /* job file path as given ("<string>" for text jobs) */
  char *text;                /* the job file's text, verbatim, plus "# --set k=v" lines appended */

  int n[3];
  double d[3], origin[3];
  char *n_where;             /* where grid.n is given, as errors name it ("job.cfg:3" or "job.cfg: --set
                                grid.n=..."): the memory a job needs is refused there */

  long steps;                /* number of time steps (from time.steps or ceil(duration/dt)) */
  double dt;                 /* seconds; 0 until tw_job_finalize when time.dt is omitted */
  double duration;           /* time.duration if given, else 0 */
  int dt_given;              /* 1 when time.dt was in the job file */
  double dt_margin;          /* time.dt_margin (default 0.9): dt = margin * stable limit */

  tw_model_spec model;
  int order;                 /* 2, 4, 6, 8 (scheme.order, default 8) */
  int absorb[3];             /* absorbing cells per axis (both faces; none on top with free surface) */
  int free_surface;
  char *free_surface_where;  /* where boundary.free_surface is given, as errors name it (NULL: not given) */

  tw_source_spec *sources;
  int nsources;

  int rec_interval;          /* receivers.interval, default 1 */
  tw_interp rec_interp;      /* receivers.interpolation, default nearest */
  double (*rec)[3];          /* expanded receivers in order: points, lines, grids */
  long nrec;
  tw_rec_group *rec_groups;  /* where each run of receivers came from (messages) */
  int nrec_groups;

  long *snap_steps;          /* sorted, unique, each in 1..steps (every = k gives k, 2k, ...) */
  int nsnap;
  long snap_every;           /* snapshots.every when given (steps expanded in finalize) */
  int snap_decimate;         /* default 1 */
  double snap_from[3], snap_to[3]; /* region in model coordinates; default the whole model */

  char *output;              /* output.file (or -o), default "<job basename>.h5"; NULL in a survey */
  int output_segy;           /* output.segy: the traces also as SEG-Y, "<output>.sgy" (needs segyio) */
  int output_model;          /* output.model: the velocity model in the output, /model/vp */

  /* A survey (shots = { ... }): nshots > 0. Each shot fires sources[0] (the only source, whose
   * position the job leaves out) at its shot position; rec[] holds absolute positions
   * ("fixed") or offsets from the shot ("moving"); every shot's file goes to output_dir. */
  long nshots;
  double (*shots)[3];        /* source positions in job order: shots.positions, then shots.lines */
  tw_rec_group *shot_groups; /* where each run of shots came from (messages) */
  int nshot_groups;
  int rec_moving;            /* shots.receivers = "moving" */
  char *output_dir;          /* output.directory, default "<job basename>" (surveys only) */
  char *output_dir_where;    /* where output.directory is given, as errors name it (NULL: the default) */
  /* What a survey's restart compares (a complete shot file carries it): FNV-1a over the job's
   * settings in canonical form (members sorted, exact values), leaving out what does not change a
   * shot's files (output.file/directory, shots.positions/lines, the solver group), plus the size and
   * modification time of model and wavelet files. The survey adds the kernel family (CPU or GPU)
   * and the program version (README, "Surveys"). */
  uint64_t hash;

  /* The solver group's settings are refused after parsing (a kernel this machine lacks, the
   * schedule's limits, threads beyond this machine's CPUs): *_where is where each is given, as errors
   * name it (NULL: not given). */
  char kernel[32];           /* "auto", "cpu", "cpu-diamond", "gpu-stepwise", "gpu-diamond" */
  char *kernel_where;
  int dts;                   /* 0 = default per order */
  char *dts_where;
  int tower_height;          /* 0 = default per order */
  char *height_where;
  uint64_t device_memory;    /* bytes; 0 = no cap (the key left out; 0 itself is refused) */
  char *dm_where;
  int threads;               /* solver.threads: CPU threads, 0 = all */
  char *threads_where;

  int ckpt;                  /* 1: a checkpoint group is present (checkpoints on) */
  long ckpt_every;           /* checkpoint.every: steps between checkpoints, 0 = none */
  double ckpt_every_seconds; /* checkpoint.every_seconds: wall-clock seconds, 0 = none */
  char *ckpt_file;           /* checkpoint.file as given; NULL = the output's name + ".ckpt" */
  char *ckpt_where;          /* where checkpoint.file is given, as errors name it: "job.cfg:12" or
                                "job.cfg: --set checkpoint.file=..." (NULL: not given) */
} tw_job;

/* Parse and validate a job file. overrides: "key=value" strings (--set), applied before
 * validation; their text is appended to job->text. Errors: "job.cfg:12: grid.n[2]: ...".
 * Nothing here reads the model or wavelet files' contents beyond checking they exist. */
tw_status tw_job_load(const char *path, const char *const *overrides, int noverrides, tw_job **out, tw_error *err);
tw_status tw_job_load_string(const char *text, const char *name, const char *const *overrides, int noverrides,
                             tw_job **out, tw_error *err);
void tw_job_destroy(tw_job *job);

/* Where a setting refused after parsing is given, as errors name it: its kept location (a *_where
 * of the job: "job.cfg:12" or "job.cfg: --set key=value"), else the job file. */
static inline const char *tw_job_where(const tw_job *job, const char *kept) { return kept ? kept : job->path; }
/* Where point r of a receiver or shot list (groups: job->rec_groups or shot_groups) came from, as
 * errors name it, into loc[n]: "job.cfg:7: receivers.points[2]", "job.cfg:9: shots.lines[0]: shot 4
 * of it" (what: "receiver", "shot"). */
void tw_job_point_where(const tw_job *job, const tw_rec_group *groups, int ngroups, long r, const char *what,
                        char *loc, size_t n);

/* With the model's velocity range known: choose dt when omitted (margin × stable limit), check
 * stability when given, compute steps from duration, expand snapshots.every. Idempotent. */
tw_status tw_job_finalize(tw_job *job, double vmin, double vmax, tw_error *err);


/* Stability and dispersion (docs/design.md §1). */
double tw_stable_dt(int order, const double d[3], double vmax);  /* largest stable dt */
double tw_courant(int order, const double d[3], double vmax, double dt); /* <= 1 is stable */
double tw_points_per_wavelength(const tw_job *job, double vmin);  /* min over sources */
double tw_ppw_warn_threshold(int order);                          /* 10 (order 2) ... 4 (order 8) */

/* ---------------------------------------------------------------- velocity models */

/* The allowed velocities of a model spec (its vp_range, or the default). */
void tw_vp_range(const tw_model_spec *m, double range[2]);
/* A hint for a velocity v outside range: "in km/s? ...", "in ft/s? ...", or "" (into buf). */
const char *tw_velocity_hint(double v, const double range[2], char *buf, size_t len);

/* The model's velocity on its own (unpadded) grid, [nx][ny][nz], z fastest, in m/s. Values are
 * checked inside tw_vp_range (finite, physical); a bad one is reported with its index (i, j, k)
 * and a hint (km/s, ft/s, a big-endian raw file). */
typedef struct tw_velocity {
  float *vp;
  float *profile;            /* tw_velocity_load_compact only: [nz], the depth profile every column
                                shares (vp is NULL then) */
  int n[3];
  double vmin, vmax;
} tw_velocity;

tw_status tw_velocity_load(const tw_job *job, tw_velocity **out, tw_error *err);
/* The same, but a model that is one depth profile for every column (constant, layered, gradient)
 * comes back as that profile alone (vp NULL, profile [nz]): the solver builds c²dt² from it
 * directly and `check` needs only the velocity range, so neither fills nx·ny·nz values (about 1 s
 * for 0.5 G cells). File models come back whole, as from tw_velocity_load. */
tw_status tw_velocity_load_compact(const tw_job *job, tw_velocity **out, tw_error *err);
void tw_velocity_destroy(tw_velocity *v);

/* ---------------------------------------------------------------- SEG-Y (segy.c, through segyio)
 * Receiver traces out as SEG-Y rev 1 (one file per shot, IEEE float samples, the headers listed
 * in README.md "SEG-Y"), velocity cubes in (model.type = "segy", read by tw_velocity_load). A
 * build without segyio compiles all of this; each call then fails with TW_EUNSUPPORTED and a
 * "built without segyio" message. */

int tw_segy_available(void);            /* 1 when this build has segyio */
/* "<dir>/<base>.sgy" for "<dir>/<base>.h5" (like tw_xdmf_path). malloc'd; NULL: out of memory. */
char *tw_segy_path(const char *h5path);
/* Convert the traces of result file h5path to SEG-Y file sgypath, written as
 * "<sgypath>.part-<pid>" and renamed when complete (nothing under sgypath on failure). Traces are
 * read in blocks: any number of receivers. Fails (naming the limit) when the file holds no
 * receivers, more than 32767 samples per trace, or a sample interval that is not a whole number
 * of microseconds. */
tw_status tw_segy_export(const char *h5path, const char *sgypath, tw_error *err);
/* 1 when path is a SEG-Y file torrewave wrote (3200-byte textual header carrying "written by
 * torrewave", a binary header after it), else 0 (also in a build without segyio). */
int tw_segy_ours(const char *path);
/* The same limits for a finalized job with output.segy (tw_job_finalize calls it): TW_OK, or a
 * status with what is wrong in what[], the offending value in got[] and what to change in
 * allowed[] (no file or line). */
tw_status tw_segy_check_job(const tw_job *job, char *what, size_t what_len, char *got, size_t got_len, char *allowed,
                            size_t allowed_len);

/* ---------------------------------------------------------------- HDF5 output (docs/design.md §5) */

typedef struct tw_output tw_output;

/* Where sources or receivers act, beside their requested coordinates (tw_place on the grid, as
 * placed: on a free surface the taps on k = 0 add or record nothing, p = 0 there). taps: per
 * point, 1 (all nearest) or 8; cells [n][taps][3] model-cell indices (i, j, k), −1 in unused
 * slots; weights [n][taps] (0 in unused slots; they sum to 1); used [n][3] the position the
 * weights stand for, Σ w·x(cell) (a nearest point's cell; a trilinear point itself); interp [n]
 * 0 nearest, 1 trilinear. */
typedef struct tw_points_at {
  long n;
  int taps;
  int *cells;
  double *weights;
  double (*used)[3];
  unsigned char *interp;
} tw_points_at;

/* Whose output a name is, for what refusals advise instead: a single run's (or reference's) file,
 * named by -o or output.file, or a survey's shot file, named by its directory (-o or
 * output.directory; "remove it" where something is in the way of a name no one chooses). */
typedef enum { TW_OUTPUT_RUN, TW_OUTPUT_SHOT } tw_output_role;

typedef struct {
  const tw_job *job;         /* (read again at close: it must outlive the output) */
  const char *path;          /* final name; written as "<path>.part-<pid>" and renamed on close */
  tw_output_role role;       /* whose name it is, checked again at close (tw_output_check_publish) */
  const char *kernel;        /* the kernel that runs */
  double dt;
  long steps;
  /* receivers */
  long nrec;
  const double (*rec)[3];
  long nsamples;             /* floor(steps / interval) + 1 */
  /* sources */
  int nsrc;
  const double (*src)[3];
  const float *wavelets;     /* [nsrc][steps + 1], s(t_n) */
  /* snapshots: region in model cells [i0, i1) etc., decimated by dec; count nsnap */
  int nsnap;
  int snap_lo[3], snap_n[3]; /* first model cell and cells kept per axis after decimation */
  int snap_dec;
  /* the velocity model: its range (root attributes vp_min, vp_max; 0 = unknown) and, when the
   * job asks for it (output.model), the values [nx][ny][nz] stored as /model/vp */
  double vp_min, vp_max;
  const float *vp;
  long shot;                 /* shot index, 0 for a single-shot job (root attribute "shot"; the SEG-Y
                                field record number is shot + 1) */
  /* where the sources and receivers act (NULL: not written): /sources/cells, weights,
   * coords_used, interpolation; /receivers/cells, weights, coords_used and attribute
   * interpolation */
  const tw_points_at *src_at, *rec_at;
} tw_output_desc;

/* Bytes the finished file will need, about: the data plus metadata slack. */
double tw_output_expected_bytes(const tw_output_desc *d);

tw_status tw_output_create(const tw_output_desc *desc, tw_output **out, tw_error *err);
/* Samples [first, first + count) of every receiver: traces[rec][count] (row stride count). */
tw_status tw_output_write_traces(tw_output *o, long first, long count, const float *traces, tw_error *err);
/* Snapshot number isnap at step: data [snap_n[0]][snap_n[1]][snap_n[2]]. Converted to the file's
 * order through a buffer of at most TW_OUTPUT_SLAB_BYTES (or the snapshot's size, if smaller). */
tw_status tw_output_write_snapshot(tw_output *o, int isnap, long step, const float *data, tw_error *err);
#define TW_OUTPUT_SLAB_BYTES ((size_t)128 << 20)
/* Root attributes written at the end: wall time, rate, and any key/value the run adds. */
tw_status tw_output_set_attr_double(tw_output *o, const char *name, double v, tw_error *err);
tw_status tw_output_set_attr_string(tw_output *o, const char *name, const char *v, tw_error *err);
tw_status tw_output_set_attr_long(tw_output *o, const char *name, long v, tw_error *err);
tw_status tw_output_set_attr_doubles(tw_output *o, const char *name, int count, const double *v, tw_error *err);
/* Flush, close, rename to the final name, write the XDMF sidecar and, when the job asks for it
 * (output.segy), the SEG-Y file beside it (tw_segy_export). Before the first rename the names are
 * checked again (tw_output_check_publish): when something came under one while the run computed,
 * nothing is renamed or removed, the complete file is kept as "<stem>.kept-<pid>.h5" with its
 * sidecar and SEG-Y file named after it (names no clean-up removes), and the error names them and
 * what to remove and rename to put them in the output's place. Frees o. */
tw_status tw_output_close(tw_output *o, tw_error *err);
/* tw_output_close, and *kept_whole = 1 when the result was refused at publishing but kept whole under
 * names of its own (its error says what to rename): the run is complete, nothing of it lost. */
tw_status tw_output_close_kept(tw_output *o, int *kept_whole, tw_error *err);
/* Close and delete the temporary file: nothing is left under the final name. Frees o. */
void tw_output_abort(tw_output *o);
/* Whether HDF5 may be called from several threads at once (its thread-safe build): a survey runs
 * one output per worker thread. */
int tw_io_threadsafe(void);
/* Temporary name in use (for messages and signal-time cleanup). */
const char *tw_output_temp_path(const tw_output *o);

/* ---------------------------------------------------------------- the output's name (outpath.c)
 * An output and its sidecar may replace only regular files that are none of the job's inputs;
 * a run holds a lock on the name (OUT.h5.lock, an fcntl lock) for its whole duration. Its lock file
 * and an earlier run's temporaries must be torrewave's (regular files; a lock holding a pid). */

/* Refused: an empty name, a name ending in '/', a folder that does not exist; an output or XDMF
 * sidecar (or, with output.segy, SEG-Y file) that exists and is a symbolic link, a folder, a
 * device, a FIFO or a socket, or is one of the job's inputs (job file, model.file, wavelet files:
 * same device and inode); (tw_output_check_ckpt: a checkpoint file, checkpoint.file with its .journal and .tmp, that
 * would be one of the run's own files, the output, its sidecar, SEG-Y file or lock — the checkpoint files are removed
 * when the run completes, and the output would go with them); a lock file "<path>.lock" that is not a regular file
 * holding a pid (or nothing), i.e. not one torrewave wrote (a link, a folder, a FIFO, a job file of that name), or that
 * is an input. probe: also create and remove "<path>.check-PID" (the folder accepts new files). Never call it in the
 * process that holds path's lock. */
tw_status tw_output_check_path(const char *path, const tw_job *job, int probe, tw_output_role role, tw_error *err);
/* Of tw_output_check_path's rules, those of the names derived from path's, its XDMF sidecar (a job
 * with snapshots) and with output.segy its SEG-Y file: TW_EINVAL (role's advice) when a regular file
 * torrewave did not write is there. For a survey, whose shots' names are checked as each shot
 * starts: the shots it will run are checked so before any runs, the job refused (tw_survey_check_theirs). */
tw_status tw_output_check_theirs(const char *path, const tw_job *job, tw_output_role role, tw_error *err);
/* The files in folder dir that runs onto outputs there would replace, truncate or remove, none of
 * the job's inputs (compared as tw_output_check_path compares them: same device and inode): for
 * outputs whose every name cannot be listed beforehand (a survey's shots, their killed runs'
 * temporaries). owner says whose file an entry's name is: 1, the output's path in out[n] and what
 * the file is of it ("output", "XDMF sidecar", "SEG-Y file", "lock file", "temporary file"), or 0.
 * TW_EINVAL naming the file, its output and the input (role's advice), at the first such file:
 * owner's last call was for it. A folder that is not there holds none. One pass over the folder and
 * an lstat per file owner claims. */
typedef int (*tw_output_owner)(void *user, const char *name, char *out, size_t n, const char **what);
tw_status tw_output_check_inputs_in(const char *dir, const tw_job *job, tw_output_role role, tw_output_owner owner,
                                    void *user, tw_error *err);
/* The same rules for the names a run publishes (output, XDMF sidecar, SEG-Y file), again just
 * before it publishes them, in the process that holds the lock (whose file is not looked at): the
 * refusal without the start's advice (the caller says what to do with the complete result), and
 * the name refused in refused[n] ("" when none). */
tw_status tw_output_check_publish(const char *path, const tw_job *job, tw_output_role role, char *refused, size_t n,
                                  tw_error *err);
/* With checkpoints (a run's validation only: `reference` writes none): the checkpoint's files are
 * none of the run's own files nor an input (as above). */
tw_status tw_output_check_ckpt(const char *path, const tw_job *job, tw_error *err);
/* The same rules for one file written from an input (`export`'s SEG-Y from a result file): a name,
 * its folder there, and if the file exists a regular file that is not `input` (what: "SEG-Y output";
 * how: where its name is given, for the message; input_what: "the result file") and, with
 * replaceable, one it accepts (what such a file is: replaceable_what, e.g. "a SEG-Y file torrewave
 * wrote"): a command that does not know the job (export) must not replace a job file or a model. */
tw_status tw_output_check_file(const char *path, const char *what, const char *how, const char *input,
                               const char *input_what, int (*replaceable)(const char *path),
                               const char *replaceable_what, tw_error *err);
int tw_output_exists(const char *path);          /* a regular file is there (it will be replaced) */
/* The files beside output h5path that a run of job replaces or removes, as they are now (`check` names
 * them, as it names an existing output): its XDMF sidecar where the run writes a snapshot and its
 * SEG-Y file with output.segy, replaced (tw_output_check_path refuses one torrewave did
 * not write); where the run writes none, a sidecar or SEG-Y file of ours that describes no other
 * output there, removed as stale. Up to 2 into out (tw_output_beside_free frees them); returns how
 * many. */
typedef struct {
  char *path;
  const char *what;          /* "XDMF sidecar", "SEG-Y file" */
  int removed;               /* 1: removed as stale; 0: replaced */
} tw_output_beside;
int tw_output_beside_files(const char *h5path, const tw_job *job, tw_output_beside out[2]);
void tw_output_beside_free(tw_output_beside *b, int n);
double tw_output_free_bytes(const char *path);   /* free bytes on its file system, −1 unknown */

/* How every output file is written, so that a failure (a full disk, a kill) never costs the old
 * file under its name: under tw_io_temp_name(path), "<path>.part-<pid>" beside it (malloc'd; NULL:
 * out of memory), made durable (tw_io_fsync: fsync(2); file systems without it pass) and published
 * when complete (tw_io_publish: rename(2) temp → path, then fsync the folder, best effort); on
 * failure the caller removes the temporary. */
char *tw_io_temp_name(const char *path);
tw_status tw_io_fsync(const char *path, tw_error *err);
tw_status tw_io_publish(const char *temp, const char *path, tw_error *err);

/* Temporaries left by earlier runs of this output whose process is gone (kill -9, a crash):
 * "<path>.part-PID", "<sidecar>.part-PID", "<segy>.part-PID", "<path>.check-PID". *names (free with
 * tw_output_stale_free) lists them; with remove, they are deleted too (a run does it while it
 * holds the lock). A live process (kill(pid, 0) succeeds) keeps its files. A gone process's name
 * that is not a regular file (a folder, a link: no run wrote it) fails, listing and removing
 * alike (TW_EINVAL, naming it), and then nothing is removed: every name is checked before any goes.
 * role: as tw_output_check_path. */
tw_status tw_output_stale(const char *path, int remove, tw_output_role role, char ***names, int *count,
                          tw_error *err);
void tw_output_stale_free(char **names, int count);
/* For a file written as tw_io_temp_name says (bench --json): its temporaries "<path>.part-PID"
 * whose process is gone, that this user owns and that ours accepts (regular files, what a killed
 * writer of that file left), removed; *names lists them (tw_output_stale_free). Anything else
 * under such a name stays, untouched: a live process's, another user's, a link, a folder, a file
 * ours refuses, one that cannot be removed. An error only when out of memory. */
tw_status tw_output_remove_parts(const char *path, int (*ours)(const char *path), char ***names, int *count,
                                 tw_error *err);

typedef struct tw_output_lock tw_output_lock;
/* Take the output's lock, failing at once with TW_EBUSY naming the holder's pid when another
 * process holds it, and with TW_EINVAL when the lock file is not one torrewave wrote (as
 * tw_output_check_path). Released (and the lock file removed) by tw_output_lock_release; the kernel releases
 * it when the process dies. On a file system without locks (ENOLCK) it succeeds holding nothing
 * (tw_output_lock_held says 0). fcntl locks belong to the process: one process does not conflict
 * with itself. role: as tw_output_check_path (what the messages advise). */
tw_status tw_output_lock_take(const char *path, tw_output_role role, tw_output_lock **lock, tw_error *err);
int tw_output_lock_held(const tw_output_lock *lock);
void tw_output_lock_release(tw_output_lock *lock);
/* The pid that holds path's lock now (−1: held, pid unknown), 0 when none. For `check`: never call
 * it in the process that holds the lock (closing any descriptor of the file drops an fcntl lock). */
long tw_output_lock_holder(const char *path);

/* Reading back (compare, reference, export, tests). */
typedef struct tw_result {
  char *path;
  char *kernel;
  char *job_text;
  char *job_file;            /* root attributes "job_file" and "version" ("" when absent) */
  char *version;
  long shot;                 /* root attribute "shot" (0 when absent) */
  int n[3];
  double d[3], origin[3];
  double dt;                 /* simulation dt */
  long steps;
  int order;
  long nrec, nsamples;
  double sample_dt;          /* receivers/traces attribute dt */
  double *rec;               /* [nrec][3] */
  float *traces;             /* [nrec][nsamples]; NULL after tw_result_open_meta */
  int nsrc;
  double *src;               /* [nsrc][3] source coordinates */
  int nsnap;
  int snap_shape[3];         /* [nx][ny][nz], model axis order, whatever the file's layout */
  int snap_zyx;              /* the file stores [nsnap][nz][ny][nx] (0: an older [nsnap][nx][ny][nz]) */
  long *snap_steps;
  double *snap_times;
} tw_result;

tw_status tw_result_open(const char *path, tw_result **out, tw_error *err);

/* The same without the traces (r->traces stays NULL): read them in blocks with
 * tw_result_read_traces, so that a file of any size can be converted (torrewave export). */
tw_status tw_result_open_meta(const char *path, tw_result **out, tw_error *err);
/* Receivers [first, first + count) into traces[count][nsamples]. */
tw_status tw_result_read_traces(const tw_result *r, long first, long count, float *traces, tw_error *err);
/* Snapshot isnap into data[snap_shape product], [nx][ny][nz] with z fastest (transposed here
 * from the file's [nz][ny][nx]). */
tw_status tw_result_read_snapshot(const tw_result *r, int isnap, float *data, tw_error *err);
void tw_result_close(tw_result *r);

/* What a survey's shot file says about itself (root attributes shot, source_position,
 * job_hash): enough to tell, without reading its data, whether it is the complete result of a
 * given shot of a given job. TW_EFORMAT when the file lacks them (not a shot file); TW_EIO when it
 * cannot be opened. */
typedef struct tw_shot_stamp {
  long index;
  double pos[3];
  char hash[24];             /* 16 hex digits */
  int snapshots;             /* it has snapshots (/snapshots, count > 0): complete, it has an XDMF sidecar */
} tw_shot_stamp;
tw_status tw_shot_stamp_read(const char *path, tw_shot_stamp *s, tw_error *err);

/* ---------------------------------------------------------------- checkpoints (checkpoint.c)
 *
 * A checkpoint lets a run stopped at a block boundary (a crash, SIGKILL, SIGTERM) go on bit for
 * bit. Two files:
 *   <ckpt>          the state at one step t: both time levels of the padded grid (level t and
 *                   t − 1) in the canonical layout [N0][N1][N2], z fastest, whatever kernel wrote
 *                   them (so any kernel of the family can resume them), and a header saying
 *                   which job it belongs to (tw_ckpt_ident) and how much of the journal is its.
 *                   Written as <ckpt>.tmp, fsync'ed, renamed: a crash while writing leaves the
 *                   previous checkpoint as it was.
 *   <ckpt>.journal  the run's output so far, appended as it is produced (receiver samples and
 *                   snapshots, each record once): a resume replays its first journal_len bytes
 *                   into a fresh output file and truncates it there.
 * Layout of <ckpt> (native byte order, little-endian on every machine torrewave builds for; the
 * header says which): a 4096-byte header (its own crc32 in the last 4 bytes), then the field in
 * chunks of ppc x-planes, chunk c = planes [c·ppc, …) of level t then the same planes of level
 * t − 1 (each [nx][N1][N2] float32), then the trailer: one crc32 per chunk, the file's size and
 * the table's crc32. A truncated file shows in its size, a damaged one in a chunk's checksum. */

/* The parts of a job that determine the numbers; a checkpoint records a 64-bit hash of each, and
 * a resume needs all of them equal. Anything else may change between a run and its resume:
 * solver.* (kernel, dts, tower_height, device_memory, threads), output.file, checkpoint.*, the
 * job file's comments and layout, a model or wavelet file's name (its contents count). */
enum {
  TW_CKPT_GRID,      /* grid.n, grid.d, grid.origin, scheme.order */
  TW_CKPT_TIME,      /* dt and the number of steps (as finalized) */
  TW_CKPT_MODEL,     /* the velocity model's values */
  TW_CKPT_BOUNDARY,  /* absorbing cells per axis, free surface */
  TW_CKPT_SOURCES,   /* positions, interpolation, the wavelets' samples s(t_n) */
  TW_CKPT_RECEIVERS, /* positions (expanded), interval, interpolation */
  TW_CKPT_SNAPSHOTS, /* steps, region, decimation */
  TW_CKPT_NPART
};
typedef struct tw_ckpt_ident {
  uint64_t hash[TW_CKPT_NPART];
  int n[3], order;           /* shown in messages */
  double d[3], dt;
  long steps;
} tw_ckpt_ident;
/* vp: the model [n0][n1][n2] as read (tw_velocity.vp); wavelets: [nsources][steps + 1], s(t_n). */
void tw_ckpt_ident_make(const tw_job *job, const float *vp, const float *wavelets, tw_ckpt_ident *id);

typedef struct tw_ckpt_info {
  tw_ckpt_ident id;
  int N[3];                  /* padded grid */
  long step;                 /* the fields are levels step and step − 1 */
  uint64_t run_id;           /* the run this checkpoint and its journal belong to */
  uint64_t journal_len;      /* journal bytes that belong to this checkpoint, and their crc32 */
  uint32_t journal_crc;
  double compute_s, wall_s;  /* spent up to step, over every resumed segment */
  double written;            /* Unix time of writing */
  char kernel[32];           /* the kernel that wrote it */
  char job_path[256];
  uint64_t file_bytes;       /* the checkpoint file's size */
} tw_ckpt_info;

/* The checkpoint's name for a job: checkpoint.file, else "<output>.ckpt". malloc'd (NULL: out of
 * memory). Its journal and temporary file: "<ckpt>.journal", "<ckpt>.tmp". */
char *tw_checkpoint_path(const tw_job *job, const char *output);
/* Bytes of a checkpoint of the padded grid N. */
uint64_t tw_ckpt_file_bytes(const int N[3]);
/* 1 when a file exists under path (a checkpoint or anything else), 0 when none. */
int tw_checkpoint_exists(const char *path);
/* Remove the checkpoint, its journal and a leftover temporary file. */
void tw_checkpoint_remove(const char *path);
/* TW_EMISMATCH when the checkpoint is of another job: the message names every part that differs
 * (with the values for the grid and time). */
tw_status tw_ckpt_match(const char *path, const tw_ckpt_info *found, const tw_ckpt_ident *want, tw_error *err);

/* x-planes [x0, x0 + nx) of both levels: cur = level step, prev = level step − 1, each
 * [nx][N1][N2]. The writer calls it to get them, the reader to hand them over. */
typedef tw_status (*tw_ckpt_planes_fn)(void *ctx, int x0, int nx, float *cur, float *prev, tw_error *err);

/* Writing. background = 1 keeps a copy of both levels (8 bytes per cell): get() fills it at once
 * (the run stands still for that copy only), then a thread writes the file while the run goes
 * on. background = 0 needs no copy: get() is called chunk by chunk (about 32 MiB each) and the
 * run waits until the file is written. */
typedef struct tw_ckpt_writer tw_ckpt_writer;
typedef struct tw_ckpt_stats {
  int written;               /* checkpoints completed */
  double bytes;              /* bytes of one */
  double write_s;            /* writing them: open to rename, summed (in the thread when background) */
  double last_s;             /* the last one */
} tw_ckpt_stats;
tw_status tw_ckpt_writer_create(const char *path, const int N[3], int background, tw_ckpt_writer **out,
                                tw_error *err);
/* Write the checkpoint of info->step. A background write still in progress is waited for first
 * (its error, if any, is returned). journal_fd (or −1) is fdatasync'ed before the rename, so that
 * the journal bytes the checkpoint names are on disk when it appears. */
tw_status tw_ckpt_writer_submit(tw_ckpt_writer *w, const tw_ckpt_info *info, tw_ckpt_planes_fn get, void *ctx,
                                int journal_fd, tw_error *err);
/* Wait for a background write; its status. */
tw_status tw_ckpt_writer_wait(tw_ckpt_writer *w, tw_error *err);
int tw_ckpt_writer_background(const tw_ckpt_writer *w);
tw_ckpt_stats tw_ckpt_writer_stats(const tw_ckpt_writer *w);
/* Abandon a write in progress (its temporary file is removed: the previous checkpoint stays) and
 * free. Testing: TW_CHECKPOINT_CRASH_AFTER=BYTES in the environment makes the process kill
 * itself (SIGKILL) once that many bytes of checkpoints (all of this run's together) are written, as a
 * crash would. */
void tw_ckpt_writer_destroy(tw_ckpt_writer *w);

/* Reading. read_info checks the header (magic, version, byte order, checksum), the file's size
 * and the trailer, without reading the field; read_fields then reads it chunk by chunk, checks
 * each chunk's checksum and hands its planes to put(). Messages say what was found: "not a
 * torrewave checkpoint", "truncated: 1.2 GiB of 4.4 GiB", "corrupted: x-planes 40..47 fail their
 * checksum". */
tw_status tw_ckpt_read_info(const char *path, tw_ckpt_info *info, tw_error *err);
tw_status tw_ckpt_read_fields(const char *path, tw_ckpt_planes_fn put, void *ctx, tw_error *err);

/* The journal: records appended as the run writes its output, crc32 kept as it goes. */
typedef struct tw_journal tw_journal;
typedef struct tw_journal_sink {
  tw_status (*traces)(void *user, long first, long count, const float *traces, tw_error *err);
  tw_status (*snapshot)(void *user, int isnap, long step, const float *data, tw_error *err);
  void *user;
  long nrec;                 /* receivers of a trace record: its payload is count × nrec floats */
  size_t snap_floats;        /* floats of a snapshot record */
} tw_journal_sink;
/* A new journal (an old file of that name is replaced). */
tw_status tw_journal_create(const char *path, uint64_t run_id, tw_journal **out, tw_error *err);
/* Reopen the journal of a checkpoint: replay its first info->journal_len bytes into sink (records
 * in the order written), check their crc32, cut the file there and append after it. A record whose
 * payload is not the size sink->nrec and sink->snap_floats give it is refused as corrupted before
 * the sink sees it (the crc32 is known only at the end). */
tw_status tw_journal_resume(const char *path, const tw_ckpt_info *info, const tw_journal_sink *sink,
                            tw_journal **out, tw_error *err);
/* traces[nrec][count] (row stride count), samples [first, first + count); a snapshot of n floats. */
tw_status tw_journal_traces(tw_journal *j, long first, long count, long nrec, const float *traces, tw_error *err);
tw_status tw_journal_snapshot(tw_journal *j, int isnap, long step, size_t n, const float *data, tw_error *err);
/* Bytes written so far and their crc32 (what a checkpoint taken now records). */
void tw_journal_position(const tw_journal *j, uint64_t *len, uint32_t *crc);
int tw_journal_fd(const tw_journal *j);
void tw_journal_close(tw_journal *j);

/* How fast `bytes` reach the disk near path (a probe file "<path>.probe-<pid>", written, fsync'ed,
 * removed): for `check`'s estimate of a checkpoint's write time. */
tw_status tw_disk_write_rate(const char *path, size_t bytes, double *bytes_per_s, tw_error *err);

#ifdef __cplusplus
}
#endif
#endif

/* ================================================================ comparing two results (compare.c)
 * `torrewave compare A B`: receivers are paired by coordinates, snapshots by step; per dataset the
 * relative L2 difference ||A − B|| / max(||A||, ||B||) (symmetric: compare A B = compare B A) and
 * the largest absolute difference with where it is. Files that cannot be compared (different
 * grids, dt or sample dt, nothing in common) give TW_EMISMATCH with every reason in the message. */
#ifndef TW_IO_COMPARE_H
#define TW_IO_COMPARE_H
#ifdef __cplusplus
extern "C" {
#endif

typedef struct tw_compare_opts {
  double rtol;               /* a dataset passes when rel_l2 <= rtol; 0 → 1e-5 */
  double coord_tol;          /* receivers pair when each coordinate differs by <= coord_tol · min(d);
                                0 → 1e-6 */
  int skip_snapshots;        /* compare traces only */
  int strict;                /* every receiver, sample and snapshot of each file paired, else not comparable */
} tw_compare_opts;

typedef enum { TW_COMPARE_TRACES, TW_COMPARE_SNAPSHOT } tw_compare_kind;

/* An rtol at or below this asks for the same numbers (`compare --strict --rtol 1e-30`): a relative
 * L2 that small does not say so alone, since float32 values far below a dataset's norm differ by
 * less (0 against 1e-37 beside a peak of 1e-3: 1e-34), so a dataset then passes only when no value
 * differs. */
#define TW_COMPARE_EXACT_RTOL 1e-30

typedef struct tw_compare_stat {
  tw_compare_kind kind;      /* traces: all paired receivers as one dataset; snapshot: one step */
  long step;                 /* snapshot: its step (traces: -1) */
  double time;               /* snapshot: its time in s (traces: 0) */
  long count;                /* values compared */
  double norm_a, norm_b;     /* L2 norms of the compared values */
  double rel_l2;             /* ||A − B|| / max(||A||, ||B||); 0 when both are zero; NaN fails */
  double max_abs;            /* max |A − B| */
  double peak;               /* max(|A|, |B|): the scale of max_abs */
  long ndiff;                /* values that differ (A != B, NaN included) */
  int pass;                  /* rel_l2 <= rtol; with rtol <= TW_COMPARE_EXACT_RTOL, also ndiff == 0 */
  /* where max |A − B| is */
  long rec_a, rec_b;         /* traces: receiver index in A and in B */
  long sample;               /* traces: sample index */
  double at_time;            /* traces: sample time (sample · sample dt); snapshot: its time */
  int snap_cell[3];          /* snapshot: its cell in the stored snapshot, x y z (after region, decimation) */
  int model_cell[3];         /* snapshot: the model cell that is, first_cell + snap_cell·decimate (pos_known) */
  double pos[3];             /* receiver coordinates (A's) or the snapshot cell's model coordinates */
  int pos_known;             /* snapshot: 0 when the file does not say where its region lies (model_cell, pos) */
  /* traces: the receiver pair with the largest ||A − B||, and its own relative L2 */
  long worst_rec_a, worst_rec_b;
  double worst_rec_rel_l2;
} tw_compare_stat;

typedef struct tw_compare_report {
  double rtol, coord_tol_m;  /* as used; coord_tol_m in metres */
  long nrec_a, nrec_b, npairs;
  long *pair_a, *pair_b;     /* [npairs]: receiver indices of each pair, in A's order */
  long *unmatched_a, *unmatched_b; /* receivers without a partner */
  long nunmatched_a, nunmatched_b;
  long nsamples_a, nsamples_b, nsamples; /* nsamples: the common leading samples compared */
  double sample_dt;
  int nsnap_a, nsnap_b, nsnap_common;    /* snapshots only in one file are not compared */
  int snap_geo_known;        /* the files say where their snapshots lie: the two below, each stat's model_cell */
  int snap_first_cell[3];    /* the model cell of stored cell [0, 0, 0] (the region's first) */
  int snap_decimate;         /* model cells from one stored cell to the next, on every axis */
  int snapshots_skipped;                 /* opts.skip_snapshots: none paired or compared */
  int nstat;
  tw_compare_stat *stat;     /* traces first (when receivers pair), then snapshots by step */
  int nfail;                 /* datasets above rtol */
  int pass;                  /* nfail == 0 */
} tw_compare_report;

/* Fill rep (free it with tw_compare_report_free, also after an error). TW_EMISMATCH: the files
 * cannot be compared; the message lists every reason ("grid n differs: A [64, 64, 64], B ..."). */
tw_status tw_compare(const tw_result *a, const tw_result *b, const tw_compare_opts *opts, tw_compare_report *rep,
                     tw_error *err);
void tw_compare_report_free(tw_compare_report *rep);

#ifdef __cplusplus
}
#endif
#endif /* TW_IO_COMPARE_H */
