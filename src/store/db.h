/* store/db.h — an SQLite database opened the store's way, for the parts
 * that keep a database of their own (the zoo's zoo.db). Private to libloom:
 * the store and the zoo include it, nothing public does.
 *
 * What a part gets: a numbered list of migrations with the applied count in
 * PRAGMA user_version (each migration in one transaction with its bump), a
 * database from a newer loom refused, PRAGMA quick_check on open, an
 * application_id that tells this part's database from another's, and the
 * same error wording as the store's (docs/store.md, "Schema and
 * migrations", "Damage"). */
#ifndef LOOM_STORE_DB_H
#define LOOM_STORE_DB_H

#include <sqlite3.h>
#include <stdint.h>

#include "loom/core.h"

typedef struct loom_db_schema {
    const char *what;              /* "zoo": "not a zoo database", ... */
    const char *doc;               /* where recovery is described: "docs/zoo.md, The database" */
    const char *const *migrations; /* migration k + 1 is migrations[k]; append only */
    int nmigrations;
    int32_t application_id; /* PRAGMA application_id; 0: not used (the store's) */
    /* A database at user_version 0 that already has tables: one from
     * before this part had migrations, or someone else's. adopt brings the
     * former to migration 1's shape (inside the migration's transaction)
     * or refuses with a message; NULL: refused as foreign. */
    int (*adopt)(sqlite3 *db, const char *path, loom_err_t *err);
} loom_db_schema_t;

/* PRAGMA quick_check(1): LOOM_EIO with a message naming path, SQLite's
 * first finding and the recovery described in `doc`. */
int loom_db_quick_check(sqlite3 *db, const char *path, const char *doc, loom_err_t *err);

/* Applies the migrations past the database's user_version, up to `upto`
 * (all when upto <= 0). A user_version beyond the list (a newer loom) and
 * a database of another kind (application_id, or tables at version 0 that
 * adopt does not take) are refused with LOOM_ESTATE. */
int loom_db_migrate(sqlite3 *db, const char *path, const loom_db_schema_t *schema, int upto,
                    loom_err_t *err);

/* Opens (creating) path read-write: busy timeout, extended result codes,
 * quick_check, WAL, then loom_db_migrate. *out is NULL on error. */
int loom_db_open(const char *path, const loom_db_schema_t *schema, sqlite3 **out, loom_err_t *err);

#endif
