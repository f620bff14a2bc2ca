/* Mustache templates: loom's own cases for every module of the
 * specification (tests/data/mustache/, written for loom), plus loom's
 * additions: escapers and injection attempts, strict mode, syntax errors,
 * partial directories and the recursion limit.
 *
 * The official specification's JSON files run too, as their own test
 * (conformance.mustache: this program with --spec), where a copy is given:
 * LOOM_MUSTACHE_SPEC=DIR; without one that test is skipped (exit 77) and
 * says why. */
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/template.h"

/* ------------------------------------------------------------ conformance */

static const char *const modules[] = {"interpolation", "sections",      "inverted",
                                      "comments",      "partials",      "delimiters",
                                      "~inheritance",  "~dynamic-names"};

/* Runs every case of DIR/FILE.json (the specification's format); returns
 * how many passed and sets *total. */
static int run_spec_file(const char *dir, const char *file, int *total)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/%s.json", dir, file);
    json_t *spec;
    loom_err_t err;
    if (loom_json_load_file(path, &spec, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    json_t *tests = json_object_get(spec, "tests");
    assert_true(json_is_array(tests));
    int passed = 0;
    size_t i;
    json_t *t;
    json_array_foreach(tests, i, t)
    {
        const char *name = json_string_value(json_object_get(t, "name"));
        const char *tmpl = json_string_value(json_object_get(t, "template"));
        const char *expected = json_string_value(json_object_get(t, "expected"));
        loom_template_partials_t *parts;
        assert_int_equal(loom_template_partials_new(&parts, &err), LOOM_OK);
        json_t *pj = json_object_get(t, "partials");
        if (pj)
            assert_int_equal(loom_template_partials_add_json(parts, pj, &err), LOOM_OK);
        loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_HTML, .partials = parts};
        loom_buf_t out = LOOM_BUF_INIT;
        int rc = loom_template_render_string(tmpl, strlen(tmpl), name, json_object_get(t, "data"),
                                             &o, &out, &err);
        const char *got = out.data ? out.data : "";
        if (rc == LOOM_OK && strcmp(got, expected) == 0)
            passed++;
        else
            printf("FAIL %s / %s\n  template: %s\n  expected: [%s]\n  got:      [%s] %s\n", file,
                   name, tmpl, expected, got, rc ? err.msg : "");
        loom_buf_free(&out);
        loom_template_partials_free(parts);
    }
    *total = (int)json_array_size(tests);
    printf("mustache %-15s %d/%d passed (%s)\n", file, passed, *total, dir);
    json_decref(spec);
    return passed;
}

/* loom's own cases: every module, every case must pass. */
static void own_cases(void **s)
{
    (void)s;
    char dir[4096];
    const char *src = getenv("LOOM_SOURCE_DIR");
    snprintf(dir, sizeof dir, "%s/tests/data/mustache", src ? src : ".");
    int all = 0;
    for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
        int total;
        int passed = run_spec_file(dir, modules[i], &total);
        assert_true(total > 0);
        assert_int_equal(passed, total);
        all += total;
    }
    assert_true(all >= 60);
}

/* The official specification where a copy is given (--spec). */
static int official_spec(void)
{
    const char *dir = getenv("LOOM_MUSTACHE_SPEC");
    struct stat st;
    if (!dir || !*dir || stat(dir, &st) != 0 || !S_ISDIR(st.st_mode)) {
        printf("skipped: no copy of the official Mustache specification (set "
               "LOOM_MUSTACHE_SPEC=DIR to its specs/ folder; %s)\n",
               dir && *dir ? "that folder does not exist" : "unset");
        return 77;
    }
    int failed = 0;
    for (size_t i = 0; i < sizeof modules / sizeof *modules; i++) {
        int total;
        failed += run_spec_file(dir, modules[i], &total) != total;
    }
    return failed ? 1 : 0;
}

/* ------------------------------------------------------------- helpers */

#include <fcntl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <yaml.h>

static char *render(const char *tmpl, const json_t *data, loom_template_escape_t esc, bool strict,
                    int *rc_out, loom_err_t *err)
{
    loom_template_options_t o = {.escape = esc, .strict = strict};
    loom_buf_t out = LOOM_BUF_INIT;
    int rc = loom_template_render_string(tmpl, strlen(tmpl), "t", data, &o, &out, err);
    if (rc_out)
        *rc_out = rc;
    else if (rc)
        fail_msg("render failed: %s", err->msg);
    char *s = loom_buf_detach(&out);
    return s ? s : strdup("");
}

