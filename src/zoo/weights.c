/* Weights files: the one format a model's trained weights are stored in and
 * a warm start is handed to the job in. Readable with numpy alone:
 *
 *   bytes 0..7    "LOOMWTS1"
 *   bytes 8..15   H, the header's length, u64 little-endian
 *   bytes 16..    H bytes of JSON: {"tensors": [{"name", "dtype": "float32",
 *                 "shape": [..], "offset": bytes from the data start}, ...],
 *                 "meta": {...}}
 *   then          the data: float32 little-endian, C order
 *
 * (docs/zoo.md, "Weights files", has the numpy reader.) The parser checks
 * every count, shape and offset against the file; nothing is trusted. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "loom/zoo.h"

#define MAGIC "LOOMWTS1"

void loom_zoo_weights_free(loom_zoo_weights_t *w)
{
    if (!w)
        return;
    for (size_t i = 0; i < w->n; i++) {
        free(w->t[i].name);
        free(w->t[i].data);
    }
    free(w->t);
    json_decref(w->meta);
    memset(w, 0, sizeof *w);
}

const loom_zoo_tensor_t *loom_zoo_weights_find(const loom_zoo_weights_t *w, const char *name)
{
    for (size_t i = 0; i < w->n; i++)
        if (!strcmp(w->t[i].name, name))
            return &w->t[i];
    return NULL;
}

static int parse_tensor(const json_t *o, size_t idx, const uint8_t *data, size_t dlen,
                        const char *src, loom_zoo_tensor_t *t, loom_err_t *err)
{
    const json_t *name = json_object_get(o, "name"), *dt = json_object_get(o, "dtype");
    const json_t *shape = json_object_get(o, "shape"), *off = json_object_get(o, "offset");
    if (!json_is_object(o) || !json_is_string(name) || !json_is_string(dt) ||
        !json_is_array(shape) || !json_is_integer(off))
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: /tensors/%zu: expected an object with name, dtype, shape, offset",
                            src, idx);
    if (strcmp(json_string_value(dt), "float32"))
        return loom_err_set(err, LOOM_EINVAL, "%s: /tensors/%zu/dtype: '%s'; expected float32", src,
                            idx, json_string_value(dt));
    if (json_array_size(shape) > 8)
        return loom_err_set(err, LOOM_EINVAL, "%s: /tensors/%zu/shape: rank %zu; at most 8", src,
                            idx, json_array_size(shape));
    size_t numel = 1;
    t->rank = (int)json_array_size(shape);
    for (int k = 0; k < t->rank; k++) {
        const json_t *d = json_array_get(shape, (size_t)k);
        json_int_t v = json_is_integer(d) ? json_integer_value(d) : -1;
        if (v < 0 || v > (json_int_t)dlen || (v && numel > dlen / (size_t)v))
            return loom_err_set(err, LOOM_EINVAL,
                                "%s: /tensors/%zu/shape/%d: expected a size that fits the file",
                                src, idx, k);
        t->dims[k] = v;
        numel *= (size_t)v;
    }
    json_int_t o64 = json_integer_value(off);
    if (o64 < 0 || (size_t)o64 > dlen || numel > (dlen - (size_t)o64) / 4)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: /tensors/%zu/offset: %lld + %zu floats past the data (%zu bytes)",
                            src, idx, (long long)o64, numel, dlen);
    t->name = strdup(json_string_value(name));
    t->data = malloc(numel ? numel * 4 : 1);
    if (!t->name || !t->data)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", src);
    t->numel = numel;
    const uint8_t *p = data + o64;
    for (size_t e = 0; e < numel; e++) {
        uint32_t u = (uint32_t)p[4 * e] | (uint32_t)p[4 * e + 1] << 8 |
                     (uint32_t)p[4 * e + 2] << 16 | (uint32_t)p[4 * e + 3] << 24;
        memcpy(&t->data[e], &u, 4);
    }
    return LOOM_OK;
}

int loom_zoo_weights_parse(const void *data, size_t len, const char *name, loom_zoo_weights_t *out,
                           loom_err_t *err)
{
    const uint8_t *p = data;
    memset(out, 0, sizeof *out);
    if (len < 16 || memcmp(p, MAGIC, 8))
        return loom_err_set(err, LOOM_EINVAL, "%s: byte 0: expected a weights file ('%s')", name,
                            MAGIC);
    uint64_t h = 0;
    for (int i = 7; i >= 0; i--)
        h = h << 8 | p[8 + i];
    if (h > LOOM_ZOO_MAX_HEADER || h > len - 16)
        return loom_err_set(err, LOOM_EINVAL, "%s: byte 8: header of %llu bytes; the file has %zu",
                            name, (unsigned long long)h, len - 16);
    json_t *root;
    int rc = loom_json_parse((const char *)p + 16, (size_t)h, name, 16, &root, err);
    if (rc)
        return rc;
    json_t *tensors = json_object_get(root, "tensors"), *meta = json_object_get(root, "meta");
    if (!json_is_array(tensors) || json_array_size(tensors) > LOOM_ZOO_MAX_TENSORS ||
        (meta && !json_is_object(meta))) {
        json_decref(root);
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: header: expected {\"tensors\": [at most %d], \"meta\": {...}}",
                            name, LOOM_ZOO_MAX_TENSORS);
    }
    size_t n = json_array_size(tensors);
    out->t = calloc(n ? n : 1, sizeof *out->t);
    out->meta = meta ? json_incref(meta) : json_object();
    if (!out->t) {
        json_decref(root);
        loom_zoo_weights_free(out);
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
    }
    loom_strset_t names = {0}; /* linear, whatever prefix the names share */
    for (size_t i = 0; i < n && !rc; i++) {
        rc = parse_tensor(json_array_get(tensors, i), i, p + 16 + h, len - 16 - (size_t)h, name,
                          &out->t[i], err);
        out->n = i + 1;
        int added = rc ? 1 : loom_strset_add(&names, out->t[i].name);
        if (added < 0)
            rc = loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
        else if (added == 0)
            rc = loom_err_set(err, LOOM_EINVAL, "%s: /tensors/%zu/name: '%.64s' appears twice",
                              name, i, out->t[i].name);
    }
    loom_strset_free(&names);
    json_decref(root);
    if (rc)
        loom_zoo_weights_free(out);
    return rc;
}

