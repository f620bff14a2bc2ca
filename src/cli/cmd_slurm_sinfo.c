/* loom sinfo: loomd's nodes (node.list) as Slurm 22.05's sinfo prints
 * them: one partition (loom's, the default, "loom*"), by default one row
 * per node state with the nodes as a hostlist ("loom[1-4]"), with -N one
 * row per node; -o takes sinfo's format letters. docs/slurm.md. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"
#include "loom/slurmfmt.h"

#define LETTERS "PRaltTDNcmGCsEhg"
/* sinfo's "%#P": as wide as the longest name, at least 9 */
#define MIN_NAME_WIDTH 9

static void usage(FILE *f)
{
    fprintf(f, "usage: loom sinfo [-N] [-o FORMAT] [-h] [-p PARTITION]\n\n"
               "loomd's nodes as Slurm's sinfo prints them (docs/slurm.md). loom has one\n"
               "partition, '" LOOM_CLI_PARTITION "' (the default, shown with '*').\n\n"
               "  -N, --Node          one row per node (default: one per node state)\n"
               "  -o, --format F      columns as sinfo's: %%[.][WIDTH]X, '.' right-justifies;\n"
               "                      X: P partition, R partition without '*', a available,\n"
               "                      l time limit, D nodes, t state, T state in full, N node\n"
               "                      list, c CPUs, m memory (MB), G gres, C CPUs\n"
               "                      allocated/idle/other/total, s job size, h oversubscribe,\n"
               "                      g groups, E reason\n"
               "  -h, --noheader      no header line\n"
               "  -p, --partition P   only partition P\n"
               "  --help              this help\n\n"
               "exit codes: 0 ok, 2 usage, 3 cannot connect.\n");
}

static const char *title(char letter)
{
    switch (letter) {
    case 'P':
    case 'R': return "PARTITION";
    case 'a': return "AVAIL";
    case 'l': return "TIMELIMIT";
    case 't':
    case 'T': return "STATE";
    case 'D': return "NODES";
    case 'N': return "NODELIST";
    case 'c': return "CPUS";
    case 'm': return "MEMORY";
    case 'G': return "GRES";
    case 'C': return "CPUS(A/I/O/T)";
    case 's': return "JOB_SIZE";
    case 'h': return "OVERSUBSCRIBE";
    case 'g': return "GROUPS";
    default: return "REASON";
    }
}

static const char *state(const json_t *n, bool full)
{
    json_int_t cpus = json_integer_value(json_object_get(n, "cpu_milli"));
    json_int_t free_cpus = json_integer_value(json_object_get(n, "cpu_free_milli"));
    if (!json_is_true(json_object_get(n, "available")))
        return "down";
    if (json_array_size(json_object_get(n, "jobs")) == 0 || free_cpus >= cpus)
        return "idle";
    if (free_cpus <= 0)
        return full ? "allocated" : "alloc";
    return full ? "mixed" : "mix";
}

/* One row: the nodes rows[0..n) (of one state, or one node). */
static void cell(char letter, json_t *const *rows, size_t n, char *out, size_t len)
{
    const json_t *first = n ? rows[0] : NULL;
    json_int_t cpu_milli = json_integer_value(json_object_get(first, "cpu_milli"));
    switch (letter) {
    case 'P': snprintf(out, len, "%s*", LOOM_CLI_PARTITION); break;
    case 'R': snprintf(out, len, "%s", LOOM_CLI_PARTITION); break;
    case 'a': snprintf(out, len, "up"); break;
    case 'l': snprintf(out, len, "infinite"); break;
    case 'D': snprintf(out, len, "%zu", n); break;
    case 't':
    case 'T': snprintf(out, len, "%s", first ? state(first, letter == 'T') : "n/a"); break;
    case 'N': {
        const char **names = calloc(n ? n : 1, sizeof *names);
        loom_buf_t b = LOOM_BUF_INIT;
        for (size_t i = 0; names && i < n; i++)
            names[i] = json_string_value(json_object_get(rows[i], "name"));
        if (names)
            loom_slurmfmt_hostlist(&b, names, n);
        snprintf(out, len, "%s", b.data ? b.data : "");
        loom_buf_free(&b);
        free(names);
        break;
    }
    case 'c': snprintf(out, len, "%lld", (long long)(cpu_milli / 1000)); break;
    case 'm':
        snprintf(out, len, "%lld",
                 (long long)(json_integer_value(json_object_get(first, "memory_bytes")) >> 20));
        break;
    case 'G': {
        json_int_t g = json_integer_value(json_object_get(first, "gpu_count"));
        if (g > 0)
            snprintf(out, len, "gpu:%lld", (long long)g);
        else
            snprintf(out, len, "(null)");
        break;
    }
    case 'C': {
        long long alloc = 0, idle = 0, other = 0;
        for (size_t i = 0; i < n; i++) {
            json_int_t c = json_integer_value(json_object_get(rows[i], "cpu_milli")) / 1000;
            json_int_t f = json_integer_value(json_object_get(rows[i], "cpu_free_milli")) / 1000;
            if (!json_is_true(json_object_get(rows[i], "available")))
                other += c;
            else {
                alloc += c - f;
                idle += f;
            }
        }
        snprintf(out, len, "%lld/%lld/%lld/%lld", alloc, idle, other, alloc + idle + other);
        break;
    }
    case 's': snprintf(out, len, "1-infinite"); break;
    case 'h': snprintf(out, len, "NO"); break;
    case 'g': snprintf(out, len, "all"); break;
    default: snprintf(out, len, "none");
    }
}

