/* gen/options.c — the rules that tie a generator run's settings together
 * (which arrival process needs which input, what stops a run, one sink).
 * `loom gen` checks its options with them; a library user building a
 * loom_gen_config_t checks the same rules. */
#include "loom/gen.h"

const char *loom_gen_check_options(const loom_gen_config_t *cfg, const loom_gen_given_t *given)
{
    bool is_trace = cfg->arrivals.process == LOOM_GEN_TRACE;
    if (!given->catalog)
        return "--catalog FILE is required";
    if (!given->rate && !(is_trace && (given->time_scale || given->trace)))
        return "--rate R is required (10/s, 600/min, 2.5/h)";
    if (is_trace && !given->trace)
        return "--process trace needs --trace FILE";
    if (!is_trace && given->trace)
        return "--trace needs --process trace";
    if (cfg->arrivals.process == LOOM_GEN_GAMMA && cfg->arrivals.cv <= 0)
        return "--process gamma needs --cv X";
    if (!is_trace && !cfg->count && !cfg->duration_ns)
        return "give --count N or --duration D";
    if (given->sinks > 1)
        return "give one sink: --dry-run, --stdout, --out DIR, --submit URL or --slurm";
    return NULL;
}
