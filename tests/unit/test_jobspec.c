/* Job files: #SBATCH and #LOOM directives, Kubernetes Job manifests, and
 * the value formats they use (Slurm times and sizes, arrays, dependencies,
 * Kubernetes quantities, output file patterns). */
#include "loom/jobspec.h"
#include "test_util.h"

/* Parses a script and returns job.submit params (caller frees). */
static json_t *script_params(const char *text, unsigned flags, loom_jobspec_t *s)
{
    loom_err_t err;
    loom_jobspec_init(s);
    if (loom_jobspec_parse_script(s, text, strlen(text), "job.sh", flags, &err))
        fail_msg("%s", err.msg);
    json_t *p = json_object();
    if (loom_jobspec_to_params(s, p, &err))
        fail_msg("%s", err.msg);
    return p;
}

static json_int_t res_int(json_t *p, const char *k)
{
    json_t *v = json_object_get(json_object_get(p, "resources"), k);
    assert_true(json_is_integer(v));
    return json_integer_value(v);
}

static const char *opt_str(json_t *p, const char *k)
{
    return json_string_value(json_object_get(json_object_get(p, "options"), k));
}

static bool has_warning(const loom_jobspec_t *s, const char *needle)
{
    size_t i;
    json_t *w;
    json_array_foreach(s->warnings, i, w) if (strstr(json_string_value(w), needle)) return true;
    return false;
}

static void sbatch_directives(void **state)
{
    (void)state;
    loom_jobspec_t s;
    json_t *p = script_params("#!/bin/bash\n"
                              "#SBATCH --job-name=mytrain\n"
                              "#SBATCH -c 4 --gres=gpu:a100:2   # two GPUs\n"
                              "#SBATCH --time=1-02:03:04\n"
                              "#SBATCH --mem=16G\n"
                              "#SBATCH -o out-%j.log -e 'err %x.log'\n"
                              "#SBATCH -D /tmp/work\n"
                              "#SBATCH --export=ALL,LR=0.1 --account=lab --comment=\"a b\"\n"
                              "\n# a comment\n"
                              "python train.py\n",
                              0, &s);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "mytrain");
    assert_int_equal(res_int(p, "cpus"), 4);
    assert_int_equal(res_int(p, "gpus"), 2);
    assert_int_equal(res_int(p, "memory"), 16LL << 30);
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(p, "resources"), "gpu_type")), "a100");
    /* Slurm keeps whole minutes: 1-02:03:04 is 1-02:04:00. */
    assert_int_equal(json_integer_value(json_object_get(p, "time_limit")),
                     86400 + 2 * 3600 + 4 * 60);
    assert_string_equal(opt_str(p, "output"), "out-%j.log");
    assert_string_equal(opt_str(p, "error"), "err %x.log");
    assert_string_equal(opt_str(p, "workdir"), "/tmp/work");
    assert_string_equal(opt_str(p, "export"), "ALL");
    assert_string_equal(opt_str(p, "account"), "lab");
    assert_string_equal(opt_str(p, "comment"), "a b");
    json_t *env = json_object_get(json_object_get(p, "options"), "env");
    assert_string_equal(json_string_value(json_array_get(env, 0)), "LR=0.1");
    assert_int_equal(json_array_size(s.warnings), 0);
    json_decref(p);
    loom_jobspec_free(&s);
}

/* -n tasks times -c CPUs on one node; --mem-per-cpu times all CPUs. */
static void tasks_and_per_cpu(void **state)
{
    (void)state;
    loom_jobspec_t s;
    json_t *p =
        script_params("#SBATCH -n 4\n#SBATCH --cpus-per-task=2\n#SBATCH --mem-per-cpu=1024\n"
                      "#SBATCH --gpus-per-task=1\n",
                      0, &s);
    assert_int_equal(res_int(p, "cpus"), 8);
    assert_int_equal(res_int(p, "memory"), 8LL << 30);
    assert_int_equal(res_int(p, "gpus"), 4);
    json_decref(p);
    loom_jobspec_free(&s);
    p = script_params("#SBATCH -G v100:3 -t 90\n", 0, &s);
    assert_int_equal(res_int(p, "gpus"), 3);
    assert_int_equal(json_integer_value(json_object_get(p, "time_limit")), 90 * 60);
    json_decref(p);
    loom_jobspec_free(&s);
}