static int by_name(const void *x, const void *y)
{
    const json_t *a = *(json_t *const *)x, *b = *(json_t *const *)y;
    return strcmp(json_string_value(json_object_get(a, "name")),
                  json_string_value(json_object_get(b, "name")));
}

static void print_line(const loom_slurmfmt_t *f, json_t *const *rows, size_t n, bool header)
{
    loom_buf_t line = LOOM_BUF_INIT;
    loom_buf_append_str(&line, f->prefix);
    for (size_t c = 0; c < f->n; c++) {
        char text[4096];
        if (header)
            snprintf(text, sizeof text, "%s", title(f->fields[c].letter));
        else
            cell(f->fields[c].letter, rows, n, text, sizeof text);
        loom_slurmfmt_cell(&line, text, f->fields[c].width, f->fields[c].right);
        loom_buf_append_str(&line, f->fields[c].suffix);
    }
    printf("%s\n", line.data ? line.data : "");
    loom_buf_free(&line);
}

/* Rows: per node (-N), else per state, in node-name order. */
static void print_nodes(const loom_slurmfmt_t *f, json_t *nodes, bool per_node, bool header)
{
    size_t n = json_array_size(nodes), i;
    json_t *v, **all = calloc(n + 1, sizeof *all), **group = calloc(n + 1, sizeof *group);
    json_array_foreach(nodes, i, v) all[i] = v;
    qsort(all, n, sizeof *all, by_name);
    if (header)
        print_line(f, NULL, 0, true);
    if (n == 0)
        print_line(f, NULL, 0, false); /* the partition, with no nodes */
    bool *done = calloc(n + 1, sizeof *done);
    for (i = 0; i < n && group && done; i++) {
        if (done[i])
            continue;
        size_t k = 0;
        for (size_t j = i; j < n; j++)
            if (!done[j] &&
                (j == i || (!per_node && !strcmp(state(all[j], true), state(all[i], true))))) {
                group[k++] = all[j];
                done[j] = true;
            }
        print_line(f, group, k, false);
    }
    free(done);
    free(group);
    free(all);
}

int loom_cmd_sinfo(int argc, char **argv)
{
    static const struct option opts[] = {
        {"Node", no_argument, NULL, 'N'},     {"format", required_argument, NULL, 'o'},
        {"noheader", no_argument, NULL, 'h'}, {"partition", required_argument, NULL, 'p'},
        {"help", no_argument, NULL, 'H'},     {NULL, 0, NULL, 0},
    };
    bool per_node = false, header = true;
    const char *format = NULL, *partition = NULL;
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":No:hp:", opts, NULL)) != -1) {
        switch (c) {
        case 'N': per_node = true; break;
        case 'o': format = optarg; break;
        case 'h': header = false; break;
        case 'p': partition = optarg; break;
        case 'H': usage(stdout); return LOOM_EXIT_OK;
        default: return loom_slurm_bad_option("sinfo", c, argv[optind - 1]);
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loom sinfo: unexpected argument '%s'; try 'loom sinfo --help'\n",
                argv[optind]);
        return LOOM_EXIT_USAGE;
    }
    loom_cli_conn_t conn;
    json_t *result = NULL;
    int rc = loom_cli_connect("sinfo", &conn);
    if (rc)
        return rc;
    rc = loom_cli_call("sinfo", &conn, "node.list", NULL, LOOM_RPC_CALL_RETRY, &result);
    loom_cli_disconnect(&conn);
    if (rc)
        return rc;
    result = loom_cli_safe_tree(result);
    json_t *nodes = json_object_get(result, "nodes");
    /* sinfo's "%#N" and "%#P": as wide as the longest, at least 9 */
    int nw = MIN_NAME_WIDTH, pw = (int)strlen(LOOM_CLI_PARTITION) + 1;
    size_t i;
    json_t *v;
    json_array_foreach(nodes, i, v)
    {
        int l = (int)strlen(json_string_value(json_object_get(v, "name")));
        nw = l > nw ? l : nw;
    }
    pw = pw > MIN_NAME_WIDTH ? pw : MIN_NAME_WIDTH;
    char deflt[128];
    if (per_node)
        snprintf(deflt, sizeof deflt, "%%%dN %%.6D %%.%dP %%6t", nw, pw);
    else
        snprintf(deflt, sizeof deflt, "%%%dP %%.5a %%.10l %%.6D %%.6t %%N", pw);
    loom_slurmfmt_t f = {0};
    loom_err_t err;
    if (loom_slurmfmt_parse(format ? format : deflt, LETTERS, &f, &err)) {
        fprintf(stderr, "loom sinfo: %s\n", err.msg);
        rc = LOOM_EXIT_USAGE;
    } else if (!partition || strcmp(partition, LOOM_CLI_PARTITION) == 0) {
        print_nodes(&f, nodes, per_node, header);
    } else if (header) {
        print_line(&f, NULL, 0, true); /* another partition: none of loom's nodes */
    }
    loom_slurmfmt_free(&f);
    json_decref(result);
    return rc;
}
