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
 * A pipeline (the spec's "then", docs/generator.md#pipelines) is one job
 * of the run: its first stage goes in the batch, its later stages follow
 * one by one, each afterok the id loomd gave the stage before.
 *
 * A client serves one thread at a time, so the sink keeps a small pool:
 * each send() takes a client (creating one when none is free) and gives it
 * back afterwards.
 *
 * A job whose spec carries "warm_start" (a catalog entry's warm start,
 * docs/zoo.md) first gets zoo.warm from the same loomd; the result goes into
 * its labels and script (the caller's warm function, the zoo's
 * loom_zoo_warm_apply: gen reaches the zoo only through loomd and that
 * callback) and "warm_start" leaves the spec. A failed warm start fails that job alone (it is not
 * submitted cold).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/stat.h>

#include "loom/gen.h"
#include "loom/rpc.h"

typedef struct submit_sink {
    loom_rpc_client_config_t cfg;
    char *url, *token;
    int64_t retry_for_ns;
    loom_gen_warm_apply_fn warm;
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

/* zoo.warm for one submission's "warm_start" (a job's or a pipeline
 * stage's), applied to its spec. */
static int warm_spec(const submit_sink_t *s, loom_rpc_client_t *c, json_t *spec, loom_err_t *err)
{
    if (!s->warm)
        return loom_err_set(err, LOOM_EINVAL,
                            "warm start: this submit sink cannot apply one (no warm function)");
    json_t *res = NULL;
    loom_rpc_client_error_t e;
    loom_rpc_client_error_init(&e);
    /* The weights go to a new file in the job's directory (its workdir, or
     * the current one), created by loomd as this user, so that the job,
     * running as this user, can read it (zoo.warm "out", docs/zoo.md). */
    json_t *wp = json_deep_copy(json_object_get(spec, "warm_start"));
    if (!json_is_object(wp)) {
        json_decref(wp);
        wp = json_object();
    }
    if (!json_object_get(wp, "out")) {
        const char *wd = json_string_value(json_object_get(spec, "workdir"));
        char cwd[4096], out[4200];
        if (!wd || wd[0] != '/')
            wd = getcwd(cwd, sizeof cwd) ? cwd : "/tmp";
        static unsigned long seq;
        unsigned long n = __atomic_add_fetch(&seq, 1, __ATOMIC_RELAXED);
        unsigned long long t = (unsigned long long)loom_time_real_ns();
        snprintf(out, sizeof out, "%s/.loom-warm-gen-%llx-%x-%lu.lw", strcmp(wd, "/") ? wd : "", t,
                 (unsigned)getpid(), n);
        json_object_set_new(wp, "out", json_string(out));
    }
    int rc = loom_rpc_client_call(c, "zoo.warm", wp, 0, &res, &e);
    struct stat st;
    const char *made = json_string_value(json_object_get(wp, "out"));
    if (rc != LOOM_OK && made && lstat(made, &st) == 0 && S_ISREG(st.st_mode) && st.st_size == 0 &&
        st.st_uid == geteuid())
        unlink(made); /* created for this call, nothing written (the warm start failed) */
    json_decref(wp);
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
             ? s->warm(res, labels, &script, err)
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

/* Sends one JSON-RPC batch, again with the same submit_ids while its fate
 * is unknown, for up to retry_for_ns. *c may be replaced (NULL: none). */
static int batch_with_retries(submit_sink_t *s, loom_rpc_client_t **c, loom_rpc_batch_item_t *items,
                              size_t n, uint64_t first_index, loom_err_t *err)
{
    int64_t start = loom_time_mono_ns();
    for (unsigned attempt = 0;; attempt++) {
        loom_rpc_client_error_t e;
        loom_rpc_client_error_init(&e);
        int rc = loom_rpc_client_batch(*c, items, n, LOOM_RPC_CALL_RETRY, &e);
        /* Calls loomd did not run because it was stopping (LOOM_RPC_ABANDONED)
         * go again with the whole batch: the submit_ids make the ones it did
         * run answer with their job, not a second one. */
        size_t abandoned = 0;
        for (size_t i = 0; rc == LOOM_OK && i < n; i++)
            abandoned += items[i].code == LOOM_RPC_ABANDONED;
        bool in_time = loom_time_mono_ns() - start < s->retry_for_ns;
        if (rc == LOOM_OK && (!abandoned || !in_time)) {
            loom_rpc_client_error_clear(&e);
            return LOOM_OK;
        }
        if (rc == LOOM_OK)
            loom_err_set(&e.err, LOOM_EUNAVAIL, "%zu of %zu calls not run (loomd stopping)",
                         abandoned, n);
        bool again = (rc == LOOM_OK || loom_rpc_client_retryable(&e)) && in_time;
        if (!again) {
            if (err) {
                *err = e.err;
                loom_err_prefix(err, "job.submit to %s (after %u rounds of retries)",
                                s->url ? s->url : "loomd", attempt);
            }
            loom_rpc_client_error_clear(&e);
            return rc;
        }
        loom_log_warn("gen submit retry", "url=%s jobs=%zu first_index=%llu error=\"%s\"",
                      s->url ? s->url : "default", n, (unsigned long long)first_index, e.err.msg);
        loom_rpc_client_error_clear(&e);
        __atomic_fetch_add(&s->retried_batches, 1, __ATOMIC_RELAXED);
        /* The client already backed off; a fresh connection next time. */
        loom_rpc_client_free(*c);
        *c = NULL;
        loom_time_sleep_until_ns(loom_time_mono_ns() + 200 * LOOM_NS_PER_MS);
        if (loom_rpc_client_new(&s->cfg, c, err) != LOOM_OK) {
            *c = NULL;
            return err ? err->code : LOOM_EIO;
        }
    }
}

/* The id loomd gave (job.submit's "id"), as text; NULL if none. */
static char *result_id(const json_t *result)
{
    json_t *id = json_object_get(result, "id");
    if (!json_is_integer(id))
        return NULL;
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(id));
    return strdup(buf);
}

/* A pipeline's later stages (docs/generator.md#pipelines), one at a time,
 * each with options.dependency "afterok:<the stage before>". A stage that
 * fails fails the job; the stages already submitted stay (their
 * submit_ids make a rerun of the generator idempotent). */
static int submit_stages(submit_sink_t *s, loom_rpc_client_t **c, loom_gen_job_t *job,
                         json_t *stages, loom_err_t *err)
{
    char *prev = job->remote_id ? strdup(job->remote_id) : NULL;
    size_t k;
    json_t *st;
    int rc = LOOM_OK;
    json_array_foreach(stages, k, st)
    {
        if (!prev) {
            loom_err_t e;
            loom_err_set(&e, LOOM_EINVAL, "stage %zu: loomd gave no id for the stage before",
                         k + 1);
            loom_gen_job_fail(job, &e);
            break;
        }
        json_t *opts = json_object_get(st, "options");
        json_t *mine = opts ? json_deep_copy(opts) : json_object();
        char dep[48];
        snprintf(dep, sizeof dep, "afterok:%s", prev);
        if (!mine || json_object_set_new(mine, "dependency", json_string(dep)) ||
            json_object_set_new(st, "options", mine)) {
            rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
            break;
        }
        loom_err_t we;
        if (json_object_get(st, "warm_start") && warm_spec(s, *c, st, &we) != LOOM_OK) {
            loom_gen_job_fail(job, &we);
            break;
        }
        loom_rpc_batch_item_t item = {.method = "job.submit", .params = st};
        rc = batch_with_retries(s, c, &item, 1, job->index, err);
        if (rc != LOOM_OK) {
            loom_rpc_batch_items_clear(&item, 1);
            break;
        }
        free(prev);
        prev = NULL;
        if (item.code != 0) {
            loom_err_t e;
            loom_err_set(&e, LOOM_EINVAL, "job.submit of stage %zu (%s): %s (code %d)", k + 1,
                         json_string_value(json_object_get(st, "name")),
                         item.message ? item.message : "error", item.code);
            loom_gen_job_fail(job, &e);
        } else {
            prev = result_id(item.result);
        }
        loom_rpc_batch_items_clear(&item, 1);
        if (job->rc != LOOM_OK)
            break;
    }
    free(prev);
    return rc;
}

static int submit_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    submit_sink_t *s = ctx;
    loom_rpc_client_t *c = take_client(s, err);
    if (!c)
        return err ? err->code : LOOM_EIO;
    loom_rpc_batch_item_t *items = calloc(n, sizeof *items);
    json_t **stages = calloc(n, sizeof *stages);
    if (!items || !stages) {
        free(items);
        free(stages);
        give_client(s, c);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    loom_gen_job_t **sent = calloc(n ? n : 1, sizeof *sent);
    if (!sent) {
        free(items);
        free(stages);
        give_client(s, c);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    size_t all = n;
    n = 0;
    for (size_t i = 0; i < all; i++) {
        loom_err_t we;
        if (json_object_get(jobs[i]->spec, "warm_start") &&
            warm_spec(s, c, jobs[i]->spec, &we) != LOOM_OK) {
            loom_gen_job_fail(jobs[i], &we); /* no parent: not submitted cold */
            continue;
        }
        sent[n++] = jobs[i];
    }
    jobs = sent;
    for (size_t i = 0; i < n; i++) {
        /* A pipeline's later stages are not job.submit's: they go after. */
        stages[i] = json_incref(json_object_get(jobs[i]->spec, "then"));
        if (stages[i])
            json_object_del(jobs[i]->spec, "then");
        items[i].method = "job.submit";
        items[i].params = jobs[i]->spec;
    }
    int rc = n ? batch_with_retries(s, &c, items, n, jobs[0]->index, err) : LOOM_OK;
    for (size_t i = 0; rc == LOOM_OK && i < n; i++) {
        if (items[i].code != 0) {
            loom_err_t e;
            loom_err_set(&e, LOOM_EINVAL, "job.submit: %s (code %d)",
                         items[i].message ? items[i].message : "error", items[i].code);
            loom_gen_job_fail(jobs[i], &e);
            continue;
        }
        jobs[i]->remote_id = result_id(items[i].result);
        jobs[i]->rc = LOOM_OK;
        if (stages[i])
            rc = submit_stages(s, &c, jobs[i], stages[i], err);
    }
    for (size_t i = 0; i < n; i++)
        json_decref(stages[i]);
    free(stages);
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
                         int64_t retry_for_ns, loom_gen_warm_apply_fn warm, loom_err_t *err)
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
    s->warm = warm;
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
