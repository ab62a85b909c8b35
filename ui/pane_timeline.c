/* pane_timeline.c - one swim-lane per rank and lane (main, and comm, data
 * or gpu when the rank used them) over the last K steps, coloured and
 * glyphed by category, with a time axis in ms.
 *
 * Each cell shows the category that took most of its time (idle when
 * nothing covered most of it), so what is drawn is a faithful downsampling:
 * a comm chunk far shorter than a cell disappears at this zoom, and `+`
 * brings it back. Wait spans nest inside a collective's comm span; their
 * time is taken out of comm, so a rank blocked on a straggler shows wait.
 *
 * The work per frame is bounded: one pass over each rank's span history
 * (METRICS_HISTORY spans) to find the window, one per visible lane.
 */
#include <stdio.h>
#include <string.h>

#include "config.h"
#include "panes.h"

#define LABEL_W 8
#define TL_MAX_STEPS 64

/* Per cell and category: nanoseconds covered. One lane at a time. */
static int64_t g_acc[CANVAS_MAX_W][CAT_COUNT];

static const char *const lane_short[LANE_COUNT] = {"main", "comm", "data", "gpu"};
_Static_assert(LANE_COUNT == 4, "one short name per lane");

/* The rank and lane of visible lane number k (main first, then the others
 * the rank used). Returns 0 when k is past the end. */
static int lane_at(const struct snap *s, int k, int *rank, int *lane)
{
    for (int i = 0; i < s->world; i++) {
        unsigned m = s->ranks[i].lanes | 1u;
        for (int l = 0; l < LANE_COUNT; l++) {
            if (!((m >> l) & 1u))
                continue;
            if (k-- == 0) {
                *rank = i;
                *lane = l;
                return 1;
            }
        }
    }
    return 0;
}

/* Visible lane k's rank, or -1 past the end. */
static int rank_of_lane(const struct snap *s, int k)
{
    int rank, lane;
    return lane_at(s, k, &rank, &lane) ? rank : -1;
}

/* What lanes [first, last] leave out: whole ranks when the cut falls
 * between ranks, else lanes (the unit the arrows scroll by). */
static void hidden_note(char *buf, size_t n, const struct snap *s, int first, int last, int focused)
{
    int nl = snap_lanes(s);
    int above = first, below = nl - 1 - last;
    int r_first = rank_of_lane(s, first), r_last = rank_of_lane(s, last);
    int whole = (above == 0 || rank_of_lane(s, first - 1) != r_first) &&
                (below == 0 || rank_of_lane(s, last + 1) != r_last) && r_first >= 0 && r_last >= 0;
    if (whole && last >= first)
        fmt_hidden(buf, n, above ? r_first : 0, below ? s->world - 1 - r_last : 0, "rank", focused, draw_utf8());
    else
        fmt_hidden(buf, n, above, below, "lane", focused, draw_utf8());
}

static uint64_t hist_count(const struct snap_rank *r)
{
    return r->nhist < METRICS_HISTORY ? r->nhist : METRICS_HISTORY;
}

/* Nice tick spacing (1, 2 or 5 x 10^k ms) for about one label per 12 cells. */
static double tick_ms(double span_ms, int cells)
{
    double raw = span_ms * 12.0 / (cells > 0 ? cells : 1), step = 1e-3;
    while (step < raw) {
        if (step * 2 >= raw)
            return step * 2;
        if (step * 5 >= raw)
            return step * 5;
        step *= 10;
    }
    return step;
}

