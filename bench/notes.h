/* bench/notes.h: where a benchmark's report goes, and writing it so that
 * the notes written by hand below its marker line survive a new run (the
 * reports in docs/bench). */
#ifndef LOOM_BENCH_NOTES_H
#define LOOM_BENCH_NOTES_H

#include <string.h>
#include <sys/stat.h>

#include "loom/core.h"

/* Where a benchmark writes its report when --out is not given: a scratch
 * directory, so that a trial run never overwrites a committed report
 * (`make bench` passes --out docs/bench). */
#define BENCH_OUT_DEFAULT "/tmp/loom-bench"

/* Makes the report directory if it is missing (one level; an existing one
 * is fine, and a directory that cannot be made fails at the write, which
 * names it). */
static inline void bench_out_dir(const char *dir)
{
    (void)mkdir(dir, 0755);
}

/* Writes text (len bytes) to path atomically, followed by whatever the file
 * at path held from the line `marker` on (nothing if it has no such line). */
static inline int bench_write_report(const char *path, const char *text, size_t len,
                                     const char *marker, loom_err_t *err)
{
    loom_buf_t out = LOOM_BUF_INIT, old = LOOM_BUF_INIT;
    int rc = loom_buf_append(&out, text, len);
    if (rc == LOOM_OK && loom_buf_read_file(&old, path, NULL) == LOOM_OK && old.data) {
        const char *keep = strstr(old.data, marker);
        if (keep)
            rc = loom_buf_appendf(&out, "\n%s", keep);
    }
    loom_buf_free(&old);
    if (rc == LOOM_OK)
        rc = loom_write_file_atomic(path, out.data, out.len, 0644, err);
    else
        loom_err_set(err, rc, "%s: out of memory", path);
    loom_buf_free(&out);
    return rc;
}

#endif
