/* loom store: the durable job queue, SQLite in WAL mode.
 *
 * - A schema versioned by PRAGMA user_version and brought up to date by an
 *   ordered list of migrations when the store opens.
 * - Jobs (with their resources, labels, state) and job events (every state
 *   change with its time).
 * - Group commit: writes (submissions, cancels) are queued; one committer
 *   thread takes everything queued and writes it in ONE transaction, then
 *   completes each waiter. A write is reported done only after its commit.
 * - Idempotent submission: a repeated submit_id returns the first job, also
 *   when both arrive in the same transaction and across restarts.
 *
 * Durability (see docs/store.md): LOOM_DURABILITY_NORMAL is synchronous=
 * NORMAL in WAL mode: a committed write survives a crash of the process
 * (kill -9) but may be lost if the machine loses power before the next
 * checkpoint. LOOM_DURABILITY_FULL is synchronous=FULL: the WAL is fsynced at
 * every commit, so a committed write also survives power loss.
 *
 * The store knows nothing of RPC or HTTP. All functions are thread-safe.
 */
#ifndef LOOM_STORE_H
#define LOOM_STORE_H

#include <stdbool.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The job states (loom_job_state_t, their names) are core's: loom/core.h. */

typedef enum loom_job_format {
    LOOM_JOB_FORMAT_BATCH = 0, /* a shell batch script (#!/bin/bash ...) */
    LOOM_JOB_FORMAT_YAML = 1   /* a YAML job description */
} loom_job_format_t;

const char *loom_job_format_name(loom_job_format_t format); /* "batch" | "yaml" */
int loom_job_format_parse(const char *text, loom_job_format_t *out, loom_err_t *err);

/* What a submission asks for. Strings are borrowed by the store functions
 * (copied before they return). */
typedef struct loom_job_spec {
    const char *submit_id; /* idempotency key, NULL for none */
    const char *name;      /* required, non-empty */
    const char *script;    /* required (may be empty text) */
    loom_job_format_t format;
    int64_t cpus;              /* >= 1 */
    uint64_t memory_bytes;     /* 0 = unspecified */
    int64_t gpus;              /* whole GPUs, >= 0 */
    int64_t gpu_share_milli;   /* share of one GPU in milli-GPU, 0..1000 */
    uint64_t gpu_memory_bytes; /* 0 = unspecified */
    const char *gpu_type;      /* NULL = any */
    int64_t time_limit_s;      /* 0 = none */
    int64_t priority;
    const char *labels_json; /* a JSON object of string values; NULL = {} */
    /* job.submit's "model" reference (an object), not interpreted by the
     * store: loomd estimates it and fills gpu_memory_bytes and
     * estimate_json (docs/protocol.md). NULL if none. */
    const json_t *model;
    const char *estimate_json; /* the estimate record (JSON object text); NULL = none */
    /* job.submit's "options" (JSON object text: workdir, output, error, env,
     * array, dependency, ...; docs/protocol.md); NULL = none. */
    const char *options_json;
    /* job.submit's "reconfig" (JSON object text, checked by loomd:
     * docs/scheduling.md, "Reconfigurable jobs"); NULL = a black box. */
    const char *reconfig_json;
    /* Who submitted it (filled by loomd from the caller's identity, never
     * from the request): has_owner false stores no owner (a job of loomd's
     * own user, as before owners existed). account defaults to group. */
    bool has_owner;
    int64_t uid, gid;
    const char *user, *group, *account; /* NULL: none */
} loom_job_spec_t;

/* Limits on a spec (documented in docs/protocol.md, job.submit). */
#define LOOM_STORE_NAME_MAX        256          /* bytes */
#define LOOM_STORE_SCRIPT_MAX      (512 * 1024) /* bytes */
#define LOOM_STORE_SUBMIT_ID_MAX   128          /* bytes */
#define LOOM_STORE_CPUS_MAX        4096
#define LOOM_STORE_GPUS_MAX        1024
#define LOOM_STORE_TIME_LIMIT_MAX  (366LL * 24 * 3600) /* seconds */
#define LOOM_STORE_PRIORITY_MIN    (-1000000)
#define LOOM_STORE_PRIORITY_MAX    1000000
#define LOOM_STORE_LABELS_MAX      64
#define LOOM_STORE_LABEL_KEY_MAX   63
#define LOOM_STORE_LABEL_VALUE_MAX 256

