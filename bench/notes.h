/* bench/notes.h: writing a benchmark's report so that the notes written by
 * hand below its marker line survive a new run (the reports in docs/bench). */
#ifndef LOOM_BENCH_NOTES_H
#define LOOM_BENCH_NOTES_H

#include <string.h>

#include "loom/core.h"

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
