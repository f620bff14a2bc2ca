/* loom prof: run a command under the profiler (logic in src/prof). */
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "cli/cli.h"
#include "loom/estimate.h"
#include "loom/prof.h"

static void prof_usage(FILE *f)
{
    fprintf(f,
            "usage: loom prof [--interval D] [--gpu] [--gpu-interval D] [--kernels] [--out DIR]\n"
            "                 [--estimate FILE] [--device NAME|FILE] [--ab N [--toggle K]] "
            "[--rescan D]\n"
            "                 [--quiet] -- COMMAND [ARGS...]\n\n"
            "Runs COMMAND, samples its process tree every D (default 10ms), collects its\n"
            "step markers (LOOM_STEP lines on stdout or on $LOOM_PROF_FD) and writes a run\n"
            "record and report into DIR (default ./loom-prof-YYYYMMDD-HHMMSS): run.json,\n"
            "steps.csv, samples.csv, cpu.svg, steps.svg, report.md (roofline.svg with\n"
            "--estimate and --device). The report also goes to stderr.\n\n"
            "  --interval D  sampling period (\"10ms\", \"1s\")\n"
            "  --rescan D    how often all of /proc is walked for new processes (10s)\n"
            "  --gpu         also sample GPUs through NVML (utilisation, memory, power, the\n"
            "                tree's GPU memory) every --gpu-interval (100ms); gpu.csv\n"
            "  --kernels     trace GPU kernels and copies with CUPTI (libloom_cupti.so next\n"
            "                to loom, or $LOOM_CUPTI_LIB)\n"
            "  --estimate FILE  FLOPs and bytes per step from `loom estimate MODEL --json`,\n"
            "                for the roofline (else LOOM_META flops_per_step= bytes_per_step=)\n"
            "  --device D    peak rates for the roofline: a name under $LOOM_DEVICE_DIR\n"
            "                (default loom's share/loom/devices) or a JSON file\n"
            "  --ab N        run N pairs with and without the profiler (ABBA order); report\n"
            "                the overhead on step time with 95%% intervals (DIR/ab.json,\n"
            "                DIR/ab_runs.csv)\n"
            "  --toggle K    with --ab N: N runs, each pausing and resuming the sampler\n"
            "                every K steps (blocks on, off, off, on, ...); the overhead\n"
            "                over block pairs (DIR/ab_blocks.csv)\n"
            "  --quiet       do not copy the command's stdout\n\n"
            "exit: 0 if the command succeeded, 1 if it failed or could not start, 2 usage.\n"
            "See docs/profiling.md.\n");
}

static char *cupti_lib_path(void)
{
    const char *env = getenv("LOOM_CUPTI_LIB");
    if (env)
        return strdup(env);
    char exe[PATH_MAX];
    ssize_t n = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (n <= 0)
        return NULL;
    exe[n] = '\0';
    char *slash = strrchr(exe, '/');
    if (!slash)
        return NULL;
    *slash = '\0';
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "%s/libloom_cupti.so", exe);
#ifdef LOOM_LIB_FROM_BIN
    /* installed: in the library directory (make install), not beside loom */
    if (access(b.data, R_OK) != 0) {
        loom_buf_reset(&b);
        loom_buf_appendf(&b, "%s/%s/libloom_cupti.so", exe, LOOM_LIB_FROM_BIN);
    }
#endif
    return loom_buf_detach(&b);
}

static void print_est(const char *what, const loom_prof_ab_est_t *e)
{
    printf("overhead on %s: %+.2f%% (95%% CI t %+.2f%% .. %+.2f%%, bootstrap %+.2f%% .. %+.2f%%; "
           "geometric mean ratio %.4f [%.4f, %.4f]; %zu pairs)\n",
           what, 100 * e->overhead, 100 * e->ci_low, 100 * e->ci_high, 100 * e->boot_low,
           100 * e->boot_high, e->ratio, e->ratio_low, e->ratio_high, e->n);
}

