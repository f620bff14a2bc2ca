/* The readable table of `loom mon`: one line per group or item, sizes in
 * binary units, rates when two readings exist, and the reason for every
 * source that is unavailable. */
#include <math.h>
#include <string.h>

#include "mon/mon_int.h"
#include "mon/nvml_api.h"

static const char *sz(uint64_t v, char *out)
{
    return loom_format_size(v, out, 32);
}

static void rate_sz(loom_buf_t *b, const char *label, double v)
{
    char t[32];
    if (isfinite(v))
        loom_buf_appendf(b, " %s %s/s", label, sz((uint64_t)(v + 0.5), t));
}

static void unavail(loom_buf_t *b, const char *group, const loom_mon_source_t *s)
{
    loom_buf_appendf(b, "%-8s unavailable: %s\n", group, s->reason);
}

static void psi_text(loom_buf_t *b, const loom_mon_psi_t *p)
{
    if (p->source.status == LOOM_OK)
        loom_buf_appendf(b, "  psi some %.2f%%", p->some.avg10);
}

int loom_mon_to_text(const loom_mon_snapshot_t *s, const loom_mon_rates_t *r, loom_buf_t *b,
                     loom_err_t *err)
{
    char t1[32], t2[32], t3[32], t4[32];
    char ts[32];
    if (r && r->groups && r->cur_mono_ns != s->mono_ns)
        return loom_err_set(err, LOOM_EINVAL,
                            "loom_mon_to_text: the rates were computed for "
                            "another snapshot");
    loom_time_format_rfc3339(s->real_ns, ts);
    loom_buf_appendf(b, "%s", ts);
    if (r && r->groups)
        loom_buf_appendf(b, "  (rates over %.3f s)", r->interval_seconds);
    loom_buf_append_char(b, '\n');
    if (s->groups & LOOM_MON_CPU) {
        const loom_mon_cpu_t *c = &s->cpu;
        if (c->source.status != LOOM_OK) {
            unavail(b, "cpu", &c->source);
        } else {
            loom_buf_appendf(b, "%-8s %zu cores", "cpu", c->n_cores);
            if (r && (r->groups & LOOM_MON_CPU) && isfinite(r->cpu_busy_fraction))
                loom_buf_appendf(b, "  busy %.1f%%", 100 * r->cpu_busy_fraction);
            double user = c->seconds[LOOM_MON_CPU_USER], sys = c->seconds[LOOM_MON_CPU_SYSTEM];
            loom_buf_appendf(b, "  user %.0fs system %.0fs idle %.0fs", user, sys,
                             c->seconds[LOOM_MON_CPU_IDLE]);
            if (c->load_source.status == LOOM_OK)
                loom_buf_appendf(b, "  load %.2f %.2f %.2f", c->load1, c->load5, c->load15);
            psi_text(b, &c->pressure);
            loom_buf_append_char(b, '\n');
            if (c->freq_source.status != LOOM_OK)
                unavail(b, "  freq", &c->freq_source);
            else
                for (size_t i = 0; i < c->n_cores; i++)
                    loom_buf_appendf(b, "  cpu%-4d %.0f MHz\n", c->cores[i].id,
                                     c->cores[i].freq_hz / 1e6);
        }
    }
    if (s->groups & LOOM_MON_MEMORY) {
        const loom_mon_memory_t *m = &s->memory;
        if (m->source.status != LOOM_OK) {
            unavail(b, "memory", &m->source);
        } else {
            loom_buf_appendf(b, "%-8s total %s  available %s  used %s  cached %s", "memory",
                             sz(m->total_bytes, t1), sz(m->available_bytes, t2),
                             sz(m->used_bytes, t3), sz(m->cached_bytes, t4));
            loom_buf_appendf(b, "  swap %s/%s", sz(m->swap_used_bytes, t1),
                             sz(m->swap_total_bytes, t2));
            psi_text(b, &m->pressure);
            loom_buf_append_char(b, '\n');
        }
    }
    if (s->groups & LOOM_MON_DISK) {
        const loom_mon_disks_t *d = &s->disk;
        if (d->source.status != LOOM_OK)
            unavail(b, "disk", &d->source);
        for (size_t i = 0; d->source.status == LOOM_OK && i < d->n; i++) {
            const loom_mon_disk_t *x = &d->disks[i];
            if (x->reads == 0 && x->writes == 0)
                continue; /* never used (loop devices, ...) */
            loom_buf_appendf(b, "%-8s %-10s read %s  written %s  busy %.1fs", "disk", x->name,
                             sz(x->read_bytes, t1), sz(x->written_bytes, t2), x->io_seconds);
            if (r && (r->groups & LOOM_MON_DISK))
                for (size_t k = 0; k < r->n_disks; k++)
                    if (strcmp(r->disks[k].name, x->name) == 0) {
                        rate_sz(b, " r", r->disks[k].read_bytes_per_second);
                        rate_sz(b, "w", r->disks[k].write_bytes_per_second);
                        if (isfinite(r->disks[k].busy_fraction))
                            loom_buf_appendf(b, " util %.1f%%", 100 * r->disks[k].busy_fraction);
                    }
            loom_buf_append_char(b, '\n');
        }
    }
    if (s->groups & LOOM_MON_NET) {
        const loom_mon_net_t *n = &s->net;
        if (n->source.status != LOOM_OK)
            unavail(b, "net", &n->source);
        for (size_t i = 0; n->source.status == LOOM_OK && i < n->n; i++) {
            const loom_mon_netif_t *x = &n->ifs[i];
            loom_buf_appendf(b, "%-8s %-10s rx %s  tx %s  errs %llu/%llu drop %llu/%llu", "net",
                             x->name, sz(x->rx_bytes, t1), sz(x->tx_bytes, t2),
                             (unsigned long long)x->rx_errors, (unsigned long long)x->tx_errors,
                             (unsigned long long)x->rx_dropped, (unsigned long long)x->tx_dropped);
            if (r && (r->groups & LOOM_MON_NET))
                for (size_t k = 0; k < r->n_nets; k++)
                    if (strcmp(r->nets[k].name, x->name) == 0) {
                        rate_sz(b, " rx", r->nets[k].rx_bytes_per_second);
                        rate_sz(b, "tx", r->nets[k].tx_bytes_per_second);
                    }
            loom_buf_append_char(b, '\n');
        }
    }
    if (s->groups & LOOM_MON_FS) {
        const loom_mon_fss_t *f = &s->fs;
        if (f->source.status != LOOM_OK)
            unavail(b, "fs", &f->source);
        for (size_t i = 0; f->source.status == LOOM_OK && i < f->n; i++) {
            const loom_mon_fs_t *x = &f->fs[i];
            if (x->source.status != LOOM_OK) {
                loom_buf_appendf(b, "%-8s %-10s unavailable: %s\n", "fs", x->mountpoint,
                                 x->source.reason);
                continue;
            }
            loom_buf_appendf(b, "%-8s %-10s %s %s  size %s  avail %s%s\n", "fs", x->mountpoint,
                             x->fstype, x->device, sz(x->size_bytes, t1), sz(x->avail_bytes, t2),
                             x->readonly ? "  ro" : "");
        }
    }
    if (s->groups & LOOM_MON_POWER) {
        const loom_mon_power_t *p = &s->power;
        if (p->source.status != LOOM_OK)
            unavail(b, "power", &p->source);
        for (size_t i = 0; p->source.status == LOOM_OK && i < p->n; i++) {
            const loom_mon_rapl_zone_t *z = &p->zones[i];
            if (z->source.status != LOOM_OK) {
                loom_buf_appendf(b, "%-8s %s (%s) unavailable: %s\n", "power", z->id, z->name,
                                 z->source.reason);
                continue;
            }
            loom_buf_appendf(b, "%-8s %s (%s) %.3f J", "power", z->id, z->name, z->energy_joules);
            if (r && (r->groups & LOOM_MON_POWER) && i < r->n_power && isfinite(r->power[i].watts))
                loom_buf_appendf(b, "  %.2f W", r->power[i].watts);
            loom_buf_append_char(b, '\n');
        }
    }
    if (s->groups & LOOM_MON_THERMAL) {
        const loom_mon_thermal_t *th = &s->thermal;
        if (th->hwmon_source.status != LOOM_OK)
            unavail(b, "thermal", &th->hwmon_source);
        if (th->zone_source.status != LOOM_OK)
            unavail(b, "thermal", &th->zone_source);
        for (size_t i = 0; i < th->n; i++) {
            const loom_mon_temp_t *x = &th->temps[i];
            if (x->source.status == LOOM_OK)
                loom_buf_appendf(b, "%-8s %s/%s %.1f C\n", "thermal", x->chip, x->sensor,
                                 x->celsius);
            else
                loom_buf_appendf(b, "%-8s %s/%s unavailable: %s\n", "thermal", x->chip, x->sensor,
                                 x->source.reason);
        }
    }
    if (s->groups & LOOM_MON_GPU) {
        const loom_mon_gpus_t *g = &s->gpu;
        if (g->source.status != LOOM_OK)
            unavail(b, "gpu", &g->source);
        for (size_t i = 0; g->source.status == LOOM_OK && i < g->n; i++) {
            const loom_mon_gpu_t *d = &g->gpus[i];
            if (d->status != NVML_SUCCESS) {
                loom_buf_appendf(b, "%-8s %u %s unavailable: %s\n", "gpu", d->index, d->uuid,
                                 loom_mon_nvml_error_name(d->status));
                continue;
            }
            loom_buf_appendf(b, "%-8s %u %s", "gpu", d->index, d->name);
            const int *fs = d->field_status;
            if (fs[LOOM_MON_GPU_F_UTIL] == 0)
                loom_buf_appendf(b, "  util %u%% mem %u%%", d->util_gpu_pct, d->util_memory_pct);
            if (fs[LOOM_MON_GPU_F_MEMORY] == 0)
                loom_buf_appendf(b, "  memory %s/%s", sz(d->memory_used_bytes, t1),
                                 sz(d->memory_total_bytes, t2));
            if (fs[LOOM_MON_GPU_F_POWER] == 0)
                loom_buf_appendf(b, "  %.1f W", d->power_watts);
            if (fs[LOOM_MON_GPU_F_TEMP] == 0)
                loom_buf_appendf(b, "  %.0f C", d->temperature_celsius);
            if (fs[LOOM_MON_GPU_F_SM_CLOCK] == 0)
                loom_buf_appendf(b, "  sm %.0f MHz", d->sm_clock_hz / 1e6);
            loom_buf_appendf(b, "  procs %zu", d->n_procs);
            loom_buf_append_char(b, '\n');
        }
    }
    return b->data ? LOOM_OK : loom_err_set(err, LOOM_ENOMEM, "out of memory");
}

