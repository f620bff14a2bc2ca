/* estimate/request.c — GPU memory requests for jobs that name a model.
 *
 * loomd turns a submission's model reference into a GPU memory request:
 * the estimator's total (peak reserved by the caching allocator + CUDA
 * context) plus a safety margin, rounded up to whole MiB because the
 * scheduler counts GPU memory in MiB. The record it returns is what the job
 * keeps, so `loom show` can say where its request came from.
 *
 * The same model is submitted many times (a generator draws from a handful
 * of catalog entries), so estimates are cached. A cache entry is keyed by
 * everything the estimate depends on: the model file's identity and times
 * (device, inode, size, mtime, ctime: a rewritten file is a new key), the
 * batch and training setup, and the device file likewise. Estimates run
 * outside the lock, so a slow one does not hold up cache hits. */
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "loom/estimate.h"

#define MIB            ((uint64_t)1 << 20)
#define BATCH_MAX      ((int64_t)1 << 24)
#define CACHE_DEFAULT  256
#define PATH_MAX_BYTES 4096

/* ----------------------------------------------------------------- margin */

int loom_est_margin_parse(const char *text, loom_est_margin_t *out, loom_err_t *err)
{
    loom_est_margin_t m = {0, 0};
    bool have_pct = false, have_size = false;
    char buf[128];
    if (!text || !*text || strlen(text) >= sizeof buf)
        goto bad;
    snprintf(buf, sizeof buf, "%s", text);
    int parts = 0;
    for (char *p = buf, *next; p; p = next) { /* "A+B": empty parts are errors */
        char *plus = strchr(p, '+');
        next = plus ? plus + 1 : NULL;
        if (plus)
            *plus = '\0';
        size_t n = strlen(p);
        if (++parts > 2 || n == 0)
            goto bad;
        if (p[n - 1] == '%') {
            p[n - 1] = '\0';
            char *end;
            errno = 0;
            double pct = strtod(p, &end);
            if (have_pct || end == p || *end || errno || !(pct >= 0 && pct <= 1000))
                goto bad;
            m.fraction = pct / 100.0;
            have_pct = true;
        } else {
            uint64_t b;
            if (have_size || loom_parse_size(p, &b, NULL) != LOOM_OK)
                goto bad;
            m.extra_bytes = b;
            have_size = true;
        }
    }
    if (parts == 0)
        goto bad;
    *out = m;
    return LOOM_OK;
bad:
    return loom_err_set(err, LOOM_EINVAL,
                        "estimate margin '%s': expected a percentage (0%% to 1000%%) and/or a "
                        "size, such as \"10%%+256MiB\", \"15%%\" or \"512MiB\"",
                        text ? text : "");
}

uint64_t loom_est_margin_apply(const loom_est_margin_t *m, uint64_t total)
{
    double rel = ceil((double)total * m->fraction);
    uint64_t sum = total;
    /* Saturate rather than wrap: such a request fits nowhere either way. */
    if (rel >= 1.8e19 || __builtin_add_overflow(sum, (uint64_t)rel, &sum) ||
        __builtin_add_overflow(sum, m->extra_bytes, &sum) || sum > UINT64_MAX - MIB)
        return UINT64_MAX / MIB * MIB;
    return (sum + MIB - 1) / MIB * MIB;
}

/* -------------------------------------------------------------- reference */

static int member_string(const json_t *v, const char *name, const char **out, loom_err_t *err)
{
    if (!json_is_string(v))
        return loom_err_set(err, LOOM_EINVAL, "model.%s: expected a string, found %s", name,
                            loom_json_type_name(v));
    if (strlen(json_string_value(v)) != json_string_length(v))
        return loom_err_set(err, LOOM_EINVAL, "model.%s: contains a NUL character", name);
    *out = json_string_value(v);
    return LOOM_OK;
}

static bool device_name_ok(const char *s)
{
    size_t n = strlen(s);
    if (n == 0 || n > 63)
        return false;
    for (const char *p = s; *p; p++)
        if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') || *p == '-' || *p == '_'))
            return false;
    return true;
}