/* Checks every field against the limits above; the message names the field
 * as the protocol spells it ("resources.cpus: expected ..."). */
int loom_job_spec_validate(const loom_job_spec_t *spec, loom_err_t *err);
/* Labels: an object of at most 64 string values, keys of 1..63 characters
 * from A-Z a-z 0-9 . _ - /, values up to 256 bytes without control bytes. */
int loom_job_labels_validate(const json_t *labels, loom_err_t *err);

/* Initialises a spec with the defaults: cpus 1, everything else 0/NULL,
 * format batch. */
void loom_job_spec_init(loom_job_spec_t *spec);

/* A job as stored. Owns its strings; free with loom_job_free. Times are
 * nanoseconds since the Unix epoch, 0 when the event has not happened. */
typedef struct loom_job {
    int64_t id;
    char *submit_id; /* NULL if none */
    char *name;
    char *script;
    loom_job_format_t format;
    int64_t cpus;
    uint64_t memory_bytes;
    int64_t gpus;
    int64_t gpu_share_milli;
    uint64_t gpu_memory_bytes;
    char *gpu_type; /* NULL if any */
    int64_t time_limit_s;
    int64_t priority;
    char *labels_json; /* never NULL ("{}" if none) */
    loom_job_state_t state;
    char *reason; /* NULL if none */
    int64_t submit_time_ns;
    int64_t start_time_ns;
    int64_t end_time_ns;
    int64_t update_time_ns;
    char *run_json;      /* placement, executor handle, outcome (JSON object); NULL before a run */
    char *estimate_json; /* where the GPU memory request came from (JSON object); NULL if none */
    char *options_json;  /* job.submit's "options" (JSON object); NULL if none */
    char *reconfig_json; /* job.submit's "reconfig" (JSON object); NULL if none */
    /* The owner: uid and gid -1 when the job has none (docs/security.md). */
    int64_t uid, gid;
    char *user, *group, *account; /* NULL if none */
} loom_job_t;

void loom_job_free(loom_job_t *job); /* frees the members, not job itself */
int loom_job_copy(loom_job_t *dst, const loom_job_t *src);

typedef struct loom_job_event {
    int64_t time_ns;
    int has_from; /* 0 for the submission event */
    loom_job_state_t from;
    loom_job_state_t to;
    char *reason; /* NULL if none */
} loom_job_event_t;

typedef enum loom_durability {
    LOOM_DURABILITY_NORMAL = 0, /* survives a crash of the process */
    LOOM_DURABILITY_FULL = 1    /* also survives power loss */
} loom_durability_t;

const char *loom_durability_name(loom_durability_t d);
int loom_durability_parse(const char *text, loom_durability_t *out, loom_err_t *err);

typedef struct loom_store_options {
    loom_durability_t durability;
    size_t max_queue; /* queued writes before LOOM_ELIMIT; 0 = 65536 */
    size_t max_group; /* writes per transaction at most; 0 = 8192 */
    /* Checkpoints (docs/store.md): a PASSIVE one once the WAL holds this many
     * frames not yet copied (0 = 4000), and a RESTART one, which lets the
     * next writer start the WAL over, once the WAL is this long (0 = 16000,
     * 64 MiB of 4 KiB pages), so that steady writes cannot grow it without
     * bound. */
    int checkpoint_frames;
    int wal_restart_frames;
    /* Every commit on the committer thread: LOOM_STORE_DEFER is ignored and
     * loom_store_help does nothing (to compare the two; also set by the
     * environment variable LOOM_STORE_HELP=0). */
    bool no_help;
    /* Skip PRAGMA quick_check at open (a damaged database is otherwise
     * refused with LOOM_ECORRUPT; docs/store.md, Damage). */
    bool skip_check;
    /* Full disk (docs/store.md): a file of reserve_bytes at reserve_path,
     * released when a transaction fails for want of space (which is then
     * tried once more), made again once writes succeed. NULL or 0: none. */
    const char *reserve_path;
    size_t reserve_bytes;
} loom_store_options_t;

typedef struct loom_store loom_store_t;

/* Opens (creating if needed) the database at path, applies migrations and
 * starts the committer thread. opts may be NULL (defaults). */
int loom_store_open(const char *path, const loom_store_options_t *opts, loom_store_t **out,
                    loom_err_t *err);
