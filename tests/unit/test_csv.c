/* core's CSV reader (loom_csv_*) and growable-array step (loom_vec_reserve):
 * records and fields, quotes, line ends, blank lines, the field limit, the
 * NUL and lone-CR options, and errors with name:line:column. */
#include <stdint.h>
#include <stdlib.h>

#include "loom/core.h"
#include "test_util.h"

static void records_and_quotes(void **state)
{
    (void)state;
    const char *text = "a,\"b,\"\"q\"\"\",c\r\n\r\n\n"
                       "1,\"two\nlines\",3\n"
                       ",,\n"
                       "last";
    loom_csv_t c;
    loom_err_t err;
    loom_csv_init(&c, text, strlen(text), "x.csv", 0, 0);
    assert_int_equal(loom_csv_next(&c, &err), 1);
    assert_int_equal(c.nf, 3);
    assert_string_equal(loom_csv_field(&c, 1), "b,\"q\"");
    assert_int_equal(loom_csv_field_len(&c, 1), 5);
    assert_int_equal(loom_csv_field_col(&c, 2), 13);
    assert_int_equal(loom_csv_find(&c, "c"), 2);
    assert_int_equal(loom_csv_find(&c, "d"), -1);
    assert_int_equal(loom_csv_next(&c, &err), 1); /* blank lines skipped */
    assert_int_equal(c.rec_line, 4);
    assert_string_equal(loom_csv_field(&c, 1), "two\nlines");
    assert_string_equal(loom_csv_field(&c, 2), "3");
    assert_int_equal(loom_csv_field_col(&c, 2), 8); /* on the value's second line */
    assert_int_equal(loom_csv_next(&c, &err), 1);
    assert_int_equal(c.rec_line, 6);
    assert_int_equal(c.nf, 3);
    assert_int_equal(loom_csv_field_len(&c, 2), 0);
    assert_int_equal(loom_csv_next(&c, &err), 1);
    assert_int_equal(c.nf, 1);
    assert_string_equal(loom_csv_field(&c, 0), "last");
    assert_int_equal(loom_csv_next(&c, &err), 0);
    assert_int_equal(loom_csv_next(&c, &err), 0);
    loom_csv_free(&c);
}

static int read_all(const char *text, size_t len, unsigned flags, size_t max, loom_err_t *err)
{
    loom_csv_t c;
    loom_csv_init(&c, text, len, "x.csv", flags, max);
    int rc;
    while ((rc = loom_csv_next(&c, err)) == 1)
        ;
    loom_csv_free(&c);
    return rc;
}

static void errors_name_place(void **state)
{
    (void)state;
    struct {
        const char *text;
        const char *want;
    } bad[] = {
        {"a\nb,\"open\n", "x.csv:2:3: unterminated quoted field"},
        {"a\n\"x\"y\n", "x.csv:2:4: expected ',' or the end of the line"},
        {"a\nx\"y\n", "x.csv:2:2: unexpected '\"' inside an unquoted field"},
        {"a\nx\ry\n", "x.csv:2:2: bare carriage return"},
        {"a,b,c,d\n", "x.csv:1: more than 3 fields"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        loom_err_t err;
        assert_int_equal(read_all(bad[i].text, strlen(bad[i].text), 0, 3, &err), LOOM_EINVAL);
        if (!strstr(err.msg, bad[i].want))
            fail_msg("case %zu: got '%s', want '%s'", i, err.msg, bad[i].want);
    }
    loom_err_t err;
    const char nul[] = "a,b\n1,x\0y\n";
    assert_int_equal(read_all(nul, sizeof nul - 1, 0, 0, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "x.csv:2:4: NUL byte in a field"));
    assert_int_equal(read_all(nul, sizeof nul - 1, LOOM_CSV_ALLOW_NUL, 0, &err), 0);
}

static void options(void **state)
{
    (void)state;
    const char text[] = "a,b\r1,\"x\0y\"\r\r2,3";
    loom_csv_t c;
    loom_err_t err;
    loom_csv_init(&c, text, sizeof text - 1, "x.csv", LOOM_CSV_ALLOW_NUL | LOOM_CSV_CR_EOL, 0);
    assert_int_equal(loom_csv_next(&c, &err), 1);
    assert_int_equal(loom_csv_next(&c, &err), 1);
    assert_int_equal(c.rec_line, 2);
    assert_int_equal(loom_csv_field_len(&c, 1), 3); /* "x\0y" */
    assert_memory_equal(loom_csv_field(&c, 1), "x\0y", 3);
    assert_int_equal(loom_csv_next(&c, &err), 1);
    assert_int_equal(c.rec_line, 4);
    assert_string_equal(loom_csv_field(&c, 1), "3");
    assert_int_equal(loom_csv_next(&c, &err), 0);
    loom_csv_free(&c);
}

static void vec_reserve(void **state)
{
    (void)state;
    int *v = NULL;
    size_t cap = 0;
    assert_int_equal(loom_vec_reserve((void **)&v, &cap, 1, sizeof *v, 8), LOOM_OK);
    assert_int_equal(cap, 8);
    assert_int_equal(loom_vec_reserve((void **)&v, &cap, 8, sizeof *v, 8), LOOM_OK);
    assert_int_equal(cap, 8);
    assert_int_equal(loom_vec_reserve((void **)&v, &cap, 9, sizeof *v, 8), LOOM_OK);
    assert_int_equal(cap, 16);
    assert_int_equal(loom_vec_reserve((void **)&v, &cap, 100, sizeof *v, 8), LOOM_OK);
    assert_int_equal(cap, 128);
    for (int i = 0; i < 100; i++)
        v[i] = i;
    int *keep = v;
    /* a size that overflows size_t leaves the array as it was */
    assert_int_equal(loom_vec_reserve((void **)&v, &cap, SIZE_MAX / 2, sizeof *v, 8), LOOM_ENOMEM);
    assert_ptr_equal(v, keep);
    assert_int_equal(cap, 128);
    assert_int_equal(v[99], 99);
    free(v);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(records_and_quotes),
        cmocka_unit_test(errors_name_place),
        cmocka_unit_test(options),
        cmocka_unit_test(vec_reserve),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
