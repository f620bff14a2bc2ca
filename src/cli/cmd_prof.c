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
#include "loom/prof.h"

static void prof_usage(FILE *f)
{
    fprintf(f,
            "usage: loom prof [--interval D] [--gpu] [--gpu-interval D] [--kernels] [--out DIR]\n"
            "                 [--ab N] [--rescan D] [--quiet] -- COMMAND [ARGS...]\n\n"
            "Runs COMMAND, samples its process tree every D (default 10ms), collects its\n"
            "step markers (LOOM_STEP lines on stdout or on $LOOM_PROF_FD) and writes a run\n"
            "record and report into DIR (default ./loom-prof-YYYYMMDD-HHMMSS): run.json,\n"
            "steps.csv, samples.csv, cpu.svg, report.md. The report also goes to stderr.\n\n"
            "  --interval D  sampling period (\"10ms\", \"1s\")\n"
            "  --rescan D    how often all of /proc is walked for new processes (1s)\n"
            "  --gpu         also sample GPUs through NVML (utilisation, memory, power, the\n"
            "                tree's GPU memory) every --gpu-interval (100ms); gpu.csv\n"
            "  --kernels     trace GPU kernels and copies with CUPTI (libloom_cupti.so next\n"
            "                to loom, or $LOOM_CUPTI_LIB)\n"
            "  --ab N        run N pairs with and without the profiler; report the overhead on\n"
            "                step time with a 95%% confidence interval (DIR/ab.json)\n"
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
    return loom_buf_detach(&b);
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
    json_t *base = json_array(), *prof = json_array(), *bp = json_array(), *pp = json_array();
    json_t *cs = json_array();
    double share = 0;
    for (size_t i = 0; i < ab.pairs; i++) {
        json_array_append_new(cs, json_real(ab.prof_cpu_share[i]));
        share += ab.prof_cpu_share[i] / (double)ab.pairs;
        json_array_append_new(base, json_real(ab.base_mean_s[i]));
        json_array_append_new(prof, json_real(ab.prof_mean_s[i]));
        json_array_append_new(bp, json_real(ab.base_p50_s[i]));
        json_array_append_new(pp, json_real(ab.prof_p50_s[i]));
    }
    json_t *cmd = json_array();
    for (size_t i = 0; o->argv[i]; i++)
        json_array_append_new(cmd, json_string(o->argv[i]));
    char when[32];
    loom_time_format_rfc3339(loom_time_real_ns(), when);
    json_t *j =
        json_pack("{s:o,s:s,s:f,s:I,s:o,s:o,s:f,s:f,s:f,s:o,s:o,s:f,s:f,s:f}", "command", cmd,
                  "finished", when, "interval_s", (double)o->interval_ns / 1e9, "pairs",
                  (json_int_t)ab.pairs, "base_mean_step_s", base, "prof_mean_step_s", prof,
                  "overhead", ab.overhead, "ci95_low", ab.ci_low, "ci95_high", ab.ci_high,
                  "base_p50_step_s", bp, "prof_p50_step_s", pp, "overhead_p50", ab.overhead_p50,
                  "ci95_low_p50", ab.ci_low_p50, "ci95_high_p50", ab.ci_high_p50);
    json_object_set_new(j, "profiler_cpu_share", cs);
    json_object_set_new(j, "profiler_cpu_share_mean", json_real(share));
    char *text = json_dumps(j, JSON_INDENT(1));
    json_decref(j);
    int rc = LOOM_EXIT_OK;
    if (mkdir(dir, 0755) && access(dir, W_OK)) {
        fprintf(stderr, "loom prof: cannot create '%s'\n", dir);
        rc = LOOM_EXIT_FAILURE;
    } else {
        loom_buf_t path = LOOM_BUF_INIT;
        loom_buf_appendf(&path, "%s/ab.json", dir);
        if (!text || loom_write_file_atomic(path.data, text, strlen(text), 0644, &err)) {
            fprintf(stderr, "loom prof: %s\n", text ? err.msg : "out of memory");
            rc = LOOM_EXIT_FAILURE;
        }
        loom_buf_free(&path);
    }
    free(text);
    printf("overhead on mean steady step time: %+.2f%% (95%% CI %+.2f%% .. %+.2f%%, %zu pairs, "
           "sampling every %.1f ms)\n",
           100 * ab.overhead, 100 * ab.ci_low, 100 * ab.ci_high, ab.pairs,
           (double)o->interval_ns / 1e6);
    printf("overhead on median steady step time: %+.2f%% (95%% CI %+.2f%% .. %+.2f%%)\n",
           100 * ab.overhead_p50, 100 * ab.ci_low_p50, 100 * ab.ci_high_p50);
    printf("profiler CPU time / command CPU time, profiled runs: %.3f%% (mean)\n", 100 * share);
    loom_prof_ab_free(&ab);
    return rc;
}

int loom_cmd_prof(int argc, char **argv)
{
    static const struct option opts[] = {
        {"interval", required_argument, NULL, 'i'},
        {"gpu", no_argument, NULL, 'g'},
        {"kernels", no_argument, NULL, 'k'},
        {"out", required_argument, NULL, 'o'},
        {"ab", required_argument, NULL, 'a'},
        {"rescan", required_argument, NULL, 'r'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {"gpu-interval", required_argument, NULL, 'G'},
        {NULL, 0, NULL, 0},
    };
    loom_prof_opts_t o = {.interval_ns = 10 * LOOM_NS_PER_MS, .echo_fd = STDOUT_FILENO};
    const char *out = NULL;
    int64_t pairs = 0;
    bool gpu = false;
    int64_t gpu_interval = 100 * LOOM_NS_PER_MS;
    loom_err_t err;
    loom_err_clear(&err);
    int c;
    while ((c = getopt_long(argc, argv, "+h", opts, NULL)) != -1) {
        switch (c) {
        case 'i':
        case 'r':
        case 'G': {
            int64_t ns;
            if (loom_parse_duration(optarg, &ns, &err) || ns <= 0) {
                fprintf(stderr, "loom prof: --%s '%s': %s\n",
                        c == 'i'   ? "interval"
                        : c == 'r' ? "rescan"
                                   : "gpu-interval",
                        optarg, err.msg[0] ? err.msg : "must be > 0");
                return LOOM_EXIT_USAGE;
            }
            if (c == 'i')
                o.interval_ns = ns;
            else if (c == 'r')
                o.rescan_ns = ns;
            else
                gpu_interval = ns;
            break;
        }
        case 'g': gpu = true; break;
        case 'k': o.kernels = true; break;
        case 'o': out = optarg; break;
        case 'q': o.echo_fd = -1; break;
        case 'a':
            if (loom_parse_i64(optarg, 2, 100000, &pairs, "--ab", &err)) {
                fprintf(stderr, "loom prof: %s\n", err.msg);
                return LOOM_EXIT_USAGE;
            }
            break;
        case 'h': prof_usage(stdout); return LOOM_EXIT_OK;
        default: prof_usage(stderr); return LOOM_EXIT_USAGE;
        }
    }
    if (optind >= argc) {
        fprintf(stderr, "loom prof: no command given (loom prof [OPTIONS] -- COMMAND ...)\n");
        return LOOM_EXIT_USAGE;
    }
    if (gpu)
        o.gpu_interval_ns = gpu_interval;
    o.argv = argv + optind;
    char defdir[64];
    if (!out) {
        time_t now = time(NULL);
        struct tm tm;
        gmtime_r(&now, &tm);
        strftime(defdir, sizeof defdir, "loom-prof-%Y%m%d-%H%M%S", &tm);
        out = defdir;
    }
    char *lib = NULL;
    if (o.kernels) {
        lib = cupti_lib_path();
        if (!lib || access(lib, R_OK)) {
            fprintf(stderr,
                    "loom prof: --kernels: the CUPTI tracer '%s' is missing; it is built "
                    "only where the CUDA toolkit (/usr/local/cuda with CUPTI) is "
                    "installed\n",
                    lib ? lib : "libloom_cupti.so");
            free(lib);
            return LOOM_EXIT_FAILURE;
        }
        o.cupti_lib = lib;
        o.work_dir = out;
        if (mkdir(out, 0755) && access(out, W_OK)) {
            fprintf(stderr, "loom prof: cannot create '%s'\n", out);
            free(lib);
            return LOOM_EXIT_FAILURE;
        }
    }
    /* Ctrl-C reaches the command (same process group); loom itself stays
     * to write the record of the interrupted run, as system(3) does. */
    signal(SIGPIPE, SIG_IGN);
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    int rc;
    if (pairs) {
        o.echo_fd = -1;
        rc = run_ab(&o, (size_t)pairs, out);
        free(lib);
        return rc;
    }
    loom_prof_run_t *run;
    if (loom_prof_run(&o, &run, &err)) {
        fprintf(stderr, "loom prof: %s\n", err.msg);
        free(lib);
        return LOOM_EXIT_FAILURE;
    }
    rc = WIFEXITED(run->exit_status) && WEXITSTATUS(run->exit_status) == 0 ? LOOM_EXIT_OK
                                                                           : LOOM_EXIT_FAILURE;
    if (loom_prof_write(run, out, &err)) {
        fprintf(stderr, "loom prof: %s\n", err.msg);
        rc = LOOM_EXIT_FAILURE;
    } else {
        loom_buf_t b = LOOM_BUF_INIT;
        loom_prof_report_md(run, &b);
        fprintf(stderr,
                "%s\nrecord: %s/run.json (also steps.csv, samples.csv, cpu.svg, "
                "report.md)\n",
                b.data ? b.data : "", out);
        loom_buf_free(&b);
    }
    loom_prof_run_free(run);
    free(lib);
    return rc;
}
