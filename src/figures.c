/* figures.c - the report's figures as SVG files (see figures.h).
 *
 * Each figure is a frame (the plot area, and the data its edges stand
 * for) with axes, ticks and a legend, and the points of the results in
 * it. Nothing here computes a figure: every value drawn is a field of a
 * run_result as the report prints it (speedup, the four percentages, the
 * loss curve, the stage timeline). Each point also carries that value as
 * text (data-x, data-y, data-pct, data-t0, ...), and the frame its range
 * (data-x0 .. data-y1), so a test reads the drawing back and holds it to
 * the JSON report.
 */
#include "figures.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "outfile.h"
#include "mode.h"
#include "pipeline.h"
#include "probe.h"

#define FIG_W 900
#define FIG_H 440
#define LEGEND_W 310 /* the legend's column, right of the plot */

/* Colours of the lines and points, in turn; of the time split, as the UI's
 * default theme tells them apart. */
static const char *const palette[] = {"#4c72b0", "#dd8452", "#55a868", "#c44e52", "#8172b3",
                                      "#937860", "#da8bc3", "#8c8c8c", "#ccb974", "#64b5cd"};
#define NPALETTE ((int)(sizeof(palette) / sizeof(palette[0])))
static const char *const cat_colour[CAT_COUNT] = {
    [CAT_DATA] = "#937860",      [CAT_FORWARD] = "#4c72b0", [CAT_BACKWARD] = "#dd8452",
    [CAT_OPTIMIZER] = "#8172b3", [CAT_COMM] = "#55a868",    [CAT_WAIT] = "#c44e52",
};

/* The split's parts, bottom to top, as the report names them. */
static const struct {
    const char *name, *colour;
    size_t at; /* offsetof the percentage in struct split_pct */
} parts[] = {
    {"compute", "#4c72b0", offsetof(struct split_pct, compute)},
    {"comm", "#55a868", offsetof(struct split_pct, comm)},
    {"data", "#937860", offsetof(struct split_pct, data)},
    {"idle", "#cccccc", offsetof(struct split_pct, idle)},
};
#define NPARTS ((int)(sizeof(parts) / sizeof(parts[0])))

static double part_pct(const struct run_result *r, int k)
{
    return *(const double *)((const char *)&r->split + parts[k].at);
}

/* The plot area in pixels and the data its edges stand for. */
struct frame {
    double px0, px1, py0, py1; /* left, right, bottom, top (py0 > py1) */
    double x0, x1, y0, y1;
};

static double fx(const struct frame *f, double x)
{
    return f->px0 + (x - f->x0) / (f->x1 - f->x0) * (f->px1 - f->px0);
}

static double fy(const struct frame *f, double y)
{
    return f->py0 - (y - f->y0) / (f->y1 - f->y0) * (f->py0 - f->py1);
}

/* A tick step of 1, 2 or 5 times a power of ten that cuts 0..top in about
 * five, and top rounded up to it. */
static double tick_step(double top)
{
    if (!(top > 0) || !isfinite(top))
        return 1;
    double raw = top / 5, mag = pow(10, floor(log10(raw))), norm = raw / mag;
    return (norm <= 1 ? 1 : norm <= 2 ? 2 : norm <= 5 ? 5 : 10) * mag;
}

static double nice_top(double top)
{
    double step = tick_step(top);
    return top > 0 && isfinite(top) ? ceil(top / step - 1e-9) * step : 1;
}

/* XML text: the five characters that would end it escaped. */
static void xml_text(FILE *f, const char *s)
{
    for (; s && *s; s++)
        switch (*s) {
        case '&':
            fputs("&amp;", f);
            break;
        case '<':
            fputs("&lt;", f);
            break;
        case '>':
            fputs("&gt;", f);
            break;
        case '"':
            fputs("&quot;", f);
            break;
        case '\'':
            fputs("&apos;", f);
            break;
        default:
            fputc(*s, f);
        }
}

