/* The dashboard's live feed: job and node changes as Server-Sent Events.
 *
 * One thread watches the store and the cluster model. After a store commit
 * (loom_store_stats' commit counter moved) it reads the active jobs (PENDING,
 * RUNNING) and compares them with the previous read: a job that
 * appeared or changed state is a "job" event, one that left the active set is
 * read once more for its final state. Every second it reads node.list through
 * the dispatcher and publishes a "node" event for each node whose free
 * resources, jobs or availability changed.
 *
 * Events go into a ring of DASH_FEED_RING numbered events. A reader (GET
 * /events) is a cursor into it: it holds no copy, so memory is the ring's
 * whatever the readers do. A reader that fell more than the ring behind gets
 * a "reset" event (re-read everything) and continues from the oldest event
 * kept. Readers resume with Last-Event-ID, so the same feed can serve a
 * `loom logs -f` or `loom wait` that reconnects. */
#include <poll.h> /* POLLRDHUP: _GNU_SOURCE, set for the whole build */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <microhttpd.h>

#include "daemon/dash.h"

#define TICK_MS          250
#define NODE_EVERY_TICKS 4
#define KEEPALIVE_S      15
#define MAX_JOB_EVENTS   500 /* per scan; beyond it one "jobs" summary */
#define ACTIVE_PAGE      10000

typedef struct fev {
    uint64_t seq;
    char text[DASH_FEED_EVENT + 64]; /* "id: ..\nevent: ..\ndata: ..\n\n" */
    size_t len;
} fev_t;

typedef struct jstate {
    int64_t id;
    int state;
    uint64_t reason; /* a hash of the reason: a pending job's reason changes too */
} jstate_t;

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603ull; /* FNV-1a */
    for (; s && *s; s++)
        h = (h ^ (unsigned char)*s) * 1099511628211ull;
    return h;
}

struct dash_feed {
    loom_store_t *store;
    loom_rpc_dispatcher_t *d;
    pthread_t thread;
    pthread_mutex_t mu;
    pthread_cond_t cond;
    bool stopping;
    fev_t *ring;
    uint64_t next_seq; /* the number the next event gets; from 1 */
    unsigned subs;
    struct {
        int64_t user; /* -1: free */
        unsigned n;
    } per_user[DASH_FEED_MAX_SUBS]; /* streams of users (not operators) */
    unsigned user_subs;             /* their sum */
    /* the watcher's own state (its thread only) */
    uint64_t commits;
    jstate_t *active;
    size_t nactive;
    json_t *nodes; /* name -> digest string */
};

typedef struct sub {
    dash_feed_t *f;
    uint64_t cursor;    /* the next event to send */
    int64_t expires_ns; /* the session's end: the stream ends then too */
    int fd;             /* the connection's socket, to notice a reader gone */
    int64_t user;       /* its session's uid; -1: an operator's */
    bool hello;
} sub_t;

void dash_feed_publish(dash_feed_t *f, const char *type, json_t *data)
{
    pthread_mutex_lock(&f->mu);
    uint64_t seq = f->next_seq++;
    json_object_set_new(data, "seq", json_integer((json_int_t)seq));
    char *text = json_dumps(data, JSON_COMPACT);
    fev_t *e = &f->ring[seq % DASH_FEED_RING];
    e->seq = seq;
    if (!text || strlen(text) > DASH_FEED_EVENT) /* cannot happen with our events; stay valid */
        e->len = (size_t)snprintf(e->text, sizeof e->text, "id: %llu\nevent: reset\ndata: {}\n\n",
                                  (unsigned long long)seq);
    else
        e->len = (size_t)snprintf(e->text, sizeof e->text, "id: %llu\nevent: %s\ndata: %s\n\n",
                                  (unsigned long long)seq, type, text);
    free(text);
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
}

/* ------------------------------------------------------------- watcher */

static void publish_job(dash_feed_t *f, const loom_job_t *j)
{
    json_t *ev =
        json_pack("{s:I,s:s,s:s?}", "id", (json_int_t)j->id, "state", loom_job_state_name(j->state),
                  "reason", j->reason && strlen(j->reason) < 200 ? j->reason : NULL);
    if (ev)
        dash_feed_publish(f, "job", ev);
    json_decref(ev);
}

