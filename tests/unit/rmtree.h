/* Remove a temporary directory tree from a test without a shell: nftw walks
 * it depth-first and unlinks each entry. Header-only so that unit tests
 * (through test_util.h) and fuzz targets share it without a library. */
#ifndef LOOM_TEST_RMTREE_H
#define LOOM_TEST_RMTREE_H
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static inline int loom_test_rmtree_entry(const char *path, const struct stat *st, int flag,
                                         struct FTW *ftw)
{
    (void)st;
    (void)ftw;
    int rc = (flag == FTW_DP) ? rmdir(path) : unlink(path);
    if (rc != 0 && errno != ENOENT) {
        fprintf(stderr, "rmtree: cannot remove %s: %s\n", path, strerror(errno));
        return -1;
    }
    return 0;
}

/* Remove DIR and everything under it, not following symlinks nor crossing
 * mounts. A DIR that does not exist is already removed. 0 on success, -1
 * (with a message on stderr naming the path) otherwise. */
static inline int loom_test_rmtree(const char *dir)
{
    struct stat st;
    if (lstat(dir, &st) != 0)
        return errno == ENOENT ? 0 : -1;
    return nftw(dir, loom_test_rmtree_entry, 16, FTW_DEPTH | FTW_PHYS | FTW_MOUNT);
}
#endif
