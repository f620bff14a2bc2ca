/* loom jobspec: job files as users bring them.
 *
 * A batch script's "#SBATCH" directives (sbatch's options, with the meaning
 * and value formats sbatch gives them), its "#LOOM" directives (loom
 * submit's own options), and Kubernetes batch/v1 Job manifests are read
 * into one loom_jobspec_t. Options given later override earlier ones, so a
 * caller applies the file first and the command line after it, as sbatch
 * does. loom_jobspec_to_params then writes job.submit's parameters
 * (docs/protocol.md).
 *
 * What loom cannot honour is never dropped silently: the spec collects a
 * warning per directive or field it ignores (LOOM_JOBSPEC_STRICT makes an
 * unsupported #SBATCH directive an error). Some options are parsed, checked
 * and carried in the submission, but not acted on yet (array, dependency,
 * begin, hold, nice, retries): loom_jobspec_to_params says which in the
 * warnings. Errors name the file, the line and what was expected.
 *
 * Depends on core only (and libyaml for manifests).
 */
#ifndef LOOM_JOBSPEC_H
#define LOOM_JOBSPEC_H

#include <stdbool.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

/* Limits on what a job file may ask for. */
#define LOOM_JOBSPEC_VALUE_MAX       4096    /* bytes of one option value */
#define LOOM_JOBSPEC_DIRECTIVES_MAX  1000    /* directive lines in one script */
#define LOOM_JOBSPEC_WARNINGS_MAX    64      /* warnings kept (a last one says how many more) */
#define LOOM_JOBSPEC_ENV_MAX         256     /* variables from --export or a manifest's env */
#define LOOM_JOBSPEC_EXPORT_BYTES    65536   /* bytes of the environment --export=ALL passes */
#define LOOM_JOBSPEC_ARRAY_INDEX_MAX 4000000 /* the largest array index (sbatch: MaxArraySize) */
#define LOOM_JOBSPEC_ARRAY_TASKS_MAX 100000  /* tasks in one array */

typedef enum loom_jobspec_dialect {
    LOOM_JOBSPEC_SBATCH = 0, /* sbatch's names and value formats */
    LOOM_JOBSPEC_LOOM = 1    /* loom submit's names (and sbatch's where loom has none) */
} loom_jobspec_dialect_t;

enum {
    /* An #SBATCH directive loom does not support is an error, not a warning. */
    LOOM_JOBSPEC_STRICT = 1u << 0
};

/* A job as its file and options describe it. Unset numbers are -1 (0 is a
 * meaningful value for several). Strings and JSON values are owned. */
typedef struct loom_jobspec {
    char *name;
    int64_t cpus;          /* loom's --cpus: the total; -1 unset */
    int64_t cpus_per_task; /* sbatch -c */
    int64_t ntasks;        /* sbatch -n: tasks on one node, each with cpus_per_task */
    int64_t cpus_per_gpu;
    uint64_t mem_bytes; /* --mem: per node (the job); 0 with mem_set: all of a node */
    bool mem_set;
    uint64_t mem_per_cpu_bytes; /* --mem-per-cpu; 0 unset */
    int64_t gpus;               /* -G/--gpus, --gres=gpu:N, --gpus-per-node */
    int64_t gpus_per_task;      /* --gpus-per-task (times ntasks) */
    char *gpu_type;
    int64_t gpu_share_milli;   /* loom --gpu-share */
    uint64_t gpu_memory_bytes; /* loom --gpu-mem; 0 unset */
    int64_t time_limit_s;      /* -1 unset, 0 none (UNLIMITED) */
    int64_t priority;          /* loom --priority; INT64_MIN unset */
    char *workdir;             /* -D/--chdir, workingDir */
    char *output;              /* -o pattern (%j %x %u %A %a %%) */
    char *error;               /* -e pattern; NULL: merged into output */
    char *export_mode;         /* "ALL", "NONE" or "NIL" (sbatch --export); NULL unset */
    bool export_given;         /* an --export was given (else sbatch's default: ALL) */
    json_t *export_names;      /* --export's bare NAMEs: taken from the environment */
    json_t *env;               /* array of "NAME=VALUE" (--export, a manifest's env) */
    char *array;               /* --array as given, checked (loom_jobspec_array_parse) */
    char *dependency;          /* --dependency as given, checked */
    char *begin;               /* --begin as given */
    char *account;
    char *comment;
    int64_t nice; /* INT64_MIN unset */
    bool hold;
    int64_t retries;  /* backoffLimit; -1 unset */
    json_t *labels;   /* object of string values (loom --label) */
    json_t *warnings; /* array of strings */
} loom_jobspec_t;

void loom_jobspec_init(loom_jobspec_t *spec);
void loom_jobspec_free(loom_jobspec_t *spec);

/* Adds a warning (kept up to LOOM_JOBSPEC_WARNINGS_MAX). */
void loom_jobspec_warn(loom_jobspec_t *spec, const char *fmt, ...) LOOM_PRINTF(2, 3);

/* Applies one option, spelled as on a command line ("--mem", "-c", "mem"
 * for a long name without dashes is also taken); value is NULL for a flag
 * (--hold). where ("train.sh:3", "command line") prefixes messages.
 * LOOM_ENOTFOUND: not an option of that dialect (err says so); LOOM_EINVAL:
 * a bad value. *takes_value (may be NULL) tells whether the option wants a
 * value, so a tokenizer knows to join "-c 4"; call with value NULL and
 * check it first when unsure: a missing value is then LOOM_EINVAL. */
int loom_jobspec_set(loom_jobspec_t *spec, loom_jobspec_dialect_t dialect, const char *option,
                     const char *value, const char *where, loom_err_t *err);
