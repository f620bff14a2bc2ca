/* The loomd sink: job.submit over JSON-RPC (include/loom/rpc.h client).
 *
 * A sender thread's batch of jobs goes out as one JSON-RPC batch request of
 * job.submit calls, each carrying the job's submit_id. Because loomd
 * answers a repeated submit_id with the first job instead of a new one, a
 * batch whose fate is unknown (connection refused or broken, timeout, 502/
 * 503/504) is simply sent again with the same ids: the rpc client retries a
 * few times with backoff, and this sink keeps retrying for up to
 * retry_for_ns in all, so loomd may be restarted during a run. Only when
 * that time is spent is the sink broken (the run stops). A JSON-RPC error
 * for one call fails that job alone.
 *
 * A client serves one thread at a time, so the sink keeps a small pool:
 * each send() takes a client (creating one when none is free) and gives it
 * back afterwards.
 *
 * A job whose spec carries "warm_start" (a catalog entry's warm start,
 * docs/zoo.md) first gets zoo.warm from the same loomd; the result goes into
 * its labels and script (loom_zoo_warm_apply) and "warm_start" leaves the
 * spec. A failed warm start fails that job alone (it is not submitted cold).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "loom/gen.h"
#include "loom/rpc.h"
#include "loom/zoo.h"

typedef struct submit_sink {
    loom_rpc_client_config_t cfg;
    char *url, *token;
    int64_t retry_for_ns;
    pthread_mutex_t mu;
    loom_rpc_client_t *free_clients[64];
    size_t nfree;
    uint64_t retried_batches;
} submit_sink_t;

static loom_rpc_client_t *take_client(submit_sink_t *s, loom_err_t *err)
{
    pthread_mutex_lock(&s->mu);
    loom_rpc_client_t *c = s->nfree ? s->free_clients[--s->nfree] : NULL;
    pthread_mutex_unlock(&s->mu);
    if (!c && loom_rpc_client_new(&s->cfg, &c, err) != LOOM_OK)
        return NULL;
    return c;
}

static void give_client(submit_sink_t *s, loom_rpc_client_t *c)
{
    pthread_mutex_lock(&s->mu);
    if (s->nfree < 64)
        s->free_clients[s->nfree++] = c;
    else
        loom_rpc_client_free(c);
    pthread_mutex_unlock(&s->mu);
}

/* zoo.warm for one job's "warm_start", applied to its spec. */
static int warm_one(loom_rpc_client_t *c, loom_gen_job_t *j, loom_err_t *err)
{
    json_t *spec = j->spec, *res = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    int rc = loom_rpc_client_call(c, "zoo.warm", json_object_get(spec, "warm_start"),
                                  LOOM_RPC_CALL_RETRY, &res, &e);
    if (rc != LOOM_OK) {
        if (err)
            *err = e.err;
        loom_rpc_client_error_clear(&e);
        return loom_err_prefix(err, "warm start (zoo.warm)");
    }
    loom_rpc_client_error_clear(&e);
    json_t *labels = json_object_get(spec, "labels");
    labels = labels ? json_deep_copy(labels) : json_object();
    loom_buf_t script = LOOM_BUF_INIT;
    const char *text = json_string_value(json_object_get(spec, "script"));
    rc = labels && loom_buf_append_str(&script, text ? text : "") == 0
             ? loom_zoo_warm_apply(res, labels, &script, err)
             : loom_err_set(err, LOOM_ENOMEM, "out of memory");
    if (rc == LOOM_OK &&
        (json_object_set_new(spec, "labels", labels) ||
         json_object_set_new(spec, "script", json_stringn(script.data, script.len))))
        rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
    else if (rc != LOOM_OK)
        json_decref(labels);
    json_object_del(spec, "warm_start");
    loom_buf_free(&script);
    json_decref(res);
    return rc;
}

