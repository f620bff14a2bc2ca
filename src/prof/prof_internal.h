/* Private interfaces between the files of src/prof. */
#ifndef LOOM_PROF_INTERNAL_H
#define LOOM_PROF_INTERNAL_H

#include <pthread.h>
#include <stdatomic.h>
#include <sys/types.h>

#include "loom/mon.h"
#include "loom/prof.h"

/* proctree.c: the process tree of one root, read from /proc. This is the
 * minimal reader prof needs until libloom's monitoring part is merged. */
typedef struct prof_proc {
    pid_t pid;
    int fd;          /* open /proc/<pid>/stat, read with pread */
    int64_t user_ns; /* last values read */
    int64_t sys_ns;
    int64_t reaped_ns; /* CPU of its children it has waited for (cutime + cstime) */
    pid_t ppid;
    bool alive;
} prof_proc_t;

typedef struct prof_tree {
    pid_t root;
    prof_proc_t *procs;
    size_t n, cap;
    int64_t retired_user_ns; /* CPU of members gone without a tracked reaper */
    int64_t retired_sys_ns;
    int64_t last_user_ns, last_sys_ns; /* the last totals, kept monotonic */
    int64_t ns_per_tick;
    int64_t page_size;
} prof_tree_t;

int prof_tree_init(prof_tree_t *t, pid_t root, loom_err_t *err);
/* Finds members not yet tracked (a walk of /proc). */
void prof_tree_rescan(prof_tree_t *t);
/* Reads every tracked member once; members that have gone are retired. */
void prof_tree_sample(prof_tree_t *t, loom_prof_sample_t *s);
void prof_tree_free(prof_tree_t *t);
/* Parses the fields prof needs from the text of /proc/<pid>/stat. */
typedef struct prof_stat {
    pid_t ppid;
    int64_t utime, stime, cutime, cstime; /* clock ticks */
    int64_t threads, rss_pages;
} prof_stat_t;
int prof_parse_stat(const char *text, size_t len, prof_stat_t *st);

/* record.c: summary of the CUPTI tracer's kernels.csv text (header line,
 * then kind,start_ns,end_ns,bytes,device,stream,name): an object with
 * records, malformed_lines, by_kind and by_class. */
json_t *prof_kernels_parse(const char *text, size_t len);

/* plot.c: figures as SVG text (appended to b). */
void prof_svg_text(loom_buf_t *b, const char *s); /* XML-escaped text */
void prof_steps_svg(const loom_prof_run_t *r, const loom_prof_summary_t *s, loom_buf_t *b);
/* Needs rf->have_counts and rf->have_device. */
void prof_roofline_svg(const loom_prof_roofline_t *rf, const char *device, loom_buf_t *b);

/* sampler.c: one thread sampling a tree on an absolute schedule. */
typedef struct prof_sampler {
    prof_tree_t tree;
    int64_t interval_ns, rescan_ns;
    pthread_t thread;
    pthread_mutex_t lock;
    pthread_cond_t wake;
    bool stop; /* under lock */
    loom_prof_sample_t *samples;
    size_t n, cap;
    size_t missed;
    int64_t self_cpu_ns; /* the thread's CPU time, read as it ends */
    bool oom;
    /* GPUs, through the monitoring part (NULL mon: not asked or failed). */
    int64_t gpu_interval_ns;
    loom_mon_t *mon;
    loom_mon_snapshot_t snap;
    char gpu_status[256];
    json_t *gpu_names;
    loom_prof_gpu_sample_t *gpu;
    size_t ngpu, capgpu;
} prof_sampler_t;

int prof_sampler_start(prof_sampler_t *s, pid_t root, int64_t interval_ns, int64_t rescan_ns,
                       int64_t gpu_interval_ns, loom_err_t *err);
/* True if pid is a live member of the tree. */
bool prof_tree_has(const prof_tree_t *t, pid_t pid);
/* Takes a last sample, stops the thread and hands the samples over. */
void prof_sampler_stop(prof_sampler_t *s);
void prof_sampler_free(prof_sampler_t *s);

#endif
