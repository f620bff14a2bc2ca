/* Rendering snapshots: grouped JSON (CLI --json, monitor.snapshot RPC,
 * Python) and Prometheus text exposition (GET /metrics).
 *
 * Both follow one rule: an unavailable source is written as such with its
 * reason ({"available": false, "reason": ...} in JSON; a
 * loom_mon_source_up{source,reason} 0 series in Prometheus) and its
 * numbers are left out, never written as zeros. Names carry base units
 * (bytes, seconds, joules, hertz, celsius, ratio).
 */
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#include "mon/mon_int.h"
#include "mon/nvml_api.h"

/* ------------------------------------------------------------- groups */

static const char *const group_names[] = {"cpu", "memory", "disk",    "net",
                                          "fs",  "power",  "thermal", "gpu"};

const char *loom_mon_group_name(unsigned g)
{
    for (unsigned i = 0; i < 8; i++)
        if (g == (1u << i))
            return group_names[i];
    return NULL;
}

int loom_mon_parse_groups(const char *csv, unsigned *groups, loom_err_t *err)
{
    unsigned g = 0;
    const char *p = csv ? csv : "";
    while (*p) {
        const char *e = strchr(p, ',');
        size_t n = e ? (size_t)(e - p) : strlen(p);
        bool ok = false;
        if (n == 3 && memcmp(p, "all", 3) == 0)
            g |= LOOM_MON_ALL, ok = true;
        else if (n == 4 && memcmp(p, "host", 4) == 0)
            g |= LOOM_MON_HOST, ok = true;
        for (unsigned i = 0; i < 8 && !ok; i++)
            if (strlen(group_names[i]) == n && memcmp(p, group_names[i], n) == 0)
                g |= 1u << i, ok = true;
        if (!ok)
            return loom_err_set(err, LOOM_EINVAL,
                                "groups \"%s\": unknown group \"%.*s\" (expected cpu, memory, "
                                "disk, net, fs, power, thermal, gpu, host or all)",
                                csv, (int)n, p);
        p += n;
        if (*p == ',')
            p++;
    }
    if (!g)
        return loom_err_set(err, LOOM_EINVAL, "groups \"%s\": expected at least one group",
                            csv ? csv : "");
    *groups = g;
    return LOOM_OK;
}

static const char *const mode_names[LOOM_MON_CPU_NMODES] = {
    "user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal", "guest", "guest_nice"};

const char *loom_mon_cpu_mode_name(int mode)
{
    return mode >= 0 && mode < LOOM_MON_CPU_NMODES ? mode_names[mode] : NULL;
}

/* --------------------------------------------------------------- JSON */

static json_t *jnum(double v)
{
    return isfinite(v) ? json_real(v) : json_null();
}
static json_t *jint(uint64_t v)
{
    return json_integer((json_int_t)v);
}

static void put(json_t *o, const char *k, json_t *v)
{
    json_object_set_new(o, k, v);
}

/* A number field of a struct, written as key: the tables below list each
 * group's fields once, in the order they appear in the JSON. */
typedef struct jfield {
    const char *key;
    size_t off;
    bool dbl; /* double; else uint64_t */
} jfield_t;
#define JU(type, member, key)                                                                      \
    {                                                                                              \
        key, offsetof(type, member), false                                                         \
    }
#define JD(type, member, key)                                                                      \
    {                                                                                              \
        key, offsetof(type, member), true                                                          \
    }
#define PUT_FIELDS(o, base, table) put_fields(o, base, table, sizeof table / sizeof table[0])

static void put_fields(json_t *o, const void *base, const jfield_t *f, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        const char *at = (const char *)base + f[i].off;
        // cppcheck-suppress invalidPointerCast ; base + off is a double member's address
        put(o, f[i].key, f[i].dbl ? jnum(*(const double *)at) : jint(*(const uint64_t *)at));
    }
}

/* {"available": true} or {"available": false, "reason": "..."}; returns
 * whether available. */
static bool put_src(json_t *o, const loom_mon_source_t *s)
{
    put(o, "available", json_boolean(s->status == LOOM_OK));
    if (s->status != LOOM_OK)
        put(o, "reason", json_string(s->reason));
    return s->status == LOOM_OK;
}

static json_t *psi_json(const loom_mon_psi_t *p)
{
    json_t *o = json_object();
    if (!put_src(o, &p->source))
        return o;
    const loom_mon_psi_line_t *l[2] = {&p->some, p->has_full ? &p->full : NULL};
    const char *names[2] = {"some", "full"};
    for (int i = 0; i < 2; i++) {
        if (!l[i])
            continue;
        static const jfield_t f[] = {
            JD(loom_mon_psi_line_t, avg10, "avg10_percent"),
            JD(loom_mon_psi_line_t, avg60, "avg60_percent"),
            JD(loom_mon_psi_line_t, avg300, "avg300_percent"),
            JD(loom_mon_psi_line_t, total_seconds, "total_seconds"),
        };
        json_t *x = json_object();
        PUT_FIELDS(x, l[i], f);
        put(o, names[i], x);
    }
    return o;
}

static json_t *modes_json(const double *s)
{
    json_t *o = json_object();
    for (int k = 0; k < LOOM_MON_CPU_NMODES; k++)
        put(o, mode_names[k], jnum(s[k]));
    return o;
}

static json_t *cpu_json(const loom_mon_cpu_t *c, const loom_mon_rates_t *r)
{
    json_t *o = json_object();
    if (!put_src(o, &c->source))
        return o;
    bool rates = r && (r->groups & LOOM_MON_CPU);
    put(o, "seconds", modes_json(c->seconds));
    if (rates) {
        put(o, "busy_fraction", jnum(r->cpu_busy_fraction));
        put(o, "mode_fraction", modes_json(r->cpu_mode_fraction));
    }
    json_t *cores = json_array();
    for (size_t i = 0; i < c->n_cores; i++) {
        json_t *x = json_object();
        put(x, "id", json_integer(c->cores[i].id));
        put(x, "seconds", modes_json(c->cores[i].seconds));
        if (c->freq_source.status == LOOM_OK)
            put(x, "frequency_hertz", jnum(c->cores[i].freq_hz));
        if (rates && i < r->n_cores)
            put(x, "busy_fraction", jnum(r->core_busy_fraction[i]));
        json_array_append_new(cores, x);
    }
    put(o, "cores", cores);
    json_t *f = json_object();
    put_src(f, &c->freq_source);
    put(o, "frequency", f);
    static const jfield_t totals[] = {
        JU(loom_mon_cpu_t, context_switches, "context_switches_total"),
        JU(loom_mon_cpu_t, interrupts, "interrupts_total"),
        JU(loom_mon_cpu_t, forks, "forks_total"),
        JU(loom_mon_cpu_t, procs_running, "procs_running"),
        JU(loom_mon_cpu_t, procs_blocked, "procs_blocked"),
    };
    static const jfield_t load[] = {
        JD(loom_mon_cpu_t, load1, "load1"),
        JD(loom_mon_cpu_t, load5, "load5"),
        JD(loom_mon_cpu_t, load15, "load15"),
        JU(loom_mon_cpu_t, tasks_runnable, "tasks_runnable"),
        JU(loom_mon_cpu_t, tasks_total, "tasks_total"),
    };
    PUT_FIELDS(o, c, totals);
    put(o, "boot_time_unix_seconds", json_integer(c->boot_time_unix_s));
    json_t *l = json_object();
    if (put_src(l, &c->load_source))
        PUT_FIELDS(l, c, load);
    put(o, "load", l);
    put(o, "pressure", psi_json(&c->pressure));
    return o;
}