int loom_est_ref_from_json(const json_t *obj, loom_est_ref_t *out, loom_err_t *err)
{
    memset(out, 0, sizeof *out);
    out->optimizer = LOOM_EST_ADAM;
    out->precision = LOOM_EST_FP32;
    if (!json_is_object(obj))
        return loom_err_set(err, LOOM_EINVAL,
                            "model: expected an object such as {\"path\": \"/abs/model.onnx\", "
                            "\"batch\": 32}, found %s",
                            loom_json_type_name(obj));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        int rc = LOOM_OK;
        const char *s;
        if (strcmp(k, "path") == 0) {
            if ((rc = member_string(v, "path", &s, err)))
                return rc;
            if (s[0] != '/' || strlen(s) >= PATH_MAX_BYTES)
                return loom_err_set(err, LOOM_EINVAL,
                                    "model.path: expected an absolute path of the ONNX file (as "
                                    "loomd sees it), found \"%.200s\"",
                                    s);
            out->path = s;
        } else if (strcmp(k, "batch") == 0) {
            if (!json_is_integer(v) || json_integer_value(v) < 1 ||
                json_integer_value(v) > BATCH_MAX) {
                if (json_is_integer(v))
                    return loom_err_set(err, LOOM_EINVAL,
                                        "model.batch: expected an integer from 1 to %lld, found "
                                        "%lld",
                                        (long long)BATCH_MAX, (long long)json_integer_value(v));
                return loom_err_set(err, LOOM_EINVAL,
                                    "model.batch: expected an integer from 1 to %lld, found %s",
                                    (long long)BATCH_MAX, loom_json_type_name(v));
            }
            out->batch = json_integer_value(v);
        } else if (strcmp(k, "train") == 0) {
            if (!json_is_boolean(v))
                return loom_err_set(err, LOOM_EINVAL,
                                    "model.train: expected true or false, found %s",
                                    loom_json_type_name(v));
            out->train = json_is_true(v);
        } else if (strcmp(k, "optimizer") == 0) {
            if ((rc = member_string(v, "optimizer", &s, err)))
                return rc;
            if (loom_est_parse_optimizer(s, &out->optimizer, err))
                return loom_err_prefix(err, "model.optimizer");
        } else if (strcmp(k, "precision") == 0) {
            if ((rc = member_string(v, "precision", &s, err)))
                return rc;
            if (loom_est_parse_precision(s, &out->precision, err))
                return loom_err_prefix(err, "model.precision");
        } else if (strcmp(k, "device") == 0) {
            if (json_is_null(v))
                continue;
            if ((rc = member_string(v, "device", &s, err)))
                return rc;
            if (!(s[0] == '/' && strlen(s) < PATH_MAX_BYTES) && !device_name_ok(s))
                return loom_err_set(err, LOOM_EINVAL,
                                    "model.device: expected a device name (1-63 of a-z 0-9 - _, "
                                    "looked up in loomd's device directory) or an absolute path "
                                    "of a device file, found \"%.200s\"",
                                    s);
            out->device = s;
        } else {
            return loom_err_set(err, LOOM_EINVAL,
                                "model: unknown member '%.64s' (expected path, batch, train, "
                                "optimizer, precision, device)",
                                k);
        }
    }
    if (!out->path)
        return loom_err_set(err, LOOM_EINVAL,
                            "model.path: required (the absolute path of the ONNX file)");
    if (!out->batch)
        return loom_err_set(err, LOOM_EINVAL,
                            "model.batch: required (the batch size per GPU, an integer >= 1)");
    return LOOM_OK;
}

json_t *loom_est_ref_json(const loom_est_ref_t *r, const char *device)
{
    return json_pack("{s:s, s:I, s:b, s:s, s:s, s:s}", "path", r->path ? r->path : "", "batch",
                     (json_int_t)r->batch, "train", r->train, "optimizer",
                     loom_est_optimizer_name(r->optimizer), "precision",
                     loom_est_precision_name(r->precision), "device", device ? device : "");
}

/* ------------------------------------------------------------------ sizer */

/* What identifies a file's content without reading it. */
typedef struct file_id {
    dev_t dev;
    ino_t ino;
    off_t size;
    int64_t mtime_ns, ctime_ns;
    bool ok;
} file_id_t;

typedef struct centry {
    char *path, *device;
    file_id_t model_id, device_id;
    int64_t batch;
    bool train;
    loom_est_optimizer_t optimizer;
    loom_est_precision_t precision;
    json_t *record;
    uint64_t request;
    uint64_t used; /* tick of the last use (least recently used goes first) */
} centry_t;

