/* loom show ID: one job in full (job.get), with its script and events. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom show ID [--json] [--usage]\n\n"
               "Shows job ID: its state, resources, labels, script and state changes.\n"
               "  --usage  its usage over time instead (job.usage): CPU, memory and each\n"
               "           GPU's utilisation, memory and power as text charts\n"
               "exit codes: 0 shown, 4 no such job, 3 cannot connect.\n");
}

/* Where the job runs, its output files and, once ended, its outcome; for a
 * running job its usage now (monitor.snapshot), when loomd could read it. */
static void show_run(const json_t *run, const json_t *usage)
{
    if (!json_is_object(run))
        return;
    printf("  node:        %s\n", json_string_value(json_object_get(run, "node")));
    printf("  gpu ids:     ");
    size_t i;
    json_t *g;
    json_array_foreach(json_object_get(run, "gpus"), i, g)
        printf("%s%lld", i ? "," : "", (long long)json_integer_value(g));
    if (json_array_size(json_object_get(run, "gpus")) == 0)
        printf("-");
    json_int_t share = json_integer_value(json_object_get(run, "gpu_share"));
    printf("%s\n", share && share < 1000 ? " (shared)" : "");
    const char *out = json_string_value(json_object_get(run, "stdout"));
    const char *err = json_string_value(json_object_get(run, "stderr"));
    if (out)
        printf("  stdout:      %s\n  stderr:      %s\n", out, err ? err : "-");
    const char *limits = json_string_value(json_object_get(run, "limits"));
    if (limits && *limits)
        printf("  limits:      %s\n", limits);
    if (json_is_true(json_object_get(run, "suspended")))
        printf("  suspended:   yes\n");
    const char *gandiva = json_string_value(json_object_get(run, "gandiva"));
    if (gandiva)
        printf("  gandiva:     %s\n", gandiva);
    const json_t *o = json_object_get(run, "outcome");
    if (json_is_object(o)) {
        char mem[32];
        loom_format_size((uint64_t)json_integer_value(json_object_get(o, "max_rss_bytes")), mem,
                         sizeof mem);
        printf("  usage:       %.2f s user, %.2f s system, peak RSS %s\n",
               json_number_value(json_object_get(o, "cpu_user_s")),
               json_number_value(json_object_get(o, "cpu_sys_s")), mem);
    } else if (json_is_object(usage)) {
        const json_t *p = json_object_get(usage, "process");
        char mem[32];
        loom_format_size((uint64_t)json_integer_value(json_object_get(p, "rss_bytes")), mem,
                         sizeof mem);
        printf("  usage now:   %.2f s user, %.2f s system, RSS %s, %lld processes\n",
               json_number_value(json_object_get(p, "user_seconds")),
               json_number_value(json_object_get(p, "system_seconds")), mem,
               (long long)json_integer_value(json_object_get(p, "processes")));
    }
}

static const char *size_text(const json_t *o, const char *key, char *buf)
{
    json_int_t v = json_integer_value(json_object_get(o, key));
    return loom_format_size(v > 0 ? (uint64_t)v : 0, buf, 32);
}

/* Where the GPU memory request came from, when the submission named a
 * model (the job's "estimate", docs/protocol.md). */
static void show_estimate(const json_t *e)
{
    if (!json_is_object(e))
        return;
    const json_t *m = json_object_get(e, "model"), *mem = json_object_get(e, "memory");
    const json_t *mg = json_object_get(e, "margin");
    char a[32], b[32], c[32], d[32];
    bool train = json_is_true(json_object_get(m, "train"));
    printf("  model:       %s\n", json_string_value(json_object_get(m, "path")));
    printf("               batch %lld, %s%s%s, %s, device %s\n",
           (long long)json_integer_value(json_object_get(m, "batch")),
           train ? "training (" : "inference",
           train ? json_string_value(json_object_get(m, "optimizer")) : "", train ? ")" : "",
           json_string_value(json_object_get(m, "precision")),
           json_string_value(json_object_get(m, "device")));
    printf("  estimate:    %s = weights %s + gradients %s + optimizer %s\n",
           size_text(mem, "total", a), size_text(mem, "weights", b), size_text(mem, "gradients", c),
           size_text(mem, "optimizer_state", d));
    printf("               + activations %s + temporaries %s + allocator slack %s\n",
           size_text(mem, "activations", a), size_text(mem, "temporaries", b),
           size_text(mem, "allocator_slack", c));
    printf("               + CUDA context %s\n", size_text(mem, "context", a));
    printf("  request:     %s = estimate + %g%% + %s%s\n", size_text(e, "request_bytes", a),
           json_number_value(json_object_get(mg, "fraction")) * 100,
           size_text(mg, "extra_bytes", b),
           json_is_true(json_object_get(e, "applied"))
               ? " (the job's gpu memory)"
               : " (not used: the submission gave gpu memory)");
}

