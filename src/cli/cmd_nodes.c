/* loom nodes: the cluster model as loomd's scheduler sees it (node.list). */
#include <getopt.h>
#include <stdio.h>

#include "cli/cli.h"
#include "cli/client.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom nodes [--json]\n\nLists the nodes of loomd's cluster model: CPUs, "
               "memory and GPUs, what is free,\nand the jobs running on each. A GPU's free share "
               "is in GPUs (0.5 = half a GPU).\n");
}

int loom_cmd_nodes(int argc, char **argv)
{
    bool as_json;
    json_t *r;
    char url[4200];
    int rc = loom_cli_simple_call(argc, argv, "nodes", usage, "node.list", &as_json, &r, url,
                                  sizeof url);
    if (rc || !r)
        return rc;
    if (as_json) {
        loom_cli_print_json(r);
        json_decref(r);
        return LOOM_EXIT_OK;
    }
    printf("%-20s %11s %19s %-10s %-24s %s\n", "NODE", "CPUS FREE", "MEMORY FREE", "GPU TYPE",
           "GPUS FREE", "JOBS");
    size_t i;
    json_t *n;
    json_array_foreach(json_object_get(r, "nodes"), i, n)
    {
        char mem[32], memfree[32], cpus[32], gpus[128] = "-", jobs[256] = "";
        snprintf(cpus, sizeof cpus, "%.1f/%.1f",
                 json_integer_value(json_object_get(n, "cpu_free_milli")) / 1000.0,
                 json_integer_value(json_object_get(n, "cpu_milli")) / 1000.0);
        loom_format_size((uint64_t)json_integer_value(json_object_get(n, "memory_free_bytes")),
                         memfree, sizeof memfree);
        loom_format_size((uint64_t)json_integer_value(json_object_get(n, "memory_bytes")), mem,
                         sizeof mem);
        char memcol[72];
        snprintf(memcol, sizeof memcol, "%s/%s", memfree, mem);
        size_t g, len = 0;
        json_t *gpu;
        json_array_foreach(json_object_get(n, "gpus"), g, gpu)
        {
            len +=
                (size_t)snprintf(gpus + len, sizeof gpus - len, "%s%.2g", g ? " " : "",
                                 json_integer_value(json_object_get(gpu, "free_milli")) / 1000.0);
            if (len >= sizeof gpus)
                break;
        }
        size_t k, jl = 0;
        json_t *id;
        json_array_foreach(json_object_get(n, "jobs"), k, id)
        {
            jl += (size_t)snprintf(jobs + jl, sizeof jobs - jl, "%s%lld", k ? "," : "",
                                   (long long)json_integer_value(id));
            if (jl >= sizeof jobs)
                break;
        }
        const char *type = json_string_value(json_object_get(n, "gpu_type"));
        printf("%-20s %11s %19s %-10s %-24s %s\n", json_string_value(json_object_get(n, "name")),
               cpus, memcol, type ? type : "-", gpus, jl ? jobs : "-");
    }
    json_decref(r);
    return LOOM_EXIT_OK;
}