/* The active jobs now, ascending id, as (id, state) in *out. */
static int read_active(dash_feed_t *f, jstate_t **out, size_t *n, loom_job_list_t *keep)
{
    loom_store_filter_t flt = {.state_mask = (1u << LOOM_JOB_PENDING) | (1u << LOOM_JOB_RUNNING),
                               .after_id = 0,
                               .limit = ACTIVE_PAGE};
    loom_err_t err;
    if (loom_store_list(f->store, &flt, keep, &err) != LOOM_OK)
        return LOOM_EIO;
    *n = keep->n;
    *out = calloc(keep->n ? keep->n : 1, sizeof **out);
    if (!*out)
        return LOOM_ENOMEM;
    for (size_t i = 0; i < keep->n; i++)
        (*out)[i] =
            (jstate_t){keep->jobs[i].id, (int)keep->jobs[i].state, hash_str(keep->jobs[i].reason)};
    return LOOM_OK;
}

/* Compares the active set with the previous one and publishes the changes:
 * a job new to it, or whose state or reason changed, or that left it. */
static void scan_jobs(dash_feed_t *f)
{
    loom_job_list_t list = {0};
    jstate_t *now = NULL;
    size_t n = 0;
    if (read_active(f, &now, &n, &list) != LOOM_OK) {
        loom_job_list_free(&list);
        free(now);
        return;
    }
    size_t i = 0, k = 0, changes = 0;
    while (i < n || k < f->nactive) {
        bool from_now = k == f->nactive || (i < n && now[i].id <= f->active[k].id);
        bool same_id = from_now && k < f->nactive && now[i].id == f->active[k].id;
        if (from_now && !(same_id && now[i].state == f->active[k].state &&
                          now[i].reason == f->active[k].reason)) {
            if (++changes <= MAX_JOB_EVENTS)
                publish_job(f, &list.jobs[i]);
        } else if (!from_now) { /* left the active set: read its end */
            loom_job_t j;
            loom_err_t err;
            if (++changes <= MAX_JOB_EVENTS &&
                loom_store_get(f->store, f->active[k].id, &j, &err) == LOOM_OK) {
                publish_job(f, &j);
                loom_job_free(&j);
            }
        }
        if (from_now)
            i++;
        if (!from_now || same_id)
            k++;
    }
    if (changes > MAX_JOB_EVENTS) {
        json_t *ev = json_pack("{s:I}", "changed", (json_int_t)changes);
        if (ev)
            dash_feed_publish(f, "jobs", ev);
        json_decref(ev);
    }
    loom_job_list_free(&list);
    free(f->active);
    f->active = now;
    f->nactive = n;
}

/* node.list through the dispatcher; a "node" event per changed node. */
static void scan_nodes(dash_feed_t *f)
{
    static const char req[] = "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"node.list\"}";
    loom_rpc_transport_t t = {.unix_socket = true};
    snprintf(t.peer, sizeof t.peer, "dash feed");
    loom_buf_t out = LOOM_BUF_INIT;
    if (loom_rpc_handle(f->d, req, sizeof req - 1, &t, &out) != LOOM_OK) {
        loom_buf_free(&out);
        return;
    }
    json_t *res = json_loadb(out.data ? out.data : "", out.len, 0, NULL);
    loom_buf_free(&out);
    json_t *nodes = json_object_get(json_object_get(res, "result"), "nodes");
    size_t i;
    json_t *node;
    json_array_foreach(nodes, i, node)
    {
        const char *name = json_string_value(json_object_get(node, "name"));
        char *digest = json_dumps(node, JSON_COMPACT | JSON_SORT_KEYS);
        if (name && digest && strlen(name) < 200) {
            const char *was = json_string_value(json_object_get(f->nodes, name));
            if (!was || strcmp(was, digest) != 0) {
                json_object_set_new(f->nodes, name, json_string(digest));
                json_t *ev = json_pack("{s:s,s:O?}", "name", name, "available",
                                       json_object_get(node, "available"));
                if (ev)
                    dash_feed_publish(f, "node", ev);
                json_decref(ev);
            }
        }
        free(digest);
    }
    json_decref(res);
}

static void *watch_main(void *arg)
{
    dash_feed_t *f = arg;
    for (unsigned tick = 0;; tick++) {
        pthread_mutex_lock(&f->mu);
        bool stop = f->stopping;
        pthread_mutex_unlock(&f->mu);
        if (stop)
            break;
        loom_store_stats_t st;
        loom_err_t err;
        if (loom_store_stats(f->store, &st, &err) == LOOM_OK && st.commits != f->commits) {
            f->commits = st.commits;
            int64_t t0 = loom_time_mono_ns();
            scan_jobs(f);
            loom_log_debug("dash feed scan", "active=%zu ms=%.2f", f->nactive,
                           (double)(loom_time_mono_ns() - t0) / 1e6);
        }
        if (tick % NODE_EVERY_TICKS == 0)
            scan_nodes(f);
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_nsec += TICK_MS * 1000L * 1000L;
        if (ts.tv_nsec >= 1000000000L) {
            ts.tv_sec++;
            ts.tv_nsec -= 1000000000L;
        }
        pthread_mutex_lock(&f->mu);
        if (!f->stopping)
            pthread_cond_timedwait(&f->cond, &f->mu, &ts);
        pthread_mutex_unlock(&f->mu);
    }
    return NULL;
}

