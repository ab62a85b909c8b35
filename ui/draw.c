/* draw.c - the panes' drawing kit (see draw.h). Only the UI thread calls
 * into here; everything is fixed-size, nothing allocates per frame. */
#include "draw.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "fit.h"

static int g_utf8;
static int g_default_colours = 1; /* the terminal has default fg/bg colours */
static attr_t g_attr[TH_COUNT];

/* Category glyphs in enum cat order, then idle. Every category has a glyph
 * of its own, so a screen without colour (NO_COLOR, a capture pasted into
 * a report) still tells forward, backward and the optimizer apart. In
 * ASCII the arrows follow the direction of the pass. */
static const wchar_t cat_utf8[CAT_COUNT + 1] = {L'░', L'█', L'▆', L'▚', L'▓', L'╌', L'·'};
static const wchar_t cat_ascii[CAT_COUNT + 1] = {':', '>', '<', '+', '=', '-', '.'};
_Static_assert(CAT_DATA == 0 && CAT_COMM == 4 && CAT_WAIT == 5 && CAT_COUNT == 6, "glyph tables follow enum cat");

void draw_init(int utf8)
{
    g_utf8 = utf8;
    for (int i = 0; i < TH_COUNT; i++)
        g_attr[i] = A_NORMAL;
}

int draw_utf8(void)
{
    return g_utf8;
}

void draw_default_colours(int ok)
{
    g_default_colours = ok;
}

/* A theme colour on this terminal: bright colours become their base colour
 * plus bold on 8-colour terminals; 256-colour numbers fold onto 8; default
 * becomes white on black where the terminal has no default colours. */
static short map_colour(short c, short fallback, int *bold)
{
    if (c < 0)
        return g_default_colours ? -1 : fallback;
    if (c < COLORS)
        return c;
    if (c < 16) {
        *bold = 1;
        return (short)(c - 8);
    }
    return (short)(c % 8);
}

int draw_apply_theme(const struct theme *t, int colour)
{
    if (colour && COLOR_PAIRS <= TH_COUNT)
        return -1;
    for (int el = 0; el < TH_COUNT; el++) {
        const struct theme_style *st = &t->el[el];
        attr_t a = A_NORMAL;
        if (st->attr & THEME_BOLD)
            a |= A_BOLD;
        if (st->attr & THEME_DIM)
            a |= A_DIM;
        if (st->attr & THEME_REVERSE)
            a |= A_REVERSE;
        if (st->attr & THEME_UNDERLINE)
            a |= A_UNDERLINE;
        if (st->attr & THEME_ITALIC)
            a |= A_ITALIC;
        if (colour) {
            int bold = 0;
            short fg = map_colour(st->fg, COLOR_WHITE, &bold), bg = map_colour(st->bg, COLOR_BLACK, &bold);
            init_pair((short)(el + 1), fg, bg);
            a |= COLOR_PAIR(el + 1);
            if (bold)
                a |= A_BOLD;
        }
        g_attr[el] = a;
    }
    return 0;
}

attr_t draw_attr(int el)
{
    return el >= 0 && el < TH_COUNT ? g_attr[el] : A_NORMAL;
}

wchar_t draw_cat_glyph(int cat)
{
    if (cat < 0 || cat > CAT_COUNT)
        cat = CAT_COUNT;
    return g_utf8 ? cat_utf8[cat] : cat_ascii[cat];
}

wchar_t draw_compute_glyph(void)
{
    /* the rank table's bar sums forward, backward and optimizer */
    return g_utf8 ? L'█' : L'#';
}

int draw_cat_el(int cat)
{
    if (cat < 0 || cat > CAT_COUNT)
        cat = CAT_COUNT;
    return TH_CAT_DATA + cat;
}

void draw_cell(WINDOW *w, int y, int x, wchar_t g, int el)
{
    cchar_t cc;
    wchar_t s[2] = {g, 0};
    attr_t a = draw_attr(el);
    setcchar(&cc, s, a & ~A_COLOR, (short)PAIR_NUMBER(a), NULL);
    mvwadd_wch(w, y, x, &cc);
}

