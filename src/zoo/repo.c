/* The model repository: trained models and their weights, kept so that new
 * jobs can start from them. Files are content-addressed (DIR/objects/<the
 * SHA-256 of the bytes>), so a model added twice is stored once and a file
 * can never change under an entry; metadata lives in SQLite (DIR/zoo.db, a
 * database of its own so the repository needs nothing of loomd's store and
 * the CLI can use it while loomd runs; opened, checked and migrated by the
 * store's code, store/db.h). Each row keeps the model's layer
 * signature and its operator histogram, so matching reads no ONNX. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/zoo.h"
#include "store/db.h"
#include "zoo/zoo_int.h"

#define MAX_FILE ((uint64_t)8 << 30) /* bytes of one stored file */

struct loom_zoo {
    sqlite3 *db;
    char dir[3072];
};

/* zoo.db's schema as numbered migrations (store/db.c: PRAGMA user_version
 * counts those applied, each runs in one transaction; append, never edit
 * one that has shipped). docs/zoo.md, "The database". */
static const char *const migrations[] = {
    /* 1: the entries, as zoo.db had them before it had migrations. */
    "CREATE TABLE zoo("
    " id INTEGER PRIMARY KEY AUTOINCREMENT, name TEXT NOT NULL, task TEXT NOT NULL,"
    " model_sha TEXT NOT NULL, model_bytes INTEGER NOT NULL,"
    " weights_sha TEXT NOT NULL, weights_bytes INTEGER NOT NULL,"
    " metric_name TEXT NOT NULL, metric REAL NOT NULL, higher_better INTEGER NOT NULL,"
    " nlayers INTEGER NOT NULL, params INTEGER NOT NULL, hist BLOB NOT NULL, sig BLOB NOT NULL,"
    " job_id INTEGER, added_ns INTEGER NOT NULL,"
    " owner_uid INTEGER, owner TEXT, shared INTEGER NOT NULL DEFAULT 0);"
    "CREATE INDEX zoo_task ON zoo(task);",
    /* 2: the matcher's shape keys and graph edges (filled at open for rows
     * from before, migrate_sigs), and the data an entry was trained on
     * (NULL: not recorded). */
    "ALTER TABLE zoo ADD COLUMN keys BLOB;"
    "ALTER TABLE zoo ADD COLUMN data TEXT;",
};

/* PRAGMA application_id of a zoo.db: "LZoo". */
#define ZOO_APPLICATION_ID 0x4c5a6f6f

static int adopt(sqlite3 *db, const char *path, loom_err_t *err);

static const loom_db_schema_t zoo_schema = {
    .what = "zoo",
    .doc = "docs/zoo.md, The database",
    .migrations = migrations,
    .nmigrations = (int)(sizeof migrations / sizeof migrations[0]),
    .application_id = ZOO_APPLICATION_ID,
    .adopt = adopt,
};

/* zoo.db files from before entries had owners: their entries keep no owner
 * and stay shared (every user could use them before); docs/zoo.md. */
static const char *const migrate_owners =
    "ALTER TABLE zoo ADD COLUMN owner_uid INTEGER;"
    "ALTER TABLE zoo ADD COLUMN owner TEXT;"
    "ALTER TABLE zoo ADD COLUMN shared INTEGER NOT NULL DEFAULT 1;";

/* Who may see a row: ?all, or a shared row, or the viewer's own. */
#define VISIBLE "(?3 OR shared OR owner_uid IS ?4)"

const char *loom_zoo_dir(const loom_zoo_t *z)
{
    return z->dir;
}

static int db_err(loom_zoo_t *z, loom_err_t *err, const char *what)
{
    return loom_err_set(err, LOOM_EIO, "%s/zoo.db: %s: %s", z->dir, what, sqlite3_errmsg(z->db));
}

/* mkdir -p: the state directory may not exist yet. */
static int make_dirs(const char *dir)
{
    char p[4096];
    snprintf(p, sizeof p, "%s", dir);
    for (char *s = p + 1; *s; s++) {
        if (*s != '/')
            continue;
        *s = '\0';
        if (mkdir(p, 0755) && errno != EEXIST)
            return -1;
        *s = '/';
    }
    return mkdir(p, 0755) && errno != EEXIST ? -1 : 0;
}

static bool has_column(sqlite3 *db, const char *name)
{
    sqlite3_stmt *st;
    bool found = false;
    if (sqlite3_prepare_v2(db, "SELECT 1 FROM pragma_table_info('zoo') WHERE name=?", -1, &st,
                           NULL) != SQLITE_OK)
        return false;
    sqlite3_bind_text(st, 1, name, -1, SQLITE_STATIC);
    found = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    return found;
}

/* A zoo.db from before migrations (user_version 0, tables in it) is taken
 * as migration 1 once it has what migration 1 makes: a zoo table of
 * entries, given owner columns if it is older still. Anything else is not a
 * zoo database. Runs inside migration 1's transaction (db.c). */
