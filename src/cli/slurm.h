/* What loom's Slurm-compatible commands (cmd_slurm_*.c) share: reading
 * the jobs, Slurm's job ids (123, 123_4 for an array's task), times as
 * Slurm prints them, and option errors in one line. */
#ifndef LOOM_CLI_SLURM_H
#define LOOM_CLI_SLURM_H

#include <stdbool.h>
#include <stdint.h>

#include "cli/cli.h"
#include "cli/client.h"

/* Every job of job.list in states (a JSON array of loom state names; NULL
 * or empty: all), oldest first, into *jobs. Returns an exit code. */
int loom_slurm_jobs(const char *cmd, const json_t *states, json_t **jobs);

/* The user running this, or NULL (message printed). */
const char *loom_slurm_me(const char *cmd);
/* The job's owner's user name, "" if none. */
const char *loom_slurm_user(const json_t *job);
/* An array's task: its array id and task index. */
bool loom_slurm_task(const json_t *job, int64_t *array_id, int64_t *task);
/* "123" or, for an array's task, "120_3". out must hold 48 bytes. */
const char *loom_slurm_job_id(const json_t *job, char *out);

/* Seconds since the epoch of one of loom's times, or -1 (null). */
double loom_slurm_epoch(const json_t *t);
/* Slurm's local time "2026-12-05T18:23:24" of epoch seconds; "N/A" when
 * s < 0 (or unknown, when given). out must hold 32 bytes. */
const char *loom_slurm_time(double s, const char *unknown, char *out);
/* A job's run time in seconds (0 when it never started). */
int64_t loom_slurm_elapsed(const json_t *job, double now);

/* Job ids as -j and scancel take them: "12,15_3,20". Each into ids as
 * [id, task] (task -1: the job, or every task of array id). Returns an
 * exit code (message printed). */
int loom_slurm_parse_ids(const char *cmd, const char *text, json_t *ids);
bool loom_slurm_id_match(const json_t *ids, const json_t *job);
/* -u USER[,...]: user names or uids, each a user of this machine (as
 * Slurm's commands check), into names. An unknown user prints "Invalid
 * user: X" (scancel: "Invalid user name", sacct: "Invalid user id");
 * strict: exit 1 (sacct, scancel), else it is left out and the others go
 * on (squeue 22.05 does so and exits 0). Returns an exit code. */
int loom_slurm_parse_users(const char *cmd, const char *text, bool strict, json_t *names);
/* A comma-separated list into strings; empty items skipped. */
void loom_slurm_split(const char *text, json_t *into);
bool loom_slurm_has(const json_t *strings, const char *s);
/* -t: Slurm's state names or codes into loom's names ("ALL" for all).
 * Returns an exit code (message printed). */
int loom_slurm_parse_states(const char *cmd, const char *text, json_t *states);

/* getopt's '?' or ':' in one line, as the rest of loom's commands. */
int loom_slurm_bad_option(const char *cmd, int c, const char *word);

#endif