static json_t *memory_json(const loom_mon_memory_t *m)
{
    json_t *o = json_object();
    static const jfield_t f[] = {
        JU(loom_mon_memory_t, total_bytes, "total_bytes"),
        JU(loom_mon_memory_t, available_bytes, "available_bytes"),
        JU(loom_mon_memory_t, used_bytes, "used_bytes"),
        JU(loom_mon_memory_t, free_bytes, "free_bytes"),
        JU(loom_mon_memory_t, buffers_bytes, "buffers_bytes"),
        JU(loom_mon_memory_t, cached_bytes, "cached_bytes"),
        JU(loom_mon_memory_t, shared_bytes, "shared_bytes"),
        JU(loom_mon_memory_t, dirty_bytes, "dirty_bytes"),
        JU(loom_mon_memory_t, swap_total_bytes, "swap_total_bytes"),
        JU(loom_mon_memory_t, swap_free_bytes, "swap_free_bytes"),
        JU(loom_mon_memory_t, swap_used_bytes, "swap_used_bytes"),
    };
    if (put_src(o, &m->source))
        PUT_FIELDS(o, m, f);
    put(o, "pressure", psi_json(&m->pressure));
    return o;
}

static const loom_mon_disk_rate_t *disk_rate(const loom_mon_rates_t *r, const char *name)
{
    if (!r || !(r->groups & LOOM_MON_DISK))
        return NULL;
    for (size_t i = 0; i < r->n_disks; i++)
        if (strcmp(r->disks[i].name, name) == 0)
            return &r->disks[i];
    return NULL;
}

static json_t *disk_json(const loom_mon_disks_t *d, const loom_mon_rates_t *r)
{
    static const jfield_t f[] = {
        JU(loom_mon_disk_t, reads, "reads_completed"),
        JU(loom_mon_disk_t, reads_merged, "reads_merged"),
        JU(loom_mon_disk_t, read_bytes, "read_bytes"),
        JD(loom_mon_disk_t, read_seconds, "read_seconds"),
        JU(loom_mon_disk_t, writes, "writes_completed"),
        JU(loom_mon_disk_t, writes_merged, "writes_merged"),
        JU(loom_mon_disk_t, written_bytes, "written_bytes"),
        JD(loom_mon_disk_t, write_seconds, "write_seconds"),
        JU(loom_mon_disk_t, discards, "discards_completed"),
        JU(loom_mon_disk_t, discarded_bytes, "discarded_bytes"),
        JU(loom_mon_disk_t, flushes, "flushes_completed"),
        JU(loom_mon_disk_t, io_in_progress, "io_in_progress"),
        JD(loom_mon_disk_t, io_seconds, "io_seconds"),
        JD(loom_mon_disk_t, io_weighted_seconds, "io_weighted_seconds"),
    };
    static const jfield_t rate[] = {
        JD(loom_mon_disk_rate_t, read_bytes_per_second, "read_bytes_per_second"),
        JD(loom_mon_disk_rate_t, write_bytes_per_second, "write_bytes_per_second"),
        JD(loom_mon_disk_rate_t, reads_per_second, "reads_per_second"),
        JD(loom_mon_disk_rate_t, writes_per_second, "writes_per_second"),
        JD(loom_mon_disk_rate_t, busy_fraction, "busy_fraction"),
    };
    json_t *o = json_object();
    if (put_src(o, &d->source)) {
        json_t *a = json_array();
        for (size_t i = 0; i < d->n; i++) {
            const loom_mon_disk_t *x = &d->disks[i];
            json_t *j = json_object();
            put(j, "name", json_string(x->name));
            put(j, "major", json_integer(x->major));
            put(j, "minor", json_integer(x->minor));
            PUT_FIELDS(j, x, f);
            const loom_mon_disk_rate_t *dr = disk_rate(r, x->name);
            if (dr)
                PUT_FIELDS(j, dr, rate);
            json_array_append_new(a, j);
        }
        put(o, "devices", a);
    }
    put(o, "pressure", psi_json(&d->pressure));
    return o;
}

static json_t *net_json(const loom_mon_net_t *n, const loom_mon_rates_t *r)
{
    static const jfield_t f[] = {
        JU(loom_mon_netif_t, rx_bytes, "rx_bytes"),
        JU(loom_mon_netif_t, rx_packets, "rx_packets"),
        JU(loom_mon_netif_t, rx_errors, "rx_errors"),
        JU(loom_mon_netif_t, rx_dropped, "rx_dropped"),
        JU(loom_mon_netif_t, rx_fifo, "rx_fifo"),
        JU(loom_mon_netif_t, rx_frame, "rx_frame"),
        JU(loom_mon_netif_t, rx_multicast, "rx_multicast"),
        JU(loom_mon_netif_t, tx_bytes, "tx_bytes"),
        JU(loom_mon_netif_t, tx_packets, "tx_packets"),
        JU(loom_mon_netif_t, tx_errors, "tx_errors"),
        JU(loom_mon_netif_t, tx_dropped, "tx_dropped"),
        JU(loom_mon_netif_t, tx_fifo, "tx_fifo"),
        JU(loom_mon_netif_t, tx_collisions, "tx_collisions"),
        JU(loom_mon_netif_t, tx_carrier, "tx_carrier"),
    };
    static const jfield_t rate[] = {
        JD(loom_mon_net_rate_t, rx_bytes_per_second, "rx_bytes_per_second"),
        JD(loom_mon_net_rate_t, tx_bytes_per_second, "tx_bytes_per_second"),
        JD(loom_mon_net_rate_t, rx_packets_per_second, "rx_packets_per_second"),
        JD(loom_mon_net_rate_t, tx_packets_per_second, "tx_packets_per_second"),
    };
    json_t *o = json_object();
    if (!put_src(o, &n->source))
        return o;
    json_t *a = json_array();
    for (size_t i = 0; i < n->n; i++) {
        const loom_mon_netif_t *x = &n->ifs[i];
        json_t *j = json_object();
        put(j, "name", json_string(x->name));
        PUT_FIELDS(j, x, f);
        if (r && (r->groups & LOOM_MON_NET))
            for (size_t k = 0; k < r->n_nets; k++)
                if (strcmp(r->nets[k].name, x->name) == 0)
                    PUT_FIELDS(j, &r->nets[k], rate);
        json_array_append_new(a, j);
    }
    put(o, "interfaces", a);
    return o;
}

static json_t *fs_json(const loom_mon_fss_t *f)
{
    static const jfield_t sizes[] = {
        JU(loom_mon_fs_t, size_bytes, "size_bytes"),   JU(loom_mon_fs_t, free_bytes, "free_bytes"),
        JU(loom_mon_fs_t, avail_bytes, "avail_bytes"), JU(loom_mon_fs_t, files, "files"),
        JU(loom_mon_fs_t, files_free, "files_free"),
    };
    json_t *o = json_object();
    if (!put_src(o, &f->source))
        return o;
    json_t *a = json_array();
    for (size_t i = 0; i < f->n; i++) {
        const loom_mon_fs_t *x = &f->fs[i];
        json_t *j = json_object();
        put(j, "device", json_string(x->device));
        put(j, "mountpoint", json_string(x->mountpoint));
        put(j, "fstype", json_string(x->fstype));
        put(j, "readonly", json_boolean(x->readonly));
        if (put_src(j, &x->source))
            PUT_FIELDS(j, x, sizes);
        json_array_append_new(a, j);
    }
    put(o, "mounts", a);
    if (f->skipped_long)
        put(o, "skipped_long_names", jint(f->skipped_long));
    return o;
}