/* Stops accepting writes, commits everything already queued (completing its
 * waiters), stops the committer and closes the database. NULL is a no-op. */
void loom_store_close(loom_store_t *store);

/* The highest job id stored, 0 when there is none. */
int loom_store_max_id(loom_store_t *store, int64_t *out, loom_err_t *err);

/* Schema version after migrations, and the newest this build knows. */
int loom_store_schema_version(loom_store_t *store);
int loom_store_schema_latest(void);

/* Completion of an asynchronous write, called on the thread that committed
 * it (the committer, a loom_store_help caller, or the completer) once
 * the transaction holding the write has committed (or failed). On success
 * rc is LOOM_OK and job is the job as stored (owned by the store; copy what
 * you keep); created tells whether a new job was made (false: the submit_id
 * existed). On failure rc < 0, job is NULL and err says why:
 * LOOM_EINVAL (bad spec), LOOM_ENOTFOUND (no such job), LOOM_ESTATE (job
 * already terminal), LOOM_EIO (database error: nothing of the group was
 * written). The callback must not call back into the store's synchronous
 * write functions (it runs on the thread holding the writer connection). */
typedef void (*loom_store_done_fn)(void *ctx, int rc, const loom_job_t *job, bool created,
                                   const loom_err_t *err);

/* Flags of the asynchronous writes. */
enum {
    /* The caller will queue more writes right away (the next calls of a
     * JSON-RPC batch): the committer may wait a moment (at most
     * LOOM_STORE_LINGER_US) for a write without this flag, so that they
     * share one transaction. Never needed for correctness. */
    LOOM_STORE_MORE = 1u << 0,
    /* The caller will call loom_store_help() once it has queued its writes
     * (e.g. after dispatching a whole request): the committer thread is not
     * woken for this write, the caller's thread commits it instead, sparing
     * a thread hand-off. Queueing with this flag and never calling
     * loom_store_help leaves the write waiting until some other write
     * wakes the committer. */
    LOOM_STORE_DEFER = 1u << 1
};
#define LOOM_STORE_LINGER_US 500
/* Commit delay: when the previous transaction held several writers, the
 * committer waits up to this long for as many to queue again. */
#define LOOM_STORE_COMMIT_DELAY_US 150

/* Commits the queued writes on the calling thread, unless another thread
 * (the committer or another helper) is committing right now — that one
 * takes them before it stops, so they are never left behind. Completions
 * of groups of a few writes then run on this thread too (for large ones:
 * the completer thread), with the same rule as on the committer: they must
 * not call the store's synchronous write functions. Returns once the queue
 * is empty, or after a bounded number of groups (it then hands the rest to
 * the committer thread). Cheap when there is nothing to do (one mutex). */
void loom_store_help(loom_store_t *store);

/* Queue a submission. Returns LOOM_OK when queued (done will be called
 * exactly once), or an error without calling done: LOOM_EINVAL (spec
 * invalid), LOOM_ELIMIT (queue full), LOOM_ESTATE (store closing). */
int loom_store_submit_async(loom_store_t *store, const loom_job_spec_t *spec, unsigned flags,
                            loom_store_done_fn done, void *ctx, loom_err_t *err);
/* Queue a cancel of job id (reason may be NULL). Same contract. */
int loom_store_cancel_async(loom_store_t *store, int64_t id, const char *reason, unsigned flags,
                            loom_store_done_fn done, void *ctx, loom_err_t *err);

/* A state change made by the scheduler and executor, e.g. PENDING ->
 * RUNNING when a job is placed and RUNNING -> COMPLETED when it ends. With
 * expect >= 0 the change happens only if the job is in that state, else
 * LOOM_ESTATE (and nothing changes): a job cancelled meanwhile is not
 * started. to < 0 keeps the state and only replaces the run information.
 * run_json (NULL: keep) is the job's run object (docs/store.md). A new state
 * adds an event with the reason, and so does to equal to the present state
 * with a reason (a running job reconfigured: RUNNING -> RUNNING); RUNNING sets the start time, a
 * terminal state the end time. Waits for the commit; job_out may be NULL. */
int loom_store_transition(loom_store_t *store, int64_t id, int expect, int to, const char *reason,
                          const char *run_json, loom_job_t *job_out, loom_err_t *err);

