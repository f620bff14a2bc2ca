/* Fuzz sim's trace readers: node list CSV, pod list CSV and JSONL
 * manifests. No crash, no UB, no leak; on error nothing is appended and the
 * message names the input; on success every task is a valid request. */
#include <stdlib.h>
#include <string.h>

#include "loom/sim.h"

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_err_t err;
    const char *text = (const char *)data;
    /* a fixed cluster so that GPU types resolve */
    static const char nodes[] = "sn,cpu_milli,memory_mib,gpu,model\nn0,8000,1024,2,T4\n";
    if (loom_sim_nodes_parse_csv(nodes, sizeof nodes - 1, "n.csv", &c, NULL) != LOOM_OK)
        abort();
    size_t before = c.nnodes;
    if (loom_sim_nodes_parse_csv(text, size, "f.csv", &c, &err) != LOOM_OK) {
        if (c.nnodes != before || strncmp(err.msg, "f.csv", 5) != 0)
            abort();
    }
    loom_sim_trace_t t = {0};
    if (loom_sim_pods_parse_csv(text, size, "p.csv", &c, &t, &err) != LOOM_OK) {
        if (t.n != 0 || strncmp(err.msg, "p.csv", 5) != 0)
            abort();
    }
    size_t n_csv = t.n;
    if (loom_sim_jsonl_parse(text, size, "j.jsonl", &c, &t, &err) != LOOM_OK) {
        if (t.n != n_csv || strncmp(err.msg, "j.jsonl", 7) != 0)
            abort();
    }
    for (size_t i = 0; i < t.n; i++)
        if (loom_sched_req_validate(&t.tasks[i].req, NULL) != LOOM_OK)
            abort();
    loom_sim_trace_free(&t);
    loom_sched_cluster_free(&c);
    return 0;
}