/* The command line overrides the file, across alternative forms. */
static void command_line_overrides(void **state)
{
    (void)state;
    loom_jobspec_t s;
    loom_err_t err;
    loom_jobspec_init(&s);
    const char *text = "#SBATCH -c 4 -n 2 --mem=8G -J file --time=10\n";
    assert_int_equal(loom_jobspec_parse_script(&s, text, strlen(text), "x.sh", 0, &err), 0);
    assert_int_equal(loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, "--cpus", "3", "command line", &err),
                     0);
    assert_int_equal(loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, "--mem", "1GiB", "command line", &err),
                     0);
    assert_int_equal(loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, "name", "cli", "command line", &err),
                     0);
    assert_int_equal(loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, "--time", "90s", "command line", &err),
                     0);
    json_t *p = json_object();
    assert_int_equal(loom_jobspec_to_params(&s, p, &err), 0);
    assert_int_equal(res_int(p, "cpus"), 3);
    assert_int_equal(res_int(p, "memory"), 1LL << 30);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "cli");
    assert_int_equal(json_integer_value(json_object_get(p, "time_limit")), 90); /* units: exact */
    json_decref(p);
    assert_int_equal(loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, "--bogus", "1", "command line", &err),
                     LOOM_ENOTFOUND);
    assert_int_equal(loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, "--cpus", "0", "command line", &err),
                     LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "command line: --cpus"));
    loom_jobspec_free(&s);
}

static void loom_directives_and_warnings(void **state)
{
    (void)state;
    loom_jobspec_t s;
    json_t *p = script_params("#!/bin/sh\n#LOOM --gpu-share 250m --gpu-mem 10GiB --priority 5\n"
                              "#LOOM --label team=vision\n"
                              "#SBATCH --partition gpu --qos=high\n"
                              "#SBATCH --array=0-9%2 --dependency=afterok:12:13 --hold\n"
                              "#SBATCH --begin=now+1hour --nice\n"
                              "echo hi\n#SBATCH -c 8\n",
                              0, &s);
    assert_int_equal(res_int(p, "gpu_share"), 250);
    assert_int_equal(res_int(p, "gpu_memory"), 10LL << 30);
    assert_int_equal(json_integer_value(json_object_get(p, "priority")), 5);
    assert_string_equal(json_string_value(json_object_get(json_object_get(p, "labels"), "team")),
                        "vision");
    assert_null(json_object_get(json_object_get(p, "resources"), "cpus")); /* after a command */
    assert_true(has_warning(&s, "job.sh:4: #SBATCH --partition: not supported"));
    assert_true(has_warning(&s, "job.sh:4: #SBATCH --qos"));
    assert_true(has_warning(&s, "job.sh:8: #SBATCH after the script's first command"));
    assert_false(has_warning(&s, "--array"));      /* acted on by loomd */
    assert_false(has_warning(&s, "--dependency")); /* acted on by loomd */
    assert_false(has_warning(&s, "--hold"));
    assert_true(has_warning(&s, "--nice"));
    assert_false(has_warning(&s, "--begin"));
    assert_string_equal(opt_str(p, "array"), "0-9%2");
    assert_string_equal(opt_str(p, "dependency"), "afterok:12:13");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "options"), "nice")),
                     100);
    assert_true(json_is_true(json_object_get(json_object_get(p, "options"), "hold")));
    json_decref(p);
    loom_jobspec_free(&s);
}

