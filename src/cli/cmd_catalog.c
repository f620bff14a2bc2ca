/* loom catalog: check a job catalog (every problem, with positions) or print
 * sampled render contexts. The logic is libloom's (include/loom/catalog.h). */
#include <getopt.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "loom/catalog.h"

static void catalog_usage(FILE *f)
{
    fprintf(f, "usage: loom catalog check FILE\n"
               "       loom catalog sample FILE [--seed N] [--count K] [--job NAME]\n\n"
               "check   validates FILE and prints every problem as FILE:LINE:COL: POINTER: what\n"
               "        was found, what was expected; or \"FILE: ok, N jobs\".\n"
               "sample  prints K render contexts (one JSON object per line), each a job picked\n"
               "        by weight (or the job NAME) with its parameters sampled; the same\n"
               "        --seed (default 1) prints the same lines on every machine.\n\n"
               "exit codes: 0 ok, 2 usage, 4 file or job not found, 5 invalid catalog.\n");
}

static int load(const char *path, loom_catalog_t **c)
{
    loom_catalog_issues_t is = LOOM_CATALOG_ISSUES_INIT;
    loom_err_t err;
    int rc = loom_catalog_load_file(path, c, &is, &err);
    if (rc == LOOM_OK)
        return LOOM_EXIT_OK;
    if (is.count == 0)
        fprintf(stderr, "loom catalog: %s\n", err.msg);
    for (size_t i = 0; i < is.count; i++)
        fprintf(stderr, "%s\n", is.items[i].text);
    if (is.count > 1)
        fprintf(stderr, "%zu problems\n", is.count);
    loom_catalog_issues_free(&is);
    return rc == LOOM_ENOTFOUND ? LOOM_EXIT_NOTFOUND
           : rc == LOOM_EINVAL  ? LOOM_EXIT_INPUT
                                : LOOM_EXIT_FAILURE;
}

int loom_cmd_catalog(int argc, char **argv)
{
    static const struct option opts[] = {
        {"seed", required_argument, NULL, 's'},
        {"count", required_argument, NULL, 'n'},
        {"job", required_argument, NULL, 'j'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int64_t seed = 1, count = 1;
    const char *job = NULL;
    loom_err_t err;
    int c;
    while ((c = getopt_long(argc, argv, ":s:n:j:h", opts, NULL)) != -1) {
        switch (c) {
        case 's':
            if (loom_parse_i64(optarg, INT64_MIN, INT64_MAX, &seed, "--seed", &err)) {
                fprintf(stderr, "loom catalog: %s\n", err.msg);
                return LOOM_EXIT_USAGE;
            }
            break;
        case 'n':
            if (loom_parse_i64(optarg, 0, INT64_MAX, &count, "--count", &err)) {
                fprintf(stderr, "loom catalog: %s\n", err.msg);
                return LOOM_EXIT_USAGE;
            }
            break;
        case 'j': job = optarg; break;
        case 'h': catalog_usage(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("catalog", c, argv[optind - 1]);
        }
    }
    if (optind + 2 != argc ||
        (strcmp(argv[optind], "check") != 0 && strcmp(argv[optind], "sample") != 0)) {
        catalog_usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    const char *path = argv[optind + 1];
    loom_catalog_t *cat;
    int code = load(path, &cat);
    if (code != LOOM_EXIT_OK)
        return code;
    if (strcmp(argv[optind], "check") == 0) {
        printf("%s: ok, %zu job%s\n", path, loom_catalog_job_count(cat),
               loom_catalog_job_count(cat) == 1 ? "" : "s");
        loom_catalog_free(cat);
        return LOOM_EXIT_OK;
    }
    ptrdiff_t fixed = -1;
    if (job && (fixed = loom_catalog_find(cat, job)) < 0) {
        fprintf(stderr, "loom catalog: %s: no job named '%s'\n", path, job);
        loom_catalog_free(cat);
        return LOOM_EXIT_NOTFOUND;
    }
    loom_rng_t rng;
    loom_rng_init(&rng, (uint64_t)seed, 0);
    loom_buf_t line = LOOM_BUF_INIT;
    for (int64_t i = 0; i < count && code == LOOM_EXIT_OK; i++) {
        size_t k = fixed >= 0 ? (size_t)fixed : loom_catalog_pick(cat, &rng);
        json_t *ctx;
        if (loom_catalog_sample(cat, k, &rng, &ctx, &err)) {
            fprintf(stderr, "loom catalog: %s\n", err.msg);
            code = LOOM_EXIT_FAILURE;
            break;
        }
        loom_buf_reset(&line);
        if (loom_json_write(&line, ctx, 0) || loom_buf_append_char(&line, '\n') ||
            fwrite(line.data, 1, line.len, stdout) != line.len)
            code = LOOM_EXIT_FAILURE;
        json_decref(ctx);
    }
    loom_buf_free(&line);
    loom_catalog_free(cat);
    return code;
}
