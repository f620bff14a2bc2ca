/* loom render: renders one Mustache template with JSON data and prints the
 * result exactly as rendered (no newline added). The logic is libloom's
 * (include/loom/template.h); this file only reads the command line. */
#include <getopt.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "loom/template.h"

static void render_usage(FILE *f)
{
    fprintf(
        f,
        "usage: loom render TEMPLATE [--data FILE.json] [--partials DIR]\n"
        "                   [--escape html|shell|yaml|none] [--strict]\n\n"
        "Renders the Mustache template TEMPLATE with the JSON data in FILE.json (default:\n"
        "an empty object) and prints the result exactly, without adding a newline.\n\n"
        "  --data FILE      JSON data (the context); '-' reads standard input\n"
        "  --partials DIR   partial NAME is the file DIR/NAME.mustache (default: the\n"
        "                   template's own directory)\n"
        "  --escape KIND    escaper for {{name}}: html (the spec's), shell (POSIX single\n"
        "                   quotes), yaml (double-quoted scalars), none. Default: shell\n"
        "                   for *.sh/*.bash.mustache, yaml for *.yaml/*.yml.mustache, else html\n"
        "  --strict         a name missing from the data is an error (default: empty)\n\n"
        "exit codes: 0 ok, 1 render failed (strict miss, recursion limit), 2 usage,\n"
        "4 a file does not exist, 5 the template or data is malformed.\n");
}

static int exit_for(int rc)
{
    return rc == LOOM_ENOTFOUND ? LOOM_EXIT_NOTFOUND
           : rc == LOOM_EINVAL  ? LOOM_EXIT_INPUT
                                : LOOM_EXIT_FAILURE;
}

int loom_cmd_render(int argc, char **argv)
{
    static const struct option opts[] = {
        {"data", required_argument, NULL, 'd'},   {"partials", required_argument, NULL, 'p'},
        {"escape", required_argument, NULL, 'e'}, {"strict", no_argument, NULL, 's'},
        {"help", no_argument, NULL, 'h'},         {NULL, 0, NULL, 0},
    };
    const char *data_path = NULL, *pdir = NULL, *esc_name = NULL;
    bool strict = false;
    int c;
    while ((c = getopt_long(argc, argv, ":d:p:e:sh", opts, NULL)) != -1) {
        switch (c) {
        case 'd': data_path = optarg; break;
        case 'p': pdir = optarg; break;
        case 'e': esc_name = optarg; break;
        case 's': strict = true; break;
        case 'h': render_usage(stdout); return LOOM_EXIT_OK;
        default: return loom_cli_bad_option("render", c, argv[optind - 1]);
        }
    }
    if (optind != argc - 1) {
        fprintf(stderr, "loom render: expected one TEMPLATE argument\n");
        render_usage(stderr);
        return LOOM_EXIT_USAGE;
    }
    const char *path = argv[optind];
    loom_err_t err;
    loom_template_options_t o = {.strict = strict};
    if (esc_name) {
        if (loom_template_escape_parse(esc_name, &o.escape, &err) != LOOM_OK) {
            fprintf(stderr, "loom render: --%s\n", err.msg);
            return LOOM_EXIT_USAGE;
        }
    } else {
        o.escape = loom_template_escape_for_path(path);
    }
    int rc, code = LOOM_EXIT_OK;
    json_t *data = NULL;
    loom_template_t *t = NULL;
    loom_template_partials_t *parts = NULL;
    loom_buf_t out = LOOM_BUF_INIT, in = LOOM_BUF_INIT;
    if ((rc = loom_template_load_file(path, &t, &err)))
        goto fail;
    if (data_path && strcmp(data_path, "-") == 0) {
        char chunk[65536];
        size_t n;
        while ((n = fread(chunk, 1, sizeof chunk, stdin)) > 0)
            loom_buf_append(&in, chunk, n);
        rc = loom_json_parse(in.data ? in.data : "", in.len, "<stdin>", 0, &data, &err);
    } else if (data_path) {
        rc = loom_json_load_file(data_path, &data, &err);
    } else {
        data = json_object();
    }
    if (rc)
        goto fail;
    if ((rc = loom_template_partials_new(&parts, &err)))
        goto fail;
    char dir[4096];
    if (!pdir) {
        const char *slash = strrchr(path, '/');
        snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
        pdir = dir;
    }
    if ((rc = loom_template_partials_set_dir(parts, pdir, &err)))
        goto fail;
    o.partials = parts;
    if ((rc = loom_template_render(t, data, &o, &out, &err))) {
        fprintf(stderr, "loom render: %s\n", err.msg);
        code = LOOM_EXIT_FAILURE; /* the inputs were well-formed */
        goto done;
    }
    if (out.len && fwrite(out.data, 1, out.len, stdout) != out.len)
        code = LOOM_EXIT_FAILURE;
    if (fflush(stdout) != 0)
        code = LOOM_EXIT_FAILURE;
    goto done;
fail:
    fprintf(stderr, "loom render: %s\n", err.msg);
    code = exit_for(rc);
done:
    loom_buf_free(&out);
    loom_buf_free(&in);
    json_decref(data);
    loom_template_free(t);
    loom_template_partials_free(parts);
    return code;
}