static void script_errors(void **state)
{
    (void)state;
    static const struct {
        const char *text;
        unsigned flags;
        const char *msg;
    } cases[] = {
        {"#SBATCH -c abc\n", 0, "job.sh:1: -c: CPUs per task 'abc': expected an integer"},
        {"\n#SBATCH --time=1:2:3:4\n", 0, "job.sh:2: --time: time '1:2:3:4'"},
        {"#SBATCH --mem=12X\n", 0, "job.sh:1: --mem: memory '12X'"},
        {"#SBATCH --partition=gpu\n", LOOM_JOBSPEC_STRICT,
         "job.sh:1: #SBATCH --partition: not "
         "supported by loom (--strict)"},
        {"#LOOM --partition=gpu\n", 0, "job.sh:1: #LOOM --partition: not an option of loom"},
        {"#SBATCH -J 'open\n", 0, "job.sh:1: unterminated ' quote"},
        {"#SBATCH --mem=1G\n#SBATCH --mem-per-cpu=1G\n", 0, "mutually exclusive"},
        {"#SBATCH --array=5-1\n", 0, "range 5-1 goes down"},
        {"#SBATCH --dependency=before:1\n", 0, "dependency 'before:1'"},
        {"#SBATCH --hold=yes\n", 0, "--hold takes no value"},
        {"#SBATCH -c\n", 0, "job.sh:1: #SBATCH -c: expected a value"},
        {"#SBATCH --gres=gpu:a100:x\n", 0, "GPUs 'x'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_jobspec_t s;
        loom_err_t err;
        loom_jobspec_init(&s);
        int rc = loom_jobspec_parse_script(&s, cases[i].text, strlen(cases[i].text), "job.sh",
                                           cases[i].flags, &err);
        if (rc != LOOM_EINVAL || !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: rc %d, '%s', expected '%s'", i, rc, rc ? err.msg : "",
                     cases[i].msg);
        loom_jobspec_free(&s);
    }
}

static void slurm_times(void **state)
{
    (void)state;
    static const struct {
        const char *t;
        int64_t s;
    } ok[] = {{"30", 1800},     {"5:30", 360},       {"01:00:00", 3600},
              {"2-0", 172800},  {"1-12:30", 131400}, {"1-00:00:01", 86460},
              {"UNLIMITED", 0}, {"infinite", 0},     {"0", 0},
              {"1h30m", 5400},  {"90s", 90},         {"1h", 3600}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        int64_t s;
        loom_err_t err;
        assert_int_equal(loom_jobspec_parse_time(ok[i].t, &s, &err), 0);
        assert_int_equal(s, ok[i].s);
    }
    static const char *const bad[] = {"", "1x", "-5", "1:2:3:4", "1-", "a-1", "1-2:3:4:5", ":5"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t s;
        loom_err_t err;
        if (loom_jobspec_parse_time(bad[i], &s, &err) != LOOM_EINVAL)
            fail_msg("'%s' accepted", bad[i]);
    }
}

/* The time limit a spec ends with after one --time given one way. */
static int64_t time_via(const char *how, const char *t)
{
    loom_jobspec_t s;
    loom_err_t err;
    char text[256];
    loom_jobspec_init(&s);
    int rc;
    if (strncmp(how, "#", 1) == 0) {
        snprintf(text, sizeof text, "#!/bin/sh\n%s%s\ntrue\n", how, t);
        rc = loom_jobspec_parse_script(&s, text, strlen(text), "job.sh", 0, &err);
    } else {
        rc = loom_jobspec_set(&s, LOOM_JOBSPEC_LOOM, how, t, "command line", &err);
    }
    if (rc)
        fail_msg("%s %s: %s", how, t, err.msg);
    int64_t v = s.time_limit_s;
    loom_jobspec_free(&s);
    return v;
}

/* issue 31: `loom submit -t 30` is 30 minutes, as sbatch's and as the same
 * #SBATCH line; every form reads the same from each place. */
static void times_same_everywhere(void **state)
{
    (void)state;
    static const struct {
        const char *t;
        int64_t s;
    } forms[] = {{"30", 1800},    {"10", 600},       {"7:30", 480},          {"03:02:01", 10980},
                 {"2-5", 190800}, {"1-2:03", 93780}, {"3-04:05:06", 273960}, {"UNLIMITED", 0},
                 {"infinite", 0}, {"1h30m", 5400}};
    static const char *const hows[] = {
        "#SBATCH --time=", "#SBATCH -t ", "#LOOM --time ", "#SBATCH --array=0-19%4 -t ",
        "--time",          "-t",          "time"};
    for (size_t i = 0; i < sizeof forms / sizeof forms[0]; i++)
        for (size_t h = 0; h < sizeof hows / sizeof hows[0]; h++)
            if (time_via(hows[h], forms[i].t) != forms[i].s)
                fail_msg("%s%s: %lld s, expected %lld", hows[h], forms[i].t,
                         (long long)time_via(hows[h], forms[i].t), (long long)forms[i].s);
}

static void quantities(void **state)
{
    (void)state;
    static const struct {
        const char *q;
        bool milli;
        uint64_t v;
    } ok[] = {{"128974848", false, 128974848},
              {"129e6", false, 129000000},
              {"129M", false, 129000000},
              {"128974848000m", false, 128974848},
              {"123Mi", false, 123ULL << 20},
              {"1.5Gi", false, 3ULL << 29},
              {"500m", true, 500},
              {"2", true, 2000},
              {"0.1", true, 100},
              {"1.5", true, 1500}};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++) {
        uint64_t v;
        loom_err_t err;
        if (loom_jobspec_parse_quantity(ok[i].q, ok[i].milli, &v, &err))
            fail_msg("%s: %s", ok[i].q, err.msg);
        if (v != ok[i].v)
            fail_msg("%s: %llu, expected %llu", ok[i].q, (unsigned long long)v,
                     (unsigned long long)ok[i].v);
    }
    static const char *const bad[] = {"", "Gi", "1GB", "-1", "1.2.3", "1e", "1x", "99999Ei"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint64_t v;
        if (loom_jobspec_parse_quantity(bad[i], false, &v, NULL) == LOOM_OK)
            fail_msg("'%s' accepted", bad[i]);
    }
}

