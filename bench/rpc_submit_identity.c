/* bench/rpc_submit_identity: what knowing the caller costs a submission
 * (issue 19, docs/security.md). Single job.submit calls, one after another on
 * one client, against two real loomds started here (--executor none): one
 * single-user (today's default), one --multi-user (as root, with
 * --allow-root-jobs so that root may submit):
 *
 *   unix, single-user            the baseline: no identity at all
 *   unix, SO_PEERCRED            multi-user: the peer's uid and groups, once a connection
 *   tcp, token                   single-user: the bearer token
 *   tcp, MUNGE per connection    multi-user: one credential proves the connection
 *   tcp, MUNGE per request       multi-user: a new credential for every request (the
 *                                client encodes, loomd decodes with munged)
 *   and, with a new connection per request, unix single-user against
 *   unix SO_PEERCRED (where the per-connection lookup is paid every time).
 *
 * Rounds alternate the modes so that load from other work on the machine
 * falls on all of them alike. Needs root and a running munged
 * (/run/munge/munge.socket.2).
 *
 *   bench_rpc_submit_identity [--out DIR] [--loomd PATH] [--calls N] [--rounds R]
 *
 * Writes DIR/rpc_submit_identity.md (default /tmp/loom-bench; make bench: docs/bench). */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom/auth.h"
#include "loom/core.h"
#include "loom/rpc.h"
#include "notes.h"

typedef struct mode {
    const char *name;
    int daemon;     /* 0: single-user, 1: multi-user */
    bool unix_sock; /* else TCP */
    int munge;      /* 0: none (token on TCP), 1: per connection, 2: per request */
    bool newconn;   /* a new connection per request */
    /* results */
    int64_t *lat;
    long n;
    long failures;
    char first_error[256];
} mode_t_;

typedef struct daemon_ {
    pid_t pid;
    char dir[128], url[128], sock[160], token[LOOM_RPC_TOKEN_HEX + 1];
} daemon_t;

static int start_loomd(const char *exe, bool multi, daemon_t *d)
{
    snprintf(d->dir, sizeof d->dir, "/tmp/loom-bench-ident-XXXXXX");
    if (!mkdtemp(d->dir))
        return -1;
    snprintf(d->sock, sizeof d->sock, "%s-sock", d->dir);
    mkdir(d->sock, 0755);
    strcat(d->sock, "/loomd.sock");
    d->pid = fork();
    if (d->pid == 0) {
        char log[256];
        snprintf(log, sizeof log, "%s/loomd.log", d->dir);
        if (!freopen(log, "w", stderr) || !freopen("/dev/null", "w", stdout))
            _exit(127);
        if (multi)
            execl(exe, exe, "--listen", "127.0.0.1:0", "--state-dir", d->dir, "--socket", d->sock,
                  "--log-level", "warn", "--executor", "none", "--multi-user", "--allow-root-jobs",
                  (char *)NULL);
        else
            execl(exe, exe, "--listen", "127.0.0.1:0", "--state-dir", d->dir, "--socket", d->sock,
                  "--log-level", "warn", "--executor", "none", (char *)NULL);
        _exit(127);
    }
    char path[256];
    snprintf(path, sizeof path, "%s/loomd.url", d->dir);
    for (int i = 0; i < 3000; i++) {
        loom_buf_t b = LOOM_BUF_INIT;
        if (loom_buf_read_file(&b, path, NULL) == LOOM_OK && b.len > 0) {
            snprintf(d->url, sizeof d->url, "%.*s", (int)strcspn(b.data, "\n"), b.data);
            loom_buf_free(&b);
            snprintf(path, sizeof path, "%s/token", d->dir);
            if (loom_buf_read_file(&b, path, NULL) == LOOM_OK)
                snprintf(d->token, sizeof d->token, "%.*s", (int)strcspn(b.data, "\n"), b.data);
            loom_buf_free(&b);
            return 0;
        }
        loom_buf_free(&b);
        if (waitpid(d->pid, NULL, WNOHANG) == d->pid)
            return -1;
        usleep(10000);
    }
    return -1;
}

static void stop_loomd(daemon_t *d)
{
    if (d->pid > 0) {
        kill(d->pid, SIGTERM);
        waitpid(d->pid, NULL, 0);
    }
    char cmd[512];
    snprintf(cmd, sizeof cmd, "rm -rf '%s' '%s-sock'", d->dir, d->dir);
    if (system(cmd) != 0)
        fprintf(stderr, "bench: could not remove %s\n", d->dir);
}