/* Whether option (as above) is known to the dialect, and takes a value. */
bool loom_jobspec_option(loom_jobspec_dialect_t dialect, const char *option, bool *takes_value);

/* Reads the #SBATCH and #LOOM directives of a batch script (text of len
 * bytes, file names it in messages). As sbatch, directives are read up to
 * the first command line; a directive after it is ignored with a warning.
 * Several options may share a line; words are split as the shell would
 * (quotes), and a word starting with '#' begins a comment. */
int loom_jobspec_parse_script(loom_jobspec_t *spec, const char *text, size_t len, const char *file,
                              unsigned flags, loom_err_t *err);

/* Reads a Kubernetes batch/v1 Job manifest (docs/jobfiles.md). */
int loom_jobspec_parse_k8s(loom_jobspec_t *spec, const char *text, size_t len, const char *file,
                           loom_err_t *err);

/* Writes job.submit's parameters: name (if set), resources, time_limit,
 * priority, labels (merged into any there) and "options" (workdir, output,
 * error, env, export, array, dependency, begin, hold, nice, account,
 * comment, retries, ntasks, cpus_per_task). Adds to spec's warnings the
 * options carried but not yet acted on. LOOM_EINVAL if the combination is
 * impossible (e.g. --mem with --mem-per-cpu from one source is caught
 * earlier; here: a total beyond the limits). */
int loom_jobspec_to_params(loom_jobspec_t *spec, json_t *params, loom_err_t *err);

/* --export as sbatch applies it, against the submitter's environment envp
 * (NULL-terminated "NAME=VALUE"): no --export or ALL passes all of it,
 * a list of NAMEs passes those, NONE/NIL none; NAME=VALUE pairs given win
 * over the environment's. LOOM_URL and LOOM_TOKEN (the client's own) and
 * names that are not shell names are never passed. What does not fit the
 * limits (LOOM_JOBSPEC_ENV_MAX variables, LOOM_JOBSPEC_VALUE_MAX bytes a
 * value, LOOM_JOBSPEC_EXPORT_BYTES in all) is left out with a warning
 * naming it, as is a listed NAME that is not set. */
void loom_jobspec_export_env(loom_jobspec_t *spec, char *const *envp);

/* ----------------------------------------------------------- value forms */

/* A time limit, the one reading for job files and the command line:
 * Slurm's formats "M", "M:S", "H:M:S", "D-H", "D-H:M", "D-H:M:S" (a bare
 * number is minutes), rounded up to whole minutes as Slurm keeps them, and
 * "INFINITE"/"UNLIMITED" (0: no limit); or loom's durations with units
 * ("1h30m", "90s"), exact to the second. Result in seconds. */
int loom_jobspec_parse_time(const char *text, int64_t *seconds, loom_err_t *err);
/* Slurm's memory sizes: an integer with an optional K, M, G or T suffix
 * (powers of 1024); no suffix means megabytes (MiB). */
int loom_jobspec_parse_slurm_mem(const char *text, uint64_t *bytes, loom_err_t *err);
/* Kubernetes quantities ("500m", "1.5", "2Gi", "129e6", "128974848000m"):
 * scaled by 1000 (milli) when milli is true, then rounded up to an
 * integer. */
int loom_jobspec_parse_quantity(const char *text, bool milli, uint64_t *out, loom_err_t *err);

/* sbatch's --begin: now[+N[seconds|minutes|hours|days|weeks]],
 * YYYY-MM-DD[THH:MM[:SS]] or HH:MM[:SS] (local time; a time of day alone is
 * the next such moment after submit_ns). Out: wall-clock nanoseconds. */
int loom_jobspec_parse_begin(const char *text, int64_t submit_ns, int64_t *out_ns, loom_err_t *err);

/* sbatch's --array: "0-99", "0-15:4", "1,3,5-7", each with an optional
 * "%N" cap on tasks running at once. */
typedef struct loom_jobspec_array {
    int64_t count;       /* tasks */
    int64_t first;       /* smallest index */
    int64_t last;        /* largest index */
    int64_t max_running; /* 0 = no cap */
} loom_jobspec_array_t;
int loom_jobspec_array_parse(const char *text, loom_jobspec_array_t *out, loom_err_t *err);
/* Whether index is one of the array's tasks (text already checked). */
bool loom_jobspec_array_has(const char *text, int64_t index);

/* sbatch's --dependency: "afterok:12:13,afterany:14", "?" between types
 * for any-of, "singleton", "after:12+5" (minutes). Checked only. */
int loom_jobspec_dependency_check(const char *text, loom_err_t *err);

/* The values a filename pattern draws on. */
typedef struct loom_jobspec_ids {
    int64_t job_id;       /* %j */
    const char *name;     /* %x */
    const char *user;     /* %u */
    int64_t array_job_id; /* %A; 0: not an array (then %A is the job id) */
    int64_t array_task;   /* %a; -1: not an array task (then %a is 4294967294, as Slurm) */
} loom_jobspec_ids_t;

/* Expands %j %x %u %A %a %% (with an optional zero-padding width, "%4j")
 * and a leading "\" that turns expansion off, as sbatch. Other %-letters
 * (%N, %n, %t, %s, %J) are expanded as for a single-node batch step: %N
 * the node name given, %n and %t 0, %s "batch", %J "ID.batch". */
int loom_jobspec_expand(const char *pattern, const loom_jobspec_ids_t *ids, const char *node,
                        char *out, size_t outlen, loom_err_t *err);

#ifdef __cplusplus
}
#endif
#endif
