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

#include "daemon/config.h"
#include "daemon/dash.h"
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
    fprintf(f,
            "usage: loomd [--listen ADDR:PORT] [--socket PATH] [--state-dir DIR]\n"
            "             [--durability normal|full] [--log-level L] [--help] [--version]\n"
            "             [--executor local|slurm|none] [--slurm-partition P]\n"
            "             [--queue-policy P] [--placement P]\n"
            "             [--node SPEC]... [--gpus N] [--gpu-type T] [--gpu-memory SIZE]\n"
            "             [--grace D] [--seed S] [--timeslice D] [--pack-check]\n"
            "             [--estimate-margin M] [--estimate-device D] [--device-dir DIR]\n"
            "             [--config FILE|none] [--move-orphaned-jobs] [--store-reserve SIZE]\n"
            "             [--job-output-max SIZE]\n"
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
            "  --queue-policy P     fifo, sjf, priority, tiresias, fairshare[:HALF_LIFE]\n"
            "                       (default fifo)\n"
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
            "  --timeslice D        Gandiva time-slicing: a job that cannot be placed may\n"
            "                       suspend jobs that have run D since they last started\n"
            "                       (default off)\n"
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
            "  --multi-user         share the machine (docs/security.md): callers are who the\n"
            "                       kernel (Unix socket) or MUNGE (TCP) says; jobs run as\n"
            "                       their owners; the socket (give --socket PATH outside the\n"
            "                       state directory) is open to everyone. Needs root.\n"
            "  --operators GROUP    members of GROUP act on every job, as root does\n"
            "  --allow-root-jobs    accept jobs of root in multi-user mode (refused otherwise)\n"
            "  --munge-socket PATH  munged's socket (default libmunge's)\n"
            "  --quota WHO=LIMITS   submission quota, repeatable: WHO user:NAME, account:NAME\n"
            "                       or * (every user); LIMITS pending=N,time=D\n"
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
    bool pack_check;
    bool move_orphaned_jobs;
    uint64_t store_reserve;
    uint64_t job_output_max;
    const char *estimate_margin, *estimate_device, *device_dir;
    loomd_identity_config_t ident;
    loomd_quotas_t quotas;
} opts_t;