int loom_zoo_weights_load(const char *path, loom_zoo_weights_t *out, loom_err_t *err)
{
    loom_buf_t b;
    loom_buf_init(&b);
    memset(out, 0, sizeof *out);
    loom_file_t f;
    int rc = loom_file_open(&f, path, 0, LOOM_ZOO_WEIGHTS_MAX, err);
    if (!rc)
        rc = loom_file_read(&f, &b, err);
    loom_file_close(&f);
    if (!rc)
        rc = loom_zoo_weights_parse(b.data, b.len, path, out, err);
    loom_buf_free(&b);
    return rc;
}

static int header_json(const loom_zoo_weights_t *w, loom_buf_t *hdr)
{
    json_t *root = json_object(), *arr = json_array();
    json_object_set_new(root, "tensors", arr);
    json_object_set_new(root, "meta", w->meta ? json_incref(w->meta) : json_object());
    size_t off = 0;
    for (size_t i = 0; i < w->n; i++) {
        json_t *shape = json_array();
        for (int k = 0; k < w->t[i].rank; k++)
            json_array_append_new(shape, json_integer(w->t[i].dims[k]));
        json_array_append_new(arr, json_pack("{s:s,s:s,s:o,s:I}", "name", w->t[i].name, "dtype",
                                             "float32", "shape", shape, "offset", (json_int_t)off));
        off += w->t[i].numel * 4;
    }
    int rc = loom_json_dump(hdr, root);
    json_decref(root);
    return rc;
}

/* w's bytes ("LOOMWTS1", header, data) into *all; name names it in errors. */
static int encode(const loom_zoo_weights_t *w, const char *name, loom_buf_t *all, loom_err_t *err)
{
    loom_buf_t hdr;
    loom_buf_init(&hdr);
    int rc = header_json(w, &hdr);
    uint8_t head[16];
    memcpy(head, MAGIC, 8);
    for (int i = 0; i < 8; i++)
        head[8 + i] = (uint8_t)((uint64_t)hdr.len >> (8 * i));
    if (!rc)
        rc = loom_buf_append(all, head, 16) || loom_buf_append(all, hdr.data, hdr.len);
    for (size_t i = 0; !rc && i < w->n; i++) {
        for (size_t e = 0; !rc && e < w->t[i].numel; e++) {
            uint32_t u;
            memcpy(&u, &w->t[i].data[e], 4);
            uint8_t b[4] = {(uint8_t)u, (uint8_t)(u >> 8), (uint8_t)(u >> 16), (uint8_t)(u >> 24)};
            rc = loom_buf_append(all, b, 4);
        }
    }
    loom_buf_free(&hdr);
    if (rc)
        return loom_err_set(err, LOOM_ENOMEM, "%s: out of memory", name);
    return LOOM_OK;
}

int loom_zoo_weights_save(const loom_zoo_weights_t *w, const char *path, loom_err_t *err)
{
    loom_buf_t all;
    loom_buf_init(&all);
    int rc = encode(w, path, &all, err);
    if (!rc)
        rc = loom_write_file_atomic(path, all.data, all.len, 0644, err);
    loom_buf_free(&all);
    return rc;
}

int loom_zoo_weights_write_fd(const loom_zoo_weights_t *w, int fd, const char *name,
                              loom_err_t *err)
{
    loom_buf_t all;
    loom_buf_init(&all);
    int rc = encode(w, name, &all, err);
    const char *p = all.data;
    size_t left = rc ? 0 : all.len;
    while (left > 0) {
        ssize_t n = write(fd, p, left);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) {
            rc = loom_err_errno(err, LOOM_EIO, n < 0 ? errno : EIO, "%s: cannot write", name);
            break;
        }
        p += n;
        left -= (size_t)n;
    }
    if (!rc && fsync(fd) != 0 && errno != EINVAL)
        rc = loom_err_errno(err, LOOM_EIO, errno, "%s: cannot write", name);
    loom_buf_free(&all);
    return rc;
}
