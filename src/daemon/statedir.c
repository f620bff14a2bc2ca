/* loomd's state directory, made safe to run on (issue 18).
 *
 * Permissions: the database holds every job's script and the token lets
 * anyone on TCP act as its owner, so nothing here may be readable by
 * others. A directory or file with a loose mode is repaired (and the
 * repair logged, so the operator learns of it); one owned by another user
 * is refused, since that user could read or replace it whatever we chmod.
 *
 * Lock: flock() on the directory's own descriptor. The former loomd.lock
 * file could be removed while loomd ran, letting a second loomd open the
 * same database; a directory cannot be unlinked while it holds files.
 *
 * Orphans: job ids are the database's rowids. Started on a state directory
 * whose loom.db was deleted, loomd would count from 1 again and append new
 * output to old jobs' files; it refuses instead, unless told to move the
 * old jobs/ aside. */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "daemon/statedir.h"

void loomd_cloexec_inherited(void)
{
    if (close_range(3, ~0U, CLOSE_RANGE_CLOEXEC) == 0)
        return;
    long max = sysconf(_SC_OPEN_MAX);
    for (long fd = 3; fd < (max > 0 ? max : 1024); fd++) {
        int flags = fcntl((int)fd, F_GETFD);
        if (flags >= 0)
            fcntl((int)fd, F_SETFD, flags | FD_CLOEXEC);
    }
}

static int mkdir_p(const char *path, loom_err_t *err)
{
    char tmp[PATH_MAX];
    if (snprintf(tmp, sizeof tmp, "%s", path) >= (int)sizeof tmp)
        return loom_err_set(err, LOOM_EINVAL, "state dir: path too long");
    for (char *p = tmp + 1; *p; p++) {
        if (*p == '/') {
            *p = '\0';
            if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
                return loom_err_errno(err, LOOM_EIO, errno, "%s: cannot create", tmp);
            *p = '/';
        }
    }
    if (mkdir(tmp, 0700) != 0 && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "%s: cannot create", tmp);
    return LOOM_OK;
}

/* A file of loomd's in the directory, if it exists: a regular file of this
 * user, mode repaired to 0600. */
static int check_file(const loomd_state_dir_t *sd, const char *name, loom_err_t *err)
{
    struct stat st;
    if (fstatat(sd->fd, name, &st, AT_SYMLINK_NOFOLLOW) != 0)
        return errno == ENOENT ? LOOM_OK
                               : loom_err_errno(err, LOOM_EIO, errno, "%s/%s", sd->path, name);
    if (!S_ISREG(st.st_mode))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/%s: not a regular file (a link?); loomd keeps only its own "
                            "files there",
                            sd->path, name);
    if (st.st_uid != geteuid())
        return loom_err_set(err, LOOM_EINVAL,
                            "%s/%s: owned by uid %u, not by this user (uid %u); refusing a file "
                            "another user can read or replace",
                            sd->path, name, (unsigned)st.st_uid, (unsigned)geteuid());
    if ((st.st_mode & 077) == 0)
        return LOOM_OK;
    int fd = openat(sd->fd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0 || fchmod(fd, 0600) != 0) {
        int e = errno;
        if (fd >= 0)
            close(fd);
        return loom_err_errno(err, LOOM_EIO, e,
                              "%s/%s: mode %04o lets others read it; cannot "
                              "set 0600",
                              sd->path, name, (unsigned)(st.st_mode & 07777));
    }
    close(fd);
    loom_log_warn("loomd.state_file_mode_repaired", "path=\"%s/%s\" was=%04o now=0600", sd->path,
                  name, (unsigned)(st.st_mode & 07777));
    return LOOM_OK;
}

static int check_dir(loomd_state_dir_t *sd, loom_err_t *err)
{
    struct stat st;
    if (fstat(sd->fd, &st) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "state dir '%s'", sd->path);
    if (st.st_uid != geteuid())
        return loom_err_set(err, LOOM_EINVAL,
                            "state dir '%s': owned by uid %u, not by this user (uid %u); choose "
                            "a directory of your own (--state-dir)",
                            sd->path, (unsigned)st.st_uid, (unsigned)geteuid());
    if (st.st_mode & 077) {
        if (fchmod(sd->fd, 0700) != 0)
            return loom_err_errno(err, LOOM_EIO, errno,
                                  "state dir '%s': mode %04o lets others in; cannot set 0700",
                                  sd->path, (unsigned)(st.st_mode & 07777));
        loom_log_warn("loomd.state_dir_mode_repaired", "path=\"%s\" was=%04o now=0700", sd->path,
                      (unsigned)(st.st_mode & 07777));
    }
    static const char *const files[] = {"loom.db", "loom.db-wal", "loom.db-shm", "loomd.url", NULL};
    for (const char *const *f = files; *f; f++) {
        int rc = check_file(sd, *f, err);
        if (rc != LOOM_OK)
            return rc;
    }
    return LOOM_OK;
}

