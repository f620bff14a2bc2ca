/* loom_buf_read_data (src/core/gz.c): plain and gzip-compressed files read
 * alike, several gzip members joined, and every way a compressed file can
 * be wrong (truncated, corrupt, expanding past the limit, not a regular
 * file) an error that names the path. */
#include <fcntl.h>
#include <sys/stat.h>
#include <zlib.h>

#include "loom/core.h"
#include "test_util.h"

static char dir[] = "/tmp/loom-gz-XXXXXX";

static void path_of(char *out, size_t n, const char *name)
{
    snprintf(out, n, "%s/%s", dir, name);
}

/* Writes data gzip-compressed (one member) to path, appending if asked. */
static void write_gz(const char *path, const char *data, size_t len, bool append)
{
    gzFile g = gzopen(path, append ? "ab9" : "wb9");
    assert_non_null(g);
    assert_int_equal(gzwrite(g, data, (unsigned)len), (int)len);
    assert_int_equal(gzclose(g), Z_OK);
}

static void write_raw(const char *path, const void *data, size_t len)
{
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    assert_int_equal(fwrite(data, 1, len, f), len);
    fclose(f);
}

static int setup(void **state)
{
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    return loom_test_rmtree(dir);
}

static void plain_and_compressed_alike(void **state)
{
    const char *csv = "name,gpu\nn1,8\nn2,4\n";
    char plain[256], gz[256];
    path_of(plain, sizeof plain, "t.csv");
    path_of(gz, sizeof gz, "t.csv.gz");
    write_raw(plain, csv, strlen(csv));
    write_gz(gz, csv, strlen(csv), false);
    loom_buf_t a = LOOM_BUF_INIT, b = LOOM_BUF_INIT;
    loom_err_t err;
    assert_int_equal(loom_buf_read_data(&a, plain, 1 << 20, &err), LOOM_OK);
    assert_int_equal(loom_buf_read_data(&b, gz, 1 << 20, &err), LOOM_OK);
    assert_string_equal(a.data, csv);
    assert_int_equal(b.len, strlen(csv));
    assert_string_equal(b.data, csv);
    loom_buf_free(&a);
    loom_buf_free(&b);
}

static void members_joined(void **state)
{
    char gz[256];
    path_of(gz, sizeof gz, "m.gz");
    write_gz(gz, "first\n", 6, false);
    write_gz(gz, "second\n", 7, true);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_err_t err;
    assert_int_equal(loom_buf_read_data(&b, gz, 1 << 20, &err), LOOM_OK);
    assert_string_equal(b.data, "first\nsecond\n");
    loom_buf_free(&b);
}

/* A large body: several output chunks, to cover the loop past 1 MiB. */
static void large_body(void **state)
{
    size_t n = 3u << 20;
    char *big = malloc(n);
    assert_non_null(big);
    for (size_t i = 0; i < n; i++)
        big[i] = (char)('a' + (i * 7 + i / 4096) % 26);
    char gz[256];
    path_of(gz, sizeof gz, "big.gz");
    write_gz(gz, big, n, false);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_err_t err;
    assert_int_equal(loom_buf_read_data(&b, gz, 4u << 20, &err), LOOM_OK);
    assert_int_equal(b.len, n);
    assert_memory_equal(b.data, big, n);
    /* the same file against a smaller limit: refused, path named */
    assert_int_equal(loom_buf_read_data(&b, gz, 1u << 20, &err), LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, gz));
    assert_non_null(strstr(err.msg, "decompressed"));
    loom_buf_free(&b);
    free(big);
}

static void truncated_and_corrupt(void **state)
{
    char gz[256], cut[256], bad[256];
    path_of(gz, sizeof gz, "whole.gz");
    path_of(cut, sizeof cut, "cut.gz");
    path_of(bad, sizeof bad, "bad.gz");
    const char *text = "a line of text that compresses into more than a few bytes\n";
    write_gz(gz, text, strlen(text), false);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_err_t err;
    assert_int_equal(loom_buf_read_file(&b, gz, &err), LOOM_OK);
    write_raw(cut, b.data, b.len / 2);
    b.data[12] ^= 0x55; /* inside the deflate stream */
    b.data[13] ^= 0xff;
    write_raw(bad, b.data, b.len);

    assert_int_equal(loom_buf_read_data(&b, cut, 1 << 20, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, cut));
    assert_non_null(strstr(err.msg, "ends early"));
    assert_int_equal(loom_buf_read_data(&b, bad, 1 << 20, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, bad));
    loom_buf_free(&b);
}

static void not_a_regular_file(void **state)
{
    char fifo[256];
    path_of(fifo, sizeof fifo, "fifo");
    assert_int_equal(mkfifo(fifo, 0600), 0);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_err_t err;
    assert_int_equal(loom_buf_read_data(&b, fifo, 1 << 20, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "not a regular file"));
    assert_int_equal(loom_buf_read_data(&b, dir, 1 << 20, &err), LOOM_EINVAL);
    char none[256];
    path_of(none, sizeof none, "none.csv.gz");
    assert_int_equal(loom_buf_read_data(&b, none, 1 << 20, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, none));
    loom_buf_free(&b);
}

/* The shipped trace reads as its README says: 1,213 GPU nodes. */
static void shipped_trace(void **state)
{
    char path[4096];
    loom_err_t err;
    assert_int_equal(loom_data_trace("openb", path, sizeof path, &err), LOOM_OK);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_data(&b, path, 1 << 24, &err), LOOM_OK);
    size_t lines = 0;
    for (size_t i = 0; i < b.len; i++)
        lines += b.data[i] == '\n';
    assert_int_equal(lines, 1 + 1213);
    assert_true(strncmp(b.data, "sn,cpu_milli,memory_mib,gpu,model", 33) == 0);
    loom_buf_free(&b);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(plain_and_compressed_alike),
        cmocka_unit_test(members_joined),
        cmocka_unit_test(large_body),
        cmocka_unit_test(truncated_and_corrupt),
        cmocka_unit_test(not_a_regular_file),
        cmocka_unit_test(shipped_trace),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
