/* loom sbatch: loom submit as Slurm's sbatch answers (job.submit): the
 * same #SBATCH reading and options (cmd_submit.c, libloom's jobspec), and
 * sbatch's "Submitted batch job N", --parsable ("N"), --wait (until the
 * job ends; exit status the job's), --wrap, a script on stdin, options
 * ending at the script. docs/slurm.md. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/slurm.h"

static void usage(FILE *f)
{
    fprintf(f, "usage: loom sbatch [options] [SCRIPT]\n"
               "       loom sbatch [options] --wrap COMMAND\n\n"
               "Submits a batch script as Slurm's sbatch does (docs/slurm.md): its #SBATCH\n"
               "directives, then the options here, which end at SCRIPT (stdin without one).\n"
               "Prints 'Submitted batch job ID'.\n\n"
               "  -J, --job-name NAME      -c, --cpus-per-task N     -n, --ntasks N\n"
               "  -N, --nodes 1            --mem SIZE (MB default)   --mem-per-cpu SIZE\n"
               "  --gres gpu[:TYPE]:N      -G, --gpus [TYPE:]N       --gpus-per-node, -task N\n"
               "  -t, --time T             -o, --output PAT          -e, --error PAT\n"
               "  -D, --chdir DIR          --export LIST             -a, --array R[%%N]\n"
               "  -d, --dependency D       -b, --begin T             -H, --hold\n"
               "  -A, --account A          --comment C               --nice[=N], --priority N\n"
               "  -p, --partition P        (loom has one partition, '" LOOM_CLI_PARTITION "')\n"
               "  --wrap COMMAND           the job is COMMAND in a sh script\n"
               "  --parsable               print only the job id\n"
               "  -W, --wait               wait until the job (every task of an array) ends;\n"
               "                           exit with its exit status (the highest of an\n"
               "                           array's; 1 for a job that ended otherwise)\n"
               "  -Q, --quiet              print nothing on success\n"
               "  -h, --help               this help\n\n"
               "loom submit's own options are taken too (loom submit --help). A directive\n"
               "loom does not support is a warning on stderr.\n\n"
               "exit codes: 0 submitted (with --wait: the job's status), 1 refused, 2 usage,\n"
               "3 cannot connect, 5 SCRIPT unreadable or its directives malformed.\n");
}

/* The exit status of a job.wait entry, as sbatch --wait gives it. */
static int status_of(const json_t *e)
{
    const json_t *code = json_object_get(e, "exit_code");
    const char *st = json_string_value(json_object_get(e, "state"));
    if (json_is_integer(code) && json_integer_value(code) >= 0 && json_integer_value(code) < 256 &&
        (json_integer_value(code) != 0 || (st && !strcmp(st, "COMPLETED"))))
        return (int)json_integer_value(code);
    return st && !strcmp(st, "COMPLETED") ? 0 : 1;
}

/* Waits for jobs first..first+n-1 (an array's tasks have consecutive
 * ids), 100 at a time; returns the highest exit status. */
static int wait_jobs(int64_t first, int64_t n)
{
    loom_cli_conn_t conn;
    int rc = loom_cli_connect("sbatch", &conn), worst = 0;
    if (rc)
        return rc;
    for (int64_t at = 0; at < n && rc == LOOM_EXIT_OK;) {
        json_t *ids = json_array();
        for (int64_t k = at; k < n && k < at + 100; k++)
            json_array_append_new(ids, json_integer(first + k));
        json_t *params = json_pack("{s:o, s:i}", "ids", ids, "timeout", 20), *result = NULL;
        rc = loom_cli_call("sbatch", &conn, "job.wait", params, LOOM_RPC_CALL_RETRY, &result);
        json_decref(params);
        if (rc == LOOM_EXIT_OK && json_is_true(json_object_get(result, "ended"))) {
            size_t i;
            json_t *e;
            json_array_foreach(json_object_get(result, "jobs"), i, e)
            {
                int s = status_of(e);
                worst = s > worst ? s : worst;
            }
            at += 100;
        }
        json_decref(result);
    }
    loom_cli_disconnect(&conn);
    return rc ? rc : worst;
}

int loom_cmd_sbatch(int argc, char **argv)
{
    loom_cli_sbatch_t sb = {0};
    json_t *result = NULL;
    int rc = loom_cli_sbatch_submit(argc, argv, &sb, &result);
    if (rc < 0) {
        usage(stdout);
        return LOOM_EXIT_OK;
    }
    if (rc)
        return rc;
    long long id = (long long)json_integer_value(json_object_get(result, "id"));
    json_int_t tasks =
        json_integer_value(json_object_get(json_object_get(result, "array"), "tasks"));
    json_decref(result);
    if (sb.parsable)
        printf("%lld\n", id);
    else if (!sb.quiet)
        printf("Submitted batch job %lld\n", id);
    if (!sb.wait)
        return LOOM_EXIT_OK;
    fflush(stdout);
    return wait_jobs(id, tasks > 0 ? tasks : 1);
}
