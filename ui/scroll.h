/* scroll.h - the keys that scroll a pane's list, for every pane that
 * shows `rows` of `total` items from `first` (Ranks, Layers, Per cycle).
 * No drawing: the moves are unit-tested (tests/test_ui_core.c). */
#ifndef DDPTOP_SCROLL_H
#define DDPTOP_SCROLL_H

/* The keys a pane takes (a pane leaves the others to the screen manager:
 * Home and End go to the timeline when the pane does not take them). */
enum scroll_keys {
    SCROLL_LINES = 1 << 0, /* Up, Down: one item */
    SCROLL_PAGES = 1 << 1, /* PgUp, PgDn: `rows` items */
    SCROLL_ENDS = 1 << 2,  /* Home, End: the first and the last page */
};

/* Moves *first for the curses key ch within 0 .. total - rows (0 when all
 * fit): 1 when ch is one of `keys` (the pane redraws), else 0 and *first
 * as it was. */
int scroll_key(int ch, unsigned keys, int *first, int rows, int total);

#endif