static void svg_begin(FILE *f, const char *title, const char *subtitle)
{
    fprintf(f,
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
            "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" "
            "font-family=\"sans-serif\" font-size=\"12\">\n<title>",
            FIG_W, FIG_H, FIG_W, FIG_H);
    xml_text(f, title);
    fprintf(f, "</title>\n<rect width=\"%d\" height=\"%d\" fill=\"white\"/>\n", FIG_W, FIG_H);
    fprintf(f, "<text x=\"%d\" y=\"20\" font-size=\"15\" font-weight=\"bold\">", 16);
    xml_text(f, title);
    fputs("</text>\n", f);
    if (subtitle && subtitle[0]) {
        fprintf(f, "<text x=\"%d\" y=\"37\" fill=\"#555\">", 16);
        xml_text(f, subtitle);
        fputs("</text>\n", f);
    }
}

static struct frame frame_at(double x0, double x1, double y0, double y1)
{
    return (struct frame){
        .px0 = 70, .px1 = FIG_W - LEGEND_W, .py0 = FIG_H - 56, .py1 = 52, .x0 = x0, .x1 = x1, .y0 = y0, .y1 = y1};
}

/* The frame with its data range, the y axis's ticks and grid and the x
 * axis's ticks (none for a step of 0: categories), and the axes' names. */
static void draw_frame(FILE *f, const struct frame *fr, double xstep, double ystep, const char *xname,
                       const char *xunit, const char *yname)
{
    for (double y = fr->y0; ystep > 0 && y <= fr->y1 + ystep * 1e-6; y += ystep) {
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#e4e4e4\"/>\n", fr->px0, fy(fr, y),
                fr->px1, fy(fr, y));
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#333\">%g</text>\n", fr->px0 - 6,
                fy(fr, y) + 4, y);
    }
    for (double x = fr->x0; xstep > 0 && x <= fr->x1 + xstep * 1e-6; x += xstep) {
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#444\"/>\n", fx(fr, x), fr->py0,
                fx(fr, x), fr->py0 + 5);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" fill=\"#333\">%g</text>\n", fx(fr, x),
                fr->py0 + 18, x);
    }
    fprintf(f,
            "<rect class=\"frame\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"none\" stroke=\"#444\" "
            "data-x0=\"%.17g\" data-x1=\"%.17g\" data-y0=\"%.17g\" data-y1=\"%.17g\" data-xunit=\"%s\"/>\n",
            fr->px0, fr->py1, fr->px1 - fr->px0, fr->py0 - fr->py1, fr->x0, fr->x1, fr->y0, fr->y1, xunit);
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">", (fr->px0 + fr->px1) / 2, fr->py0 + 38.0);
    xml_text(f, xname);
    fprintf(f, "</text>\n<text transform=\"translate(18 %.2f) rotate(-90)\" text-anchor=\"middle\">",
            (fr->py0 + fr->py1) / 2);
    xml_text(f, yname);
    fputs("</text>\n", f);
}

/* Legend row k: a swatch (a line, or a box) and its text. */
static void legend(FILE *f, int k, const char *colour, int box, const char *dash, const char *text)
{
    double x = FIG_W - LEGEND_W + 16, y = 60 + 18.0 * k;
    if (box)
        fprintf(f, "<rect x=\"%.2f\" y=\"%.2f\" width=\"14\" height=\"10\" fill=\"%s\"/>\n", x, y - 9, colour);
    else
        fprintf(f, "<line x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"%s\" stroke-width=\"2\"%s%s%s/>\n",
                x, y - 4, x + 14, y - 4, colour, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
                dash ? "\"" : "");
    fprintf(f, "<text x=\"%.2f\" y=\"%.2f\">", x + 20, y);
    xml_text(f, text);
    fputs("</text>\n", f);
}

/* "lenet ddp" (or "lenet pipe-1f1b/4"): what a line of the speedup plot
 * holds; its scaling kind too, so a line is one kind of scaling. */
