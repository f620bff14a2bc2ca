/* loomd's state directory: created, checked (owner, modes), locked, and
 * checked against the database for job directories it does not know. */
#ifndef LOOMD_STATEDIR_H
#define LOOMD_STATEDIR_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "loom/core.h"

typedef struct loomd_state_dir {
    char path[PATH_MAX]; /* absolute */
    int fd;              /* the directory, flock()ed while loomd runs */
} loomd_state_dir_t;

/* Marks every descriptor above 2 that loomd inherited close-on-exec, so
 * that none reaches a child (shepherd, sbatch). Call first in main. */
void loomd_cloexec_inherited(void);

/* Creates the directory (0700) if needed, resolves it, refuses one owned
 * by another user, repairs modes that let others in (the directory to
 * 0700; loom.db, its -wal and -shm, loomd.url to 0600: each repair is
 * logged), refuses those files when another user owns them or they are
 * not regular files, and takes an exclusive lock on the directory's own
 * descriptor (a path such as loomd.lock could be unlinked away). */
int loomd_state_dir_open(const char *dir, loomd_state_dir_t *sd, loom_err_t *err);
void loomd_state_dir_close(loomd_state_dir_t *sd);

/* Whether a database may be created here: false (with an error naming
 * the directories) when jobs/ holds job directories but loom.db is
 * missing, since new jobs would reuse their ids and append to their
 * output. With move_aside, jobs/ is renamed to jobs.orphaned-<time>
 * instead (logged) and the start goes on. */
int loomd_state_dir_check_orphans(const loomd_state_dir_t *sd, bool move_aside, loom_err_t *err);

/* After the store opened: job directories above the database's highest
 * id (a loom.db restored from an older copy) would be reused the same
 * way; refused, or with move_aside moved as above. */
int loomd_state_dir_check_ids(const loomd_state_dir_t *sd, int64_t max_id, bool move_aside,
                              loom_err_t *err);

#endif