static int adopt(sqlite3 *db, const char *path, loom_err_t *err)
{
    if (!has_column(db, "model_sha") || !has_column(db, "sig") || !has_column(db, "hist"))
        return loom_err_set(err, LOOM_ESTATE,
                            "%s: not a zoo database (it has tables but no zoo table of entries); "
                            "refusing to use it",
                            path);
    char *msg = NULL;
    if ((!has_column(db, "owner_uid") &&
         sqlite3_exec(db, migrate_owners, NULL, NULL, &msg) != SQLITE_OK) ||
        sqlite3_exec(db, "CREATE INDEX IF NOT EXISTS zoo_task ON zoo(task)", NULL, NULL, &msg) !=
            SQLITE_OK) {
        int rc = loom_err_set(err, LOOM_EIO, "%s: migration 1 (adding the owner columns): %s", path,
                              msg ? msg : sqlite3_errmsg(db));
        sqlite3_free(msg);
        return rc;
    }
    return LOOM_OK;
}

static void bind_viewer(sqlite3_stmt *st, const loom_zoo_viewer_t *v)
{
    sqlite3_bind_int(st, 3, !v || v->all);
    sqlite3_bind_int64(st, 4, v ? v->uid : -1);
}

static void hist_bytes(const loom_zoo_sig_t *sig, uint8_t hist[2 * LOOM_ZOO_HIST])
{
    for (int i = 0; i < LOOM_ZOO_HIST; i++)
        hist[2 * i] = (uint8_t)sig->hist[i], hist[2 * i + 1] = (uint8_t)(sig->hist[i] >> 8);
}

/* One row from before the graph edges and shape keys: the signature read
 * again from the stored model (edges), else decoded from the row (a
 * chain); its keys computed. */
static int migrate_row(loom_zoo_t *z, sqlite3_stmt *up, int64_t id, const char *msha,
                       const void *blob, size_t blen, loom_err_t *err)
{
    loom_zoo_sig_t sig;
    loom_zoo_keys_t keys;
    char path[4096];
    loom_err_t ignored;
    snprintf(path, sizeof path, "%s/objects/%s", z->dir, msha ? msha : "-");
    if (!msha || loom_zoo_sig_load(path, &sig, &ignored)) {
        int rc = loom_zoo_sig_decode(blob, blen, "zoo.sig", &sig, err);
        if (rc)
            return rc;
    }
    loom_buf_t b = LOOM_BUF_INIT, k = LOOM_BUF_INIT;
    uint8_t hist[2 * LOOM_ZOO_HIST];
    hist_bytes(&sig, hist);
    int rc = loom_zoo_keys_of(&sig, &keys);
    if (!rc)
        rc = loom_zoo_sig_encode(&sig, &b);
    if (!rc)
        rc = loom_zoo_keys_encode(&keys, &k);
    if (rc) {
        rc = loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    } else {
        sqlite3_reset(up);
        sqlite3_bind_blob(up, 1, b.data, (int)b.len, SQLITE_STATIC);
        sqlite3_bind_blob(up, 2, hist, sizeof hist, SQLITE_STATIC);
        sqlite3_bind_blob(up, 3, k.data ? k.data : "", (int)k.len, SQLITE_STATIC);
        sqlite3_bind_int64(up, 4, (int64_t)sig.n);
        sqlite3_bind_int64(up, 5, id);
        if (sqlite3_step(up) != SQLITE_DONE)
            rc = db_err(z, err, "migrating a signature");
    }
    loom_buf_free(&b);
    loom_buf_free(&k);
    loom_zoo_keys_free(&keys);
    loom_zoo_sig_free(&sig);
    return rc;
}

/* Rows without keys (repositories from before them) get their edges and
 * keys once, in one transaction. */
static int migrate_sigs(loom_zoo_t *z, loom_err_t *err)
{
    sqlite3_stmt *st, *up;
    if (sqlite3_prepare_v2(z->db, "SELECT id,model_sha,sig FROM zoo WHERE keys IS NULL", -1, &st,
                           NULL))
        return db_err(z, err, "select");
    if (sqlite3_prepare_v2(z->db, "UPDATE zoo SET sig=?1,hist=?2,keys=?3,nlayers=?4 WHERE id=?5",
                           -1, &up, NULL)) {
        sqlite3_finalize(st);
        return db_err(z, err, "update");
    }
    int rc = LOOM_OK, s;
    bool began = false;
    while (!rc && (s = sqlite3_step(st)) == SQLITE_ROW) {
        if (!began) {
            if (sqlite3_exec(z->db, "BEGIN IMMEDIATE", NULL, NULL, NULL) != SQLITE_OK)
                rc = db_err(z, err, "begin");
            began = true;
        }
        if (!rc)
            rc = migrate_row(z, up, sqlite3_column_int64(st, 0),
                             (const char *)sqlite3_column_text(st, 1), sqlite3_column_blob(st, 2),
                             (size_t)sqlite3_column_bytes(st, 2), err);
    }
    sqlite3_finalize(st);
    sqlite3_finalize(up);
    if (began)
        sqlite3_exec(z->db, rc ? "ROLLBACK" : "COMMIT", NULL, NULL, NULL);
    return rc;
}

