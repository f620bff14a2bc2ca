/* A synthetic workload with known behaviour for the profiler's tests.
 *
 *   prof_synth --steps N --busy-ms B --idle-ms I [--children K]
 *              [--markers auto|stdout] [--truth FILE] [--garbage] [--meta TEXT]
 *
 * Each step burns exactly B ms of CPU (measured on the thread's own CPU
 * clock, so the amount does not depend on how busy the machine is) and
 * then sleeps I ms, and reports a LOOM_STEP marker: to $LOOM_PROF_FD when
 * set (auto), or to stdout. K child processes do the same work without
 * markers. With --truth it writes the ground truth as JSON: each step's
 * wall and process CPU time and, at the end, the kernel's rusage of the
 * process and its children. --garbage adds a malformed marker and an
 * ordinary output line. --meta TEXT sends "LOOM_META TEXT" before the
 * first step. Each step's marker carries its process CPU time (cpu_ns). */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static long long now(clockid_t c)
{
    struct timespec ts;
    clock_gettime(c, &ts);
    return (long long)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static volatile unsigned long long sink;

static void burn(long long ns)
{
    long long end = now(CLOCK_THREAD_CPUTIME_ID) + ns;
    while (now(CLOCK_THREAD_CPUTIME_ID) < end)
        for (int i = 0; i < 1000; i++)
            sink += (unsigned long long)i * 2654435761u;
}

static void nap(long long ns)
{
    struct timespec ts = {ns / 1000000000LL, ns % 1000000000LL};
    while (nanosleep(&ts, &ts) != 0)
        ;
}

static long long tv_ns(struct timeval tv)
{
    return (long long)tv.tv_sec * 1000000000LL + tv.tv_usec * 1000LL;
}

int main(int argc, char **argv)
{
    static const struct option opts[] = {
        {"steps", required_argument, NULL, 's'},
        {"busy-ms", required_argument, NULL, 'b'},
        {"idle-ms", required_argument, NULL, 'i'},
        {"children", required_argument, NULL, 'c'},
        {"markers", required_argument, NULL, 'm'},
        {"truth", required_argument, NULL, 't'},
        {"garbage", no_argument, NULL, 'g'},
        {"meta", required_argument, NULL, 'M'},
        {NULL, 0, NULL, 0},
    };
    int steps = 10, children = 0, garbage = 0;
    long long busy = 20000000, idle = 20000000;
    const char *markers = "auto", *truth = NULL, *meta = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "", opts, NULL)) != -1) {
        switch (c) {
        case 's': steps = atoi(optarg); break;
        case 'b': busy = atoll(optarg) * 1000000LL; break;
        case 'i': idle = atoll(optarg) * 1000000LL; break;
        case 'c': children = atoi(optarg); break;
        case 'm': markers = optarg; break;
        case 't': truth = optarg; break;
        case 'g': garbage = 1; break;
        case 'M': meta = optarg; break;
        default: return 2;
        }
    }
    FILE *mk = stdout;
    const char *env = getenv("LOOM_PROF_FD");
    if (strcmp(markers, "auto") == 0 && env) {
        mk = fdopen(atoi(env), "w");
        if (!mk) {
            perror("prof_synth: fdopen LOOM_PROF_FD");
            return 1;
        }
    }
    for (int k = 0; k < children; k++) {
        pid_t pid = fork();
        if (pid == 0) {
            for (int s = 0; s < steps; s++) {
                burn(busy);
                nap(idle);
            }
            _exit(0);
        }
    }
    long long *wall = calloc((size_t)steps, sizeof *wall),
              *cpu = calloc((size_t)steps, sizeof *cpu);
    if (meta) {
        fprintf(mk, "LOOM_META %s\n", meta);
        fflush(mk);
    }
    if (garbage) {
        printf("an ordinary line of output\n");
        printf("LOOM_STEP x 1 2\n");
        fflush(stdout);
    }
    for (int s = 0; s < steps; s++) {
        long long c0 = now(CLOCK_PROCESS_CPUTIME_ID), t0 = now(CLOCK_MONOTONIC);
        burn(busy);
        nap(idle);
        long long t1 = now(CLOCK_MONOTONIC), c1 = now(CLOCK_PROCESS_CPUTIME_ID);
        wall[s] = t1 - t0;
        cpu[s] = c1 - c0;
        fprintf(mk, "LOOM_STEP %d %lld %lld items=4 data_ns=%lld cpu_ns=%lld\n", s, t0, t1,
                busy / 4, c1 - c0);
        fflush(mk);
    }
    while (wait(NULL) > 0)
        ;
    if (truth) {
        struct rusage self, kids;
        getrusage(RUSAGE_SELF, &self);
        getrusage(RUSAGE_CHILDREN, &kids);
        FILE *f = fopen(truth, "w");
        if (!f) {
            perror(truth);
            return 1;
        }
        fprintf(f, "{\"busy_ns\": %lld, \"idle_ns\": %lld, \"steps\": [", busy, idle);
        for (int s = 0; s < steps; s++)
            fprintf(f, "%s{\"wall_ns\": %lld, \"cpu_ns\": %lld}", s ? ", " : "", wall[s], cpu[s]);
        fprintf(f, "], \"self_cpu_ns\": %lld, \"children_cpu_ns\": %lld}\n",
                tv_ns(self.ru_utime) + tv_ns(self.ru_stime),
                tv_ns(kids.ru_utime) + tv_ns(kids.ru_stime));
        fclose(f);
    }
    free(wall);
    free(cpu);
    return 0;
}
