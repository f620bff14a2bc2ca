/* Rates and utilizations from two readings, and the sampler that keeps the
 * previous reading so that callers cannot mix the two up.
 *
 * Items are matched by name (cpu id, device, interface, zone id, GPU UUID),
 * not by position: devices come and go between readings. A rate that cannot
 * be computed honestly (new item, counter went backwards, source down in
 * either reading) is NAN, never 0.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"

void loom_mon_rates_init(loom_mon_rates_t *r)
{
    memset(r, 0, sizeof *r);
}

void loom_mon_rates_free(loom_mon_rates_t *r)
{
    if (!r)
        return;
    free(r->core_busy_fraction);
    free(r->disks);
    free(r->nets);
    free(r->power);
    free(r->gpus);
    memset(r, 0, sizeof *r);
}

static double counter_rate(uint64_t a, uint64_t b, double dt)
{
    return b >= a ? (double)(b - a) / dt : NAN;
}

/* Busy fraction over a core's (or all cores') mode deltas; out[] gets each
 * mode's fraction when non-NULL. */
static double cpu_busy(const double *a, const double *b, double *out)
{
    double d[LOOM_MON_CPU_NMODES], total = 0;
    for (int k = 0; k < LOOM_MON_CPU_NMODES; k++) {
        d[k] = b[k] - a[k];
        /* idle and iowait can step back a little: with NO_HZ the kernel
         * estimates them for sleeping cpus and corrects later (documented
         * in proc(5) for iowait). Such a step counts as 0, not as a reset.
         * Any other mode going back means the cpu restarted (hotplug). */
        if (d[k] < 0 && (k == LOOM_MON_CPU_IDLE || k == LOOM_MON_CPU_IOWAIT))
            d[k] = 0;
        if (d[k] < 0)
            return NAN;
        /* guest and guest_nice are already counted in user and nice */
        if (k != LOOM_MON_CPU_GUEST && k != LOOM_MON_CPU_GUEST_NICE)
            total += d[k];
    }
    if (out)
        for (int k = 0; k < LOOM_MON_CPU_NMODES; k++)
            out[k] = total > 0 ? d[k] / total : NAN;
    if (total <= 0)
        return NAN; /* interval shorter than one tick */
    return 1.0 - (d[LOOM_MON_CPU_IDLE] + d[LOOM_MON_CPU_IOWAIT]) / total;
}