static void series_name(const struct run_result *r, char *buf, size_t n)
{
    char mode[48];
    snprintf(buf, n, "%s %s over %s (%s)", r->cfg.model[0] ? r->cfg.model : "?",
             train_mode_label(&r->cfg, mode, sizeof(mode)), result_comm(r), scaling_name(r->scaling));
}

/* "run 2: lenet ddp, 2 ranks x 32" */
static void run_name(const struct run_result *res, int i, char *buf, size_t n)
{
    const struct run_result *r = &res[i];
    char mode[48];
    int replicas = train_mode_replicas(&r->cfg, r->world);
    snprintf(buf, n, "run %d: %s %s over %s, %d rank%s x %d", i, r->cfg.model[0] ? r->cfg.model : "?",
             train_mode_label(&r->cfg, mode, sizeof(mode)), result_comm(r), r->world, r->world == 1 ? "" : "s",
             replicas > 0 ? r->global_batch / replicas : 0);
}

#define MAX_SERIES 16

/* Whether run j is drawn in the series of run i (the runs compared
 * against a baseline other than themselves: model, way of training and
 * kind of scaling), as one of them or as the baseline of one of them. */
static int in_series(const struct run_result *res, int n, int i, int j)
{
    char a[160], b[160];
    series_name(&res[i], a, sizeof(a));
    for (int k = 0; k < n; k++) {
        if (!res[k].speedup_valid || res[k].base_run == k)
            continue;
        series_name(&res[k], b, sizeof(b));
        if (strcmp(a, b) == 0 && (k == j || res[k].base_run == j))
            return 1;
    }
    return 0;
}

static int fig_speedup(FILE *f, const struct run_result *res, int n)
{
    int maxw = 2, any = 0;
    double maxs = 0;
    for (int i = 0; i < n; i++)
        if (res[i].speedup_valid) {
            any |= res[i].base_run != i;
            maxw = res[i].world > maxw ? res[i].world : maxw;
            maxs = res[i].speedup > maxs ? res[i].speedup : maxs;
        }
    if (!any)
        return 0; /* (only runs that are their own baseline: nothing scales) */
    svg_begin(f, "Speedup against ranks",
              "the report's speedup column, against its baseline run; dashed: the ideal, speedup = ranks");
    struct frame fr = frame_at(0, maxw, 0, nice_top(maxs > maxw ? maxs : maxw));
    draw_frame(f, &fr, maxw <= 16 ? 1 : tick_step(maxw), tick_step(fr.y1), "ranks", "ranks", "speedup (x)");
    fprintf(f,
            "<line class=\"ideal\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#888\" "
            "stroke-dasharray=\"6 4\" data-x0=\"1\" data-y0=\"1\" data-x1=\"%d\" data-y1=\"%d\"/>\n",
            fx(&fr, 1), fy(&fr, 1), fx(&fr, maxw), fy(&fr, maxw), maxw, maxw);
    legend(f, 0, "#888", 0, "6 4", "ideal (speedup = ranks)");
    char names[MAX_SERIES][160];
    int nseries = 0;
    for (int i = 0; i < n && nseries < MAX_SERIES; i++) {
        if (!res[i].speedup_valid || res[i].base_run == i)
            continue;
        char name[160];
        series_name(&res[i], name, sizeof(name));
        int s = 0;
        while (s < nseries && strcmp(names[s], name))
            s++;
        if (s < nseries)
            continue; /* drawn already */
        snprintf(names[nseries++], sizeof(names[0]), "%s", name);
        const char *colour = palette[s % NPALETTE];
        /* the series' runs and their baselines by rank count: its line, then its points */
        int order[1024], k = 0;
        for (int j = 0; j < n && k < 1024; j++) {
            if (!res[j].speedup_valid || !in_series(res, n, i, j))
                continue;
            int at = k++;
            while (at > 0 && res[order[at - 1]].world > res[j].world) {
                order[at] = order[at - 1];
                at--;
            }
            order[at] = j;
        }
        fprintf(f, "<g class=\"series\" data-series=\"");
        xml_text(f, name);
        fprintf(f, "\">\n<polyline fill=\"none\" stroke=\"%s\" stroke-width=\"2\" points=\"", colour);
        for (int m = 0; m < k; m++)
            fprintf(f, "%s%.2f,%.2f", m ? " " : "", fx(&fr, res[order[m]].world), fy(&fr, res[order[m]].speedup));
        fputs("\"/>\n", f);
        for (int m = 0; m < k; m++) {
            const struct run_result *r = &res[order[m]];
            char what[200];
            run_name(res, order[m], what, sizeof(what));
            fprintf(f,
                    "<circle class=\"point\" cx=\"%.2f\" cy=\"%.2f\" r=\"4\" fill=\"%s\" data-run=\"%d\" "
                    "data-x=\"%d\" data-y=\"%.17g\"><title>",
                    fx(&fr, r->world), fy(&fr, r->speedup), colour, order[m], r->world, r->speedup);
            xml_text(f, what);
            fprintf(f, ": %.2fx, efficiency %.1f%% against run %d</title></circle>\n", r->speedup, r->efficiency,
                    r->base_run);
        }
        fputs("</g>\n", f);
        legend(f, nseries, colour, 0, NULL, name);
    }
    fputs("</svg>\n", f);
    return 1;
}

