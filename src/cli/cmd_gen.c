/* loom gen: the workload generator's command line. Parses options, loads
 * the catalog (and a trace), builds a source and a sink, runs
 * loom_gen_run and prints the summary. All logic is in libloom (src/gen). */
#include <errno.h>
#include <getopt.h>
#include <signal.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "cli/cli.h"
#include "cli/client.h"
#include "loom/catalog.h"
#include "loom/gen.h"
#include "loom/rpc.h"
#include "loom/zoo.h"

static void usage(FILE *f)
{
    fprintf(
        f,
        "usage: loom gen --catalog FILE --rate R [options] [sink]\n\n"
        "Generates jobs from a catalog at a rate and sends them to a sink.\n\n"
        "arrivals:\n"
        "  --rate R              jobs per unit time: 10/s, 600/min, 2.5/h (a bare number is /s)\n"
        "  --process P           constant (default), poisson, gamma or trace\n"
        "  --cv X                gamma: coefficient of variation of the gaps (> 0)\n"
        "  --trace FILE          trace: CSV file with a header row\n"
        "  --trace-column NAME   trace: column of times in seconds (default creation_time)\n"
        "  --time-scale F        trace: multiply trace times by F (default: match --rate, else 1)\n"
        "  --trace-missing M     trace: error (default) or skip rows without a time\n"
        "  --duration D          stop at the first job due at or after D (90s, 1h, ...)\n"
        "  --count N             stop after N jobs\n"
        "  --seed S              seed of every random choice (default: random, printed)\n"
        "  --run-tag TAG         mixed into submit ids (runs with one seed stay apart)\n"
        "  --run-nonce N         mixed into submit ids (default: random, printed); an earlier\n"
        "                        run's nonce resends that run's ids\n"
        "jobs:\n"
        "  --template-kind K     slurm (default), k8s or local: the shipped template used\n"
        "                        for every job (default: the job's own, else slurm)\n"
        "  --template FILE       use this template for every job\n"
        "  --templates DIR       where the shipped templates are\n"
        "sinks (one; default --dry-run):\n"
        "  --dry-run             generate and render, then discard\n"
        "  --stdout              every job's text to standard output\n"
        "  --out DIR             DIR/job-N.EXT and DIR/manifest.jsonl\n"
        "  --submit URL          job.submit to loomd (URL '-': loomd's address as\n"
        "                        for every command: --url, $LOOM_URL, else its socket)\n"
        "  --slurm               sbatch --parsable with each script on standard input\n"
        "  --sbatch-arg ARG      --slurm: one more sbatch argument (repeatable), e.g. --hold\n"
        "sending:\n"
        "  --window N            jobs in flight at most (default 1024)\n"
        "  --workers N           sender threads (default 2)\n"
        "  --batch N             jobs per sink call at most (default 64)\n"
        "  --on-backlog P        at a full window: wait (default), drop or fail\n"
        "  --retry-for D         --submit: keep retrying an unreachable loomd this long (30s)\n"
        "  --spin US|auto        busy-wait the last US microseconds before a due time;\n"
        "                        auto (default): follow how late sleeps wake up here,\n"
        "                        from 20 us up to 5 ms (SCHED_FIFO only; the normal\n"
        "                        policy spins 20 us); 0: never spin\n"
        "  --no-realtime         keep the pacer under the normal policy (default: its\n"
        "                        thread runs under SCHED_FIFO when the process may:\n"
        "                        root or CAP_SYS_NICE; --realtime is that default)\n"
        "  --no-pin              let the pacer thread run on any CPU (default: pinned to\n"
        "                        the last CPU the process may use, when it may use two)\n"
        "output:\n"
        "  --json                the summary as one JSON object on standard output\n"
        "                        (standard error with --stdout)\n\n"
        "Live progress goes to standard error when it is a terminal. Exit codes: 0 ok,\n"
        "1 jobs failed or the run stopped, 2 usage, 3 cannot reach loomd, 5 bad catalog\n"
        "or trace. See docs/generator.md.\n");
}

