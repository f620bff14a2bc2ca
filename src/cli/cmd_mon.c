/* loom mon: hardware metrics now, or every --interval. A thin shell over
 * libloom's mon part (include/loom/mon.h): parse options, read, render. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "loom/mon.h"

static void mon_usage(FILE *f)
{
    fprintf(f, "usage: loom mon [--json|--prom] [--interval D [--count N]] [--groups LIST]\n"
               "                [--pid PID [--tree] | --cgroup PATH]\n\n"
               "Reads hardware metrics now (CPU, memory, disks, network, filesystems, RAPL\n"
               "energy, temperatures, NVIDIA GPUs through NVML) and prints them.\n\n"
               "  --json          one JSON object per reading (one line each)\n"
               "  --prom          Prometheus text exposition (with --pid/--cgroup: the\n"
               "                  loom_job_* families, job_id = the pid or path)\n"
               "  --interval D    read every D (\"1s\", \"500ms\"); rates between readings\n"
               "  --count N       number of readings (default 1, or unlimited with --interval)\n"
               "  --groups LIST   cpu,memory,disk,net,fs,power,thermal,gpu | host | all\n"
               "                  (default all)\n"
               "  --pid PID       one process instead of the host; --tree adds descendants\n"
               "  --cgroup PATH   a cgroup v2 directory (absolute or under the cgroup2 mount)\n"
               "  -h, --help      this help\n\n"
               "See docs/monitoring.md for every field and its source.\n");
}

static volatile sig_atomic_t stop;
static void on_signal(int sig)
{
    (void)sig, stop = 1;
}

typedef struct mon_opts {
    enum { OUT_TEXT, OUT_JSON, OUT_PROM } out;
    int64_t interval_ns;
    long count;
    unsigned groups;
    int pid;
    bool tree;
    const char *cgroup;
} mon_opts_t;

/* Prints one reading of a pid or cgroup. */
static int read_one_target(loom_mon_t *m, const mon_opts_t *o, loom_buf_t *b, loom_err_t *e)
{
    if (o->pid) {
        loom_mon_proc_t p;
        int rc = loom_mon_proc_read(m, o->pid, o->tree, &p, e);
        if (rc)
            return rc;
        char id[32];
        snprintf(id, sizeof id, "%d", o->pid);
        const char *ids[1] = {id};
        return o->out == OUT_JSON   ? loom_mon_proc_to_json(&p, b, e)
               : o->out == OUT_PROM ? loom_mon_procs_to_prom(&p, ids, 1, b, e)
                                    : loom_mon_proc_to_text(&p, b, e);
    }
    loom_mon_cgroup_t c;
    int rc = loom_mon_cgroup_read(m, o->cgroup, &c, e);
    if (rc)
        return rc;
    const char *ids[1] = {o->cgroup};
    return o->out == OUT_JSON   ? loom_mon_cgroup_to_json(&c, b, e)
           : o->out == OUT_PROM ? loom_mon_cgroups_to_prom(&c, ids, 1, b, e)
                                : loom_mon_cgroup_to_text(&c, b, e);
}

static int run(loom_mon_t *m, const mon_opts_t *o)
{
    loom_err_t e = {0};
    loom_buf_t b = LOOM_BUF_INIT;
    loom_mon_sampler_t *s = NULL;
    int rc = LOOM_OK;
    bool target = o->pid || o->cgroup;
    if (!target && (rc = loom_mon_sampler_open(&s, m, o->groups, &e)))
        goto out;
    int64_t next = loom_time_mono_ns();
    for (long i = 0; (o->count == 0 || i < o->count) && !stop; i++) {
        if (i > 0) {
            next += o->interval_ns;
            loom_time_sleep_until_ns(next);
            if (stop)
                break;
        }
        loom_buf_reset(&b);
        if (target) {
            rc = read_one_target(m, o, &b, &e);
        } else {
            /* The sampler's first reading is taken at open; later ones give rates. */
            if (i > 0 && (rc = loom_mon_sampler_next(s, &e)))
                goto out;
            const loom_mon_snapshot_t *snap = loom_mon_sampler_snapshot(s);
            const loom_mon_rates_t *r = i > 0 ? loom_mon_sampler_rates(s) : NULL;
            if (o->out == OUT_JSON)
                rc = loom_mon_to_json(snap, r, &b, &e);
            else if (o->out == OUT_PROM)
                rc = loom_mon_to_prom(snap, &b, &e);
            else
                rc = loom_mon_to_text(snap, r, &b, &e);
        }
        if (rc)
            goto out;
        fputs(b.data ? b.data : "", stdout);
        if (o->out == OUT_JSON)
            fputc('\n', stdout);
        else if (o->out == OUT_TEXT && (o->count != 1))
            fputc('\n', stdout);
        fflush(stdout);
    }
out:
    if (rc)
        fprintf(stderr, "loom mon: %s\n", e.msg);
    loom_mon_sampler_close(s);
    loom_buf_free(&b);
    if (rc == LOOM_ENOTFOUND)
        return LOOM_EXIT_NOTFOUND;
    return rc ? LOOM_EXIT_FAILURE : LOOM_EXIT_OK;
}