static loom_rpc_client_t *client(const mode_t_ *m, const daemon_t *d, loom_err_t *err)
{
    loom_rpc_client_config_t cfg;
    loom_rpc_client_config_init(&cfg);
    char url[200];
    snprintf(url, sizeof url, "unix:%s", d->sock);
    cfg.url = m->unix_sock ? url : d->url;
    cfg.token = !m->unix_sock && !m->munge ? d->token : NULL;
    cfg.retries = 0;
    loom_rpc_client_t *c = NULL;
    if (loom_rpc_client_new(&cfg, &c, err))
        return NULL;
    return c;
}

static int set_munge(loom_rpc_client_t *c, loom_err_t *err)
{
    char *cred = NULL;
    if (loom_auth_munge_encode(NULL, &cred, err))
        return -1;
    loom_buf_t h = LOOM_BUF_INIT;
    loom_buf_appendf(&h, "Munge %s", cred);
    int rc = loom_rpc_client_set_authorization(c, h.data, err);
    loom_buf_free(&h);
    free(cred);
    return rc;
}

static int one_call(loom_rpc_client_t *c, const char *sid, loom_err_t *err)
{
    json_t *p = json_pack("{s:s, s:s, s:{s:i}, s:s}", "name", "bench", "script",
                          "#!/bin/sh\ntrue\n", "resources", "cpus", 1, "submit_id", sid);
    json_t *res = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    int rc = loom_rpc_client_call(c, "job.submit", p, 0, &res, &e);
    if (rc)
        snprintf(err->msg, sizeof err->msg, "%s", e.err.msg);
    loom_rpc_client_error_clear(&e);
    json_decref(res);
    json_decref(p);
    return rc;
}

/* calls requests of mode m, appending latencies. */
static void run_mode(mode_t_ *m, const daemon_t *d, long calls, int round)
{
    loom_err_t err = {0};
    loom_rpc_client_t *c = NULL;
    for (long i = 0; i < calls; i++) {
        char sid[96];
        snprintf(sid, sizeof sid, "%s-%d-%ld", m->name, round, i);
        int64_t t0 = loom_time_mono_ns();
        int rc = 0;
        if (!c && !(c = client(m, d, &err)))
            rc = -1;
        if (rc == 0 && m->munge && (m->munge == 2 || i == 0 || m->newconn))
            rc = set_munge(c, &err);
        if (rc == 0)
            rc = one_call(c, sid, &err);
        if (m->newconn) {
            loom_rpc_client_free(c);
            c = NULL;
        }
        int64_t t1 = loom_time_mono_ns();
        if (rc) {
            if (!m->failures++)
                snprintf(m->first_error, sizeof m->first_error, "%s", err.msg);
            continue;
        }
        m->lat[m->n++] = t1 - t0;
    }
    loom_rpc_client_free(c);
}

static int cmp_i64(const void *a, const void *b)
{
    int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;
    return x < y ? -1 : x > y;
}

static double pct(const int64_t *v, long n, double p)
{
    return n ? (double)v[(long)((double)(n - 1) * p)] / 1e3 : 0;
}

static void machine(char *out, size_t len)
{
    struct utsname u;
    uname(&u);
    double load[3] = {0};
    getloadavg(load, 3);
    snprintf(out, len, "%ld CPUs online, %s %s; load average at start %.2f",
             sysconf(_SC_NPROCESSORS_ONLN), u.sysname, u.release, load[0]);
}

static void report(mode_t_ *modes, int nm, long calls, int rounds, const char *mach,
                   const char *out)
{
    loom_buf_t md = LOOM_BUF_INIT;
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    loom_buf_appendf(&md,
                     "# The cost of identity in job submission\n\n"
                     "`bench_rpc_submit_identity --calls %ld --rounds %d` (built RelWithDebInfo), "
                     "%s, on %s.\n\n"
                     "Single `job.submit` calls, one after another on one client, against two "
                     "loomds (`--executor none`): single-user and `--multi-user` (root, "
                     "`--allow-root-jobs`). Rounds alternate the modes. Latency is the client's, "
                     "from before the call (and, where the mode says so, the connection and the "
                     "MUNGE encode) to the response.\n\n"
                     "| mode | calls | calls/s | p50 us | p90 us | p99 us | p50 vs baseline |\n"
                     "|---|---|---|---|---|---|---|\n",
                     calls, rounds, when, mach);
    double base = 0;
    for (int i = 0; i < nm; i++) {
        mode_t_ *m = &modes[i];
        qsort(m->lat, (size_t)m->n, sizeof *m->lat, cmp_i64);
        double sum = 0;
        for (long k = 0; k < m->n; k++)
            sum += (double)m->lat[k];
        double p50 = pct(m->lat, m->n, 0.5);
        if (i == 0)
            base = p50;
        loom_buf_appendf(&md, "| %s | %ld | %.0f | %.0f | %.0f | %.0f | %.2fx |\n", m->name, m->n,
                         sum > 0 ? (double)m->n / (sum / 1e9) : 0, p50, pct(m->lat, m->n, 0.9),
                         pct(m->lat, m->n, 0.99), base > 0 ? p50 / base : 0);
        if (m->failures)
            loom_buf_appendf(&md, "\n%s: %ld failures, first: %s\n\n", m->name, m->failures,
                             m->first_error);
    }
    fputs(md.data, stdout);
    char path[512];
    snprintf(path, sizeof path, "%s/rpc_submit_identity.md", out);
    bench_out_dir(out);
    loom_err_t err;
    if (bench_write_report(path, md.data, md.len, "## Notes", &err))
        fprintf(stderr, "bench: %s\n", err.msg);
    loom_buf_free(&md);
}

