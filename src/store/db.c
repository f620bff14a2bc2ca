/* store/db.c — opening, checking and migrating an SQLite database, shared by
 * the store (schema.c, store.c) and the zoo (zoo/repo.c) so both refuse a
 * damaged, newer or foreign database the same way and number their schema
 * changes the same way (db.h). */
#include <stdio.h>
#include <string.h>

#include "store/db.h"

/* "PATH: " when there is a path, so messages read the same with or without
 * one (the store adds its path itself). */
#define AT(path) (path) ? (path) : "", (path) ? ": " : ""

static int pragma_int(sqlite3 *db, const char *sql, int *out)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, sql, -1, &st, NULL);
    if (rc != SQLITE_OK)
        return rc;
    rc = sqlite3_step(st);
    *out = rc == SQLITE_ROW ? sqlite3_column_int(st, 0) : 0;
    sqlite3_finalize(st);
    return rc == SQLITE_ROW ? SQLITE_OK : rc;
}

int loom_db_quick_check(sqlite3 *db, const char *path, const char *doc, loom_err_t *err)
{
    sqlite3_stmt *st;
    int rc = sqlite3_prepare_v2(db, "PRAGMA quick_check(1)", -1, &st, NULL);
    char first[200] = "";
    if (rc == SQLITE_OK) {
        if ((rc = sqlite3_step(st)) == SQLITE_ROW) {
            const char *t = (const char *)sqlite3_column_text(st, 0);
            snprintf(first, sizeof first, "%s", t ? t : "");
            rc = strcmp(first, "ok") == 0 ? SQLITE_OK : SQLITE_CORRUPT;
        }
        sqlite3_finalize(st);
    }
    if (rc == SQLITE_OK || rc == SQLITE_DONE)
        return LOOM_OK;
    return loom_err_set(err, LOOM_EIO,
                        "%s: the database is damaged (PRAGMA quick_check: %s); refusing to use "
                        "it. Recover with loomd stopped: sqlite3 %s .recover | sqlite3 "
                        "recovered.db, check recovered.db, then move it to %s (%s)",
                        path, first[0] ? first : sqlite3_errstr(rc), path, path, doc);
}

/* Tables of the database's own (not sqlite_*). */
static int count_tables(sqlite3 *db, int *n)
{
    return pragma_int(db,
                      "SELECT count(*) FROM sqlite_master WHERE type = 'table' AND name NOT LIKE "
                      "'sqlite\\_%' ESCAPE '\\'",
                      n);
}

/* Whose database this is, for a part with an application_id: its own, a
 * new one (nothing in it), or one of before migrations (adopt decides). */
static int check_kind(sqlite3 *db, const char *path, const loom_db_schema_t *s, int v,
                      loom_err_t *err)
{
    int app = 0;
    if (!s->application_id || pragma_int(db, "PRAGMA application_id", &app) != SQLITE_OK)
        return LOOM_OK; /* a read error shows again when migrating */
    if (app == s->application_id)
        return LOOM_OK;
    if (app != 0)
        return loom_err_set(err, LOOM_ESTATE,
                            "%s%snot a %s database (application_id %d, expected %d); refusing to "
                            "use it",
                            AT(path), s->what, app, (int)s->application_id);
    if (v > 0)
        return loom_err_set(err, LOOM_ESTATE,
                            "%s%snot a %s database (schema version %d but no %s application_id); "
                            "refusing to use it",
                            AT(path), s->what, v, s->what);
    return LOOM_OK;
}

/* Migration v + 1, its user_version bump (and, for the first, the
 * application_id) in one transaction. Another process may have migrated
 * since *v was read: the version is read again inside the transaction. */
