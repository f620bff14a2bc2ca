/* loomd — the loom daemon. A thin main: parse options, prepare the state
 * directory (lock, token, database), start the store, the dispatcher with
 * loomd's methods and the HTTP server, then wait for SIGTERM/SIGINT and stop
 * in the reverse order: stop accepting and finish requests in flight (their
 * writes are committed by the still-running store), then close the store. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon/authz.h"
#include "daemon/config.h"
#include "daemon/dash.h"
#include "daemon/jobusage.h"
#include "daemon/follow.h"
#include "daemon/identity.h"
#include "daemon/methods.h"
#include "daemon/quota.h"
#include "daemon/monitor.h"
#include "daemon/zoo_methods.h"
#include "daemon/runner.h"
#include "daemon/statedir.h"
#include "daemon/usage.h"
#include "loom/core.h"
#include "loom/rpc.h"
#include "loom/sched.h"
#include "loom/store.h"

static void usage(FILE *f)
{
    fprintf(
        f, "usage: loomd [--listen ADDR:PORT] [--socket PATH] [--state-dir DIR]\n"
           "             [--durability normal|full] [--log-level L] [--help] [--version]\n"
           "             [--executor local|slurm|none] [--slurm-partition P]\n"
           "             [--queue-policy P] [--placement P]\n"
           "             [--node SPEC]... [--gpus N] [--gpu-type T] [--gpu-memory SIZE]\n"
           "             [--grace D] [--seed S] [--timeslice D] [--pack-check] [--usage-window D]\n"
           "             [--backfill greedy|easy|conservative] [--default-time-limit D]\n"
           "             [--estimate-margin M] [--estimate-device D] [--device-dir DIR]\n"
           "             [--config FILE|none] [--move-orphaned-jobs] [--store-reserve SIZE]\n"
           "             [--job-output-max SIZE] [--rubick DEVICE [--rubick-cost D]]\n"
           "             [--multi-user --socket PATH [--operators GROUP] [--allow-root-jobs]\n"
           "              [--munge-socket PATH]]\n\n"
           "loomd keeps the durable job queue of loom and serves JSON-RPC 2.0 over HTTP\n"
           "(POST /rpc, GET /healthz, GET /metrics). See docs/protocol.md.\n\n"
           "  --listen ADDR:PORT   TCP address (default 127.0.0.1:7750; port 0 picks a free\n"
           "                       port; 'none' disables TCP). TCP requires the bearer token.\n"
           "  --socket PATH        Unix socket (default STATE_DIR/loomd.sock; 'none' disables)\n"
           "  --state-dir DIR      database, token, socket (default $LOOM_STATE_DIR, else\n"
           "                       ~/.local/state/loom)\n"
           "  --durability MODE    normal: an acknowledged job survives a crash of loomd;\n"
           "                       full: also power loss (fsync per commit). Default normal.\n"
           "  --log-level L        debug, info, warn, error, off (default info)\n"
           "  --executor E         local: run jobs on this machine (default); slurm: place\n"
           "                       them on the Slurm partition's nodes and run them with\n"
           "                       sbatch (docs/slurm.md); none: only queue them\n"
           "  --slurm-partition P  the Slurm partition (default: Slurm's default)\n"
           "  --queue-policy P     fifo, sjf, priority, tiresias[:OPTS], drf, fairshare[:OPTS],\n"
           "                       tiresias+fairshare[:OPTS]; OPTS: a half-life (7d) and\n"
           "                       by=user|account, e.g. fairshare:1h,by=account;\n"
           "                       tiresias (preemptive): thresholds=T1/T2/...,knob=X\n"
           "                       (default fifo; docs/scheduling.md)\n"
           "  --placement P        firstfit, bestfit, dotprod, packing, clustering, random,\n"
           "                       fgd, fgd-cpu (default firstfit)\n"
           "  --node SPEC          a node of the cluster model, repeatable:\n"
           "                       name=N,cpus=C,memory=SIZE,gpus=G,gpu_type=T,gpu_memory=SIZE\n"
           "                       (default: this machine, with --gpus virtual GPUs)\n"
           "  --gpus N             virtual GPUs on the default node (default: the NVIDIA\n"
           "                       GPUs NVML reports, with their type and memory, else 0)\n"
           "  --gpu-type T         their type (default virtual); --gpu-memory SIZE each\n"
           "  --grace D            time between TERM and KILL when a job is stopped (10s)\n"
           "  --seed S             seed of the random placement and tie breaks (default 1)\n"
           "  --usage-window D     how long the cluster's usage series is kept (30d)\n"
           "  --timeslice D        Gandiva time-slicing: a job that cannot be placed may\n"
           "                       suspend jobs that have run D since they last started\n"
           "                       (default off)\n"
           "  --backfill B         greedy: any job that fits starts (default); easy: the\n"
           "                       first job that waits gets a reservation from the running\n"
           "                       jobs' time limits and later jobs start only where they\n"
           "                       do not delay it; conservative: every waiting job gets\n"
           "                       one (docs/scheduling.md, \"Backfill\")\n"
           "  --default-time-limit D  the time limit backfill plans with for a job without\n"
           "                       one (default 1h)\n"
           "  --pack-check         Gandiva packing introspection: undo packing on a shared\n"
           "                       GPU when the jobs' step rates show it lowers throughput\n"
           "  --estimate-margin M  safety margin on a submission's model estimate: a\n"
           "                       percentage and/or a size (default 10%%+256MiB)\n"
           "  --estimate-device D  device of model estimates when the submission names\n"
           "                       none: a name or a device file (default h200)\n"
           "  --device-dir DIR     where device names are looked up (default\n"
           "                       $LOOM_DEVICE_DIR, else loom's share/loom/devices)\n"
           "  --config FILE        settings as 'key = value' lines, keys the long options\n"
           "                       above; flags override them (default $LOOMD_CONFIG, else\n"
           "                       " LOOMD_CONFIG_DEFAULT " if present; none: no file)\n"
           "  --move-orphaned-jobs when STATE_DIR/jobs holds job directories but loom.db is\n"
           "                       missing, move jobs/ aside to jobs.orphaned-<time> and\n"
           "                       start a new database (default: refuse to start, so that\n"
           "                       no job id or output file is reused)\n"
           "  --store-reserve SIZE space kept in STATE_DIR/loom.reserve and given up when the\n"
           "                       disk is full, so that loom's own records still fit\n"
           "                       (default 8MiB; 0: none)\n"
           "  --job-output-max SIZE (local executor) stop a job whose stdout and stderr\n"
           "                       together pass SIZE: FAILED 'output limit ... reached'\n"
           "                       (default 0: no limit)\n"
           "  --rubick DEVICE      Rubick's policy for reconfigurable jobs (a \"reconfig\"\n"
           "                       naming a model): GPUs, CPUs, memory and plan chosen and\n"
           "                       changed live (checkpoint, restart) by the performance\n"
           "                       model on DEVICE, a name or a device file (local\n"
           "                       executor; docs/scheduling.md, \"Live reconfiguration\")\n"
           "  --rubick-cost D      what one reconfiguration costs a job (checkpoint,\n"
           "                       restart, warm-up); a change must gain more (default 30s)\n"
           "  --multi-user         share the machine (docs/security.md): callers are who the\n"
           "                       kernel (Unix socket) or MUNGE (TCP) says; jobs run as\n"
           "                       their owners (slurm: sbatch runs as the owner); the\n"
           "                       socket (give --socket PATH outside the state directory)\n"
           "                       is open to everyone. Needs root.\n"
           "  --operators GROUP    members of GROUP act on every job, as root does\n"
           "  --allow-root-jobs    accept jobs of root in multi-user mode (refused otherwise)\n"
           "  --munge-socket PATH  munged's socket (default libmunge's)\n"
           "  --quota WHO=LIMITS   quota, repeatable: WHO user:NAME, account:NAME or * (every\n"
           "                       user); LIMITS any of pending=N,time=D (refuse submissions\n"
           "                       beyond), gpus=G,running=N (GPUs, e.g. 1.5, and jobs running\n"
           "                       at once: the rest wait PENDING, reason QuotaLimit)\n"
           "  --print-authz-table  print who may call each method (docs/security.md), exit\n"
           "  --help, --version\n\n"
           "Files in STATE_DIR (0700, files 0600; looser modes are repaired, files of another\n"
           "user refused): loom.db (SQLite), token, loomd.sock,\n"
           "loomd.url (the TCP URL actually bound, written once listening).\n"
           "Signals: SIGTERM/SIGINT stop accepting, finish requests in flight, close the\n"
           "store, exit 0.\n");
}

typedef struct opts {
    const char *listen;
    const char *socket;
    const char *state_dir;
    loom_durability_t durability;
    const char *executor;
    const char *slurm_partition;
    const char *queue_policy, *placement;
    json_t *nodes; /* from --node, or NULL */
    int64_t vgpus;
    bool vgpus_given;
    const char *gpu_type;
    uint64_t gpu_memory;
    int64_t grace_ns;
    int64_t seed;
    int64_t timeslice_ns;
    int64_t usage_window_ns; /* --usage-window: the cluster series kept (0: 30 days) */
    loom_runtime_backfill_t backfill;
    int64_t default_limit_ns;
    bool pack_check;
    bool move_orphaned_jobs;
    uint64_t store_reserve;
    uint64_t job_output_max;
    const char *estimate_margin, *estimate_device, *device_dir;
    const char *rubick;
    int64_t rubick_cost_ns;
    loomd_identity_config_t ident;
    loomd_quotas_t quotas;
} opts_t;

