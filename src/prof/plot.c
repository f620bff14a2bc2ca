/* Figures of one profiled run, written as SVG text by hand: no plotting
 * program is needed where loom runs, and the output is small and diffable.
 *
 *   steps.svg     the time series of step times (warm-up marked), with the
 *                 CPU time of each step when the markers carry cpu_ns
 *   roofline.svg  the device's roofline (log-log) and where the run sits
 *
 * (cpu.svg, CPU and memory against time, is drawn in record.c.) Every
 * piece of text that comes from outside (device names) is XML-escaped, so
 * the files are well-formed whatever the inputs. */
#include <math.h>
#include <string.h>

#include "prof/prof_internal.h"

void prof_svg_text(loom_buf_t *b, const char *s)
{
    for (; *s; s++) {
        switch (*s) {
        case '&': loom_buf_append_str(b, "&amp;"); break;
        case '<': loom_buf_append_str(b, "&lt;"); break;
        case '>': loom_buf_append_str(b, "&gt;"); break;
        case '"': loom_buf_append_str(b, "&quot;"); break;
        default:
            /* Control characters are not allowed in XML 1.0 text. */
            loom_buf_append_char(b, (unsigned char)*s < 0x20 ? ' ' : *s);
        }
    }
}

/* A "nice" tick step (1, 2 or 5 times a power of ten) giving about n ticks. */
static double nice_step(double range, int n)
{
    if (!(range > 0))
        return 1;
    double raw = range / n, p = pow(10, floor(log10(raw))), f = raw / p;
    return (f < 1.5 ? 1 : f < 3.5 ? 2 : f < 7.5 ? 5 : 10) * p;
}

/* The plot area of one figure. */
typedef struct frame {
    double x, y, w, h;     /* pixels */
    double x0, x1, y0, y1; /* data range (log10 of it for log axes) */
    bool xlog, ylog;
} frame_t;

static double px(const frame_t *f, double v)
{
    double t = f->xlog ? log10(v) : v;
    return f->x + f->w * (t - f->x0) / (f->x1 - f->x0);
}

static double py(const frame_t *f, double v)
{
    double t = f->ylog ? log10(v) : v;
    return f->y + f->h - f->h * (t - f->y0) / (f->y1 - f->y0);
}

static void svg_open(loom_buf_t *b, double w, double h)
{
    loom_buf_appendf(b,
                     "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                     "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%.0f\" height=\"%.0f\" "
                     "viewBox=\"0 0 %.0f %.0f\" font-family=\"sans-serif\" font-size=\"11\">\n"
                     "<rect width=\"100%%\" height=\"100%%\" fill=\"white\"/>\n",
                     w, h, w, h);
}

/* Frame, ticks with grid lines and labels; scale divides the tick labels
 * (e.g. 1e9 to label FLOP/s in GFLOP/s). */
static void axes(loom_buf_t *b, const frame_t *f, const char *xlabel, const char *ylabel,
                 double yscale)
{
    loom_buf_appendf(b,
                     "<rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"none\" "
                     "stroke=\"#444\"/>\n",
                     f->x, f->y, f->w, f->h);
    for (int axis = 0; axis < 2; axis++) {
        bool lg = axis ? f->ylog : f->xlog;
        double lo = axis ? f->y0 : f->x0, hi = axis ? f->y1 : f->x1;
        double step = lg ? 1 : nice_step(hi - lo, 6);
        for (double t = ceil(lo / step - 1e-9) * step; t <= hi + 1e-9 * step; t += step) {
            double v = lg ? pow(10, t) : fabs(t) < 1e-9 * step ? 0 : t; /* never "-0" */
            if (axis == 0) {
                double x = px(f, v);
                loom_buf_appendf(b,
                                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                 "stroke=\"#eee\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                                 "text-anchor=\"middle\">%g</text>\n",
                                 x, f->y, x, f->y + f->h, x, f->y + f->h + 14, v);
            } else {
                double y = py(f, v);
                loom_buf_appendf(b,
                                 "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" "
                                 "stroke=\"#eee\"/>\n<text x=\"%.1f\" y=\"%.1f\" "
                                 "text-anchor=\"end\">%g</text>\n",
                                 f->x, y, f->x + f->w, y, f->x - 4, y + 4, v / yscale);
            }
        }
    }
    loom_buf_appendf(b, "<text x=\"%.1f\" y=\"%.1f\" text-anchor=\"middle\">", f->x + f->w / 2,
                     f->y + f->h + 30);
    prof_svg_text(b, xlabel);
    loom_buf_appendf(b,
                     "</text>\n<text x=\"14\" y=\"%.1f\" text-anchor=\"middle\" "
                     "transform=\"rotate(-90 14 %.1f)\">",
                     f->y + f->h / 2, f->y + f->h / 2);
    prof_svg_text(b, ylabel);
    loom_buf_append_str(b, "</text>\n");
}