struct loom_est_sizer {
    pthread_mutex_t mu;
    loom_est_margin_t margin;
    char *device, *device_dir;
    centry_t *cache;
    size_t n, cap;
    uint64_t tick, hits, misses;
};

static file_id_t file_id(const char *path)
{
    file_id_t f;
    memset(&f, 0, sizeof f);
    struct stat st;
    if (stat(path, &st) != 0)
        return f;
    f.dev = st.st_dev;
    f.ino = st.st_ino;
    f.size = st.st_size;
    f.mtime_ns = (int64_t)st.st_mtim.tv_sec * 1000000000 + st.st_mtim.tv_nsec;
    f.ctime_ns = (int64_t)st.st_ctim.tv_sec * 1000000000 + st.st_ctim.tv_nsec;
    f.ok = true;
    return f;
}

static file_id_t opened_id(const loom_file_t *f)
{
    file_id_t id = {.dev = (dev_t)f->dev,
                    .ino = (ino_t)f->ino,
                    .size = (off_t)f->size,
                    .mtime_ns = f->mtime_ns,
                    .ctime_ns = f->ctime_ns,
                    .ok = true};
    return id;
}

static bool same_file(const file_id_t *a, const file_id_t *b)
{
    return a->ok && b->ok && a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
           a->mtime_ns == b->mtime_ns && a->ctime_ns == b->ctime_ns;
}

/* The file loom_est_device_load reads for name_or_path (its rule). */
static void device_file(const loom_est_sizer_t *s, const char *dev, char *out, size_t n)
{
    size_t len = strlen(dev);
    if (strchr(dev, '/') || (len > 5 && strcmp(dev + len - 5, ".json") == 0))
        snprintf(out, n, "%s", dev);
    else
        snprintf(out, n, "%s/%s.json", s->device_dir, dev);
}

int loom_est_sizer_new(const loom_est_sizer_opts_t *o, loom_est_sizer_t **out, loom_err_t *err)
{
    *out = NULL;
    loom_est_margin_t margin =
        o ? o->margin : (loom_est_margin_t){LOOM_EST_MARGIN_FRACTION, LOOM_EST_MARGIN_EXTRA};
    if (!(margin.fraction >= 0 && margin.fraction <= 10))
        return loom_err_set(err, LOOM_EINVAL, "estimate margin: fraction %g outside [0, 10]",
                            margin.fraction);
    loom_est_sizer_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    s->margin = margin;
    s->cap = o && o->cache_entries ? o->cache_entries : CACHE_DEFAULT;
    s->device = strdup(o && o->device ? o->device : "h200");
    const char *dir = o && o->device_dir ? o->device_dir : getenv("LOOM_DEVICE_DIR");
    char data[4096];
    if (!dir || !*dir) { /* not found: data names the place the open will report */
        loom_data_path("devices", data, sizeof data, NULL);
        dir = data;
    }
    s->device_dir = strdup(dir);
    s->cache = calloc(s->cap, sizeof *s->cache);
    if (!s->device || !s->device_dir || !s->cache) {
        free(s->device);
        free(s->device_dir);
        free(s->cache);
        free(s);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&s->mu, NULL);
    *out = s;
    return LOOM_OK;
}

static void entry_free(centry_t *e)
{
    free(e->path);
    free(e->device);
    json_decref(e->record);
    memset(e, 0, sizeof *e);
}

void loom_est_sizer_free(loom_est_sizer_t *s)
{
    if (!s)
        return;
    for (size_t i = 0; i < s->n; i++)
        entry_free(&s->cache[i]);
    pthread_mutex_destroy(&s->mu);
    free(s->cache);
    free(s->device);
    free(s->device_dir);
    free(s);
}

void loom_est_sizer_stats(loom_est_sizer_t *s, uint64_t *hits, uint64_t *misses)
{
    pthread_mutex_lock(&s->mu);
    *hits = s->hits;
    *misses = s->misses;
    pthread_mutex_unlock(&s->mu);
}

static bool entry_matches(const centry_t *e, const loom_est_ref_t *r, const char *dev,
                          const file_id_t *mid, const file_id_t *did)
{
    return e->batch == r->batch && e->train == r->train && e->optimizer == r->optimizer &&
           e->precision == r->precision && strcmp(e->path, r->path) == 0 &&
           strcmp(e->device, dev) == 0 && same_file(&e->model_id, mid) &&
           same_file(&e->device_id, did);
}