/* What the job file said beyond resources (job.submit "options"), and
 * which of it is stored but not acted on yet: nice, retries
 * (docs/jobfiles.md). */
static void show_options(const json_t *o)
{
    static const struct {
        const char *key, *label;
    } rows[] = {
        {"workdir", "workdir:     "}, {"output", "output:      "},     {"error", "error:       "},
        {"export", "export:      "},  {"account", "account:     "},    {"comment", "comment:     "},
        {"array", "array:       "},   {"dependency", "dependency:  "}, {"begin", "begin:       "}};
    for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
        const char *v = json_string_value(json_object_get(o, rows[i].key));
        if (v)
            printf("  %s%s\n", rows[i].label, v);
    }
    if (json_is_true(json_object_get(o, "hold")))
        printf("  hold:        yes\n");
    if (json_is_integer(json_object_get(o, "nice")))
        printf("  nice:        %lld (not acted on yet)\n",
               (long long)json_integer_value(json_object_get(o, "nice")));
    if (json_is_integer(json_object_get(o, "retries")))
        printf("  retries:     %lld (not acted on yet)\n",
               (long long)json_integer_value(json_object_get(o, "retries")));
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(o, "env"), i, e)
        printf("  env:         %s\n", json_string_value(e));
}

/* A job held by a running quota: whose limit and which (docs/protocol.md). */
static void show_quota(const json_t *j)
{
    const json_t *q = json_object_get(j, "quota");
    if (!json_is_object(q))
        return;
    bool gpus = strcmp(json_string_value(json_object_get(q, "limit")) ?: "", "gpus") == 0;
    double div = gpus ? 1000.0 : 1.0;
    printf("  quota:       its %s's running %s: %g in use + %g asked > %g allowed\n",
           json_string_value(json_object_get(q, "on")) ?: "?", gpus ? "GPUs" : "jobs",
           (double)json_integer_value(json_object_get(q, "used")) / div,
           (double)json_integer_value(json_object_get(q, "asks")) / div,
           (double)json_integer_value(json_object_get(q, "allowed")) / div);
}

static double member(const json_t *o, const char *a, const char *b)
{
    return json_number_value(json_object_get(json_object_get(o, a), b));
}

/* job.get's usage_summary: what the job used against what it asked for. */
static void show_summary(const json_t *s, json_int_t id)
{
    if (!json_is_object(s))
        return;
    char a[32], b[32];
    const json_t *eff = json_object_get(json_object_get(s, "cpu"), "efficiency");
    printf("  summary:     CPU %.2f of %lld cores on average, peak %.2f",
           member(s, "cpu", "mean_cores"), (long long)member(s, "cpu", "allocated"),
           member(s, "cpu", "peak_cores"));
    if (json_is_number(eff))
        printf(" (CPU efficiency %.1f%%)", 100 * json_number_value(eff));
    printf("\n               memory mean %s, peak %s",
           loom_cli_fmt_size((json_int_t)member(s, "memory", "mean_bytes"), a),
           loom_cli_fmt_size((json_int_t)member(s, "memory", "peak_bytes"), b));
    if (member(s, "memory", "requested_bytes") > 0)
        printf(" of %s asked",
               loom_cli_fmt_size((json_int_t)member(s, "memory", "requested_bytes"), a));
    printf("\n");
    const json_t *g = json_object_get(s, "gpus");
    if (json_array_size(json_object_get(g, "per_gpu")) > 0) {
        printf("               GPUs %lld used of %zu held: utilisation mean %.1f%%, peak %.0f%%; "
               "memory mean %s, peak %s\n",
               (long long)json_integer_value(json_object_get(g, "used")),
               json_array_size(json_object_get(g, "per_gpu")),
               member(s, "gpus", "util_mean_percent"), member(s, "gpus", "util_peak_percent"),
               loom_cli_fmt_size((json_int_t)member(s, "gpus", "memory_mean_bytes"), a),
               loom_cli_fmt_size((json_int_t)member(s, "gpus", "memory_peak_bytes"), b));
    }
    size_t i;
    const json_t *h;
    json_array_foreach(json_object_get(s, "hints"), i, h)
        printf("  hint:        %s\n", json_string_value(h));
    printf("               (loom show %lld --usage draws it over time)\n", (long long)id);
}