void draw_hfill(WINDOW *w, int y, int x, int n, wchar_t g, int el)
{
    if (n <= 0)
        return;
    cchar_t cc;
    wchar_t s[2] = {g, 0};
    attr_t a = draw_attr(el);
    setcchar(&cc, s, a & ~A_COLOR, (short)PAIR_NUMBER(a), NULL);
    for (int i = 0; i < n; i++)
        mvwadd_wch(w, y, x + i, &cc);
}

int draw_cols(const char *s)
{
    int cols = 0;
    for (; *s; s++)
        cols += (*s & 0xC0) != 0x80;
    return cols;
}

int draw_text(WINDOW *w, int y, int x, int maxw, int el, const char *s)
{
    if (maxw <= 0)
        return 0;
    /* columns, not bytes: a UTF-8 arrow is one column of three bytes, and
     * the cut never falls inside a character */
    int n = 0, cols = 0;
    while (s[n] && cols < maxw) {
        n++;
        while ((s[n] & 0xC0) == 0x80)
            n++;
        cols++;
    }
    wattrset(w, draw_attr(el));
    mvwaddnstr(w, y, x, s, n);
    wattrset(w, A_NORMAL);
    return cols;
}

int draw_textf(WINDOW *w, int y, int x, int maxw, int el, const char *fmt, ...)
{
    char buf[512];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof(buf), fmt, ap);
    va_end(ap);
    return draw_text(w, y, x, maxw, el, buf);
}

void draw_box(WINDOW *w, const char *title, const char *note, int focused)
{
    int h, wd;
    getmaxyx(w, h, wd);
    (void)h;
    wattrset(w, draw_attr(focused ? TH_BORDER_FOCUS : TH_BORDER));
    box(w, 0, 0);
    wattrset(w, A_NORMAL);
    char t[96];
    snprintf(t, sizeof(t), " %s ", title);
    int used = 2 + draw_text(w, 0, 2, wd - 4, focused ? TH_TITLE_FOCUS : TH_TITLE, t);
    if (note && note[0]) {
        /* whole items of the note, with a space either side */
        char fitted[512], nb[520];
        int room = wd - 2 - used - 1;
        int len = room > 4 ? fit_note(note, room - 2, draw_utf8(), fitted, sizeof(fitted)) : 0;
        if (len > 0) {
            snprintf(nb, sizeof(nb), " %s ", fitted);
            draw_text(w, 0, wd - 2 - (len + 2), len + 2, TH_DIM, nb);
        }
    }
}

void draw_box_foot(WINDOW *w, const char *note, int el)
{
    int h, wd;
    getmaxyx(w, h, wd);
    if (!note || !note[0] || h < 2)
        return;
    char fitted[512], nb[520];
    if (fit_note(note, wd - 6, draw_utf8(), fitted, sizeof(fitted)) > 0) {
        snprintf(nb, sizeof(nb), " %s ", fitted);
        draw_text(w, h - 1, 2, wd - 4, el, nb);
    }
}

void draw_bar(WINDOW *w, int y, int x, int width, double compute, double comm, double data, double idle)
{
    if (width <= 0)
        return;
    /* cumulative rounding, so the segments always add up to the width */
    double parts[4] = {compute, comm, data, idle};
    static const int cats[4] = {-1, CAT_COMM, CAT_DATA, CAT_COUNT};
    double total = compute + comm + data + idle;
    if (total <= 0) {
        draw_hfill(w, y, x, width, ' ', TH_DIM);
        return;
    }
    double acc = 0;
    int at = 0;
    for (int i = 0; i < 4; i++) {
        acc += parts[i];
        int end = (int)lround(acc / total * width);
        if (i == 3)
            end = width;
        int n = end - at;
        if (n > 0) {
            if (cats[i] < 0)
                draw_hfill(w, y, x + at, n, draw_compute_glyph(), TH_COMPUTE);
            else
                draw_hfill(w, y, x + at, n, draw_cat_glyph(cats[i]), draw_cat_el(cats[i]));
            at = end;
        }
    }
}

