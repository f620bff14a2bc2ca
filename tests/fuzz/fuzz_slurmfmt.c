/* Fuzz Slurm's format strings and field lists (loom/slurmfmt.h): no
 * crash, no UB, no leak; a parsed format renders every cell at exactly its
 * width; a field list's columns name known fields within the width limit. */
#include <stdlib.h>
#include <string.h>

#include "loom/slurmfmt.h"

static const char *const names[] = {"JobID", "JobName", "Start", "State", "ExitCode", "User"};
static const int lens[] = {-12, 10, 19, 10, 8, 9};

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char *s = malloc(size + 1);
    memcpy(s, data, size);
    s[size] = '\0';
    loom_slurmfmt_t f;
    loom_err_t err;
    if (loom_slurmfmt_parse(s, "iAFKjutTMlLDCRrNPbSVQaYm", &f, &err) == LOOM_OK) {
        if (f.n == 0 || f.n > LOOM_SLURMFMT_MAX_FIELDS || !f.prefix)
            abort();
        for (size_t i = 0; i < f.n; i++) {
            loom_buf_t b = LOOM_BUF_INIT;
            loom_slurmfmt_cell(&b, s, f.fields[i].width, f.fields[i].right);
            if (f.fields[i].width > LOOM_SLURMFMT_MAX_WIDTH ||
                (f.fields[i].width > 0 && b.len != (size_t)f.fields[i].width) ||
                (f.fields[i].width == 0 && b.len != size && strlen(s) == size))
                abort();
            loom_buf_free(&b);
        }
    }
    loom_slurmfmt_free(&f);
    loom_slurmfmt_cols_t cols;
    if (loom_slurmfmt_fields(s, names, lens, 6, &cols, &err) == LOOM_OK) {
        loom_buf_t b = LOOM_BUF_INIT;
        for (size_t i = 0; i < cols.n; i++) {
            int len = cols.cols[i].len;
            if (cols.cols[i].field >= 6 || len == 0 || len > LOOM_SLURMFMT_MAX_WIDTH ||
                len < -LOOM_SLURMFMT_MAX_WIDTH)
                abort();
            size_t before = b.len;
            loom_slurmfmt_sacct_cell(&b, s, len, LOOM_SLURMFMT_COLUMNS, false);
            if (b.len - before != (size_t)abs(len) + 1)
                abort();
        }
        loom_slurmfmt_sacct_header(&b, &cols, names, LOOM_SLURMFMT_PARSABLE2);
        loom_buf_free(&b);
    }
    loom_buf_t h = LOOM_BUF_INIT;
    const char *list[] = {s, "n1", s};
    loom_slurmfmt_hostlist(&h, list, 3);
    loom_buf_free(&h);
    free(s);
    return 0;
}