/* A change to a pending job (job.update, job.hold, job.release): each
 * member set replaces the stored one; LOOM_ESTATE once the job is no longer
 * PENDING, LOOM_ENOTFOUND for an unknown id. Waits for the commit; job_out
 * (may be NULL) receives the job as changed. An event PENDING -> PENDING
 * is added, in the same transaction, when event names one (a hold or a
 * release: "held by ana"); else none (the state does not change). */
typedef struct loom_job_update {
    char *name;           /* NULL: keep */
    int64_t time_limit_s; /* < 0: keep; 0: none */
    bool set_priority;
    int64_t priority;
    char *options_json; /* the whole options object; NULL: keep */
    char *event;        /* the event's reason; NULL: no event */
} loom_job_update_t;
/* A job array (sbatch --array): one PENDING job per task index, all in one
 * transaction (all or none). The first task's id is the array's id; every
 * task's options get "array_job_id" and "array_task_id". job_out receives
 * the first task; a repeated submit_id creates nothing (*created_out false)
 * and answers with the first task of the earlier array. */
#define LOOM_STORE_ARRAY_MAX 100000
int loom_store_submit_array(loom_store_t *store, const loom_job_spec_t *spec, const int64_t *tasks,
                            size_t ntasks, loom_job_t *job_out, bool *created_out, loom_err_t *err);
int loom_store_update(loom_store_t *store, int64_t id, const loom_job_update_t *u,
                      loom_job_t *job_out, loom_err_t *err);

/* Pending reasons (Resources, Priority, QuotaLimit, ...; the scheduler's,
 * docs/store.md): job ids[i]'s reason becomes reasons[i] (NULL: none) if
 * it is still PENDING (else it is left alone); no event is added and the
 * update time is kept. All in one transaction; waits for the commit. */
int loom_store_set_reasons(loom_store_t *store, const int64_t *ids, const char *const *reasons,
                           size_t n, loom_err_t *err);

/* fn(ctx) runs on the committing thread after every committed transaction
 * (before its waiters are completed), e.g. to wake a scheduler. It must be
 * quick and must not write to the store. NULL removes it. */
void loom_store_set_commit_hook(loom_store_t *store, void (*fn)(void *ctx), void *ctx);

/* Synchronous forms: wait for the commit, which the calling thread makes
 * itself when no other thread is committing (loom_store_help): call them
 * without holding a lock that the commit hook or another write's
 * completion takes. job_out (may be NULL) receives a copy (loom_job_free
 * it); created_out may be NULL. */
int loom_store_submit(loom_store_t *store, const loom_job_spec_t *spec, loom_job_t *job_out,
                      bool *created_out, loom_err_t *err);
int loom_store_cancel(loom_store_t *store, int64_t id, const char *reason, loom_job_t *job_out,
                      loom_err_t *err);

/* Reads (see committed data only). */
int loom_store_get(loom_store_t *store, int64_t id, loom_job_t *job_out, loom_err_t *err);
/* The job with submit_id among those of owner uid (-1: jobs without an
 * owner): submit_id is one namespace per owner (docs/security.md). */
int loom_store_get_by_submit_id(loom_store_t *store, int64_t uid, const char *submit_id,
                                loom_job_t *job_out, loom_err_t *err);
/* Events of a job, oldest first. Free with loom_store_events_free. */
int loom_store_events(loom_store_t *store, int64_t id, loom_job_event_t **out, size_t *n,
                      loom_err_t *err);
void loom_store_events_free(loom_job_event_t *events, size_t n);

/* Keyset pagination over jobs in ascending id order (newest_first:
 * descending, the cursor then the last id seen of the previous page). */
typedef struct loom_store_filter {
    unsigned state_mask; /* bit (1u << state); 0 = every state */
    int64_t after_id;    /* the cursor: only ids past it; 0 = from the start */
    size_t limit;        /* 1..10000; 0 = 100 */
    bool newest_first;   /* descending id order */
} loom_store_filter_t;

typedef struct loom_job_list {
    loom_job_t *jobs;
    size_t n;
    int64_t next_after_id; /* cursor for the next page, 0 if this was the last */
} loom_job_list_t;

int loom_store_list(loom_store_t *store, const loom_store_filter_t *filter, loom_job_list_t *out,
                    loom_err_t *err);
void loom_job_list_free(loom_job_list_t *list);

/* ------------------------------------------------- JSON form (protocol) */