int loom_zoo_open(const char *dir, loom_zoo_t **out, loom_err_t *err)
{
    *out = NULL;
    loom_zoo_t *z = calloc(1, sizeof *z);
    if (!z)
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    char path[4096];
    if (snprintf(z->dir, sizeof z->dir, "%s", dir) >= (int)sizeof z->dir) {
        free(z);
        return loom_err_set(err, LOOM_EINVAL, "zoo directory '%.64s...': path too long", dir);
    }
    snprintf(path, sizeof path, "%s/objects", dir);
    if (make_dirs(dir) || (mkdir(path, 0755) && errno != EEXIST)) {
        int e = errno;
        free(z);
        return loom_err_errno(err, LOOM_EIO, e, "zoo directory '%s': cannot create", path);
    }
    snprintf(path, sizeof path, "%s/zoo.db", dir);
    int rc = loom_db_open(path, &zoo_schema, &z->db, err);
    if (rc) {
        free(z);
        return rc;
    }
    if ((rc = migrate_sigs(z, err))) {
        loom_zoo_close(z);
        return rc;
    }
    *out = z;
    return LOOM_OK;
}

void loom_zoo_close(loom_zoo_t *z)
{
    if (!z)
        return;
    sqlite3_close(z->db);
    free(z);
}

int loom_zoo_object_path(const loom_zoo_t *z, const char *sha, char *out, size_t outlen,
                         loom_err_t *err)
{
    if (strlen(sha) != 64 || strspn(sha, "0123456789abcdef") != 64)
        return loom_err_set(err, LOOM_EINVAL, "object '%.80s': expected 64 hex digits", sha);
    if (snprintf(out, outlen, "%s/objects/%s", z->dir, sha) >= (int)outlen)
        return loom_err_set(err, LOOM_EINVAL, "object %s: path too long", sha);
    return LOOM_OK;
}

static void sha_hex(const void *data, size_t len, char sha[65])
{
    zoo_sha256_t c;
    zoo_sha256_init(&c);
    zoo_sha256_update(&c, data, len);
    zoo_sha256_hex(&c, sha);
}

/* Writes data into the object store as sha (a temporary file, fsync,
 * rename: a reader never sees half an object). */
