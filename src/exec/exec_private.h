/* Private to src/exec. */
#ifndef LOOM_EXEC_PRIVATE_H
#define LOOM_EXEC_PRIVATE_H

#include <stdio.h>

#include "loom/exec.h"

/* Finds the cgroup v2 mount point from /proc/self/mountinfo. */
int loom_exec__cgroup2_mount(char *out, size_t outlen);

/* LOOM_OK, or LOOM_EINVAL naming the limit when dir is longer than
 * LOOM_EXEC_JOBS_DIR_MAX bytes (every path below it then fits). */
int loom_exec__check_jobs_dir(const char *dir, loom_err_t *err);

/* Fills what is empty of h->dir (JOBS_DIR/<h->job_id>), h->stdout_path and
 * h->stderr_path (<dir>/stdout, <dir>/stderr). */
void loom_exec__job_paths(const char *jobs_dir, loom_exec_handle_t *h);

/* The job's working directory and output files from its options
 * (src/exec/jobio.c): cwd (cwdlen bytes) and h's stdout/stderr paths are
 * replaced when the options name a working directory (a job run as its
 * owner without one: the owner's home); the options' env ("NAME=VALUE")
 * is appended to env. */
/* Slurm's job variables (SLURM_JOB_ID, SLURM_CPUS_PER_TASK, ...) as sbatch
 * sets them, appended to env: for the local executor (under Slurm, Slurm
 * sets its own). */
void loom_exec__slurm_env(const loom_exec_job_t *job, json_t *env);

int loom_exec__job_io(const loom_exec_job_t *job, loom_exec_handle_t *h, char *cwd, size_t cwdlen,
                      json_t *env, loom_err_t *err);

/* The groups a job's owner gets, as initgroups(3) would set them: uid's
 * supplementary groups from the user database, gid first. *ngroups holds
 * the room in groups and receives the count. A uid without an entry gets
 * gid alone. Not async-signal-safe: call it before a fork. */
int loom_exec__owner_groups(uid_t uid, gid_t gid, gid_t *groups, int *ngroups, loom_err_t *err);

/* Becomes uid for good (src/exec/owner.c): an empty capability bounding set,
 * the groups, gid and uid (real, effective and saved), PR_SET_NO_NEW_PRIVS,
 * then checks that uid 0 cannot be regained. System calls only, for the
 * child of a fork. Returns 0, or an errno with *what naming the step. */
int loom_exec__become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups, const char **what);

#endif
