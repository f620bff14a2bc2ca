/* The catalog source (src/gen/catalog_source.c): a job rendered from its
 * plan is byte for byte the job rendered by walking the template over its
 * whole JSON context (no_plans), with the same job.submit parameters and
 * the same draws, for every job of the shipped catalogs under every
 * shipped template; a job whose template cannot be planned falls back to
 * the ordinary render with the same result; a script that is not UTF-8 is
 * a clear per-job error; and whole runs give the same jobs for a seed with
 * one sender thread or several. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/catalog.h"
#include "loom/gen.h"

static void make_job(const loom_gen_source_t *src, uint64_t seed, uint64_t i, size_t choice,
                     loom_gen_job_t *job, loom_rng_t *rng)
{
    memset(job, 0, sizeof *job);
    job->index = i;
    job->choice = choice;
    job->due_ns = (int64_t)(i * 1234567 + i % 3); /* due_s: short and long reals */
    loom_gen_submit_id(seed, "t", 0, i, job->submit_id);
    loom_rng_init(rng, seed, LOOM_GEN_STREAM_JOB + i);
    loom_err_t err;
    if (src->make(src->ctx, job, rng, &err) != LOOM_OK)
        fail_msg("job %llu: %s", (unsigned long long)i, err.msg);
}

static void job_free(loom_gen_job_t *job)
{
    loom_buf_free(&job->text);
    json_decref(job->spec);
}

/* Both ways over n jobs (every catalog job in turn); returns how many
 * catalog jobs were planned. */
