/* loom exec: running jobs.
 *
 * An executor starts a job, tells whether it has ended and how, cancels it,
 * and adopts it again after loomd restarts. Two implementations stand behind
 * one interface (loom_exec_ops_t): the local executor here, and Slurm's.
 *
 * The local executor never runs a job as loomd's direct child. It starts a
 * small shepherd process (loom-shepherd) per job, which detaches into its own
 * session, starts the job in a new process group (and a cgroup v2 when the
 * machine allows), enforces the time limit (TERM, then KILL after a grace
 * period), reaps it, and writes the outcome to DIR/status.json atomically.
 * So a job keeps its time limit and its outcome is known even if loomd is
 * killed and restarted meanwhile: loomd re-adopts the shepherd by PID plus
 * start time and reads the status file when the shepherd is gone.
 */
#ifndef LOOM_EXEC_H
#define LOOM_EXEC_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_EXEC_MAX_GPUS 64
#define LOOM_EXEC_PATH_MAX 512
/* The longest jobs directory an executor takes: its jobs' directories
 * (JOBS_DIR/ID) and files (.../stdout, .../shepherd.log) then fit in
 * LOOM_EXEC_PATH_MAX. */
#define LOOM_EXEC_JOBS_DIR_MAX 400

typedef enum loom_exec_format {
    LOOM_EXEC_BATCH = 0, /* a bash script */
    LOOM_EXEC_YAML = 1   /* a Kubernetes batch/v1 Job manifest (see docs/exec.md) */
} loom_exec_format_t;

/* What to run. Strings are borrowed for the duration of the start call. */
typedef struct loom_exec_job {
    int64_t id;
    const char *name;
    loom_exec_format_t format;
    const char *script;     /* batch script text or YAML manifest */
    const char *const *env; /* extra KEY=VALUE strings, NULL-terminated, may be NULL */
    int64_t cpus_milli;     /* CPU request; thread variables use ceil(cpus) */
    uint64_t memory_bytes;  /* 0 = no limit */
    const int *gpus;        /* assigned GPU indices */
    size_t n_gpus;
    int64_t gpu_share_milli; /* share of one GPU for sharing jobs, else 0 */
    int64_t time_limit_ns;   /* 0 = none */
    const char *node;        /* the node loom's policy chose (Slurm: --nodelist), may be NULL */
    const char *tag;         /* idempotency tag (Slurm: --comment), e.g. "loom:42", may be NULL */
    /* The job's stored options (docs/protocol.md, job.submit "options"):
     * workdir, output and error patterns, env. NULL: none (the job runs in
     * its job directory, output to its stdout and stderr files there). */
    const char *options_json;
    /* Run as the job's owner (multi-user loomd, docs/security.md): the
     * shepherd drops to uid, gid and uid's groups before it opens the output
     * files, changes directory or executes anything. false: run as the
     * executor's own user. */
    bool run_as_owner;
    uid_t uid;
    gid_t gid;
} loom_exec_job_t;

typedef struct loom_exec_config {
    const char *jobs_dir;      /* per-job directories are JOBS_DIR/<id> */
    const char *shepherd_path; /* NULL: $LOOM_SHEPHERD, else loom-shepherd next to /proc/self/exe */
    int64_t grace_ns;          /* between TERM and KILL; 0 means 10 s */
    bool use_cgroup;           /* try a cgroup v2 per job (falls back with a reason) */
    /* Local executor: a job whose stdout and stderr files together pass
     * this many bytes is stopped (TERM, KILL after the grace) and FAILED
     * "output limit ... reached"; checked once a second. 0: no limit. */
    uint64_t output_max;
} loom_exec_config_t;

