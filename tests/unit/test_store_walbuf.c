/* The WAL-gathering VFS shim (src/store/walbuf.c): what one connection
 * commits through it, another connection (default VFS or the shim) sees at
 * once and whole; large transactions, cache spills, rollbacks and
 * checkpoints keep the database intact. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "store/store_int.h"
#include "test_util.h"

typedef struct {
    char dir[64];
    char path[128];
} tmpdb_t;

static void tmpdb_make(tmpdb_t *t)
{
    snprintf(t->dir, sizeof t->dir, "/tmp/loom-test-walbuf-XXXXXX");
    assert_non_null(mkdtemp(t->dir));
    snprintf(t->path, sizeof t->path, "%s/t.db", t->dir);
}

static void tmpdb_remove(tmpdb_t *t)
{
    assert_int_equal(loom_test_rmtree(t->dir), 0);
}

static sqlite3 *open_db(const char *path, const char *vfs)
{
    sqlite3 *db = NULL;
    int rc = sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, vfs);
    if (rc != SQLITE_OK)
        fail_msg("open %s: %s", path, db ? sqlite3_errmsg(db) : "?");
    return db;
}

static void exec_ok(sqlite3 *db, const char *sql)
{
    char *msg = NULL;
    if (sqlite3_exec(db, sql, NULL, NULL, &msg) != SQLITE_OK) {
        fail_msg("%s: %s", sql, msg ? msg : "?");
    }
}

static long long query_i64(sqlite3 *db, const char *sql)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, sql, -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    long long v = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return v;
}

static void check_integrity(sqlite3 *db)
{
    sqlite3_stmt *st = NULL;
    assert_int_equal(sqlite3_prepare_v2(db, "PRAGMA integrity_check", -1, &st, NULL), SQLITE_OK);
    assert_int_equal(sqlite3_step(st), SQLITE_ROW);
    assert_string_equal((const char *)sqlite3_column_text(st, 0), "ok");
    sqlite3_finalize(st);
}

static void insert_rows(sqlite3 *db, int from, int n, int blob)
{
    char sql[256];
    snprintf(sql, sizeof sql,
             "WITH RECURSIVE c(x) AS (SELECT %d UNION ALL SELECT x + 1 FROM c WHERE x < %d) "
             "INSERT INTO t(id, v) SELECT x, randomblob(%d) FROM c",
             from, from + n - 1, blob);
    exec_ok(db, sql);
}

static void test_registered(void **state)
{
    (void)state;
    const char *name = loom_store_walbuf_vfs();
    assert_non_null(name);
    assert_non_null(sqlite3_vfs_find(name));
    assert_string_equal(loom_store_walbuf_vfs(), name); /* once */
}

/* Every commit through the shim is visible at once to a reader on the
 * default VFS, for small commits, for commits larger than the gathering
 * buffer, and for transactions that spill their cache before committing. */
static void test_commits_visible_to_other_connection(void **state)
{
    (void)state;
    tmpdb_t t;
    tmpdb_make(&t);
    sqlite3 *w = open_db(t.path, loom_store_walbuf_vfs());
    exec_ok(w, "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
               "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);"
               "CREATE INDEX t_v ON t(v);");
    sqlite3 *r = open_db(t.path, NULL);
    long long want = 0;
    for (int i = 0; i < 200; i++) { /* small commits */
        insert_rows(w, (int)want + 1, 3, 100);
        want += 3;
        assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);
    }
    insert_rows(w, (int)want + 1, 3000, 1000); /* ~ 7 MiB of frames: several flushes */
    want += 3000;
    assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);
    exec_ok(w, "PRAGMA cache_size = 10"); /* spill before the commit */
    exec_ok(w, "BEGIN");
    insert_rows(w, (int)want + 1, 500, 2000);
    assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);       /* not yet */
    assert_int_equal(query_i64(w, "SELECT count(*) FROM t"), want + 500); /* reads its own */
    exec_ok(w, "COMMIT");
    want += 500;
    assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);
    exec_ok(w, "BEGIN"); /* a rollback after spilling leaves nothing */
    insert_rows(w, (int)want + 1, 500, 2000);
    exec_ok(w, "ROLLBACK");
    assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);
    insert_rows(w, (int)want + 1, 10, 10);
    want += 10;
    assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);
    exec_ok(r, "PRAGMA wal_checkpoint(TRUNCATE)"); /* the WAL restarts from zero */
    insert_rows(w, (int)want + 1, 10, 10);
    want += 10;
    assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), want);
    check_integrity(r);
    sqlite3_close(r);
    sqlite3_close(w);
    /* Reopened with the default VFS: the same database, intact. */
    sqlite3 *again = open_db(t.path, NULL);
    assert_int_equal(query_i64(again, "SELECT count(*) FROM t"), want);
    check_integrity(again);
    sqlite3_close(again);
    tmpdb_remove(&t);
}

/* synchronous = FULL pads and syncs the commit: still whole. */
static void test_full_sync(void **state)
{
    (void)state;
    tmpdb_t t;
    tmpdb_make(&t);
    sqlite3 *w = open_db(t.path, loom_store_walbuf_vfs());
    exec_ok(w, "PRAGMA journal_mode = WAL; PRAGMA synchronous = FULL;"
               "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB);");
    sqlite3 *r = open_db(t.path, loom_store_walbuf_vfs());
    for (int i = 0; i < 20; i++) {
        insert_rows(w, i * 7 + 1, 7, 300);
        assert_int_equal(query_i64(r, "SELECT count(*) FROM t"), (i + 1) * 7);
    }
    check_integrity(r);
    sqlite3_close(r);
    sqlite3_close(w);
    tmpdb_remove(&t);
}

/* Nothing of a committed transaction is held back: right after each commit
 * the WAL file holds whole frames only (32 + k * (24 + 4096) bytes), so
 * the commit frame was flushed with its page. (The saving in write calls
 * is counted by bench/rpc_submit's syscall figures, not here.) */
static void test_wal_holds_whole_frames_after_commit(void **state)
{
    (void)state;
    tmpdb_t t;
    tmpdb_make(&t);
    sqlite3 *w = open_db(t.path, loom_store_walbuf_vfs());
    exec_ok(w, "PRAGMA page_size = 4096; PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL;"
               "CREATE TABLE t(id INTEGER PRIMARY KEY, v BLOB); CREATE INDEX t_v ON t(v);");
    char wal[160];
    snprintf(wal, sizeof wal, "%s-wal", t.path);
    for (int i = 0; i < 50; i++) {
        insert_rows(w, i * 5 + 1, 5, 50);
        FILE *f = fopen(wal, "rb");
        assert_non_null(f);
        fseek(f, 0, SEEK_END);
        long size = ftell(f);
        fclose(f);
        assert_true(size > 32);
        assert_int_equal((size - 32) % (24 + 4096), 0);
    }
    sqlite3_close(w);
    tmpdb_remove(&t);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_registered),
        cmocka_unit_test(test_commits_visible_to_other_connection),
        cmocka_unit_test(test_full_sync),
        cmocka_unit_test(test_wal_holds_whole_frames_after_commit),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
