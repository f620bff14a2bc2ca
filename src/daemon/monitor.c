/* loomd's monitoring surfaces: monitor.snapshot and /metrics, read through
 * libloom's mon part at the moment they are asked for. One collector (it
 * keeps /proc and /sys files open) is shared under a mutex: a collector is
 * not thread-safe, and requests arrive on the server's threads.
 *
 * Utilisations (CPU busy fractions, disk and network rates) need two
 * readings: monitor.snapshot keeps its last reading and gives rates over the
 * interval since it, so that a dashboard polling every few seconds sees the
 * CPU busy, not a one-shot reading without rates (always "0%" before). */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/monitor.h"
#include "loom/mon.h"

/* A running job's process tree, read by a tree reader kept from one
 * /metrics scrape to the next: the reader knows the members and only looks
 * for new ones, instead of walking /proc for every job at every scrape, and
 * its CPU seconds include reaped children, so the counters never go back. */
typedef struct job_tree {
    int64_t id;
    pid_t pid;
    loom_mon_tree_t *tree;
    bool seen; /* running at this scrape */
} job_tree_t;

struct loomd_monitor {
    loom_mon_t *mon;
    pthread_mutex_t mu;
    loom_store_t *store;
    loomd_runner_t *runner;
    job_tree_t *trees; /* under mu */
    size_t ntrees, cap;
    loom_mon_snapshot_t last; /* under mu: the reading rates are taken against */
    bool have_last;
};

/* Readings closer together than this give no rates (CPU tick counters move
 * every 10 ms; a short interval is mostly rounding) and do not replace the
 * last one. */
#define RATES_MIN_NS (1000LL * 1000 * 1000)

int loomd_monitor_open(loom_store_t *store, loomd_runner_t *runner, loomd_monitor_t **out,
                       loom_err_t *err)
{
    loomd_monitor_t *m = calloc(1, sizeof *m);
    if (!m)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    int rc = loom_mon_open(&m->mon, NULL, err);
    if (rc != LOOM_OK) {
        free(m);
        return loom_err_prefix(err, "monitoring");
    }
    pthread_mutex_init(&m->mu, NULL);
    loom_mon_snapshot_init(&m->last);
    m->store = store;
    m->runner = runner;
    *out = m;
    return LOOM_OK;
}

void loomd_monitor_close(loomd_monitor_t *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->ntrees; i++)
        loom_mon_tree_close(m->trees[i].tree);
    free(m->trees);
    loom_mon_snapshot_free(&m->last);
    loom_mon_close(m->mon);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

/* Adds the process tree (and cgroup) of a running job to res. */
static int job_usage(loomd_monitor_t *m, int64_t id, json_t *res, loom_err_t *err)
{
    loom_job_t job;
    int rc = loom_store_get(m->store, id, &job, err);
    if (rc != LOOM_OK)
        return rc;
    json_t *run = job.run_json ? json_loads(job.run_json, 0, NULL) : NULL;
    pid_t pid = (pid_t)json_integer_value(json_object_get(run, "shepherd_pid"));
    const char *cg = json_string_value(json_object_get(run, "cgroup"));
    if (job.state != LOOM_JOB_RUNNING || pid <= 0) {
        rc = loom_err_set(err, LOOM_ESTATE, "job %lld is %s: its usage is in run.outcome",
                          (long long)id, loom_job_state_name(job.state));
        goto out;
    }
    loom_buf_t b = LOOM_BUF_INIT;
    loom_mon_proc_t p;
    pthread_mutex_lock(&m->mu);
    rc = loom_mon_proc_read(m->mon, pid, true, &p, err);
    if (rc == LOOM_OK)
        rc = loom_mon_proc_to_json(&p, &b, err);
    if (rc == LOOM_OK) {
        json_object_set_new(res, "process", json_loadb(b.data, b.len, 0, NULL));
        if (cg && *cg) {
            loom_mon_cgroup_t c;
            loom_buf_reset(&b);
            if (loom_mon_cgroup_read(m->mon, cg, &c, NULL) == LOOM_OK &&
                loom_mon_cgroup_to_json(&c, &b, NULL) == LOOM_OK)
                json_object_set_new(res, "cgroup", json_loadb(b.data, b.len, 0, NULL));
        }
    }
    pthread_mutex_unlock(&m->mu);
    loom_buf_free(&b);
    if (rc == LOOM_ENOTFOUND)
        rc = loom_err_set(err, LOOM_ESTATE, "job %lld has just ended", (long long)id);
out:
    json_decref(run);
    loom_job_free(&job);
    return rc;
}