/* A running job as loomd remembers it (persist these fields to adopt). */
typedef struct loom_exec_handle {
    int64_t job_id;
    pid_t shepherd_pid;
    uint64_t shepherd_start; /* /proc/PID/stat starttime, guards against PID reuse */
    char dir[LOOM_EXEC_PATH_MAX];
    char stdout_path[LOOM_EXEC_PATH_MAX];
    char stderr_path[LOOM_EXEC_PATH_MAX];
    char cgroup[LOOM_EXEC_PATH_MAX]; /* "" when no cgroup is used */
    char cgroup_note[256];           /* why not, or which limits are not enforced */
    char ext_id[32];                 /* Slurm: the Slurm job id */
    char ext_state[32];              /* Slurm: last state seen by poll (PENDING, RUNNING, ...) */
    char ext_reason[128];            /* Slurm: its reason (Resources, Priority, ...) */
    char tag[48];                    /* the idempotency tag it was started with (job->tag);
                                      * the ops' adopt looks for it when ext_id is empty */
} loom_exec_handle_t;

typedef enum loom_exec_end {
    LOOM_EXEC_COMPLETED = 0, /* exit status 0 */
    LOOM_EXEC_FAILED,        /* non-zero exit, killed by a signal, or lost */
    LOOM_EXEC_TIMEOUT,       /* time limit reached */
    LOOM_EXEC_CANCELLED      /* cancelled */
} loom_exec_end_t;

typedef struct loom_exec_outcome {
    loom_exec_end_t end;
    int exit_code;    /* -1 if killed by a signal or unknown */
    int signal;       /* 0 if none */
    int64_t start_ns; /* wall clock, 0 if unknown */
    int64_t end_ns;
    int64_t cpu_user_us;
    int64_t cpu_sys_us;
    int64_t max_rss_kb;
    char reason[256]; /* human-readable: "exit code 3", "time limit 10s reached", ... */
} loom_exec_outcome_t;

/* The executor interface. poll returns 0 while running, 1 when ended (with
 * *out filled), or a negative error. */
typedef struct loom_exec_ops {
    const char *name;
    int (*start)(void *self, const loom_exec_job_t *job, loom_exec_handle_t *h, loom_err_t *err);
    int (*poll)(void *self, loom_exec_handle_t *h, loom_exec_outcome_t *out, loom_err_t *err);
    int (*cancel)(void *self, loom_exec_handle_t *h, loom_err_t *err);
    int (*adopt)(void *self, loom_exec_handle_t *h, loom_err_t *err);
} loom_exec_ops_t;

/* The local executor. */
extern const loom_exec_ops_t loom_exec_local_ops;
typedef struct loom_exec_local loom_exec_local_t;

int loom_exec_local_new(const loom_exec_config_t *cfg, loom_exec_local_t **out, loom_err_t *err);
void loom_exec_local_free(loom_exec_local_t *x);
/* Whether jobs get a cgroup v2, and if not (or only partly) why. */
bool loom_exec_local_cgroup(const loom_exec_local_t *x, const char **note);

int loom_exec_local_start(loom_exec_local_t *x, const loom_exec_job_t *job, loom_exec_handle_t *h,
                          loom_err_t *err);
int loom_exec_local_poll(loom_exec_local_t *x, loom_exec_handle_t *h, loom_exec_outcome_t *out,
                         loom_err_t *err);
/* Asks the shepherd to stop the job: TERM to the group, KILL after grace.
 * The outcome (CANCELLED) arrives through poll. */
int loom_exec_local_cancel(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err);
/* Time-slicing: the shepherd stops the job's process group (SIGSTOP) or lets
 * it go on (SIGCONT). Suspended time does not count against the time limit.
 * A stopped job keeps its memory, GPU memory included (docs/exec.md).
 * LOOM_ESTATE if the job has ended. */
int loom_exec_local_suspend(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err);
int loom_exec_local_resume(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err);

/* After a restart: h holds the persisted fields (the PID may be 0 when loomd
 * died before recording it: the shepherd's own PID file, or its command line
 * in /proc, finds it). Returns LOOM_OK if the shepherd still runs (same PID
 * and start time) or has left its status file; LOOM_ESTATE if the job never
 * started (no shepherd ever ran for it: it can be queued again);
 * LOOM_ENOTFOUND if the job is lost (poll then reports FAILED). */
int loom_exec_local_adopt(loom_exec_local_t *x, loom_exec_handle_t *h, loom_err_t *err);