static void show(const json_t *j, const json_t *usage_now)
{
    const json_t *r = json_object_get(j, "resources");
    char a[32], b[32];
    printf("Job %lld\n", (long long)json_integer_value(json_object_get(j, "id")));
    printf("  name:        %s\n", json_string_value(json_object_get(j, "name")));
    printf("  state:       %s\n", json_string_value(json_object_get(j, "state")));
    const json_t *owner = json_object_get(j, "owner");
    if (json_is_object(owner)) /* docs/security.md */
        printf("  owner:       %s (uid %lld), account %s\n",
               json_string_value(json_object_get(owner, "user")) ?: "?",
               (long long)json_integer_value(json_object_get(owner, "uid")),
               json_string_value(json_object_get(owner, "account")) ?: "-");
    if (json_is_string(json_object_get(j, "reason")))
        printf("  reason:      %s\n", json_string_value(json_object_get(j, "reason")));
    show_quota(j);
    printf("  format:      %s\n", json_string_value(json_object_get(j, "format")));
    if (json_is_string(json_object_get(j, "submit_id")))
        printf("  submit_id:   %s\n", json_string_value(json_object_get(j, "submit_id")));
    printf("  cpus:        %lld\n", (long long)json_integer_value(json_object_get(r, "cpus")));
    printf("  memory:      %s\n",
           loom_cli_fmt_size(json_integer_value(json_object_get(r, "memory")), a));
    printf("  gpus:        %s\n", loom_cli_fmt_gpus(r, a));
    const json_t *est = json_object_get(j, "estimate");
    printf("  gpu memory:  %s%s\n",
           loom_cli_fmt_size(json_integer_value(json_object_get(r, "gpu_memory")), a),
           json_is_true(json_object_get(est, "applied")) ? " (from the model's estimate)" : "");
    if (json_is_string(json_object_get(r, "gpu_type")))
        printf("  gpu type:    %s\n", json_string_value(json_object_get(r, "gpu_type")));
    printf("  time limit:  %s\n",
           loom_cli_fmt_seconds(json_integer_value(json_object_get(j, "time_limit")), a));
    printf("  priority:    %lld\n", (long long)json_integer_value(json_object_get(j, "priority")));
    show_estimate(est);
    show_options(json_object_get(j, "options"));
    const char *k;
    json_t *v;
    json_object_foreach(json_object_get(j, "labels"), k, v)
        printf("  label:       %s=%s\n", k, json_string_value(v));
    printf("  submitted:   %s\n", loom_cli_fmt_time(json_object_get(j, "submit_time"), a));
    printf("  started:     %s\n", loom_cli_fmt_time(json_object_get(j, "start_time"), a));
    printf("  ended:       %s\n", loom_cli_fmt_time(json_object_get(j, "end_time"), a));
    show_run(json_object_get(j, "run"), usage_now);
    show_summary(json_object_get(j, "usage_summary"), json_integer_value(json_object_get(j, "id")));
    printf("  events:\n");
    size_t i;
    json_array_foreach(json_object_get(j, "events"), i, v)
    {
        const json_t *from = json_object_get(v, "from");
        const json_t *reason = json_object_get(v, "reason");
        printf("    %s  %s -> %s%s%s\n", loom_cli_fmt_time(json_object_get(v, "time"), b),
               json_is_string(from) ? json_string_value(from) : "(submitted)",
               json_string_value(json_object_get(v, "to")), json_is_string(reason) ? "  " : "",
               json_is_string(reason) ? json_string_value(reason) : "");
    }
    const char *script = json_string_value(json_object_get(j, "script"));
    printf("  script:\n");
    loom_buf_t line = LOOM_BUF_INIT, safe = LOOM_BUF_INIT;
    for (const char *p = script ? script : ""; *p;) {
        const char *nl = strchr(p, '\n');
        size_t n = nl ? (size_t)(nl - p) : strlen(p);
        loom_buf_reset(&line);
        loom_buf_append(&line, p, n);
        printf("    | %s\n", loom_cli_safe(line.data, &safe)); /* line by line, escaped */
        p += n + (nl ? 1 : 0);
    }
    loom_buf_free(&line);
    loom_buf_free(&safe);
}