/* Under the lock. */
static void cache_put(loom_est_sizer_t *s, const loom_est_ref_t *r, const char *dev,
                      const file_id_t *mid, const file_id_t *did, const json_t *record,
                      uint64_t request)
{
    centry_t *slot = NULL;
    for (size_t i = 0; i < s->n && !slot; i++) /* same key: another thread was first */
        if (strcmp(s->cache[i].path, r->path) == 0 && strcmp(s->cache[i].device, dev) == 0 &&
            s->cache[i].batch == r->batch && s->cache[i].train == r->train &&
            s->cache[i].optimizer == r->optimizer && s->cache[i].precision == r->precision)
            slot = &s->cache[i];
    if (!slot && s->n < s->cap)
        slot = &s->cache[s->n++];
    if (!slot) {
        slot = &s->cache[0];
        for (size_t i = 1; i < s->n; i++)
            if (s->cache[i].used < slot->used)
                slot = &s->cache[i];
    }
    entry_free(slot);
    centry_t e = {.path = strdup(r->path),
                  .device = strdup(dev),
                  .model_id = *mid,
                  .device_id = *did,
                  .batch = r->batch,
                  .train = r->train,
                  .optimizer = r->optimizer,
                  .precision = r->precision,
                  .record = json_deep_copy(record),
                  .request = request,
                  .used = ++s->tick};
    if (!e.path || !e.device || !e.record) {
        entry_free(&e);
        /* slot stays empty (zeroed): drop it if it is the last one */
        *slot = s->cache[--s->n];
        memset(&s->cache[s->n], 0, sizeof s->cache[s->n]);
        return;
    }
    *slot = e;
}

static json_t *memory_json(const loom_est_memory_t *m)
{
    return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I}", "weights",
                     (json_int_t)m->weights, "gradients", (json_int_t)m->gradients,
                     "optimizer_state", (json_int_t)m->optimizer_state, "activations",
                     (json_int_t)m->activations, "temporaries", (json_int_t)m->temporaries,
                     "allocator_slack", (json_int_t)m->allocator_slack, "context",
                     (json_int_t)m->context, "peak_live", (json_int_t)m->peak_live, "peak_reserved",
                     (json_int_t)m->peak_reserved, "total", (json_int_t)m->total);
}

/* The device: loomd's own file for a name, else the opened file (a private
 * copy, quiet about its bytes). */
static int device_of(loom_est_sizer_t *s, const loom_est_ref_t *r, const char *dev,
                     const loom_est_files_t *fs, loom_est_device_t *out, loom_err_t *err)
{
    if (!fs->device)
        return loom_est_device_load(dev, s->device_dir, out, err);
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_file_read(fs->device, &b, err);
    if (!rc)
        rc = loom_est_device_parse(b.data, b.len, fs->device->name, out, err);
    loom_buf_free(&b);
    (void)r;
    return rc;
}

static int model_of(const loom_est_ref_t *r, const loom_est_files_t *fs, loom_est_model_t **m,
                    loom_err_t *err)
{
    loom_buf_t b = LOOM_BUF_INIT;
    int rc = loom_file_read(fs->model, &b, err);
    if (!rc)
        rc = loom_est_model_parse(b.data, b.len, r->path, m, err);
    loom_buf_free(&b);
    if (rc && rc != LOOM_ENOMEM && fs->quiet && rc != LOOM_ELIMIT)
        rc = loom_err_set(err, LOOM_EINVAL,
                          "'%s': not an ONNX model that can be read (errors about a client's "
                          "file do not quote it; the CLI's `estimate` on it gives the detail)",
                          r->path);
    return rc;
}

