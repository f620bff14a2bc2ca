/* The estimator tests' two steps: parse a hand-built ONNX graph (est_pb.h)
 * into a model, and run an estimate that must succeed. */
#ifndef LOOM_TEST_EST_BUILD_H
#define LOOM_TEST_EST_BUILD_H
#include "est_pb.h"
#include "loom/estimate.h"
#include "test_util.h"

static inline loom_est_model_t *build(pbw_t *g)
{
    pbw_t m = onnx_model(g);
    loom_est_model_t *model = NULL;
    loom_err_t err = {0};
    if (loom_est_model_parse(m.d, m.n, "t.onnx", &model, &err))
        fail_msg("parse: %s", err.msg);
    free(m.d);
    return model;
}

static inline void run_ok(loom_est_model_t *m, const loom_est_options_t *o, loom_est_result_t *r)
{
    loom_err_t err = {0};
    if (loom_est_run(m, o, r, &err))
        fail_msg("run: %s", err.msg);
}
#endif