/* -------------------------------------------------------------- readers */

/* Whether the reader has closed its end (a closed tab): checked while
 * waiting, so that its slot is freed within a second, not at the next write. */
static bool peer_gone(int fd)
{
    struct pollfd p = {.fd = fd, .events = POLLRDHUP};
    return fd >= 0 && poll(&p, 1, 0) == 1 && (p.revents & (POLLRDHUP | POLLHUP | POLLERR));
}

/* Copies the events from sub->cursor that fit into buf; waits for one (or
 * for KEEPALIVE_S, then sends a comment) when there is none. */
static ssize_t read_events(void *cls, uint64_t pos, char *buf, size_t max)
{
    (void)pos;
    sub_t *s = cls;
    dash_feed_t *f = s->f;
    size_t used = 0;
    if (!s->hello) {
        s->hello = true;
        return snprintf(buf, max, "retry: 2000\nevent: hello\ndata: {\"seq\":%llu}\n\n",
                        (unsigned long long)(s->cursor - 1));
    }
    pthread_mutex_lock(&f->mu);
    bool gone = false;
    for (int waited = 0; s->cursor >= f->next_seq && !f->stopping && waited < KEEPALIVE_S;) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        ts.tv_sec += 1;
        if (pthread_cond_timedwait(&f->cond, &f->mu, &ts) != 0) {
            waited++;
            if ((gone = peer_gone(s->fd)) || loom_time_mono_ns() >= s->expires_ns)
                break;
        }
    }
    if (gone || f->stopping || loom_time_mono_ns() >= s->expires_ns) {
        pthread_mutex_unlock(&f->mu);
        return MHD_CONTENT_READER_END_OF_STREAM;
    }
    if (s->cursor + DASH_FEED_RING <= f->next_seq) { /* fell behind the ring */
        s->cursor = f->next_seq - DASH_FEED_RING + 1;
        used = (size_t)snprintf(buf, max, "event: reset\ndata: {}\n\n");
    }
    while (s->cursor < f->next_seq) {
        const fev_t *e = &f->ring[s->cursor % DASH_FEED_RING];
        if (used + e->len > max)
            break;
        memcpy(buf + used, e->text, e->len);
        used += e->len;
        s->cursor++;
    }
    pthread_mutex_unlock(&f->mu);
    if (used == 0)
        used = (size_t)snprintf(buf, max, ": keepalive\n\n");
    return (ssize_t)used;
}

static void end_reader(void *cls)
{
    sub_t *s = cls;
    pthread_mutex_lock(&s->f->mu);
    s->f->subs--;
    for (size_t i = 0; s->user >= 0 && i < DASH_FEED_MAX_SUBS; i++)
        if (s->f->per_user[i].user == s->user && s->f->per_user[i].n > 0) {
            if (--s->f->per_user[i].n == 0)
                s->f->per_user[i].user = -1;
            s->f->user_subs--;
            break;
        }
    pthread_mutex_unlock(&s->f->mu);
    free(s);
}

/* Counts a new stream of user (f->mu held): true when it may open, else
 * false with the limit it would pass in why. */
static bool feed_admit(dash_feed_t *f, int64_t user, char *why, size_t len)
{
    if (f->subs >= DASH_FEED_MAX_SUBS || f->stopping) {
        snprintf(why, len, "too many event streams open on this loomd (%d); close a tab",
                 DASH_FEED_MAX_SUBS);
        return false;
    }
    if (user < 0)
        return true;
    size_t slot = DASH_FEED_MAX_SUBS, free_slot = DASH_FEED_MAX_SUBS;
    for (size_t i = 0; i < DASH_FEED_MAX_SUBS; i++) {
        if (f->per_user[i].user == user)
            slot = i;
        if (f->per_user[i].user < 0 && free_slot == DASH_FEED_MAX_SUBS)
            free_slot = i;
    }
    if (slot < DASH_FEED_MAX_SUBS && f->per_user[slot].n >= DASH_FEED_SUBS_PER_USER) {
        snprintf(why, len,
                 "too many event streams: uid %lld has %d open, the most one user may have; "
                 "close a dashboard tab",
                 (long long)user, DASH_FEED_SUBS_PER_USER);
        return false;
    }
    if (slot == DASH_FEED_MAX_SUBS)
        slot = free_slot; /* there is one: fewer users than streams */
    if (f->user_subs >= DASH_FEED_MAX_SUBS - DASH_FEED_SUBS_RESERVED ||
        slot == DASH_FEED_MAX_SUBS) {
        snprintf(why, len, "too many event streams open by users on this loomd (%d); retry later",
                 DASH_FEED_MAX_SUBS - DASH_FEED_SUBS_RESERVED);
        return false;
    }
    f->per_user[slot].user = user;
    f->per_user[slot].n++;
    f->user_subs++;
    return true;
}

