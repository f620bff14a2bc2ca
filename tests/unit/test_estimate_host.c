/* The host a CPU device file was calibrated on (src/estimate/host.c, issue
 * 36): read from /proc/cpuinfo-shaped files and a libblas.so.3 link, kept in
 * the device file, compared with the host at hand. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/estimate.h"

static char dir[] = "/tmp/loom-host-XXXXXX";

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

static int setup(void **state)
{
    (void)state;
    if (!mkdtemp(dir))
        return -1;
    char p[256], q[256];
    snprintf(p, sizeof p, "%s/epyc", dir);
    write_file(p, "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9B14\n"
                  "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512_vnni "
                  "avx512_bf16 xsave\n\nprocessor\t: 1\nmodel name\t: AMD EPYC 9B14\n");
    snprintf(p, sizeof p, "%s/xeon", dir);
    write_file(p, "model name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n"
                  "flags\t\t: fpu sse4_2 avx avx2 fma avx512f avx512bw avx512vl amx_tile "
                  "avx512fx\n");
    snprintf(p, sizeof p, "%s/openblas-pthread", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(q, sizeof q, "%s/openblas-pthread/libblas.so.3", dir);
    write_file(q, "");
    snprintf(p, sizeof p, "%s/blas", dir);
    assert_int_equal(mkdir(p, 0755), 0);
    snprintf(q, sizeof q, "%s/blas/libblas.so.3", dir);
    write_file(q, "");
    snprintf(p, sizeof p, "%s/libblas.so.3", dir);
    assert_int_equal(symlink("openblas-pthread/libblas.so.3", p), 0);
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[300];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
    return system(cmd) == 0 ? 0 : -1;
}

static void probe(const char *cpu, const char *blas, loom_est_host_t *h)
{
    char c[256], b[256];
    snprintf(c, sizeof c, "%s/%s", dir, cpu);
    snprintf(b, sizeof b, "%s/%s", dir, blas);
    loom_est_host_probe(c, b, h);
}

static void test_probe(void **state)
{
    (void)state;
    loom_est_host_t h;
    probe("epyc", "libblas.so.3", &h);
    assert_true(h.set);
    assert_string_equal(h.cpu_model, "AMD EPYC 9B14");
    /* the extensions of the fixed list, in its order; xsave and fpu not */
    assert_string_equal(h.isa, "sse4_2 avx avx2 fma avx512f avx512bw avx512vl avx512_vnni "
                               "avx512_bf16");
    assert_string_equal(h.blas, "openblas-pthread"); /* through the link */
    assert_int_equal(h.threads, 1);
    probe("xeon", "blas/libblas.so.3", &h);
    assert_string_equal(h.cpu_model, "Intel(R) Xeon(R) CPU @ 2.20GHz");
    /* whole words only: avx512fx is not avx512f twice, amx_tile is listed */
    assert_string_equal(h.isa, "sse4_2 avx avx2 fma avx512f avx512bw avx512vl amx_tile");
    assert_string_equal(h.blas, "reference");
    probe("none", "none", &h); /* nothing readable: unknown, never a failure */
    assert_string_equal(h.cpu_model, "unknown");
    assert_string_equal(h.isa, "");
    assert_string_equal(h.blas, "unknown");
}

static void test_differs(void **state)
{
    (void)state;
    loom_est_host_t a, b, c;
    char why[600];
    probe("epyc", "libblas.so.3", &a);
    probe("epyc", "libblas.so.3", &b);
    assert_false(loom_est_host_differs(&a, &b, why, sizeof why));
    assert_string_equal(why, "");
    probe("xeon", "libblas.so.3", &c);
    assert_true(loom_est_host_differs(&a, &c, why, sizeof why));
    assert_non_null(strstr(why, "CPU 'AMD EPYC 9B14', this host 'Intel(R) Xeon(R) CPU @ 2.20GHz'"));
    assert_non_null(strstr(why, "instruction sets"));
    assert_null(strstr(why, "BLAS"));
    probe("epyc", "blas/libblas.so.3", &c); /* same CPU, the reference BLAS */
    assert_true(loom_est_host_differs(&a, &c, why, sizeof why));
    assert_string_equal(why, "BLAS openblas-pthread, this host reference");
    char small[8]; /* a short buffer is cut, never overrun */
    probe("xeon", "blas/libblas.so.3", &c);
    assert_true(loom_est_host_differs(&a, &c, small, sizeof small));
    assert_int_equal(strlen(small), sizeof small - 1);
}

static void test_device_json(void **state)
{
    (void)state;
    loom_est_host_t h, back;
    probe("epyc", "libblas.so.3", &h);
    json_t *dev = json_pack("{s:o}", "host", loom_est_host_to_json(&h));
    loom_err_t err = {0};
    assert_int_equal(loom_est_host_from_json(dev, "d.json", &back, &err), LOOM_OK);
    assert_false(loom_est_host_differs(&h, &back, (char[64]){0}, 64));
    assert_true(back.set);
    json_decref(dev);
    /* absent: not set, no error */
    dev = json_pack("{s:s}", "name", "x");
    assert_int_equal(loom_est_host_from_json(dev, "d.json", &back, &err), LOOM_OK);
    assert_false(back.set);
    json_decref(dev);
    /* wrong shapes name the device and the member */
    static const char *const bad[][2] = {
        {"{\"host\": 5}", "/host must be an object"},
        {"{\"host\": {\"isa\": \"avx\"}}", "cpu_model"},
        {"{\"host\": {\"cpu_model\": \"x\", \"threads\": 0}}", "threads"},
        {"{\"host\": {\"cpu_model\": \"x\", \"blas\": 3}}", "blas"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        dev = json_loads(bad[i][0], 0, NULL);
        assert_non_null(dev);
        assert_int_equal(loom_est_host_from_json(dev, "d.json", &back, &err), LOOM_EINVAL);
        if (!strstr(err.msg, "device d.json") || !strstr(err.msg, bad[i][1]))
            fail_msg("%s: message '%s' lacks the device or '%s'", bad[i][0], err.msg, bad[i][1]);
        json_decref(dev);
    }
    char longer[300];
    memset(longer, 'a', sizeof longer - 1);
    longer[sizeof longer - 1] = '\0';
    dev = json_pack("{s:{s:s}}", "host", "cpu_model", longer);
    assert_int_equal(loom_est_host_from_json(dev, "d.json", &back, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "at most 127"));
    json_decref(dev);
}

/* The shipped CPU devices record their host; the GPU one does not need to. */
static void test_shipped_devices_record_a_host(void **state)
{
    (void)state;
    static const char *const cpu[] = {"cpu-local", "cpu-local-retain"};
    for (size_t i = 0; i < 2; i++) {
        loom_est_device_t d;
        loom_err_t err = {0};
        if (loom_est_device_load(cpu[i], "workloads/devices", &d, &err))
            fail_msg("%s: %s", cpu[i], err.msg);
        if (!d.host.set || !d.host.isa[0] || !d.host.blas[0])
            fail_msg("%s records no host (cpu_model, isa, blas)", cpu[i]);
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_probe),
        cmocka_unit_test(test_differs),
        cmocka_unit_test(test_device_json),
        cmocka_unit_test(test_shipped_devices_record_a_host),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