/* --json, --usage, --help: 0, or 'h' or '?'. */
static int show_opts(int argc, char **argv, bool *as_json, bool *series)
{
    static const struct option opts[] = {{"json", no_argument, NULL, 'j'},
                                         {"usage", no_argument, NULL, 'u'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    *as_json = *series = false;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        if (c == 'h')
            return 'h';
        if (c != 'j' && c != 'u') {
            loom_cli_bad_option("show", c, argv[optind - 1]);
            return '?';
        }
        *(c == 'j' ? as_json : series) = true;
    }
    return 0;
}

/* loom show ID --usage: job.usage as charts (or as it is, with --json). */
static int show_usage(loom_cli_conn_t *conn, int64_t id, bool as_json)
{
    json_t *params = json_pack("{s:I}", "id", (json_int_t)id), *result = NULL;
    int rc = loom_cli_call("show", conn, "job.usage", params, LOOM_RPC_CALL_RETRY, &result);
    json_decref(params);
    loom_cli_disconnect(conn);
    if (rc)
        return rc;
    if (as_json)
        loom_cli_print_json(result);
    else {
        printf("Job %lld (%s)\n", (long long)id,
               json_string_value(json_object_get(result, "state")) ?: "?");
        loom_cli_usage_charts(result);
    }
    json_decref(result);
    return LOOM_EXIT_OK;
}

int loom_cmd_show(int argc, char **argv)
{
    bool as_json, series;
    int c = show_opts(argc, argv, &as_json, &series);
    if (c == 'h')
        usage(stdout);
    if (c)
        return c == 'h' ? LOOM_EXIT_OK : LOOM_EXIT_USAGE;
    if (optind != argc - 1) {
        fprintf(stderr, "loom show: expected exactly one job ID (see loom show --help)\n");
        return LOOM_EXIT_USAGE;
    }
    int64_t id;
    loom_err_t err;
    if (loom_parse_i64(argv[optind], 1, INT64_MAX, &id, "job ID", &err)) {
        fprintf(stderr, "loom show: %s\n", err.msg);
        return LOOM_EXIT_USAGE;
    }
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("show", &conn);
    if (rc)
        return rc;
    if (series)
        return show_usage(&conn, id, as_json);
    json_t *params = json_pack("{s:I}", "id", (json_int_t)id), *result = NULL;
    rc = loom_cli_call("show", &conn, "job.get", params, LOOM_RPC_CALL_RETRY, &result);
    json_t *usage = NULL;
    const char *state =
        rc ? NULL : json_string_value(json_object_get(json_object_get(result, "job"), "state"));
    if (!as_json && state && strcmp(state, "RUNNING") == 0) {
        /* Best effort: the job may end between the two calls. */
        json_t *p = json_pack("{s:I}", "job", (json_int_t)id);
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        if (loom_rpc_client_call(conn.client, "monitor.snapshot", p, 0, &usage, &e) != LOOM_OK)
            usage = NULL;
        loom_rpc_client_error_clear(&e);
        json_decref(p);
    }
    json_decref(params);
    loom_cli_disconnect(&conn);
    if (rc)
        return rc;
    if (as_json)
        loom_cli_print_json(json_object_get(result, "job"));
    else {
        /* every text of the job shown escaped (docs/security.md); the
         * script line by line, in show */
        json_t *job = json_object_get(result, "job");
        json_t *script = json_incref(json_object_get(job, "script"));
        job = loom_cli_safe_tree(json_incref(job));
        if (script)
            json_object_set_new(job, "script", script);
        show(job, usage);
        json_decref(job);
    }
    json_decref(usage);
    json_decref(result);
    return LOOM_EXIT_OK;
}