/* The primary figure: the paired log ratio of median steady step times. */
static void print_primary(const char *what, const loom_prof_ab_est_t *e)
{
    if (e->n == 0) {
        printf("%s: none\n", what);
        return;
    }
    printf("%s, median step time, prof/base: geometric mean %+.2f%% (95%% CI t %+.2f%% .. "
           "%+.2f%%, bootstrap %+.2f%% .. %+.2f%%); median pair %+.2f%%",
           what, 100 * (e->ratio - 1), 100 * (e->ratio_low - 1), 100 * (e->ratio_high - 1),
           100 * (e->ratio_boot_low - 1), 100 * (e->ratio_boot_high - 1),
           100 * (e->ratio_median - 1));
    if (e->ratio_median_conf > 0)
        printf(" (%.1f%% CI %+.2f%% .. %+.2f%%)", 100 * e->ratio_median_conf,
               100 * (e->ratio_median_low - 1), 100 * (e->ratio_median_high - 1));
    printf("; %zu pairs\n", e->n);
}

static int run_ab(const loom_prof_opts_t *o, size_t pairs, const char *dir)
{
    loom_prof_ab_t ab;
    loom_err_t err;
    loom_err_clear(&err);
    if (loom_prof_ab_run(o, pairs, &ab, &err)) {
        fprintf(stderr, "loom prof: %s\n", err.msg);
        return LOOM_EXIT_FAILURE;
    }
    int rc = LOOM_EXIT_OK;
    if (loom_prof_ab_write(&ab, o, dir, &err)) {
        fprintf(stderr, "loom prof: %s\n", err.msg);
        rc = LOOM_EXIT_FAILURE;
    }
    if (ab.toggle_steps)
        printf("sampling every %.1f ms, toggled every %zu steps; %zu runs, %zu block pairs; "
               "record: %s/ab.json, ab_runs.csv, ab_blocks.csv\n",
               (double)o->interval_ns / 1e6, ab.toggle_steps, ab.pairs, ab.nblocks, dir);
    else
        printf("sampling every %.1f ms, %zu pairs in ABBA order; record: %s/ab.json, "
               "ab_runs.csv\n",
               (double)o->interval_ns / 1e6, ab.pairs, dir);
    print_primary(ab.toggle_steps ? "block pairs" : "all pairs", &ab.est[LOOM_PROF_AB_WALL_P50]);
    if (!ab.toggle_steps)
        print_primary("quiet pairs", &ab.est_quiet[LOOM_PROF_AB_WALL_P50]);
    print_est("mean steady step time", &ab.est[LOOM_PROF_AB_WALL_MEAN]);
    print_est("median steady step time", &ab.est[LOOM_PROF_AB_WALL_P50]);
    print_est("shortest steady step time", &ab.est[LOOM_PROF_AB_WALL_MIN]);
    if (ab.est[LOOM_PROF_AB_CPU_MEAN].n) {
        print_est("mean steady step CPU time", &ab.est[LOOM_PROF_AB_CPU_MEAN]);
        print_est("median steady step CPU time", &ab.est[LOOM_PROF_AB_CPU_P50]);
        print_est("shortest steady step CPU time", &ab.est[LOOM_PROF_AB_CPU_MIN]);
    } else {
        printf("step CPU time: not measured (the markers carry no cpu_ns)\n");
    }
    printf("profiler CPU per second of run: sampling thread %.5f cores (+-%.5f), whole loom "
           "%.5f cores (+-%.5f; %.5f in baseline runs); profiler CPU / command CPU %.3f%%\n",
           ab.sampler_cores, ab.sampler_cores_ci, ab.profiler_cores, ab.profiler_cores_ci,
           ab.baseline_loom_cores, 100 * ab.profiler_cpu_share);
    loom_prof_ab_free(&ab);
    return rc;
}