int dash_feed_serve(dash_feed_t *f, void *conn, uint64_t from, int64_t expires_ns, int64_t user,
                    unsigned *status)
{
    struct MHD_Connection *c = conn;
    sub_t *s = calloc(1, sizeof *s);
    pthread_mutex_lock(&f->mu);
    char why[160] = "out of memory";
    bool full = !s || !feed_admit(f, user, why, sizeof why);
    if (s && !full) {
        f->subs++;
        s->f = f;
        s->user = user;
        s->expires_ns = expires_ns;
        const union MHD_ConnectionInfo *ci =
            MHD_get_connection_info(c, MHD_CONNECTION_INFO_CONNECTION_FD);
        s->fd = ci ? ci->connect_fd : -1;
        /* resume at `from` when it is still in the ring, else from now */
        bool kept = from && from <= f->next_seq && from + DASH_FEED_RING > f->next_seq;
        s->cursor = kept ? from : f->next_seq;
    }
    pthread_mutex_unlock(&f->mu);
    if (!s || full) {
        free(s);
        char busy[200];
        int n = snprintf(busy, sizeof busy, "%s\n", why);
        struct MHD_Response *r =
            MHD_create_response_from_buffer((size_t)n, busy, MHD_RESPMEM_MUST_COPY);
        if (!r)
            return MHD_NO;
        MHD_add_response_header(r, "Retry-After", "10");
        *status = 503;
        enum MHD_Result ret = MHD_queue_response(c, 503, r);
        MHD_destroy_response(r);
        return ret;
    }
    struct MHD_Response *r =
        MHD_create_response_from_callback(MHD_SIZE_UNKNOWN, 8192, read_events, s, end_reader);
    if (!r) {
        end_reader(s);
        return MHD_NO;
    }
    MHD_add_response_header(r, MHD_HTTP_HEADER_CONTENT_TYPE, "text/event-stream");
    MHD_add_response_header(r, "Cache-Control", "no-store");
    MHD_add_response_header(r, "X-Content-Type-Options", "nosniff");
    *status = 200;
    enum MHD_Result ret = MHD_queue_response(c, 200, r);
    MHD_destroy_response(r);
    return ret;
}

/* ------------------------------------------------------------ lifecycle */

int dash_feed_start(loom_store_t *store, loom_rpc_dispatcher_t *d, dash_feed_t **out,
                    loom_err_t *err)
{
    dash_feed_t *f = calloc(1, sizeof *f);
    if (f)
        f->ring = calloc(DASH_FEED_RING, sizeof *f->ring);
    if (f)
        f->nodes = json_object();
    if (!f || !f->ring || !f->nodes) {
        if (f) {
            free(f->ring);
            json_decref(f->nodes);
        }
        free(f);
        return loom_err_set(err, LOOM_ENOMEM, "dashboard feed: out of memory");
    }
    f->store = store;
    f->d = d;
    f->next_seq = 1;
    for (size_t i = 0; i < DASH_FEED_MAX_SUBS; i++)
        f->per_user[i].user = -1;
    pthread_mutex_init(&f->mu, NULL);
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&f->cond, &ca);
    pthread_condattr_destroy(&ca);
    if (pthread_create(&f->thread, NULL, watch_main, f) != 0) {
        pthread_cond_destroy(&f->cond);
        pthread_mutex_destroy(&f->mu);
        free(f->ring);
        json_decref(f->nodes);
        free(f);
        return loom_err_set(err, LOOM_EIO, "dashboard feed: cannot start its thread");
    }
    *out = f;
    return LOOM_OK;
}

void dash_feed_stop(dash_feed_t *f)
{
    if (!f)
        return;
    pthread_mutex_lock(&f->mu);
    bool was = f->stopping;
    f->stopping = true;
    pthread_cond_broadcast(&f->cond);
    pthread_mutex_unlock(&f->mu);
    if (!was)
        pthread_join(f->thread, NULL);
}

void dash_feed_free(dash_feed_t *f)
{
    if (!f)
        return;
    dash_feed_stop(f);
    pthread_cond_destroy(&f->cond);
    pthread_mutex_destroy(&f->mu);
    free(f->ring);
    free(f->active);
    json_decref(f->nodes);
    free(f);
}