static int store_object(loom_zoo_t *z, const void *data, size_t len, const char *sha,
                        loom_err_t *err)
{
    char tmp[4096], final[4096];
    snprintf(tmp, sizeof tmp, "%s/objects/.incoming-XXXXXX", z->dir);
    int fd = mkstemp(tmp);
    if (fd < 0)
        return loom_err_errno(err, LOOM_EIO, errno, "%s: cannot create", tmp);
    int rc = LOOM_OK;
    for (size_t off = 0; off < len && !rc;) {
        ssize_t w = write(fd, (const char *)data + off, len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            rc = loom_err_errno(err, LOOM_EIO, errno, "%s: write", tmp);
        else
            off += (size_t)w;
    }
    if (!rc && fchmod(fd, 0644))
        rc = loom_err_errno(err, LOOM_EIO, errno, "%s: chmod", tmp);
    if (!rc && fsync(fd))
        rc = loom_err_errno(err, LOOM_EIO, errno, "%s: fsync", tmp);
    close(fd);
    snprintf(final, sizeof final, "%s/objects/%s", z->dir, sha);
    if (!rc && rename(tmp, final))
        rc = loom_err_errno(err, LOOM_EIO, errno, "%s: rename", final);
    if (rc)
        unlink(tmp);
    return rc;
}

bool loom_zoo_metric_higher_better(const char *m)
{
    return !(strstr(m, "loss") || strstr(m, "error") || strstr(m, "perplexity") ||
             strstr(m, "wer"));
}

static int check_text(const char *what, const char *s, bool required, loom_err_t *err)
{
    if (!s || !*s)
        return required ? loom_err_set(err, LOOM_EINVAL, "%s: required", what) : LOOM_OK;
    size_t n = strlen(s);
    if (n > LOOM_ZOO_MAX_TEXT || !loom_utf8_valid(s, n))
        return loom_err_set(err, LOOM_EINVAL, "%s: expected UTF-8 text of at most %d bytes", what,
                            LOOM_ZOO_MAX_TEXT);
    return LOOM_OK;
}

static bool is_fraction(const char *m)
{
    static const char *const names[] = {"acc", "precision", "recall", "f1",  "auc",
                                        "iou", "map",       "top1",   "top5"};
    if (strstr(m, "accuracy"))
        return true;
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if (!strcmp(m, names[i]))
            return true;
    return false;
}

int loom_zoo_metric_check(const char *name, double v, loom_err_t *err)
{
    if (!isfinite(v) || fabs(v) > LOOM_ZOO_METRIC_ABS)
        return loom_err_set(err, LOOM_EINVAL, "metric %s: expected a finite number of at most %g",
                            name, LOOM_ZOO_METRIC_ABS);
    if (is_fraction(name) && !(v >= 0 && v <= 1))
        return loom_err_set(err, LOOM_EINVAL, "metric %s: %g; expected a fraction in [0, 1]", name,
                            v);
    if (!loom_zoo_metric_higher_better(name) && v < 0)
        return loom_err_set(err, LOOM_EINVAL, "metric %s: %g; expected a value >= 0", name, v);
    return LOOM_OK;
}

static int check_entry(const loom_zoo_entry_in_t *in, loom_err_t *err)
{
    int rc;
    if ((rc = check_text("task", in->task, true, err)) ||
        (rc = check_text("name", in->name, false, err)) ||
        (rc = check_text("data", in->data, false, err)) ||
        (rc = check_text("metric name", in->metric_name, true, err)) ||
        (rc = loom_zoo_metric_check(in->metric_name, in->metric, err)))
        return rc;
    if (!in->model_path || !in->weights_path)
        return loom_err_set(err, LOOM_EINVAL, "model and weights files: required");
    return LOOM_OK;
}

static int insert_row(loom_zoo_t *z, const loom_zoo_prepared_t *p, int64_t *id, loom_err_t *err)
{
    const loom_zoo_entry_in_t *in = &p->in;
    const loom_zoo_sig_t *sig = &p->sig;
    loom_buf_t blob = LOOM_BUF_INIT, kb = LOOM_BUF_INIT;
    uint8_t hist[2 * LOOM_ZOO_HIST];
    hist_bytes(sig, hist);
    loom_zoo_keys_t keys;
    int krc = loom_zoo_keys_of(sig, &keys);
    if (!krc)
        krc = loom_zoo_keys_encode(&keys, &kb);
    loom_zoo_keys_free(&keys);
    if (krc || loom_zoo_sig_encode(sig, &blob)) {
        loom_buf_free(&blob); /* what it appended before failing */
        loom_buf_free(&kb);
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    }
    sqlite3_stmt *st;
    int rc = LOOM_OK;
    if (sqlite3_prepare_v2(z->db,
                           "INSERT INTO zoo(name,task,model_sha,model_bytes,weights_sha,"
                           "weights_bytes,metric_name,metric,higher_better,nlayers,params,hist,"
                           "sig,job_id,added_ns,owner_uid,owner,shared,keys,data) "
                           "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)",
                           -1, &st, NULL) != SQLITE_OK) {
        loom_buf_free(&blob);
        loom_buf_free(&kb);
        return db_err(z, err, "insert");
    }
    sqlite3_bind_text(st, 1, p->name, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 2, in->task, -1, SQLITE_STATIC);
    sqlite3_bind_text(st, 3, p->msha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 4, (int64_t)p->mlen);
    sqlite3_bind_text(st, 5, p->wsha, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 6, (int64_t)p->wlen);
    sqlite3_bind_text(st, 7, in->metric_name, -1, SQLITE_STATIC);
    sqlite3_bind_double(st, 8, in->metric);
    sqlite3_bind_int(st, 9, loom_zoo_metric_higher_better(in->metric_name));
    sqlite3_bind_int64(st, 10, (int64_t)sig->n);
    sqlite3_bind_int64(st, 11, p->params);
    sqlite3_bind_blob(st, 12, hist, sizeof hist, SQLITE_STATIC);
    sqlite3_bind_blob(st, 13, blob.data, (int)blob.len, SQLITE_STATIC);
    if (in->job_id > 0)
        sqlite3_bind_int64(st, 14, in->job_id);
    sqlite3_bind_int64(st, 15, loom_time_real_ns());
    sqlite3_bind_int64(st, 16, in->owner_uid);
    if (in->owner)
        sqlite3_bind_text(st, 17, in->owner, -1, SQLITE_STATIC);
    sqlite3_bind_int(st, 18, in->shared);
    sqlite3_bind_blob(st, 19, kb.data ? kb.data : "", (int)kb.len, SQLITE_STATIC);
    if (in->data && *in->data)
        sqlite3_bind_text(st, 20, in->data, -1, SQLITE_STATIC);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = db_err(z, err, "insert");
    else
        *id = sqlite3_last_insert_rowid(z->db);
    sqlite3_finalize(st);
    loom_buf_free(&blob);
    loom_buf_free(&kb);
    return rc;
}

static const char *base_name(const char *path)
{
    const char *s = strrchr(path, '/');
    return s ? s + 1 : path;
}

static void drop_object(loom_zoo_t *z, const char *sha);

/* Every value finite: NaN or infinite weights are no start for anyone. */
static int check_weights(const loom_zoo_weights_t *w, const char *name, int64_t *params,
                         loom_err_t *err)
{
    *params = 0;
    for (size_t i = 0; i < w->n; i++) {
        for (size_t e = 0; e < w->t[i].numel; e++)
            if (!isfinite(w->t[i].data[e]))
                return loom_err_set(err, LOOM_EINVAL,
                                    "%s: tensor %zu ('%.64s') value %zu is not finite", name, i,
                                    w->t[i].name, e);
        *params += (int64_t)w->t[i].numel;
    }
    return LOOM_OK;
}

static int quieted(int rc, const char *path, const char *what, loom_err_t *err)
{
    if (rc == LOOM_EINVAL)
        return loom_err_set(err, LOOM_EINVAL,
                            "'%s': not %s that can be read (errors about a client's file do "
                            "not quote it; the CLI's `zoo add` on it gives the detail)",
                            path, what);
    return rc;
}

int loom_zoo_prepare(const loom_zoo_entry_in_t *in, const void *model, size_t mlen,
                     const void *weights, size_t wlen, bool quiet, loom_zoo_prepared_t *p,
                     loom_err_t *err)
{
    memset(p, 0, sizeof *p);
    int rc = check_entry(in, err);
    if (rc)
        return rc;
    p->in = *in;
    p->model = model;
    p->mlen = mlen;
    p->weights = weights;
    p->wlen = wlen;
    p->name = in->name && *in->name ? in->name : base_name(in->model_path);
    if ((rc = check_text("name", p->name, true, err)))
        return rc;
    loom_zoo_weights_t w;
    rc = loom_zoo_weights_parse(weights, wlen, in->weights_path, &w, err);
    if (rc)
        return quiet ? quieted(rc, in->weights_path, "a weights file (docs/zoo.md)", err) : rc;
    rc = check_weights(&w, in->weights_path, &p->params, err);
    loom_zoo_weights_free(&w);
    if (rc)
        return rc;
    loom_est_model_t *m;
    if ((rc = loom_est_model_parse(model, mlen, in->model_path, &m, err)))
        return quiet ? quieted(rc, in->model_path, "an ONNX model", err) : rc;
    rc = loom_zoo_sig_from_model(m, &p->sig, err);
    loom_est_model_free(m);
    if (rc)
        return rc;
    sha_hex(model, mlen, p->msha);
    sha_hex(weights, wlen, p->wsha);
    return LOOM_OK;
}

int loom_zoo_store(loom_zoo_t *z, loom_zoo_prepared_t *p, loom_err_t *err)
{
    int rc = store_object(z, p->model, p->mlen, p->msha, err);
    p->stored_m = rc == LOOM_OK;
    if (!rc)
        rc = store_object(z, p->weights, p->wlen, p->wsha, err);
    p->stored_w = p->stored_m && rc == LOOM_OK;
    return rc;
}

void loom_zoo_abort(loom_zoo_t *z, loom_zoo_prepared_t *p)
{
    if (p->stored_m)
        drop_object(z, p->msha);
    if (p->stored_w)
        drop_object(z, p->wsha);
    p->stored_m = p->stored_w = false;
}

/* Whether an object is there; written again from memory if a remove (here
 * or in another process) dropped it between store and the row. */
static int ensure_object(loom_zoo_t *z, const void *data, size_t len, const char *sha,
                         loom_err_t *err)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/objects/%s", z->dir, sha);
    return access(path, F_OK) == 0 ? LOOM_OK : store_object(z, data, len, sha, err);
}