static void draw_lane(WINDOW *w, const struct snap_rank *r, int lane, uint32_t s_lo, uint32_t s_hi, int64_t t0,
                      int64_t t1, int y, int x, int pw, int lane_h)
{
    memset(g_acc, 0, sizeof(g_acc[0]) * (size_t)pw);
    double cell_ns = (double)(t1 - t0) / pw;
    uint64_t n = hist_count(r);
    for (uint64_t k = 0; k < n; k++) {
        const struct span *sp = &r->hist[k];
        if (sp->lane != lane || sp->step < s_lo || sp->step > s_hi || sp->cat >= CAT_COUNT)
            continue;
        int64_t a = sp->t0_ns < t0 ? t0 : sp->t0_ns, b = sp->t1_ns > t1 ? t1 : sp->t1_ns;
        if (b <= a)
            continue;
        int c0 = (int)((double)(a - t0) / cell_ns), c1 = (int)((double)(b - t0) / cell_ns);
        if (c1 >= pw)
            c1 = pw - 1;
        for (int c = c0; c <= c1; c++) {
            int64_t ca = t0 + (int64_t)(c * cell_ns), cb = t0 + (int64_t)((c + 1) * cell_ns);
            int64_t lo = a > ca ? a : ca, hi = b < cb ? b : cb;
            if (hi <= lo)
                continue;
            g_acc[c][sp->cat] += hi - lo;
            /* the innermost span decides: a wait inside a collective is not comm */
            if (sp->cat == CAT_WAIT)
                g_acc[c][CAT_COMM] -= hi - lo;
        }
    }
    for (int c = 0; c < pw; c++) {
        int64_t covered = 0, best = -1;
        int cat = CAT_COUNT;
        for (int k = 0; k < CAT_COUNT; k++) {
            int64_t v = g_acc[c][k] > 0 ? g_acc[c][k] : 0;
            covered += v;
            if (v > best) {
                best = v;
                cat = k;
            }
        }
        int64_t idle = (int64_t)cell_ns - covered;
        if (best <= 0 || idle > best)
            cat = CAT_COUNT;
        for (int j = 0; j < lane_h; j++)
            draw_cell(w, y + j, x + c, draw_cat_glyph(cat), draw_cat_el(cat));
    }
}

/* The newest step every rank has reported (*newest), and the oldest step
 * whose spans are still whole in every rank's history (*oldest). */
static void whole_steps(const struct snap *s, long *newest_out, long *oldest_out)
{
    long newest = s->steps_done - 1, oldest = 0;
    int gpu_whole = 0; /* GPU ranks seen so far */
    for (int i = 0; i < s->world; i++) {
        /* device records arrive in CUPTI's buffers, well after the host
         * reported the step, and a GPU rank's steps close later still
         * (METRICS_GPU_LATE_NS): there a step is drawn once the step after
         * it has host spans and device records, so that its lanes are
         * whole, closed or not */
        const struct snap_rank *r = &s->ranks[i];
        uint64_t n = hist_count(r);
        long gpu_newest = -1, host_newest = -1;
        for (uint64_t k = 0; k < n; k++) {
            long st = (long)r->hist[k].step;
            if (r->hist[k].lane == LANE_GPU)
                gpu_newest = st > gpu_newest ? st : gpu_newest;
            else
                host_newest = st > host_newest ? st : host_newest;
        }
        if (gpu_newest >= 0) {
            long whole = (gpu_newest < host_newest ? gpu_newest : host_newest) - 1;
            /* --cupti-sample: once the host is past a window, its newest
             * traced step is whole (its records came in one delivery) */
            if (s->cupti_sample > 1 && host_newest > gpu_newest + 1)
                whole = gpu_newest;
            newest = gpu_whole++ == 0 || whole < newest ? whole : newest;
        }
    }
    for (int i = 0; i < s->world; i++) {
        const struct snap_rank *r = &s->ranks[i];
        uint64_t n = hist_count(r);
        if (r->nhist <= METRICS_HISTORY || n == 0)
            continue;
        uint32_t mn = UINT32_MAX;
        for (uint64_t k = 0; k < n; k++)
            if (r->hist[k].step < mn)
                mn = r->hist[k].step;
        if ((long)mn + 1 > oldest)
            oldest = (long)mn + 1; /* its first spans may be overwritten */
    }
    *newest_out = newest;
    *oldest_out = oldest;
}