enum {
    OPT_CATALOG = 256,
    OPT_RATE,
    OPT_PROCESS,
    OPT_CV,
    OPT_TRACE,
    OPT_TRACE_COLUMN,
    OPT_TIME_SCALE,
    OPT_TRACE_MISSING,
    OPT_DURATION,
    OPT_COUNT,
    OPT_SEED,
    OPT_RUN_NONCE,
    OPT_RUN_TAG, /* the last of arrival_opt's (its default) */
    OPT_KIND,
    OPT_TEMPLATE,
    OPT_TEMPLATES,
    OPT_DRY_RUN,
    OPT_STDOUT,
    OPT_OUT,
    OPT_SUBMIT,
    OPT_SLURM,
    OPT_WINDOW,
    OPT_WORKERS,
    OPT_BATCH,
    OPT_BACKLOG,
    OPT_RETRY_FOR,
    OPT_SPIN,
    OPT_JSON,
    OPT_REALTIME,
    OPT_NO_REALTIME,
    OPT_NO_PIN,
    OPT_SBATCH_ARG,
    OPT_HELP
};

typedef struct progress_ctx {
    bool tty;
} progress_ctx_t;

static volatile int stop_flag;

static void on_signal(int sig)
{
    stop_flag = 1;
}

static void on_progress(void *ctx, const loom_gen_report_t *r)
{
    fprintf(stderr,
            "\r\033[Ksent %llu  rate %.2f/s  lateness p99 %.0f us  errors %llu  dropped %llu",
            (unsigned long long)r->sent, r->rate_achieved,
            (double)loom_gen_hist_quantile(&r->lateness, 0.99) / 1e3, (unsigned long long)r->failed,
            (unsigned long long)r->dropped);
    fflush(stderr);
}