static int fig_loss(FILE *f, const struct run_result *res, int n)
{
    int any = 0, epochs = 1;
    for (int i = 0; i < n; i++)
        if (res[i].nloss > 0) {
            any = 1;
            epochs &= res[i].steps_per_epoch > 0;
        }
    if (!any)
        return 0;
    double maxx = 0, maxy = 0;
    for (int i = 0; i < n; i++)
        for (int k = 0; k < res[i].nloss; k++) {
            const struct loss_point *p = &res[i].loss_curve[k];
            double x = epochs ? (double)p->step / (double)res[i].steps_per_epoch : (double)p->step;
            maxx = x > maxx ? x : maxx;
            if (isfinite(p->loss) && p->loss > maxy)
                maxy = p->loss;
        }
    svg_begin(f, epochs ? "Training loss against epochs" : "Training loss against steps",
              "the running mean of the last 50 steps' loss (the report's train_loss is each line's end)");
    struct frame fr = frame_at(0, nice_top(maxx), 0, nice_top(maxy));
    draw_frame(f, &fr, tick_step(fr.x1), tick_step(fr.y1), epochs ? "epochs" : "steps", epochs ? "epoch" : "step",
               "training loss");
    int row = 0;
    /* --loss-threshold: the level the report's threshold_epoch is about */
    for (int i = 0; i < n; i++) {
        double th = res[i].cfg.loss_threshold;
        int dup = 0;
        for (int j = 0; j < i; j++)
            dup |= res[j].cfg.loss_threshold == th && res[j].nloss > 0;
        if (res[i].nloss == 0 || !(th > 0) || dup || th > fr.y1)
            continue;
        fprintf(f,
                "<line class=\"threshold\" x1=\"%.2f\" y1=\"%.2f\" x2=\"%.2f\" y2=\"%.2f\" stroke=\"#888\" "
                "stroke-dasharray=\"2 3\" data-y=\"%.17g\"/>\n",
                fr.px0, fy(&fr, th), fr.px1, fy(&fr, th), th);
        char what[64];
        snprintf(what, sizeof(what), "--loss-threshold %g", th);
        legend(f, row++, "#888", 0, "2 3", what);
    }
    for (int i = 0; i < n; i++) {
        const struct run_result *r = &res[i];
        if (r->nloss == 0)
            continue;
        const char *colour = palette[i % NPALETTE];
        fprintf(f,
                "<polyline class=\"loss\" fill=\"none\" stroke=\"%s\" stroke-width=\"1.5\" data-run=\"%d\" points=\"",
                colour, i);
        int first = 1;
        for (int k = 0; k < r->nloss; k++) {
            const struct loss_point *p = &r->loss_curve[k];
            double x = epochs ? (double)p->step / (double)r->steps_per_epoch : (double)p->step;
            if (!isfinite(p->loss))
                continue; /* (a diverged step: no point to draw) */
            fprintf(f, "%s%.2f,%.2f", first ? "" : " ", fx(&fr, x), fy(&fr, p->loss));
            first = 0;
        }
        /* the values drawn: the steps (x = step / data-steps-per-epoch in epochs) and losses */
        fprintf(f, "\" data-steps-per-epoch=\"%ld\" data-step=\"", epochs ? r->steps_per_epoch : 0L);
        first = 1;
        for (int k = 0; k < r->nloss; k++)
            if (isfinite(r->loss_curve[k].loss)) {
                fprintf(f, "%s%ld", first ? "" : " ", r->loss_curve[k].step);
                first = 0;
            }
        fputs("\" data-y=\"", f);
        first = 1;
        for (int k = 0; k < r->nloss; k++)
            if (isfinite(r->loss_curve[k].loss)) {
                fprintf(f, "%s%.17g", first ? "" : " ", (double)r->loss_curve[k].loss);
                first = 0;
            }
        char what[200];
        run_name(res, i, what, sizeof(what));
        fputs("\"><title>", f);
        xml_text(f, what);
        fputs("</title></polyline>\n", f);
        legend(f, row++, colour, 0, NULL, what);
    }
    fputs("</svg>\n", f);
    return 1;
}