int loom_zoo_commit(loom_zoo_t *z, loom_zoo_prepared_t *p, int64_t *id, loom_err_t *err)
{
    int rc = insert_row(z, p, id, err);
    if (rc) { /* leave no object that no entry names */
        loom_zoo_abort(z, p);
        return rc;
    }
    if ((rc = ensure_object(z, p->model, p->mlen, p->msha, err)) == LOOM_OK)
        rc = ensure_object(z, p->weights, p->wlen, p->wsha, err);
    return rc;
}

void loom_zoo_prepared_free(loom_zoo_prepared_t *p)
{
    loom_zoo_sig_free(&p->sig);
}

static int read_own(const char *path, size_t max, loom_buf_t *b, loom_err_t *err)
{
    loom_file_t f;
    int rc = loom_file_open(&f, path, 0, max, err);
    if (!rc)
        rc = loom_file_read(&f, b, err);
    loom_file_close(&f);
    return rc;
}

int loom_zoo_add(loom_zoo_t *z, const loom_zoo_entry_in_t *in, int64_t *id, loom_err_t *err)
{
    loom_buf_t m = LOOM_BUF_INIT, w = LOOM_BUF_INIT;
    loom_zoo_prepared_t p;
    int rc = check_entry(in, err);
    if (!rc)
        rc = read_own(in->weights_path, LOOM_ZOO_WEIGHTS_MAX, &w, err);
    if (!rc)
        rc = read_own(in->model_path, LOOM_ZOO_MODEL_MAX, &m, err);
    if (!rc && !(rc = loom_zoo_prepare(in, m.data, m.len, w.data, w.len, false, &p, err))) {
        if ((rc = loom_zoo_store(z, &p, err)))
            loom_zoo_abort(z, &p);
        else
            rc = loom_zoo_commit(z, &p, id, err);
        loom_zoo_prepared_free(&p);
    }
    loom_buf_free(&m);
    loom_buf_free(&w);
    return rc;
}

#define ROW_COLS                                                                                   \
    "id,name,task,model_sha,model_bytes,weights_sha,weights_bytes,metric_name,metric,"             \
    "higher_better,nlayers,params,job_id,added_ns,owner_uid,owner,shared,data"