static void print_summary(FILE *f, const loom_gen_report_t *r, const loom_gen_source_t *src,
                          const loom_gen_config_t *cfg)
{
    fprintf(f,
            "generated %llu jobs (%s, seed %llu, run nonce %llu) in %.3f s: sent %llu, ok %llu, "
            "failed %llu, dropped %llu\n",
            (unsigned long long)r->scheduled, loom_gen_process_name(cfg->arrivals.process),
            (unsigned long long)cfg->seed, (unsigned long long)cfg->run_nonce,
            (double)r->elapsed_ns / 1e9, (unsigned long long)r->sent, (unsigned long long)r->ok,
            (unsigned long long)r->failed, (unsigned long long)r->dropped);
    if (r->stopped)
        fprintf(f, "stopped early by a signal\n");
    fprintf(f, "pacer: %s",
            r->realtime     ? "SCHED_FIFO"
            : cfg->realtime ? "normal policy (SCHED_FIFO refused)"
                            : "normal policy");
    if (r->wake.n > 0)
        fprintf(f,
                "; spin %.0f us (largest %.0f us), sleeps woke up late by p50 %.1f us, p99 "
                "%.1f us, max %.1f us",
                (double)r->spin_ns / 1e3, (double)r->spin_max_ns / 1e3,
                (double)loom_gen_hist_quantile(&r->wake, 0.5) / 1e3,
                (double)loom_gen_hist_quantile(&r->wake, 0.99) / 1e3, (double)r->wake.max / 1e3);
    if (r->pacer_cpu >= 0)
        fprintf(f, "; pinned to CPU %d", r->pacer_cpu);
    fprintf(f, "\n");
    uint64_t nlate = 0;
    for (int c = 1; c < LOOM_GEN_LATE_NCAUSES; c++)
        nlate += r->late[c];
    if (nlate > 0) {
        fprintf(f, "late by more than %.0f us: %llu jobs (", (double)LOOM_GEN_LATE_NS / 1e3,
                (unsigned long long)nlate);
        const char *sep = "";
        for (int c = 1; c < LOOM_GEN_LATE_NCAUSES; c++) {
            if (r->late[c] == 0)
                continue;
            fprintf(f, "%s%s %llu, max %.1f us", sep,
                    loom_gen_late_cause_name((loom_gen_late_cause_t)c),
                    (unsigned long long)r->late[c], (double)r->late_max_ns[c] / 1e3);
            sep = "; ";
        }
        fprintf(f, ")\n");
    }
    fprintf(f, "rate: target %.4f/s, schedule %.4f/s, achieved %.4f/s (error %+.4f%%)\n",
            r->rate_target, r->rate_schedule, r->rate_achieved, r->rate_error_pct);
    fprintf(f, "lateness: p50 %.1f us, p99 %.1f us, max %.1f us; ack p50 %.1f us, p99 %.1f us\n",
            (double)loom_gen_hist_quantile(&r->lateness, 0.5) / 1e3,
            (double)loom_gen_hist_quantile(&r->lateness, 0.99) / 1e3, (double)r->lateness.max / 1e3,
            (double)loom_gen_hist_quantile(&r->ack, 0.5) / 1e3,
            (double)loom_gen_hist_quantile(&r->ack, 0.99) / 1e3);
    fprintf(f, "backlog (window %u, %s): %llu waits (longest %.1f ms), %llu dropped%s\n",
            cfg->window ? cfg->window : 1024, loom_gen_backlog_name(cfg->on_backlog),
            (unsigned long long)r->backlog_waits, (double)r->backlog_wait_max_ns / 1e6,
            (unsigned long long)r->dropped, r->backlog_failed ? ", run stopped" : "");
    double wsum = 0;
    for (size_t i = 0; i < src->n; i++)
        wsum += src->weights[i];
    for (size_t i = 0; i < src->n; i++)
        fprintf(f, "  %-24s %8llu chosen (expected %.1f), %llu ok\n", src->names[i],
                (unsigned long long)r->per_choice[i], (double)r->scheduled * src->weights[i] / wsum,
                (unsigned long long)r->per_choice_ok[i]);
    fprintf(f, "chi-square of choices: %.3f on %.0f dof, p = %.4f\n", r->chi2, r->chi2_dof,
            r->chi2_p);
    if (r->first_error[0])
        fprintf(f, "first error: %s\n", r->first_error);
}

static int parse_u64(const char *s, const char *what, uint64_t max, uint64_t *out)
{
    int64_t v;
    loom_err_t err;
    if (loom_parse_i64(s, 0, (int64_t)max, &v, what, &err) != LOOM_OK) {
        fprintf(stderr, "loom gen: %s\n", err.msg);
        return -1;
    }
    *out = (uint64_t)v;
    return 0;
}

static const struct option gen_opts[] = {
    {"catalog", required_argument, NULL, OPT_CATALOG},
    {"rate", required_argument, NULL, OPT_RATE},
    {"process", required_argument, NULL, OPT_PROCESS},
    {"cv", required_argument, NULL, OPT_CV},
    {"trace", required_argument, NULL, OPT_TRACE},
    {"trace-column", required_argument, NULL, OPT_TRACE_COLUMN},
    {"time-scale", required_argument, NULL, OPT_TIME_SCALE},
    {"trace-missing", required_argument, NULL, OPT_TRACE_MISSING},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"count", required_argument, NULL, OPT_COUNT},
    {"seed", required_argument, NULL, OPT_SEED},
    {"run-tag", required_argument, NULL, OPT_RUN_TAG},
    {"run-nonce", required_argument, NULL, OPT_RUN_NONCE},
    {"template-kind", required_argument, NULL, OPT_KIND},
    {"template", required_argument, NULL, OPT_TEMPLATE},
    {"templates", required_argument, NULL, OPT_TEMPLATES},
    {"dry-run", no_argument, NULL, OPT_DRY_RUN},
    {"stdout", no_argument, NULL, OPT_STDOUT},
    {"out", required_argument, NULL, OPT_OUT},
    {"submit", required_argument, NULL, OPT_SUBMIT},
    {"slurm", no_argument, NULL, OPT_SLURM},
    {"window", required_argument, NULL, OPT_WINDOW},
    {"workers", required_argument, NULL, OPT_WORKERS},
    {"batch", required_argument, NULL, OPT_BATCH},
    {"on-backlog", required_argument, NULL, OPT_BACKLOG},
    {"retry-for", required_argument, NULL, OPT_RETRY_FOR},
    {"spin", required_argument, NULL, OPT_SPIN},
    {"json", no_argument, NULL, OPT_JSON},
    {"realtime", no_argument, NULL, OPT_REALTIME},
    {"no-realtime", no_argument, NULL, OPT_NO_REALTIME},
    {"no-pin", no_argument, NULL, OPT_NO_PIN},
    {"sbatch-arg", required_argument, NULL, OPT_SBATCH_ARG},
    {"help", no_argument, NULL, OPT_HELP},
    {NULL, 0, NULL, 0},
};

