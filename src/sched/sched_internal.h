/* Private to sched: the grouped form of a target workload that makes FGD's
 * fragmentation cheap to evaluate. Shapes that differ only in their CPU
 * demand are one group; within a group the CPU demands are sorted with
 * prefix sums of weight, so "which shapes still fit the free CPU" is a
 * binary search. */
#ifndef LOOM_SCHED_INTERNAL_H
#define LOOM_SCHED_INTERNAL_H

#include "loom/sched.h"

typedef struct loom_frag_group {
    int num_gpus;
    int32_t gpu_milli;
    uint64_t types;
    size_t n;
    int64_t *cpu; /* ascending */
    double *cum;  /* cum[i] = weight of shapes 0..i-1 (n+1 entries) */
} loom_frag_group_t;

typedef struct loom_frag_model {
    double w_nogpu; /* weight of shapes that need no GPU */
    loom_frag_group_t *groups;
    size_t ngroups;
} loom_frag_model_t;

int loom_frag_model_build(loom_frag_model_t *m, const loom_sched_workload_t *w, loom_err_t *err);
void loom_frag_model_free(loom_frag_model_t *m);
double loom_frag_model_eval(const loom_frag_model_t *m, int64_t cpu_free, int gpu_type, int ngpus,
                            const int32_t *gpu_free);

#endif
