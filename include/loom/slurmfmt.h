/* loom slurmfmt: Slurm's output formats, for loom's Slurm-compatible
 * commands (loom squeue, sacct, sinfo; docs/slurm.md).
 *
 * Wrappers written for Slurm parse what squeue, sacct and sinfo print, so
 * loom prints it the way Slurm 22.05 does: squeue's and sinfo's `-o` format
 * strings ("%.18i %-8j ...": a field letter with an optional '.' for right
 * justification and a width, the text around it printed as it is), sacct's
 * `--format` field lists ("JobID,JobName%20"), their cells (cut to the
 * width; sacct marks a cut with '+'), Slurm's durations and state names.
 *
 * Depends on core only. Every parser takes text a user typed: lengths and
 * counts are bounded and errors name the text and what was expected.
 */
#ifndef LOOM_SLURMFMT_H
#define LOOM_SLURMFMT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "loom/core.h"

#ifdef __cplusplus
extern "C" {
#endif

#define LOOM_SLURMFMT_MAX_TEXT   4096 /* bytes of one format string or field list */
#define LOOM_SLURMFMT_MAX_FIELDS 64   /* fields in one */
#define LOOM_SLURMFMT_MAX_WIDTH  1024 /* a field's width */

/* One "%[.][WIDTH]X" of a format string and the text after it. */
typedef struct loom_slurmfmt_field {
    char letter;  /* X */
    int width;    /* 0: as wide as the value (never cut) */
    bool right;   /* '.': right-justified (Slurm's default is left) */
    char *suffix; /* the text up to the next '%' (owned) */
} loom_slurmfmt_field_t;

typedef struct loom_slurmfmt {
    char *prefix; /* the text before the first '%' (owned, may be "") */
    loom_slurmfmt_field_t fields[LOOM_SLURMFMT_MAX_FIELDS];
    size_t n;
} loom_slurmfmt_t;

/* Parses a squeue/sinfo -o format string. Every field letter must be in
 * letters (the command's). As Slurm: "%%" and a '%' at the end are skipped.
 * On error *out is empty (loom_slurmfmt_free is still safe). */
int loom_slurmfmt_parse(const char *text, const char *letters, loom_slurmfmt_t *out,
                        loom_err_t *err);
void loom_slurmfmt_free(loom_slurmfmt_t *f);

/* Appends text as squeue and sinfo print a cell: width 0 as it is; else
 * cut to width and padded with blanks, on the left when right-justified. */
int loom_slurmfmt_cell(loom_buf_t *out, const char *text, int width, bool right);

/* A column of an sacct --format list. */
typedef struct loom_slurmfmt_col {
    size_t field; /* index into the command's names */
    int len;      /* width: negative left-justified, positive right-justified */
} loom_slurmfmt_col_t;

typedef struct loom_slurmfmt_cols {
    loom_slurmfmt_col_t cols[LOOM_SLURMFMT_MAX_FIELDS];
    size_t n;
} loom_slurmfmt_cols_t;

/* Parses "Name[%WIDTH],..." against names (case-insensitive; as sacct, a
 * prefix of a name picks the first it begins); lens are the names' default
 * widths. "%W" sets the width: W > 0 right-justified, W < 0 left. */
int loom_slurmfmt_fields(const char *text, const char *const *names, const int *lens, size_t n,
                         loom_slurmfmt_cols_t *out, loom_err_t *err);

/* sacct's ways of printing a row (print_fields): padded columns each
 * followed by a blank, "|" after every value (-p), between values (-P). */
typedef enum loom_slurmfmt_mode {
    LOOM_SLURMFMT_COLUMNS = 0,
    LOOM_SLURMFMT_PARSABLE = 1,  /* -p, --parsable */
    LOOM_SLURMFMT_PARSABLE2 = 2, /* -P, --parsable2 */
} loom_slurmfmt_mode_t;

/* Appends one sacct cell: a value longer than |len| is cut and ends in '+';
 * NULL is a blank (empty when parsable). last: the row's last column. */
int loom_slurmfmt_sacct_cell(loom_buf_t *out, const char *value, int len, loom_slurmfmt_mode_t mode,
                             bool last);
/* sacct's header line (and, in columns, the line of dashes under it). */
int loom_slurmfmt_sacct_header(loom_buf_t *out, const loom_slurmfmt_cols_t *cols,
                               const char *const *names, loom_slurmfmt_mode_t mode);

/* Durations. squeue's TIME and TIME_LIMIT: M:SS, H:MM:SS, D-HH:MM:SS.
 * sacct's Elapsed and Timelimit: HH:MM:SS, D-HH:MM:SS. Negative: "INVALID".
 * out must hold 32 bytes. */
const char *loom_slurmfmt_duration(int64_t s, char out[32]);
const char *loom_slurmfmt_elapsed(int64_t s, char out[32]);

/* Slurm's name for a loom job state ("PENDING" -> "PD" when short);
 * NULL for a state Slurm does not have. */
const char *loom_slurmfmt_state(const char *loom_state, bool short_code);
/* A Slurm state name or short code given to squeue -t or scancel -t ("pd",
 * "Running", "CA"): loom's state name, "ALL" for "all", NULL if unknown. */
const char *loom_slurmfmt_state_parse(const char *text);

/* Slurm's reason for a pending loom job: loom's reason ("JobHeld" ->
 * "JobHeldUser"; "QuotaLimit" by its quota's on and limit: "user"/"gpus"
 * -> "QOSMaxGRESPerUser", ...; NULL -> "None"). */
const char *loom_slurmfmt_reason(const char *reason, const char *quota_on, const char *quota_limit);

/* Node names as Slurm's hostlist writes them: "n[1-3,5],gpu7". Names are
 * taken in the order given; those with one prefix and a number are merged
 * into ranges (numbers kept with their leading zeros). */
int loom_slurmfmt_hostlist(loom_buf_t *out, const char *const *names, size_t n);

#ifdef __cplusplus
}
#endif

#endif