static json_t *power_json(const loom_mon_power_t *p, const loom_mon_rates_t *r)
{
    json_t *o = json_object();
    if (!put_src(o, &p->source))
        return o;
    json_t *a = json_array();
    for (size_t i = 0; i < p->n; i++) {
        const loom_mon_rapl_zone_t *z = &p->zones[i];
        json_t *j = json_object();
        put(j, "id", json_string(z->id));
        put(j, "name", json_string(z->name));
        if (put_src(j, &z->source)) {
            put(j, "energy_joules", jnum(z->energy_joules));
            put(j, "max_energy_joules", jnum(z->max_energy_joules));
            if (r && (r->groups & LOOM_MON_POWER))
                for (size_t k = 0; k < r->n_power; k++)
                    if (strcmp(r->power[k].id, z->id) == 0)
                        put(j, "watts", jnum(r->power[k].watts));
        }
        json_array_append_new(a, j);
    }
    put(o, "zones", a);
    return o;
}

static json_t *thermal_json(const loom_mon_thermal_t *t)
{
    json_t *o = json_object();
    json_t *h = json_object(), *z = json_object();
    bool hok = put_src(h, &t->hwmon_source), zok = put_src(z, &t->zone_source);
    put(o, "available", json_boolean(hok || zok));
    put(o, "hwmon", h);
    put(o, "thermal_zones", z);
    json_t *a = json_array();
    for (size_t i = 0; i < t->n; i++) {
        const loom_mon_temp_t *x = &t->temps[i];
        json_t *j = json_object();
        put(j, "kind", json_string(x->kind));
        put(j, "chip", json_string(x->chip));
        put(j, "sensor", json_string(x->sensor));
        if (put_src(j, &x->source))
            put(j, "celsius", jnum(x->celsius));
        json_array_append_new(a, j);
    }
    put(o, "sensors", a);
    return o;
}

static json_t *gpu_json(const loom_mon_gpus_t *g, const loom_mon_rates_t *r)
{
    json_t *o = json_object();
    bool ok = put_src(o, &g->source);
    put(o, "library", json_string(g->library));
    if (!ok)
        return o;
    put(o, "driver_version", json_string(g->driver_version));
    put(o, "nvml_version", json_string(g->nvml_version));
    json_t *a = json_array();
    for (size_t i = 0; i < g->n; i++) {
        const loom_mon_gpu_t *d = &g->gpus[i];
        const int *fs = d->field_status;
        json_t *j = json_object();
        put(j, "index", json_integer(d->index));
        put(j, "name", json_string(d->name));
        put(j, "uuid", json_string(d->uuid));
        put(j, "available", json_boolean(d->status == NVML_SUCCESS));
        if (d->status != NVML_SUCCESS)
            put(j, "reason", json_string(loom_mon_nvml_error_name(d->status)));
#define F(field, key, val) put(j, key, fs[field] == 0 ? (val) : json_null())
        F(LOOM_MON_GPU_F_UTIL, "utilization_gpu_ratio", jnum(d->util_gpu_pct / 100.0));
        F(LOOM_MON_GPU_F_UTIL, "utilization_memory_ratio", jnum(d->util_memory_pct / 100.0));
        F(LOOM_MON_GPU_F_MEMORY, "memory_total_bytes", jint(d->memory_total_bytes));
        F(LOOM_MON_GPU_F_MEMORY, "memory_used_bytes", jint(d->memory_used_bytes));
        F(LOOM_MON_GPU_F_MEMORY, "memory_free_bytes", jint(d->memory_free_bytes));
        F(LOOM_MON_GPU_F_POWER, "power_watts", jnum(d->power_watts));
        F(LOOM_MON_GPU_F_ENERGY, "energy_joules", jnum(d->energy_joules));
        F(LOOM_MON_GPU_F_TEMP, "temperature_celsius", jnum(d->temperature_celsius));
        F(LOOM_MON_GPU_F_SM_CLOCK, "sm_clock_hertz", jnum(d->sm_clock_hz));
        F(LOOM_MON_GPU_F_MEM_CLOCK, "memory_clock_hertz", jnum(d->memory_clock_hz));
        F(LOOM_MON_GPU_F_CLOCKS_EVENT, "clocks_event_reasons", jint(d->clocks_event_reasons));
        F(LOOM_MON_GPU_F_PCIE, "pcie_tx_bytes_per_second", jnum(d->pcie_tx_bytes_per_second));
        F(LOOM_MON_GPU_F_PCIE, "pcie_rx_bytes_per_second", jnum(d->pcie_rx_bytes_per_second));
        F(LOOM_MON_GPU_F_ECC, "ecc_corrected_errors", jint(d->ecc_corrected));
        F(LOOM_MON_GPU_F_ECC, "ecc_uncorrected_errors", jint(d->ecc_uncorrected));
        F(LOOM_MON_GPU_F_MIG, "mig_mode_current", json_integer(d->mig_current));
        F(LOOM_MON_GPU_F_MIG, "mig_mode_pending", json_integer(d->mig_pending));
#undef F
        if (r && (r->groups & LOOM_MON_GPU))
            for (size_t k = 0; k < r->n_gpus; k++)
                if (strcmp(r->gpus[k].uuid, d->uuid) == 0)
                    put(j, "energy_watts", jnum(r->gpus[k].watts));
        json_t *un = json_object();
        for (int f = 0; f < LOOM_MON_GPU_NFIELDS; f++)
            if (fs[f] != 0)
                put(un, loom_mon_gpu_field_name(f), json_string(loom_mon_nvml_error_name(fs[f])));
        put(j, "unavailable", un);
        json_t *migs = json_array();
        for (size_t k = 0; k < d->n_migs; k++) {
            const loom_mon_gpu_mig_t *m = &d->migs[k];
            json_t *x = json_object();
            put(x, "index", json_integer(m->index));
            put(x, "uuid", json_string(m->uuid));
            put(x, "name", json_string(m->name));
            if (m->memory_status == 0) {
                put(x, "memory_total_bytes", jint(m->memory_total_bytes));
                put(x, "memory_used_bytes", jint(m->memory_used_bytes));
            } else {
                put(x, "memory_unavailable",
                    json_string(loom_mon_nvml_error_name(m->memory_status)));
            }
            if (m->util_status == 0) {
                put(x, "utilization_gpu_ratio", jnum(m->util_gpu_pct / 100.0));
                put(x, "utilization_memory_ratio", jnum(m->util_memory_pct / 100.0));
            } else {
                put(x, "utilization_unavailable",
                    json_string(loom_mon_nvml_error_name(m->util_status)));
            }
            json_array_append_new(migs, x);
        }
        put(j, "mig_devices", migs);
        json_t *procs = json_array();
        for (size_t k = 0; k < d->n_procs; k++) {
            const loom_mon_gpu_process_t *p = &d->procs[k];
            json_t *x = json_object();
            put(x, "pid", json_integer(p->pid));
            put(x, "compute", json_boolean(p->compute));
            put(x, "graphics", json_boolean(p->graphics));
            put(x, "used_memory_bytes", p->memory_known ? jint(p->used_memory_bytes) : json_null());
            if (p->util_valid) {
                put(x, "sm_utilization_ratio", jnum(p->sm_util_pct / 100.0));
                put(x, "memory_utilization_ratio", jnum(p->mem_util_pct / 100.0));
                put(x, "encoder_utilization_ratio", jnum(p->enc_util_pct / 100.0));
                put(x, "decoder_utilization_ratio", jnum(p->dec_util_pct / 100.0));
                put(x, "utilization_timestamp_us", jint(p->util_timestamp_us));
            }
            json_array_append_new(procs, x);
        }
        put(j, "processes", procs);
        json_array_append_new(a, j);
    }
    put(o, "devices", a);
    return o;
}