/* The time axis of a window span_ms long, pw cells from (ay, ax): ticks,
 * and their labels in ms where they fit. */
static void draw_axis(WINDOW *w, int ay, int ax, int pw, double span_ms)
{
    double step = tick_ms(span_ms, pw);
    draw_hfill(w, ay, ax, pw, draw_utf8() ? L'─' : L'-', TH_AXIS);
    int next_free = 0;
    for (int t = 0;; t++) {
        double ms = t * step;
        if (ms > span_ms)
            break;
        int c = (int)(ms / span_ms * (pw - 1) + 0.5);
        if (c < next_free)
            continue;
        char lab[24];
        snprintf(lab, sizeof(lab), "%g", ms);
        draw_cell(w, ay, ax + c, draw_utf8() ? L'┴' : L'|', TH_AXIS);
        int len = (int)strlen(lab);
        if (c + 1 + len < pw) {
            draw_text(w, ay, ax + c + 1, len, TH_AXIS, lab);
            next_free = c + 2 + len;
        } else {
            next_free = c + 1;
        }
    }
}

static void timeline_draw(WINDOW *w, struct pane_view *v, int focused)
{
    const struct snap *s = v->snap;
    struct view_state *vs = v->vs;
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    int pw = wd - 2 - LABEL_W - 1;
    if (pw > CANVAS_MAX_W)
        pw = CANVAS_MAX_W;
    int avail = h - 4; /* border, axis, legend */
    int K = vs->tl_steps;
    if (K < 1)
        K = vs->tl_steps = 1;

    vs->tl_nlanes = snap_lanes(s);
    vs->tl_rows = avail;
    if (vs->tl_lane0 > vs->tl_nlanes - avail)
        vs->tl_lane0 = vs->tl_nlanes - avail;
    if (vs->tl_lane0 < 0)
        vs->tl_lane0 = 0;

    long newest, oldest;
    whole_steps(s, &newest, &oldest);
    vs->tl_max_back = (int)(newest - (oldest + K - 1));
    if (vs->tl_max_back < 0)
        vs->tl_max_back = 0;
    if (!v->can_browse)
        vs->tl_back = 0;
    if (vs->tl_back > vs->tl_max_back)
        vs->tl_back = vs->tl_max_back;

    long hi = newest - vs->tl_back, lo = hi - K + 1;
    if (lo < 0)
        lo = 0;
    int64_t t0 = INT64_MAX, t1 = INT64_MIN;
    if (hi >= 0)
        for (int i = 0; i < s->world; i++) {
            const struct snap_rank *r = &s->ranks[i];
            uint64_t n = hist_count(r);
            for (uint64_t k = 0; k < n; k++) {
                const struct span *sp = &r->hist[k];
                if (sp->step < (uint32_t)lo || sp->step > (uint32_t)hi)
                    continue;
                if (sp->t0_ns < t0)
                    t0 = sp->t0_ns;
                if (sp->t1_ns > t1)
                    t1 = sp->t1_ns;
            }
        }

    char note[128];
    int have = hi >= 0 && t1 > t0;
    char sampled[48] = "";
    if (s->cupti_sample > 1)
        snprintf(sampled, sizeof(sampled), "  (device traced %d steps in %d+)", CFG_CUPTI_WINDOW, s->cupti_sample);
    if (have)
        snprintf(note, sizeof(note), "steps %ld-%ld  %.2f ms%s  +/- zoom%s%s", lo, hi, (double)(t1 - t0) / 1e6, sampled,
                 v->can_browse ? "  <-/-> history" : "", vs->tl_back ? "  (scrolled back)" : "");
    else
        snprintf(note, sizeof(note), "%s", s->timeline_na[0] ? s->timeline_na : "waiting for the first step");
    draw_box(w, "Timeline", note, focused);
    if (pw < 4 || avail < 1)
        return;

    /* Lanes two rows high when they all fit, and a blank row between ranks
     * when that fits too: the room goes to legibility, not to empty rows. */
    int nl = vs->tl_nlanes, lane_h = 1, gap = 0;
    if (nl * 2 + s->world - 1 <= avail) {
        lane_h = 2;
        gap = 1;
    } else if (nl * 2 <= avail) {
        lane_h = 2;
    } else if (nl + s->world - 1 <= avail) {
        gap = 1;
    }
    int y = 1, prev_rank = -1, last_k = vs->tl_lane0 - 1;
    for (int k = vs->tl_lane0; k < nl; k++) {
        int rank, lane;
        if (!lane_at(s, k, &rank, &lane))
            break;
        if (prev_rank >= 0 && rank != prev_rank)
            y += gap;
        prev_rank = rank;
        if (y + lane_h > 1 + avail)
            break;
        draw_textf(w, y, 1, LABEL_W, lane == LANE_MAIN ? TH_LABEL : TH_DIM, "r%d %s", rank, lane_short[lane]);
        if (have)
            draw_lane(w, &s->ranks[rank], lane, (uint32_t)lo, (uint32_t)hi, t0, t1, y, 1 + LABEL_W + 1, pw, lane_h);
        y += lane_h;
        last_k = k;
    }
    char cut[128];
    hidden_note(cut, sizeof(cut), s, vs->tl_lane0, last_k, focused);
    draw_box_foot(w, cut, TH_TITLE);

    /* axis: ticks and labels in ms from the window's start */
    int ay = h - 3, ax = 1 + LABEL_W + 1;
    draw_text(w, ay, 1, LABEL_W, TH_AXIS, "     ms");
    if (have)
        draw_axis(w, ay, ax, pw, (double)(t1 - t0) / 1e6);
    draw_legend(w, h - 2, ax, pw);
}