static int fig_breakdown(FILE *f, const struct run_result *res, int n)
{
    int shown[1024], k = 0;
    for (int i = 0; i < n && k < 1024; i++) {
        double sum = 0;
        for (int p = 0; p < NPARTS; p++)
            sum += part_pct(&res[i], p);
        if (sum > 0)
            shown[k++] = i;
    }
    if (k == 0)
        return 0;
    svg_begin(f, "Where the time goes", "compute, exposed comm, data and idle as % of wall, each run's ranks summed");
    struct frame fr = frame_at(0, k, 0, 100);
    draw_frame(f, &fr, 0, 20, "runs", "run", "% of wall");
    double slot = (fr.px1 - fr.px0) / k, bw = slot * 0.6 < 60 ? slot * 0.6 : 60;
    for (int j = 0; j < k; j++) {
        const struct run_result *r = &res[shown[j]];
        double x = fr.px0 + slot * j + (slot - bw) / 2, acc = 0;
        char what[200], mode[48];
        run_name(res, shown[j], what, sizeof(what));
        fprintf(f, "<g class=\"bar\" data-run=\"%d\"><title>", shown[j]);
        xml_text(f, what);
        fputs("</title>\n", f);
        for (int p = 0; p < NPARTS; p++) {
            double v = part_pct(r, p), top = fy(&fr, acc + v), bottom = fy(&fr, acc);
            fprintf(f,
                    "<rect class=\"part\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\" fill=\"%s\" "
                    "data-run=\"%d\" data-part=\"%s\" data-pct=\"%.17g\"><title>%s %.1f%%</title></rect>\n",
                    x, top, bw, bottom - top, parts[p].colour, shown[j], parts[p].name, v, parts[p].name, v);
            acc += v;
        }
        fprintf(f, "</g>\n<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\">%d</text>\n", x + bw / 2, fr.py0 + 16,
                shown[j]);
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"10\" fill=\"#555\">", x + bw / 2,
                fr.py0 + 28);
        xml_text(f, train_mode_label(&r->cfg, mode, sizeof(mode)));
        fprintf(f, " %dr</text>\n", r->world);
    }
    for (int p = NPARTS - 1, row = 0; p >= 0; p--, row++)
        legend(f, row, parts[p].colour, 1, NULL, parts[p].name);
    fputs("</svg>\n", f);
    return 1;
}

/* Run i's stages over its last step: a row per stage, compute full
 * height, sends and receives (and the waits inside them) in a lower band. */