static int parse_args(int argc, char **argv, opts_t *o, int *exit_code)
{
    static const struct option longopts[] = {
        {"listen", required_argument, NULL, 'l'},
        {"socket", required_argument, NULL, 's'},
        {"state-dir", required_argument, NULL, 'd'},
        {"durability", required_argument, NULL, 'D'},
        {"log-level", required_argument, NULL, 'L'},
        {"help", no_argument, NULL, 'h'},
        {"version", no_argument, NULL, 'V'},
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
        {NULL, 0, NULL, 0},
    };
    loom_err_t err;
    int c;
    while ((c = getopt_long(argc, argv, "h", longopts, NULL)) != -1) {
        switch (c) {
        case 'l': o->listen = optarg; break;
        case 's': o->socket = optarg; break;
        case 'd': o->state_dir = optarg; break;
        case 'D':
            if (loom_durability_parse(optarg, &o->durability, &err)) {
                fprintf(stderr, "loomd: --durability: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            break;
        case 'L': {
            loom_log_level_t lvl;
            if (loom_log_parse_level(optarg, &lvl, &err)) {
                fprintf(stderr, "loomd: --log-level: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            loom_log_set_level(lvl);
            break;
        }
        case 'E':
            if (strcmp(optarg, "local") != 0 && strcmp(optarg, "slurm") != 0 &&
                strcmp(optarg, "none") != 0) {
                fprintf(stderr, "loomd: --executor '%s': expected local, slurm or none\n", optarg);
                *exit_code = 2;
                return -1;
            }
            o->executor = optarg;
            break;
        case 'Q': o->queue_policy = optarg; break;
        case 'p': o->slurm_partition = optarg; break;
        case 'k': o->pack_check = true; break;
        case 'm': {
            loom_est_margin_t m;
            if (loom_est_margin_parse(optarg, &m, &err)) {
                fprintf(stderr, "loomd: --estimate-margin: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            o->estimate_margin = optarg;
            break;
        }
        case 'e': o->estimate_device = optarg; break;
        case 'R': o->device_dir = optarg; break;
        case 'U': o->ident.multi_user = true; break;
        case 'X': o->ident.operators = optarg; break;
        case 'A': o->ident.allow_root_jobs = true; break;
        case 'u': o->ident.munge_socket = optarg; break;
        case 'Z':
            if (loomd_quota_parse(optarg, &o->quotas, &err)) {
                fprintf(stderr, "loomd: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            break;
        case 'q':
            if (loom_parse_duration(optarg, &o->timeslice_ns, &err)) {
                fprintf(stderr, "loomd: --timeslice: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            break;
        case 'O': o->move_orphaned_jobs = true; break;
        case 'r':
        case 'o':
            if (loom_parse_size(optarg, c == 'r' ? &o->store_reserve : &o->job_output_max, &err)) {
                fprintf(stderr, "loomd: %s: %s\n",
                        c == 'r' ? "--store-reserve" : "--job-output-max", err.msg);
                *exit_code = 2;
                return -1;
            }
            break;
        case 'P': o->placement = optarg; break;
        case 'T': o->gpu_type = optarg; break;
        case 'N': {
            json_t *n;
            if (loomd_parse_node(optarg, &n, &err)) {
                fprintf(stderr, "loomd: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            if (!o->nodes)
                o->nodes = json_array();
            json_array_append_new(o->nodes, n);
            break;
        }
        case 'G':
        case 'M':
        case 'g':
        case 'S': {
            int rc = c == 'G'   ? loom_parse_i64(optarg, 0, 16, &o->vgpus, "--gpus", &err)
                     : c == 'M' ? loom_parse_size(optarg, &o->gpu_memory, &err)
                     : c == 'g' ? loom_parse_duration(optarg, &o->grace_ns, &err)
                                : loom_parse_i64(optarg, 0, INT64_MAX, &o->seed, "--seed", &err);
            if (rc) {
                fprintf(stderr, "loomd: %s\n", err.msg);
                *exit_code = 2;
                return -1;
            }
            o->vgpus_given = o->vgpus_given || c == 'G';
            break;
        }
        case 'h':
            usage(stdout);
            *exit_code = 0;
            return -1;
        case 'V':
            printf("loomd %s\n", LOOM_VERSION);
            *exit_code = 0;
            return -1;
        default:
            usage(stderr);
            *exit_code = 2;
            return -1;
        }
    }
    if (optind < argc) {
        fprintf(stderr, "loomd: unexpected argument '%s' (see loomd --help)\n", argv[optind]);
        *exit_code = 2;
        return -1;
    }
    if (loomd_identity_check_args(&o->ident, o->socket, o->executor, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        *exit_code = 2;
        return -1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    opts_t o = {.store_reserve = 8u << 20,
                .listen = "127.0.0.1:7750",
                .durability = LOOM_DURABILITY_NORMAL,
                .executor = "local",
                .seed = 1};
    int exit_code = 0;
    loom_err_t cerr;
    if (loomd_config_args(argc, argv, &argc, &argv, &cerr)) {
        fprintf(stderr, "loomd: %s\n", cerr.msg);
        return 2;
    }
    if (parse_args(argc, argv, &o, &exit_code)) {
        json_decref(o.nodes);
        return exit_code;
    }

    loomd_cloexec_inherited(); /* nothing loomd inherited reaches a job */
    loom_err_t err;
    char state_dir[4096];
    if (o.state_dir)
        snprintf(state_dir, sizeof state_dir, "%s", o.state_dir);
    else if (loom_store_default_state_dir(state_dir, sizeof state_dir, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    /* Created, checked, locked on its own descriptor (docs/loomd.md). */
    loomd_state_dir_t sd;
    if (loomd_state_dir_open(state_dir, &sd, &err) ||
        loomd_state_dir_check_orphans(&sd, o.move_orphaned_jobs, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }
    snprintf(state_dir, sizeof state_dir, "%s", sd.path);
    char path[4200], sock_path[4200], url_path[4200];
    char token[LOOM_RPC_TOKEN_HEX + 1];
    if (loom_rpc_token_ensure(state_dir, token, &err)) {
        fprintf(stderr, "loomd: token: %s\n", err.msg);
        return 1;
    }
    o.ident.token = token;
    loomd_identity_t *ident = NULL;
    if (loomd_identity_prepare(&o.ident, state_dir, &err) ||
        loomd_identity_new(&o.ident, &ident, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        return 1;
    }

    /* Signals are taken by sigwait in this thread; block them before any
     * thread starts so that every thread inherits the mask. */
    sigset_t sigs;
    sigemptyset(&sigs);
    sigaddset(&sigs, SIGTERM);
    sigaddset(&sigs, SIGINT);
    pthread_sigmask(SIG_BLOCK, &sigs, NULL);
    signal(SIGPIPE, SIG_IGN);

    snprintf(path, sizeof path, "%s/loom.db", state_dir);
    char reserve_path[4200];
    snprintf(reserve_path, sizeof reserve_path, "%s/loom.reserve", state_dir);
    loom_store_options_t sopts = {.durability = o.durability,
                                  .reserve_path = reserve_path,
                                  .reserve_bytes = (size_t)o.store_reserve};
    loom_store_t *store = NULL;
    int64_t max_id = 0;
    if (loom_store_open(path, &sopts, &store, &err)) {
        fprintf(stderr, "loomd: store: %s\n", err.msg);
        return 1;
    }
    if (loom_store_max_id(store, &max_id, &err) ||
        loomd_state_dir_check_ids(&sd, max_id, o.move_orphaned_jobs, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        loom_store_close(store);
        return 1;
    }

    loomd_info_t info = {
        .state_dir = state_dir,
        .durability = loom_durability_name(o.durability),
        .started_real_ns = loom_time_real_ns(),
        .started_mono_ns = loom_time_mono_ns(),
    };
    loomd_runner_t *runner = NULL;
    loom_est_sizer_t *sizer = NULL;
    if (strcmp(o.executor, "slurm") == 0 && o.nodes) {
        fprintf(stderr, "loomd: --node: the Slurm executor mirrors the partition's nodes; "
                        "--node applies to --executor local only\n");
        loom_store_close(store);
        json_decref(o.nodes);
        return 2;
    }
    if (strcmp(o.executor, "none") != 0) {
        if (!o.nodes && strcmp(o.executor, "local") == 0) {
            /* Without --gpus, the GPUs NVML sees (if any) make the node. */
            char type[LOOM_SCHED_NAME_MAX];
            int ngpus = 0;
            uint64_t gmem = 0;
            loom_err_t derr;
            if (!o.vgpus_given && loomd_detect_gpus(&ngpus, type, sizeof type, &gmem, &derr) == 0) {
                loom_log_info("loomd.gpus_detected", "gpus=%d type=%s memory_bytes=%llu", ngpus,
                              type, (unsigned long long)gmem);
                o.vgpus = ngpus;
                if (!o.gpu_type)
                    o.gpu_type = type;
                if (!o.gpu_memory)
                    o.gpu_memory = gmem;
            }
            o.nodes = json_array();
            json_array_append_new(o.nodes,
                                  loomd_default_node((int)o.vgpus, o.gpu_type, o.gpu_memory));
        }
        char jobs_dir[4200];
        snprintf(jobs_dir, sizeof jobs_dir, "%s/jobs", state_dir);
        loomd_runner_config_t rcfg = {.queue_policy = o.queue_policy,
                                      .placement = o.placement,
                                      .jobs_dir = jobs_dir,
                                      .grace_ns = o.grace_ns,
                                      .seed = (uint64_t)o.seed,
                                      .timeslice_ns = o.timeslice_ns,
                                      .pack_check = o.pack_check,
                                      .nodes = o.nodes,
                                      .executor = o.executor,
                                      .slurm_partition = o.slurm_partition,
                                      .output_max = o.job_output_max};
        if (loomd_runner_start(store, &rcfg, &runner, &err)) {
            fprintf(stderr, "loomd: %s\n", err.msg);
            loom_store_close(store);
            json_decref(o.nodes);
            return 1;
        }
    }
    loom_est_sizer_opts_t eopts = {.device = o.estimate_device ? o.estimate_device : "h200",
                                   .device_dir = o.device_dir};
    if (loom_est_margin_parse(o.estimate_margin ? o.estimate_margin : "10%+256MiB", &eopts.margin,
                              &err) ||
        loom_est_sizer_new(&eopts, &sizer, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        loomd_runner_stop(runner);
        loom_store_close(store);
        json_decref(o.nodes);
        return 1;
    }
    info.estimate_device = eopts.device;
    info.estimate_margin = o.estimate_margin ? o.estimate_margin : "10%+256MiB";
    loomd_methods_t methods = {
        .store = store, .info = &info,  .runner = runner, .sizer = sizer, .ident = ident,
        .quotas = &o.quotas};
    loomd_monitor_t *monitor = NULL;
    loomd_zoo_t *zoo = NULL;
    loom_rpc_dispatcher_t *disp = NULL;
    loomd_dash_t *dash = NULL;
    if (loomd_monitor_open(store, runner, &monitor, &err) ||
        loom_rpc_dispatcher_new(NULL, &disp, &err) || loomd_methods_add(disp, &methods, &err) ||
        loomd_monitor_add_methods(disp, monitor, &err) ||
        loomd_zoo_open(state_dir, store, &zoo, &err) || loomd_zoo_add_methods(disp, zoo, &err) ||
        loomd_dash_new(disp, store, &info, &dash, &err) ||
        loomd_usage_add_methods(disp, store, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        loomd_dash_free(dash);
        loomd_zoo_close(zoo);
        loom_rpc_dispatcher_free(disp);
        loomd_monitor_close(monitor);
        loomd_runner_stop(runner);
        loom_est_sizer_free(sizer);
        loom_store_close(store);
        json_decref(o.nodes);
        return 1;
    }

    loom_rpc_server_config_t cfg;
    loom_rpc_server_config_init(&cfg);
    bool tcp = o.listen && *o.listen && strcmp(o.listen, "none") != 0;
    cfg.listen = tcp ? o.listen : NULL;
    if (o.socket && strcmp(o.socket, "none") == 0) {
        cfg.socket_path = NULL;
    } else {
        snprintf(sock_path, sizeof sock_path, "%s", o.socket ? o.socket : "");
        if (!o.socket)
            snprintf(sock_path, sizeof sock_path, "%s/loomd.sock", state_dir);
        cfg.socket_path = sock_path;
    }
    cfg.token = token;
    cfg.http_hook = loomd_dash_hook(dash);
    loomd_identity_install(ident, &cfg);
    loom_rpc_server_t *server = NULL;
    if (loom_rpc_server_start(&cfg, disp, &server, &err) ||
        loomd_identity_open_socket(ident, cfg.socket_path, &err)) {
        fprintf(stderr, "loomd: %s\n", err.msg);
        loomd_dash_free(dash);
        loom_rpc_dispatcher_free(disp);
        loomd_monitor_close(monitor);
        loomd_zoo_close(zoo);
        loomd_runner_stop(runner);
        loom_est_sizer_free(sizer);
        loom_store_close(store);
        json_decref(o.nodes);
        return 1;
    }
    loom_rpc_server_add_metrics_source(server, loomd_methods_metrics, &methods);
    loom_rpc_server_add_metrics_source(server, loomd_monitor_metrics, monitor);
    loom_rpc_server_set_health(server, loomd_health, &methods);

    char url[300] = "";
    if (tcp) {
        /* The host part as given, the port as bound (port 0 -> a free one). */
        char host[256];
        snprintf(host, sizeof host, "%s", o.listen);
        char *colon = strrchr(host, ':');
        if (colon)
            *colon = '\0';
        snprintf(url, sizeof url, "http://%s:%u", host, loom_rpc_server_port(server));
        info.tcp_url = url;
        snprintf(url_path, sizeof url_path, "%s/loomd.url", state_dir);
        loom_buf_t line = LOOM_BUF_INIT;
        loom_buf_appendf(&line, "%s\n", url);
        if (loom_write_file_atomic(url_path, line.data, line.len, 0600, &err))
            loom_log_warn("loomd.url_file", "error=\"%s\"", err.msg);
        loom_buf_free(&line);
    }
    info.socket = cfg.socket_path;
    loom_log_info("loomd.started", "version=%s state_dir=%s durability=%s tcp=%s socket=%s pid=%d",
                  LOOM_VERSION, state_dir, info.durability, tcp ? url : "none",
                  cfg.socket_path ? cfg.socket_path : "none", (int)getpid());

    int sig = 0;
    sigwait(&sigs, &sig);
    loom_log_info("loomd.stopping", "signal=%s", sig == SIGTERM ? "TERM" : "INT");
    /* Stop accepting, let requests in flight finish (their writes are still
     * committed: the store runs until after the server has stopped). */
    loomd_dash_stop(dash); /* ends the dashboard's event streams */
    loom_rpc_server_stop(server);
    loomd_dash_free(dash);
    /* Jobs keep running under their shepherds; the next loomd adopts them. */
    loomd_runner_stop(runner);
    loomd_monitor_close(monitor);
    loomd_zoo_close(zoo);
    loom_est_sizer_free(sizer);
    loom_store_close(store);
    json_decref(o.nodes);
    loom_rpc_dispatcher_free(disp);
    loomd_identity_free(ident);
    if (tcp)
        unlink(url_path);
    loomd_state_dir_close(&sd);
    loom_log_info("loomd.stopped", NULL);
    return 0;
}