static int submit_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    submit_sink_t *s = ctx;
    loom_rpc_client_t *c = take_client(s, err);
    if (!c)
        return err ? err->code : LOOM_EIO;
    loom_rpc_batch_item_t *items = calloc(n, sizeof *items);
    loom_gen_job_t **sent = calloc(n, sizeof *sent);
    if (!items || !sent) {
        free(items);
        free(sent);
        give_client(s, c);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    size_t all = n;
    n = 0;
    for (size_t i = 0; i < all; i++) {
        loom_err_t we;
        if (json_object_get(jobs[i]->spec, "warm_start") && warm_one(c, jobs[i], &we) != LOOM_OK) {
            loom_gen_job_fail(jobs[i], &we);
            continue;
        }
        sent[n] = jobs[i];
        items[n].method = "job.submit";
        items[n++].params = jobs[i]->spec;
    }
    jobs = sent;
    int64_t start = loom_time_mono_ns();
    int rc = LOOM_OK;
    for (unsigned attempt = 0; n > 0; attempt++) {
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        rc = loom_rpc_client_batch(c, items, n, LOOM_RPC_CALL_RETRY, &e);
        if (rc == LOOM_OK) {
            loom_rpc_client_error_clear(&e);
            break;
        }
        bool again = loom_rpc_client_retryable(&e) && loom_time_mono_ns() - start < s->retry_for_ns;
        if (!again) {
            if (err) {
                *err = e.err;
                loom_err_prefix(err, "job.submit to %s (after %u rounds of retries)",
                                s->url ? s->url : "loomd", attempt);
            }
            loom_rpc_client_error_clear(&e);
            break;
        }
        loom_log_warn("gen submit retry", "url=%s jobs=%zu first_index=%llu error=\"%s\"",
                      s->url ? s->url : "default", n, (unsigned long long)jobs[0]->index,
                      e.err.msg);
        loom_rpc_client_error_clear(&e);
        __atomic_fetch_add(&s->retried_batches, 1, __ATOMIC_RELAXED);
        /* The client already backed off; a fresh connection next time. */
        loom_rpc_client_free(c);
        loom_time_sleep_until_ns(loom_time_mono_ns() + 200 * LOOM_NS_PER_MS);
        if (loom_rpc_client_new(&s->cfg, &c, err) != LOOM_OK) {
            c = NULL;
            rc = err ? err->code : LOOM_EIO;
            break;
        }
    }
    if (rc == LOOM_OK) {
        for (size_t i = 0; i < n; i++) {
            if (items[i].code != 0) {
                loom_err_t e;
                loom_err_set(&e, LOOM_EINVAL, "job.submit: %s (code %d)",
                             items[i].message ? items[i].message : "error", items[i].code);
                loom_gen_job_fail(jobs[i], &e);
                continue;
            }
            json_t *id = json_object_get(items[i].result, "id");
            if (json_is_integer(id)) {
                char buf[32];
                snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(id));
                jobs[i]->remote_id = strdup(buf);
            }
            jobs[i]->rc = LOOM_OK;
        }
    }
    loom_rpc_batch_items_clear(items, n);
    free(items);
    free(sent);
    if (c)
        give_client(s, c);
    return rc;
}

static void submit_destroy(void *ctx)
{
    submit_sink_t *s = ctx;
    for (size_t i = 0; i < s->nfree; i++)
        loom_rpc_client_free(s->free_clients[i]);
    pthread_mutex_destroy(&s->mu);
    free(s->url);
    free(s->token);
    free(s);
}

int loom_gen_sink_submit(loom_gen_sink_t *out, const char *url, const char *token,
                         int64_t retry_for_ns, loom_err_t *err)
{
    submit_sink_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    pthread_mutex_init(&s->mu, NULL);
    loom_rpc_client_config_init(&s->cfg);
    s->url = url ? strdup(url) : NULL;
    s->token = token ? strdup(token) : NULL;
    s->cfg.url = s->url;
    s->cfg.token = s->token;
    s->retry_for_ns = retry_for_ns > 0 ? retry_for_ns : 30 * LOOM_NS_PER_S;
    /* Check the address now, so that a typo fails before the run starts. */
    loom_rpc_client_t *c;
    int rc = loom_rpc_client_new(&s->cfg, &c, err);
    if (rc != LOOM_OK) {
        submit_destroy(s);
        return rc;
    }
    s->free_clients[s->nfree++] = c;
    *out = (loom_gen_sink_t){
        .name = "submit", .send = submit_send, .destroy = submit_destroy, .ctx = s};
    return LOOM_OK;
}
