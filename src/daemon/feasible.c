/* Submission-time feasibility: a request that no node of the cluster could
 * ever hold, even empty (more GPUs, CPUs, memory or GPU memory than the
 * largest node has, or a GPU type nobody has), is refused at job.submit
 * with a message that names the resource, the request and the largest
 * node's capacity, rather than accepted to wait forever. Nodes that are
 * down count: they may come back. A job submitted with options.hold is
 * kept (docs/protocol.md, job.submit), for a cluster that will grow. */
#include <stdio.h>
#include <string.h>

#include "daemon/feasible.h"

typedef struct need {
    const char *what;   /* resources.NAME */
    int64_t request;    /* in the unit below */
    const char *member; /* node.list's member giving the capacity */
    int64_t scale;      /* capacity / scale = request's unit */
    const char *unit;
} need_t;

static int64_t capacity(const json_t *node, const need_t *n)
{
    return json_integer_value(json_object_get(node, n->member)) / n->scale;
}

static bool type_matches(const json_t *node, const char *type)
{
    const char *t = json_string_value(json_object_get(node, "gpu_type"));
    return !type || (t && strcmp(t, type) == 0);
}

/* The node that comes closest on n (the largest), among those of the type. */
static const json_t *largest(const json_t *nodes, const need_t *n, const char *type)
{
    const json_t *best = NULL, *node;
    size_t i;
    json_array_foreach(nodes, i, node)
    {
        if (type_matches(node, type) && (!best || capacity(node, n) > capacity(best, n)))
            best = node;
    }
    return best;
}

static bool fits(const json_t *node, const need_t *needs, size_t nneeds, const char *type)
{
    if (!type_matches(node, type))
        return false;
    for (size_t k = 0; k < nneeds; k++)
        if (needs[k].request > 0 && capacity(node, &needs[k]) < needs[k].request &&
            !(strcmp(needs[k].member, "gpu_memory_bytes") == 0 && capacity(node, &needs[k]) == 0))
            return false;
    return true;
}

int loomd_feasible(const json_t *nodes, const loom_job_spec_t *s, loom_err_t *err, json_t **data)
{
    *data = NULL;
    if (json_array_size(nodes) == 0)
        return LOOM_OK;
    bool gpu_job = s->gpus > 0 || s->gpu_share_milli > 0;
    const char *type = gpu_job ? s->gpu_type : NULL;
    need_t needs[] = {
        {"resources.gpus", s->gpus > 0 ? s->gpus : s->gpu_share_milli > 0, "gpu_count", 1, "GPUs"},
        {"resources.cpus", s->cpus, "cpu_milli", 1000, "CPUs"},
        {"resources.memory", (int64_t)(s->memory_bytes >> 20), "memory_bytes", 1 << 20, "MiB"},
        {"resources.gpu_memory", gpu_job ? (int64_t)(s->gpu_memory_bytes >> 20) : 0,
         "gpu_memory_bytes", 1 << 20, "MiB per GPU"},
    };
    size_t nneeds = sizeof needs / sizeof needs[0];
    size_t i;
    const json_t *node;
    json_array_foreach(nodes, i, node)
    {
        if (fits(node, needs, nneeds, type))
            return LOOM_OK;
    }
    if (type && !largest(nodes, &needs[0], type)) {
        *data = json_pack("{s:s, s:s}", "resource", "resources.gpu_type", "requested", type);
        return loom_err_set(err, LOOM_ELIMIT,
                            "resources.gpu_type: no node has GPUs of type '%.64s'", type);
    }
    for (size_t k = 0; k < nneeds; k++) {
        const json_t *big = largest(nodes, &needs[k], type);
        if (needs[k].request <= 0 || capacity(big, &needs[k]) >= needs[k].request)
            continue;
        if (strcmp(needs[k].member, "gpu_memory_bytes") == 0 && capacity(big, &needs[k]) == 0)
            continue; /* GPU memory not tracked here */
        const char *name = json_string_value(json_object_get(big, "name"));
        *data = json_pack("{s:s, s:I, s:I, s:s}", "resource", needs[k].what, "requested",
                          (json_int_t)needs[k].request, "largest",
                          (json_int_t)capacity(big, &needs[k]), "node", name ? name : "");
        return loom_err_set(
            err, LOOM_ELIMIT, "%s: %lld %s requested%s%s, but the largest node (%s) has %lld",
            needs[k].what, (long long)needs[k].request, needs[k].unit, type ? " of type " : "",
            type ? type : "", name ? name : "?", (long long)capacity(big, &needs[k]));
    }
    *data = json_pack("{s:s}", "resource", "resources");
    return loom_err_set(err, LOOM_ELIMIT,
                        "resources: no node has all of %lld CPUs, %lld GPUs%s%s and %lld MiB "
                        "together, though each fits some node",
                        (long long)s->cpus, (long long)needs[0].request, type ? " of type " : "",
                        type ? type : "", (long long)needs[2].request);
}
