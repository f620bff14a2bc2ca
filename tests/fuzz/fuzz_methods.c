/* Fuzz the request path through loomd's methods: raw bytes -> JSON-RPC
 * dispatcher -> server.info / job.* handlers -> a real store (in a
 * temporary directory, removed at exit). Checks that every request gets a
 * response that is valid JSON (or none, for notifications). methods.c
 * belongs to the loomd executable; loomd_lib links it in. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "../unit/rmtree.h"
#include "daemon/methods.h"
#include "daemon/runner.h"

static loom_store_t *store;
static loom_rpc_dispatcher_t *disp;
static loomd_info_t info;
static loomd_methods_t methods;
static char dir[64];

static void cleanup(void)
{
    loom_store_close(store);
    loom_rpc_dispatcher_free(disp);
    if (loom_test_rmtree(dir) != 0)
        fprintf(stderr, "fuzz_methods: could not remove %s\n", dir);
}

static void init(void)
{
    snprintf(dir, sizeof dir, "/tmp/loom-fuzz-methods-XXXXXX");
    if (!mkdtemp(dir))
        abort();
    char path[128];
    snprintf(path, sizeof path, "%s/loom.db", dir);
    loom_err_t err;
    if (loom_store_open(path, NULL, &store, &err) || loom_rpc_dispatcher_new(NULL, &disp, &err))
        abort();
    info = (loomd_info_t){.state_dir = dir,
                          .durability = "normal",
                          .started_real_ns = loom_time_real_ns(),
                          .started_mono_ns = loom_time_mono_ns()};
    /* job.wait and job.logs answer at once: an input must not sleep. */
    methods = (loomd_methods_t){.store = store, .info = &info, .follow_max_ms = -1};
    if (loomd_methods_add(disp, &methods, &err))
        abort();
    atexit(cleanup);
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    if (!store)
        init();
    loom_buf_t out = LOOM_BUF_INIT;
    if (loom_rpc_handle(disp, (const char *)data, size, NULL, &out) != LOOM_OK)
        abort();
    if (out.len) {
        json_t *v = json_loadb(out.data, out.len, 0, NULL);
        if (!v || !(json_is_object(v) || json_is_array(v)))
            abort();
        json_decref(v);
    }
    loom_buf_free(&out);
    return 0;
}
