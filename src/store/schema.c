/* The store's schema as an ordered list of migrations. PRAGMA user_version
 * holds how many have been applied; opening a store applies the rest, each
 * in its own transaction together with the user_version bump, so a crash
 * leaves the database at one version or the next, never between. A
 * database from a newer loom (user_version beyond this list) is refused
 * rather than guessed at. Never edit a migration that has shipped: append.
 * The mechanism is db.c's, shared with the zoo. */
#include "store/db.h"
#include "store/store_int.h"

static const char *const migrations[] = {
    /* 1: jobs and their state-change events. Job ids are the rowid, i.e.
     * max(id) + 1: never reused as long as jobs are never deleted (the store
     * has no delete; one that comes must keep a high-water mark). No
     * AUTOINCREMENT: it would cost a sqlite_sequence write per commit.
     * Events are clustered by (job_id, seq) in one WITHOUT ROWID b-tree,
     * so an event costs one b-tree insert, not a row plus an index entry. */
    "CREATE TABLE jobs ("
    "  id INTEGER PRIMARY KEY,"
    "  submit_id TEXT UNIQUE,"
    "  name TEXT NOT NULL,"
    "  script TEXT NOT NULL,"
    "  format TEXT NOT NULL CHECK (format IN ('batch','yaml')),"
    "  cpus INTEGER NOT NULL,"
    "  memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  gpus INTEGER NOT NULL DEFAULT 0,"
    "  gpu_share_milli INTEGER NOT NULL DEFAULT 0,"
    "  gpu_memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  gpu_type TEXT,"
    "  time_limit_s INTEGER NOT NULL DEFAULT 0,"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  labels TEXT NOT NULL DEFAULT '{}',"
    "  state TEXT NOT NULL CHECK (state IN "
    "    ('PENDING','RUNNING','COMPLETED','FAILED','CANCELLED','TIMEOUT')),"
    "  reason TEXT,"
    "  submit_time_ns INTEGER NOT NULL,"
    "  start_time_ns INTEGER NOT NULL DEFAULT 0,"
    "  end_time_ns INTEGER NOT NULL DEFAULT 0,"
    "  update_time_ns INTEGER NOT NULL"
    ");"
    "CREATE TABLE job_events ("
    "  job_id INTEGER NOT NULL REFERENCES jobs(id),"
    "  seq INTEGER NOT NULL,"
    "  time_ns INTEGER NOT NULL,"
    "  from_state TEXT,"
    "  to_state TEXT NOT NULL,"
    "  reason TEXT,"
    "  PRIMARY KEY (job_id, seq)"
    ") WITHOUT ROWID;",
    /* 2: an index for listing by state. */
    "CREATE INDEX jobs_by_state ON jobs(state, id);",
    /* 3: what the scheduler and executor record about a job's run: its
     * placement, the executor's handle (to adopt it after a restart) and its
     * outcome, as one JSON object (docs/running.md). */
    "ALTER TABLE jobs ADD COLUMN run TEXT;",
    /* 4: the estimate a job's GPU memory request came from, when its
     * submission named a model (docs/protocol.md, the job object). */
    "ALTER TABLE jobs ADD COLUMN estimate TEXT;",
    /* 5: what a job file or job.submit's "options" said beyond resources:
     * working directory, output and error patterns, environment, array,
     * dependency, ... (docs/protocol.md, job.submit), as one JSON object. */
    "ALTER TABLE jobs ADD COLUMN options TEXT;",
    /* 6: who submitted a job (docs/security.md): uid and gid as the caller
     * authenticated, the names as the user database had them then, and the
     * account its usage is charged to. NULL for jobs from before owners. */
    "ALTER TABLE jobs ADD COLUMN uid INTEGER;"
    "ALTER TABLE jobs ADD COLUMN gid INTEGER;"
    "ALTER TABLE jobs ADD COLUMN user TEXT;"
    "ALTER TABLE jobs ADD COLUMN grp TEXT;"
    "ALTER TABLE jobs ADD COLUMN account TEXT;",
    /* 7: what a reconfigurable job lets the scheduler change (job.submit's
     * "reconfig", docs/scheduling.md), as one JSON object; NULL for a black
     * box. */
    "ALTER TABLE jobs ADD COLUMN reconfig TEXT;",
    /* 8: submit_id is one namespace per owner, not one for everyone
     * (docs/security.md): the key is (owner, submit_id), jobs without an
     * owner sharing uid -1. SQLite cannot drop a column's UNIQUE, so the
     * table is rebuilt as SQLite's ALTER TABLE page says, with the same
     * columns in the same order (foreign keys are off while migrating:
     * loom_store_migrate), and its index made again. */
    "CREATE TABLE jobs_new ("
    "  id INTEGER PRIMARY KEY,"
    "  submit_id TEXT,"
    "  name TEXT NOT NULL,"
    "  script TEXT NOT NULL,"
    "  format TEXT NOT NULL CHECK (format IN ('batch','yaml')),"
    "  cpus INTEGER NOT NULL,"
    "  memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  gpus INTEGER NOT NULL DEFAULT 0,"
    "  gpu_share_milli INTEGER NOT NULL DEFAULT 0,"
    "  gpu_memory_bytes INTEGER NOT NULL DEFAULT 0,"
    "  gpu_type TEXT,"
    "  time_limit_s INTEGER NOT NULL DEFAULT 0,"
    "  priority INTEGER NOT NULL DEFAULT 0,"
    "  labels TEXT NOT NULL DEFAULT '{}',"
    "  state TEXT NOT NULL CHECK (state IN "
    "    ('PENDING','RUNNING','COMPLETED','FAILED','CANCELLED','TIMEOUT')),"
    "  reason TEXT,"
    "  submit_time_ns INTEGER NOT NULL,"
    "  start_time_ns INTEGER NOT NULL DEFAULT 0,"
    "  end_time_ns INTEGER NOT NULL DEFAULT 0,"
    "  update_time_ns INTEGER NOT NULL,"
    "  run TEXT, estimate TEXT, options TEXT,"
    "  uid INTEGER, gid INTEGER, user TEXT, grp TEXT, account TEXT,"
    "  reconfig TEXT"
    ");"
    "INSERT INTO jobs_new SELECT * FROM jobs;"
    "DROP TABLE jobs;"
    "ALTER TABLE jobs_new RENAME TO jobs;"
    "CREATE INDEX jobs_by_state ON jobs(state, id);"
    "CREATE UNIQUE INDEX jobs_by_submit_id ON jobs(ifnull(uid, -1), submit_id);",
    /* 9: a running job's usage over time (series.c, docs/store.md): one row
     * per sample, clustered by (job_id, time_ns) so a job's series is one
     * range; the GPUs of a sample as a small JSON array. NULL: not known. */
    "CREATE TABLE job_usage ("
    "  job_id INTEGER NOT NULL,"
    "  time_ns INTEGER NOT NULL,"
    "  span_ns INTEGER NOT NULL,"
    "  cpu_cores REAL,"
    "  memory_bytes REAL,"
    "  memory_peak_bytes REAL,"
    "  read_bytes_per_second REAL,"
    "  write_bytes_per_second REAL,"
    "  gpus TEXT,"
    "  PRIMARY KEY (job_id, time_ns)"
    ") WITHOUT ROWID;",
    /* 10: the cluster's allocation and queue over time (cluster_series.c):
     * one row a minute, hourly past a day, none past the window. */
    "CREATE TABLE cluster_usage ("
    "  time_ns INTEGER PRIMARY KEY,"
    "  span_ns INTEGER NOT NULL,"
    "  gpus_total REAL, gpus_allocated REAL, gpus_whole REAL, gpus_shared REAL, gpus_busy REAL,"
    "  cpus_total REAL, cpus_allocated REAL, memory_total_bytes REAL,"
    "  memory_allocated_bytes REAL, pending REAL, running REAL"
    ");",
};

#define NMIGRATIONS ((int)(sizeof migrations / sizeof migrations[0]))

int loom_store_migration_count(void)
{
    return NMIGRATIONS;
}

int loom_store_schema_latest(void)
{
    return NMIGRATIONS;
}

static const loom_db_schema_t store_schema = {
    .what = "store",
    .doc = "docs/store.md, Damage",
    .migrations = migrations,
    .nmigrations = NMIGRATIONS,
};

int loom_store_migrate(sqlite3 *db, int upto, loom_err_t *err)
{
    return loom_db_migrate(db, NULL, &store_schema, upto, err);
}
