/* Partials: where {{>name}} finds its template. An in-memory map and/or a
 * directory of NAME.mustache files. A standalone partial is indented by
 * prefixing each line of its *source* (so values it interpolates are not
 * indented, as the spec requires); each (name, indentation) pair is compiled
 * once and cached, under a mutex so renders may run in parallel. */
#include <stdlib.h>
#include <string.h>

#include "template/template_int.h"

int loom_template_partials_new(loom_template_partials_t **out, loom_err_t *err)
{
    loom_template_partials_t *p = calloc(1, sizeof *p);
    if (!p || !(p->map = json_object())) {
        free(p);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&p->mu, NULL);
    *out = p;
    return LOOM_OK;
}

static void cache_clear(loom_template_partials_t *p)
{
    for (size_t i = 0; i < p->n; i++) {
        free(p->cache[i].name);
        free(p->cache[i].indent);
        loom_template_free(p->cache[i].t);
    }
    p->n = 0;
}

void loom_template_partials_free(loom_template_partials_t *p)
{
    if (!p)
        return;
    cache_clear(p);
    free(p->cache);
    free(p->dir);
    json_decref(p->map);
    pthread_mutex_destroy(&p->mu);
    free(p);
}

int loom_template_partials_set_dir(loom_template_partials_t *p, const char *dir, loom_err_t *err)
{
    char *d = NULL;
    if (dir && !(d = strdup(dir)))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    pthread_mutex_lock(&p->mu);
    free(p->dir);
    p->dir = d;
    cache_clear(p);
    pthread_mutex_unlock(&p->mu);
    return LOOM_OK;
}

int loom_template_partials_add(loom_template_partials_t *p, const char *name, const char *text,
                               size_t len, loom_err_t *err)
{
    json_t *s = json_stringn_nocheck(text, len);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    pthread_mutex_lock(&p->mu);
    int rc = json_object_set_new_nocheck(p->map, name, s);
    cache_clear(p);
    pthread_mutex_unlock(&p->mu);
    return rc ? loom_err_set(err, LOOM_ENOMEM, "out of memory") : LOOM_OK;
}

int loom_template_partials_add_json(loom_template_partials_t *p, const json_t *obj, loom_err_t *err)
{
    if (!json_is_object(obj))
        return loom_err_set(err, LOOM_EINVAL, "partials: expected an object, found %s",
                            loom_json_type_name(obj));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (!json_is_string(v))
            return loom_err_set(err, LOOM_EINVAL, "partials/%s: expected a string, found %s", k,
                                loom_json_type_name(v));
        int rc = loom_template_partials_add(p, k, json_string_value(v), json_string_length(v), err);
        if (rc)
            return rc;
    }
    return LOOM_OK;
}

/* Source of partial `name` into b; 1 if found, 0 if not, <0 on error. */
static int source(const loom_template_partials_t *p, const char *name, loom_buf_t *b, char **label,
                  loom_err_t *err)
{
    json_t *s = json_object_get(p->map, name);
    if (s) {
        if (loom_buf_append(b, json_string_value(s), json_string_length(s)) ||
            !(*label = strdup(name)))
            return loom_err_set(err, LOOM_ENOMEM, "out of memory");
        return 1;
    }
    if (!p->dir || !*name || name[0] == '.' || strchr(name, '/'))
        return 0;
    loom_buf_t path = LOOM_BUF_INIT;
    if (loom_buf_appendf(&path, "%s/%s.mustache", p->dir, name))
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    loom_err_t e;
    int rc = loom_buf_read_file(b, path.data, &e);
    if (rc == LOOM_OK) {
        *label = loom_buf_detach(&path);
        return *label ? 1 : loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    loom_buf_free(&path);
    if (rc == LOOM_ENOTFOUND)
        return 0;
    *err = e;
    return rc;
}

static int indent_source(const char *src, size_t len, const char *indent, loom_buf_t *out)
{
    size_t il = strlen(indent);
    for (size_t i = 0; i < len; i++) {
        if ((i == 0 || src[i - 1] == '\n') && loom_buf_append(out, indent, il))
            return LOOM_ENOMEM;
        if (loom_buf_append_char(out, src[i]))
            return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

static int compile_partial(const loom_template_partials_t *p, const char *name, const char *indent,
                           loom_template_t **out, loom_err_t *err)
{
    loom_buf_t src = LOOM_BUF_INIT, ind = LOOM_BUF_INIT;
    char *label = NULL;
    int rc = source(p, name, &src, &label, err);
    *out = NULL;
    if (rc <= 0)
        goto done;
    const char *text = src.data ? src.data : "";
    size_t len = src.len;
    if (indent && *indent) {
        if (indent_source(text, len, indent, &ind)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            goto done;
        }
        text = ind.data ? ind.data : "";
        len = ind.len;
    }
    rc = loom_template_compile(text, len, label, out, err);
done:
    free(label);
    loom_buf_free(&src);
    loom_buf_free(&ind);
    return rc < 0 ? rc : LOOM_OK;
}

int loom__template_partial_get(const loom_template_partials_t *cp, const char *name,
                               const char *indent, const loom_template_t **out, loom_err_t *err)
{
    /* The cache is logically const: it only remembers compilations. */
    loom_template_partials_t *p = (loom_template_partials_t *)cp;
    if (!indent)
        indent = "";
    int rc = LOOM_OK;
    pthread_mutex_lock(&p->mu);
    for (size_t i = 0; i < p->n; i++)
        if (strcmp(p->cache[i].name, name) == 0 && strcmp(p->cache[i].indent, indent) == 0) {
            *out = p->cache[i].t;
            goto unlock;
        }
    loom_template_t *t;
    if ((rc = compile_partial(p, name, indent, &t, err)))
        goto unlock;
    if (loom_vec_reserve((void **)&p->cache, &p->cap, p->n + 1, sizeof *p->cache, 8)) {
        loom_template_free(t);
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto unlock;
    }
    partial_entry_t *e = &p->cache[p->n];
    e->name = strdup(name);
    e->indent = strdup(indent);
    e->t = t;
    if (!e->name || !e->indent) {
        free(e->name);
        free(e->indent);
        loom_template_free(t);
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
        goto unlock;
    }
    p->n++;
    *out = t;
unlock:
    pthread_mutex_unlock(&p->mu);
    return rc;
}