static void arrays(void **state)
{
    (void)state;
    loom_jobspec_array_t a;
    loom_err_t err;
    assert_int_equal(loom_jobspec_array_parse("0-99%8", &a, &err), 0);
    assert_int_equal(a.count, 100);
    assert_int_equal(a.max_running, 8);
    assert_int_equal(loom_jobspec_array_parse("0-15:4", &a, &err), 0);
    assert_int_equal(a.count, 4);
    assert_int_equal(a.last, 12);
    assert_int_equal(loom_jobspec_array_parse("1,3,5-7", &a, &err), 0);
    assert_int_equal(a.count, 5);
    assert_int_equal(a.first, 1);
    assert_true(loom_jobspec_array_has("0-15:4", 8));
    assert_false(loom_jobspec_array_has("0-15:4", 9));
    assert_int_equal(loom_jobspec_array_parse("0-100000", &a, &err), LOOM_EINVAL);
    assert_int_equal(loom_jobspec_array_parse("1,,2", &a, &err), LOOM_EINVAL);
    assert_int_equal(loom_jobspec_array_parse("0-9%0", &a, &err), LOOM_EINVAL);
}

static void dependencies(void **state)
{
    (void)state;
    static const char *const ok[] = {"afterok:12",   "afterok:12:13,afterany:14",
                                     "singleton",    "after:5+10?afternotok:6",
                                     "afterok:12_3", "aftercorr:7"};
    for (size_t i = 0; i < sizeof ok / sizeof ok[0]; i++)
        if (loom_jobspec_dependency_check(ok[i], NULL))
            fail_msg("'%s' refused", ok[i]);
    static const char *const bad[] = {
        "",        "afterok", "afterok:", "afterok:x", "afterok:1,", "afterok:1,afterany:2?after:3",
        "before:1"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++)
        if (loom_jobspec_dependency_check(bad[i], NULL) == LOOM_OK)
            fail_msg("'%s' accepted", bad[i]);
}

