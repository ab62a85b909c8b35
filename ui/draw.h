/* draw.h - the curses drawing kit the panes share: theme styles as
 * attributes, category glyphs, boxed titles, stacked bars, a braille dot
 * canvas for plots, and number formatting.
 *
 * Glyphs are chosen once from the locale: with UTF-8, blocks and braille;
 * without, ASCII stand-ins, so the screen stays readable on any terminal.
 * The categories differ by glyph as well as colour (forward █, backward ▆,
 * optimizer ▚, comm ▓, data ░, wait ╌, idle ·; in ASCII > < + = : - .),
 * so nothing depends on colour alone.
 */
#ifndef DDPTOP_DRAW_H
#define DDPTOP_DRAW_H

#define NCURSES_WIDECHAR 1
#include <curses.h>
#include <stddef.h>
#include <stdint.h>
#include <wchar.h>

#include "fmt.h"
#include "theme.h"

/* Picks glyphs: utf8 = the locale's codeset is UTF-8. */
void draw_init(int utf8);
int draw_utf8(void);
/* Whether use_default_colors() worked (theme colour `default` is usable). */
void draw_default_colours(int ok);
/* Makes theme t current: one colour pair per element when colour is on,
 * attributes only when it is off. Returns 0, or -1 when the terminal has
 * too few colour pairs (the caller falls back to monochrome). */
int draw_apply_theme(const struct theme *t, int colour);
attr_t draw_attr(int el);

/* Glyph of a category (enum cat), or of idle for CAT_COUNT. */
wchar_t draw_cat_glyph(int cat);
/* Glyph of compute as a whole (forward + backward + optimizer), in bars. */
wchar_t draw_compute_glyph(void);
/* Theme element of a category (CAT_COUNT: idle). */
int draw_cat_el(int cat);

void draw_cell(WINDOW *w, int y, int x, wchar_t g, int el);
void draw_hfill(WINDOW *w, int y, int x, int n, wchar_t g, int el);
/* Columns UTF-8 text s takes (its characters are one column each). */
int draw_cols(const char *s);
/* Writes text s (ASCII, or UTF-8 of one-column characters) at y,x clipped
 * to maxw columns. Returns columns used. */
int draw_text(WINDOW *w, int y, int x, int maxw, int el, const char *s);
int draw_textf(WINDOW *w, int y, int x, int maxw, int el, const char *fmt, ...) __attribute__((format(printf, 6, 7)));
/* Border with " title " at the left and an optional note at the right;
 * the focused pane gets the focus styles. */
void draw_box(WINDOW *w, const char *title, const char *note, int focused);
/* A note over the bottom border, at its left (what the pane cannot show). */
void draw_box_foot(WINDOW *w, const char *note, int el);
/* Stacked bar of compute, comm, data, idle percentages over width cells. */
void draw_bar(WINDOW *w, int y, int x, int width, double compute, double comm, double data, double idle);
/* The category legend on one row; returns columns used. */
int draw_legend(WINDOW *w, int y, int x, int maxw);

/* A dot canvas: 2x4 dots per cell with braille, 1x1 in ASCII. Each cell
 * keeps the style of the last dot drawn in it. Fixed size, no allocation. */
#define CANVAS_MAX_W 320
#define CANVAS_MAX_H 128
struct canvas {
    int cw, ch; /* cells */
    int dw, dh; /* dots */
    uint8_t dots[CANVAS_MAX_W * CANVAS_MAX_H];
    uint8_t el[CANVAS_MAX_W * CANVAS_MAX_H];
};
void canvas_begin(struct canvas *c, int cw, int ch);
void canvas_dot(struct canvas *c, int x, int y, int el);
void canvas_line(struct canvas *c, int x0, int y0, int x1, int y1, int el);
void canvas_blit(const struct canvas *c, WINDOW *w, int y, int x);

#endif