/* Everything loom gen's options say. */
typedef struct gen_args {
    const char *catalog_path, *rate_text, *trace_path, *trace_column;
    const char *template_path, *templates_dir, *out_dir, *submit_url;
    double time_scale;
    bool have_seed, have_nonce, have_kind, json_out;
    int sinks, sink_kind;
    char *sbatch_args[33];
    size_t nsbatch_args;
    int64_t retry_for;
    loom_gen_missing_t missing;
    loom_gen_kind_t kind;
    loom_gen_config_t cfg;
} gen_args_t;

#define GEN_GO_ON (-1) /* an option read: go on (else an exit code) */

/* A number option: a positive number, finite. */
static int positive(const char *opt, const char *text, double *out, loom_err_t *err)
{
    char *end;
    *out = strtod(text, &end);
    if (*end || !(*out > 0) || !isfinite(*out))
        return loom_err_set(err, LOOM_EINVAL, "--%s '%s': expected a number > 0", opt, text);
    return LOOM_OK;
}

/* Options of the arrivals and of what stops the run. */
static int arrival_opt(gen_args_t *a, int c, loom_err_t *err)
{
    loom_gen_config_t *cfg = &a->cfg;
    int bad = 0;
    switch (c) {
    case OPT_RATE: a->rate_text = optarg; break;
    case OPT_PROCESS: bad = loom_gen_process_parse(optarg, &cfg->arrivals.process, err); break;
    case OPT_CV: {
        char *end;
        cfg->arrivals.cv = strtod(optarg, &end);
        if (*end || !(cfg->arrivals.cv > 0))
            bad = loom_err_set(err, LOOM_EINVAL, "--cv '%s': expected a number > 0", optarg);
        break;
    }
    case OPT_TRACE: a->trace_path = optarg; break;
    case OPT_TRACE_COLUMN: a->trace_column = optarg; break;
    case OPT_TIME_SCALE: bad = positive("time-scale", optarg, &a->time_scale, err); break;
    case OPT_TRACE_MISSING:
        if (strcmp(optarg, "error") == 0)
            a->missing = LOOM_GEN_MISSING_ERROR;
        else if (strcmp(optarg, "skip") == 0)
            a->missing = LOOM_GEN_MISSING_SKIP;
        else
            bad = loom_err_set(err, LOOM_EINVAL, "--trace-missing '%s': expected error or skip",
                               optarg);
        break;
    case OPT_DURATION:
        bad = loom_parse_duration(optarg, &cfg->duration_ns, err);
        if (!bad && cfg->duration_ns <= 0)
            bad = loom_err_set(err, LOOM_EINVAL, "--duration '%s': expected > 0", optarg);
        break;
    case OPT_COUNT:
        if (parse_u64(optarg, "--count", INT64_MAX, &cfg->count) || cfg->count == 0) {
            fprintf(stderr, "loom gen: --count '%s': expected an integer >= 1\n", optarg);
            return LOOM_EXIT_USAGE;
        }
        break;
    case OPT_SEED:
        if (parse_u64(optarg, "--seed", INT64_MAX, &cfg->seed))
            return LOOM_EXIT_USAGE;
        a->have_seed = true;
        break;
    case OPT_RUN_NONCE:
        if (parse_u64(optarg, "--run-nonce", INT64_MAX, &cfg->run_nonce))
            return LOOM_EXIT_USAGE;
        a->have_nonce = true;
        break;
    default: cfg->run_tag = optarg; break; /* OPT_RUN_TAG */
    }
    if (bad) {
        fprintf(stderr, "loom gen: %s\n", err->msg);
        return LOOM_EXIT_USAGE;
    }
    return GEN_GO_ON;
}