void prof_steps_svg(const loom_prof_run_t *r, const loom_prof_summary_t *s, loom_buf_t *b)
{
    frame_t f = {.x = 70, .y = 30, .w = 720, .h = 300};
    double ymax = 0;
    bool cpu = r->nsteps > 0;
    for (size_t i = 0; i < r->nsteps; i++) {
        double d = (double)(r->steps[i].end_ns - r->steps[i].start_ns) / 1e6;
        double c = (double)r->steps[i].cpu_ns / 1e6;
        ymax = fmax(ymax, fmax(d, c));
        cpu &= r->steps[i].cpu_ns >= 0;
    }
    f.x0 = 0;
    f.x1 = r->nsteps > 1 ? (double)(r->nsteps - 1) : 1;
    f.y0 = 0;
    f.y1 = ymax > 0 ? ymax * 1.05 : 1;
    svg_open(b, f.x + f.w + 20, f.y + f.h + 70);
    loom_buf_appendf(b,
                     "<text x=\"%.0f\" y=\"18\">Step times: %zu steps, %zu warm-up "
                     "(orange)",
                     f.x, r->nsteps, s->warmup_steps);
    if (s->steady.n)
        loom_buf_appendf(b, "; steady p50 %.3f ms (dashed)", s->steady.p50 * 1e3);
    if (cpu)
        loom_buf_append_str(b, "; grey: CPU time of each step");
    loom_buf_append_str(b, "</text>\n");
    axes(b, &f, "step (in order of arrival)", "step time, ms", 1);
    if (s->steady.n)
        loom_buf_appendf(b,
                         "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\" "
                         "stroke-dasharray=\"4 3\"/>\n",
                         f.x, py(&f, s->steady.p50 * 1e3), f.x + f.w, py(&f, s->steady.p50 * 1e3));
    for (int series = cpu ? 1 : 0; series >= 0; series--) {
        loom_buf_appendf(b, "<polyline fill=\"none\" stroke=\"%s\" points=\"",
                         series ? "#999" : "#1f77b4");
        for (size_t i = 0; i < r->nsteps; i++) {
            const loom_prof_step_t *st = &r->steps[i];
            double v =
                series ? (double)st->cpu_ns / 1e6 : (double)(st->end_ns - st->start_ns) / 1e6;
            loom_buf_appendf(b, "%.1f,%.1f ", px(&f, (double)i), py(&f, v));
        }
        loom_buf_append_str(b, "\"/>\n");
    }
    for (size_t i = 0; i < r->nsteps; i++) {
        double v = (double)(r->steps[i].end_ns - r->steps[i].start_ns) / 1e6;
        loom_buf_appendf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"2.5\" fill=\"%s\"/>\n",
                         px(&f, (double)i), py(&f, v), i < s->warmup_steps ? "#ff7f0e" : "#1f77b4");
    }
    loom_buf_append_str(b, "</svg>\n");
}