static int fig_timeline(FILE *f, const struct run_result *res, int i)
{
    const struct run_result *r = &res[i];
    if (r->ntimeline == 0)
        return 0;
    int stages = 1;
    double maxt = 0;
    for (int k = 0; k < r->ntimeline; k++) {
        stages = r->timeline[k].stage + 1 > stages ? r->timeline[k].stage + 1 : stages;
        maxt = r->timeline[k].t1_ms > maxt ? r->timeline[k].t1_ms : maxt;
    }
    char title[200], what[200];
    run_name(res, i, what, sizeof(what));
    snprintf(title, sizeof(title), "Stages over step %ld", r->timeline_step);
    svg_begin(f, title, what);
    struct frame fr = frame_at(0, nice_top(maxt), 0, stages);
    /* (y: stage s is the band from s to s + 1, stage 0 on top) */
    draw_frame(f, &fr, tick_step(fr.x1), 0, "ms from the step's first span", "ms", "stage");
    double band = (fr.py0 - fr.py1) / stages;
    int seen[64][CAT_COUNT];
    memset(seen, 0, sizeof(seen));
    for (int k = 0; k < 2 * r->ntimeline; k++) {
        /* (the waits second: over the sends and receives they are inside) */
        const struct timeline_span *t = &r->timeline[k % r->ntimeline];
        if (t->cat < 0 || t->cat >= CAT_COUNT || t->stage < 0 || t->stage >= 64 ||
            (t->cat == CAT_WAIT) != (k >= r->ntimeline))
            continue;
        int low = t->cat == CAT_COMM || t->cat == CAT_WAIT;
        double top = fr.py1 + band * t->stage + band * (low ? 0.62 : 0.12), h = band * (low ? 0.26 : 0.46);
        double x0 = fx(&fr, t->t0_ms), x1 = fx(&fr, t->t1_ms);
        int nth = seen[t->stage][t->cat]++;
        fprintf(f,
                "<rect class=\"span\" x=\"%.3f\" y=\"%.2f\" width=\"%.3f\" height=\"%.2f\" fill=\"%s\" "
                "data-stage=\"%d\" data-cat=\"%s\" data-t0=\"%.17g\" data-t1=\"%.17g\"><title>stage %d %s",
                x0, top, x1 - x0, h, cat_colour[t->cat], t->stage, cat_name(t->cat), t->t0_ms, t->t1_ms, t->stage,
                cat_name(t->cat));
        if (t->cat == CAT_FORWARD || t->cat == CAT_BACKWARD)
            fprintf(f, " %d", nth);
        fprintf(f, ": %.3f-%.3f ms</title></rect>\n", t->t0_ms, t->t1_ms);
        /* forwards and backwards in the schedule's order: the k-th is micro-batch k */
        if ((t->cat == CAT_FORWARD || t->cat == CAT_BACKWARD) && x1 - x0 >= 16)
            fprintf(f,
                    "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"middle\" font-size=\"10\" fill=\"white\">%c%d</text>\n",
                    (x0 + x1) / 2, top + h / 2 + 3.5, t->cat == CAT_FORWARD ? 'F' : 'B', nth);
    }
    for (int s = 0; s < stages; s++)
        fprintf(f, "<text x=\"%.2f\" y=\"%.2f\" text-anchor=\"end\" fill=\"#333\">%d</text>\n", fr.px0 - 8,
                fr.py1 + band * (s + 0.5) + 4, s);
    static const int order[] = {CAT_FORWARD, CAT_BACKWARD, CAT_OPTIMIZER, CAT_DATA, CAT_COMM, CAT_WAIT};
    for (int k = 0; k < (int)(sizeof(order) / sizeof(order[0])); k++)
        legend(f, k, cat_colour[order[k]], 1, NULL, order[k] == CAT_COMM ? "send / recv" : cat_name(order[k]));
    fputs("</svg>\n", f);
    return 1;
}