static int dump(json_t *o, loom_buf_t *out, loom_err_t *err)
{
    if (!o)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory building JSON");
    int rc = loom_json_dump(out, o);
    json_decref(o);
    return rc ? loom_err_set(err, rc, "out of memory writing JSON") : LOOM_OK;
}

int loom_mon_to_json(const loom_mon_snapshot_t *s, const loom_mon_rates_t *r, loom_buf_t *out,
                     loom_err_t *err)
{
    if (r && r->groups && r->cur_mono_ns != s->mono_ns)
        return loom_err_set(err, LOOM_EINVAL,
                            "loom_mon_to_json: the rates were computed for "
                            "another snapshot (cur_mono_ns %lld, snapshot %lld)",
                            (long long)r->cur_mono_ns, (long long)s->mono_ns);
    json_t *o = json_object();
    char ts[32];
    loom_time_format_rfc3339(s->real_ns, ts);
    put(o, "timestamp", json_string(ts));
    put(o, "monotonic_ns", json_integer(s->mono_ns));
    if (r && r->groups)
        put(o, "interval_seconds", jnum(r->interval_seconds));
    if (s->groups & LOOM_MON_CPU)
        put(o, "cpu", cpu_json(&s->cpu, r));
    if (s->groups & LOOM_MON_MEMORY)
        put(o, "memory", memory_json(&s->memory));
    if (s->groups & LOOM_MON_DISK)
        put(o, "disk", disk_json(&s->disk, r));
    if (s->groups & LOOM_MON_NET)
        put(o, "net", net_json(&s->net, r));
    if (s->groups & LOOM_MON_FS)
        put(o, "fs", fs_json(&s->fs));
    if (s->groups & LOOM_MON_POWER)
        put(o, "power", power_json(&s->power, r));
    if (s->groups & LOOM_MON_THERMAL)
        put(o, "thermal", thermal_json(&s->thermal));
    if (s->groups & LOOM_MON_GPU)
        put(o, "gpu", gpu_json(&s->gpu, r));
    return dump(o, out, err);
}

int loom_mon_proc_to_json(const loom_mon_proc_t *p, loom_buf_t *out, loom_err_t *err)
{
    static const jfield_t f[] = {
        JD(loom_mon_proc_t, user_seconds, "user_seconds"),
        JD(loom_mon_proc_t, system_seconds, "system_seconds"),
        JU(loom_mon_proc_t, rss_bytes, "rss_bytes"),
        JU(loom_mon_proc_t, vm_bytes, "vm_bytes"),
        JU(loom_mon_proc_t, threads, "threads"),
        JU(loom_mon_proc_t, voluntary_ctxt_switches, "voluntary_context_switches"),
        JU(loom_mon_proc_t, nonvoluntary_ctxt_switches, "nonvoluntary_context_switches"),
    };
    static const jfield_t iof[] = {
        JU(loom_mon_proc_t, read_bytes, "read_bytes"),
        JU(loom_mon_proc_t, write_bytes, "write_bytes"),
        JU(loom_mon_proc_t, rchar_bytes, "rchar_bytes"),
        JU(loom_mon_proc_t, wchar_bytes, "wchar_bytes"),
    };
    json_t *o = json_object();
    put(o, "pid", json_integer(p->pid));
    put(o, "tree", json_boolean(p->tree));
    put(o, "comm", json_string(p->comm));
    put(o, "processes", jint(p->n_processes));
    PUT_FIELDS(o, p, f);
    json_t *io = json_object();
    if (put_src(io, &p->io_source))
        PUT_FIELDS(io, p, iof);
    put(o, "io", io);
    return dump(o, out, err);
}

/* The cgroup's fields by file: cpu.stat, memory.stat, memory.events, io.stat. */
static const jfield_t cg_cpu[] = {
    JD(loom_mon_cgroup_t, cpu_usage_seconds, "usage_seconds"),
    JD(loom_mon_cgroup_t, cpu_user_seconds, "user_seconds"),
    JD(loom_mon_cgroup_t, cpu_system_seconds, "system_seconds"),
    JU(loom_mon_cgroup_t, nr_periods, "periods"),
    JU(loom_mon_cgroup_t, nr_throttled, "throttled_periods"),
    JD(loom_mon_cgroup_t, throttled_seconds, "throttled_seconds"),
};
static const jfield_t cg_mstat[] = {
    JU(loom_mon_cgroup_t, memory_anon_bytes, "anon_bytes"),
    JU(loom_mon_cgroup_t, memory_file_bytes, "file_bytes"),
    JU(loom_mon_cgroup_t, memory_kernel_bytes, "kernel_bytes"),
    JU(loom_mon_cgroup_t, memory_shmem_bytes, "shmem_bytes"),
};
static const jfield_t cg_events[] = {
    JU(loom_mon_cgroup_t, memory_oom_events, "oom"),
    JU(loom_mon_cgroup_t, memory_oom_kills, "oom_kill"),
    JU(loom_mon_cgroup_t, memory_max_events, "max"),
};
static const jfield_t cg_io[] = {
    JU(loom_mon_cgroup_t, io_read_bytes, "read_bytes"),
    JU(loom_mon_cgroup_t, io_write_bytes, "write_bytes"),
    JU(loom_mon_cgroup_t, io_reads, "reads"),
    JU(loom_mon_cgroup_t, io_writes, "writes"),
    JU(loom_mon_cgroup_t, io_discard_bytes, "discarded_bytes"),
    JU(loom_mon_cgroup_t, io_discards, "discards"),
};

int loom_mon_cgroup_to_json(const loom_mon_cgroup_t *c, loom_buf_t *out, loom_err_t *err)
{
    json_t *o = json_object();
    put(o, "path", json_string(c->path));
    json_t *cpu = json_object();
    if (put_src(cpu, &c->cpu_source))
        PUT_FIELDS(cpu, c, cg_cpu);
    put(cpu, "pressure", psi_json(&c->cpu_pressure));
    put(o, "cpu", cpu);
    json_t *mem = json_object();
    json_t *cur = json_object(), *peak = json_object();
    if (put_src(cur, &c->memory_source))
        put(cur, "bytes", jint(c->memory_current_bytes));
    if (put_src(peak, &c->memory_peak_source))
        put(peak, "bytes", jint(c->memory_peak_bytes));
    put(mem, "current", cur);
    put(mem, "peak", peak);
    json_t *mx = json_object(), *ms = json_object(), *ev = json_object(), *pids = json_object();
    if (put_src(mx, &c->memory_max_source))
        put(mx, "bytes", c->memory_limited ? jint(c->memory_max_bytes) : json_null());
    if (put_src(ms, &c->memory_stat_source))
        PUT_FIELDS(ms, c, cg_mstat);
    if (put_src(ev, &c->memory_events_source))
        PUT_FIELDS(ev, c, cg_events);
    put(mem, "max", mx);
    put(mem, "stat", ms);
    put(mem, "events", ev);
    if (put_src(pids, &c->pids_source))
        put(pids, "current", jint(c->pids_current));
    put(o, "pids", pids);
    put(mem, "pressure", psi_json(&c->memory_pressure));
    put(o, "memory", mem);
    json_t *io = json_object();
    if (put_src(io, &c->io_source))
        PUT_FIELDS(io, c, cg_io);
    put(io, "pressure", psi_json(&c->io_pressure));
    put(o, "io", io);
    return dump(o, out, err);
}