/* Runs the estimator; the message of a failure names the model file. */
static int estimate(loom_est_sizer_t *s, const loom_est_ref_t *r, const char *dev,
                    const loom_est_files_t *fs, json_t **record, uint64_t *request, loom_err_t *err)
{
    loom_est_device_t device;
    int rc = device_of(s, r, dev, fs, &device, err);
    if (rc)
        return loom_err_prefix(err, "model %s: device '%s'", r->path, dev);
    loom_est_model_t *m = NULL;
    if ((rc = model_of(r, fs, &m, err)))
        return rc; /* its messages name the file */
    loom_est_options_t o = {.batch = r->batch,
                            .train = r->train,
                            .optimizer = r->optimizer,
                            .precision = r->precision,
                            .device = &device};
    loom_est_result_t res;
    rc = loom_est_run(m, &o, &res, err);
    loom_est_model_free(m);
    if (rc && err && strncmp(err->msg, r->path, strlen(r->path)) != 0)
        return loom_err_prefix(err, "%s", r->path); /* most messages name it already */
    if (rc)
        return rc;
    uint64_t req = loom_est_margin_apply(&s->margin, res.mem.total);
    json_t *ref = loom_est_ref_json(r, dev);
    json_t *mem = memory_json(&res.mem);
    json_t *rec =
        ref && mem ? json_pack("{s:o, s:I, s:f, s:o, s:{s:f, s:I}, s:I}", "model", ref, "params",
                               (json_int_t)res.params, "step_time_s", res.step_time_s, "memory",
                               mem, "margin", "fraction", s->margin.fraction, "extra_bytes",
                               (json_int_t)s->margin.extra_bytes, "request_bytes", (json_int_t)req)
                   : NULL;
    if (!ref || !mem) {
        json_decref(ref);
        json_decref(mem);
    }
    loom_est_result_free(&res);
    if (!rec)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    *record = rec;
    *request = req;
    return LOOM_OK;
}

int loom_est_sizer_size_files(loom_est_sizer_t *s, const loom_est_ref_t *r,
                              const loom_est_files_t *fs, json_t **record, uint64_t *request,
                              loom_err_t *err)
{
    *record = NULL;
    *request = 0;
    if (!r->path || r->path[0] != '/' || r->batch < 1 || r->batch > BATCH_MAX)
        return loom_err_set(err, LOOM_EINVAL,
                            "model: expected an absolute path and a batch from 1 to %lld",
                            (long long)BATCH_MAX);
    const char *dev = r->device ? r->device : s->device;
    char dpath[PATH_MAX_BYTES + 80];
    device_file(s, dev, dpath, sizeof dpath);
    file_id_t mid = opened_id(fs->model), did = fs->device ? opened_id(fs->device) : file_id(dpath);
    pthread_mutex_lock(&s->mu);
    for (size_t i = 0; i < s->n; i++) {
        centry_t *e = &s->cache[i];
        if (!entry_matches(e, r, dev, &mid, &did))
            continue;
        json_t *copy = json_deep_copy(e->record);
        e->used = ++s->tick;
        s->hits++;
        uint64_t req = e->request;
        pthread_mutex_unlock(&s->mu);
        if (!copy)
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        *record = copy;
        *request = req;
        return LOOM_OK;
    }
    s->misses++;
    pthread_mutex_unlock(&s->mu);
    int rc = estimate(s, r, dev, fs, record, request, err);
    if (rc)
        return rc;
    /* Cache only if neither file changed while it was read. */
    file_id_t did2 = fs->device ? did : file_id(dpath);
    if (loom_file_unchanged(fs->model) && (!fs->device || loom_file_unchanged(fs->device)) &&
        same_file(&did, &did2)) {
        pthread_mutex_lock(&s->mu);
        cache_put(s, r, dev, &mid, &did, *record, *request);
        pthread_mutex_unlock(&s->mu);
    }
    return LOOM_OK;
}

int loom_est_sizer_size(loom_est_sizer_t *s, const loom_est_ref_t *r, json_t **record,
                        uint64_t *request, loom_err_t *err)
{
    *record = NULL;
    *request = 0;
    if (!r->path || r->path[0] != '/')
        return loom_est_sizer_size_files(s, r, NULL, record, request, err);
    loom_file_t model, device = LOOM_FILE_INIT;
    loom_est_files_t fs = {.model = &model};
    int rc = loom_file_open(&model, r->path, 0, LOOM_EST_MODEL_MAX, err);
    if (!rc && r->device && strchr(r->device, '/')) {
        rc = loom_file_open(&device, r->device, 0, LOOM_EST_DEVICE_MAX, err);
        fs.device = &device;
        if (rc)
            rc = loom_err_prefix(err, "model %s: device '%s'", r->path, r->device);
    }
    if (!rc)
        rc = loom_est_sizer_size_files(s, r, &fs, record, request, err);
    loom_file_close(&model);
    loom_file_close(&device);
    return rc;
}