static int migrate_one(sqlite3 *db, const char *path, const loom_db_schema_t *s, int *v,
                       loom_err_t *err)
{
    char *msg = NULL;
    char bump[96];
    int cur = 0, ntables = 0;
    if (sqlite3_exec(db, "BEGIN IMMEDIATE", NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    if (pragma_int(db, "PRAGMA user_version", &cur) != SQLITE_OK)
        goto fail;
    if (cur != *v) {
        sqlite3_exec(db, "COMMIT", NULL, NULL, NULL);
        *v = cur;
        return LOOM_OK;
    }
    if (cur == 0 && s->application_id && count_tables(db, &ntables) != SQLITE_OK)
        goto fail;
    if (ntables > 0) {
        int rc = s->adopt ? s->adopt(db, path, err)
                          : loom_err_set(err, LOOM_ESTATE,
                                         "%s%snot a %s database (it has tables but no schema "
                                         "version); refusing to use it",
                                         AT(path), s->what);
        if (rc) {
            sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
            return rc;
        }
    } else if (sqlite3_exec(db, s->migrations[cur], NULL, NULL, &msg) != SQLITE_OK) {
        goto fail;
    }
    if (cur == 0 && s->application_id) {
        snprintf(bump, sizeof bump, "PRAGMA application_id = %d", (int)s->application_id);
        if (sqlite3_exec(db, bump, NULL, NULL, &msg) != SQLITE_OK)
            goto fail;
    }
    snprintf(bump, sizeof bump, "PRAGMA user_version = %d", cur + 1);
    if (sqlite3_exec(db, bump, NULL, NULL, &msg) != SQLITE_OK ||
        sqlite3_exec(db, "COMMIT", NULL, NULL, &msg) != SQLITE_OK)
        goto fail;
    *v = cur + 1;
    return LOOM_OK;
fail:
    loom_err_set(err, LOOM_EIO, "%s%smigration %d: %s", AT(path), *v + 1,
                 msg ? msg : sqlite3_errmsg(db));
    sqlite3_free(msg);
    sqlite3_exec(db, "ROLLBACK", NULL, NULL, NULL);
    return LOOM_EIO;
}

int loom_db_migrate(sqlite3 *db, const char *path, const loom_db_schema_t *s, int upto,
                    loom_err_t *err)
{
    int n = s->nmigrations;
    int target = upto > 0 && upto < n ? upto : n;
    int v;
    if (pragma_int(db, "PRAGMA user_version", &v) != SQLITE_OK)
        return loom_err_set(err, LOOM_EIO, "%s%sreading the schema version: %s", AT(path),
                            sqlite3_errmsg(db));
    int rc = check_kind(db, path, s, v, err);
    if (rc)
        return rc;
    if (v > n)
        return loom_err_set(err, LOOM_ESTATE,
                            "%s%sthe database has schema version %d but this loom knows only up "
                            "to %d (written by a newer loom?)",
                            AT(path), v, n);
    /* A migration that rebuilds a table needs foreign keys off, which
     * only works outside a transaction; they are put back as they were. */
    int fk = 0;
    if (pragma_int(db, "PRAGMA foreign_keys", &fk) != SQLITE_OK)
        fk = 0;
    if (v < target)
        sqlite3_exec(db, "PRAGMA foreign_keys = OFF", NULL, NULL, NULL);
    while (v < target && rc == LOOM_OK)
        rc = migrate_one(db, path, s, &v, err);
    if (fk == 1)
        sqlite3_exec(db, "PRAGMA foreign_keys = ON", NULL, NULL, NULL);
    return rc;
}

int loom_db_open(const char *path, const loom_db_schema_t *s, sqlite3 **out, loom_err_t *err)
{
    sqlite3 *db = NULL;
    *out = NULL;
    if (sqlite3_open_v2(path, &db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, NULL) != SQLITE_OK) {
        int rc = loom_err_set(err, LOOM_EIO, "%s: cannot open database: %s", path,
                              db ? sqlite3_errmsg(db) : "out of memory");
        sqlite3_close(db);
        return rc;
    }
    sqlite3_busy_timeout(db, 10000);
    sqlite3_extended_result_codes(db, 1);
    char *msg = NULL;
    int rc = loom_db_quick_check(db, path, s->doc, err);
    if (!rc && sqlite3_exec(db, "PRAGMA journal_mode = WAL", NULL, NULL, &msg) != SQLITE_OK) {
        rc = loom_err_set(err, LOOM_EIO, "%s: PRAGMA journal_mode = WAL: %s", path,
                          msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
    }
    if (!rc)
        rc = loom_db_migrate(db, path, s, 0, err);
    if (rc) {
        sqlite3_close(db);
        return rc;
    }
    *out = db;
    return LOOM_OK;
}