static json_t *row_json(loom_zoo_t *z, sqlite3_stmt *st)
{
    char when[32], path[4096];
    loom_time_format_rfc3339(sqlite3_column_int64(st, 13), when);
    json_t *o = json_pack("{s:I,s:s,s:s,s:s,s:I,s:s,s:I,s:{s:s,s:f,s:b},s:I,s:I,s:s}", "id",
                          (json_int_t)sqlite3_column_int64(st, 0), "name",
                          (const char *)sqlite3_column_text(st, 1), "task",
                          (const char *)sqlite3_column_text(st, 2), "model_sha",
                          (const char *)sqlite3_column_text(st, 3), "model_bytes",
                          (json_int_t)sqlite3_column_int64(st, 4), "weights_sha",
                          (const char *)sqlite3_column_text(st, 5), "weights_bytes",
                          (json_int_t)sqlite3_column_int64(st, 6), "metric", "name",
                          (const char *)sqlite3_column_text(st, 7), "value",
                          sqlite3_column_double(st, 8), "higher_better", sqlite3_column_int(st, 9),
                          "layers", (json_int_t)sqlite3_column_int64(st, 10), "params",
                          (json_int_t)sqlite3_column_int64(st, 11), "added", when);
    if (!o)
        return NULL;
    /* NULL when any member could not be made: a row is whole or absent */
    bool owned = sqlite3_column_type(st, 14) != SQLITE_NULL;
    const char *owner = (const char *)sqlite3_column_text(st, 15);
    int bad = json_object_set_new(o, "job_id",
                                  sqlite3_column_type(st, 12) == SQLITE_NULL
                                      ? json_null()
                                      : json_integer(sqlite3_column_int64(st, 12)));
    bad |= json_object_set_new(o, "owner_uid",
                               owned ? json_integer(sqlite3_column_int64(st, 14)) : json_null());
    bad |= json_object_set_new(o, "owner", owner ? json_string(owner) : json_null());
    bad |= json_object_set_new(o, "shared", json_boolean(sqlite3_column_int(st, 16) != 0));
    const char *data = (const char *)sqlite3_column_text(st, 17);
    bad |= json_object_set_new(o, "data", data ? json_string(data) : json_null());
    snprintf(path, sizeof path, "%s/objects/%s", z->dir, sqlite3_column_text(st, 3));
    bad |= json_object_set_new(o, "model_path", json_string(path));
    snprintf(path, sizeof path, "%s/objects/%s", z->dir, sqlite3_column_text(st, 5));
    bad |= json_object_set_new(o, "weights_path", json_string(path));
    if (bad) {
        json_decref(o);
        return NULL;
    }
    return o;
}

int loom_zoo_find_job(loom_zoo_t *z, int64_t job_id, int64_t *id, loom_err_t *err)
{
    sqlite3_stmt *st;
    *id = 0;
    if (sqlite3_prepare_v2(z->db, "SELECT id FROM zoo WHERE job_id=? LIMIT 1", -1, &st, NULL))
        return db_err(z, err, "select");
    sqlite3_bind_int64(st, 1, job_id);
    int s = sqlite3_step(st);
    if (s == SQLITE_ROW)
        *id = sqlite3_column_int64(st, 0);
    sqlite3_finalize(st);
    return s == SQLITE_ROW || s == SQLITE_DONE ? LOOM_OK : db_err(z, err, "select");
}

int loom_zoo_get(loom_zoo_t *z, int64_t id, const loom_zoo_viewer_t *v, json_t **out,
                 loom_err_t *err)
{
    sqlite3_stmt *st;
    *out = NULL;
    if (sqlite3_prepare_v2(z->db, "SELECT " ROW_COLS " FROM zoo WHERE id=?1 AND " VISIBLE, -1, &st,
                           NULL))
        return db_err(z, err, "select");
    sqlite3_bind_int64(st, 1, id);
    bind_viewer(st, v);
    int s = sqlite3_step(st), rc = LOOM_OK;
    if (s == SQLITE_ROW)
        *out = row_json(z, st);
    else if (s == SQLITE_DONE)
        rc = loom_err_set(err, LOOM_ENOTFOUND, "zoo entry %lld: no such entry", (long long)id);
    else
        rc = db_err(z, err, "select");
    if (!rc && !*out)
        rc = loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    sqlite3_finalize(st);
    return rc;
}

int loom_zoo_list(loom_zoo_t *z, const char *task, const loom_zoo_viewer_t *v, size_t limit,
                  json_t **out, loom_err_t *err)
{
    sqlite3_stmt *st;
    *out = NULL;
    if (sqlite3_prepare_v2(z->db,
                           "SELECT " ROW_COLS " FROM zoo WHERE (?1 IS NULL OR task=?1) AND " VISIBLE
                           " ORDER BY id LIMIT ?2",
                           -1, &st, NULL))
        return db_err(z, err, "select");
    bind_viewer(st, v);
    if (task)
        sqlite3_bind_text(st, 1, task, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, limit ? (int64_t)limit : -1);
    json_t *arr = json_array();
    int s = arr ? SQLITE_ROW : SQLITE_NOMEM;
    while (s == SQLITE_ROW && (s = sqlite3_step(st)) == SQLITE_ROW)
        if (json_array_append_new(arr, row_json(z, st))) /* a row lost: the whole list is */
            s = SQLITE_NOMEM;
    sqlite3_finalize(st);
    if (s == SQLITE_NOMEM) {
        json_decref(arr);
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory listing entries");
    }
    if (s != SQLITE_DONE) {
        json_decref(arr);
        return db_err(z, err, "select");
    }
    *out = arr;
    return LOOM_OK;
}