static const struct option prof_opts[] = {
    {"interval", required_argument, NULL, 'i'},
    {"gpu", no_argument, NULL, 'g'},
    {"kernels", no_argument, NULL, 'k'},
    {"out", required_argument, NULL, 'o'},
    {"ab", required_argument, NULL, 'a'},
    {"rescan", required_argument, NULL, 'r'},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"gpu-interval", required_argument, NULL, 'G'},
    {"estimate", required_argument, NULL, 'e'},
    {"device", required_argument, NULL, 'd'},
    {"toggle", required_argument, NULL, 't'},
    {NULL, 0, NULL, 0},
};

/* Everything loom prof's options say. */
typedef struct prof_args {
    loom_prof_opts_t o;
    const char *out;
    int64_t pairs;
    bool gpu;
    int64_t gpu_interval;
    loom_prof_roof_input_t roof;
} prof_args_t;

#define PROF_GO_ON (-1) /* an option read: go on (else an exit code) */

/* One option: PROF_GO_ON, or the exit code to return. */
static int prof_opt(prof_args_t *a, int c, loom_err_t *err)
{
    switch (c) {
    case 'i':
    case 'r':
    case 'G': {
        int64_t ns;
        if (loom_parse_duration(optarg, &ns, err) || ns <= 0) {
            fprintf(stderr, "loom prof: --%s '%s': %s\n",
                    c == 'i'   ? "interval"
                    : c == 'r' ? "rescan"
                               : "gpu-interval",
                    optarg, err->msg[0] ? err->msg : "must be > 0");
            return LOOM_EXIT_USAGE;
        }
        if (c == 'i')
            a->o.interval_ns = ns;
        else if (c == 'r')
            a->o.rescan_ns = ns;
        else
            a->gpu_interval = ns;
        break;
    }
    case 'e':
        if (loom_prof_roof_load_estimate(&a->roof, optarg, err)) {
            fprintf(stderr, "loom prof: --estimate: %s\n", err->msg);
            return LOOM_EXIT_USAGE;
        }
        break;
    case 'd': {
        loom_est_device_t dev;
        if (loom_est_device_load(optarg, NULL, &dev, err)) {
            fprintf(stderr, "loom prof: --device: %s\n", err->msg);
            return LOOM_EXIT_USAGE;
        }
        loom_prof_roof_set_device(&a->roof,
                                  &(loom_prof_peaks_t){dev.name, dev.description, dev.flops_fp32,
                                                       dev.flops_half, dev.mem_bandwidth});
        break;
    }
    case 'g': a->gpu = true; break;
    case 'k': a->o.kernels = true; break;
    case 'o': a->out = optarg; break;
    case 'q': a->o.echo_fd = -1; break;
    case 'a':
        if (loom_parse_i64(optarg, 2, 100000, &a->pairs, "--ab", err)) {
            fprintf(stderr, "loom prof: %s\n", err->msg);
            return LOOM_EXIT_USAGE;
        }
        break;
    case 't': {
        int64_t k;
        if (loom_parse_i64(optarg, 2, 1000000, &k, "--toggle", err)) {
            fprintf(stderr, "loom prof: %s\n", err->msg);
            return LOOM_EXIT_USAGE;
        }
        a->o.toggle_steps = (size_t)k;
        break;
    }
    case 'h': prof_usage(stdout); return LOOM_EXIT_OK;
    default: prof_usage(stderr); return LOOM_EXIT_USAGE;
    }
    return PROF_GO_ON;
}

/* With --kernels: the CUPTI tracer's path in *lib (free it) and out made. */
static int prof_kernels(loom_prof_opts_t *o, const char *out, char **lib)
{
    *lib = cupti_lib_path();
    if (!*lib || access(*lib, R_OK)) {
        fprintf(stderr,
                "loom prof: --kernels: the CUPTI tracer '%s' is missing; it is built "
                "only where the CUDA toolkit (/usr/local/cuda with CUPTI) is "
                "installed\n",
                *lib ? *lib : "libloom_cupti.so");
        return LOOM_EXIT_FAILURE;
    }
    o->cupti_lib = *lib;
    o->work_dir = out;
    if (mkdir(out, 0755) && access(out, W_OK)) {
        fprintf(stderr, "loom prof: cannot create '%s'\n", out);
        return LOOM_EXIT_FAILURE;
    }
    return LOOM_EXIT_OK;
}