static loom_rpc_status_t m_snapshot(loom_rpc_call_t *call, json_t *params, void *ctx)
{
    loomd_monitor_t *m = ctx;
    loom_err_t err;
    const char *groups_text = "all";
    json_t *jid = params ? json_object_get(params, "job") : NULL;
    if (params && loom_json_get_string(params, "groups", false, "", &groups_text, &err)) {
        loom_rpc_call_invalid_param(call, "groups", "a string such as \"cpu,memory\" or \"all\"",
                                    json_object_get(params, "groups"));
        return LOOM_RPC_DONE;
    }
    if (jid && (!json_is_integer(jid) || json_integer_value(jid) < 1)) {
        loom_rpc_call_invalid_param(call, "job", "a positive integer job id", jid);
        return LOOM_RPC_DONE;
    }
    json_t *res = json_object();
    if (jid) {
        json_object_set_new(res, "job", json_integer(json_integer_value(jid)));
        int rc = job_usage(m, json_integer_value(jid), res, &err);
        if (rc != LOOM_OK) {
            json_decref(res);
            loom_rpc_call_fail(call, rc == LOOM_ENOTFOUND ? -32001 : -32002, err.msg, NULL);
            return LOOM_RPC_DONE;
        }
        loom_rpc_call_complete(call, res);
        return LOOM_RPC_DONE;
    }
    unsigned groups;
    if (loom_mon_parse_groups(groups_text, &groups, &err) != LOOM_OK) {
        json_decref(res);
        loom_rpc_call_failf(call, LOOM_RPC_INVALID_PARAMS, NULL, "Invalid params: groups: %s",
                            err.msg);
        return LOOM_RPC_DONE;
    }
    loom_mon_snapshot_t snap;
    loom_mon_snapshot_init(&snap);
    loom_mon_rates_t rates;
    loom_mon_rates_init(&rates);
    bool have_rates = false;
    loom_buf_t b = LOOM_BUF_INIT;
    pthread_mutex_lock(&m->mu);
    int rc = loom_mon_read(m->mon, groups, &snap, &err);
    if (rc == LOOM_OK && m->have_last && snap.mono_ns - m->last.mono_ns >= RATES_MIN_NS)
        have_rates = loom_mon_rates(&m->last, &snap, &rates, &err) == LOOM_OK;
    /* A reading of fewer groups (a caller asking for memory only) does not
     * replace a fuller last one unless that is a minute old. */
    int64_t age = m->have_last ? snap.mono_ns - m->last.mono_ns : 0;
    if (rc == LOOM_OK && (!m->have_last || (age >= RATES_MIN_NS &&
                                            ((snap.groups & m->last.groups) == m->last.groups ||
                                             age >= 60 * RATES_MIN_NS))))
        m->have_last = loom_mon_snapshot_copy(&m->last, &snap, &err) == LOOM_OK;
    pthread_mutex_unlock(&m->mu);
    if (rc == LOOM_OK)
        rc = loom_mon_to_json(&snap, have_rates ? &rates : NULL, &b, &err);
    if (rc == LOOM_OK && have_rates)
        json_object_set_new(res, "rates_interval_seconds", json_real(rates.interval_seconds));
    loom_mon_rates_free(&rates);
    loom_mon_snapshot_free(&snap);
    json_t *s = rc == LOOM_OK ? json_loadb(b.data, b.len, 0, NULL) : NULL;
    loom_buf_free(&b);
    if (!s) {
        json_decref(res);
        loom_rpc_call_fail(call, LOOM_RPC_INTERNAL_ERROR, rc ? err.msg : "out of memory", NULL);
        return LOOM_RPC_DONE;
    }
    json_object_set_new(res, "snapshot", s);
    loom_rpc_call_complete(call, res);
    return LOOM_RPC_DONE;
}