/* Unlinks an object when no entry names it any more. */
static void drop_object(loom_zoo_t *z, const char *sha)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(z->db, "SELECT 1 FROM zoo WHERE model_sha=?1 OR weights_sha=?1", -1, &st,
                           NULL))
        return;
    sqlite3_bind_text(st, 1, sha, -1, SQLITE_STATIC);
    bool used = sqlite3_step(st) == SQLITE_ROW;
    sqlite3_finalize(st);
    char path[4096];
    loom_err_t e;
    if (!used && !loom_zoo_object_path(z, sha, path, sizeof path, &e))
        unlink(path);
}

int loom_zoo_remove(loom_zoo_t *z, int64_t id, loom_err_t *err)
{
    json_t *row;
    int rc = loom_zoo_get(z, id, NULL, &row, err);
    if (rc)
        return rc;
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(z->db, "DELETE FROM zoo WHERE id=?", -1, &st, NULL)) {
        json_decref(row);
        return db_err(z, err, "delete");
    }
    sqlite3_bind_int64(st, 1, id);
    if (sqlite3_step(st) != SQLITE_DONE)
        rc = db_err(z, err, "delete");
    sqlite3_finalize(st);
    if (!rc) {
        drop_object(z, json_string_value(json_object_get(row, "model_sha")));
        drop_object(z, json_string_value(json_object_get(row, "weights_sha")));
    }
    json_decref(row);
    return rc;
}

/* ------------------------------------------------------------------ match */

typedef struct cand {
    int64_t id;
    double bound, sim, metric;
    bool higher, aligned;
} cand_t;

static int by_bound(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    return x->bound < y->bound ? 1 : x->bound > y->bound ? -1 : (x->id > y->id) - (x->id < y->id);
}

static int by_sim(const void *a, const void *b)
{
    const cand_t *x = a, *y = b;
    if (x->aligned != y->aligned)
        return x->aligned ? -1 : 1;
    return x->sim < y->sim ? 1 : x->sim > y->sim ? -1 : (x->id > y->id) - (x->id < y->id);
}

/* Reads every entry's bound (the coarse pass). */
static int scan(loom_zoo_t *z, const loom_zoo_sig_t *child, const loom_zoo_keys_t *ckeys,
                const loom_zoo_match_opts_t *o, cand_t **out, size_t *n, size_t *other_data,
                loom_err_t *err)
{
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(z->db,
                           "SELECT id,nlayers,hist,metric,higher_better,keys,data FROM zoo "
                           "WHERE (?1 IS NULL OR task=?1) AND id<>?2 AND " VISIBLE,
                           -1, &st, NULL))
        return db_err(z, err, "select");
    loom_zoo_viewer_t mine = {.uid = o->viewer ? o->viewer->uid : -1, .all = false};
    bind_viewer(st, o->viewer ? &mine : NULL);
    if (o->task)
        sqlite3_bind_text(st, 1, o->task, -1, SQLITE_STATIC);
    sqlite3_bind_int64(st, 2, o->exclude_id);
    size_t cap = 0;
    *out = NULL;
    *n = 0;
    int s;
    *other_data = 0;
    while ((s = sqlite3_step(st)) == SQLITE_ROW) {
        const char *data = (const char *)sqlite3_column_text(st, 6);
        if (o->data && *o->data && data && strcmp(data, o->data)) {
            ++*other_data; /* predicted not to help: the child starts cold */
            continue;
        }
        if (loom_vec_reserve((void **)out, &cap, *n + 1, sizeof **out, 256)) {
            sqlite3_finalize(st);
            return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
        }
        loom_zoo_sig_t hs = {.n = (size_t)sqlite3_column_int64(st, 1)};
        const uint8_t *h = sqlite3_column_blob(st, 2);
        if (h && sqlite3_column_bytes(st, 2) == 2 * LOOM_ZOO_HIST)
            for (int i = 0; i < LOOM_ZOO_HIST; i++)
                hs.hist[i] = (uint16_t)(h[2 * i] | h[2 * i + 1] << 8);
        double bound = loom_zoo_bound(child, &hs);
        loom_zoo_keys_t keys;
        if (bound > 0 && !loom_zoo_keys_decode(sqlite3_column_blob(st, 5),
                                               (size_t)sqlite3_column_bytes(st, 5), hs.n, &keys)) {
            double kb = loom_zoo_keys_bound(ckeys, &keys);
            bound = kb < bound ? kb : bound;
            loom_zoo_keys_free(&keys);
        }
        cand_t *c = &(*out)[(*n)++];
        *c = (cand_t){.id = sqlite3_column_int64(st, 0),
                      .bound = bound,
                      .metric = sqlite3_column_double(st, 3),
                      .higher = sqlite3_column_int(st, 4) != 0};
    }
    sqlite3_finalize(st);
    return s == SQLITE_DONE ? LOOM_OK : db_err(z, err, "select");
}