/* Options of how jobs are sent (window, workers, pacing). */
static int sending_opt(gen_args_t *a, int c, loom_err_t *err)
{
    loom_gen_config_t *cfg = &a->cfg;
    uint64_t u;
    int bad = 0;
    switch (c) {
    case OPT_WINDOW:
        if (parse_u64(optarg, "--window", 1u << 24, &u) || u == 0)
            return LOOM_EXIT_USAGE;
        cfg->window = (unsigned)u;
        break;
    case OPT_WORKERS:
        if (parse_u64(optarg, "--workers", 256, &u) || u == 0)
            return LOOM_EXIT_USAGE;
        cfg->workers = (unsigned)u;
        break;
    case OPT_BATCH:
        if (parse_u64(optarg, "--batch", 4096, &u) || u == 0)
            return LOOM_EXIT_USAGE;
        cfg->batch = (unsigned)u;
        break;
    case OPT_BACKLOG: bad = loom_gen_backlog_parse(optarg, &cfg->on_backlog, err); break;
    case OPT_RETRY_FOR: bad = loom_parse_duration(optarg, &a->retry_for, err); break;
    case OPT_SPIN:
        if (strcmp(optarg, "auto") == 0) {
            cfg->spin_ns = 0;
            break;
        }
        if (parse_u64(optarg, "--spin", 1000000, &u))
            return LOOM_EXIT_USAGE;
        cfg->spin_ns = u ? (int64_t)u * LOOM_NS_PER_US : LOOM_GEN_SPIN_NONE;
        break;
    case OPT_REALTIME: cfg->realtime = true; break;
    case OPT_NO_REALTIME: cfg->realtime = false; break;
    default: cfg->pin = false; break; /* OPT_NO_PIN */
    }
    if (bad) {
        fprintf(stderr, "loom gen: %s\n", err->msg);
        return LOOM_EXIT_USAGE;
    }
    return GEN_GO_ON;
}

/* One option: GEN_GO_ON, or the exit code to return. */
static int gen_opt(gen_args_t *a, int c, loom_err_t *err)
{
    if (c >= OPT_RATE && c <= OPT_RUN_TAG)
        return arrival_opt(a, c, err);
    if ((c >= OPT_WINDOW && c <= OPT_SPIN) || (c >= OPT_REALTIME && c <= OPT_NO_PIN))
        return sending_opt(a, c, err);
    switch (c) {
    case OPT_CATALOG: a->catalog_path = optarg; break;
    case OPT_KIND:
        a->have_kind = true;
        if (loom_gen_kind_parse(optarg, &a->kind, err)) {
            fprintf(stderr, "loom gen: %s\n", err->msg);
            return LOOM_EXIT_USAGE;
        }
        break;
    case OPT_TEMPLATE: a->template_path = optarg; break;
    case OPT_TEMPLATES: a->templates_dir = optarg; break;
    case OPT_DRY_RUN:
    case OPT_STDOUT:
    case OPT_OUT:
    case OPT_SUBMIT:
    case OPT_SLURM:
        a->sinks++;
        a->sink_kind = c;
        if (c == OPT_OUT)
            a->out_dir = optarg;
        else if (c == OPT_SUBMIT)
            a->submit_url = optarg;
        break;
    case OPT_JSON: a->json_out = true; break;
    case OPT_SBATCH_ARG:
        if (a->nsbatch_args >= 32) {
            fprintf(stderr, "loom gen: at most 32 --sbatch-arg\n");
            return LOOM_EXIT_USAGE;
        }
        a->sbatch_args[a->nsbatch_args++] = optarg;
        break;
    case OPT_HELP:
    case 'h': usage(stdout); return LOOM_EXIT_OK;
    default: usage(stderr); return LOOM_EXIT_USAGE;
    }
    return GEN_GO_ON;
}