static void patterns(void **state)
{
    (void)state;
    loom_jobspec_ids_t ids = {
        .job_id = 42, .name = "train", .user = "ana", .array_job_id = 0, .array_task = -1};
    char out[64];
    loom_err_t err;
    assert_int_equal(loom_jobspec_expand("%x-%j.%u.%%.out", &ids, "n1", out, sizeof out, &err), 0);
    assert_string_equal(out, "train-42.ana.%.out");
    assert_int_equal(loom_jobspec_expand("job%5j_%A_%a", &ids, NULL, out, sizeof out, &err), 0);
    assert_string_equal(out, "job00042_42_4294967294");
    ids.array_job_id = 40;
    ids.array_task = 7;
    assert_int_equal(loom_jobspec_expand("%A_%3a-%N%q", &ids, "n1", out, sizeof out, &err), 0);
    assert_string_equal(out, "40_007-n1%q");
    assert_int_equal(loom_jobspec_expand("\\%j", &ids, NULL, out, sizeof out, &err), 0);
    assert_string_equal(out, "%j");
    assert_int_equal(loom_jobspec_expand("%x%x%x%x%x%x%x%x%x%x%x%x", &ids, NULL, out, 16, &err),
                     LOOM_ELIMIT);
}

#define K8S_HEAD "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: hello\n"

static void k8s_job(void **state)
{
    (void)state;
    const char *m = K8S_HEAD "spec:\n  activeDeadlineSeconds: 600\n  backoffLimit: 2\n"
                             "  completions: 10\n  parallelism: 3\n  template:\n    spec:\n"
                             "      restartPolicy: Never\n      volumes: []\n"
                             "      containers:\n      - name: c\n        image: pytorch:2\n"
                             "        command: [python, train.py]\n        workingDir: /data\n"
                             "        env:\n        - {name: LR, value: \"0.1\"}\n"
                             "        resources:\n          requests: {cpu: 500m, memory: 1Gi}\n"
                             "          limits: {cpu: \"3\", memory: 2Gi, nvidia.com/gpu: 2,"
                             " example.com/fpga: 1}\n";
    loom_jobspec_t s;
    loom_err_t err;
    loom_jobspec_init(&s);
    if (loom_jobspec_parse_k8s(&s, m, strlen(m), "job.yaml", &err))
        fail_msg("%s", err.msg);
    json_t *p = json_object();
    assert_int_equal(loom_jobspec_to_params(&s, p, &err), 0);
    assert_string_equal(json_string_value(json_object_get(p, "name")), "hello");
    assert_int_equal(res_int(p, "cpus"), 3);
    assert_int_equal(res_int(p, "memory"), 2LL << 30);
    assert_int_equal(res_int(p, "gpus"), 2);
    assert_int_equal(json_integer_value(json_object_get(p, "time_limit")), 600);
    assert_string_equal(opt_str(p, "workdir"), "/data");
    assert_string_equal(opt_str(p, "array"), "0-9%3");
    assert_int_equal(json_integer_value(json_object_get(json_object_get(p, "options"), "retries")),
                     2);
    assert_true(has_warning(&s, "containers[0].image pytorch:2"));
    assert_true(has_warning(&s, "spec.template.spec.volumes"));
    assert_true(has_warning(&s, "example.com/fpga"));
    json_decref(p);
    loom_jobspec_free(&s);
}

/* issue 31: metadata.labels kept (or warned), completionMode Indexed sets
 * JOB_COMPLETION_INDEX, no retries warning without backoffLimit. */
static void k8s_labels_indexed(void **state)
{
    (void)state;
    const char *m = "apiVersion: batch/v1\nkind: Job\nmetadata:\n  name: idx\n"
                    "  labels: {app.kubernetes.io/name: bert, team: nlp,"
                    " example.com/a-very-long-prefix-that-loom-cannot-hold/and-a-long-name: x}\n"
                    "spec:\n  completions: 4\n  parallelism: 2\n  completionMode: Indexed\n"
                    "  template:\n    spec:\n      containers:\n      - name: c\n"
                    "        command: [sh, -c, 'echo $JOB_COMPLETION_INDEX']\n";
    loom_jobspec_t s;
    loom_err_t err;
    loom_jobspec_init(&s);
    if (loom_jobspec_parse_k8s(&s, m, strlen(m), "job.yaml", &err))
        fail_msg("%s", err.msg);
    json_t *p = json_object();
    assert_int_equal(loom_jobspec_to_params(&s, p, &err), 0);
    json_t *labels = json_object_get(p, "labels");
    assert_string_equal(json_string_value(json_object_get(labels, "app.kubernetes.io/name")),
                        "bert");
    assert_string_equal(json_string_value(json_object_get(labels, "team")), "nlp");
    assert_true(has_warning(&s, "metadata.labels example.com/a-very-long"));
    assert_false(has_warning(&s, "retries"));
    assert_string_equal(opt_str(p, "array"), "0-3%2");
    json_t *env = json_object_get(json_object_get(p, "options"), "env");
    assert_string_equal(json_string_value(json_array_get(env, 0)), "JOB_COMPLETION_INDEX=0");
    json_decref(p);
    loom_jobspec_free(&s);
    const char *bad = "apiVersion: batch/v1\nkind: Job\nmetadata: {name: b}\nspec:\n"
                      "  completionMode: Sometimes\n  template: {spec: {containers: [{name: c,"
                      " command: [true]}]}}\n";
    loom_jobspec_init(&s);
    assert_int_equal(loom_jobspec_parse_k8s(&s, bad, strlen(bad), "b.yaml", &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "spec.completionMode: expected Indexed or NonIndexed"));
    loom_jobspec_free(&s);
}