static char *render1(const char *tmpl, const char *key, const char *value, size_t vlen,
                     loom_template_escape_t esc)
{
    json_t *d = json_pack("{s:s%}", key, value, vlen);
    assert_non_null(d);
    loom_err_t err;
    char *s = render(tmpl, d, esc, true, NULL, &err);
    json_decref(d);
    return s;
}

/* Runs `bash -c script` (or `bash -n -c` when syntax_only) with HOME set to
 * home; stdout into *out. Returns the exit status. */
static int run_bash(const char *script, const char *home, bool syntax_only, loom_buf_t *out)
{
    int fds[2];
    assert_int_equal(pipe(fds), 0);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        dup2(fds[1], 1);
        close(fds[0]);
        close(fds[1]);
        setenv("HOME", home, 1);
        if (chdir(home) != 0)
            _exit(126);
        if (syntax_only)
            execlp("bash", "bash", "-n", "-c", script, (char *)NULL);
        else
            execlp("bash", "bash", "-c", script, (char *)NULL);
        _exit(127);
    }
    close(fds[1]);
    char buf[4096];
    ssize_t n;
    while ((n = read(fds[0], buf, sizeof buf)) > 0)
        loom_buf_append(out, buf, (size_t)n);
    close(fds[0]);
    int st;
    waitpid(pid, &st, 0);
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

static const char *const payloads[] = {
    "$(rm -rf ~)",
    "\"; kill -9 $$; \"",
    "'; touch pwned; '",
    "`touch pwned`",
    "$(touch pwned)",
    "${HOME}",
    "a'b'c''",
    "line1\nline2\n$(touch pwned)",
    "; touch pwned",
    "&& touch pwned || true",
    "| tee pwned",
    "> pwned",
    "\\'\\",
    "-n",
    "*",
    "~",
    "!!",
    " spaces  around ",
    "",
    "\t\r\x01\x7f",
    "{{x}}",
    "\xe2\x80\xa8 unicode \xf0\x9f\x98\x80",
};
#define NPAYLOADS (sizeof payloads / sizeof payloads[0])

/* ------------------------------------------------------------- escapers */

static void test_escape_names(void **s)
{
    (void)s;
    loom_template_escape_t e;
    loom_err_t err;
    const char *names[] = {"html", "shell", "yaml", "none"};
    for (int i = 0; i < 4; i++) {
        assert_int_equal(loom_template_escape_parse(names[i], &e, &err), LOOM_OK);
        assert_string_equal(loom_template_escape_name(e), names[i]);
    }
    assert_int_equal(loom_template_escape_for_path("a/slurm.sh.mustache"),
                     LOOM_TEMPLATE_ESCAPE_SHELL);
    assert_int_equal(loom_template_escape_for_path("x.bash.mustache"), LOOM_TEMPLATE_ESCAPE_SHELL);
    assert_int_equal(loom_template_escape_for_path("k8s-job.yaml.mustache"),
                     LOOM_TEMPLATE_ESCAPE_YAML);
    assert_int_equal(loom_template_escape_for_path("j.yml.mustache"), LOOM_TEMPLATE_ESCAPE_YAML);
    assert_int_equal(loom_template_escape_for_path("page.mustache"), LOOM_TEMPLATE_ESCAPE_HTML);
    assert_int_equal(loom_template_escape_for_path("sh.mustache"), LOOM_TEMPLATE_ESCAPE_HTML);
    assert_int_equal(loom_template_escape_parse("xml", &e, &err), LOOM_EINVAL);
    assert_string_equal(err.msg, "escape 'xml': expected html, shell, yaml or none");
}

static void test_escape_html_and_none(void **s)
{
    (void)s;
    const char *v = "<script>\"&'</script>";
    char *h = render1("{{x}}", "x", v, strlen(v), LOOM_TEMPLATE_ESCAPE_HTML);
    assert_string_equal(h, "&lt;script&gt;&quot;&amp;'&lt;/script&gt;");
    free(h);
    char *n = render1("{{x}}", "x", v, strlen(v), LOOM_TEMPLATE_ESCAPE_NONE);
    assert_string_equal(n, v);
    free(n);
    /* Triple mustache and & bypass every escaper. */
    for (int e = 0; e < 4; e++) {
        char *t = render1("{{{x}}}|{{&x}}", "x", "$(a)\"'", 6, (loom_template_escape_t)e);
        assert_string_equal(t, "$(a)\"'|$(a)\"'");
        free(t);
    }
}

