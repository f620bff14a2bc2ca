/* loom — the command-line tool. A thin main: it finds the subcommand and
 * hands over; all logic lives in libloom (see DESIGN.md, "curl"). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/cli.h"
#include "loom/core.h"

loom_cli_globals_t loom_cli;

static const struct {
    const char *name;
    loom_cli_fn run;
    const char *summary;
} commands[] = {
    {"version", loom_cmd_version, "print loom's version"},
    {"submit", loom_cmd_submit, "submit a job script (job.submit)"},
    {"jobs", loom_cmd_jobs, "list jobs (job.list)"},
    {"usage", loom_cmd_usage, "usage per user and account (usage.report)"},
    {"show", loom_cmd_show, "show one job in full (job.get)"},
    {"cancel", loom_cmd_cancel, "cancel jobs (job.cancel)"},
    {"hold", loom_cmd_hold, "hold pending jobs (job.hold)"},
    {"release", loom_cmd_release, "release held jobs (job.release)"},
    {"requeue", loom_cmd_requeue, "queue jobs again (job.requeue)"},
    {"update", loom_cmd_update, "change pending jobs: time, priority, name (job.update)"},
    {"wait", loom_cmd_wait, "wait until jobs end; exit status from their result (job.wait)"},
    {"logs", loom_cmd_logs, "print a job's output, -f to follow it (job.logs)"},
    {"info", loom_cmd_info, "show what loomd says about itself (server.info)"},
    {"nodes", loom_cmd_nodes, "list the cluster's nodes, free resources and jobs (node.list)"},
    {"dash", loom_cmd_dash, "print a one-time URL for the web dashboard (dash.login)"},
    {"sim", loom_cmd_sim, "replay a cluster trace through the scheduling policies"},
    {"prof", loom_cmd_prof, "profile a DNN workload: steps, CPU, memory, kernels"},
    {"mon", loom_cmd_mon, "hardware metrics: CPU, memory, disk, net, power, GPU"},
    {"render", loom_cmd_render, "render a Mustache template with JSON data"},
    {"gen", loom_cmd_gen, "generate jobs from a catalog at a rate"},
    {"catalog", loom_cmd_catalog, "check a job catalog, or print sampled jobs"},
    {"estimate", loom_cmd_estimate, "predict a model's memory, FLOPs and step time (ONNX)"},
    {"zoo", loom_cmd_zoo, "model repository for warm starts: add, list, show, rm, match, warm"},
    {"sbatch", loom_cmd_sbatch, "submit a batch script as Slurm's sbatch (docs/slurm.md)"},
    {"squeue", loom_cmd_squeue, "list jobs as Slurm's squeue prints them"},
    {"scancel", loom_cmd_scancel, "cancel jobs as Slurm's scancel (ids, -u, -n, -t)"},
    {"sacct", loom_cmd_sacct, "finished and active jobs as Slurm's sacct prints them"},
    {"sinfo", loom_cmd_sinfo, "the partition and nodes as Slurm's sinfo prints them"},
    {"slurm-links", loom_cmd_slurm_links, "make sbatch, squeue, ... links to loom in a directory"},
};

static void usage(FILE *f)
{
    fprintf(f, "usage: loom [--url URL] COMMAND [ARGS...]\n\n"
               "loom talks to loomd, the resource manager for deep-learning jobs, and runs\n"
               "its tools locally.\n\ncommands:\n");
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
        fprintf(f, "  %-11s %s\n", commands[i].name, commands[i].summary);
    fprintf(f, "\noptions:\n"
               "  --url URL   loomd address: http://HOST:PORT or unix:PATH (default $LOOM_URL,\n"
               "              else unix:$LOOM_STATE_DIR/loomd.sock; without LOOM_STATE_DIR\n"
               "              and a loomd of your own, the system loomd's\n"
               "              unix:/run/loom/loomd.sock if it runs)\n"
               "  -h, --help  this help; 'loom help COMMAND' or 'loom COMMAND --help' for a\n"
               "              command's own\n"
               "  --version   print loom's version\n\n"
               "exit codes: 0 ok, 1 failure, 2 usage, 3 cannot connect, 4 not found,\n"
               "5 malformed input, 6 permission denied (another user's job). See docs/cli.md.\n");
}

int loom_cmd_version(int argc, char **argv)
{
    if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
        printf("usage: loom version [--json]\n\nPrints loom's version.\n");
        return LOOM_EXIT_OK;
    }
    if (argc > 1 && strcmp(argv[1], "--json") == 0) {
        printf("{\n  \"name\": \"loom\",\n  \"version\": \"%s\"\n}\n", LOOM_VERSION);
        return LOOM_EXIT_OK;
    }
    if (argc > 1) {
        fprintf(stderr, "loom version: unexpected argument '%s'\n", argv[1]);
        return LOOM_EXIT_USAGE;
    }
    printf("loom %s\n", LOOM_VERSION);
    return LOOM_EXIT_OK;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"url", required_argument, NULL, 'u'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
        {NULL, 0, NULL, 0},
    };
    loom_cli.url = getenv("LOOM_URL");
    loom_cli.token = getenv("LOOM_TOKEN");
    /* run as sbatch, squeue, ... (a link of loom slurm-links): that command */
    loom_cli_fn slurm = argc > 0 ? loom_cli_slurm_by_name(argv[0]) : NULL;
    if (slurm)
        return slurm(argc, argv);
    int c;
    /* '+' stops at the first non-option: the command name. */
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'u': loom_cli.url = optarg; break;
        case 'h': usage(stdout); return LOOM_EXIT_OK;
        case 'V': printf("loom %s\n", LOOM_VERSION); return LOOM_EXIT_OK;
        default: usage(stderr); return LOOM_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    const char *name = argv[optind];
    /* loom help [COMMAND]: the overview, or COMMAND --help. */
    if (strcmp(name, "help") == 0) {
        if (optind + 1 >= argc) {
            usage(stdout);
            return LOOM_EXIT_OK;
        }
        char help_flag[] = "--help";
        for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
            if (strcmp(commands[i].name, argv[optind + 1]) == 0) {
                char *sub_argv[] = {argv[optind + 1], help_flag, NULL};
                optind = 0;
                return commands[i].run(2, sub_argv);
            }
        fprintf(stderr, "loom help: unknown command '%s' (see 'loom --help')\n", argv[optind + 1]);
        return LOOM_EXIT_USAGE;
    }
    for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, name) == 0) {
            int sub_argc = argc - optind;
            char **sub_argv = argv + optind;
            optind = 0; /* reset getopt for the command */
            return commands[i].run(sub_argc, sub_argv);
        }
    }
    fprintf(stderr, "loom: unknown command '%s' (see 'loom --help')\n", name);
    return LOOM_EXIT_USAGE;
}