static size_t compare(const loom_catalog_t *cat, const loom_gen_catalog_options_t *o, size_t n)
{
    loom_gen_catalog_source_t *fast, *slow;
    loom_err_t err;
    loom_gen_catalog_options_t so = *o;
    so.no_plans = true;
    if (loom_gen_catalog_source_new(cat, o, &fast, &err) != LOOM_OK ||
        loom_gen_catalog_source_new(cat, &so, &slow, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    const loom_gen_source_t *f = loom_gen_catalog_source_get(fast);
    const loom_gen_source_t *s = loom_gen_catalog_source_get(slow);
    size_t planned = 0;
    for (size_t c = 0; c < f->n; c++) {
        planned += loom_gen_catalog_source_planned(fast, c);
        assert_false(loom_gen_catalog_source_planned(slow, c));
    }
    for (uint64_t i = 0; i < n; i++) {
        loom_gen_job_t a, b;
        loom_rng_t ra, rb;
        make_job(f, o->seed, i, i % f->n, &a, &ra);
        make_job(s, o->seed, i, i % f->n, &b, &rb);
        if (strcmp(a.text.data, b.text.data) != 0)
            fail_msg("job %llu (%s): planned\n%s\nrendered\n%s", (unsigned long long)i,
                     f->names[i % f->n], a.text.data, b.text.data);
        assert_int_equal(a.text.len, b.text.len);
        assert_true(json_equal(a.spec, b.spec));
        assert_memory_equal(&ra, &rb, sizeof ra);
        job_free(&a);
        job_free(&b);
    }
    loom_gen_catalog_source_free(fast);
    loom_gen_catalog_source_free(slow);
    return planned;
}

static void planned_equals_rendered(void **state)
{
    static const char *const cats[] = {"workloads/catalogs/demo.json",
                                       "workloads/catalogs/zoo.json"};
    static const char *const tpls[] = {NULL, "workloads/templates/slurm.sh.mustache",
                                       "workloads/templates/k8s-job.yaml.mustache",
                                       "workloads/templates/local.sh.mustache"};
    for (size_t c = 0; c < 2; c++) {
        loom_catalog_t *cat;
        loom_err_t err;
        if (loom_catalog_load_file(cats[c], &cat, NULL, &err) != LOOM_OK)
            fail_msg("%s", err.msg);
        for (size_t t = 0; t < 4; t++) {
            loom_gen_catalog_options_t o = {.template_path = tpls[t], .seed = 40 + c * 4 + t};
            size_t planned = compare(cat, &o, 3000);
            /* the shipped templates never need the ordinary way */
            assert_int_equal(planned, loom_catalog_job_count(cat));
        }
        loom_catalog_free(cat);
    }
}

static void write_file(const char *path, const char *text)
{
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A template that tests a parameter that may be true or false cannot be
 * planned; that job is rendered the ordinary way, with the same result as
 * without plans. */
static void fallback_when_unplannable(void **state)
{
    char dir[] = "/tmp/loom-test-gencs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tpl[256], cpath[256];
    snprintf(tpl, sizeof tpl, "%s/flag.sh.mustache", dir);
    snprintf(cpath, sizeof cpath, "%s/c.json", dir);
    write_file(tpl, "#!/bin/sh\n{{#params.on}}echo on {{params.n}}{{/params.on}}"
                    "{{^params.on}}echo off{{/params.on}} {{index}} {{due_s}} {{seed}}\n");
    write_file(cpath,
               "{\"version\": 1, \"jobs\": ["
               " {\"name\": \"flag\", \"executable\": \"x\", \"template\": \"flag.sh.mustache\","
               "  \"parameters\": {\"on\": {\"type\": \"choice\", \"values\": [true, false]},"
               "                  \"n\": {\"type\": \"int\", \"min\": 1, \"max\": 9}}}]}");
    loom_catalog_t *cat;
    loom_err_t err;
    int rc = loom_catalog_load_file(cpath, &cat, NULL, &err);
    if (rc != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_gen_catalog_options_t o = {.seed = 8};
    loom_gen_catalog_source_t *cs;
    assert_int_equal(loom_gen_catalog_source_new(cat, &o, &cs, &err), LOOM_OK);
    assert_false(loom_gen_catalog_source_planned(cs, 0));
    loom_gen_catalog_source_free(cs);
    compare(cat, &o, 200);
    /* and the output really varies with the flag */
    assert_int_equal(loom_gen_catalog_source_new(cat, &o, &cs, &err), LOOM_OK);
    const loom_gen_source_t *src = loom_gen_catalog_source_get(cs);
    int on = 0, off = 0;
    for (uint64_t i = 0; i < 200; i++) {
        loom_gen_job_t job;
        loom_rng_t rng;
        make_job(src, 8, i, 0, &job, &rng);
        on += strstr(job.text.data, "echo on ") != NULL;
        off += strstr(job.text.data, "echo off ") != NULL;
        job_free(&job);
    }
    assert_true(on > 50 && off > 50 && on + off == 200);
    loom_gen_catalog_source_free(cs);
    loom_catalog_free(cat);
    unlink(tpl);
    unlink(cpath);
    rmdir(dir);
}

/* A catalog entry's "reconfig" (docs/scheduling.md) reaches job.submit as
 * it was written; an entry without one sends none. */
static void reconfig_carried(void **state)
{
    (void)state;
    char dir[] = "/tmp/loom-test-gencs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cpath[256];
    snprintf(cpath, sizeof cpath, "%s/c.json", dir);
    write_file(cpath, "{\"version\": 1, \"jobs\": ["
                      " {\"name\": \"r\", \"executable\": \"x\", \"resources\": {\"gpus\": 2},"
                      "  \"reconfig\": {\"global_batch\": 64, \"gpus\": {\"min\": 1, \"max\": 4}}},"
                      " {\"name\": \"b\", \"executable\": \"x\"}]}");
    loom_catalog_t *cat;
    loom_err_t err;
    if (loom_catalog_load_file(cpath, &cat, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_gen_catalog_options_t o = {.seed = 8};
    loom_gen_catalog_source_t *cs;
    assert_int_equal(loom_gen_catalog_source_new(cat, &o, &cs, &err), LOOM_OK);
    const loom_gen_source_t *src = loom_gen_catalog_source_get(cs);
    for (size_t choice = 0; choice < 2; choice++) {
        loom_gen_job_t job;
        loom_rng_t rng;
        make_job(src, 8, choice, choice, &job, &rng);
        const json_t *r = json_object_get(job.spec, "reconfig");
        if (choice == 0) {
            assert_non_null(r);
            assert_int_equal(json_integer_value(json_object_get(r, "global_batch")), 64);
            assert_int_equal(json_integer_value(json_object_get(json_object_get(r, "gpus"), "max")),
                             4);
        } else {
            assert_null(r);
        }
        job_free(&job);
    }
    loom_gen_catalog_source_free(cs);
    loom_catalog_free(cat);
    unlink(cpath);
    rmdir(dir);
}

/* "array" becomes options.array; "then" the later stages' job.submit
 * parameters under the spec's "then", in order, with submit_ids ID.1, ID.2;
 * stage jobs are never drawn on their own (weight 0). */
static void array_and_pipeline(void **state)
{
    (void)state;
    char dir[] = "/tmp/loom-test-gencs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char cpath[256];
    snprintf(cpath, sizeof cpath, "%s/c.json", dir);
    write_file(cpath, "{\"version\": 1, \"jobs\": ["
                      " {\"name\": \"pre\", \"executable\": \"x\", \"then\": [\"tr\", \"ev\"]},"
                      " {\"name\": \"tr\", \"executable\": \"y\", \"array\": \"0-3%2\"},"
                      " {\"name\": \"ev\", \"executable\": \"z\"},"
                      " {\"name\": \"sw\", \"executable\": \"x\", \"array\": \"1,3\"}]}");
    loom_catalog_t *cat;
    loom_err_t err;
    if (loom_catalog_load_file(cpath, &cat, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_gen_catalog_options_t o = {.seed = 8};
    loom_gen_catalog_source_t *cs;
    assert_int_equal(loom_gen_catalog_source_new(cat, &o, &cs, &err), LOOM_OK);
    const loom_gen_source_t *src = loom_gen_catalog_source_get(cs);
    assert_true(src->weights[0] > 0 && src->weights[3] > 0);
    assert_true(src->weights[1] == 0 && src->weights[2] == 0);
    loom_gen_job_t job;
    loom_rng_t rng;
    make_job(src, 8, 5, 0, &job, &rng);
    assert_null(json_object_get(job.spec, "options"));
    const json_t *then = json_object_get(job.spec, "then");
    assert_int_equal(json_array_size(then), 2);
    const char *names[] = {"tr", "ev"};
    for (size_t k = 0; k < 2; k++) {
        const json_t *st = json_array_get(then, k);
        char want[80];
        snprintf(want, sizeof want, "%s.%zu", job.submit_id, k + 1);
        assert_string_equal(json_string_value(json_object_get(st, "submit_id")), want);
        assert_string_equal(json_string_value(json_object_get(st, "name")), names[k]);
        assert_null(json_object_get(st, "then"));
        const json_t *arr = json_object_get(json_object_get(st, "options"), "array");
        if (k == 0)
            assert_string_equal(json_string_value(arr), "0-3%2");
        else
            assert_null(arr);
    }
    job_free(&job);
    make_job(src, 8, 6, 3, &job, &rng);
    assert_null(json_object_get(job.spec, "then"));
    assert_string_equal(
        json_string_value(json_object_get(json_object_get(job.spec, "options"), "array")), "1,3");
    job_free(&job);
    loom_gen_catalog_source_free(cs);
    loom_catalog_free(cat);
    unlink(cpath);
    rmdir(dir);
}

/* Parameters that print as nothing (false), as '' (an empty string) or
 * need quoting, substituted into arguments and environment values, under
 * shell and YAML escaping: still the same bytes both ways. */
static void awkward_values(void **state)
{
    char dir[] = "/tmp/loom-test-gencs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char sh[256], yaml[256], cpath[256];
    snprintf(sh, sizeof sh, "%s/all.sh.mustache", dir);
    snprintf(yaml, sizeof yaml, "%s/all.yaml.mustache", dir);
    snprintf(cpath, sizeof cpath, "%s/c.json", dir);
    const char *body = "flag=[{{params.flag}}] raw=[{{&params.flag}}] x={{params.x}} "
                       "w={{params.word}} r={{params.r}} n={{params.n}}\n"
                       "{{#arguments}}- {{.}}\n{{/arguments}}{{#env}}{{name}}={{value}}\n{{/env}}"
                       "{{#submit_id}}id {{.}}{{/submit_id}} {{index}} {{due_s}} {{seed}}\n";
    write_file(sh, body);
    write_file(yaml, body);
    write_file(cpath,
               "{\"version\": 1, \"jobs\": ["
               " {\"name\": \"odd\", \"executable\": \"/bin/echo\","
               "  \"arguments\": [\"${flag}\", \"--x=${x}\", \"$$HOME\", \"${catalog_dir}/f\","
               "                 \"${word}${flag}\", \"${r}:${n}\"],"
               "  \"environment\": {\"B\": \"${word}\", \"A\": \"n=${n}\", \"C\": \"1\"},"
               "  \"parameters\": {"
               "    \"flag\": {\"type\": \"choice\", \"values\": [true, false, \"\", \"yes\"]},"
               "    \"x\": {\"type\": \"choice\", \"values\": [0.1, 2.5e-7, 3, \"it's\"]},"
               "    \"word\": {\"type\": \"choice\", \"values\": [\"\", \"a b\", \"$(x)\"]},"
               "    \"r\": {\"type\": \"real\", \"min\": 1e-6, \"max\": 10, \"log\": true},"
               "    \"n\": {\"type\": \"int\", \"min\": -5, \"max\": 1000000}}}]}");
    loom_catalog_t *cat;
    loom_err_t err;
    if (loom_catalog_load_file(cpath, &cat, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    const char *tpls[] = {sh, yaml};
    for (int t = 0; t < 2; t++) {
        loom_gen_catalog_options_t o = {.template_path = tpls[t], .seed = 3};
        assert_int_equal(compare(cat, &o, 2000), 1);
    }
    loom_catalog_free(cat);
    unlink(sh);
    unlink(yaml);
    unlink(cpath);
    rmdir(dir);
}

/* A template with bytes that are not UTF-8 renders, but job.submit cannot
 * carry the script: each job fails with a message that says so. */
static void not_utf8(void **state)
{
    char dir[] = "/tmp/loom-test-gencs-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char tpl[256];
    snprintf(tpl, sizeof tpl, "%s/bad.sh.mustache", dir);
    write_file(tpl, "#!/bin/sh\necho \xff {{name}}\n");
    loom_catalog_t *cat;
    loom_err_t err;
    if (loom_catalog_load_file("workloads/catalogs/demo.json", &cat, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    for (int np = 0; np < 2; np++) {
        loom_gen_catalog_options_t o = {.template_path = tpl, .seed = 1, .no_plans = np};
        loom_gen_catalog_source_t *cs;
        assert_int_equal(loom_gen_catalog_source_new(cat, &o, &cs, &err), LOOM_OK);
        const loom_gen_source_t *src = loom_gen_catalog_source_get(cs);
        loom_gen_job_t job = {.index = 5, .choice = 0};
        loom_gen_submit_id(1, NULL, 0, 5, job.submit_id);
        loom_rng_t rng;
        loom_rng_init(&rng, 1, LOOM_GEN_STREAM_JOB + 5);
        assert_int_equal(src->make(src->ctx, &job, &rng, &err), LOOM_EINVAL);
        assert_string_equal(err.msg, "job 5 (sgd-small): the rendered script is not valid UTF-8 "
                                     "(the template or a value holds other bytes), which "
                                     "job.submit cannot carry");
        assert_null(job.spec);
        loom_buf_free(&job.text);
        loom_gen_catalog_source_free(cs);
    }
    loom_catalog_free(cat);
    unlink(tpl);
    rmdir(dir);
}

/* ------------------------------------------ whole runs, any worker count */

typedef struct capture {
    char **texts, **ids, **specs;
    size_t n;
} capture_t;

static int capture_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    capture_t *c = ctx;
    for (size_t i = 0; i < n; i++) {
        loom_gen_job_t *j = jobs[i];
        assert_true(j->index < c->n && !c->texts[j->index]);
        c->texts[j->index] = strdup(j->text.data);
        c->ids[j->index] = strdup(j->submit_id);
        c->specs[j->index] = json_dumps(j->spec, JSON_SORT_KEYS | JSON_COMPACT);
        j->rc = LOOM_OK;
    }
    return LOOM_OK;
}

static void run_with_workers(const loom_gen_source_t *src, unsigned workers, unsigned batch,
                             capture_t *c, size_t n)
{
    c->n = n;
    c->texts = calloc(n, sizeof *c->texts);
    c->ids = calloc(n, sizeof *c->ids);
    c->specs = calloc(n, sizeof *c->specs);
    loom_gen_vclock_t vc = {.now_ns = 1};
    loom_gen_clock_t clock = loom_gen_clock_virtual(&vc);
    loom_gen_config_t cfg = {.arrivals = {.process = LOOM_GEN_POISSON, .rate = 1000},
                             .seed = 77,
                             .run_tag = "w",
                             .count = n,
                             .clock = &clock,
                             .window = 32,
                             .workers = workers,
                             .batch = batch};
    loom_gen_sink_t sink = {.name = "capture", .send = capture_send, .ctx = c};
    loom_gen_report_t *r = malloc(sizeof *r);
    loom_err_t err;
    assert_int_equal(loom_gen_run(&cfg, src, &sink, r, &err), LOOM_OK);
    assert_int_equal(r->ok, n);
    loom_gen_report_free(r);
    free(r);
}

static void capture_free(capture_t *c)
{
    for (size_t i = 0; i < c->n; i++) {
        free(c->texts[i]);
        free(c->ids[i]);
        free(c->specs[i]);
    }
    free(c->texts);
    free(c->ids);
    free(c->specs);
}

/* A run's jobs (scripts, submit ids, job.submit parameters) are the same
 * for a seed whether one sender thread renders them or several, in
 * batches of any size. */
static void same_jobs_for_any_worker_count(void **state)
{
    loom_catalog_t *cat;
    loom_err_t err;
    if (loom_catalog_load_file("workloads/catalogs/zoo.json", &cat, NULL, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_gen_catalog_options_t o = {.seed = 77};
    loom_gen_catalog_source_t *cs;
    assert_int_equal(loom_gen_catalog_source_new(cat, &o, &cs, &err), LOOM_OK);
    const loom_gen_source_t *src = loom_gen_catalog_source_get(cs);
    enum { N = 1500 };
    capture_t one, many, other;
    run_with_workers(src, 1, 1, &one, N);
    run_with_workers(src, 4, 7, &many, N);
    run_with_workers(src, 3, 64, &other, N);
    for (size_t i = 0; i < N; i++) {
        assert_string_equal(one.texts[i], many.texts[i]);
        assert_string_equal(one.ids[i], many.ids[i]);
        assert_string_equal(one.specs[i], many.specs[i]);
        assert_string_equal(one.texts[i], other.texts[i]);
        assert_string_equal(one.specs[i], other.specs[i]);
    }
    assert_true(strcmp(one.texts[0], one.texts[1]) != 0); /* not all the same job */
    capture_free(&one);
    capture_free(&many);
    capture_free(&other);
    loom_gen_catalog_source_free(cs);
    loom_catalog_free(cat);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(planned_equals_rendered),
        cmocka_unit_test(fallback_when_unplannable),
        cmocka_unit_test(reconfig_carried),
        cmocka_unit_test(array_and_pipeline),
        cmocka_unit_test(awkward_values),
        cmocka_unit_test(not_utf8),
        cmocka_unit_test(same_jobs_for_any_worker_count),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