static void test_escape_shell_forms(void **s)
{
    (void)s;
    char *a = render1("{{x}}", "x", "it's", 4, LOOM_TEMPLATE_ESCAPE_SHELL);
    assert_string_equal(a, "'it'\\''s'");
    free(a);
    char *b = render1("[{{x}}]", "x", "", 0, LOOM_TEMPLATE_ESCAPE_SHELL);
    assert_string_equal(b, "['']");
    free(b);
}

/* Every payload, rendered into a script with the shell escaper, is printed
 * literally by bash; nothing runs: no file appears, HOME survives. */
static void test_shell_injection(void **s)
{
    (void)s;
    char home[] = "/tmp/loom-tmpl-home-XXXXXX";
    assert_non_null(mkdtemp(home));
    char canary[sizeof home + 16];
    snprintf(canary, sizeof canary, "%s/canary", home);
    int fd = open(canary, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    for (size_t i = 0; i < NPAYLOADS; i++) {
        const char *p = payloads[i];
        char *script =
            render1("printf '%s|' {{x}} {{x}}\n", "x", p, strlen(p), LOOM_TEMPLATE_ESCAPE_SHELL);
        loom_buf_t out = LOOM_BUF_INIT;
        assert_int_equal(run_bash(script, home, true, &out), 0);
        assert_int_equal(run_bash(script, home, false, &out), 0);
        loom_buf_t want = LOOM_BUF_INIT;
        loom_buf_appendf(&want, "%s|%s|", p, p);
        if (out.len != want.len || memcmp(out.data, want.data, want.len) != 0)
            fail_msg("payload %zu: bash printed [%s], expected [%s]\nscript: %s", i,
                     out.data ? out.data : "", want.data, script);
        loom_buf_free(&out);
        loom_buf_free(&want);
        free(script);
        struct stat st;
        char pwned[sizeof home + 16];
        snprintf(pwned, sizeof pwned, "%s/pwned", home);
        assert_int_not_equal(stat(pwned, &st), 0);
        assert_int_equal(stat(canary, &st), 0);
    }
    unlink(canary);
    rmdir(home);
}

/* Parses "key: VALUE" with libyaml; returns the scalar value of key. */
static char *yaml_value(const char *doc, size_t *len, yaml_scalar_style_t *style)
{
    yaml_parser_t p;
    yaml_event_t ev;
    assert_true(yaml_parser_initialize(&p));
    yaml_parser_set_input_string(&p, (const unsigned char *)doc, strlen(doc));
    int scalars = 0;
    char *val = NULL;
    for (;;) {
        if (!yaml_parser_parse(&p, &ev))
            fail_msg("libyaml: %s at %zu:%zu in [%s]", p.problem, p.problem_mark.line + 1,
                     p.problem_mark.column + 1, doc);
        yaml_event_type_t type = ev.type;
        if (type == YAML_SCALAR_EVENT && ++scalars == 2) {
            *len = ev.data.scalar.length;
            *style = ev.data.scalar.style;
            val = malloc(*len + 1);
            memcpy(val, ev.data.scalar.value, *len);
            val[*len] = 0;
        }
        yaml_event_delete(&ev);
        if (type == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    assert_non_null(val);
    return val;
}

static void check_yaml_roundtrip(const char *v, size_t vlen)
{
    char *doc = render1("key: {{x}}\n", "x", v, vlen, LOOM_TEMPLATE_ESCAPE_YAML);
    size_t len;
    yaml_scalar_style_t style;
    char *got = yaml_value(doc, &len, &style);
    assert_int_equal(style, YAML_DOUBLE_QUOTED_SCALAR_STYLE);
    if (len != vlen || memcmp(got, v, vlen) != 0)
        fail_msg("yaml round trip failed: doc [%s]", doc);
    free(got);
    free(doc);
}

static void test_yaml_injection(void **s)
{
    (void)s;
    for (size_t i = 0; i < NPAYLOADS; i++)
        check_yaml_roundtrip(payloads[i], strlen(payloads[i]));
    const char *more[] = {"\": evil\nkind: Pod\n#",
                          "- [a, b]",
                          "{a: 1}",
                          "&x *x",
                          "!!binary AA",
                          "null",
                          "true",
                          "0x1F",
                          "~",
                          "key: value # c",
                          "\\\\\\\"",
                          "\xc2\x85 nel \xc2\xa0 nbsp \xe2\x80\xa9 ps",
                          "\xef\xbb\xbf bom",
                          "\xef\xbf\xbe \xef\xbf\xbf nonchars",
                          "\xc2\x80\xc2\x9f c1"};
    for (size_t i = 0; i < sizeof more / sizeof more[0]; i++)
        check_yaml_roundtrip(more[i], strlen(more[i]));
    /* Every ASCII byte, including NUL, alone and in company. */
    for (int c = 0; c < 128; c++) {
        char v[3] = {'a', (char)c, 'b'};
        check_yaml_roundtrip(v, 3);
    }
    /* Random well-formed UTF-8 strings. */
    loom_rng_t rng;
    loom_rng_init(&rng, 42, 0);
    for (int k = 0; k < 300; k++) {
        char v[64];
        size_t n = 0;
        while (n < 50) {
            unsigned cp = (unsigned)loom_rng_below(&rng, 0x110000);
            if (cp >= 0xD800 && cp <= 0xDFFF)
                continue;
            if (loom_rng_below(&rng, 2))
                cp &= 0xFF;
            if (cp < 0x80) {
                v[n++] = (char)cp;
            } else if (cp < 0x800) {
                v[n++] = (char)(0xC0 | (cp >> 6));
                v[n++] = (char)(0x80 | (cp & 0x3F));
            } else if (cp < 0x10000) {
                v[n++] = (char)(0xE0 | (cp >> 12));
                v[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                v[n++] = (char)(0x80 | (cp & 0x3F));
            } else {
                v[n++] = (char)(0xF0 | (cp >> 18));
                v[n++] = (char)(0x80 | ((cp >> 12) & 0x3F));
                v[n++] = (char)(0x80 | ((cp >> 6) & 0x3F));
                v[n++] = (char)(0x80 | (cp & 0x3F));
            }
        }
        check_yaml_roundtrip(v, n);
    }
}

static void test_yaml_invalid_utf8(void **s)
{
    (void)s;
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(
        loom_template_escape_append(&b, LOOM_TEMPLATE_ESCAPE_YAML, "a\xff\xc0\x80z", 5), LOOM_OK);
    assert_string_equal(b.data, "\"a\\uFFFD\\uFFFD\\uFFFDz\"");
    loom_buf_free(&b);
}

/* ------------------------------------------------------------- values */

static void test_value_forms(void **s)
{
    (void)s;
    json_t *d = json_pack("{s:i, s:f, s:f, s:b, s:b, s:n, s:{s:i}, s:[i,i]}", "i", 42, "r", 0.1,
                          "e", 1e-5, "t", 1, "f", 0, "z", "o", "a", 1, "l", 1, 2);
    loom_err_t err;
    char *out = render("{{i}} {{r}} {{e}} {{t}} [{{f}}] [{{z}}] {{&o}} {{&l}}", d,
                       LOOM_TEMPLATE_ESCAPE_NONE, true, NULL, &err);
    assert_string_equal(out, "42 0.1 1e-05 true [] [] {\"a\":1} [1,2]");
    free(out);
    json_decref(d);
}

/* ------------------------------------------------------------- strict mode */

static void test_strict_missing(void **s)
{
    (void)s;
    json_t *d = json_pack("{s:{}}", "a");
    loom_err_t err;
    int rc;
    char *out =
        render("x\n{{#a}}\n  {{b.c}}\n{{/a}}\n", d, LOOM_TEMPLATE_ESCAPE_NONE, true, &rc, &err);
    assert_int_equal(rc, LOOM_ENOTFOUND);
    assert_string_equal(err.msg, "t:3:3: variable 'b.c' is missing in the data");
    free(out);
    /* Spec mode: empty. */
    out = render("x\n{{#a}}\n  {{b.c}}\n{{/a}}\n", d, LOOM_TEMPLATE_ESCAPE_NONE, false, &rc, &err);
    assert_int_equal(rc, LOOM_OK);
    assert_string_equal(out, "x\n  \n");
    free(out);
    /* Sections over a missing name are false, also in strict mode. */
    out = render("[{{#nope}}x{{/nope}}{{^nope}}y{{/nope}}]", d, LOOM_TEMPLATE_ESCAPE_NONE, true,
                 &rc, &err);
    assert_int_equal(rc, LOOM_OK);
    assert_string_equal(out, "[y]");
    free(out);
    json_decref(d);
}

static void test_error_restores_output(void **s)
{
    (void)s;
    loom_template_t *t;
    loom_err_t err;
    assert_int_equal(loom_template_compile("abc {{x}} def {{y}}", 19, "t", &t, &err), LOOM_OK);
    json_t *d = json_pack("{s:s}", "x", "X");
    loom_buf_t out = LOOM_BUF_INIT;
    loom_buf_append_str(&out, "keep:");
    loom_template_options_t o = {.strict = true};
    assert_int_equal(loom_template_render(t, d, &o, &out, &err), LOOM_ENOTFOUND);
    assert_string_equal(out.data, "keep:");
    assert_string_equal(err.msg, "t:1:15: variable 'y' is missing in the data");
    loom_buf_free(&out);
    json_decref(d);
    loom_template_free(t);
}

/* ------------------------------------------------------------- syntax */

static void expect_syntax(const char *tmpl, const char *msg)
{
    loom_template_t *t = NULL;
    loom_err_t err;
    assert_int_equal(loom_template_compile(tmpl, strlen(tmpl), "job.mustache", &t, &err),
                     LOOM_EINVAL);
    assert_null(t);
    assert_string_equal(err.msg, msg);
}

static void test_syntax_errors(void **s)
{
    (void)s;
    expect_syntax("hello {{name", "job.mustache:1:7: unclosed tag: expected '}}'");
    expect_syntax("a\n {{{raw}}", "job.mustache:2:2: unclosed tag: expected '}}}'");
    expect_syntax("{{#a}}\nx{{/b}}",
                  "job.mustache:2:2: mismatched closing tag: expected {{/a}} (opened at 1:1), "
                  "found {{/b}}");
    expect_syntax("x\n  {{#a}}\ny",
                  "job.mustache:2:3: unclosed section: expected {{/a}} before the end");
    expect_syntax("{{/a}}", "job.mustache:1:1: closing tag {{/a}} without an open section");
    expect_syntax("{{ }}", "job.mustache:1:1: empty tag: expected a name");
    expect_syntax("{{a b}}", "job.mustache:1:1: tag name contains whitespace: expected one name");
    expect_syntax("{{=<%=}}",
                  "job.mustache:1:1: bad delimiter change: expected two delimiters without '=' "
                  "or whitespace, separated by whitespace, as in {{=<% %>=}}");
    expect_syntax("{{=<% %>=}}<%x", "job.mustache:1:12: unclosed tag: expected '%>'");
    char deep[256 * 6 + 300];
    size_t n = 0;
    for (int i = 0; i < 260; i++)
        n += (size_t)snprintf(deep + n, sizeof deep - n, "{{#a}}");
    loom_template_t *t = NULL;
    loom_err_t err;
    assert_int_equal(loom_template_compile(deep, n, "d", &t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "nested too deeply"));
}

/* ------------------------------------------------------------- partials */

static void test_partials_dir_and_recursion(void **s)
{
    (void)s;
    char dir[] = "/tmp/loom-tmpl-parts-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[128];
    snprintf(path, sizeof path, "%s/greet.mustache", dir);
    loom_err_t err;
    assert_int_equal(loom_write_file_atomic(path, "hi {{who}}\n", 11, 0644, &err), LOOM_OK);
    snprintf(path, sizeof path, "%s/loop.mustache", dir);
    assert_int_equal(loom_write_file_atomic(path, "x{{>loop}}", 10, 0644, &err), LOOM_OK);

    loom_template_partials_t *p;
    assert_int_equal(loom_template_partials_new(&p, &err), LOOM_OK);
    assert_int_equal(loom_template_partials_set_dir(p, dir, &err), LOOM_OK);
    json_t *d = json_pack("{s:s}", "who", "you");
    loom_template_options_t o = {.escape = LOOM_TEMPLATE_ESCAPE_NONE, .partials = p};
    loom_buf_t out = LOOM_BUF_INIT;
    const char *t1 = "<\n  {{>greet}}\n>";
    assert_int_equal(loom_template_render_string(t1, strlen(t1), "t", d, &o, &out, &err), LOOM_OK);
    assert_string_equal(out.data, "<\n  hi you\n>");
    /* The map wins over the directory. */
    assert_int_equal(loom_template_partials_add(p, "greet", "map {{who}}", 11, &err), LOOM_OK);
    loom_buf_reset(&out);
    assert_int_equal(loom_template_render_string("{{>greet}}", 10, "t", d, &o, &out, &err),
                     LOOM_OK);
    assert_string_equal(out.data, "map you");
    /* Missing: empty in spec mode, an error in strict mode; no escaping the dir. */
    loom_buf_reset(&out);
    assert_int_equal(
        loom_template_render_string("[{{>nope}}{{>../etc/passwd}}]", 29, "t", d, &o, &out, &err),
        LOOM_OK);
    assert_string_equal(out.data, "[]");
    o.strict = true;
    assert_int_equal(loom_template_render_string("a\n {{>nope}}", 12, "t", d, &o, &out, &err),
                     LOOM_ENOTFOUND);
    assert_string_equal(err.msg, "t:2:2: partial 'nope' not found");
    /* Unbounded recursion stops at the depth limit with an error. */
    o.max_depth = 10;
    loom_buf_reset(&out);
    assert_int_equal(loom_template_render_string("{{>loop}}", 9, "t", d, &o, &out, &err),
                     LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, "partial 'loop' nested deeper than 10 levels"));
    assert_int_equal(out.len, 0);
    loom_buf_free(&out);
    json_decref(d);
    loom_template_partials_free(p);
    unlink(path);
    snprintf(path, sizeof path, "%s/greet.mustache", dir);
    unlink(path);
    rmdir(dir);
}

/* ------------------------------------------------------------- threads */

#include <pthread.h>

typedef struct thr {
    const loom_template_t *t;
    const loom_template_partials_t *p;
    const json_t *data;
    int bad;
} thr_t;

static void *render_many(void *arg)
{
    thr_t *a = arg;
    loom_template_options_t o = {
        .escape = LOOM_TEMPLATE_ESCAPE_SHELL, .strict = true, .partials = a->p};
    for (int i = 0; i < 500; i++) {
        loom_buf_t out = LOOM_BUF_INIT;
        loom_err_t err;
        if (loom_template_render(a->t, a->data, &o, &out, &err) != LOOM_OK ||
            strcmp(out.data, "<'x'>\n  ['y'|'y']\n  ['y'|'y']\n") != 0)
            a->bad++;
        loom_buf_free(&out);
    }
    return NULL;
}

/* One compiled template and one partials set (whose cache fills while the
 * threads run) shared by four threads. */
static void test_concurrent_render(void **s)
{
    (void)s;
    loom_template_t *t;
    loom_template_partials_t *p;
    loom_err_t err;
    const char *src = "<{{x}}>\n  {{>row}}\n{{#list}}\n  {{>row}}\n{{/list}}";
    assert_int_equal(loom_template_compile(src, strlen(src), "t", &t, &err), LOOM_OK);
    assert_int_equal(loom_template_partials_new(&p, &err), LOOM_OK);
    assert_int_equal(loom_template_partials_add(p, "row", "[{{y}}|{{y}}]\n", 14, &err), LOOM_OK);
    json_t *d = json_pack("{s:s,s:s,s:[{}]}", "x", "x", "y", "y", "list");
    thr_t a[4];
    pthread_t th[4];
    for (int i = 0; i < 4; i++) {
        a[i] = (thr_t){.t = t, .p = p, .data = d};
        assert_int_equal(pthread_create(&th[i], NULL, render_many, &a[i]), 0);
    }
    for (int i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        assert_int_equal(a[i].bad, 0);
    }
    json_decref(d);
    loom_template_partials_free(p);
    loom_template_free(t);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--spec") == 0)
        return official_spec();
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(own_cases),
        cmocka_unit_test(test_escape_names),
        cmocka_unit_test(test_escape_html_and_none),
        cmocka_unit_test(test_escape_shell_forms),
        cmocka_unit_test(test_shell_injection),
        cmocka_unit_test(test_yaml_injection),
        cmocka_unit_test(test_yaml_invalid_utf8),
        cmocka_unit_test(test_value_forms),
        cmocka_unit_test(test_strict_missing),
        cmocka_unit_test(test_error_restores_output),
        cmocka_unit_test(test_syntax_errors),
        cmocka_unit_test(test_partials_dir_and_recursion),
        cmocka_unit_test(test_concurrent_render),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