int loom_mon_rates(const loom_mon_snapshot_t *prev, const loom_mon_snapshot_t *cur,
                   loom_mon_rates_t *r, loom_err_t *err)
{
    if (!prev || !cur || !r)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_rates: NULL argument");
    if (cur->mono_ns <= prev->mono_ns)
        return loom_err_set(err, LOOM_EINVAL,
                            "loom_mon_rates: cur (t=%lld ns) is not newer than prev (t=%lld ns); "
                            "pass the older snapshot first, and two different readings",
                            (long long)cur->mono_ns, (long long)prev->mono_ns);
    double dt = (double)(cur->mono_ns - prev->mono_ns) / 1e9;
    r->interval_seconds = dt;
    r->cur_mono_ns = cur->mono_ns;
    r->groups = prev->groups & cur->groups;
    r->n_cores = r->n_disks = r->n_nets = r->n_power = r->n_gpus = 0;
    r->cpu_busy_fraction = NAN;
    for (int k = 0; k < LOOM_MON_CPU_NMODES; k++)
        r->cpu_mode_fraction[k] = NAN;

    if ((r->groups & LOOM_MON_CPU) && prev->cpu.source.status == LOOM_OK &&
        cur->cpu.source.status == LOOM_OK) {
        r->cpu_busy_fraction = cpu_busy(prev->cpu.seconds, cur->cpu.seconds, r->cpu_mode_fraction);
        if (loom_mon__grow((void **)&r->core_busy_fraction, &r->cap_cores_, cur->cpu.n_cores,
                           sizeof *r->core_busy_fraction, err))
            return LOOM_ENOMEM;
        for (size_t i = 0; i < cur->cpu.n_cores; i++) {
            const loom_mon_cpu_core_t *c = &cur->cpu.cores[i];
            double v = NAN;
            for (size_t j = 0; j < prev->cpu.n_cores; j++)
                if (prev->cpu.cores[j].id == c->id)
                    v = cpu_busy(prev->cpu.cores[j].seconds, c->seconds, NULL);
            r->core_busy_fraction[r->n_cores++] = v;
        }
    }
    if ((r->groups & LOOM_MON_DISK) && cur->disk.source.status == LOOM_OK) {
        if (loom_mon__grow((void **)&r->disks, &r->cap_disks_, cur->disk.n, sizeof *r->disks, err))
            return LOOM_ENOMEM;
        for (size_t i = 0; i < cur->disk.n; i++) {
            const loom_mon_disk_t *b = &cur->disk.disks[i], *a = NULL;
            for (size_t j = 0; j < prev->disk.n && prev->disk.source.status == LOOM_OK; j++)
                if (strcmp(prev->disk.disks[j].name, b->name) == 0)
                    a = &prev->disk.disks[j];
            loom_mon_disk_rate_t *o = &r->disks[r->n_disks++];
            memcpy(o->name, b->name, sizeof o->name);
            if (!a) {
                o->read_bytes_per_second = o->write_bytes_per_second = o->reads_per_second =
                    o->writes_per_second = o->busy_fraction = NAN;
                continue;
            }
            o->read_bytes_per_second = counter_rate(a->read_bytes, b->read_bytes, dt);
            o->write_bytes_per_second = counter_rate(a->written_bytes, b->written_bytes, dt);
            o->reads_per_second = counter_rate(a->reads, b->reads, dt);
            o->writes_per_second = counter_rate(a->writes, b->writes, dt);
            double busy = (b->io_seconds - a->io_seconds) / dt;
            o->busy_fraction = busy < 0 ? NAN : busy > 1 ? 1 : busy;
        }
    }
    if ((r->groups & LOOM_MON_NET) && cur->net.source.status == LOOM_OK) {
        if (loom_mon__grow((void **)&r->nets, &r->cap_nets_, cur->net.n, sizeof *r->nets, err))
            return LOOM_ENOMEM;
        for (size_t i = 0; i < cur->net.n; i++) {
            const loom_mon_netif_t *b = &cur->net.ifs[i], *a = NULL;
            for (size_t j = 0; j < prev->net.n && prev->net.source.status == LOOM_OK; j++)
                if (strcmp(prev->net.ifs[j].name, b->name) == 0)
                    a = &prev->net.ifs[j];
            loom_mon_net_rate_t *o = &r->nets[r->n_nets++];
            memcpy(o->name, b->name, sizeof o->name);
            if (!a) {
                o->rx_bytes_per_second = o->tx_bytes_per_second = o->rx_packets_per_second =
                    o->tx_packets_per_second = NAN;
                continue;
            }
            o->rx_bytes_per_second = counter_rate(a->rx_bytes, b->rx_bytes, dt);
            o->tx_bytes_per_second = counter_rate(a->tx_bytes, b->tx_bytes, dt);
            o->rx_packets_per_second = counter_rate(a->rx_packets, b->rx_packets, dt);
            o->tx_packets_per_second = counter_rate(a->tx_packets, b->tx_packets, dt);
        }
    }
    if ((r->groups & LOOM_MON_POWER) && cur->power.source.status == LOOM_OK) {
        if (loom_mon__grow((void **)&r->power, &r->cap_power_, cur->power.n, sizeof *r->power, err))
            return LOOM_ENOMEM;
        for (size_t i = 0; i < cur->power.n; i++) {
            const loom_mon_rapl_zone_t *b = &cur->power.zones[i], *a = NULL;
            for (size_t j = 0; j < prev->power.n; j++)
                if (strcmp(prev->power.zones[j].id, b->id) == 0)
                    a = &prev->power.zones[j];
            loom_mon_power_rate_t *o = &r->power[r->n_power++];
            memcpy(o->id, b->id, sizeof o->id);
            memcpy(o->name, b->name, sizeof o->name);
            o->watts = NAN;
            if (!a || a->source.status != LOOM_OK || b->source.status != LOOM_OK)
                continue;
            double de = b->energy_joules - a->energy_joules;
            if (de < 0 && b->max_energy_joules > 0) /* the counter wrapped once */
                de += b->max_energy_joules;
            if (de >= 0)
                o->watts = de / dt;
        }
    }
    if ((r->groups & LOOM_MON_GPU) && cur->gpu.source.status == LOOM_OK) {
        if (loom_mon__grow((void **)&r->gpus, &r->cap_gpus_, cur->gpu.n, sizeof *r->gpus, err))
            return LOOM_ENOMEM;
        for (size_t i = 0; i < cur->gpu.n; i++) {
            const loom_mon_gpu_t *b = &cur->gpu.gpus[i], *a = NULL;
            for (size_t j = 0; j < prev->gpu.n; j++)
                if (strcmp(prev->gpu.gpus[j].uuid, b->uuid) == 0)
                    a = &prev->gpu.gpus[j];
            loom_mon_gpu_rate_t *o = &r->gpus[r->n_gpus++];
            o->index = b->index;
            memcpy(o->uuid, b->uuid, sizeof o->uuid);
            o->watts = NAN;
            if (a && a->field_status[LOOM_MON_GPU_F_ENERGY] == 0 &&
                b->field_status[LOOM_MON_GPU_F_ENERGY] == 0 && b->energy_joules >= a->energy_joules)
                o->watts = (b->energy_joules - a->energy_joules) / dt;
        }
    }
    return LOOM_OK;
}

