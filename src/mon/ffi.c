/* JSON-text entry points for language bindings (python/loom/monitor.py).
 *
 * Why: a ctypes binding that mirrors every C struct would break whenever a
 * field is added. These functions take plain arguments and return the same
 * JSON that `loom mon --json` prints, so the binding is a dozen lines and
 * stays in step with the C library by construction.
 */
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"

static int fail(const loom_err_t *e, int rc, char *errbuf, size_t errlen)
{
    if (errbuf && errlen)
        snprintf(errbuf, errlen, "%s", e->msg[0] ? e->msg : loom_err_name(rc));
    return rc;
}

static int finish(loom_buf_t *b, char **json)
{
    *json = loom_buf_detach(b);
    return *json ? LOOM_OK : LOOM_ENOMEM;
}

int loom_mon_json_open(loom_mon_t **m, char *errbuf, size_t errlen)
{
    loom_err_t e = {0};
    int rc = loom_mon_open(m, NULL, &e);
    return rc ? fail(&e, rc, errbuf, errlen) : LOOM_OK;
}

int loom_mon_json_snapshot(loom_mon_t *m, const char *groups, char **json, char *errbuf,
                           size_t errlen)
{
    loom_err_t e = {0};
    unsigned g;
    *json = NULL;
    int rc = loom_mon_parse_groups(groups && *groups ? groups : "all", &g, &e);
    if (rc)
        return fail(&e, rc, errbuf, errlen);
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    loom_buf_t b = LOOM_BUF_INIT;
    rc = loom_mon_read(m, g, &s, &e);
    if (rc == LOOM_OK)
        rc = loom_mon_to_json(&s, NULL, &b, &e);
    loom_mon_snapshot_free(&s);
    if (rc) {
        loom_buf_free(&b);
        return fail(&e, rc, errbuf, errlen);
    }
    return finish(&b, json);
}

int loom_mon_json_proc(loom_mon_t *m, int pid, int tree, char **json, char *errbuf, size_t errlen)
{
    loom_err_t e = {0};
    loom_mon_proc_t p;
    loom_buf_t b = LOOM_BUF_INIT;
    *json = NULL;
    int rc = loom_mon_proc_read(m, (pid_t)pid, tree != 0, &p, &e);
    if (rc == LOOM_OK)
        rc = loom_mon_proc_to_json(&p, &b, &e);
    if (rc) {
        loom_buf_free(&b);
        return fail(&e, rc, errbuf, errlen);
    }
    return finish(&b, json);
}

int loom_mon_json_cgroup(loom_mon_t *m, const char *path, char **json, char *errbuf, size_t errlen)
{
    loom_err_t e = {0};
    loom_mon_cgroup_t c;
    loom_buf_t b = LOOM_BUF_INIT;
    *json = NULL;
    int rc = loom_mon_cgroup_read(m, path, &c, &e);
    if (rc == LOOM_OK)
        rc = loom_mon_cgroup_to_json(&c, &b, &e);
    if (rc) {
        loom_buf_free(&b);
        return fail(&e, rc, errbuf, errlen);
    }
    return finish(&b, json);
}

int loom_mon_json_sampler_open(loom_mon_t *m, const char *groups, loom_mon_sampler_t **s,
                               char *errbuf, size_t errlen)
{
    loom_err_t e = {0};
    unsigned g;
    int rc = loom_mon_parse_groups(groups && *groups ? groups : "all", &g, &e);
    if (rc == LOOM_OK)
        rc = loom_mon_sampler_open(s, m, g, &e);
    return rc ? fail(&e, rc, errbuf, errlen) : LOOM_OK;
}

int loom_mon_json_sampler_next(loom_mon_sampler_t *s, char **json, char *errbuf, size_t errlen)
{
    loom_err_t e = {0};
    loom_buf_t b = LOOM_BUF_INIT;
    *json = NULL;
    int rc = loom_mon_sampler_next(s, &e);
    if (rc == LOOM_OK)
        rc = loom_mon_to_json(loom_mon_sampler_snapshot(s), loom_mon_sampler_rates(s), &b, &e);
    if (rc) {
        loom_buf_free(&b);
        return fail(&e, rc, errbuf, errlen);
    }
    return finish(&b, json);
}

void loom_mon_free(void *p)
{
    free(p);
}

int loom_mon_read_prom(loom_mon_t *m, unsigned groups, loom_buf_t *out, loom_err_t *err)
{
    loom_mon_snapshot_t s;
    loom_mon_snapshot_init(&s);
    int rc = loom_mon_read(m, groups, &s, err);
    if (rc == LOOM_OK)
        rc = loom_mon_to_prom(&s, out, err);
    loom_mon_snapshot_free(&s);
    return rc;
}