/* Fills spec from a job.submit params object (docs/protocol.md): name,
 * script, format, resources {cpus, memory, gpus, gpu_share, gpu_memory,
 * gpu_type}, time_limit, priority, labels, submit_id, model (an object,
 * only checked to be one; spec->model points to it). Sizes are integers
 * (bytes) or strings ("16GiB"); time_limit is integer seconds or a duration
 * string ("1h30m"). Unknown members are errors. Strings in spec point into
 * obj (keep it alive); *labels_text (free() it) holds the labels as JSON
 * text, and its "options" too (spec->options_json points after the labels' NUL). Messages name the
 * parameter ("resources.cpus: expected ..."). The spec is also validated (loom_job_spec_validate).
 */
int loom_job_spec_from_json(const json_t *obj, loom_job_spec_t *spec, char **labels_text,
                            loom_err_t *err);

/* job.submit's "options" object (docs/protocol.md): known members of the
 * right types, within the limits. The message names the member
 * ("options.workdir: expected ..."). */
int loom_job_options_validate(const json_t *options, loom_err_t *err);

/* The text rule (loom_text_unsafe_at) for a field shown on terminals:
 * LOOM_EINVAL naming the field and the byte offset of the offender. */
int loom_store_check_text(const char *field, const char *s, loom_err_t *err);

/* A job's name, at job.submit and job.update alike: 1 to
 * LOOM_STORE_NAME_MAX bytes of UTF-8 under the text rule, and neither a
 * '/' nor "..": %x in an output pattern puts the name into a path, which
 * must stay in the directory the pattern names (docs/security.md). */
int loom_job_name_check(const char *name, loom_err_t *err);

/* The protocol's job object. with_script adds "script". NULL if out of
 * memory. */
json_t *loom_job_to_json(const loom_job_t *job, bool with_script);
/* A job event as {"time", "from", "to", "reason"}. */
json_t *loom_job_event_to_json(const loom_job_event_t *event);

/* Counters for monitoring. */
/* Usage (accounting, docs/security.md#accounting): what the jobs that ran
 * in [since_ns, now_ns) held, per user and account, from the jobs table, so
 * it survives restarts. A job counts from its start to its end (now, while
 * it runs), clipped to the window; resources are what it was given. */
typedef struct loom_store_usage_query {
    const char *user;    /* NULL: every user */
    const char *account; /* NULL: every account */
    int64_t since_ns;    /* 0: from the first job */
    int64_t now_ns;      /* the window's end (wall clock) */
} loom_store_usage_query_t;

typedef struct loom_store_usage_row {
    char *user;         /* "" for jobs without an owner */
    char *account;      /* "" likewise */
    int64_t jobs;       /* jobs that ran in the window */
    double gpu_seconds; /* GPUs x seconds, a share counting as its fraction */
    double cpu_seconds; /* CPUs allocated x seconds */
    double memory_gib_seconds;
    double wall_seconds; /* the jobs' run times in the window, summed */
} loom_store_usage_row_t;

/* Rows ordered by user, then account; *rows malloc'd (free with
 * loom_store_usage_free). */
int loom_store_usage(loom_store_t *store, const loom_store_usage_query_t *q,
                     loom_store_usage_row_t **rows, size_t *n, loom_err_t *err);
void loom_store_usage_free(loom_store_usage_row_t *rows, size_t n);

/* Pending jobs of a user (uid >= 0) or of an account (account != NULL),
 * for quotas. */
int loom_store_count_pending(loom_store_t *store, int64_t uid, const char *account, int64_t *n,
                             loom_err_t *err);

typedef struct loom_store_stats {
    uint64_t queued;                          /* writes waiting for the committer now */
    uint64_t commits;                         /* transactions committed since open */
    uint64_t helped_commits;                  /* of those, made by loom_store_help callers */
    uint64_t writes;                          /* writes completed since open (ok or not) */
    uint64_t commit_failures;                 /* transactions that failed */
    uint64_t last_group;                      /* writes in the last transaction */
    uint64_t max_group;                       /* most writes in one transaction */
    uint64_t jobs_by_state[LOOM_JOB_NSTATES]; /* current job counts */
    uint64_t wal_restarts;                    /* times the WAL started over from its beginning */
    uint64_t wal_frames_max;                  /* the longest the WAL has been since open, frames */
    uint64_t jobs_listed;                     /* jobs loom_store_list has read since open */
    bool write_failing;                       /* the last transaction failed (disk full, I/O) */
} loom_store_stats_t;

