/* Fuzz the escapers with an oracle: whatever the value, what the consumer
 * reads back must be exactly the value.
 *   yaml   "k: ESCAPED" parsed by libyaml gives the value (valid UTF-8 in);
 *   shell  reading ESCAPED with POSIX quoting rules (single-quoted runs and
 *          backslash-escaped characters, nothing else allowed) gives the value;
 *   html   no raw & < > " in the output, and unescaping gives the value. */
#include <stdlib.h>
#include <string.h>
#include <yaml.h>

#include "loom/template.h"

static void yaml_check(const char *v, size_t len)
{
    loom_buf_t doc = LOOM_BUF_INIT;
    loom_buf_append_str(&doc, "k: ");
    if (loom_template_escape_append(&doc, LOOM_TEMPLATE_ESCAPE_YAML, v, len))
        abort();
    yaml_parser_t p;
    yaml_event_t ev;
    yaml_parser_initialize(&p);
    yaml_parser_set_input_string(&p, (const unsigned char *)doc.data, doc.len);
    int scalars = 0;
    for (;;) {
        if (!yaml_parser_parse(&p, &ev))
            abort(); /* the escaper produced invalid YAML */
        yaml_event_type_t t = ev.type;
        if (t == YAML_SCALAR_EVENT && ++scalars == 2 &&
            (ev.data.scalar.length != len || memcmp(ev.data.scalar.value, v, len) != 0))
            abort(); /* read back differently */
        yaml_event_delete(&ev);
        if (t == YAML_STREAM_END_EVENT)
            break;
    }
    yaml_parser_delete(&p);
    if (scalars != 2)
        abort();
    loom_buf_free(&doc);
}

static void shell_check(const char *v, size_t len)
{
    loom_buf_t w = LOOM_BUF_INIT, back = LOOM_BUF_INIT;
    if (loom_template_escape_append(&w, LOOM_TEMPLATE_ESCAPE_SHELL, v, len))
        abort();
    for (size_t i = 0; i < w.len;) {
        if (w.data[i] == '\'') {
            const char *end = memchr(w.data + i + 1, '\'', w.len - i - 1);
            if (!end)
                abort(); /* unterminated quote */
            loom_buf_append(&back, w.data + i + 1, (size_t)(end - w.data) - i - 1);
            i = (size_t)(end - w.data) + 1;
        } else if (w.data[i] == '\\' && i + 1 < w.len) {
            loom_buf_append_char(&back, w.data[i + 1]);
            i += 2;
        } else {
            abort(); /* anything unquoted could be shell syntax */
        }
    }
    if (back.len != len || (len && memcmp(back.data, v, len) != 0))
        abort();
    loom_buf_free(&w);
    loom_buf_free(&back);
}

static void html_check(const char *v, size_t len)
{
    loom_buf_t h = LOOM_BUF_INIT, back = LOOM_BUF_INIT;
    if (loom_template_escape_append(&h, LOOM_TEMPLATE_ESCAPE_HTML, v, len))
        abort();
    static const struct {
        const char *ent;
        char c;
    } ents[] = {{"&amp;", '&'}, {"&lt;", '<'}, {"&gt;", '>'}, {"&quot;", '"'}};
    for (size_t i = 0; i < h.len;) {
        char c = h.data[i];
        if (c == '<' || c == '>' || c == '"')
            abort();
        if (c == '&') {
            size_t k = 0;
            while (k < 4 && strncmp(h.data + i, ents[k].ent, strlen(ents[k].ent)) != 0)
                k++;
            if (k == 4)
                abort();
            loom_buf_append_char(&back, ents[k].c);
            i += strlen(ents[k].ent);
        } else {
            loom_buf_append_char(&back, c);
            i++;
        }
    }
    if (back.len != len || (len && memcmp(back.data, v, len) != 0))
        abort();
    loom_buf_free(&h);
    loom_buf_free(&back);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    const char *v = (const char *)data;
    shell_check(v, size);
    html_check(v, size);
    if (loom_utf8_valid(v, size))
        yaml_check(v, size);
    return 0;
}
