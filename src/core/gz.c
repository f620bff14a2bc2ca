/* core/gz.c — reading the data files loom ships compressed.
 *
 * The Alibaba trace in workloads/traces/ is kept gzip-compressed in the
 * repository (13 MB of CSV become 2.4 MB), and a user may hand loom a
 * compressed trace of their own. loom_buf_read_data reads either kind: a
 * file that starts with gzip's magic bytes is inflated (every member, as
 * gzip -d does), anything else is read as it is. The decompressed size is
 * bounded, so a small hostile file cannot expand without limit. */
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "loom/core.h"

static bool is_gzip(const loom_buf_t *b)
{
    return b->len >= 2 && (unsigned char)b->data[0] == 0x1f && (unsigned char)b->data[1] == 0x8b;
}

/* Inflates every gzip member of in into out (at most max bytes). */
static int inflate_all(const loom_buf_t *in, loom_buf_t *out, const char *path, size_t max,
                       loom_err_t *err)
{
    z_stream z;
    memset(&z, 0, sizeof z);
    if (inflateInit2(&z, 15 + 16) != Z_OK) /* 16: gzip wrapper only */
        return loom_err_set(err, LOOM_ENOMEM, "'%s': cannot start zlib", path);
    z.next_in = (Bytef *)in->data;
    size_t left = in->len;
    int rc = LOOM_OK;
    for (;;) {
        if (loom_buf_reserve(out, 1u << 20) != LOOM_OK) {
            rc = loom_err_set(err, LOOM_ENOMEM, "decompressing '%s': out of memory", path);
            break;
        }
        uInt chunk = left > UINT32_MAX ? UINT32_MAX : (uInt)left;
        z.avail_in = chunk;
        z.next_out = (Bytef *)out->data + out->len;
        z.avail_out = (uInt)(out->cap - out->len - 1);
        int zr = inflate(&z, Z_NO_FLUSH);
        left -= chunk - z.avail_in;
        out->len = (size_t)((char *)z.next_out - out->data);
        if (out->len > max) {
            rc = loom_err_set(err, LOOM_ELIMIT,
                              "'%s': more than %zu bytes once decompressed (the limit)", path, max);
            break;
        }
        if (zr == Z_STREAM_END) {
            if (left == 0)
                break;
            if (inflateReset(&z) != Z_OK) { /* the next member of a multi-member file */
                rc = loom_err_set(err, LOOM_EINVAL, "'%s': corrupt gzip data", path);
                break;
            }
            continue;
        }
        if (zr == Z_BUF_ERROR && left == 0) {
            rc = loom_err_set(err, LOOM_EINVAL,
                              "'%s': gzip data ends early (a truncated file?); expected the end "
                              "of the compressed stream",
                              path);
            break;
        }
        if (zr != Z_OK && zr != Z_BUF_ERROR) {
            rc = loom_err_set(err, LOOM_EINVAL, "'%s': corrupt gzip data (%s)", path,
                              z.msg ? z.msg : "zlib error");
            break;
        }
    }
    inflateEnd(&z);
    if (rc == LOOM_OK)
        out->data[out->len] = '\0';
    return rc;
}

int loom_buf_read_data(loom_buf_t *b, const char *path, size_t max, loom_err_t *err)
{
    loom_buf_t raw = LOOM_BUF_INIT;
    loom_file_t f;
    int rc = loom_file_open(&f, path, 0, max, err);
    if (rc == LOOM_OK) {
        rc = loom_file_read(&f, &raw, err);
        loom_file_close(&f);
    }
    if (rc != LOOM_OK || !is_gzip(&raw)) {
        if (rc == LOOM_OK) {
            loom_buf_free(b);
            *b = raw;
        } else {
            loom_buf_free(&raw);
        }
        return rc;
    }
    loom_buf_t out = LOOM_BUF_INIT;
    rc = inflate_all(&raw, &out, path, max, err);
    loom_buf_free(&raw);
    if (rc != LOOM_OK) {
        loom_buf_free(&out);
        return rc;
    }
    loom_buf_free(b);
    *b = out;
    return LOOM_OK;
}