int draw_legend(WINDOW *w, int y, int x, int maxw)
{
    static const struct {
        int cat;
        const char *name;
    } items[] = {{CAT_FORWARD, "fwd"}, {CAT_BACKWARD, "bwd"}, {CAT_OPTIMIZER, "opt"}, {CAT_COMM, "comm"},
                 {CAT_DATA, "data"},   {CAT_WAIT, "wait"},    {CAT_COUNT, "idle"}};
    int used = 0;
    for (size_t i = 0; i < sizeof(items) / sizeof(items[0]); i++) {
        int need = 2 + (int)strlen(items[i].name) + 2;
        if (used + need > maxw)
            break;
        draw_cell(w, y, x + used, draw_cat_glyph(items[i].cat), draw_cat_el(items[i].cat));
        used += 2;
        used += draw_text(w, y, x + used, maxw - used, TH_NORMAL, items[i].name);
        used += 2;
    }
    return used;
}

/* ---- canvas -------------------------------------------------------------- */

void canvas_begin(struct canvas *c, int cw, int ch)
{
    if (cw > CANVAS_MAX_W)
        cw = CANVAS_MAX_W;
    if (ch > CANVAS_MAX_H)
        ch = CANVAS_MAX_H;
    if (cw < 0)
        cw = 0;
    if (ch < 0)
        ch = 0;
    c->cw = cw;
    c->ch = ch;
    c->dw = g_utf8 ? cw * 2 : cw;
    c->dh = g_utf8 ? ch * 4 : ch;
    memset(c->dots, 0, (size_t)(cw * ch));
    memset(c->el, 0, (size_t)(cw * ch));
}

void canvas_dot(struct canvas *c, int x, int y, int el)
{
    if (x < 0 || y < 0 || x >= c->dw || y >= c->dh)
        return;
    int cx = g_utf8 ? x / 2 : x, cy = g_utf8 ? y / 4 : y;
    uint8_t bit = 1;
    if (g_utf8) {
        static const uint8_t bits[2][4] = {{0x01, 0x02, 0x04, 0x40}, {0x08, 0x10, 0x20, 0x80}};
        bit = bits[x & 1][y & 3];
    }
    c->dots[cy * c->cw + cx] |= bit;
    c->el[cy * c->cw + cx] = (uint8_t)el;
}

void canvas_line(struct canvas *c, int x0, int y0, int x1, int y1, int el)
{
    int dx = x1 > x0 ? x1 - x0 : x0 - x1, sx = x0 < x1 ? 1 : -1;
    int dy = y1 > y0 ? -(y1 - y0) : -(y0 - y1), sy = y0 < y1 ? 1 : -1;
    int e = dx + dy;
    /* Bresenham, bounded by the canvas: a wild point cannot loop long */
    for (int guard = 0; guard < 4 * (CANVAS_MAX_W * 2 + CANVAS_MAX_H * 4); guard++) {
        canvas_dot(c, x0, y0, el);
        if (x0 == x1 && y0 == y1)
            break;
        int e2 = 2 * e;
        if (e2 >= dy) {
            e += dy;
            x0 += sx;
        }
        if (e2 <= dx) {
            e += dx;
            y0 += sy;
        }
    }
}

void canvas_blit(const struct canvas *c, WINDOW *w, int y, int x)
{
    for (int cy = 0; cy < c->ch; cy++)
        for (int cx = 0; cx < c->cw; cx++) {
            uint8_t d = c->dots[cy * c->cw + cx];
            if (!d)
                continue;
            wchar_t g = g_utf8 ? (wchar_t)(0x2800 + d) : L'*';
            draw_cell(w, y + cy, x + cx, g, c->el[cy * c->cw + cx]);
        }
}