/* The Slurm executor (src/exec/slurm.c, docs/slurm.md): submits with sbatch
 * pinned to the chosen node, follows with squeue/scontrol (sacct when
 * accounting exists), cancels with scancel. */
typedef struct loom_exec_slurm_config {
    const char *jobs_dir;  /* scripts and output files: JOBS_DIR/<id>/ (shared file system) */
    const char *partition; /* NULL: the default partition */
    const char *bin_dir;   /* where sbatch etc. live; NULL: PATH */
} loom_exec_slurm_config_t;

extern const loom_exec_ops_t loom_exec_slurm_ops;
typedef struct loom_exec_slurm loom_exec_slurm_t;

int loom_exec_slurm_new(const loom_exec_slurm_config_t *cfg, loom_exec_slurm_t **out,
                        loom_err_t *err);
void loom_exec_slurm_free(loom_exec_slurm_t *x);
int loom_exec_slurm_start(loom_exec_slurm_t *x, const loom_exec_job_t *job, loom_exec_handle_t *h,
                          loom_err_t *err);
int loom_exec_slurm_poll(loom_exec_slurm_t *x, loom_exec_handle_t *h, loom_exec_outcome_t *out,
                         loom_err_t *err);
int loom_exec_slurm_cancel(loom_exec_slurm_t *x, loom_exec_handle_t *h, loom_err_t *err);
/* Reads the state of all Slurm jobs with one squeue. Until the next sync,
 * poll answers jobs that are still pending or running from this snapshot
 * instead of running scontrol for each (a job that ended, or that the
 * snapshot lacks, is still asked with scontrol, for its exit code). On
 * error the snapshot is dropped and poll asks scontrol. */
int loom_exec_slurm_sync(loom_exec_slurm_t *x, loom_err_t *err);
/* Finds the job again: by h->ext_id, else by the tag in Slurm's comment
 * (so a job submitted just before a crash is never submitted twice). The
 * tag must name one submission: a job placed again after Slurm's first
 * job for it was given up carries a new tag (loomd: loom:<id>.<attempt>). */
int loom_exec_slurm_adopt(loom_exec_slurm_t *x, loom_exec_handle_t *h, const char *tag,
                          loom_err_t *err);
/* The partition's nodes as a JSON array of objects: name, cpus,
 * memory_bytes, gpus, state (Slurm's, lower case: idle, mixed, allocated,
 * down, drained, ...), available (bool). */
int loom_exec_slurm_nodes(loom_exec_slurm_t *x, json_t **nodes, loom_err_t *err);
/* Maps a Slurm job state (and exit code "N:S") to a loom outcome; returns
 * 0 if the state is not final. Exposed for tests. */
int loom_exec_slurm_map_state(const char *state, const char *exit_code, const char *reason,
                              loom_exec_outcome_t *out);

/* The environment a job gets besides its own: LOOM_JOB_ID, LOOM_JOB_NAME,
 * CUDA_VISIBLE_DEVICES, LOOM_GPU_SHARE_MILLI, OMP/MKL/OPENBLAS_NUM_THREADS.
 * Appends "KEY=VALUE" strings to out (a JSON array). */
int loom_exec_job_env(const loom_exec_job_t *job, json_t *out);

/* YAML jobs: the first container's command + args and env of a batch/v1 Job
 * manifest. argv and env are JSON arrays of strings (appended to). */
int loom_exec_yaml_command(const char *manifest, size_t len, json_t *argv, json_t *env,
                           char *workdir, size_t workdir_len, loom_err_t *err);

/* The shepherd's main (loom-shepherd DIR). Runs the job described by
 * DIR/spec.json. Exposed so the shepherd binary is a one-line main. */
int loom_exec_shepherd_main(int argc, char **argv);

/* /proc/PID/stat field 22 (start time in clock ticks since boot). */
int loom_exec_proc_start_time(pid_t pid, uint64_t *start, loom_err_t *err);
const char *loom_exec_end_name(loom_exec_end_t end);

#ifdef __cplusplus
}
#endif
#endif