int loom_cmd_mon(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},           {"prom", no_argument, NULL, 'P'},
        {"interval", required_argument, NULL, 'i'}, {"count", required_argument, NULL, 'n'},
        {"groups", required_argument, NULL, 'g'},   {"pid", required_argument, NULL, 'p'},
        {"tree", no_argument, NULL, 't'},           {"cgroup", required_argument, NULL, 'c'},
        {"help", no_argument, NULL, 'h'},           {NULL, 0, NULL, 0},
    };
    mon_opts_t o = {.out = OUT_TEXT, .count = -1, .groups = LOOM_MON_ALL};
    loom_err_t e = {0};
    int64_t v;
    int c;
    while ((c = getopt_long(argc, argv, ":h", opts, NULL)) != -1) {
        switch (c) {
        case 'j': o.out = OUT_JSON; break;
        case 'P': o.out = OUT_PROM; break;
        case 'i':
            if (loom_parse_duration(optarg, &o.interval_ns, &e) || o.interval_ns <= 0) {
                fprintf(stderr, "loom mon: --interval %s: %s\n", optarg,
                        e.msg[0] ? e.msg : "expected a positive duration");
                return LOOM_EXIT_USAGE;
            }
            break;
        case 'n':
            if (loom_parse_i64(optarg, 1, INT32_MAX, &v, "--count", &e)) {
                fprintf(stderr, "loom mon: %s\n", e.msg);
                return LOOM_EXIT_USAGE;
            }
            o.count = (long)v;
            break;
        case 'g':
            if (loom_mon_parse_groups(optarg, &o.groups, &e)) {
                fprintf(stderr, "loom mon: --groups: %s\n", e.msg);
                return LOOM_EXIT_USAGE;
            }
            break;
        case 'p':
            if (loom_parse_i64(optarg, 1, INT32_MAX, &v, "--pid", &e)) {
                fprintf(stderr, "loom mon: %s\n", e.msg);
                return LOOM_EXIT_USAGE;
            }
            o.pid = (int)v;
            break;
        case 't': o.tree = true; break;
        case 'c': o.cgroup = optarg; break;
        case 'h': mon_usage(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("mon", c, argv[optind - 1]);
        }
    }
    const char *bad = NULL;
    if (optind < argc)
        bad = "unexpected argument";
    else if (o.pid && o.cgroup)
        bad = "--pid and --cgroup exclude each other";
    else if (o.tree && !o.pid)
        bad = "--tree needs --pid";
    else if (o.count > 1 && o.interval_ns == 0)
        bad = "--count above 1 needs --interval";
    if (bad) {
        fprintf(stderr, "loom mon: %s (see 'loom mon --help')\n", bad);
        return LOOM_EXIT_USAGE;
    }
    if (o.count < 0)
        o.count = o.interval_ns ? 0 : 1;
    loom_mon_t *m;
    if (loom_mon_open(&m, NULL, &e)) {
        fprintf(stderr, "loom mon: %s\n", e.msg);
        return LOOM_EXIT_FAILURE;
    }
    signal(SIGINT, on_signal);
    signal(SIGTERM, on_signal);
    int rc = run(m, &o);
    loom_mon_close(m);
    return rc;
}
