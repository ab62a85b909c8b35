/* fmt.h - what the panes print in narrow columns: numbers with their
 * unit (fmt_num.h, shared with the report) and the note of a pane that
 * cuts items off. No curses, so the formats are unit-tested
 * (tests/test_ui_core.c). */
#ifndef DDPTOP_FMT_H
#define DDPTOP_FMT_H

#include <stddef.h>

#include "fmt_num.h"

/* The note of a pane that cuts `what`s (ranks, lanes) off: how many are
 * above and below, and the keys that scroll them there: "+3 ranks below:
 * tab, then ↓ scrolls" (utf8 0: "Down"); a focused pane's arrows scroll
 * at once. Empty when nothing is cut. */
void fmt_hidden(char *buf, size_t n, int above, int below, const char *what, int focused, int utf8);

#endif