/* Long options without a letter of their own get codes past any char. */
enum { OPT_PRINT_AUTHZ = 0x100 };

static const struct option longopts[] = {
    {"listen", required_argument, NULL, 'l'},
    {"socket", required_argument, NULL, 's'},
    {"state-dir", required_argument, NULL, 'd'},
    {"durability", required_argument, NULL, 'D'},
    {"log-level", required_argument, NULL, 'L'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {"print-authz-table", no_argument, NULL, OPT_PRINT_AUTHZ},
    {"executor", required_argument, NULL, 'E'},
    {"queue-policy", required_argument, NULL, 'Q'},
    {"placement", required_argument, NULL, 'P'},
    {"node", required_argument, NULL, 'N'},
    {"gpus", required_argument, NULL, 'G'},
    {"gpu-type", required_argument, NULL, 'T'},
    {"gpu-memory", required_argument, NULL, 'M'},
    {"grace", required_argument, NULL, 'g'},
    {"seed", required_argument, NULL, 'S'},
    {"slurm-partition", required_argument, NULL, 'p'},
    {"timeslice", required_argument, NULL, 'q'},
    {"pack-check", no_argument, NULL, 'k'},
    {"move-orphaned-jobs", no_argument, NULL, 'O'},
    {"store-reserve", required_argument, NULL, 'r'},
    {"job-output-max", required_argument, NULL, 'o'},
    {"estimate-margin", required_argument, NULL, 'm'},
    {"estimate-device", required_argument, NULL, 'e'},
    {"device-dir", required_argument, NULL, 'R'},
    {"multi-user", no_argument, NULL, 'U'},
    {"operators", required_argument, NULL, 'X'},
    {"allow-root-jobs", no_argument, NULL, 'A'},
    {"munge-socket", required_argument, NULL, 'u'},
    {"quota", required_argument, NULL, 'Z'},
    {"rubick", required_argument, NULL, 'b'},
    {"rubick-cost", required_argument, NULL, 'C'},
    {"backfill", required_argument, NULL, 'B'},
    {"default-time-limit", required_argument, NULL, 'I'},
    {"usage-window", required_argument, NULL, 'W'},
    {NULL, 0, NULL, 0},
};

/* The options kept as given (strings and flags): true if C is one. */
static bool set_plain_opt(int c, const char *arg, opts_t *o)
{
    switch (c) {
    case 'l': o->listen = arg; break;
    case 's': o->socket = arg; break;
    case 'd': o->state_dir = arg; break;
    case 'Q': o->queue_policy = arg; break;
    case 'p': o->slurm_partition = arg; break;
    case 'k': o->pack_check = true; break;
    case 'e': o->estimate_device = arg; break;
    case 'R': o->device_dir = arg; break;
    case 'U': o->ident.multi_user = true; break;
    case 'X': o->ident.operators = arg; break;
    case 'A': o->ident.allow_root_jobs = true; break;
    case 'u': o->ident.munge_socket = arg; break;
    case 'O': o->move_orphaned_jobs = true; break;
    case 'P': o->placement = arg; break;
    case 'T': o->gpu_type = arg; break;
    case 'b': o->rubick = arg; break;
    default: return false;
    }
    return true;
}

/* The numbers, sizes and durations: -1 (the error printed) on a bad one. */
static int set_number_opt(int c, const char *arg, opts_t *o)
{
    loom_err_t err;
    int rc;
    switch (c) {
    case 'q':
    case 'C':
    case 'W':
    case 'I': {
        int64_t *to = c == 'q'   ? &o->timeslice_ns
                      : c == 'C' ? &o->rubick_cost_ns
                      : c == 'W' ? &o->usage_window_ns
                                 : &o->default_limit_ns;
        const char *name = c == 'q'   ? "--timeslice"
                           : c == 'C' ? "--rubick-cost"
                           : c == 'W' ? "--usage-window"
                                      : "--default-time-limit";
        if (loom_parse_duration(arg, to, &err)) {
            fprintf(stderr, "loomd: %s: %s\n", name, err.msg);
            return -1;
        }
        return 0;
    }
    case 'r':
    case 'o':
        if (loom_parse_size(arg, c == 'r' ? &o->store_reserve : &o->job_output_max, &err)) {
            fprintf(stderr, "loomd: %s: %s\n", c == 'r' ? "--store-reserve" : "--job-output-max",
                    err.msg);
            return -1;
        }
        return 0;
    default: /* 'G', 'M', 'g', 'S' */
        rc = c == 'G'   ? loom_parse_i64(arg, 0, 16, &o->vgpus, "--gpus", &err)
             : c == 'M' ? loom_parse_size(arg, &o->gpu_memory, &err)
             : c == 'g' ? loom_parse_duration(arg, &o->grace_ns, &err)
                        : loom_parse_i64(arg, 0, INT64_MAX, &o->seed, "--seed", &err);
        if (rc) {
            fprintf(stderr, "loomd: %s\n", err.msg);
            return -1;
        }
        o->vgpus_given = o->vgpus_given || c == 'G';
        return 0;
    }
}

/* The options checked by their own parsers: -1 (the error printed) on a
 * bad one. */
static int set_checked_opt(int c, const char *arg, opts_t *o)
{
    loom_err_t err;
    switch (c) {
    case 'B':
        if (loom_runtime_backfill_parse(arg, &o->backfill, &err)) {
            fprintf(stderr, "loomd: --%s\n", err.msg);
            return -1;
        }
        return 0;
    case 'D':
        if (loom_durability_parse(arg, &o->durability, &err)) {
            fprintf(stderr, "loomd: --durability: %s\n", err.msg);
            return -1;
        }
        return 0;
    case 'L': {
        loom_log_level_t lvl;
        if (loom_log_parse_level(arg, &lvl, &err)) {
            fprintf(stderr, "loomd: --log-level: %s\n", err.msg);
            return -1;
        }
        loom_log_set_level(lvl);
        return 0;
    }
    case 'E':
        if (strcmp(arg, "local") != 0 && strcmp(arg, "slurm") != 0 && strcmp(arg, "none") != 0) {
            fprintf(stderr, "loomd: --executor '%s': expected local, slurm or none\n", arg);
            return -1;
        }
        o->executor = arg;
        return 0;
    case 'm': {
        loom_est_margin_t m;
        if (loom_est_margin_parse(arg, &m, &err)) {
            fprintf(stderr, "loomd: --estimate-margin: %s\n", err.msg);
            return -1;
        }
        o->estimate_margin = arg;
        return 0;
    }
    case 'Z':
        if (loomd_quota_parse(arg, &o->quotas, &err)) {
            fprintf(stderr, "loomd: %s\n", err.msg);
            return -1;
        }
        return 0;
    case 'N': {
        json_t *n;
        if (loomd_parse_node(arg, &n, &err)) {
            fprintf(stderr, "loomd: %s\n", err.msg);
            return -1;
        }
        if (!o->nodes)
            o->nodes = json_array();
        json_array_append_new(o->nodes, n);
        return 0;
    }
    default: return set_number_opt(c, arg, o);
    }
}

static int parse_args(int argc, char **argv, opts_t *o, int *exit_code)
{
    loom_err_t err;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        if (c == 'h') {
            usage(stdout);
            *exit_code = 0;
            return -1;
        }
        if (c == 'V') {
            printf("loomd %s\n", LOOM_VERSION);
            *exit_code = 0;
            return -1;
        }
        if (c == OPT_PRINT_AUTHZ) { /* docs/security.md's table, from authz.c */
            loom_buf_t t = LOOM_BUF_INIT;
            *exit_code = loomd_authz_table(&t) == LOOM_OK && fputs(t.data, stdout) >= 0 ? 0 : 1;
            loom_buf_free(&t);
            return -1;
        }
        if (c == '?' || c == ':') {
            usage(stderr);
            *exit_code = 2;
            return -1;
        }
        if (!set_plain_opt(c, optarg, o) && set_checked_opt(c, optarg, o)) {
            *exit_code = 2;
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loomd: unexpected argument '%s' (see loomd --help)\n", argv[optind]);
        *exit_code = 2;
        return -1;
    }
    if (loomd_identity_check_args(&o->ident, o->socket, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        *exit_code = 2;
        return -1;
    }
    return 0;
}

/* Everything loomd holds while it runs; the pointers between its parts
 * (the server's socket path, info's strings) point into it. */
typedef struct daemon {
    opts_t o;
    char state_dir[4096];
    loomd_state_dir_t sd;
    char token[LOOM_RPC_TOKEN_HEX + 1];
    loomd_identity_t *ident;
    sigset_t sigs;
    char path[4200], reserve_path[4200];
    loom_store_t *store;
    loomd_info_t info;
    loomd_runner_t *runner;
    loom_est_sizer_t *sizer;
    loomd_methods_t methods;
    loomd_monitor_t *monitor;
    loomd_jobusage_t *jobusage;
    loomd_zoo_t *zoo;
    loom_rpc_dispatcher_t *disp;
    loomd_dash_t *dash;
    loom_rpc_server_config_t cfg;
    bool tcp;
    char sock_path[4200], url_path[4200], url[300];
    loom_rpc_server_t *server;
} daemon_t;

/* The state directory: created, checked, locked on its own descriptor
 * (docs/loomd.md). */
static int open_state_dir(daemon_t *d)
{
    loom_err_t err;
    if (d->o.state_dir)
        snprintf(d->state_dir, sizeof d->state_dir, "%s", d->o.state_dir);
    else if (loom_default_state_dir(d->state_dir, sizeof d->state_dir, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    if (loomd_state_dir_open(d->state_dir, &d->sd, &err) ||
        loomd_state_dir_check_orphans(&d->sd, d->o.move_orphaned_jobs, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    snprintf(d->state_dir, sizeof d->state_dir, "%s", d->sd.path);
    return 0;
}

/* The bearer token and who callers are. */
static int make_identity(daemon_t *d)
{
    loom_err_t err;
    if (loom_rpc_token_ensure(d->state_dir, d->token, &err)) {
        fprintf(stderr, "loomd: token: %s\n", err.msg);
        return 1;
    }
    d->o.ident.token = d->token;
    if (loomd_identity_prepare(&d->o.ident, d->state_dir, &err) ||
        loomd_identity_new(&d->o.ident, &d->ident, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    return 0;
}

/* Signals are taken by sigwait in the main thread; block them before any
 * thread starts so that every thread inherits the mask. */
static void block_signals(daemon_t *d)
{
    sigemptyset(&d->sigs);
    sigaddset(&d->sigs, SIGTERM);
    sigaddset(&d->sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &d->sigs, NULL);
    signal(SIGPIPE, SIG_IGN);
}

static int open_store(daemon_t *d)
{
    loom_err_t err;
    snprintf(d->path, sizeof d->path, "%s/loom.db", d->state_dir);
    snprintf(d->reserve_path, sizeof d->reserve_path, "%s/loom.reserve", d->state_dir);
    loom_store_options_t sopts = {.durability = d->o.durability,
                                  .reserve_path = d->reserve_path,
                                  .reserve_bytes = (size_t)d->o.store_reserve};
    int64_t max_id = 0;
    if (loom_store_open(d->path, &sopts, &d->store, &err)) {
        fprintf(stderr, "loomd: store: %s\n", err.msg);
        return 1;
    }
    if (loom_store_max_id(d->store, &max_id, &err) ||
        loomd_state_dir_check_ids(&d->sd, max_id, d->o.move_orphaned_jobs, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    d->info = (loomd_info_t){
        .state_dir = d->state_dir,
        .durability = loom_durability_name(d->o.durability),
        .started_real_ns = loom_time_real_ns(),
        .started_mono_ns = loom_time_mono_ns(),
    };
    return 0;
}

/* The local executor's default node: this machine, with --gpus virtual
 * GPUs, or without --gpus the GPUs NVML sees (if any). */
static void add_default_node(opts_t *o)
{
    char type[LOOM_SCHED_NAME_MAX];
    int ngpus = 0;
    uint64_t gmem = 0;
    loom_err_t derr;
    if (!o->vgpus_given && loomd_detect_gpus(&ngpus, type, sizeof type, &gmem, &derr) == 0) {
        loom_log_info("loomd.gpus_detected", "gpus=%d type=%s memory_bytes=%llu", ngpus, type,
                      (unsigned long long)gmem);
        o->vgpus = ngpus;
        if (!o->gpu_type)
            o->gpu_type = type;
        if (!o->gpu_memory)
            o->gpu_memory = gmem;
    }
    o->nodes = json_array();
    json_array_append_new(o->nodes, loomd_default_node((int)o->vgpus, o->gpu_type, o->gpu_memory));
}

static int start_runner(daemon_t *d)
{
    opts_t *o = &d->o;
    loom_err_t err;
    if (strcmp(o->executor, "slurm") == 0 && o->nodes) {
        fprintf(stderr, "loomd: --node: the Slurm executor mirrors the partition's nodes; "
                        "--node applies to --executor local only\n");
        return 2;
    }
    if (strcmp(o->executor, "none") == 0)
        return 0;
    if (!o->nodes && strcmp(o->executor, "local") == 0)
        add_default_node(o);
    char jobs_dir[4200];
    snprintf(jobs_dir, sizeof jobs_dir, "%s/jobs", d->state_dir);
    loomd_runner_config_t rcfg = {.queue_policy = o->queue_policy,
                                  .placement = o->placement,
                                  .jobs_dir = jobs_dir,
                                  .grace_ns = o->grace_ns,
                                  .seed = (uint64_t)o->seed,
                                  .timeslice_ns = o->timeslice_ns,
                                  .backfill = o->backfill,
                                  .default_limit_ns = o->default_limit_ns,
                                  .pack_check = o->pack_check,
                                  .nodes = o->nodes,
                                  .executor = o->executor,
                                  .slurm_partition = o->slurm_partition,
                                  .output_max = o->job_output_max,
                                  .quotas = &o->quotas,
                                  .rubick_device = o->rubick,
                                  .rubick_device_dir = o->device_dir,
                                  .rubick_cost_ns = o->rubick_cost_ns};
    if (loomd_runner_start(d->store, &rcfg, &d->runner, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    return 0;
}

static int make_sizer(daemon_t *d)
{
    loom_err_t err;
    const char *margin = d->o.estimate_margin ? d->o.estimate_margin : "10%+256MiB";
    loom_est_sizer_opts_t eopts = {.device = d->o.estimate_device ? d->o.estimate_device : "h200",
                                   .device_dir = d->o.device_dir};
    if (loom_est_margin_parse(margin, &eopts.margin, &err) ||
        loom_est_sizer_new(&eopts, &d->sizer, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    d->info.estimate_device = eopts.device;
    d->info.estimate_margin = margin;
    return 0;
}

/* The dispatcher with loomd's methods, the monitor's, the zoo's, the
 * dashboard's and the usage report's. */
static int add_methods(daemon_t *d)
{
    loom_err_t err;
    d->methods = (loomd_methods_t){.store = d->store,
                                   .info = &d->info,
                                   .runner = d->runner,
                                   .sizer = d->sizer,
                                   .ident = d->ident,
                                   .quotas = &d->o.quotas};
    if (loomd_waits_new(LOOMD_WAITS_PER_USER, &d->methods.waits, &err) ||
        loomd_monitor_open(d->store, d->runner, &d->monitor, &err) ||
        loom_rpc_dispatcher_new(NULL, &d->disp, &err) ||
        loomd_methods_add(d->disp, &d->methods, &err) ||
        loomd_monitor_add_methods(d->disp, d->monitor, &err) ||
        loomd_jobusage_open(d->store, d->runner, d->runner != NULL, &d->jobusage, &err) ||
        loomd_jobusage_add_methods(d->disp, d->jobusage, &err) ||
        loomd_zoo_open(d->state_dir, d->store, d->ident, &d->zoo, &err) ||
        loomd_zoo_add_methods(d->disp, d->zoo, &err) ||
        loomd_dash_new(d->disp, d->store, &d->info, d->ident, &d->dash, &err) ||
        loomd_usage_add_methods(d->disp, d->store, &err) ||
        loomd_authz_install(d->disp, &d->methods, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    loomd_jobusage_set_window(d->jobusage, d->o.usage_window_ns);
    return 0;
}

/* STATE_DIR/loomd.url: the host part as given, the port as bound (port 0
 * -> a free one). */
static void write_url_file(daemon_t *d)
{
    loom_err_t err;
    char host[256];
    snprintf(host, sizeof host, "%s", d->o.listen);
    char *colon = strrchr(host, ':');
    if (colon)
        *colon = '\0';
    snprintf(d->url, sizeof d->url, "http://%s:%u", host, loom_rpc_server_port(d->server));
    d->info.tcp_url = d->url;
    snprintf(d->url_path, sizeof d->url_path, "%s/loomd.url", d->state_dir);
    loom_buf_t line = LOOM_BUF_INIT;
    loom_buf_appendf(&line, "%s\n", d->url);
    if (loom_write_file_atomic(d->url_path, line.data, line.len, 0600, &err))
        loom_log_warn("loomd.url_file", "error=\"%s\"", err.msg);
    loom_buf_free(&line);
}

static int start_server(daemon_t *d)
{
    loom_err_t err;
    loom_rpc_server_config_t *cfg = &d->cfg;
    loom_rpc_server_config_init(cfg);
    d->tcp = d->o.listen && *d->o.listen && strcmp(d->o.listen, "none") != 0;
    cfg->listen = d->tcp ? d->o.listen : NULL;
    if (d->o.socket && strcmp(d->o.socket, "none") == 0) {
        cfg->socket_path = NULL;
    } else {
        snprintf(d->sock_path, sizeof d->sock_path, "%s", d->o.socket ? d->o.socket : "");
        if (!d->o.socket)
            snprintf(d->sock_path, sizeof d->sock_path, "%s/loomd.sock", d->state_dir);
        cfg->socket_path = d->sock_path;
    }
    cfg->token = d->token;
    cfg->http_hook = loomd_dash_hook(d->dash);
    loomd_identity_install(d->ident, cfg);
    if (loom_rpc_server_start(cfg, d->disp, &d->server, &err) ||
        loomd_identity_open_socket(d->ident, cfg->socket_path, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    loom_rpc_server_add_metrics_source(d->server, loomd_methods_metrics, &d->methods);
    loom_rpc_server_add_metrics_source(d->server, loomd_monitor_metrics, d->monitor);
    loom_rpc_server_set_health(d->server, loomd_health, &d->methods);
    if (d->tcp)
        write_url_file(d);
    d->info.socket = cfg->socket_path;
    loom_log_info("loomd.started", "version=%s state_dir=%s durability=%s tcp=%s socket=%s pid=%d",
                  LOOM_VERSION, d->state_dir, d->info.durability, d->tcp ? d->url : "none",
                  cfg->socket_path ? cfg->socket_path : "none", (int)getpid());
    return 0;
}

/* Start-up in order; on a failure the ladder below releases what the
 * steps before it acquired. Its labels follow loomd's order of shut-down
 * (docs/loomd.md), which the normal exit falls through whole; every
 * release takes NULL (a part not started yet). */
int main(int argc, char **argv)
{
    daemon_t d = {.o = {.store_reserve = 8u << 20,
                        .listen = "127.0.0.1:7750",
                        .durability = LOOM_DURABILITY_NORMAL,
                        .executor = "local",
                        .seed = 1},
                  .sd = {.fd = -1}};
    int exit_code = 0, sig = 0;
    loom_err_t cerr;
    if (loomd_config_args(argc, argv, &argc, &argv, &cerr)) {
        fprintf(stderr, "loomd: %s\n", cerr.msg);
        return 2;
    }
    if (parse_args(argc, argv, &d.o, &exit_code)) {
        json_decref(d.o.nodes);
        return exit_code;
    }
    loomd_cloexec_inherited(); /* nothing loomd inherited reaches a job */
    if ((exit_code = open_state_dir(&d)) != 0)
        return exit_code;
    if ((exit_code = make_identity(&d)) != 0)
        goto out_state;
    block_signals(&d);
    if ((exit_code = open_store(&d)) != 0 || (exit_code = start_runner(&d)) != 0)
        goto out_store;
    if ((exit_code = make_sizer(&d)) != 0)
        goto out_runner;
    if ((exit_code = add_methods(&d)) != 0 || (exit_code = start_server(&d)) != 0)
        goto out_dash;

    sigwait(&d.sigs, &sig);
    loom_log_info("loomd.stopping", "signal=%s", sig == SIGTERM ? "TERM" : "INT");
    /* Stop accepting, let requests in flight finish (their writes are still
     * committed: the store runs until after the server has stopped). */
    loomd_dash_stop(d.dash); /* ends the dashboard's event streams */
    loom_rpc_server_stop(d.server);
out_dash:
    loomd_dash_free(d.dash);
out_runner:
    /* Jobs keep running under their shepherds; the next loomd adopts them. */
    loomd_jobusage_close(d.jobusage); /* samples running jobs: before the runner */
    loomd_runner_stop(d.runner);
    loomd_monitor_close(d.monitor);
    loomd_zoo_close(d.zoo);
    loom_est_sizer_free(d.sizer);
out_store:
    loom_store_close(d.store);
    json_decref(d.o.nodes);
    loom_rpc_dispatcher_free(d.disp);
    loomd_waits_free(d.methods.waits);
    loomd_identity_free(d.ident);
    if (d.url_path[0])
        unlink(d.url_path);
out_state:
    loomd_state_dir_close(&d.sd);
    if (exit_code == 0)
        loom_log_info("loomd.stopped", NULL);
    return exit_code;
}