/* ---------------------------------------------------------------- sampler */

struct loom_mon_sampler {
    loom_mon_t *m;
    unsigned groups;
    loom_mon_snapshot_t snaps[2];
    int cur; /* index of the latest in snaps */
    loom_mon_rates_t rates;
};

int loom_mon_sampler_open(loom_mon_sampler_t **out, loom_mon_t *m, unsigned groups, loom_err_t *err)
{
    *out = NULL;
    if (!m)
        return loom_err_set(err, LOOM_EINVAL, "loom_mon_sampler_open: NULL collector");
    loom_mon_sampler_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    s->m = m;
    s->groups = groups;
    int rc = loom_mon_read(m, groups, &s->snaps[0], err);
    if (rc) {
        loom_mon_sampler_close(s);
        return rc;
    }
    /* No rates yet: every value NAN, interval 0. */
    s->rates.groups = 0;
    s->rates.cpu_busy_fraction = NAN;
    for (int k = 0; k < LOOM_MON_CPU_NMODES; k++)
        s->rates.cpu_mode_fraction[k] = NAN;
    *out = s;
    return LOOM_OK;
}

int loom_mon_sampler_next(loom_mon_sampler_t *s, loom_err_t *err)
{
    int nxt = 1 - s->cur;
    int rc = loom_mon_read(s->m, s->groups, &s->snaps[nxt], err);
    if (rc)
        return rc;
    if (s->snaps[nxt].mono_ns <= s->snaps[s->cur].mono_ns) /* coarse clock: nudge */
        s->snaps[nxt].mono_ns = s->snaps[s->cur].mono_ns + 1;
    rc = loom_mon_rates(&s->snaps[s->cur], &s->snaps[nxt], &s->rates, err);
    s->cur = nxt;
    return rc;
}

const loom_mon_snapshot_t *loom_mon_sampler_snapshot(const loom_mon_sampler_t *s)
{
    return &s->snaps[s->cur];
}

const loom_mon_rates_t *loom_mon_sampler_rates(const loom_mon_sampler_t *s)
{
    return &s->rates;
}

void loom_mon_sampler_close(loom_mon_sampler_t *s)
{
    if (!s)
        return;
    loom_mon_snapshot_free(&s->snaps[0]);
    loom_mon_snapshot_free(&s->snaps[1]);
    loom_mon_rates_free(&s->rates);
    free(s);
}
