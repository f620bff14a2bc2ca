/* The loom CLI: one table of subcommands (main.c), one file per command.
 * Commands parse their own options with getopt_long, print --help, and
 * return the process exit status (see docs/cli.md for the codes). */
#ifndef LOOM_CLI_H
#define LOOM_CLI_H

#include <stddef.h>
#include <stdint.h>
#include <stdbool.h>

#include "loom/core.h"

/* Exit codes, documented in docs/cli.md. */
enum {
    LOOM_EXIT_OK = 0,
    LOOM_EXIT_FAILURE = 1,   /* the operation failed (server error, job failed, ...) */
    LOOM_EXIT_USAGE = 2,     /* bad command line */
    LOOM_EXIT_CONNECT = 3,   /* cannot reach loomd, or authentication refused */
    LOOM_EXIT_NOTFOUND = 4,  /* a named object does not exist */
    LOOM_EXIT_INPUT = 5,     /* an input file is malformed */
    LOOM_EXIT_PERMISSION = 6 /* the job belongs to another user (docs/security.md) */
};

/* Options given before the command name. */
typedef struct loom_cli_globals {
    const char *url;   /* --url, else LOOM_URL, else NULL (the default) */
    const char *token; /* LOOM_TOKEN, else NULL (read the token file) */
} loom_cli_globals_t;

extern loom_cli_globals_t loom_cli;

typedef int (*loom_cli_fn)(int argc, char **argv);

/* Each command: argv[0] is the command name. */
int loom_cmd_version(int argc, char **argv);
int loom_cmd_submit(int argc, char **argv);
int loom_cmd_jobs(int argc, char **argv);
int loom_cmd_usage(int argc, char **argv);
/* job.usage's result as text charts (usage_chart.c, for loom show --usage). */
void loom_cli_usage_charts(const json_t *usage);
int loom_cmd_show(int argc, char **argv);
int loom_cmd_cancel(int argc, char **argv);
int loom_cmd_hold(int argc, char **argv); /* cmd_queue.c: hold, release, requeue, update */
int loom_cmd_release(int argc, char **argv);
int loom_cmd_requeue(int argc, char **argv);
int loom_cmd_update(int argc, char **argv);
/* Job ids from argv[first..]: ID, or an array's id for all its active
 * tasks, or ARRAYID_TASK for one (job.list is read once if needed). *out is
 * calloc'ed; returns an exit code (messages printed). */
int loom_cli_job_ids(const char *cmd, int argc, char **argv, int first, int64_t **out,
                     size_t *nout);
int loom_cmd_wait(int argc, char **argv);
int loom_cmd_logs(int argc, char **argv);
int loom_cmd_info(int argc, char **argv);
int loom_cmd_nodes(int argc, char **argv);
int loom_cmd_sim(int argc, char **argv);
/* loom sim --policy rubick,...: the Rubick experiment (cmd_sim_rubick.c) */
int loom_cmd_sim_rubick(int argc, char **argv);
/* --seeds N, A-B or a comma-separated list of them: *out (malloc'd), *n;
 * -1 on anything else. cmd_sim.c. */
int loom_cli_parse_seeds(const char *s, uint64_t **out, size_t *n);
int loom_cmd_prof(int argc, char **argv);
int loom_cmd_mon(int argc, char **argv);
int loom_cmd_render(int argc, char **argv);
int loom_cmd_gen(int argc, char **argv);
int loom_cmd_catalog(int argc, char **argv);
int loom_cmd_estimate(int argc, char **argv);
int loom_cmd_dash(int argc, char **argv);
int loom_cmd_zoo(int argc, char **argv);

/* The Slurm-compatible front (cmd_slurm_*.c, docs/slurm.md): sbatch,
 * squeue, scancel, sacct, sinfo with Slurm 22.05's options and output. */
int loom_cmd_sbatch(int argc, char **argv);
int loom_cmd_squeue(int argc, char **argv);
int loom_cmd_scancel(int argc, char **argv);
int loom_cmd_sacct(int argc, char **argv);
int loom_cmd_sinfo(int argc, char **argv);
int loom_cmd_slurm_links(int argc, char **argv);
/* The Slurm command that argv0 (a path) names, or NULL: loom run as
 * "sbatch" through a link of loom slurm-links. */
loom_cli_fn loom_cli_slurm_by_name(const char *argv0);

/* loom's one partition, as squeue, sinfo and sacct name it. */
#define LOOM_CLI_PARTITION "loom"

/* loom sbatch: loom submit's parsing and submission (cmd_submit.c), with
 * sbatch's own options; *result is job.submit's result. Returns an exit
 * code, -1 for --help (not printed). */
typedef struct loom_cli_sbatch {
    bool parsable, wait, quiet;
} loom_cli_sbatch_t;
int loom_cli_sbatch_submit(int argc, char **argv, loom_cli_sbatch_t *out, json_t **result);

/* loom submit --warm-start (cmd_zoo.c): zoo.warm for params' model, the
 * parent recorded in labels, LOOM_WARM_START exported by the script. */
int loom_cli_zoo_warm_start(json_t *params, json_t *labels, const char *task, const char *submit_id,
                            loom_buf_t *script);

/* getopt_long's '?' (an unknown option) or ':' (one without its value; the
 * optstring starts with ':', after a '+' if any, so that getopt itself says
 * nothing) in one line, "loom CMD: unknown option '--x'; try 'loom CMD
 * --help'", not the whole help (client.c). word is argv[optind - 1].
 * Returns LOOM_EXIT_USAGE. */
int loom_cli_bad_option(const char *cmd, int c, const char *word);

#endif
