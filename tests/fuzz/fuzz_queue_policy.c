/* Fuzz the queue policy's text form (loomd --queue-policy, loom sim
 * --queue): loom_sched_queue_cfg_parse, and a runtime built on what it
 * accepts takes a step over jobs of two users in two accounts. */
#include <string.h>

#include "loom/runtime.h"

static int accept_all(void *ctx, const loom_runtime_action_t *a)
{
    (void)ctx;
    (void)a;
    return LOOM_OK;
}

int LLVMFuzzerTestOneInput(const unsigned char *data, size_t size)
{
    char text[256];
    if (size >= sizeof text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    loom_sched_queue_cfg_t cfg;
    if (loom_sched_queue_cfg_parse(text, &cfg, NULL) != LOOM_OK)
        return 0;
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_runtime_t *rt = NULL;
    loom_runtime_config_t rc = {.queue = text};
    if (loom_sched_cluster_add_node(&c, "n", 4000, 4096, 1, "g", 0, NULL, NULL) == LOOM_OK &&
        loom_runtime_new(&c, &rc, &rt, NULL) == LOOM_OK) {
        for (uint64_t id = 1; id <= 4; id++) {
            loom_runtime_job_t j = {.id = id,
                                    .submit_s = (double)id,
                                    .user = (uint32_t)(id % 2),
                                    .account = (uint32_t)(id / 3),
                                    .req = {.cpu_milli = 1000, .num_gpus = 1, .gpu_milli = 1000}};
            loom_runtime_submit(rt, &j, NULL);
        }
        loom_runtime_step(rt, 10, accept_all, NULL);
        loom_runtime_remove(rt, 1, 20);
        loom_runtime_step(rt, 20, accept_all, NULL);
    }
    loom_runtime_free(rt);
    loom_sched_cluster_free(&c);
    return 0;
}