static int timeline_key(int ch, struct pane_view *v)
{
    struct view_state *vs = v->vs;
    switch (ch) {
    case KEY_LEFT:
    case KEY_RIGHT:
    case KEY_HOME:
    case KEY_END:
        if (!v->can_browse) {
            v->hint = "history scrolls while paused: press p (pause training) or space (freeze the view)";
            return UI_HANDLED | UI_REDRAW;
        }
        if (ch == KEY_LEFT)
            vs->tl_back = vs->tl_back < vs->tl_max_back ? vs->tl_back + 1 : vs->tl_max_back;
        else if (ch == KEY_RIGHT)
            vs->tl_back = vs->tl_back > 0 ? vs->tl_back - 1 : 0;
        else
            vs->tl_back = ch == KEY_HOME ? vs->tl_max_back : 0;
        return UI_HANDLED | UI_REDRAW;
    case KEY_UP:
        vs->tl_lane0 = vs->tl_lane0 > 0 ? vs->tl_lane0 - 1 : 0;
        return UI_HANDLED | UI_REDRAW;
    case KEY_DOWN:
        if (vs->tl_lane0 + vs->tl_rows < vs->tl_nlanes)
            vs->tl_lane0++;
        return UI_HANDLED | UI_REDRAW;
    default:
        return 0;
    }
}

int timeline_zoom(struct view_state *vs, int in)
{
    static const int levels[] = {1, 2, 3, 5, 10, 20, 40, TL_MAX_STEPS};
    int n = (int)(sizeof(levels) / sizeof(levels[0])), cur = 0;
    for (int i = 0; i < n; i++)
        if (levels[i] <= vs->tl_steps)
            cur = i;
    cur += in ? -1 : 1;
    if (cur < 0)
        cur = 0;
    if (cur >= n)
        cur = n - 1;
    vs->tl_steps = levels[cur];
    return UI_HANDLED | UI_REDRAW;
}

const struct pane_ops pane_timeline = {
    .title = "Timeline",
    .focusable = 1,
    .draw = timeline_draw,
    .key = timeline_key,
};
