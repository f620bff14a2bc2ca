/* bench/rpc_echo: the ceiling of the RPC layer alone — loom's libcurl
 * client, HTTP/1.1 keep-alive, libmicrohttpd, the JSON-RPC dispatcher — with
 * handlers that do no work, so that bench/rpc_submit (the whole stack with
 * the store) can be read against it.
 *
 *   bench_rpc_echo [--out DIR] [--calls N] [--conns C] [--batch B] [--only PHASE]
 *
 * Phases, each on C keep-alive connections (one client thread each), over
 * TCP with a bearer token and over the Unix socket:
 *   single          N calls of an immediate handler, one per request;
 *   single-deferred N calls completed by a committer thread (the group-commit
 *                   path without the disk);
 *   batch           N calls in JSON-RPC batches of B, deferred.
 * Latency is per HTTP request. A first phase, dispatch-only, runs batches
 * through loom_rpc_handle in-process (no HTTP, no client) to separate the
 * codec's cost from the transport's. Results go to stdout and
 * DIR/rpc_echo.md. */
#include <getopt.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "loom/rpc.h"
#include "notes.h"

/* ------------------------------------------------------------ server side */

static loom_rpc_status_t h_echo(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)ctx;
    loom_rpc_call_complete(call, params ? json_incref(params) : NULL);
    return LOOM_RPC_DONE;
}

typedef struct committer {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    loom_rpc_call_t **q;
    size_t n, cap;
    bool stop;
    pthread_t tid;
    long commits;
} committer_t;

static committer_t com = {.mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER};

static void *committer_main(void *arg)
{
    (void)arg;
    size_t cap = 0;
    loom_rpc_call_t **mine = NULL;
    pthread_mutex_lock(&com.mu);
    for (;;) {
        while (!com.stop && com.n == 0)
            pthread_cond_wait(&com.cv, &com.mu);
        if (com.stop && com.n == 0)
            break;
        if (cap < com.n) {
            cap = com.cap;
            mine = realloc(mine, cap * sizeof *mine);
        }
        size_t n = com.n;
        memcpy(mine, com.q, n * sizeof *mine);
        com.n = 0;
        com.commits++;
        pthread_mutex_unlock(&com.mu);
        for (size_t i = 0; i < n; i++)
            loom_rpc_call_complete(mine[i], json_pack("{s:i}", "id", (json_int_t)i));
        pthread_mutex_lock(&com.mu);
    }
    pthread_mutex_unlock(&com.mu);
    free(mine);
    return NULL;
}

static loom_rpc_status_t h_deferred(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    (void)params;
    (void)ctx;
    pthread_mutex_lock(&com.mu);
    if (com.n == com.cap) {
        com.cap = com.cap ? com.cap * 2 : 1024;
        com.q = realloc(com.q, com.cap * sizeof *com.q);
    }
    com.q[com.n++] = call;
    pthread_mutex_unlock(&com.mu);
    return LOOM_RPC_PENDING;
}

/* Once per request, after its last handler: wake the committer. */
static void on_dispatched(void *request_ctx, void *ctx)
{
    (void)request_ctx;
    (void)ctx;
    pthread_mutex_lock(&com.mu);
    if (com.n)
        pthread_cond_signal(&com.cv);
    pthread_mutex_unlock(&com.mu);
}

/* ------------------------------------------------------------ client side */

typedef struct worker {
    const char *url, *token, *method;
    int batch;
    long requests;
    int64_t *lat;
    long failures;
    char first_error[256];
} worker_t;

static void *worker_main(void *arg)
{
    worker_t *w = arg;
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    cfg.url = w->url;
    cfg.token = w->token;
    loom_rpc_client_t *c;
    loom_err_t err;
    if (loom_rpc_client_new(&cfg, &c, &err) != LOOM_OK) {
        snprintf(w->first_error, sizeof w->first_error, "%s", err.msg);
        w->failures = w->requests;
        return NULL;
    }
    json_t *params =
        json_pack("{s:s,s:s,s:{s:i,s:i}}", "name", "bench", "script",
                  "#!/bin/sh\npython train.py\n", "resources", "cpus", 2, "gpu_share", 250);
    int n = w->batch ? w->batch : 1;
    loom_rpc_batch_item_t *items = calloc((size_t)n, sizeof *items);
    for (int k = 0; k < n; k++) {
        items[k].method = w->method;
        items[k].params = params;
    }
    for (long i = 0; i < w->requests; i++) {
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        int64_t t0 = loom_time_mono_ns();
        int rc;
        if (w->batch) {
            rc = loom_rpc_client_batch(c, items, (size_t)n, 0, &e);
            for (int k = 0; rc == LOOM_OK && k < n; k++)
                if (items[k].code)
                    rc = LOOM_EINVAL;
            loom_rpc_batch_items_clear(items, (size_t)n);
        } else {
            json_t *result = NULL;
            rc = loom_rpc_client_call(c, w->method, params, 0, &result, &e);
            json_decref(result);
        }
        w->lat[i] = loom_time_mono_ns() - t0;
        if (rc != LOOM_OK && w->failures++ == 0)
            snprintf(w->first_error, sizeof w->first_error, "%s", e.err.msg);
        loom_rpc_client_error_clear(&e);
    }
    free(items);
    json_decref(params);
    loom_rpc_client_free(c);
    return NULL;
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return (x > y) - (x < y);
}

