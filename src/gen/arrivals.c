/* Arrival processes: when each generated job is due.
 *
 * Every process yields absolute due times measured from the start of the
 * run, so the pacer never adds up sleeps. Constant and trace times are a
 * function of the index alone; poisson and gamma times are the running sum
 * of random gaps, which is what those processes are. The gaps come from
 * their own RNG stream, so the job choices and parameters (other streams)
 * cannot shift them.
 */
#include <math.h>
#include <string.h>

#include "loom/gen.h"

static const char *const process_names[] = {"constant", "poisson", "gamma", "trace"};

int loom_gen_process_parse(const char *name, loom_gen_process_t *out, loom_err_t *err)
{
    for (size_t i = 0; i < sizeof process_names / sizeof process_names[0]; i++) {
        if (name && strcmp(name, process_names[i]) == 0) {
            *out = (loom_gen_process_t)i;
            return LOOM_OK;
        }
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "process '%s': expected constant, poisson, gamma or trace",
                        name ? name : "");
}

const char *loom_gen_process_name(loom_gen_process_t p)
{
    return (unsigned)p < 4 ? process_names[p] : "?";
}

double loom_gen_arrivals_rate(const loom_gen_arrivals_config_t *cfg)
{
    if (cfg->process != LOOM_GEN_TRACE)
        return cfg->rate;
    const loom_gen_trace_t *t = cfg->trace;
    if (!t || t->n < 2 || cfg->time_scale <= 0)
        return 0;
    double span = (t->times[t->n - 1] - t->times[0]) * cfg->time_scale;
    return span > 0 ? (double)(t->n - 1) / span : 0;
}

int loom_gen_arrivals_init(loom_gen_arrivals_t *a, const loom_gen_arrivals_config_t *cfg,
                           uint64_t seed, loom_err_t *err)
{
    memset(a, 0, sizeof *a);
    if ((unsigned)cfg->process > LOOM_GEN_TRACE)
        return loom_err_set(err, LOOM_EINVAL, "process: unknown kind %d", (int)cfg->process);
    if (cfg->process == LOOM_GEN_TRACE) {
        if (!cfg->trace || cfg->trace->n == 0)
            return loom_err_set(err, LOOM_EINVAL, "trace process: no trace times given");
        if (!(cfg->time_scale > 0) || !isfinite(cfg->time_scale))
            return loom_err_set(err, LOOM_EINVAL, "time scale %g: expected a number > 0",
                                cfg->time_scale);
    } else {
        /* 1e7/s (a gap of 100 ns) is far above anything a sink can take. */
        if (!(cfg->rate > 0) || !(cfg->rate <= 1e7))
            return loom_err_set(err, LOOM_EINVAL, "rate %g/s: expected > 0 and at most 1e7/s",
                                cfg->rate);
    }
    if (cfg->process == LOOM_GEN_GAMMA && (!(cfg->cv > 0) || !(cfg->cv <= 100)))
        return loom_err_set(err, LOOM_EINVAL,
                            "cv %g: the gamma process needs a coefficient of variation in (0, 100]",
                            cfg->cv);
    a->cfg = *cfg;
    loom_rng_init(&a->rng, seed, LOOM_GEN_STREAM_ARRIVALS);
    return LOOM_OK;
}

bool loom_gen_arrivals_next(loom_gen_arrivals_t *a, int64_t *due_ns)
{
    const loom_gen_arrivals_config_t *c = &a->cfg;
    uint64_t i = a->index;
    double t;
    switch (c->process) {
    case LOOM_GEN_CONSTANT: t = (double)i * 1e9 / c->rate; break;
    case LOOM_GEN_TRACE:
        if (i >= c->trace->n)
            return false;
        t = (c->trace->times[i] - c->trace->times[0]) * c->time_scale * 1e9;
        break;
    case LOOM_GEN_POISSON:
        t = a->t_ns;
        a->t_ns += loom_rng_exponential(&a->rng, c->rate) * 1e9;
        break;
    case LOOM_GEN_GAMMA: {
        /* Mean shape * scale = 1/rate; CV = 1/sqrt(shape). */
        double shape = 1.0 / (c->cv * c->cv);
        t = a->t_ns;
        a->t_ns += loom_rng_gamma(&a->rng, shape, 1.0 / (shape * c->rate)) * 1e9;
        break;
    }
    default: return false;
    }
    if (!(t < 9.2e18))
        return false; /* beyond int64 ns (292 years): the schedule ends */
    *due_ns = llround(t);
    a->index++;
    return true;
}