int figures_can_write(const char *dir)
{
    struct stat st;
    if (stat(dir, &st) == 0)
        return !S_ISDIR(st.st_mode) ? ENOTDIR : access(dir, W_OK | X_OK) == 0 ? 0 : errno;
    if (errno != ENOENT)
        return errno;
    char parent[4096];
    snprintf(parent, sizeof(parent), "%s", dir);
    size_t len = strlen(parent);
    while (len > 1 && parent[len - 1] == '/')
        parent[--len] = 0;
    char *slash = strrchr(parent, '/');
    if (slash)
        slash[slash == parent] = 0; /* ("/plots": the root) */
    const char *p = slash ? parent : ".";
    if (stat(p, &st) != 0)
        return errno;
    return !S_ISDIR(st.st_mode) ? ENOTDIR : access(p, W_OK | X_OK) == 0 ? 0 : errno;
}

/* One figure into dir/name: 1 written, 0 nothing to draw (no file), -1 err. */
static int one_figure(const char *dir, const char *name, int (*draw)(FILE *, const struct run_result *, int),
                      const struct run_result *res, int n, int i, char *err, size_t errlen)
{
    char path[4200];
    snprintf(path, sizeof(path), "%s/%s", dir, name);
    /* drawn in memory first: a figure with nothing to draw leaves no file */
    char *text = NULL;
    size_t len = 0;
    FILE *mem = open_memstream(&text, &len);
    if (!mem) {
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    int drawn = draw ? draw(mem, res, n) : fig_timeline(mem, res, i);
    if (fclose(mem) != 0) {
        free(text);
        snprintf(err, errlen, "%s: out of memory", path);
        return -1;
    }
    if (!drawn) {
        free(text);
        return 0;
    }
    /* a new file renamed into place: never through a link, never half a figure */
    int rc = outfile_write(path, text, len, err, errlen);
    free(text);
    if (rc != 0)
        return -1;
    return 1;
}

/* The figures of every run, in the order the files are written. */
static const struct {
    const char *name;
    int (*draw)(FILE *, const struct run_result *, int);
} figs[] = {{"speedup.svg", fig_speedup}, {"loss.svg", fig_loss}, {"breakdown.svg", fig_breakdown}};
#define NFIGS ((int)(sizeof(figs) / sizeof(figs[0])))

int figures_fixed(void)
{
    return NFIGS;
}

const char *figures_file_name(int k, char *buf, size_t n)
{
    if (k < NFIGS)
        snprintf(buf, n, "%s", figs[k].name);
    else
        snprintf(buf, n, "timeline-run%d.svg", k - NFIGS);
    return buf;
}

int figures_write(const char *dir, const struct run_result *res, int n, char *done, size_t donelen, char *err,
                  size_t errlen)
{
    if (donelen)
        done[0] = 0;
    if (mkdir(dir, 0777) != 0 && errno != EEXIST) {
        snprintf(err, errlen, "cannot make %s: %s", dir, strerror(errno));
        return -1;
    }
    size_t used = 0;
    for (int k = 0; k < NFIGS + n; k++) {
        char name[48];
        int whole = k < NFIGS; /* a figure of every run, or run k - NFIGS's timeline */
        figures_file_name(k, name, sizeof(name));
        int rc = one_figure(dir, name, whole ? figs[k].draw : NULL, res, n, k - NFIGS, err, errlen);
        if (rc < 0)
            return -1;
        if (rc > 0 && used < donelen)
            used += (size_t)snprintf(done + used, donelen - used, "%s%s", used ? ", " : "", name);
    }
    return 0;
}

int figures_save(const char *dir, const struct run_result *res, int n, int quiet)
{
    char done[2048], err[4400];
    if (figures_write(dir, res, n, done, sizeof(done), err, sizeof(err)) != 0) {
        fprintf(stderr, "ddptop: --plot: %s\n", err);
        return 1;
    }
    if (!quiet)
        fprintf(stderr, "ddptop: --plot: %s%s%s\n", done[0] ? done : "nothing to draw", done[0] ? " in " : "",
                done[0] ? dir : "");
    return 0;
}