/* Reads and checks the options: GEN_GO_ON, or the exit code to return. */
static int gen_parse(gen_args_t *a, int argc, char **argv)
{
    loom_err_t err;
    int c, rc;
    while ((c = getopt_long(argc, argv, ":h", gen_opts, NULL)) != -1)
        if (c == '?' || c == ':')
            return loom_cli_bad_option("gen", c, argv[optind - 1]);
        else if ((rc = gen_opt(a, c, &err)) != GEN_GO_ON)
            return rc;
    if (optind < argc) {
        fprintf(stderr, "loom gen: unexpected argument '%s'\n", argv[optind]);
        return LOOM_EXIT_USAGE;
    }
    loom_gen_given_t given = {.catalog = a->catalog_path != NULL,
                              .rate = a->rate_text != NULL,
                              .trace = a->trace_path != NULL,
                              .time_scale = a->time_scale > 0,
                              .sinks = (unsigned)a->sinks};
    const char *problem = loom_gen_check_options(&a->cfg, &given);
    if (problem) {
        fprintf(stderr, "loom gen: %s (see loom gen --help)\n", problem);
        return LOOM_EXIT_USAGE;
    }
    if (a->rate_text && loom_parse_rate(a->rate_text, &a->cfg.arrivals.rate, &err) != LOOM_OK) {
        fprintf(stderr, "loom gen: --rate: %s\n", err.msg);
        return LOOM_EXIT_USAGE;
    }
    if (!a->have_seed) {
        if (getrandom(&a->cfg.seed, sizeof a->cfg.seed, 0) != sizeof a->cfg.seed)
            a->cfg.seed = (uint64_t)loom_time_real_ns();
        a->cfg.seed &= INT64_MAX; /* printable in JSON as a non-negative integer */
    }
    /* Each run's own: submit ids another user cannot compute from seed,
     * tag and index (and so cannot claim before this run sends them). */
    if (!a->have_nonce) {
        if (getrandom(&a->cfg.run_nonce, sizeof a->cfg.run_nonce, 0) != sizeof a->cfg.run_nonce) {
            fprintf(stderr, "loom gen: cannot draw the run nonce: %s\n", strerror(errno));
            return LOOM_EXIT_FAILURE;
        }
        a->cfg.run_nonce &= INT64_MAX;
    }
    return GEN_GO_ON;
}

/* Opens the sink the options name. */
static int gen_sink(gen_args_t *a, loom_gen_sink_t *sink, loom_err_t *err)
{
    switch (a->sink_kind) {
    case OPT_STDOUT: return loom_gen_sink_stream(sink, stdout, err);
    case OPT_OUT:
        return loom_gen_sink_dir(sink, a->out_dir, a->kind == LOOM_GEN_KIND_K8S ? "yaml" : "sh",
                                 err);
    case OPT_SUBMIT: {
        char default_url[4200];
        const char *url = a->submit_url;
        if (strcmp(a->submit_url, "-") == 0) {
            if (loom_cli_url("gen", default_url, sizeof default_url) != LOOM_EXIT_OK)
                return loom_err_set(err, LOOM_EINVAL, "--submit -: no loomd address");
            url = default_url;
        }
        char token[LOOM_RPC_TOKEN_HEX + 1];
        const char *tok = loom_cli.token;
        if (!tok && loom_rpc_token_resolve(getenv("LOOM_STATE_DIR"), token, NULL) == LOOM_OK)
            tok = token;
        return loom_gen_sink_submit(sink, url, tok, a->retry_for, loom_zoo_warm_apply, err);
    }
    case OPT_SLURM:
        a->sbatch_args[a->nsbatch_args] = NULL;
        return loom_gen_sink_slurm(sink, NULL, (const char *const *)a->sbatch_args, err);
    default: return loom_gen_sink_dry_run(sink, err);
    }
}

