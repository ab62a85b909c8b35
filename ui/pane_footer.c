/* pane_footer.c - the bottom two lines: the status line (what the last
 * action did, or the run's error) and the keys. */
#include <stdio.h>
#include <string.h>

#include "panes.h"

static const struct {
    const char *key, *what;
} keys[] = {
    {"?", "help"},  {"p", "pause"},   {"space", "freeze"}, {"e", "trace"}, {"s", "next strategy"},
    {"t", "theme"}, {"tab", "focus"}, {"+/-", "zoom"},     {"l", "log"},   {"q", "quit"},
};

static void footer_draw(WINDOW *w, struct pane_view *v, int focused)
{
    int wd = getmaxx(w);
    werase(w);
    if (v->status && v->status[0])
        draw_text(w, 0, 1, wd - 2, v->status_error ? TH_ERROR : TH_STATUS, v->status);
    int x = 0;
    for (size_t i = 0; i < sizeof(keys) / sizeof(keys[0]); i++) {
        int need = (int)strlen(keys[i].key) + (int)strlen(keys[i].what) + 2;
        if (x + need > wd)
            break;
        x += draw_text(w, 1, x, wd - x, TH_KEY, keys[i].key);
        x += draw_text(w, 1, x, wd - x, TH_NORMAL, " ");
        x += draw_text(w, 1, x, wd - x, TH_NORMAL, keys[i].what);
        x += 1;
    }
}

const struct pane_ops pane_footer = {
    .title = "footer",
    .focusable = 0,
    .draw = footer_draw,
    .key = NULL,
};

void help_draw(WINDOW *w, const struct pane_view *v)
{
    static const char *const lines[][2] = {
        {"? F1", "this help (any key closes it)"},
        {"p", "pause / resume training at a step boundary"},
        {"space", "freeze / unfreeze the view (training goes on)"},
        {"e", "write a trace of the recent steps (Chrome JSON)"},
        {"s", "stop this run, start the next strategy"},
        {"t", "next colour theme"},
        {"tab", "move focus between panes (shift-tab back)"},
        {"arrows", "scroll the focused pane; timeline history"},
        {"+ -", "zoom the timeline in / out (steps shown)"},
        {"l", "loss: log scale on / off"},
        {"q", "quit (Ctrl-C too); the terminal is restored"},
    };
    int h, wd;
    getmaxyx(w, h, wd);
    werase(w);
    draw_box(w, "Help", "ddptop " DDPTOP_VERSION, 1);
    int y = 1;
    for (size_t i = 0; i < sizeof(lines) / sizeof(lines[0]) && y < h - 1; i++, y++) {
        draw_textf(w, y, 2, 8, TH_KEY, "%-7s", lines[i][0]);
        draw_text(w, y, 11, wd - 12, TH_NORMAL, lines[i][1]);
    }
    if (y < h - 1)
        y++;
    if (y < h - 1)
        draw_legend(w, y++, 2, wd - 4);
    if (y < h - 1)
        draw_textf(w, y++, 2, wd - 4, TH_DIM, "theme %s%s", v->theme, v->colour ? "" : " (no colour)");
    if (y < h - 1)
        draw_text(w, y++, 2, wd - 4, TH_DIM, "compute is one glyph; colour splits fwd/bwd/opt");
}
