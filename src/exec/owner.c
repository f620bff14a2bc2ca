/* Becoming a job's owner: what the local shepherd does before it runs a job,
 * and what the Slurm executor does before it runs sbatch for one
 * (docs/security.md). Two halves, because a fork of a threaded loomd may
 * only make system calls: the owner's groups are looked up before the fork
 * (loom_exec__owner_groups, as initgroups(3) would set them), and the child
 * drops with system calls only (loom_exec__become). */
#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <sys/prctl.h>
#include <unistd.h>

#include "exec/exec_private.h"

int loom_exec__owner_groups(uid_t uid, gid_t gid, gid_t *groups, int *ngroups, loom_err_t *err)
{
    int cap = *ngroups;
    if (cap < 1)
        return loom_err_set(err, LOOM_EINVAL, "owner uid %u: no room for its groups",
                            (unsigned)uid);
    groups[0] = gid;
    *ngroups = 1;
    struct passwd pw, *res = NULL;
    char buf[16384];
    if (getpwuid_r(uid, &pw, buf, sizeof buf, &res) != 0 || !res)
        return LOOM_OK; /* a uid without an entry keeps its gid alone */
    int n = cap;
    if (getgrouplist(pw.pw_name, gid, groups, &n) < 0)
        return loom_err_set(err, LOOM_ELIMIT, "owner %s is in more than %d groups", pw.pw_name,
                            cap);
    *ngroups = n;
    return LOOM_OK;
}

int loom_exec__become(uid_t uid, gid_t gid, const gid_t *groups, int ngroups, const char **what)
{
    for (int cap = 0; cap < 64; cap++)
        if (prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0 && errno == EINVAL)
            break; /* past the last capability this kernel knows */
    if (setgroups((size_t)ngroups, groups) != 0 || setresgid(gid, gid, gid) != 0 ||
        setresuid(uid, uid, uid) != 0) {
        *what = "setgroups/setresgid/setresuid";
        return errno;
    }
    if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0) {
        *what = "PR_SET_NO_NEW_PRIVS";
        return errno;
    }
    if (uid != 0 && (setuid(0) == 0 || seteuid(0) == 0)) { /* must be gone for good */
        *what = "setuid(0) after dropping";
        return EPERM;
    }
    return 0;
}
