/* Private to the store part. */
#ifndef LOOM_STORE_INT_H
#define LOOM_STORE_INT_H

#include <sqlite3.h>

#include "loom/store.h"

/* A job with the spec's fields copied, state PENDING, no id or times. */
int loom_store_job_from_spec(loom_job_t *job, const loom_job_spec_t *spec);

/* Brings db's schema to the newest version (schema.c), one transaction per
 * migration. Applies only the first `upto` migrations when upto > 0 (tests
 * use this to build an old database). */
int loom_store_migrate(sqlite3 *db, int upto, loom_err_t *err);
int loom_store_migration_count(void);

/* Tests only: runs sql on the writer connection, on the committer thread,
 * inside a group transaction (e.g. "PRAGMA max_page_count = 10" to make
 * later writes fail as on a full disk). */
int loom_store_exec_for_test(loom_store_t *store, const char *sql, loom_err_t *err);

/* Tests only: whether the committer thread is waiting for work (not
 * committing, not about to look at the queue). */
bool loom_store_committer_idle_for_test(loom_store_t *store);

/* The name of the VFS that gathers each commit's WAL writes into one
 * write (walbuf.c), registered on first use; NULL if it could not be. */
const char *loom_store_walbuf_vfs(void);

/* Runs fn on the writer connection inside a group transaction and waits
 * for the commit (for parts of the store in their own files, such as
 * series.c). fn returns an SQLite code; SQLITE_OK or SQLITE_CONSTRAINT
 * (its own failure, with err set) keeps the group, any other rolls it back. */
typedef int (*loom_store__write_fn)(sqlite3 *db, void *ctx, loom_err_t *err);
int loom_store__write(loom_store_t *store, loom_store__write_fn fn, void *ctx, loom_err_t *err);

/* Runs fn on the reader connection under its lock; returns fn's LOOM_* code. */
typedef int (*loom_store__read_fn)(sqlite3 *db, void *ctx, loom_err_t *err);
int loom_store__read(loom_store_t *store, loom_store__read_fn fn, void *ctx, loom_err_t *err);

#endif