/* One profiled run: its record in out and its report on stderr. */
static int prof_once(const loom_prof_opts_t *o, const loom_prof_roof_input_t *roof, const char *out)
{
    loom_err_t err;
    loom_prof_run_t *run;
    if (loom_prof_run(o, &run, &err)) {
        fprintf(stderr, "loom prof: %s\n", err.msg);
        return LOOM_EXIT_FAILURE;
    }
    int rc = WIFEXITED(run->exit_status) && WEXITSTATUS(run->exit_status) == 0 ? LOOM_EXIT_OK
                                                                               : LOOM_EXIT_FAILURE;
    run->roof = *roof;
    if (loom_prof_write(run, out, &err)) {
        fprintf(stderr, "loom prof: %s\n", err.msg);
        rc = LOOM_EXIT_FAILURE;
    } else {
        /* The report just written, not built again (with --kernels that
         * would read and parse the whole record file once more). */
        loom_buf_t b = LOOM_BUF_INIT, path = LOOM_BUF_INIT;
        loom_buf_appendf(&path, "%s/report.md", out);
        if (!path.data || loom_buf_read_file(&b, path.data, NULL) != LOOM_OK)
            loom_prof_report_md(run, &b);
        loom_buf_free(&path);
        fprintf(stderr,
                "%s\nrecord: %s/run.json (also steps.csv, samples.csv, cpu.svg, steps.svg, "
                "report.md)\n",
                b.data ? b.data : "", out);
        loom_buf_free(&b);
    }
    loom_prof_run_free(run);
    return rc;
}

int loom_cmd_prof(int argc, char **argv)
{
    prof_args_t a = {.o = {.interval_ns = 10 * LOOM_NS_PER_MS, .echo_fd = STDOUT_FILENO},
                     .gpu_interval = 100 * LOOM_NS_PER_MS};
    loom_err_t err;
    loom_err_clear(&err);
    int c, rc;
    while ((c = getopt_long(argc, argv, "+:h", prof_opts, NULL)) != -1)
        if (c == '?' || c == ':')
            return loom_cli_bad_option("prof", c, argv[optind - 1]);
        else if ((rc = prof_opt(&a, c, &err)) != PROF_GO_ON)
            return rc;
    loom_prof_opts_t o = a.o;
    if (optind >= argc) {
        fprintf(stderr, "loom prof: no command given (loom prof [OPTIONS] -- COMMAND ...)\n");
        return LOOM_EXIT_USAGE;
    }
    if (o.toggle_steps && !a.pairs) {
        fprintf(stderr, "loom prof: --toggle K needs --ab N (the within-run overhead "
                        "measurement)\n");
        return LOOM_EXIT_USAGE;
    }
    if (a.gpu)
        o.gpu_interval_ns = a.gpu_interval;
    o.argv = argv + optind;
    char defdir[64];
    const char *out = a.out;
    if (!out) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(defdir, sizeof defdir, "loom-prof-%Y%m%d-%H%M%S", &tm);
        out = defdir;
    }
    char *lib = NULL;
    if (o.kernels && (rc = prof_kernels(&o, out, &lib))) {
        free(lib);
        return rc;
    }
    /* Ctrl-C reaches the command (same process group); loom itself stays
     * to write the record of the interrupted run, as system(3) does. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    if (a.pairs) {
        o.echo_fd = -1;
        rc = run_ab(&o, (size_t)a.pairs, out);
    } else {
        rc = prof_once(&o, &a.roof, out);
    }
    free(lib);
    return rc;
}