int loomd_state_dir_open(const char *dir, loomd_state_dir_t *sd, loom_err_t *err)
{
    sd->fd = -1;
    int rc = mkdir_p(dir, err);
    if (rc != LOOM_OK)
        return rc;
    /* Absolute from here on: job scripts, outputs and the socket are named
     * by paths that other processes (shepherds in their own working
     * directories, Slurm) must resolve the same way. */
    if (!realpath(dir, sd->path))
        return loom_err_errno(err, LOOM_EIO, errno,
                              "state directory '%s': cannot resolve its absolute path", dir);
    sd->fd = open(sd->path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (sd->fd < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "state directory '%s'", sd->path);
    if (flock(sd->fd, LOCK_EX | LOCK_NB) != 0) {
        rc = errno == EWOULDBLOCK
                 ? loom_err_set(err, LOOM_EEXIST, "%s: another loomd is running on this state dir",
                                sd->path)
                 : loom_err_errno(err, LOOM_EIO, errno, "%s: cannot lock", sd->path);
        loomd_state_dir_close(sd);
        return rc;
    }
    if ((rc = check_dir(sd, err)) != LOOM_OK)
        loomd_state_dir_close(sd);
    return rc;
}

void loomd_state_dir_close(loomd_state_dir_t *sd)
{
    if (sd->fd >= 0)
        close(sd->fd); /* releases the lock */
    sd->fd = -1;
}

/* The highest numeric entry of DIR/jobs, 0 if none (or no jobs/). */
static long long highest_job_dir(const loomd_state_dir_t *sd)
{
    int fd = openat(sd->fd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    DIR *d = fdopendir(fd);
    if (!d) {
        close(fd);
        return 0;
    }
    long long max = 0;
    for (struct dirent *e; (e = readdir(d));) {
        char *end;
        long long id = strtoll(e->d_name, &end, 10);
        if (*end == '\0' && end != e->d_name && id > max)
            max = id;
    }
    closedir(d);
    return max;
}

static int move_jobs_aside(const loomd_state_dir_t *sd, long long max, loom_err_t *err)
{
    char aside[64];
    snprintf(aside, sizeof aside, "jobs.orphaned-%lld", (long long)time(NULL));
    if (renameat(sd->fd, "jobs", sd->fd, aside) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "%s/jobs: cannot move it to %s", sd->path,
                              aside);
    loom_log_warn("loomd.orphaned_jobs_moved", "from=\"%s/jobs\" to=\"%s/%s\" highest_id=%lld",
                  sd->path, sd->path, aside, max);
    return LOOM_OK;
}

int loomd_state_dir_check_orphans(const loomd_state_dir_t *sd, bool move_aside, loom_err_t *err)
{
    struct stat st;
    if (fstatat(sd->fd, "loom.db", &st, AT_SYMLINK_NOFOLLOW) == 0)
        return LOOM_OK;
    long long max = highest_job_dir(sd);
    if (max == 0)
        return LOOM_OK;
    if (!move_aside)
        return loom_err_set(err, LOOM_EEXIST,
                            "%s/jobs holds job directories (up to %lld) but %s/loom.db is "
                            "missing: a new database would reuse their ids and append to their "
                            "output. Restore loom.db, or start with --move-orphaned-jobs to move "
                            "jobs/ aside (to jobs.orphaned-<time>) and begin anew",
                            sd->path, max, sd->path);
    return move_jobs_aside(sd, max, err);
}

/* Moves jobs/<id> for every id above max_id to jobs.orphaned-<time>/<id>:
 * the database knows the others, whose jobs may still run. */
static int move_dirs_above(const loomd_state_dir_t *sd, int64_t max_id, loom_err_t *err)
{
    char aside[64];
    snprintf(aside, sizeof aside, "jobs.orphaned-%lld", (long long)time(NULL));
    int jobs = openat(sd->fd, "jobs", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (jobs < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "%s/jobs", sd->path);
    DIR *d = fdopendir(jobs);
    if (!d || mkdirat(sd->fd, aside, 0700) != 0) {
        int e = errno;
        d ? closedir(d) : close(jobs);
        return loom_err_errno(err, LOOM_EIO, e, "%s/%s: cannot create", sd->path, aside);
    }
    int rc = LOOM_OK;
    size_t moved = 0;
    for (struct dirent *e; rc == LOOM_OK && (e = readdir(d));) {
        char *end, to[128];
        long long id = strtoll(e->d_name, &end, 10);
        if (*end != '\0' || end == e->d_name || id <= max_id)
            continue;
        snprintf(to, sizeof to, "%s/%s", aside, e->d_name);
        if (renameat(dirfd(d), e->d_name, sd->fd, to) != 0)
            rc = loom_err_errno(err, LOOM_EIO, errno, "%s/jobs/%s: cannot move it to %s", sd->path,
                                e->d_name, to);
        moved++;
    }
    closedir(d);
    if (rc == LOOM_OK)
        loom_log_warn("loomd.orphaned_jobs_moved",
                      "from=\"%s/jobs\" to=\"%s/%s\" count=%zu "
                      "above_id=%lld",
                      sd->path, sd->path, aside, moved, (long long)max_id);
    return rc;
}

int loomd_state_dir_check_ids(const loomd_state_dir_t *sd, int64_t max_id, bool move_aside,
                              loom_err_t *err)
{
    long long max = highest_job_dir(sd);
    if (max <= max_id)
        return LOOM_OK;
    if (!move_aside)
        return loom_err_set(err, LOOM_EEXIST,
                            "%s/jobs holds job directories up to %lld but the database's highest "
                            "job id is %lld (a loom.db restored from an older copy?): new jobs "
                            "would reuse those ids and append to their output. Restore the "
                            "matching loom.db, or start with --move-orphaned-jobs to move jobs/ "
                            "aside (to jobs.orphaned-<time>)",
                            sd->path, max, (long long)max_id);
    return move_dirs_above(sd, max_id, err);
}