static void psi_line(loom_buf_t *b, const char *what, const loom_mon_psi_t *p)
{
    if (p->source.status == LOOM_OK)
        loom_buf_appendf(b, "%-10s some avg10 %.2f%% total %.3fs\n", what, p->some.avg10,
                         p->some.total_seconds);
    else
        loom_buf_appendf(b, "%-10s unavailable: %s\n", what, p->source.reason);
}

int loom_mon_proc_to_text(const loom_mon_proc_t *p, loom_buf_t *b, loom_err_t *err)
{
    char t1[32], t2[32];
    loom_buf_appendf(b, "pid %d (%s)%s  processes %u  threads %llu\n", (int)p->pid, p->comm,
                     p->tree ? " and descendants" : "", p->n_processes,
                     (unsigned long long)p->threads);
    loom_buf_appendf(b, "cpu        user %.2fs  system %.2fs\n", p->user_seconds,
                     p->system_seconds);
    loom_buf_appendf(b, "memory     rss %s  vm %s\n", sz(p->rss_bytes, t1), sz(p->vm_bytes, t2));
    loom_buf_appendf(b, "ctxsw      voluntary %llu  involuntary %llu\n",
                     (unsigned long long)p->voluntary_ctxt_switches,
                     (unsigned long long)p->nonvoluntary_ctxt_switches);
    if (p->io_source.status == LOOM_OK)
        loom_buf_appendf(b, "io         read %s  written %s\n", sz(p->read_bytes, t1),
                         sz(p->write_bytes, t2));
    else
        loom_buf_appendf(b, "io         unavailable: %s\n", p->io_source.reason);
    return b->data ? LOOM_OK : loom_err_set(err, LOOM_ENOMEM, "out of memory");
}

