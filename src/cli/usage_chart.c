/* loom show ID --usage: a job's usage series (job.usage) as compact text
 * charts, one per quantity: CPU cores, memory, and per GPU utilisation,
 * memory and power. Each chart is CHART_W columns of time (the series
 * averaged into equal slices from the first point's start to the last
 * point's end) by CHART_H rows of eighth-blocks, with the scale's top and
 * zero on the y axis and elapsed time under the x axis. */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "cli/client.h"

#define CHART_W 60
#define CHART_H 4

typedef enum unit { UNIT_CORES, UNIT_BYTES, UNIT_PERCENT, UNIT_WATTS } unit_t;

static void fmt_value(double v, unit_t u, char out[32])
{
    if (u == UNIT_BYTES)
        loom_format_size((uint64_t)(v > 0 ? v : 0), out, 32);
    else if (u == UNIT_PERCENT)
        snprintf(out, 32, "%.0f%%", v);
    else if (u == UNIT_WATTS)
        snprintf(out, 32, "%.0f W", v);
    else
        snprintf(out, 32, "%.2f", v);
}

/* The series in CHART_W equal slices of [t0, t1]: in each, the mean of the
 * points that cover it, weighted by how much of it they cover (a point
 * covers span_seconds up to its time); NAN where none does. */
static void slices(const json_t *time, const json_t *span, const json_t *val, double t0, double t1,
                   double out[CHART_W])
{
    double w = (t1 - t0) / CHART_W;
    for (int k = 0; k < CHART_W; k++) {
        double c0 = t0 + k * w, c1 = c0 + w, sum = 0, cover = 0;
        size_t i;
        const json_t *v;
        json_array_foreach(val, i, v)
        {
            double e = json_number_value(json_array_get(time, i));
            double b = e - json_number_value(json_array_get(span, i));
            double o = (e < c1 ? e : c1) - (b > c0 ? b : c0);
            if (!json_is_number(v) || o <= 0)
                continue;
            sum += json_number_value(v) * o;
            cover += o;
        }
        out[k] = cover > 0 ? sum / cover : NAN;
    }
}

/* A top of the scale: 100 for percentages, else the largest value. */
static double scale_top(const double *s, unit_t u)
{
    if (u == UNIT_PERCENT)
        return 100;
    double top = 0;
    for (int k = 0; k < CHART_W; k++)
        if (isfinite(s[k]) && s[k] > top)
            top = s[k];
    return top > 0 ? top : 1;
}

static void draw_row(const double *s, double top, int row)
{
    static const char *const eighth[] = {" ", "▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
    for (int k = 0; k < CHART_W; k++) {
        if (!isfinite(s[k])) {
            fputs(" ", stdout);
            continue;
        }
        double level = s[k] / top * CHART_H * 8 - row * 8; /* eighths in this row */
        int e = level <= 0 ? 0 : level >= 8 ? 8 : (int)lround(level);
        if (row == 0 && e == 0 && s[k] > 0)
            e = 1; /* a small value still shows */
        fputs(eighth[e], stdout);
    }
    fputs("\n", stdout);
}

static void chart(const char *title, unit_t u, const json_t *cols, const json_t *val, double t0,
                  double t1)
{
    double s[CHART_W];
    slices(json_object_get(cols, "time"), json_object_get(cols, "span_seconds"), val, t0, t1, s);
    double top = scale_top(s, u), peak = 0, sum = 0;
    int n = 0;
    for (int k = 0; k < CHART_W; k++)
        if (isfinite(s[k])) {
            peak = s[k] > peak ? s[k] : peak;
            sum += s[k];
            n++;
        }
    if (n == 0)
        return;
    char a[32], b[32], c[32];
    fmt_value(sum / n, u, a);
    fmt_value(peak, u, b);
    fmt_value(top, u, c);
    printf("\n  %s: mean %s, peak %s\n", title, a, b);
    for (int row = CHART_H - 1; row >= 0; row--) {
        printf("  %9s |", row == CHART_H - 1 ? c : row == 0 ? "0" : "");
        draw_row(s, top, row);
    }
    char d[32];
    printf("  %9s +%.*s\n", "", CHART_W,
           "------------------------------------------------------------");
    loom_format_duration((int64_t)((t1 - t0) / 2 * 1e9), b, sizeof b);
    loom_format_duration((int64_t)((t1 - t0) * 1e9), d, sizeof d);
    printf("  %9s  0%*s%*s  (time since the first sample)\n", "", CHART_W / 2, b, CHART_W / 2 - 1,
           d);
}

/* The time the series covers: the first point's start to the last's end. */
static int range(const json_t *cols, double *t0, double *t1)
{
    const json_t *time = json_object_get(cols, "time");
    size_t n = json_array_size(time);
    if (n == 0)
        return -1;
    *t0 = json_number_value(json_array_get(time, 0)) -
          json_number_value(json_array_get(json_object_get(cols, "span_seconds"), 0));
    *t1 = json_number_value(json_array_get(time, n - 1));
    return 0;
}

void loom_cli_usage_charts(const json_t *usage)
{
    const json_t *cols = json_object_get(usage, "columns");
    double t0, t1;
    if (range(cols, &t0, &t1) != 0) {
        printf("  no usage samples yet (a running job is sampled every second at first)\n");
        return;
    }
    char from[32], to[32];
    loom_time_format_rfc3339((int64_t)(t0 * 1e9), from);
    loom_time_format_rfc3339((int64_t)(t1 * 1e9), to);
    printf("  usage from %s to %s, %lld points\n", from, to,
           (long long)json_integer_value(json_object_get(usage, "points")));
    chart("CPU (cores busy)", UNIT_CORES, cols, json_object_get(cols, "cpu_cores"), t0, t1);
    chart("memory", UNIT_BYTES, cols, json_object_get(cols, "memory_bytes"), t0, t1);
    size_t i;
    const json_t *g;
    json_array_foreach(json_object_get(usage, "gpus"), i, g)
    {
        char title[64];
        int idx = (int)json_integer_value(json_object_get(g, "index"));
        snprintf(title, sizeof title, "GPU %d utilisation", idx);
        chart(title, UNIT_PERCENT, cols, json_object_get(g, "util_percent"), t0, t1);
        snprintf(title, sizeof title, "GPU %d memory", idx);
        chart(title, UNIT_BYTES, cols, json_object_get(g, "memory_bytes"), t0, t1);
        snprintf(title, sizeof title, "GPU %d power", idx);
        chart(title, UNIT_WATTS, cols, json_object_get(g, "power_watts"), t0, t1);
    }
}