int loom_store_stats(loom_store_t *store, loom_store_stats_t *out, loom_err_t *err);

/* ------------------------------------------------------- usage series
 * What a running job used over time (docs/store.md, "Usage series"): one
 * point per sample; a point covers span_ns up to time_ns and holds means
 * over that span and peaks within it. A job keeps at most
 * LOOM_USAGE_POINTS_MAX points: past that its series is downsampled
 * (neighbours merged in pairs), so a week-long job's series stays bounded.
 * NAN: not known (no cgroup I/O, no NVML, no power reading). */
#define LOOM_USAGE_GPUS_MAX   16
#define LOOM_USAGE_POINTS_MAX 1000

typedef struct loom_usage_gpu {
    int index;                /* the node's GPU index */
    double util_pct;          /* mean utilisation over the span, 0-100 */
    double util_peak_pct;     /* highest sample in the span */
    double memory_bytes;      /* mean memory held */
    double memory_peak_bytes; /* most memory held */
    double power_watts;       /* mean board power (whole GPUs only) */
} loom_usage_gpu_t;

typedef struct loom_usage_point {
    int64_t time_ns;          /* wall clock at the end of the span */
    int64_t span_ns;          /* how long the point covers */
    double cpu_cores;         /* mean CPUs busy (CPU seconds per second) */
    double memory_bytes;      /* mean memory in use */
    double memory_peak_bytes; /* most memory in use */
    double read_bytes_per_second, write_bytes_per_second;
    int ngpus;
    loom_usage_gpu_t gpus[LOOM_USAGE_GPUS_MAX];
} loom_usage_point_t;

/* How often a job of age_ns is sampled: every second in its first minute,
 * every 10 s in its first hour, every minute in its first day, every 5
 * minutes after. */
int64_t loom_usage_interval_ns(int64_t age_ns);

/* Appends points[i] to the series of jobs[i], all in one transaction. */
int loom_store_usage_append(loom_store_t *store, const int64_t *jobs,
                            const loom_usage_point_t *points, size_t n, loom_err_t *err);
/* The series of job, oldest first (*out malloc'd, NULL when empty). */
int loom_store_usage_series(loom_store_t *store, int64_t job, loom_usage_point_t **out, size_t *n,
                            loom_err_t *err);
/* Merges the series of job in pairs if it has more than max points
 * (0: LOOM_USAGE_POINTS_MAX); *n_out is its length afterwards. */
int loom_store_usage_downsample(loom_store_t *store, int64_t job, size_t max, size_t *n_out,
                                loom_err_t *err);
/* The cluster over time (docs/store.md, "Cluster series"): loomd writes
 * one point a minute; points older than a day are merged into hours, and
 * points older than the window are deleted. Means over the span. */
typedef struct loom_cluster_point {
    int64_t time_ns, span_ns;
    double gpus_total, gpus_allocated; /* GPUs; a share counts as its fraction */
    double gpus_whole, gpus_shared;    /* allocated as whole GPUs; as shares (fractions) */
    double gpus_busy;                  /* GPUs NVML saw at 5% utilisation or more; NAN: no NVML */
    double cpus_total, cpus_allocated;
    double memory_total_bytes, memory_allocated_bytes;
    double pending, running; /* jobs */
} loom_cluster_point_t;

#define LOOM_CLUSTER_FINE_NS   (86400 * LOOM_NS_PER_S) /* per-minute points kept this long */
#define LOOM_CLUSTER_COARSE_NS (3600 * LOOM_NS_PER_S)  /* then one point per this */

/* Appends p, then merges the points older than LOOM_CLUSTER_FINE_NS into
 * hours and deletes those older than window_ns (0: 30 days). */
int loom_store_cluster_append(loom_store_t *store, const loom_cluster_point_t *p, int64_t window_ns,
                              loom_err_t *err);
/* The points that end after since_ns, oldest first (*out malloc'd). */
int loom_store_cluster_series(loom_store_t *store, int64_t since_ns, loom_cluster_point_t **out,
                              size_t *n, loom_err_t *err);

/* Merges neighbours (0,1), (2,3), ... in place: span-weighted means, the
 * larger peak, the later time; returns the new length ((n + 1) / 2). */
size_t loom_usage_merge_pairs(loom_usage_point_t *p, size_t n);

#ifdef __cplusplus
}
#endif
#endif