static int exact(loom_zoo_t *z, sqlite3_stmt *st, const loom_zoo_sig_t *child, cand_t *c,
                 loom_err_t *err)
{
    sqlite3_reset(st);
    sqlite3_bind_int64(st, 1, c->id);
    if (sqlite3_step(st) != SQLITE_ROW)
        return db_err(z, err, "select sig");
    loom_zoo_sig_t s;
    int rc = loom_zoo_sig_decode(sqlite3_column_blob(st, 0), (size_t)sqlite3_column_bytes(st, 0),
                                 "zoo.sig", &s, err);
    if (rc)
        return rc;
    c->sim = loom_zoo_similarity(child, &s);
    c->aligned = true;
    loom_zoo_sig_free(&s);
    return c->sim < 0 ? loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory") : LOOM_OK;
}

/* The parent rule (docs/zoo.md): the best metric within `band` of the
 * best similarity, ties by similarity; sorted by similarity already. */
static ssize_t choose(const cand_t *c, size_t n, double band, double min_sim)
{
    if (n == 0 || !c[0].aligned || c[0].sim < min_sim)
        return -1;
    ssize_t best = 0;
    for (size_t i = 1; i < n && c[i].aligned && c[i].sim >= c[0].sim - band; i++) {
        if (c[i].sim < min_sim)
            break;
        bool better = c[i].higher ? c[i].metric > c[best].metric : c[i].metric < c[best].metric;
        if (better)
            best = (ssize_t)i;
    }
    return best;
}

static json_t *candidates_json(loom_zoo_t *z, const cand_t *c, size_t n, size_t top)
{
    json_t *arr = json_array();
    for (size_t i = 0; i < n && i < top && c[i].aligned; i++) {
        json_t *row;
        loom_err_t e;
        if (loom_zoo_get(z, c[i].id, NULL, &row, &e))
            continue;
        json_object_set_new(row, "similarity", json_real(c[i].sim));
        json_array_append_new(arr, row);
    }
    return arr;
}

int loom_zoo_match(loom_zoo_t *z, const loom_zoo_sig_t *child, const loom_zoo_match_opts_t *opts,
                   json_t **out, loom_err_t *err)
{
    loom_zoo_match_opts_t o =
        opts ? *opts : (loom_zoo_match_opts_t){.band = -1, .min_similarity = -1};
    size_t limit = o.candidates ? o.candidates : SIZE_MAX, top = o.top ? o.top : 5;
    double band = o.band >= 0 ? o.band : 0.05,
           min_sim = o.min_similarity >= 0 ? o.min_similarity : 0.5;
    cand_t *c;
    size_t n, aligned = 0;
    *out = NULL;
    loom_zoo_keys_t ckeys;
    if (loom_zoo_keys_of(child, &ckeys))
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    size_t other_data = 0;
    int rc = scan(z, child, &ckeys, &o, &c, &n, &other_data, err);
    loom_zoo_keys_free(&ckeys);
    if (rc)
        return rc;
    if (n)
        qsort(c, n, sizeof *c, by_bound);
    sqlite3_stmt *st;
    if (sqlite3_prepare_v2(z->db, "SELECT sig FROM zoo WHERE id=?", -1, &st, NULL)) {
        free(c);
        return db_err(z, err, "select");
    }
    /* Exact alignment in bound order (the bound is never below the exact
     * similarity); stop when no entry left can come within the band of
     * the best found (it could not be chosen) nor enter the top `top`: the
     * parent and the ranked candidates are those exhaustive search finds.
     * No cap unless the caller sets one (opts->candidates). */
    double *tops = calloc(top, sizeof *tops);
    if (!tops) {
        sqlite3_finalize(st);
        free(c);
        return loom_err_set(err, LOOM_ENOMEM, "zoo: out of memory");
    }
    double best = -1;
    for (size_t i = 0; !rc && i < n && aligned < limit; i++) {
        if (best >= 0 && aligned >= top) {
            double kth = tops[top - 1], cut = best - band < kth ? best - band : kth;
            if (c[i].bound < cut)
                break;
        }
        rc = exact(z, st, child, &c[i], err);
        aligned++;
        best = c[i].sim > best ? c[i].sim : best;
        /* tops: the `top` best similarities so far, descending */
        size_t k = aligned < top ? aligned - 1 : top - 1;
        if (aligned <= top || c[i].sim > tops[k]) {
            while (k > 0 && tops[k - 1] < c[i].sim) {
                tops[k] = tops[k - 1];
                k--;
            }
            tops[k] = c[i].sim;
        }
    }
    free(tops);
    sqlite3_finalize(st);
    if (!rc) {
        if (n)
            qsort(c, n, sizeof *c, by_sim);
        ssize_t p = choose(c, n, band, min_sim);
        *out = json_pack("{s:o,s:o,s:s,s:I,s:I,s:I}", "candidates", candidates_json(z, c, n, top),
                         "parent", p >= 0 ? json_integer(c[p].id) : json_null(), "rule",
                         "best metric within the similarity band of the most similar", "scanned",
                         (json_int_t)n, "aligned", (json_int_t)aligned, "other_data",
                         (json_int_t)other_data);
        if (p >= 0)
            json_object_set_new(*out, "similarity", json_real(c[p].sim));
    }
    free(c);
    return rc;
}
