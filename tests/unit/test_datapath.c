/* loom_data_path: shipped data found from LOOM_DATA_DIR or the program's
 * location (this test runs from the build tree, so the source tree's
 * workloads/), never from the current directory. */
#include <limits.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/core.h"
#include "loom/estimate.h"
#include "test_util.h"

static void from_build_tree_not_cwd(void **state)
{
    unsetenv("LOOM_DATA_DIR");
    unsetenv("LOOM_DEVICE_DIR");
    const char *src = getenv("LOOM_SOURCE_DIR");
    assert_non_null(src);
    char want[PATH_MAX], rsrc[PATH_MAX];
    assert_non_null(realpath(src, rsrc));
    snprintf(want, sizeof want, "%s/workloads/devices", rsrc);

    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir("/"), 0); /* nothing to find here */
    char out[PATH_MAX];
    loom_err_t err = {0};
    assert_int_equal(loom_data_path("devices", out, sizeof out, &err), LOOM_OK);
    char rout[PATH_MAX];
    assert_non_null(realpath(out, rout));
    assert_string_equal(rout, want);

    loom_est_device_t dev;
    assert_int_equal(loom_est_device_load("h200", NULL, &dev, &err), LOOM_OK);
    assert_string_equal(dev.name, "h200");
    assert_int_equal(chdir(cwd), 0);
}

static void env_is_authoritative(void **state)
{
    char tmpl[] = "/tmp/loom-datapath-XXXXXX";
    assert_non_null(mkdtemp(tmpl));
    char sub[PATH_MAX];
    snprintf(sub, sizeof sub, "%s/templates", tmpl);
    assert_int_equal(mkdir(sub, 0700), 0);
    setenv("LOOM_DATA_DIR", tmpl, 1);

    char out[PATH_MAX];
    loom_err_t err = {0};
    assert_int_equal(loom_data_path("templates", out, sizeof out, &err), LOOM_OK);
    assert_string_equal(out, sub);
    /* devices/ is missing there: an error naming the variable, no fallback */
    assert_int_equal(loom_data_path("devices", out, sizeof out, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "LOOM_DATA_DIR"));
    assert_non_null(strstr(err.msg, "devices"));
    loom_est_device_t dev;
    assert_int_equal(loom_est_device_load("h200", NULL, &dev, &err), LOOM_ENOTFOUND);

    unsetenv("LOOM_DATA_DIR");
    rmdir(sub);
    rmdir(tmpl);
}

static void bad_names_rejected(void **state)
{
    char out[64];
    loom_err_t err = {0};
    assert_int_equal(loom_data_path("../etc", out, sizeof out, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "../etc"));
    assert_int_equal(loom_data_path("", out, sizeof out, &err), LOOM_EINVAL);
    assert_int_equal(loom_data_path(NULL, out, sizeof out, &err), LOOM_EINVAL);
}

/* Shipped traces by name (issue 29): found from any directory, a path kept
 * as it is, an unknown name an error that lists the names. */
static void traces_by_name(void **state)
{
    unsetenv("LOOM_DATA_DIR");
    char cwd[PATH_MAX];
    assert_non_null(getcwd(cwd, sizeof cwd));
    assert_int_equal(chdir("/"), 0);
    char out[PATH_MAX];
    loom_err_t err = {0};
    static const char *const names[][2] = {
        {"openb", "/openb_node_list_gpu_node.csv.gz"},
        {"openb-all", "/openb_node_list_all_node.csv.gz"},
        {"openb-default", "/openb_pod_list_default.csv.gz"},
        {"openb-multigpu50", "/openb_pod_list_multigpu50.csv.gz"},
        {"openb_pod_list_cpu050", "/openb_pod_list_cpu050.csv.gz"},
    };
    for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
        assert_int_equal(loom_data_trace(names[i][0], out, sizeof out, &err), LOOM_OK);
        size_t n = strlen(out), m = strlen(names[i][1]);
        assert_true(n > m && strcmp(out + n - m, names[i][1]) == 0);
        assert_non_null(strstr(out, "traces/alibaba-gpu-2023/"));
    }
    assert_int_equal(loom_data_trace("openb-nosuch", out, sizeof out, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "'openb-nosuch'"));
    assert_non_null(strstr(err.msg, "openb-default"));
    /* a path, existing or not, is the caller's: kept as given */
    assert_int_equal(loom_data_trace("./openb", out, sizeof out, &err), LOOM_OK);
    assert_string_equal(out, "./openb");
    assert_int_equal(loom_data_trace("", out, sizeof out, &err), LOOM_EINVAL);
    assert_int_equal(chdir(cwd), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(from_build_tree_not_cwd),
        cmocka_unit_test(env_is_authoritative),
        cmocka_unit_test(bad_names_rejected),
        cmocka_unit_test(traces_by_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