/* Loads the trace into trace and sets the arrivals' time scale. */
static int gen_load_trace(gen_args_t *a, loom_gen_trace_t *trace)
{
    loom_gen_config_t *cfg = &a->cfg;
    loom_err_t err;
    if (loom_gen_trace_load(trace, a->trace_path, a->trace_column, a->missing, &err) != LOOM_OK) {
        fprintf(stderr, "loom gen: %s\n", err.msg);
        return err.code == LOOM_EINVAL ? LOOM_EXIT_INPUT : LOOM_EXIT_FAILURE;
    }
    cfg->arrivals.trace = trace;
    cfg->arrivals.time_scale = a->time_scale > 0 ? a->time_scale
                               : a->rate_text
                                   ? loom_gen_trace_scale_for_rate(trace, cfg->arrivals.rate)
                                   : 1.0;
    if (!(cfg->arrivals.time_scale > 0))
        cfg->arrivals.time_scale = 1.0; /* a trace spanning no time */
    return LOOM_EXIT_OK;
}

/* Loads the catalog and makes the source of jobs; an exit code. */
static int gen_source(gen_args_t *a, loom_catalog_t **cat, loom_gen_catalog_source_t **cs)
{
    loom_err_t err;
    loom_catalog_issues_t issues = LOOM_CATALOG_ISSUES_INIT;
    if (loom_catalog_load_file(a->catalog_path, cat, &issues, &err) != LOOM_OK) {
        if (issues.count == 0)
            fprintf(stderr, "loom gen: %s\n", err.msg);
        for (size_t i = 0; i < issues.count; i++)
            fprintf(stderr, "%s\n", issues.items[i].text);
        loom_catalog_issues_free(&issues);
        return err.code == LOOM_EINVAL ? LOOM_EXIT_INPUT : LOOM_EXIT_FAILURE;
    }
    char kind_path[4096];
    const char *template_path = a->template_path;
    if (a->have_kind && !template_path) {
        if (loom_gen_kind_template(a->kind, a->templates_dir, kind_path, sizeof kind_path, &err)) {
            fprintf(stderr, "loom gen: %s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
        template_path = kind_path;
    }
    loom_gen_catalog_options_t copts = {.kind = a->kind,
                                        .template_path = template_path,
                                        .templates_dir = a->templates_dir,
                                        .seed = a->cfg.seed};
    if (loom_gen_catalog_source_new(*cat, &copts, cs, &err) != LOOM_OK) {
        fprintf(stderr, "loom gen: %s\n", err.msg);
        return LOOM_EXIT_INPUT;
    }
    return LOOM_EXIT_OK;
}

/* Runs the generator and prints its summary; an exit code. */
static int gen_run(gen_args_t *a, const loom_gen_source_t *src, loom_gen_sink_t *sink)
{
    loom_gen_config_t *cfg = &a->cfg;
    loom_err_t err;
    progress_ctx_t pctx = {.tty = isatty(2)};
    if (pctx.tty) {
        cfg->progress = on_progress;
        cfg->progress_ctx = &pctx;
        cfg->progress_ns = 250 * LOOM_NS_PER_MS;
    }
    /* Ctrl-C / SIGTERM: stop releasing jobs, finish those in flight, print
     * the summary (a directory sink then still gets its manifest). */
    struct sigaction sa = {.sa_handler = on_signal};
    sigemptyset(&sa.sa_mask);
    sigaction(SIGINT, &sa, NULL);
    sigaction(SIGTERM, &sa, NULL);
    cfg->stop = &stop_flag;
    loom_gen_report_t *report = malloc(sizeof *report);
    if (!report) {
        fprintf(stderr, "loom gen: out of memory\n");
        return LOOM_EXIT_FAILURE;
    }
    int rc_run = loom_gen_run(cfg, src, sink, report, &err);
    if (pctx.tty)
        fprintf(stderr, "\r\033[K");
    if (cfg->realtime && !report->realtime && report->sent > 0)
        fprintf(stderr,
                "loom gen: the pacer ran under the normal scheduling policy: SCHED_FIFO %s (%s);"
                " on a busy machine jobs may be released milliseconds late (--no-realtime "
                "asks for the normal policy and silences this)\n",
                report->realtime_errno == EPERM
                    ? "needs CAP_SYS_NICE (root) or a realtime priority limit (ulimit -r)"
                    : "was refused",
                strerror(report->realtime_errno));
    FILE *summary = a->sink_kind == OPT_STDOUT ? stderr : stdout;
    if (a->json_out) {
        json_t *j = loom_gen_report_json(report, src, cfg);
        if (rc_run != LOOM_OK)
            json_object_set_new(j, "error", json_string(err.msg));
        loom_buf_t b = LOOM_BUF_INIT;
        loom_json_write(&b, j, 0); /* reals in their shortest form */
        fprintf(summary, "%s\n", b.data ? b.data : "{}");
        loom_buf_free(&b);
        json_decref(j);
    } else {
        print_summary(summary, report, src, cfg);
    }
    int exit_code = LOOM_EXIT_OK;
    if (rc_run != LOOM_OK) {
        fprintf(stderr, "loom gen: %s\n", err.msg);
        exit_code = rc_run == LOOM_EUNAVAIL ? LOOM_EXIT_CONNECT : LOOM_EXIT_FAILURE;
    } else if (report->failed > 0) {
        exit_code = LOOM_EXIT_FAILURE;
    }
    loom_gen_report_free(report);
    free(report);
    return exit_code;
}

int loom_cmd_gen(int argc, char **argv)
{
    gen_args_t a = {
        .trace_column = "creation_time",
        .sink_kind = OPT_DRY_RUN,
        .missing = LOOM_GEN_MISSING_ERROR,
        .kind = LOOM_GEN_KIND_SLURM,
        .cfg = {.arrivals = {.process = LOOM_GEN_CONSTANT}, .realtime = true, .pin = true}};
    int exit_code = gen_parse(&a, argc, argv);
    if (exit_code != GEN_GO_ON)
        return exit_code;
    loom_gen_trace_t trace = {0};
    loom_catalog_t *cat = NULL;
    loom_gen_catalog_source_t *cs = NULL;
    loom_gen_sink_t sink = {0};
    loom_err_t err;
    if (a.cfg.arrivals.process == LOOM_GEN_TRACE && (exit_code = gen_load_trace(&a, &trace)))
        return exit_code;
    if ((exit_code = gen_source(&a, &cat, &cs)))
        goto out;
    int rc = gen_sink(&a, &sink, &err);
    if (rc != LOOM_OK) {
        fprintf(stderr, "loom gen: %s\n", err.msg);
        exit_code = rc == LOOM_EUNAVAIL ? LOOM_EXIT_CONNECT : LOOM_EXIT_FAILURE;
        goto out;
    }
    exit_code = gen_run(&a, loom_gen_catalog_source_get(cs), &sink);
out:
    if (sink.destroy)
        sink.destroy(sink.ctx);
    loom_gen_catalog_source_free(cs);
    loom_catalog_free(cat);
    loom_gen_trace_free(&trace);
    return exit_code;
}