typedef struct phase_result {
    char name[64];
    char transport[8];
    long calls;
    double seconds, calls_per_s, p50_ms, p99_ms;
    double cpu_us_per_call; /* process CPU (client + server threads) per call */
    long failures;
} phase_result_t;

static double cpu_seconds(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void print_result(const phase_result_t *r)
{
    printf("%-16s %-4s %8ld calls %7.2f s %10.0f calls/s  p50 %.3f ms  p99 %.3f ms  "
           "cpu %.1f us/call  failures %ld\n",
           r->name, r->transport, r->calls, r->seconds, r->calls_per_s, r->p50_ms, r->p99_ms,
           r->cpu_us_per_call, r->failures);
    fflush(stdout);
}

static phase_result_t run_phase(const char *name, const char *transport, const char *url,
                                const char *token, const char *method, long calls, int conns,
                                int batch)
{
    int per_req = batch ? batch : 1;
    long requests_total = calls / per_req;
    worker_t *w = calloc((size_t)conns, sizeof *w);
    pthread_t *t = calloc((size_t)conns, sizeof *t);
    for (int i = 0; i < conns; i++) {
        w[i].url = url;
        w[i].token = token;
        w[i].method = method;
        w[i].batch = batch;
        w[i].requests = requests_total / conns;
        w[i].lat = calloc((size_t)w[i].requests + 1, sizeof(int64_t));
    }
    double cpu0 = cpu_seconds();
    int64_t t0 = loom_time_mono_ns();
    for (int i = 0; i < conns; i++)
        pthread_create(&t[i], NULL, worker_main, &w[i]);
    for (int i = 0; i < conns; i++)
        pthread_join(t[i], NULL);
    int64_t elapsed = loom_time_mono_ns() - t0;
    double cpu = cpu_seconds() - cpu0;
    long nreq = 0, fails = 0;
    for (int i = 0; i < conns; i++)
        nreq += w[i].requests;
    int64_t *all = calloc((size_t)nreq + 1, sizeof *all);
    long k = 0;
    for (int i = 0; i < conns; i++) {
        memcpy(all + k, w[i].lat, (size_t)w[i].requests * sizeof *all);
        k += w[i].requests;
        fails += w[i].failures;
        if (w[i].failures)
            fprintf(stderr, "%s: %ld failures, first: %s\n", name, w[i].failures, w[i].first_error);
        free(w[i].lat);
    }
    qsort(all, (size_t)nreq, sizeof *all, cmp_i64);
    phase_result_t r = {0};
    snprintf(r.name, sizeof r.name, "%s", name);
    snprintf(r.transport, sizeof r.transport, "%s", transport);
    r.calls = nreq * per_req;
    r.seconds = (double)elapsed / 1e9;
    r.calls_per_s = (double)r.calls / r.seconds;
    r.p50_ms = nreq ? (double)all[nreq / 2] / 1e6 : 0;
    r.p99_ms = nreq ? (double)all[(nreq * 99) / 100] / 1e6 : 0;
    r.failures = fails;
    r.cpu_us_per_call = r.calls ? cpu * 1e6 / (double)r.calls : 0;
    free(all);
    free(w);
    free(t);
    print_result(&r);
    return r;
}

/* The dispatcher alone, in-process: parse, dispatch, build and serialise
 * the response of a batch of `batch` echo calls, `reps` times. */
static phase_result_t run_dispatch_only(loom_rpc_dispatcher_t *d, long calls, int batch)
{
    loom_buf_t body = LOOM_BUF_INIT, out = LOOM_BUF_INIT;
    loom_buf_append_char(&body, '[');
    for (int i = 0; i < batch; i++)
        loom_buf_appendf(&body,
                         "%s{\"jsonrpc\":\"2.0\",\"method\":\"echo\",\"params\":{\"name\":"
                         "\"bench\",\"script\":\"#!/bin/sh\\npython train.py\\n\",\"resources\":"
                         "{\"cpus\":2,\"gpu_share\":250}},\"id\":%d}",
                         i ? "," : "", i);
    loom_buf_append_char(&body, ']');
    long reps = calls / batch;
    int64_t *lat = calloc((size_t)reps + 1, sizeof *lat);
    double cpu0 = cpu_seconds();
    int64_t t0 = loom_time_mono_ns();
    long fails = 0;
    for (long r = 0; r < reps; r++) {
        int64_t t = loom_time_mono_ns();
        loom_buf_reset(&out);
        if (loom_rpc_handle(d, body.data, body.len, NULL, &out) != LOOM_OK || out.len == 0)
            fails++;
        lat[r] = loom_time_mono_ns() - t;
    }
    int64_t elapsed = loom_time_mono_ns() - t0;
    double cpu = cpu_seconds() - cpu0;
    qsort(lat, (size_t)reps, sizeof *lat, cmp_i64);
    phase_result_t res = {0};
    snprintf(res.name, sizeof res.name, "dispatch-only");
    snprintf(res.transport, sizeof res.transport, "none");
    res.calls = reps * batch;
    res.seconds = (double)elapsed / 1e9;
    res.calls_per_s = (double)res.calls / res.seconds;
    res.p50_ms = (double)lat[reps / 2] / 1e6;
    res.p99_ms = (double)lat[(reps * 99) / 100] / 1e6;
    res.failures = fails;
    res.cpu_us_per_call = res.calls ? cpu * 1e6 / (double)res.calls : 0;
    print_result(&res);
    free(lat);
    loom_buf_free(&body);
    loom_buf_free(&out);
    return res;
}

int main(int argc, char **argv)
{
    const char *out = BENCH_OUT_DEFAULT;
    long calls = 40000;
    int conns = 4, batch = 100;
    const char *only = NULL; /* run one phase (for profiling); writes no file */
    static const struct option opts[] = {{"out", required_argument, NULL, 'o'},
                                         {"calls", required_argument, NULL, 'n'},
                                         {"conns", required_argument, NULL, 'c'},
                                         {"batch", required_argument, NULL, 'b'},
                                         {"only", required_argument, NULL, 'p'},
                                         {"help", no_argument, NULL, 'h'},
                                         {NULL, 0, NULL, 0}};
    int o;
    while ((o = getopt_long(argc, argv, "o:n:c:b:p:h", opts, NULL)) != -1) {
        switch (o) {
        case 'o': out = optarg; break;
        case 'n': calls = atol(optarg); break;
        case 'c': conns = atoi(optarg); break;
        case 'b': batch = atoi(optarg); break;
        case 'p': only = optarg; break;
        case 'h':
            printf("usage: bench_rpc_echo [--out DIR] [--calls N] [--conns C] [--batch B]\n"
                   "                      [--only dispatch-only|single|single-deferred|batch]\n");
            return 0;
        default: return 2;
        }
    }
    if (calls < 1 || conns < 1 || batch < 1) {
        fprintf(stderr, "bench_rpc_echo: --calls, --conns and --batch must be positive\n");
        return 2;
    }
    bench_out_dir(out);
    loom_log_set_level(LOOM_LOG_WARN);
    double load0 = 0;
    getloadavg(&load0, 1);
    char dir[] = "/tmp/loom-bench-rpc.XXXXXX";
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return 1;
    }
    char sock[128], token[LOOM_RPC_TOKEN_HEX + 1], url[64], unix_url[160];
    snprintf(sock, sizeof sock, "%s/bench.sock", dir);
    snprintf(unix_url, sizeof unix_url, "unix:%s", sock);
    loom_err_t err;
    loom_rpc_dispatcher_t *d;
    loom_rpc_server_t *s;
    if (loom_rpc_token_ensure(dir, token, &err) != LOOM_OK ||
        loom_rpc_dispatcher_new(NULL, &d, &err) != LOOM_OK ||
        loom_rpc_dispatcher_add(d, "echo", h_echo, NULL, NULL, 0, &err) != LOOM_OK ||
        loom_rpc_dispatcher_add(d, "deferred", h_deferred, NULL, NULL, 0, &err) != LOOM_OK) {
        fprintf(stderr, "bench_rpc_echo: %s\n", err.msg);
        return 1;
    }
    loom_rpc_dispatcher_on_dispatched(d, on_dispatched, NULL);
    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    cfg.listen = "127.0.0.1:0";
    cfg.socket_path = sock;
    cfg.token = token;
    if (loom_rpc_server_start(&cfg, d, &s, &err) != LOOM_OK) {
        fprintf(stderr, "bench_rpc_echo: %s\n", err.msg);
        return 1;
    }
    snprintf(url, sizeof url, "http://127.0.0.1:%u", loom_rpc_server_port(s));
    pthread_create(&com.tid, NULL, committer_main, NULL);

    phase_result_t r[7];
    int nr = 0;
#define WANT(p) (!only || strcmp(only, p) == 0)
    if (WANT("dispatch-only"))
        r[nr++] = run_dispatch_only(d, calls * 10, batch);
    if (WANT("single"))
        r[nr++] = run_phase("single", "tcp", url, token, "echo", calls, conns, 0);
    if (WANT("single-deferred"))
        r[nr++] = run_phase("single-deferred", "tcp", url, token, "deferred", calls, conns, 0);
    if (WANT("batch"))
        r[nr++] = run_phase("batch", "tcp", url, token, "deferred", calls * 10, conns, batch);
    if (WANT("single"))
        r[nr++] = run_phase("single", "unix", unix_url, NULL, "echo", calls, conns, 0);
    if (WANT("single-deferred"))
        r[nr++] = run_phase("single-deferred", "unix", unix_url, NULL, "deferred", calls, conns, 0);
    if (WANT("batch"))
        r[nr++] = run_phase("batch", "unix", unix_url, NULL, "deferred", calls * 10, conns, batch);
#undef WANT

    loom_rpc_server_stop(s);
    pthread_mutex_lock(&com.mu);
    com.stop = true;
    pthread_cond_signal(&com.cv);
    pthread_mutex_unlock(&com.mu);
    pthread_join(com.tid, NULL);
    free(com.q);
    loom_rpc_dispatcher_free(d);
    char tokpath[160];
    snprintf(tokpath, sizeof tokpath, "%s/token", dir);
    unlink(tokpath);
    rmdir(dir);

    long fails = 0;
    for (int i = 0; i < nr; i++)
        fails += r[i].failures;
    if (only)
        return fails ? 1 : 0;
    char path[512];
    snprintf(path, sizeof path, "%s/rpc_echo.md", out);
    FILE *f = fopen(path, "w");
    if (!f) {
        perror(path);
        return 1;
    }
    struct utsname u;
    uname(&u);
    char date[32];
    time_t now = time(NULL);
    strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", gmtime(&now));
    long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
    fprintf(
        f,
        "# bench_rpc_echo — the RPC layer alone\n\n"
        "Client (libcurl, keep-alive) → HTTP/1.1 → libmicrohttpd (thread per connection) → "
        "JSON-RPC dispatcher → a handler that does no work (`echo`), or one whose calls a "
        "committer thread completes (`deferred`: the group-commit path without a disk). "
        "The ceiling against which `rpc_submit` (with the store) can be read. Latency is per "
        "HTTP request (a whole batch for `batch`); `dispatch-only` is the dispatcher in-process "
        "(a batch through `loom_rpc_handle`, no HTTP, no client).\n\n"
        "- command: `build/bench_rpc_echo --calls %ld --conns %d --batch %d` "
        "(batch phases send 10x the calls)\n"
        "- machine: %s %s, %ld CPUs, load average %.2f at the start (client and server share "
        "the machine)\n- date: %s\n- build: the plain `make` build (RelWithDebInfo)\n\n"
        "`cpu us/call` is the process's CPU time (client and server threads together, all "
        "cores) per call: unlike calls/s it hardly depends on what else the machine runs. "
        "`dispatch-only` runs on one thread, so on a loaded machine its calls/s shows the "
        "share of one core it got, not the dispatcher's speed.\n\n"
        "| phase | transport | calls | seconds | calls/s | p50 ms | p99 ms | cpu us/call | "
        "failures |\n"
        "|---|---|---:|---:|---:|---:|---:|---:|---:|\n",
        calls, conns, batch, u.sysname, u.machine, ncpu, load0, date);
    for (int i = 0; i < nr; i++)
        fprintf(f, "| %s | %s | %ld | %.2f | %.0f | %.3f | %.3f | %.1f | %ld |\n", r[i].name,
                r[i].transport, r[i].calls, r[i].seconds, r[i].calls_per_s, r[i].p50_ms,
                r[i].p99_ms, r[i].cpu_us_per_call, r[i].failures);
    fclose(f);
    printf("wrote %s\n", path);
    return fails ? 1 : 0;
}