int loom_mon_cgroup_to_text(const loom_mon_cgroup_t *c, loom_buf_t *b, loom_err_t *err)
{
    char t1[32], t2[32];
    loom_buf_appendf(b, "cgroup %s\n", c->path);
    if (c->cpu_source.status == LOOM_OK)
        loom_buf_appendf(b, "cpu        usage %.3fs  user %.3fs  system %.3fs  throttled %.3fs\n",
                         c->cpu_usage_seconds, c->cpu_user_seconds, c->cpu_system_seconds,
                         c->throttled_seconds);
    else
        loom_buf_appendf(b, "cpu        unavailable: %s\n", c->cpu_source.reason);
    if (c->memory_source.status == LOOM_OK)
        loom_buf_appendf(b, "memory     current %s", sz(c->memory_current_bytes, t1));
    else
        loom_buf_appendf(b, "memory     current unavailable: %s", c->memory_source.reason);
    if (c->memory_peak_source.status == LOOM_OK)
        loom_buf_appendf(b, "  peak %s\n", sz(c->memory_peak_bytes, t1));
    else
        loom_buf_appendf(b, "  peak unavailable: %s\n", c->memory_peak_source.reason);
    if (c->memory_max_source.status == LOOM_OK)
        loom_buf_appendf(b, "limit      %s\n",
                         c->memory_limited ? sz(c->memory_max_bytes, t1) : "none");
    if (c->memory_events_source.status == LOOM_OK)
        loom_buf_appendf(b, "oom        events %llu  kills %llu\n",
                         (unsigned long long)c->memory_oom_events,
                         (unsigned long long)c->memory_oom_kills);
    if (c->pids_source.status == LOOM_OK)
        loom_buf_appendf(b, "pids       %llu\n", (unsigned long long)c->pids_current);
    if (c->io_source.status == LOOM_OK)
        loom_buf_appendf(b, "io         read %s  written %s\n", sz(c->io_read_bytes, t1),
                         sz(c->io_write_bytes, t2));
    else
        loom_buf_appendf(b, "io         unavailable: %s\n", c->io_source.reason);
    psi_line(b, "cpu psi", &c->cpu_pressure);
    psi_line(b, "mem psi", &c->memory_pressure);
    psi_line(b, "io psi", &c->io_pressure);
    return b->data ? LOOM_OK : loom_err_set(err, LOOM_ENOMEM, "out of memory");
}