int main(int argc, char **argv)
{
    const char *out = BENCH_OUT_DEFAULT, *exe = NULL;
    long calls = 1000;
    int rounds = 3;
    static const struct option opts[] = {
        {"out", required_argument, NULL, 'o'},   {"loomd", required_argument, NULL, 'l'},
        {"calls", required_argument, NULL, 'n'}, {"rounds", required_argument, NULL, 'r'},
        {"help", no_argument, NULL, 'h'},        {NULL, 0, NULL, 0}};
    int c;
    while ((c = getopt_long(argc, argv, "h", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'l': exe = optarg; break;
        case 'n': calls = atol(optarg); break;
        case 'r': rounds = atoi(optarg); break;
        default:
            printf("usage: bench_rpc_submit_identity [--out DIR] [--loomd PATH] [--calls N] "
                   "[--rounds R]\n(needs root and munged; see the top of "
                   "bench/rpc_submit_identity.c)\n");
            return c == 'h' ? 0 : 2;
        }
    }
    if (calls < 1 || calls > 1000000 || rounds < 1 || rounds > 100) {
        fprintf(stderr, "bench: --calls 1..1000000, --rounds 1..100\n");
        return 2;
    }
    /* make bench runs every benchmark: without root or munged, say so and
     * leave the committed report alone */
    if (geteuid() != 0 || access("/run/munge/munge.socket.2", W_OK) != 0) {
        fprintf(stderr, "bench_rpc_submit_identity: skipped: needs root (a --multi-user loomd) "
                        "and a running munged\n");
        return 0;
    }
    char self[512], loomd[600];
    ssize_t k = readlink("/proc/self/exe", self, sizeof self - 1);
    self[k > 0 ? k : 0] = '\0';
    char *slash = strrchr(self, '/');
    if (slash)
        *slash = '\0';
    snprintf(loomd, sizeof loomd, "%s/loomd", self);
    if (!exe)
        exe = loomd;
    mode_t_ modes[] = {
        {.name = "unix, single-user (baseline)",
         .daemon = 0,
         .unix_sock = true,
         .munge = 0,
         .newconn = false},
        {.name = "unix, SO_PEERCRED", .daemon = 1, .unix_sock = true, .munge = 0, .newconn = false},
        {.name = "tcp, token", .daemon = 0, .unix_sock = false, .munge = 0, .newconn = false},
        {.name = "tcp, MUNGE per connection",
         .daemon = 1,
         .unix_sock = false,
         .munge = 1,
         .newconn = false},
        {.name = "tcp, MUNGE per request",
         .daemon = 1,
         .unix_sock = false,
         .munge = 2,
         .newconn = false},
        {.name = "unix, single-user, new connection per call",
         .daemon = 0,
         .unix_sock = true,
         .munge = 0,
         .newconn = true},
        {.name = "unix, SO_PEERCRED, new connection per call",
         .daemon = 1,
         .unix_sock = true,
         .munge = 0,
         .newconn = true},
    };
    int nm = (int)(sizeof modes / sizeof modes[0]);
    char mach[512];
    machine(mach, sizeof mach);
    daemon_t d[2] = {0};
    if (start_loomd(exe, false, &d[0]) || start_loomd(exe, true, &d[1])) {
        fprintf(stderr, "bench: loomd did not start (see /tmp/loom-bench-ident-*/loomd.log)\n");
        stop_loomd(&d[0]);
        stop_loomd(&d[1]);
        return 1;
    }
    for (int i = 0; i < nm; i++)
        modes[i].lat = calloc((size_t)(calls * rounds), sizeof *modes[i].lat);
    for (int r = 0; r < rounds; r++)
        for (int i = 0; i < nm; i++)
            run_mode(&modes[i], &d[modes[i].daemon], calls, r);
    stop_loomd(&d[0]);
    stop_loomd(&d[1]);
    report(modes, nm, calls, rounds, mach, out);
    int failed = 0;
    for (int i = 0; i < nm; i++) {
        failed |= modes[i].failures > 0;
        free(modes[i].lat);
    }
    return failed;
}
