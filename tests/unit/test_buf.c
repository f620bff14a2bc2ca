#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/core.h"
#include "test_util.h"

static void append_and_grow(void **state)
{
    loom_buf_t b = LOOM_BUF_INIT;
    for (int i = 0; i < 1000; i++)
        assert_int_equal(loom_buf_appendf(&b, "%d,", i % 10), LOOM_OK);
    assert_int_equal(b.len, 2000);
    assert_int_equal(b.data[b.len], '\0');
    char big[1000];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    loom_buf_reset(&b);
    assert_int_equal(loom_buf_appendf(&b, "<%s>", big), LOOM_OK);
    assert_int_equal(b.len, 1001);
    assert_int_equal(b.data[1000], '>');
    char *s = loom_buf_detach(&b);
    assert_null(b.data);
    assert_int_equal(strlen(s), 1001);
    free(s);
    s = loom_buf_detach(&b); /* empty buffer detaches to "" */
    assert_string_equal(s, "");
    free(s);
}

static void files(void **state)
{
    char dir[] = "/tmp/loom-test-buf-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/f", dir);
    loom_err_t err;
    assert_int_equal(loom_write_file_atomic(path, "hello", 5, 0600, &err), LOOM_OK);
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
    assert_string_equal(b.data, "hello");
    loom_buf_free(&b);
    snprintf(path, sizeof path, "%s/missing", dir);
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "missing"));
    snprintf(path, sizeof path, "%s/nodir/f", dir);
    assert_int_equal(loom_write_file_atomic(path, "x", 1, 0600, &err), LOOM_EIO);
    snprintf(path, sizeof path, "%s/f", dir);
    unlink(path);
    rmdir(dir);
}

static void errors(void **state)
{
    loom_err_t err;
    assert_int_equal(loom_err_set(&err, LOOM_EINVAL, "field %s", "x"), LOOM_EINVAL);
    assert_int_equal(loom_err_prefix(&err, "job %d", 3), LOOM_EINVAL);
    assert_string_equal(err.msg, "job 3: field x");
    assert_int_equal(loom_err_errno(&err, LOOM_EIO, 2, "open '%s'", "a"), LOOM_EIO);
    assert_string_equal(err.msg, "open 'a': No such file or directory");
    assert_string_equal(loom_err_name(LOOM_ENOTFOUND), "not-found");
    assert_int_equal(loom_err_set(NULL, LOOM_EIO, "ignored"), LOOM_EIO);
}

static void logging(void **state)
{
    char *mem = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&mem, &len);
    loom_log_set_stream(f);
    loom_log_set_level(LOOM_LOG_INFO);
    loom_log_debug("hidden", NULL);
    loom_log_info("job \"submitted\"", "id=%d name=%s", 7, "train");
    loom_log_set_stream(NULL);
    fclose(f);
    assert_non_null(strstr(mem, "level=info msg=\"job \\\"submitted\\\"\" id=7 name=train\n"));
    assert_null(strstr(mem, "hidden"));
    assert_non_null(strstr(mem, "ts=20"));
    free(mem);
    loom_log_level_t l;
    assert_int_equal(loom_log_parse_level("warn", &l, NULL), LOOM_OK);
    assert_int_equal(l, LOOM_LOG_WARN);
    loom_err_t err;
    assert_int_equal(loom_log_parse_level("loud", &l, &err), LOOM_EINVAL);
}

static void clocks(void **state)
{
    int64_t a = loom_time_mono_ns();
    loom_time_sleep_until_ns(a + LOOM_NS_PER_MS);
    assert_true(loom_time_mono_ns() >= a + LOOM_NS_PER_MS);
    loom_time_sleep_until_ns(0); /* in the past: returns at once */
    char ts[32];
    loom_time_format_rfc3339(1700000000123456789LL, ts);
    assert_string_equal(ts, "2023-11-14T22:13:20.123456Z");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(append_and_grow), cmocka_unit_test(files),  cmocka_unit_test(errors),
        cmocka_unit_test(logging),         cmocka_unit_test(clocks),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