static void k8s_errors(void **state)
{
    (void)state;
    static const struct {
        const char *m;
        const char *msg;
    } cases[] = {
        {"a: [", "job.yaml:2:1:"},
        {"apiVersion: v1\nkind: Pod\n", "job.yaml:1: apiVersion/kind: expected batch/v1 and Job"},
        {K8S_HEAD "spec:\n  activeDeadlineSeconds: soon\n  template: {spec: {containers: [{}]}}\n",
         "job.yaml:6: spec.activeDeadlineSeconds: expected an integer"},
        {K8S_HEAD "spec:\n  template:\n    spec:\n      containers:\n      - resources:\n"
                  "          limits: {memory: 1GB}\n",
         "job.yaml:10: containers[0].resources.limits.memory: expected a quantity"},
        {K8S_HEAD "spec:\n  template:\n    spec:\n      containers:\n      - resources:\n"
                  "          requests: {cpu: 4}\n          limits: {cpu: 2}\n",
         "a limit at least as large as the request"},
        {K8S_HEAD "spec:\n  template:\n    spec:\n      restartPolicy: Always\n"
                  "      containers: [{}]\n",
         "restartPolicy: expected Never or OnFailure"},
        {K8S_HEAD "spec:\n  template:\n    spec:\n      containers: []\n",
         "spec.template.spec.containers: expected a non-empty list"},
        {K8S_HEAD "spec:\n  template:\n    spec:\n      containers:\n      - resources:\n"
                  "          limits: {nvidia.com/gpu: 0.5}\n",
         "nvidia.com/gpu: expected a whole number of GPUs"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        loom_jobspec_t s;
        loom_err_t err;
        loom_jobspec_init(&s);
        int rc = loom_jobspec_parse_k8s(&s, cases[i].m, strlen(cases[i].m), "job.yaml", &err);
        if (rc != LOOM_EINVAL || !strstr(err.msg, cases[i].msg))
            fail_msg("case %zu: rc %d, '%s', expected '%s'", i, rc, rc ? err.msg : "",
                     cases[i].msg);
        loom_jobspec_free(&s);
    }
}

/* Issue 30, finding 12: `loom submit` of a 100k-deep flow YAML spent 43 s
 * in libyaml (its scanner works per token in proportion to the depth)
 * before the server would have refused it. Now refused at level 65 with
 * the file, line and column; 64 levels are still read. */
static void k8s_deep_nesting(void **state)
{
    (void)state;
    enum { N = 100000 };
    char *m = malloc(N + 8);
    memcpy(m, "a: ", 3);
    memset(m + 3, '[', N);
    m[N + 3] = '\0';
    loom_jobspec_t s;
    loom_err_t err;
    loom_jobspec_init(&s);
    assert_int_equal(loom_jobspec_parse_k8s(&s, m, strlen(m), "deep.yaml", &err), LOOM_EINVAL);
    if (!strstr(err.msg, "deep.yaml:1:67: nests deeper than 64 levels"))
        fail_msg("%s", err.msg);
    loom_jobspec_free(&s);
    /* 63 flow levels inside the top mapping: 64 in all, read (and refused
     * for what it is, not for its depth) */
    char ok[256] = "a: ";
    memset(ok + 3, '[', 63);
    memset(ok + 66, ']', 63);
    ok[129] = '\0';
    loom_jobspec_init(&s);
    assert_int_equal(loom_jobspec_parse_k8s(&s, ok, strlen(ok), "ok.yaml", &err), LOOM_EINVAL);
    if (strstr(err.msg, "nests deeper") || !strstr(err.msg, "apiVersion"))
        fail_msg("%s", err.msg);
    loom_jobspec_free(&s);
    free(m);
}

/* sbatch's --begin, one parser for job files, the command line, loomd
 * and loom sim's traces (loom_jobspec_parse_begin). */
static void begin_forms(void **state)
{
    (void)state;
    const int64_t t0 = 1764763200LL * LOOM_NS_PER_S; /* 2025-12-03 12:00 UTC */
    int64_t at;
    loom_err_t err;
    assert_int_equal(loom_jobspec_parse_begin("now", t0, &at, &err), LOOM_OK);
    assert_true(at == t0);
    assert_int_equal(loom_jobspec_parse_begin("now+90", t0, &at, &err), LOOM_OK);
    assert_true(at == t0 + 90 * LOOM_NS_PER_S);
    assert_int_equal(loom_jobspec_parse_begin("now+2hours", t0, &at, &err), LOOM_OK);
    assert_true(at == t0 + 7200 * LOOM_NS_PER_S);
    assert_int_equal(loom_jobspec_parse_begin("now+1w", t0, &at, &err), LOOM_OK);
    assert_true(at == t0 + 604800 * LOOM_NS_PER_S);
    assert_int_equal(loom_jobspec_parse_begin("2030-01-02T03:04:05", t0, &at, &err), LOOM_OK);
    assert_true(at > t0);
    /* RFC 3339 with a zone (loom_time_parse_datetime): exact, whatever loomd's zone */
    assert_int_equal(loom_jobspec_parse_begin("2030-01-02T03:04:05Z", t0, &at, &err), LOOM_OK);
    assert_true(at == 1893553445LL * LOOM_NS_PER_S);
    assert_int_equal(loom_jobspec_parse_begin("2030-01-02T04:04:05+01:00", t0, &at, &err), LOOM_OK);
    assert_true(at == 1893553445LL * LOOM_NS_PER_S);
    /* a day its month does not have: mktime used to roll it into March */
    assert_int_equal(loom_jobspec_parse_begin("2030-02-31", t0, &at, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "byte 8: expected a two-digit day 01-28 (February 2030)"));
    assert_int_equal(loom_jobspec_parse_begin("2201-01-02", t0, &at, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "expected a time from 1970 to 2200"));
    assert_int_equal(loom_jobspec_parse_begin("12:30", t0, &at, &err), LOOM_OK);
    assert_true(at > t0 && at <= t0 + 86400 * LOOM_NS_PER_S); /* the next 12:30 */
    static const char *const bad[] = {"now+",
                                      "now+-3",
                                      "now+3fortnights",
                                      "tomorrow",
                                      "2030-13-01",
                                      "25:00",
                                      "now+99999999days",
                                      "",
                                      "2030-02-30T10:00",
                                      "1969-12-31"};
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        assert_int_equal(loom_jobspec_parse_begin(bad[i], t0, &at, &err), LOOM_EINVAL);
        assert_non_null(strstr(err.msg, "options.begin: expected now[+N"));
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(sbatch_directives),
        cmocka_unit_test(tasks_and_per_cpu),
        cmocka_unit_test(command_line_overrides),
        cmocka_unit_test(loom_directives_and_warnings),
        cmocka_unit_test(script_errors),
        cmocka_unit_test(slurm_times),
        cmocka_unit_test(times_same_everywhere),
        cmocka_unit_test(quantities),
        cmocka_unit_test(arrays),
        cmocka_unit_test(dependencies),
        cmocka_unit_test(patterns),
        cmocka_unit_test(k8s_job),
        cmocka_unit_test(k8s_labels_indexed),
        cmocka_unit_test(k8s_errors),
        cmocka_unit_test(k8s_deep_nesting),
        cmocka_unit_test(begin_forms),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
