/* loomd's configuration file (src/daemon/config.c): parsing, errors that
 * name the file and line, limits, and the merge into loomd's arguments in
 * which the command line wins. */
#include <stdlib.h>
#include <unistd.h>

#include "daemon/config.h"
#include "test_util.h"

static int parse(const char *text, loomd_conf_t *c, loom_err_t *err)
{
    return loomd_config_parse(text, strlen(text), "t.conf", c, err);
}

static void settings_parsed(void **state)
{
    loomd_conf_t c;
    loom_err_t err = {0};
    assert_int_equal(parse("# comment\n\n  listen = 127.0.0.1:0  \r\nnode = name=a,cpus=2\n"
                           "node=name=b\npack-check = yes\nsocket = \" /tmp/a b \"\n",
                           &c, &err),
                     LOOM_OK);
    assert_int_equal(c.n, 5);
    assert_string_equal(c.entries[0].key, "listen");
    assert_string_equal(c.entries[0].value, "127.0.0.1:0");
    assert_int_equal(c.entries[0].line, 3);
    assert_string_equal(c.entries[2].value, "name=b");
    assert_string_equal(c.entries[3].value, ""); /* a true flag */
    assert_string_equal(c.entries[4].value, " /tmp/a b ");
    loomd_config_free(&c);
    assert_int_equal(parse("pack-check = off\n", &c, &err), LOOM_OK);
    assert_null(c.entries[0].value);
    loomd_config_free(&c);
}

static void errors_name_the_line(void **state)
{
    static const struct {
        const char *text, *msg;
    } cases[] = {
        {"listen = x\nsockt = y\n", "t.conf:2: unknown key 'sockt'"},
        {"listen\n", "t.conf:1: expected 'key = value'"},
        {"gpus =\n", "t.conf:1: gpus: expected a value"},
        {"gpus = 1\n# x\ngpus = 2\n", "t.conf:3: gpus given twice (first at line 1)"},
        {"pack-check = maybe\n", "t.conf:1: pack-check: 'maybe' is not true or false"},
        {"socket = \"/tmp/x\n", "t.conf:1: socket: unterminated quote"},
        {"--listen = x\n", "unknown key '--listen'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loomd_conf_t c;
        loom_err_t err = {0};
        assert_int_not_equal(parse(cases[i].text, &c, &err), LOOM_OK);
        if (!strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: '%s' does not hold '%s'", i, err.msg, cases[i].msg);
        assert_null(c.entries);
    }
}

static void limits(void **state)
{
    loomd_conf_t c;
    loom_err_t err = {0};
    size_t big = LOOMD_CONFIG_MAX_BYTES + 1;
    char *text = malloc(big);
    memset(text, '#', big);
    assert_int_equal(loomd_config_parse(text, big, "t.conf", &c, &err), LOOM_ELIMIT);
    free(text);
    loom_buf_t b = LOOM_BUF_INIT;
    for (int i = 0; i <= LOOMD_CONFIG_MAX_ENTRIES; i++)
        loom_buf_append_str(&b, "node = name=n\n");
    assert_int_equal(parse(b.data, &c, &err), LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, "more than 256 settings"));
    loom_buf_reset(&b);
    loom_buf_append_str(&b, "seed = ");
    for (int i = 0; i <= LOOMD_CONFIG_MAX_VALUE; i++)
        loom_buf_append_char(&b, '1');
    assert_int_equal(parse(b.data, &c, &err), LOOM_EINVAL);
    loom_buf_free(&b);
    assert_int_equal(loomd_config_parse("a\0b", 3, "t.conf", &c, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "NUL"));
    assert_int_equal(parse("listen = \xff\n", &c, &err), LOOM_EINVAL);
}

static void merged_command_line_wins(void **state)
{
    char path[] = "/tmp/loom-conf-XXXXXX";
    int fd = mkstemp(path);
    assert_true(fd >= 0);
    const char *text = "listen = none\ngpus = 2\nnode = name=a\nnode = name=b\npack-check = on\n";
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    close(fd);
    char *argv[] = {"loomd", "--gpus=3", "--config", path, "--node", "name=c", NULL};
    int n;
    char **out;
    loom_err_t err = {0};
    unsetenv("LOOMD_CONFIG");
    assert_int_equal(loomd_config_args(6, argv, &n, &out, &err), LOOM_OK);
    const char *want[] = {"loomd", "--listen=none", "--pack-check", "--gpus=3", "--node", "name=c"};
    assert_int_equal(n, 6);
    for (int i = 0; i < n; i++)
        assert_string_equal(out[i], want[i]);
    assert_null(out[n]);
    loomd_config_release();

    /* $LOOMD_CONFIG names it when --config does not; none reads nothing */
    setenv("LOOMD_CONFIG", path, 1);
    char *argv2[] = {"loomd", NULL};
    assert_int_equal(loomd_config_args(1, argv2, &n, &out, &err), LOOM_OK);
    assert_int_equal(n, 6);
    loomd_config_release();
    char *argv3[] = {"loomd", "--config=none", "--seed", "4", NULL};
    assert_int_equal(loomd_config_args(4, argv3, &n, &out, &err), LOOM_OK);
    assert_int_equal(n, 3);
    assert_string_equal(out[1], "--seed");
    loomd_config_release();
    unsetenv("LOOMD_CONFIG");
    unlink(path);

    char *argv4[] = {"loomd", "--config", "/nonexistent/loomd.conf", NULL};
    assert_int_equal(loomd_config_args(3, argv4, &n, &out, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "/nonexistent/loomd.conf"));
    char *argv5[] = {"loomd", "--config", NULL};
    assert_int_equal(loomd_config_args(2, argv5, &n, &out, &err), LOOM_EINVAL);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(settings_parsed),
        cmocka_unit_test(errors_name_the_line),
        cmocka_unit_test(limits),
        cmocka_unit_test(merged_command_line_wins),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