int loomd_monitor_add_methods(loom_rpc_dispatcher_t *d, loomd_monitor_t *m, loom_err_t *err)
{
    static const char *const params[] = {"groups", "job", NULL};
    return loom_rpc_dispatcher_add(d, "monitor.snapshot", m_snapshot, m, params,
                                   LOOM_RPC_STRICT_PARAMS, err);
}

/* The tree reader of job id (shepherd pid), opened on first use; NULL if
 * the process is gone or memory ran out. m->mu held. */
static loom_mon_tree_t *job_tree(loomd_monitor_t *m, int64_t id, pid_t pid)
{
    for (size_t i = 0; i < m->ntrees; i++)
        if (m->trees[i].id == id && m->trees[i].pid == pid) {
            m->trees[i].seen = true;
            return m->trees[i].tree;
        }
    if (loom_vec_reserve((void **)&m->trees, &m->cap, m->ntrees + 1, sizeof *m->trees, 16))
        return NULL;
    loom_mon_tree_opts_t o = {.details = true};
    loom_mon_tree_t *tree;
    loom_err_t err;
    if (loom_mon_tree_open(&tree, m->mon, pid, &o, &err) != LOOM_OK)
        return NULL;
    m->trees[m->ntrees++] = (job_tree_t){.id = id, .pid = pid, .tree = tree, .seen = true};
    return tree;
}

/* Closes the readers of jobs that were not running at this scrape. */
static void drop_unseen_trees(loomd_monitor_t *m)
{
    size_t k = 0;
    for (size_t i = 0; i < m->ntrees; i++) {
        if (!m->trees[i].seen) {
            loom_mon_tree_close(m->trees[i].tree);
            continue;
        }
        m->trees[i].seen = false;
        m->trees[k++] = m->trees[i];
    }
    m->ntrees = k;
}

int loomd_monitor_metrics(loom_buf_t *out, void *ctx)
{
    loomd_monitor_t *m = ctx;
    loom_err_t err;
    pthread_mutex_lock(&m->mu);
    int rc = loom_mon_read_prom(m->mon, LOOM_MON_ALL, out, &err);
    if (rc == LOOM_OK && m->runner) {
        enum { MAX = 4096 };
        int64_t *ids = malloc(MAX * sizeof *ids);
        pid_t *pids = malloc(MAX * sizeof *pids);
        loom_mon_proc_t *procs = malloc(MAX * sizeof *procs);
        char(*names)[24] = malloc(MAX * sizeof *names);
        const char **labels = malloc(MAX * sizeof *labels);
        size_t n = ids && pids && procs && names && labels
                       ? loomd_runner_running(m->runner, ids, pids, MAX)
                       : 0;
        size_t k = 0;
        for (size_t i = 0; i < n; i++) {
            loom_mon_tree_t *tree = job_tree(m, ids[i], pids[i]);
            if (!tree || loom_mon_tree_read(tree, &procs[k], NULL) != LOOM_OK ||
                procs[k].n_processes == 0)
                continue; /* ended between the two reads */
            snprintf(names[k], sizeof names[k], "%lld", (long long)ids[i]);
            labels[k] = names[k];
            k++;
        }
        if (ids && pids && procs && names && labels)
            drop_unseen_trees(m);
        if (k)
            rc = loom_mon_procs_to_prom(procs, labels, k, out, &err);
        free(ids);
        free(pids);
        free(procs);
        free(names);
        free(labels);
    }
    pthread_mutex_unlock(&m->mu);
    return rc;
}
