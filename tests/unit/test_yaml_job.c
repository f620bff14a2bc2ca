/* The batch/v1 Job subset that YAML jobs run without containers. */
#include <stdio.h>

#include "loom/exec.h"
#include "test_util.h"

static int parse(const char *m, json_t *argv, json_t *env, char *wd, loom_err_t *err)
{
    return loom_exec_yaml_command(m, strlen(m), argv, env, wd, 256, err);
}

#define JOB_HEAD                                                                                   \
    "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n    spec:\n      containers:\n"

static void accepted(void **state)
{
    json_t *argv = json_array(), *env = json_array();
    char wd[256] = "default";
    loom_err_t err;
    const char *m = JOB_HEAD "      - name: a\n        command: [python3, train.py]\n"
                             "        args: [\"--lr\", \"0.1\"]\n        workingDir: /tmp\n"
                             "        env:\n        - {name: A, value: \"1\"}\n"
                             "        - {name: EMPTY}\n      - name: sidecar\n"
                             "        command: [ignored]\n";
    if (parse(m, argv, env, wd, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(json_array_size(argv), 4);
    assert_string_equal(json_string_value(json_array_get(argv, 0)), "python3");
    assert_string_equal(json_string_value(json_array_get(argv, 3)), "0.1");
    assert_int_equal(json_array_size(env), 2);
    assert_string_equal(json_string_value(json_array_get(env, 0)), "A=1");
    assert_string_equal(json_string_value(json_array_get(env, 1)), "EMPTY=");
    assert_string_equal(wd, "/tmp");
    json_decref(argv);
    json_decref(env);
}

static void rejected(void **state)
{
    static const struct {
        const char *manifest;
        const char *message;
    } cases[] = {
        {"a: [", "manifest line"},
        {"- just a list\n", "expected a mapping"},
        {"apiVersion: v1\nkind: Pod\n", "expected apiVersion batch/v1 and kind Job"},
        {"apiVersion: batch/v1\nkind: Job\nspec: {}\n", "containers: expected a non-empty list"},
        {JOB_HEAD "      - name: a\n        image: x\n", "command is required"},
        {JOB_HEAD "      - name: a\n        command: []\n", "command is empty"},
        {JOB_HEAD "      - name: a\n        command: run\n", "command: expected a list"},
        {JOB_HEAD "      - name: a\n        command: [[x]]\n", "expected a string item"},
        {JOB_HEAD "      - name: a\n        command: [x]\n        env:\n        - name: S\n"
                  "          valueFrom: {secretKeyRef: {name: s, key: k}}\n",
         "valueFrom is not supported"},
        {JOB_HEAD "      - name: a\n        command: [x]\n        env:\n        - value: v\n",
         "expected a name"},
        {"", "expected a mapping"},
        /* issue 18, finding 15: values the environment or argv cannot carry */
        {JOB_HEAD "      - name: a\n        command: [x]\n        env:\n        - {name: A=B, "
                  "value: x}\n",
         "env name 'A=B': may hold only printable ASCII characters other than '='"},
        {JOB_HEAD "      - name: a\n        command: [x]\n        env:\n        - {name: '', "
                  "value: y}\n",
         "env name '': is empty"},
        {JOB_HEAD "      - name: a\n        command: [x]\n        env:\n        - {name: A, "
                  "value: \"a\\0b\"}\n",
         "env 'A': the value holds a NUL"},
        {JOB_HEAD "      - name: a\n        command: [\"x\\0y\"]\n", "holds a NUL"},
        {JOB_HEAD "      - name: a\n        command: [x]\n        env:\n        - {name: "
                  "LOOM_JOB_ID, value: \"7\"}\n",
         "LOOM_JOB_ID': is reserved"},
        {JOB_HEAD "      - name: a\n        command: [x]\n        workingDir: data\n",
         "workingDir 'data': expected an absolute path"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        json_t *argv = json_array(), *env = json_array();
        char wd[256] = "";
        loom_err_t err;
        if (parse(cases[i].manifest, argv, env, wd, &err) != LOOM_EINVAL)
            fail_msg("case %zu accepted", i);
        if (!strstr(err.msg, cases[i].message))
            fail_msg("case %zu: '%s' lacks '%s'", i, err.msg, cases[i].message);
        json_decref(argv);
        json_decref(env);
    }
}

/* Issue 18, finding 2: "a: " and 100k '[' took ~30 s of CPU in libyaml's
 * scanner (quadratic in the depth) before failing as unclosed. Refused at
 * the 65th level, naming the limit; 64 levels are still parsed. */
static void deep_nesting(void **state)
{
    (void)state;
    enum { N = 100000 };
    char *m = malloc(N + 8);
    memcpy(m, "a: ", 3);
    memset(m + 3, '[', N);
    m[N + 3] = '\0';
    json_t *argv = json_array(), *env = json_array();
    char wd[256] = "";
    loom_err_t err;
    assert_int_equal(parse(m, argv, env, wd, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "nests deeper than 64 levels"));
    /* 63 flow levels inside the top mapping: 64 in all, within the limit */
    char ok[256] = "a: ";
    memset(ok + 3, '[', 63);
    memset(ok + 66, ']', 63);
    ok[129] = '\0';
    assert_int_equal(parse(ok, argv, env, wd, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "expected apiVersion batch/v1"));
    free(m);
    json_decref(argv);
    json_decref(env);
}

int main(void)
{
    const struct CMUnitTest tests[] = {cmocka_unit_test(accepted), cmocka_unit_test(rejected),
                                       cmocka_unit_test(deep_nesting)};
    return cmocka_run_group_tests(tests, NULL, NULL);
}