/* --------------------------------------------------------- Prometheus */

typedef struct prom {
    loom_buf_t *b;
    const char *name, *type, *help;
    bool header_done;
    int rc;
} prom_t;

static void fam(prom_t *p, const char *name, const char *type, const char *help)
{
    p->name = name;
    p->type = type;
    p->help = help;
    p->header_done = false;
}

static void esc_label(loom_buf_t *b, const char *v)
{
    for (; *v; v++) {
        if (*v == '\\' || *v == '"')
            loom_buf_append_char(b, '\\'), loom_buf_append_char(b, *v);
        else if (*v == '\n')
            loom_buf_append_str(b, "\\n");
        else
            loom_buf_append_char(b, *v);
    }
}

/* The shortest decimal that reads back as exactly v ("168.74", not
 * "168.74000000000001"). */
static const char *shortest(double v, char out[40])
{
    if (v == floor(v) && fabs(v) < 9007199254740992.0) {
        snprintf(out, 40, "%.0f", v);
        return out;
    }
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(out, 40, "%.*g", prec, v);
        if (strtod(out, NULL) == v)
            break;
    }
    return out;
}

/* The end of sample()'s labels: a null pointer of the type va_arg reads
 * there (a bare NULL may be the int 0, which a variadic call passes as int). */
#define END_LABELS ((const char *)NULL)

/* labels: key, value pairs ended by END_LABELS. Skips non-finite values. */
static void sample(prom_t *p, double v, ...)
{
    char num[40];
    if (!isfinite(v))
        return;
    loom_buf_t *b = p->b;
    if (!p->header_done) {
        loom_buf_appendf(b, "# HELP %s %s\n# TYPE %s %s\n", p->name, p->help, p->name, p->type);
        p->header_done = true;
    }
    loom_buf_append_str(b, p->name);
    va_list ap;
    va_start(ap, v);
    const char *k = va_arg(ap, const char *);
    if (k) {
        loom_buf_append_char(b, '{');
        bool first = true;
        for (; k; k = va_arg(ap, const char *)) {
            const char *val = va_arg(ap, const char *);
            loom_buf_appendf(b, "%s%s=\"", first ? "" : ",", k);
            esc_label(b, val);
            loom_buf_append_char(b, '"');
            first = false;
        }
        loom_buf_append_char(b, '}');
    }
    va_end(ap);
    p->rc |= loom_buf_appendf(b, " %s\n", shortest(v, num));
}

static void src_up(prom_t *p, const char *source, const loom_mon_source_t *s)
{
    sample(p, s->status == LOOM_OK ? 1 : 0, "source", source, "reason", s->reason, END_LABELS);
}

static void prom_psi(prom_t *p, const char *res, const loom_mon_psi_t *psi)
{
    if (psi->source.status != LOOM_OK)
        return;
    sample(p, psi->some.total_seconds, "resource", res, "kind", "some", END_LABELS);
    if (psi->has_full)
        sample(p, psi->full.total_seconds, "resource", res, "kind", "full", END_LABELS);
}

static void prom_cpu(prom_t *p, const loom_mon_snapshot_t *s)
{
    const loom_mon_cpu_t *c = &s->cpu;
    if (c->source.status != LOOM_OK)
        return;
    char id[16];
    fam(p, "loom_cpu_seconds_total", "counter",
        "Seconds the CPUs spent in each mode (/proc/stat).");
    for (size_t i = 0; i < c->n_cores; i++) {
        snprintf(id, sizeof id, "%d", c->cores[i].id);
        for (int k = 0; k < LOOM_MON_CPU_NMODES; k++)
            sample(p, c->cores[i].seconds[k], "cpu", id, "mode", mode_names[k], END_LABELS);
    }
    if (c->freq_source.status == LOOM_OK) {
        fam(p, "loom_cpu_frequency_hertz", "gauge", "Current CPU frequency (cpufreq).");
        for (size_t i = 0; i < c->n_cores; i++) {
            snprintf(id, sizeof id, "%d", c->cores[i].id);
            sample(p, c->cores[i].freq_hz, "cpu", id, END_LABELS);
        }
    }
    fam(p, "loom_context_switches_total", "counter", "Context switches since boot.");
    sample(p, (double)c->context_switches, END_LABELS);
    fam(p, "loom_interrupts_total", "counter", "Interrupts serviced since boot.");
    sample(p, (double)c->interrupts, END_LABELS);
    fam(p, "loom_forks_total", "counter", "Processes and threads created since boot.");
    sample(p, (double)c->forks, END_LABELS);
    fam(p, "loom_procs_running", "gauge", "Tasks in runnable state.");
    sample(p, (double)c->procs_running, END_LABELS);
    fam(p, "loom_procs_blocked", "gauge", "Tasks blocked waiting for I/O.");
    sample(p, (double)c->procs_blocked, END_LABELS);
    fam(p, "loom_boot_time_seconds", "gauge", "Boot time, seconds since the Unix epoch.");
    sample(p, (double)c->boot_time_unix_s, END_LABELS);
    if (c->load_source.status == LOOM_OK) {
        fam(p, "loom_load1", "gauge", "1-minute load average.");
        sample(p, c->load1, END_LABELS);
        fam(p, "loom_load5", "gauge", "5-minute load average.");
        sample(p, c->load5, END_LABELS);
        fam(p, "loom_load15", "gauge", "15-minute load average.");
        sample(p, c->load15, END_LABELS);
    }
}

