/* Fuzz loomd's quota parser (src/daemon/quota.c, `--quota WHO=LIMITS`):
 * any text either parses into a quota with at least one limit, each in its
 * range (running GPUs in milli-GPU 0 .. 10^9), which a runtime then takes
 * (loomd_quota_apply), or fails with a message naming --quota and the text
 * and appends nothing. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/quota.h"
#include "loom/runtime.h"

static loom_runtime_t *rt;

static loom_runtime_t *runtime(void)
{
    loom_sched_cluster_t c;
    loom_sched_cluster_init(&c);
    loom_runtime_config_t cfg = {0};
    loom_runtime_t *r = NULL;
    if (loom_sched_cluster_add_node(&c, "n", 1000, 1024, 1, "g", 0, NULL, NULL) != LOOM_OK ||
        loom_runtime_new(&c, &cfg, &r, NULL) != LOOM_OK)
        abort();
    loom_sched_cluster_free(&c);
    return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 400)
        return 0;
    char text[401];
    memcpy(text, data, size);
    text[size] = '\0';
    if (!rt)
        rt = runtime();
    static loomd_quotas_t qs;
    memset(&qs, 0, sizeof qs);
    loom_err_t err = {0};
    if (loomd_quota_parse(text, &qs, &err) != LOOM_OK) {
        if (qs.n != 0 || !strstr(err.msg, "--quota"))
            abort();
        return 0;
    }
    const loomd_quota_t *q = &qs.q[0];
    if (qs.n != 1 || (q->kind != 'u' && q->kind != 'a' && q->kind != '*'))
        abort();
    if (q->pending < 0 && q->time_s < 0 && q->gpu_milli < 0 && q->running < 0)
        abort();
    if (q->gpu_milli < -1 || q->gpu_milli > 1000000000 || q->running < -1 ||
        q->running > 1000000000)
        abort();
    loomd_accounts_t *acc;
    if (loomd_accounts_new(&acc, &err) != LOOM_OK)
        return 0;
    if (loomd_quota_apply(&qs, acc, rt, &err) != LOOM_OK)
        abort();
    loomd_accounts_free(acc);
    return 0;
}
