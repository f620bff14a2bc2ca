/* loom core: the few small pieces every part uses.
 *
 * - errors as values (loom_err_t): a code and a message that names the input,
 *   the place and what was expected;
 * - key=value logging to stderr;
 * - monotonic and wall-clock time, RFC 3339 times written and read;
 * - small statistics: sorting doubles, quantiles, mean and its 95% CI;
 * - one growable byte buffer (loom_buf_t), always NUL-terminated;
 * - one growable-array step (loom_vec_reserve) and one hash map (loom_map_t)
 *   with integer and string keys;
 * - parsers for sizes, durations and rates as users write them;
 * - a seeded 64-bit RNG with independent streams;
 * - JSON helpers over jansson that report JSON pointers and line:column.
 *
 * Nothing here prints except the logger, and nothing calls exit().
 */
#ifndef LOOM_CORE_H
#define LOOM_CORE_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include <jansson.h>

#ifdef __cplusplus
extern "C" {
#endif

#if defined(__GNUC__)
#define LOOM_PRINTF(fmt, args) __attribute__((format(printf, fmt, args)))
#else
#define LOOM_PRINTF(fmt, args)
#endif

/* ------------------------------------------------------------------ errors */

/* Error codes. Functions return LOOM_OK (0) or one of these (negative). */
enum {
    LOOM_OK = 0,
    LOOM_EINVAL = -1,    /* bad input: syntax, type, range */
    LOOM_ENOMEM = -2,    /* allocation failed */
    LOOM_EIO = -3,       /* system call or file I/O failed */
    LOOM_ENOTFOUND = -4, /* no such object */
    LOOM_EEXIST = -5,    /* already exists */
    LOOM_EUNAVAIL = -6,  /* source or service not available here */
    LOOM_ETIMEDOUT = -7, /* deadline passed */
    LOOM_ESTATE = -8,    /* operation not valid in the current state */
    LOOM_ELIMIT = -9,    /* a configured limit was exceeded */
    LOOM_EINTERNAL = -10 /* a bug: an invariant did not hold */
};

#define LOOM_ERR_MSG_MAX 1024

typedef struct loom_err {
    int code;
    char msg[LOOM_ERR_MSG_MAX];
} loom_err_t;

/* Sets *err (which may be NULL) and returns code, so that callers can write
 * `return loom_err_set(err, LOOM_EINVAL, "...")`. */
int loom_err_set(loom_err_t *err, int code, const char *fmt, ...) LOOM_PRINTF(3, 4);
/* Like loom_err_set, but also appends ": strerror(errno_value)". */
int loom_err_errno(loom_err_t *err, int code, int errno_value, const char *fmt, ...)
    LOOM_PRINTF(4, 5);
/* Prepends context ("while reading X: ") to an existing message; returns
 * err->code (or LOOM_EINTERNAL if err is NULL). */
int loom_err_prefix(loom_err_t *err, const char *fmt, ...) LOOM_PRINTF(2, 3);
void loom_err_clear(loom_err_t *err);
/* Stable lower-case name of a code ("invalid", "not-found", ...). */
const char *loom_err_name(int code);

/* ----------------------------------------------------------------- logging */

typedef enum loom_log_level {
    LOOM_LOG_DEBUG = 0,
    LOOM_LOG_INFO = 1,
    LOOM_LOG_WARN = 2,
    LOOM_LOG_ERROR = 3,
    LOOM_LOG_OFF = 4
} loom_log_level_t;

void loom_log_set_level(loom_log_level_t level);
loom_log_level_t loom_log_get_level(void);
/* Output stream (default stderr); NULL restores stderr. */
void loom_log_set_stream(FILE *stream);
/* "debug" | "info" | "warn" | "error" | "off" */
int loom_log_parse_level(const char *name, loom_log_level_t *out, loom_err_t *err);
/* One line: `ts=... level=info msg="event" key=value ...`. fmt is the
 * key=value tail, may be NULL. Thread-safe (one write per line). */
void loom_log(loom_log_level_t level, const char *event, const char *fmt, ...) LOOM_PRINTF(3, 4);
#define loom_log_debug(ev, ...) loom_log(LOOM_LOG_DEBUG, ev, __VA_ARGS__)
#define loom_log_info(ev, ...)  loom_log(LOOM_LOG_INFO, ev, __VA_ARGS__)
#define loom_log_warn(ev, ...)  loom_log(LOOM_LOG_WARN, ev, __VA_ARGS__)
#define loom_log_error(ev, ...) loom_log(LOOM_LOG_ERROR, ev, __VA_ARGS__)

/* -------------------------------------------------------------------- time */

#define LOOM_NS_PER_US ((int64_t)1000)
#define LOOM_NS_PER_MS ((int64_t)1000000)
#define LOOM_NS_PER_S  ((int64_t)1000000000)

int64_t loom_time_mono_ns(void); /* CLOCK_MONOTONIC */
int64_t loom_time_real_ns(void); /* CLOCK_REALTIME, ns since the Unix epoch */
/* Sleeps until the monotonic clock reads deadline_ns (absolute, so repeated
 * calls never accumulate drift). Returns at once if it has passed. */
void loom_time_sleep_until_ns(int64_t deadline_ns);
/* RFC 3339 UTC with microseconds: "2026-12-02T08:26:15.123456Z". out must
 * hold 32 bytes. */
void loom_time_format_rfc3339(int64_t real_ns, char out[32]);
/* Parses an RFC 3339 date-time into ns since the Unix epoch:
 *   2026-12-05T18:24:25Z, 2026-12-05T18:24:25.123456Z, 2026-12-05T19:24:25+01:00
 * Fixed-width fields (4-digit year, 2-digit month, day, hour, minute,
 * second); 'T', 't' or a space between date and time (RFC 3339 section 5.6
 * allows the space); 'Z', 'z' or +HH:MM/-HH:MM after it (-00:00 is UTC).
 * Fractions of any length, truncated to the nanosecond. Fields are checked:
 * month 01-12, day within its month (leap years included), hour < 24,
 * minute < 60, second <= 60; a leap second (:60, which RFC 3339 allows)
 * reads as the first second of the next minute, as POSIX time has no leap
 * seconds. Times outside int64 ns (before 1677-09-21, after 2262-04-11) are
 * refused. Everything loom_time_format_rfc3339 writes parses back to its
 * input truncated (towards zero) to the microsecond. The error names the text, the byte
 * offset and what was expected there. */
int loom_time_parse_rfc3339(const char *text, int64_t *ns, loom_err_t *err);

/* Forms beyond RFC 3339 that some callers take (loom_time_parse_datetime). */
enum {
    LOOM_TIME_DATE_ONLY = 1 << 0,      /* "2026-12-05": that day's 00:00:00 */
    LOOM_TIME_NO_SECONDS = 1 << 1,     /* "2026-12-05T18:24": seconds may be left out */
    LOOM_TIME_ZONELESS_UTC = 1 << 2,   /* no Z or offset: the time is UTC */
    LOOM_TIME_ZONELESS_LOCAL = 1 << 3, /* no Z or offset: local time (mktime) */
};
/* loom_time_parse_rfc3339 that also takes the forms in flags (LOOM_TIME_*);
 * with flags 0 it is loom_time_parse_rfc3339. A date alone is midnight UTC,
 * or local midnight with LOOM_TIME_ZONELESS_LOCAL. */
int loom_time_parse_datetime(const char *text, unsigned flags, int64_t *ns, loom_err_t *err);

/* ------------------------------------------------------------------- stats */

/* qsort's comparator for doubles, ascending. NaNs compare equal to
 * everything, so keep them out of what is sorted. */
int loom_stats_cmp_double(const void *a, const void *b);
/* Sorts x[0..n) ascending (qsort with loom_stats_cmp_double). */
void loom_stats_sort(double *x, size_t n);
/* Quantile q of sorted[0..n), interpolated linearly between the two closest
 * ranks: position q*(n-1) (Hyndman and Fan's type 7, numpy's default): the
 * median of 1..4 is 2.5. For reports of measurements. */
double loom_stats_quantile(const double *sorted, size_t n, double q);
/* Quantile q of sorted[0..n) as the sample's own value at the lower of the
 * two closest ranks, sorted[floor(q*(n-1))]: the p99 of 1..100 is 99. For
 * the simulators' p99 wait and JCT. */
double loom_stats_quantile_lower(const double *sorted, size_t n, double q);
/* Both quantiles: q <= 0 gives the minimum, q >= 1 the maximum, n == 0 NAN. */

/* Mean of x[0..n); 0 when n == 0. */
double loom_stats_mean(const double *x, size_t n);
/* Two-sided 95% Student t quantile for df degrees of freedom (INFINITY for
 * df 0; tabled to 30, interpolated to 120, 1.960 beyond). */
double loom_stats_t95(size_t df);
/* Mean of x[0..n) and the half-width of its 95% confidence interval
 * (t95(n-1) times the standard error, sample deviation); INFINITY when
 * n < 2. */
void loom_stats_mean_ci95(const double *x, size_t n, double *mean, double *half);

/* ------------------------------------------------------------------ buffer */

/* A growable byte string. data is NULL or NUL-terminated at data[len]. */
typedef struct loom_buf {
    char *data;
    size_t len;
    size_t cap;
} loom_buf_t;

#define LOOM_BUF_INIT                                                                              \
    {                                                                                              \
        NULL, 0, 0                                                                                 \
    }

void loom_buf_init(loom_buf_t *b);
void loom_buf_free(loom_buf_t *b);
void loom_buf_reset(loom_buf_t *b); /* len = 0, keeps memory */
int loom_buf_reserve(loom_buf_t *b, size_t extra);
int loom_buf_append(loom_buf_t *b, const void *data, size_t len);
int loom_buf_append_str(loom_buf_t *b, const char *s);
int loom_buf_append_char(loom_buf_t *b, char c);
int loom_buf_appendf(loom_buf_t *b, const char *fmt, ...) LOOM_PRINTF(2, 3);
int loom_buf_vappendf(loom_buf_t *b, const char *fmt, va_list ap);
/* Hands the string to the caller (free() it); b is empty afterwards. Never
 * returns NULL unless out of memory. */
char *loom_buf_detach(loom_buf_t *b);
/* Reads a whole file. Errors name the path. */
int loom_buf_read_file(loom_buf_t *b, const char *path, loom_err_t *err);
/* Reads a data file (a trace, a table) that may be gzip-compressed: a file
 * starting with gzip's magic bytes is inflated, any other is read as it is.
 * A regular file only, at most max bytes read and at most max bytes once
 * decompressed (LOOM_ELIMIT); a truncated or corrupt stream is LOOM_EINVAL.
 * Errors name the path. */
int loom_buf_read_data(loom_buf_t *b, const char *path, size_t max, loom_err_t *err);

/* ------------------------------------------------------------- client files
 *
 * A file a client named (a model, weights, a device file, a job's output):
 * opened without blocking (O_NONBLOCK: a FIFO never hangs), a regular file
 * only, its size checked against the use's limit before a byte is read, and
 * then read into memory loom owns (never mapped: a file its owner truncates
 * under a mapping is SIGBUS). Errors name the path as the client gave it
 * and never quote the file's bytes (file.c; auth's loom_auth_file_open opens
 * one with a client's rights). */
typedef struct loom_file {
    int fd;           /* -1: closed */
    const char *name; /* the path as the client gave it (not owned) */
    size_t max;       /* the use's limit in bytes */
    uint64_t dev, ino, size;
    int64_t mtime_ns, ctime_ns; /* identity: a rewritten file differs */
} loom_file_t;

#define LOOM_FILE_INIT                                                                             \
    {                                                                                              \
        -1, NULL, 0, 0, 0, 0, 0, 0                                                                 \
    }
#define LOOM_FILE_NOFOLLOW 1u /* refuse a symbolic link as the last component */

/* Takes fd over (closed on error): a regular file of at most max bytes, or
 * LOOM_EINVAL ("not a regular file") / LOOM_ELIMIT. */
int loom_file_adopt(loom_file_t *f, int fd, const char *name, size_t max, loom_err_t *err);
/* Opens path with the process's own rights, then as loom_file_adopt. A
 * missing and an unreadable file give the same error (LOOM_ENOTFOUND). */
int loom_file_open(loom_file_t *f, const char *path, unsigned flags, size_t max, loom_err_t *err);
/* The whole file, read into b (a private copy; at most f->max bytes: a file
 * that grew past it is LOOM_ELIMIT, one that shrank is read as it is). */
int loom_file_read(loom_file_t *f, loom_buf_t *b, loom_err_t *err);
/* At most len bytes from offset into buf (a window, whatever the limit);
 * the number read, or -1 with errno. Refreshes f->size. */
ssize_t loom_file_read_at(loom_file_t *f, void *buf, size_t len, uint64_t offset);
/* Whether f's identity (device, inode, size, times) is still what it was
 * when opened (re-read with fstat). */
bool loom_file_unchanged(const loom_file_t *f);
void loom_file_close(loom_file_t *f);

/* Writes data to path atomically: a temporary file in the same directory,
 * fsync, rename. Either the old or the new content survives a crash. */
int loom_write_file_atomic(const char *path, const void *data, size_t len, int mode,
                           loom_err_t *err);

/* ----------------------------------------------------------------- strset */

/* A set of strings (not copied: they must outlive the set), open
 * addressing, FNV-1a: membership in time linear in the string's length,
 * whatever the strings share (strset.c). */
typedef struct loom_strset {
    const char **slot;
    size_t n, cap;
    size_t compares; /* string comparisons made so far (tests bound it) */
} loom_strset_t;

/* 1: added, 0: already there, LOOM_ENOMEM. */
int loom_strset_add(loom_strset_t *s, const char *key);
void loom_strset_free(loom_strset_t *s);

/* -------------------------------------------------------------------- vec */

/* Grows the array *p (capacity *cap elements of elem bytes) to hold at least
 * need elements: the capacity doubles from first (when *cap is 0) until it
 * suffices. Overflowing sizes and a failed realloc give LOOM_ENOMEM with *p
 * and *cap unchanged. */
int loom_vec_reserve(void **p, size_t *cap, size_t need, size_t elem, size_t first);

/* -------------------------------------------------------------------- map */

/* A hash map from keys to 64-bit values (map.c): open addressing, linear
 * probing, tombstones for removals, kept at most half full. Keys are either
 * 64-bit integers (LOOM_MAP_U64) or byte strings (LOOM_MAP_STR: C strings
 * through the _str calls, any bytes through the _bytes calls; the map keeps
 * its own copy). A value is a number, an index, or a pointer stored through
 * loom_map_ptr / loom_map_to_ptr. Sizes are checked for overflow; a call
 * that runs out of memory returns LOOM_ENOMEM and leaves the map as it
 * was. A call of the other kind's family (a _str call on a U64 map) is
 * LOOM_EINVAL, or finds nothing. Entries have no order; loom_map_next
 * walks them in slot order, and any put or del ends a walk. */
typedef enum loom_map_kind { LOOM_MAP_U64 = 0, LOOM_MAP_STR = 1 } loom_map_kind_t;

typedef struct loom_map_slot {
    uint64_t hash; /* 0: empty, 1: removed (tombstone), else the key's hash */
    uint64_t val;
    union {
        uint64_t u; /* U64: the key */
        char *str;  /* STR: the map's copy of the key (NUL-terminated) */
    } key;
    size_t len; /* STR: the key's length in bytes */
} loom_map_slot_t;

typedef struct loom_map {
    loom_map_slot_t *slot;
    size_t cap;  /* slots: 0 or a power of two */
    size_t n;    /* entries */
    size_t used; /* entries and tombstones */
    loom_map_kind_t kind;
} loom_map_t;

#define LOOM_MAP_INIT(kind)                                                                        \
    {                                                                                              \
        NULL, 0, 0, 0, (kind)                                                                      \
    }

/* One entry as loom_map_next gives it: key (U64) or str and len (STR). */
typedef struct loom_map_entry {
    uint64_t key;
    const char *str;
    size_t len;
    uint64_t val;
} loom_map_entry_t;

void loom_map_init(loom_map_t *m, loom_map_kind_t kind);
/* Frees the slots and the key copies; m is then empty, of the same kind. */
void loom_map_free(loom_map_t *m);
static inline size_t loom_map_count(const loom_map_t *m)
{
    return m->n;
}
/* Makes room for n entries in all, so that putting up to n entries never
 * grows the table (a STR map still copies each new key). LOOM_OK or
 * LOOM_ENOMEM (the map unchanged). */
int loom_map_reserve(loom_map_t *m, size_t n);

/* Puts key -> val: 1 when key was added, 0 when it was there (its value is
 * then replaced), LOOM_ENOMEM or LOOM_EINVAL (the map unchanged). */
int loom_map_put_u64(loom_map_t *m, uint64_t key, uint64_t val);
int loom_map_put_str(loom_map_t *m, const char *key, uint64_t val);
int loom_map_put_bytes(loom_map_t *m, const void *key, size_t len, uint64_t val);
/* Whether key is there; its value in *val (may be NULL). */
bool loom_map_get_u64(const loom_map_t *m, uint64_t key, uint64_t *val);
bool loom_map_get_str(const loom_map_t *m, const char *key, uint64_t *val);
bool loom_map_get_bytes(const loom_map_t *m, const void *key, size_t len, uint64_t *val);
/* Removes key: whether it was there. Never allocates. */
bool loom_map_del_u64(loom_map_t *m, uint64_t key);
bool loom_map_del_str(loom_map_t *m, const char *key);
bool loom_map_del_bytes(loom_map_t *m, const void *key, size_t len);
/* Walks the entries: `size_t it = 0; while (loom_map_next(m, &it, &e))`.
 * e.str points into the map (valid until the entry is removed). */
bool loom_map_next(const loom_map_t *m, size_t *it, loom_map_entry_t *e);

/* Pointers as values. */
static inline uint64_t loom_map_ptr(const void *p)
{
    return (uint64_t)(uintptr_t)p;
}
static inline void *loom_map_to_ptr(uint64_t v)
{
    return (void *)(uintptr_t)v;
}

/* -------------------------------------------------------------------- csv */

/* An RFC 4180 reader over text in memory: quoted fields with "" for a quote,
 * LF or CRLF line ends, blank lines skipped. loom_csv_next reads one record
 * into fields (NUL-terminated copies); errors read "NAME:LINE:COLUMN: ...". */
enum {
    LOOM_CSV_ALLOW_NUL = 1, /* a NUL byte is data, not an error */
    LOOM_CSV_CR_EOL = 2,    /* a lone CR ends a line, not an error */
};
typedef struct loom_csv_span {
    size_t off, len; /* in buf */
    size_t col;      /* 1-based column on its line */
} loom_csv_span_t;
typedef struct loom_csv {
    const char *p, *end, *name;
    unsigned flags;
    size_t max_fields; /* 0: no limit */
    size_t line;       /* line of the next record */
    size_t rec_line;   /* line where the current record began */
    loom_buf_t buf;    /* the fields, each NUL-terminated */
    size_t nf, cap;
    loom_csv_span_t *f; /* the current record's fields */
} loom_csv_t;

void loom_csv_init(loom_csv_t *c, const char *text, size_t len, const char *name, unsigned flags,
                   size_t max_fields);
/* 1 with a record's fields, 0 at the end of the text, an error code (< 0). */
int loom_csv_next(loom_csv_t *c, loom_err_t *err);
const char *loom_csv_field(const loom_csv_t *c, size_t i);
size_t loom_csv_field_len(const loom_csv_t *c, size_t i);
size_t loom_csv_field_col(const loom_csv_t *c, size_t i);
/* Index of the field equal to name, -1 if none (for finding header columns). */
int loom_csv_find(const loom_csv_t *c, const char *name);
void loom_csv_free(loom_csv_t *c);

/* ------------------------------------------------------------------- units */

/* Sizes: "16GiB", "512M", "1.5G", "4096", "10kB". Binary suffixes K, M, G,
 * T, P, E, with or without "i" and "B" (K = KiB = 1024, as Slurm reads them);
 * decimal ones spelled kB, MB, GB, TB, PB (1000^n). A bare number is bytes.
 * Case-insensitive except that "kB".."PB" with a capital B and no "i" are
 * decimal. Fractions are allowed when the result is a whole number of bytes
 * after rounding down. Overflow is an error. */
int loom_parse_size(const char *text, uint64_t *bytes, loom_err_t *err);
/* Durations: "90s", "1h30m", "500ms", "1.5h", "2d", "01:00:00" (H:MM:SS),
 * "05:30" (MM:SS), "1-12:00:00" (D-HH:MM:SS, as Slurm), "1-12" (D-HH).
 * Units: ns us ms s m h d (also sec, min, hr, day and plurals). A bare
 * number is seconds. */
int loom_parse_duration(const char *text, int64_t *ns, loom_err_t *err);
/* Rates: "10/s", "600/min", "2.5/h", "3/d", "100" (per second). Returns
 * events per second; must be > 0 and finite. */
int loom_parse_rate(const char *text, double *per_second, loom_err_t *err);
/* Human forms: "16GiB", "1.5MiB", "512B"; "1h30m", "250ms". Return out. */
char *loom_format_size(uint64_t bytes, char *out, size_t outlen);
char *loom_format_duration(int64_t ns, char *out, size_t outlen);
/* The shortest "%.Ng" (N = 1..17) that reads back as exactly d: "0.1",
 * "1e-05", "0.00012345678901234567"; "nan", "inf", "-inf" when not finite.
 * out needs 32 bytes. Returns the length. Catalog texts, templates and the
 * generator all print reals this way, so one value reads the same
 * everywhere. */
size_t loom_format_real(double d, char *out, size_t outlen);

/* ------------------------------------------------------------------ secret */

#define LOOM_SECRET_MAX_BYTES 64

/* nbytes (1 to LOOM_SECRET_MAX_BYTES) from the kernel's random source
 * (getrandom), written to out as 2 * nbytes lowercase hex digits and a NUL.
 * LOOM_EIO when the source fails; the raw bytes are wiped. */
int loom_secret_hex(char *out, size_t nbytes, loom_err_t *err);

/* --------------------------------------------------------------------- rng */

/* xoshiro256** seeded by splitmix64 from (seed, stream). The same seed and
 * stream give the same sequence on every machine; different streams of one
 * seed are independent for all practical purposes. */
typedef struct loom_rng {
    uint64_t s[4];
} loom_rng_t;

void loom_rng_init(loom_rng_t *rng, uint64_t seed, uint64_t stream);
uint64_t loom_rng_u64(loom_rng_t *rng);
double loom_rng_uniform(loom_rng_t *rng);             /* [0, 1), 53 bits */
uint64_t loom_rng_below(loom_rng_t *rng, uint64_t n); /* [0, n), unbiased; n > 0 */
double loom_rng_exponential(loom_rng_t *rng, double rate);
double loom_rng_normal(loom_rng_t *rng); /* mean 0, sd 1 */
double loom_rng_gamma(loom_rng_t *rng, double shape, double scale);
/* Index drawn with probability weights[i] / sum(weights); n > 0, weights
 * >= 0 with a positive sum. */
size_t loom_rng_weighted(loom_rng_t *rng, const double *weights, size_t n);
void loom_rng_shuffle(loom_rng_t *rng, void *base, size_t n, size_t size);

/* -------------------------------------------------------------------- json */

/* Parses JSON text. Errors read "NAME:LINE:COLUMN: message". Rejects
 * duplicate object keys and NUL in strings. max_depth 0 means 64. */
int loom_json_parse(const char *text, size_t len, const char *name, size_t max_depth, json_t **out,
                    loom_err_t *err);
/* True when JSON text nests brackets deeper than max outside strings; *at
 * (may be NULL) gets the offset of the first bracket past max. */
bool loom_json_too_deep(const char *text, size_t len, size_t max, size_t *at);
int loom_json_load_file(const char *path, json_t **out, loom_err_t *err);
/* Serialises compactly into b (appends). */
int loom_json_dump(loom_buf_t *b, const json_t *value);
/* Serialises for people: indented by indent spaces per level (0: compact),
 * members in their order, and reals in the shortest form that reads back
 * as the same double (loom_format_real: 0.2, not 0.20000000000000001),
 * with ".0" added to whole numbers so that a real stays a real. Not
 * finite reals, which JSON cannot hold, are written as null. Appends. */
int loom_json_write(loom_buf_t *b, const json_t *value, int indent);
/* "object", "array", "string", "integer", "real", "true", "false", "null". */
const char *loom_json_type_name(const json_t *value);

/* Typed member access. `where` is the JSON pointer of obj (for messages,
 * "" for the root). A missing member is an error only if required; then
 * *out is left unchanged. A present member of the wrong type is an error:
 * "WHERE/KEY: expected a string, found an integer". */
int loom_json_get_string(const json_t *obj, const char *key, bool required, const char *where,
                         const char **out, loom_err_t *err);
int loom_json_get_int(const json_t *obj, const char *key, bool required, const char *where,
                      int64_t min, int64_t max, int64_t *out, loom_err_t *err);
int loom_json_get_number(const json_t *obj, const char *key, bool required, const char *where,
                         double *out, loom_err_t *err);
int loom_json_get_bool(const json_t *obj, const char *key, bool required, const char *where,
                       bool *out, loom_err_t *err);
/* Appends one reference token to a JSON pointer, escaping '~' and '/'. */
int loom_json_pointer_append(loom_buf_t *ptr, const char *token);

/* ------------------------------------------------------------------- misc */

/* The directory of loom's shipped data SUB ("devices", "templates",
 * "catalogs", "jobs", "models"), never taken from the current directory:
 * $LOOM_DATA_DIR/SUB if that is set; else beside the running program or
 * libloom.so (the source tree's workloads/SUB when run from the build tree,
 * else PREFIX/share/loom/SUB found relative to the binary); else the install
 * datadir compiled in. LOOM_ENOTFOUND names what was tried; out then holds
 * the compiled-in location, so that a later "cannot open" names it too. */
int loom_data_path(const char *sub, char *out, size_t outlen, loom_err_t *err);
/* The default state directory of a personal loomd (database, token,
 * socket), which the CLI, loomd and the zoo agree on: $LOOM_STATE_DIR if set
 * and non-empty, else $HOME/.local/state/loom. */
int loom_default_state_dir(char *out, size_t outlen, loom_err_t *err);
/* A trace argument as loom's commands take it (--nodes, --pods, --trace):
 * a path to an existing file is kept as it is; a name finds a trace loom
 * ships in traces/alibaba-gpu-2023 (README.md there): "openb" (the GPU
 * node list), "openb-all" (every node), "openb-NAME" (pod list NAME:
 * default, cpu050, gpushare40, multigpu20, ...) or a file's own name
 * without .csv.gz. LOOM_ENOTFOUND names the argument and the names known. */
int loom_data_trace(const char *arg, char *out, size_t outlen, loom_err_t *err);

/* Strict integer parsing of a whole string (no trailing bytes). */
int loom_parse_i64(const char *text, int64_t min, int64_t max, int64_t *out, const char *what,
                   loom_err_t *err);
/* True if s[0..len) is well-formed UTF-8 (no overlongs, no surrogates). */
bool loom_utf8_valid(const char *s, size_t len);
/* The one rule for text that reaches a terminal (job names, labels, reasons,
 * ...): valid UTF-8 without C0 controls (tab and newline included), DEL, C1
 * controls (U+0080..U+009F: U+0085 NEL, U+009B CSI), bidirectional
 * overrides, embeddings and isolates (U+061C, U+200E, U+200F,
 * U+202A..U+202E, U+2066..U+2069) or line and paragraph separators
 * (U+2028, U+2029). Returns the byte offset of the first offender, or len
 * when the text is fine; invalid UTF-8 gives the offset of the bad byte. */
size_t loom_text_unsafe_at(const char *s, size_t len);
/* The character at s[0..len) under that rule: 0 when it is safe (a tab
 * is, here), else its length in bytes and *cp its code point (a byte that
 * starts no valid character: 1, and the byte). */
size_t loom_text_unsafe_char(const char *s, size_t len, unsigned *cp);
/* Appends s[0..len) to out with every unsafe character shown escaped, a
 * tab kept: C0 controls, DEL and stray bytes as \xHH ("\x1b"), others as
 * \uXXXX ("\u202e"). For text a terminal shows (the CLI). */
int loom_text_escape(loom_buf_t *out, const char *s, size_t len);

/* ------------------------------------------------------------ job states
 * A job's states, shared by the store, the daemon and the commands. */

typedef enum loom_job_state {
    LOOM_JOB_PENDING = 0,
    LOOM_JOB_RUNNING = 1,
    LOOM_JOB_COMPLETED = 2,
    LOOM_JOB_FAILED = 3,
    LOOM_JOB_CANCELLED = 4,
    LOOM_JOB_TIMEOUT = 5
} loom_job_state_t;

#define LOOM_JOB_NSTATES 6

/* "PENDING", ... ; NULL for a value out of range. */
const char *loom_job_state_name(loom_job_state_t state);
/* Case-insensitive; the error names the text and lists the states. */
int loom_job_state_parse(const char *text, loom_job_state_t *out, loom_err_t *err);
/* COMPLETED, FAILED, CANCELLED, TIMEOUT. */
bool loom_job_state_terminal(loom_job_state_t state);

#ifdef __cplusplus
}
#endif
#endif