static void prom_memory(prom_t *p, const loom_mon_memory_t *m)
{
    if (m->source.status != LOOM_OK)
        return;
    static const struct {
        const char *name, *help;
        size_t off;
    } f[] = {
        {"loom_memory_total_bytes", "Total usable RAM (MemTotal).",
         offsetof(loom_mon_memory_t, total_bytes)},
        {"loom_memory_available_bytes",
         "RAM available for new work without swapping (MemAvailable).",
         offsetof(loom_mon_memory_t, available_bytes)},
        {"loom_memory_used_bytes", "RAM used: total - free - buffers - cached.",
         offsetof(loom_mon_memory_t, used_bytes)},
        {"loom_memory_free_bytes", "Unused RAM (MemFree).",
         offsetof(loom_mon_memory_t, free_bytes)},
        {"loom_memory_buffers_bytes", "Block device buffers (Buffers).",
         offsetof(loom_mon_memory_t, buffers_bytes)},
        {"loom_memory_cached_bytes", "Page cache and reclaimable slab (Cached + SReclaimable).",
         offsetof(loom_mon_memory_t, cached_bytes)},
        {"loom_memory_shared_bytes", "Shared memory and tmpfs (Shmem).",
         offsetof(loom_mon_memory_t, shared_bytes)},
        {"loom_memory_dirty_bytes", "Memory waiting to be written back (Dirty).",
         offsetof(loom_mon_memory_t, dirty_bytes)},
        {"loom_memory_swap_total_bytes", "Swap space (SwapTotal).",
         offsetof(loom_mon_memory_t, swap_total_bytes)},
        {"loom_memory_swap_free_bytes", "Unused swap (SwapFree).",
         offsetof(loom_mon_memory_t, swap_free_bytes)},
        {"loom_memory_swap_used_bytes", "Used swap.", offsetof(loom_mon_memory_t, swap_used_bytes)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fam(p, f[i].name, "gauge", f[i].help);
        sample(p, (double)*(const uint64_t *)((const char *)m + f[i].off), END_LABELS);
    }
}

static void prom_disk(prom_t *p, const loom_mon_disks_t *d)
{
    if (d->source.status != LOOM_OK)
        return;
    static const struct {
        const char *name, *type, *help;
        size_t off;
        bool dbl;
    } f[] = {
        {"loom_disk_reads_completed_total", "counter", "Reads completed.",
         offsetof(loom_mon_disk_t, reads), false},
        {"loom_disk_reads_merged_total", "counter", "Reads merged.",
         offsetof(loom_mon_disk_t, reads_merged), false},
        {"loom_disk_read_bytes_total", "counter", "Bytes read.",
         offsetof(loom_mon_disk_t, read_bytes), false},
        {"loom_disk_read_time_seconds_total", "counter", "Seconds spent by reads.",
         offsetof(loom_mon_disk_t, read_seconds), true},
        {"loom_disk_writes_completed_total", "counter", "Writes completed.",
         offsetof(loom_mon_disk_t, writes), false},
        {"loom_disk_writes_merged_total", "counter", "Writes merged.",
         offsetof(loom_mon_disk_t, writes_merged), false},
        {"loom_disk_written_bytes_total", "counter", "Bytes written.",
         offsetof(loom_mon_disk_t, written_bytes), false},
        {"loom_disk_write_time_seconds_total", "counter", "Seconds spent by writes.",
         offsetof(loom_mon_disk_t, write_seconds), true},
        {"loom_disk_discards_completed_total", "counter", "Discards completed.",
         offsetof(loom_mon_disk_t, discards), false},
        {"loom_disk_discarded_bytes_total", "counter", "Bytes discarded.",
         offsetof(loom_mon_disk_t, discarded_bytes), false},
        {"loom_disk_flush_requests_total", "counter", "Flush requests completed.",
         offsetof(loom_mon_disk_t, flushes), false},
        {"loom_disk_io_now", "gauge", "I/Os in progress.",
         offsetof(loom_mon_disk_t, io_in_progress), false},
        {"loom_disk_io_time_seconds_total", "counter", "Seconds the device was busy.",
         offsetof(loom_mon_disk_t, io_seconds), true},
        {"loom_disk_io_time_weighted_seconds_total", "counter",
         "Busy seconds weighted by the number of I/Os in flight.",
         offsetof(loom_mon_disk_t, io_weighted_seconds), true},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fam(p, f[i].name, f[i].type, f[i].help);
        for (size_t k = 0; k < d->n; k++) {
            const char *base = (const char *)&d->disks[k] + f[i].off;
            // cppcheck-suppress invalidPointerCast ; base + off is a double member's address
            double v = f[i].dbl ? *(const double *)base : (double)*(const uint64_t *)base;
            sample(p, v, "device", d->disks[k].name, END_LABELS);
        }
    }
}

static void prom_net(prom_t *p, const loom_mon_net_t *n)
{
    if (n->source.status != LOOM_OK)
        return;
    static const struct {
        const char *name, *help;
        size_t off;
    } f[] = {
        {"loom_network_receive_bytes_total", "Bytes received.",
         offsetof(loom_mon_netif_t, rx_bytes)},
        {"loom_network_receive_packets_total", "Packets received.",
         offsetof(loom_mon_netif_t, rx_packets)},
        {"loom_network_receive_errs_total", "Receive errors.",
         offsetof(loom_mon_netif_t, rx_errors)},
        {"loom_network_receive_drop_total", "Received packets dropped.",
         offsetof(loom_mon_netif_t, rx_dropped)},
        {"loom_network_receive_multicast_total", "Multicast packets received.",
         offsetof(loom_mon_netif_t, rx_multicast)},
        {"loom_network_transmit_bytes_total", "Bytes sent.", offsetof(loom_mon_netif_t, tx_bytes)},
        {"loom_network_transmit_packets_total", "Packets sent.",
         offsetof(loom_mon_netif_t, tx_packets)},
        {"loom_network_transmit_errs_total", "Transmit errors.",
         offsetof(loom_mon_netif_t, tx_errors)},
        {"loom_network_transmit_drop_total", "Transmit packets dropped.",
         offsetof(loom_mon_netif_t, tx_dropped)},
        {"loom_network_transmit_colls_total", "Transmit collisions.",
         offsetof(loom_mon_netif_t, tx_collisions)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fam(p, f[i].name, "counter", f[i].help);
        for (size_t k = 0; k < n->n; k++)
            sample(p, (double)*(const uint64_t *)((const char *)&n->ifs[k] + f[i].off), "device",
                   n->ifs[k].name, END_LABELS);
    }
}

static void prom_fs(prom_t *p, const loom_mon_fss_t *fs)
{
    if (fs->source.status != LOOM_OK)
        return;
    static const struct {
        const char *name, *help;
        size_t off;
    } f[] = {
        {"loom_filesystem_size_bytes", "Filesystem size.", offsetof(loom_mon_fs_t, size_bytes)},
        {"loom_filesystem_free_bytes", "Free space.", offsetof(loom_mon_fs_t, free_bytes)},
        {"loom_filesystem_avail_bytes", "Space available to non-root users.",
         offsetof(loom_mon_fs_t, avail_bytes)},
        {"loom_filesystem_files", "Inodes.", offsetof(loom_mon_fs_t, files)},
        {"loom_filesystem_files_free", "Free inodes.", offsetof(loom_mon_fs_t, files_free)},
    };
    for (size_t i = 0; i < sizeof f / sizeof f[0]; i++) {
        fam(p, f[i].name, "gauge", f[i].help);
        for (size_t k = 0; k < fs->n; k++) {
            const loom_mon_fs_t *x = &fs->fs[k];
            if (x->source.status == LOOM_OK)
                sample(p, (double)*(const uint64_t *)((const char *)x + f[i].off), "device",
                       x->device, "mountpoint", x->mountpoint, "fstype", x->fstype, END_LABELS);
        }
    }
    fam(p, "loom_filesystem_readonly", "gauge", "1 if mounted read-only.");
    for (size_t k = 0; k < fs->n; k++)
        sample(p, fs->fs[k].readonly, "device", fs->fs[k].device, "mountpoint",
               fs->fs[k].mountpoint, "fstype", fs->fs[k].fstype, END_LABELS);
}

static void prom_gpu(prom_t *p, const loom_mon_gpus_t *g)
{
    if (g->source.status != LOOM_OK)
        return;
    char idx[16];
#define EACH(field, expr)                                                                          \
    for (size_t i = 0; i < g->n; i++) {                                                            \
        const loom_mon_gpu_t *d = &g->gpus[i];                                                     \
        snprintf(idx, sizeof idx, "%u", d->index);                                                 \
        if (d->field_status[field] == 0)                                                           \
            sample(p, (expr), "gpu", idx, "uuid", d->uuid, END_LABELS);                            \
    }
    fam(p, "loom_gpu_info", "gauge", "GPU identity (value 1).");
    for (size_t i = 0; i < g->n; i++) {
        snprintf(idx, sizeof idx, "%u", g->gpus[i].index);
        sample(p, 1, "gpu", idx, "uuid", g->gpus[i].uuid, "name", g->gpus[i].name, "driver",
               g->driver_version, END_LABELS);
    }
    fam(p, "loom_gpu_utilization_ratio", "gauge", "Fraction of time a kernel was running.");
    EACH(LOOM_MON_GPU_F_UTIL, d->util_gpu_pct / 100.0)
    fam(p, "loom_gpu_memory_utilization_ratio", "gauge",
        "Fraction of time device memory was read or written.");
    EACH(LOOM_MON_GPU_F_UTIL, d->util_memory_pct / 100.0)
    fam(p, "loom_gpu_memory_total_bytes", "gauge", "Device memory.");
    EACH(LOOM_MON_GPU_F_MEMORY, (double)d->memory_total_bytes)
    fam(p, "loom_gpu_memory_used_bytes", "gauge", "Device memory in use.");
    EACH(LOOM_MON_GPU_F_MEMORY, (double)d->memory_used_bytes)
    fam(p, "loom_gpu_memory_free_bytes", "gauge", "Device memory free.");
    EACH(LOOM_MON_GPU_F_MEMORY, (double)d->memory_free_bytes)
    fam(p, "loom_gpu_power_watts", "gauge", "Board power draw.");
    EACH(LOOM_MON_GPU_F_POWER, d->power_watts)
    fam(p, "loom_gpu_energy_joules_total", "counter", "Energy since the driver loaded.");
    EACH(LOOM_MON_GPU_F_ENERGY, d->energy_joules)
    fam(p, "loom_gpu_temperature_celsius", "gauge", "GPU die temperature.");
    EACH(LOOM_MON_GPU_F_TEMP, d->temperature_celsius)
    fam(p, "loom_gpu_sm_clock_hertz", "gauge", "SM clock.");
    EACH(LOOM_MON_GPU_F_SM_CLOCK, d->sm_clock_hz)
    fam(p, "loom_gpu_memory_clock_hertz", "gauge", "Memory clock.");
    EACH(LOOM_MON_GPU_F_MEM_CLOCK, d->memory_clock_hz)
    fam(p, "loom_gpu_clocks_event_reasons", "gauge",
        "Bit mask of reasons the clocks are held down (nvmlClocksEventReason*).");
    EACH(LOOM_MON_GPU_F_CLOCKS_EVENT, (double)d->clocks_event_reasons)
    fam(p, "loom_gpu_pcie_transmit_bytes_per_second", "gauge", "PCIe TX throughput (NVML).");
    EACH(LOOM_MON_GPU_F_PCIE, d->pcie_tx_bytes_per_second)
    fam(p, "loom_gpu_pcie_receive_bytes_per_second", "gauge", "PCIe RX throughput (NVML).");
    EACH(LOOM_MON_GPU_F_PCIE, d->pcie_rx_bytes_per_second)
    fam(p, "loom_gpu_ecc_corrected_errors_total", "counter", "Corrected ECC errors since boot.");
    EACH(LOOM_MON_GPU_F_ECC, (double)d->ecc_corrected)
    fam(p, "loom_gpu_ecc_uncorrected_errors_total", "counter",
        "Uncorrected ECC errors since boot.");
    EACH(LOOM_MON_GPU_F_ECC, (double)d->ecc_uncorrected)
    fam(p, "loom_gpu_mig_enabled", "gauge", "1 if MIG mode is on.");
    EACH(LOOM_MON_GPU_F_MIG, d->mig_current == 1 ? 1.0 : 0.0)
#undef EACH
    fam(p, "loom_gpu_process_memory_bytes", "gauge", "Device memory used by a process.");
    for (size_t i = 0; i < g->n; i++)
        for (size_t k = 0; k < g->gpus[i].n_procs; k++) {
            const loom_mon_gpu_process_t *pr = &g->gpus[i].procs[k];
            char pid[16];
            snprintf(idx, sizeof idx, "%u", g->gpus[i].index);
            snprintf(pid, sizeof pid, "%u", pr->pid);
            if (pr->memory_known)
                sample(p, (double)pr->used_memory_bytes, "gpu", idx, "pid", pid, END_LABELS);
        }
    fam(p, "loom_gpu_process_sm_utilization_ratio", "gauge",
        "SM utilization of a process in its latest sample since the previous reading.");
    for (size_t i = 0; i < g->n; i++)
        for (size_t k = 0; k < g->gpus[i].n_procs; k++) {
            const loom_mon_gpu_process_t *pr = &g->gpus[i].procs[k];
            char pid[16];
            snprintf(idx, sizeof idx, "%u", g->gpus[i].index);
            snprintf(pid, sizeof pid, "%u", pr->pid);
            if (pr->util_valid)
                sample(p, pr->sm_util_pct / 100.0, "gpu", idx, "pid", pid, END_LABELS);
        }
}

int loom_mon_to_prom(const loom_mon_snapshot_t *s, loom_buf_t *out, loom_err_t *err)
{
    prom_t p = {.b = out};
    unsigned g = s->groups;
    if (g & LOOM_MON_CPU)
        prom_cpu(&p, s);
    if (g & (LOOM_MON_CPU | LOOM_MON_MEMORY | LOOM_MON_DISK)) {
        fam(&p, "loom_pressure_stalled_seconds_total", "counter",
            "Pressure stall time: some = at least one task stalled, full = all (PSI).");
        if (g & LOOM_MON_CPU)
            prom_psi(&p, "cpu", &s->cpu.pressure);
        if (g & LOOM_MON_MEMORY)
            prom_psi(&p, "memory", &s->memory.pressure);
        if (g & LOOM_MON_DISK)
            prom_psi(&p, "io", &s->disk.pressure);
    }
    if (g & LOOM_MON_MEMORY)
        prom_memory(&p, &s->memory);
    if (g & LOOM_MON_DISK)
        prom_disk(&p, &s->disk);
    if (g & LOOM_MON_NET)
        prom_net(&p, &s->net);
    if (g & LOOM_MON_FS)
        prom_fs(&p, &s->fs);
    if (g & LOOM_MON_POWER && s->power.source.status == LOOM_OK) {
        fam(&p, "loom_rapl_energy_joules_total", "counter",
            "RAPL energy counter (wraps at max_energy_range_uj).");
        for (size_t i = 0; i < s->power.n; i++)
            if (s->power.zones[i].source.status == LOOM_OK)
                sample(&p, s->power.zones[i].energy_joules, "zone", s->power.zones[i].id, "name",
                       s->power.zones[i].name, END_LABELS);
    }
    if (g & LOOM_MON_THERMAL) {
        fam(&p, "loom_temperature_celsius", "gauge",
            "Temperature of a hwmon sensor or thermal zone.");
        for (size_t i = 0; i < s->thermal.n; i++) {
            const loom_mon_temp_t *t = &s->thermal.temps[i];
            if (t->source.status == LOOM_OK)
                sample(&p, t->celsius, "kind", t->kind, "chip", t->chip, "sensor", t->sensor,
                       END_LABELS);
        }
    }
    if (g & LOOM_MON_GPU)
        prom_gpu(&p, &s->gpu);

    fam(&p, "loom_mon_source_up", "gauge",
        "1 if a metrics source could be read, 0 if not (the reason is a label).");
    if (g & LOOM_MON_CPU) {
        src_up(&p, "cpu", &s->cpu.source);
        src_up(&p, "cpu.frequency", &s->cpu.freq_source);
        src_up(&p, "cpu.load", &s->cpu.load_source);
        src_up(&p, "cpu.pressure", &s->cpu.pressure.source);
    }
    if (g & LOOM_MON_MEMORY) {
        src_up(&p, "memory", &s->memory.source);
        src_up(&p, "memory.pressure", &s->memory.pressure.source);
    }
    if (g & LOOM_MON_DISK) {
        src_up(&p, "disk", &s->disk.source);
        src_up(&p, "disk.pressure", &s->disk.pressure.source);
    }
    if (g & LOOM_MON_NET)
        src_up(&p, "net", &s->net.source);
    if (g & LOOM_MON_FS)
        src_up(&p, "fs", &s->fs.source);
    if (g & LOOM_MON_POWER)
        src_up(&p, "power.rapl", &s->power.source);
    if (g & LOOM_MON_THERMAL) {
        src_up(&p, "thermal.hwmon", &s->thermal.hwmon_source);
        src_up(&p, "thermal.zones", &s->thermal.zone_source);
    }
    if (g & LOOM_MON_GPU)
        src_up(&p, "gpu", &s->gpu.source);
    if (p.rc)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory writing Prometheus text");
    return LOOM_OK;
}

/* ------------------------------------------------------ per-job families */

/* How a per-job cgroup family reads its value. */
enum { CG_FIELD, CG_LIMIT, CG_PSI };

int loom_mon_cgroups_to_prom(const loom_mon_cgroup_t *cgs, const char *const *jobs, size_t n,
                             loom_buf_t *out, loom_err_t *err)
{
    prom_t p = {.b = out};
#define CG(m) offsetof(loom_mon_cgroup_t, m)
    static const struct {
        const char *name, *type, *help;
        size_t off, src; /* the value and the source it needs */
        bool dbl;
        int how;
    } f[] = {
        {"loom_job_cgroup_cpu_usage_seconds_total", "counter",
         "CPU time of the job's cgroup (cpu.stat usage_usec).", CG(cpu_usage_seconds),
         CG(cpu_source), true, CG_FIELD},
        {"loom_job_cgroup_cpu_user_seconds_total", "counter", "User CPU time (cpu.stat user_usec).",
         CG(cpu_user_seconds), CG(cpu_source), true, CG_FIELD},
        {"loom_job_cgroup_cpu_system_seconds_total", "counter",
         "System CPU time (cpu.stat system_usec).", CG(cpu_system_seconds), CG(cpu_source), true,
         CG_FIELD},
        {"loom_job_cgroup_cpu_throttled_seconds_total", "counter",
         "Time throttled by cpu.max (cpu.stat throttled_usec).", CG(throttled_seconds),
         CG(cpu_source), true, CG_FIELD},
        {"loom_job_cgroup_cpu_throttled_periods_total", "counter",
         "Periods throttled (cpu.stat nr_throttled).", CG(nr_throttled), CG(cpu_source), false,
         CG_FIELD},
        {"loom_job_cgroup_memory_bytes", "gauge", "Memory charged to the cgroup (memory.current).",
         CG(memory_current_bytes), CG(memory_source), false, CG_FIELD},
        {"loom_job_cgroup_memory_peak_bytes", "gauge", "Peak memory of the cgroup (memory.peak).",
         CG(memory_peak_bytes), CG(memory_peak_source), false, CG_FIELD},
        {"loom_job_cgroup_io_read_bytes_total", "counter",
         "Bytes read (io.stat rbytes, all devices).", CG(io_read_bytes), CG(io_source), false,
         CG_FIELD},
        {"loom_job_cgroup_io_written_bytes_total", "counter",
         "Bytes written (io.stat wbytes, all devices).", CG(io_write_bytes), CG(io_source), false,
         CG_FIELD},
        {"loom_job_cgroup_pressure_stalled_seconds_total", "counter",
         "PSI stall time of the cgroup (some).", 0, 0, true, CG_PSI},
        {"loom_job_cgroup_memory_limit_bytes", "gauge",
         "memory.max of the cgroup (absent: no limit).", CG(memory_max_bytes),
         CG(memory_max_source), false, CG_LIMIT},
        {"loom_job_cgroup_oom_kills_total", "counter",
         "Processes killed by the OOM killer (memory.events oom_kill).", CG(memory_oom_kills),
         CG(memory_events_source), false, CG_FIELD},
        {"loom_job_cgroup_pids", "gauge", "Tasks in the cgroup (pids.current).", CG(pids_current),
         CG(pids_source), false, CG_FIELD},
    };
#undef CG
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        fam(&p, f[k].name, f[k].type, f[k].help);
        for (size_t i = 0; i < n; i++) {
            const loom_mon_cgroup_t *c = &cgs[i];
            const char *job = jobs[i];
            if (f[k].how == CG_PSI) {
                const loom_mon_psi_t *ps[3] = {&c->cpu_pressure, &c->memory_pressure,
                                               &c->io_pressure};
                const char *res[3] = {"cpu", "memory", "io"};
                for (int r = 0; r < 3; r++)
                    if (ps[r]->source.status == LOOM_OK)
                        sample(&p, ps[r]->some.total_seconds, "job_id", job, "resource", res[r],
                               END_LABELS);
                continue;
            }
            const char *base = (const char *)c;
            if (((const loom_mon_source_t *)(base + f[k].src))->status != LOOM_OK ||
                (f[k].how == CG_LIMIT && !c->memory_limited))
                continue;
            // cppcheck-suppress invalidPointerCast ; base + off is a double member's address
            double v = f[k].dbl ? *(const double *)(base + f[k].off)
                                : (double)*(const uint64_t *)(base + f[k].off);
            sample(&p, v, "job_id", job, END_LABELS);
        }
    }
    if (p.rc)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory writing Prometheus text");
    return LOOM_OK;
}

int loom_mon_procs_to_prom(const loom_mon_proc_t *procs, const char *const *jobs, size_t n,
                           loom_buf_t *out, loom_err_t *err)
{
    prom_t p = {.b = out};
    static const struct {
        const char *name, *type, *help;
        size_t off;
        bool dbl, io;
    } f[] = {
        {"loom_job_process_cpu_user_seconds_total", "counter",
         "User CPU time of the job's processes.", offsetof(loom_mon_proc_t, user_seconds), true,
         false},
        {"loom_job_process_cpu_system_seconds_total", "counter",
         "System CPU time of the job's processes.", offsetof(loom_mon_proc_t, system_seconds), true,
         false},
        {"loom_job_process_resident_memory_bytes", "gauge",
         "Resident memory (sum over the processes).", offsetof(loom_mon_proc_t, rss_bytes), false,
         false},
        {"loom_job_process_threads", "gauge", "Threads.", offsetof(loom_mon_proc_t, threads), false,
         false},
        {"loom_job_process_processes", "gauge", "Processes in the tree.",
         offsetof(loom_mon_proc_t, n_processes), false, false},
        {"loom_job_process_context_switches_total", "counter", "Voluntary context switches.",
         offsetof(loom_mon_proc_t, voluntary_ctxt_switches), false, false},
        {"loom_job_process_read_bytes_total", "counter", "Bytes read from storage (/proc/PID/io).",
         offsetof(loom_mon_proc_t, read_bytes), false, true},
        {"loom_job_process_written_bytes_total", "counter",
         "Bytes written to storage (/proc/PID/io).", offsetof(loom_mon_proc_t, write_bytes), false,
         true},
    };
    for (size_t k = 0; k < sizeof f / sizeof f[0]; k++) {
        fam(&p, f[k].name, f[k].type, f[k].help);
        for (size_t i = 0; i < n; i++) {
            const char *base = (const char *)&procs[i] + f[k].off;
            if (f[k].io && procs[i].io_source.status != LOOM_OK)
                continue;
            double v;
            if (f[k].dbl)
                // cppcheck-suppress invalidPointerCast ; base + off is a double member's address
                v = *(const double *)base;
            else if (f[k].off == offsetof(loom_mon_proc_t, n_processes))
                v = *(const uint32_t *)base;
            else
                v = (double)*(const uint64_t *)base;
            sample(&p, v, "job_id", jobs[i], END_LABELS);
        }
    }
    if (p.rc)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory writing Prometheus text");
    return LOOM_OK;
}
