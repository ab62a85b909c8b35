/* fit.h - which items of a line or a table fit a width: items drop out by
 * priority (the highest `drop` first, the rightmost of equals first; 0
 * never drops) until the rest fits. The rank and runs tables, the header
 * and the footer's keys all fit this way; the panes' notes and the status
 * line drop whole items from the end (fit_note), and help wraps its lines
 * (fit_wrap). No curses: unit-tested. */
#ifndef DDPTOP_FIT_H
#define DDPTOP_FIT_H

#include <stddef.h>

/* on[i] = 1 for the items kept of n, each width[i] wide plus sep after it,
 * in room. Returns the width the kept items take (which may still exceed
 * room when only never-dropping items are left). */
int fit_by_priority(const int *width, const int *drop, int n, int sep, int room, int *on);

/* Labels beside marks on a line of room columns: label i belongs to column
 * mark[i] (ascending) and goes right of it, or left of it where the right
 * would pass the end of the line. It is written wide[i] columns wide where
 * that clears the next label kept and the marks on either side, else
 * narrow[i] wide, else not at all: labels never overlap, and the last is
 * always kept (narrow, over the marks before it, where nothing else fits).
 * x[i] is label i's first column (-1: dropped) and len[i] its width. */
void fit_marks(const int *mark, const int *wide, const int *narrow, int n, int room, int *x, int *len);

/* A note or status line in room columns, into out (n bytes), without a
 * label cut in half: text is items separated by two spaces, "; " or " ("
 * (a parenthesised group is one item, whatever it holds), and items drop
 * whole from the end until the rest fits. Only when the first item alone
 * is wider than room is it cut, its last column a mark that it was ("…",
 * or "~" without utf8). Text is ASCII or UTF-8 of one-column characters.
 * Returns the columns out takes (0 for room < 1). */
int fit_note(const char *text, int room, int utf8, char *out, size_t n);

/* text word-wrapped to width columns: line k is len[k] bytes from
 * text + start[k], with no space at either end; a word wider than width is
 * cut at width. Returns how many lines (at most max; width < 1: none). */
int fit_wrap(const char *text, int width, int *start, int *len, int max);

#endif