void prof_roofline_svg(const loom_prof_roofline_t *rf, const char *device, loom_buf_t *b)
{
    frame_t f = {.x = 70, .y = 40, .w = 640, .h = 380, .xlog = true, .ylog = true};
    /* x: a decade beyond the run's intensity and the ridge on each side. */
    double lo = fmin(rf->intensity, rf->ridge), hi = fmax(rf->intensity, rf->ridge);
    f.x0 = floor(log10(lo)) - 1;
    f.x1 = ceil(log10(hi)) + 1;
    /* y: from the lowest of the achieved rates and the memory roof at the
     * left edge to above the peak. */
    double ylo = fmin(rf->achieved_flops, pow(10, f.x0) * rf->peak_bw);
    if (rf->achieved_flops_cpu > 0)
        ylo = fmin(ylo, rf->achieved_flops_cpu);
    f.y0 = floor(log10(ylo));
    f.y1 = ceil(log10(rf->peak_flops * 1.5));
    if (f.y1 - f.y0 > 6) /* keep the interesting part legible */
        f.y0 = f.y1 - 6;
    svg_open(b, f.x + f.w + 20, f.y + f.h + 90);
    loom_buf_appendf(b, "<text x=\"%.0f\" y=\"16\">Roofline of ", f.x);
    prof_svg_text(b, device[0] ? device : "the device");
    loom_buf_appendf(b,
                     ": peak %.4g GFLOP/s, %.4g GB/s, ridge at %.3g FLOP/byte</text>\n"
                     "<text x=\"%.0f\" y=\"30\">run: intensity %.3g FLOP/byte, achieved %.4g "
                     "GFLOP/s (%.1f%% of the roof above it), %s-bound</text>\n",
                     rf->peak_flops / 1e9, rf->peak_bw / 1e9, rf->ridge, f.x, rf->intensity,
                     rf->achieved_flops / 1e9, 100 * rf->fraction,
                     rf->memory_bound ? "memory" : "compute");
    axes(b, &f, "arithmetic intensity, FLOP/byte", "GFLOP/s", 1e9);
    loom_buf_appendf(b,
                     "<clipPath id=\"plot\"><rect x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" "
                     "height=\"%.1f\"/></clipPath>\n<g clip-path=\"url(#plot)\">\n",
                     f.x, f.y, f.w, f.h);
    double xl = pow(10, f.x0), xr = pow(10, f.x1);
    loom_buf_appendf(b,
                     "<polyline fill=\"none\" stroke=\"#d62728\" stroke-width=\"2\" "
                     "points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\"/>\n",
                     px(&f, xl), py(&f, xl * rf->peak_bw), px(&f, rf->ridge),
                     py(&f, rf->peak_flops), px(&f, xr), py(&f, rf->peak_flops));
    loom_buf_appendf(b,
                     "<line x1=\"%.1f\" y1=\"%.1f\" x2=\"%.1f\" y2=\"%.1f\" stroke=\"#1f77b4\" "
                     "stroke-dasharray=\"3 3\"/>\n",
                     px(&f, rf->intensity), py(&f, rf->attainable), px(&f, rf->intensity),
                     f.y + f.h);
    loom_buf_appendf(b, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"#1f77b4\"/>\n",
                     px(&f, rf->intensity), py(&f, rf->achieved_flops));
    if (rf->achieved_flops_cpu > 0)
        loom_buf_appendf(b,
                         "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"5\" fill=\"none\" "
                         "stroke=\"#1f77b4\" stroke-width=\"1.5\"/>\n",
                         px(&f, rf->intensity), py(&f, rf->achieved_flops_cpu));
    loom_buf_append_str(b, "</g>\n");
    loom_buf_appendf(b,
                     "<text x=\"%.0f\" y=\"%.0f\">red: the roof, min(peak FLOP/s, intensity x "
                     "bandwidth); filled dot: FLOPs per step / mean steady step time</text>\n",
                     f.x, f.y + f.h + 50);
    if (rf->achieved_flops_cpu > 0)
        loom_buf_appendf(b,
                         "<text x=\"%.0f\" y=\"%.0f\">ring: FLOPs per step / mean steady step "
                         "CPU time of the workload (its rate while it ran)</text>\n",
                         f.x, f.y + f.h + 66);
    loom_buf_append_str(b, "</svg>\n");
}
