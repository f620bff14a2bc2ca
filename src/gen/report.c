/* The generator's summary as JSON (what `loom gen --json` prints): counts,
 * the asked, scheduled and achieved rates, lateness and ack percentiles,
 * what the backlog policy did, and per job the count chosen next to the
 * count expected from its weight, with a chi-square test of the two. */
#include <math.h>

#include "loom/gen.h"

static json_t *percentiles_us(const loom_gen_hist_t *h)
{
    json_t *o = json_object();
    json_object_set_new(o, "p50", json_real((double)loom_gen_hist_quantile(h, 0.50) / 1e3));
    json_object_set_new(o, "p90", json_real((double)loom_gen_hist_quantile(h, 0.90) / 1e3));
    json_object_set_new(o, "p99", json_real((double)loom_gen_hist_quantile(h, 0.99) / 1e3));
    json_object_set_new(o, "max", json_real((double)h->max / 1e3));
    json_object_set_new(o, "mean", json_real(h->n ? h->sum / (double)h->n / 1e3 : 0));
    return o;
}

json_t *loom_gen_report_json(const loom_gen_report_t *r, const loom_gen_source_t *src,
                             const loom_gen_config_t *cfg)
{
    json_t *o = json_object();
    if (!o)
        return NULL;
    json_object_set_new(o, "count", json_integer((json_int_t)r->scheduled));
    json_object_set_new(o, "sent", json_integer((json_int_t)r->sent));
    json_object_set_new(o, "ok", json_integer((json_int_t)r->ok));
    json_object_set_new(o, "failed", json_integer((json_int_t)r->failed));
    json_object_set_new(o, "dropped", json_integer((json_int_t)r->dropped));
    if (cfg) {
        json_object_set_new(o, "process",
                            json_string(loom_gen_process_name(cfg->arrivals.process)));
        json_object_set_new(o, "seed", json_integer((json_int_t)cfg->seed));
        json_object_set_new(o, "run_nonce", json_integer((json_int_t)cfg->run_nonce));
    }
    json_object_set_new(o, "realtime", json_boolean(r->realtime));
    if (r->wake.n > 0 || r->spin_ns > 0) {
        json_object_set_new(o, "spin_us", json_real((double)r->spin_ns / 1e3));
        json_object_set_new(o, "spin_max_us", json_real((double)r->spin_max_ns / 1e3));
        json_object_set_new(o, "wake_overshoot_us", percentiles_us(&r->wake));
    }
    json_object_set_new(o, "stopped", json_boolean(r->stopped));
    json_object_set_new(o, "rate_target", json_real(r->rate_target));
    json_object_set_new(o, "rate_schedule", json_real(r->rate_schedule));
    json_object_set_new(o, "rate_achieved", json_real(r->rate_achieved));
    json_object_set_new(o, "rate_error_pct", json_real(r->rate_error_pct));
    json_object_set_new(
        o, "rate_pacing_error_pct",
        json_real(r->rate_schedule > 0 && r->rate_achieved > 0
                      ? (r->rate_achieved - r->rate_schedule) / r->rate_schedule * 100
                      : 0));
    json_object_set_new(o, "elapsed_s", json_real((double)r->elapsed_ns / 1e9));
    json_object_set_new(o, "pacer_cpu_s", json_real((double)r->pacer_cpu_ns / 1e9));
    json_object_set_new(o, "pacer_faults", json_integer((json_int_t)r->pacer_faults));
    json_object_set_new(o, "pacer_preempted", json_integer((json_int_t)r->pacer_preempted));
    json_object_set_new(o, "pacer_cpu",
                        r->pacer_cpu >= 0 ? json_integer(r->pacer_cpu) : json_null());
    json_t *late = json_object();
    json_object_set_new(late, "threshold_us", json_real((double)LOOM_GEN_LATE_NS / 1e3));
    for (int c = 1; c < LOOM_GEN_LATE_NCAUSES; c++) {
        json_t *one = json_object();
        json_object_set_new(one, "jobs", json_integer((json_int_t)r->late[c]));
        json_object_set_new(one, "max_us", json_real((double)r->late_max_ns[c] / 1e3));
        json_object_set_new(late, loom_gen_late_cause_name((loom_gen_late_cause_t)c), one);
    }
    json_object_set_new(o, "late", late);
    json_object_set_new(o, "lateness_us", percentiles_us(&r->lateness));
    json_object_set_new(o, "ack_us", percentiles_us(&r->ack));

    json_t *b = json_object();
    if (cfg) {
        json_object_set_new(b, "policy", json_string(loom_gen_backlog_name(cfg->on_backlog)));
        json_object_set_new(b, "window", json_integer(cfg->window ? cfg->window : 1024));
    }
    json_object_set_new(b, "waits", json_integer((json_int_t)r->backlog_waits));
    json_object_set_new(b, "wait_max_us", json_real((double)r->backlog_wait_max_ns / 1e3));
    json_object_set_new(b, "dropped", json_integer((json_int_t)r->dropped));
    json_object_set_new(b, "failed", json_boolean(r->backlog_failed));
    json_object_set_new(o, "backlog", b);

    json_t *jobs = json_object();
    double wsum = 0;
    uint64_t total = 0;
    for (size_t i = 0; i < r->n_choices; i++) {
        wsum += src->weights[i];
        total += r->per_choice[i];
    }
    for (size_t i = 0; i < r->n_choices; i++) {
        json_t *j = json_object();
        json_object_set_new(j, "chosen", json_integer((json_int_t)r->per_choice[i]));
        json_object_set_new(j, "ok", json_integer((json_int_t)r->per_choice_ok[i]));
        json_object_set_new(j, "weight", json_real(src->weights[i]));
        json_object_set_new(j, "expected",
                            json_real(wsum > 0 ? (double)total * src->weights[i] / wsum : 0));
        char fallback[32];
        const char *name = src->names ? src->names[i] : NULL;
        if (!name) {
            snprintf(fallback, sizeof fallback, "#%zu", i);
            name = fallback;
        }
        json_object_set_new(jobs, name, j);
    }
    json_object_set_new(o, "jobs", jobs);
    json_t *c = json_object();
    json_object_set_new(c, "statistic", json_real(r->chi2));
    json_object_set_new(c, "dof", json_real(r->chi2_dof));
    json_object_set_new(c, "p_value", json_real(r->chi2_p));
    json_object_set_new(o, "chi_square", c);
    if (r->first_error[0])
        json_object_set_new(o, "first_error", json_string(r->first_error));
    return o;
}
