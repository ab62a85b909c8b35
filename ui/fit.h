/* fit.h - which items of a line or a table fit a width: items drop out by
 * priority (the highest `drop` first, the rightmost of equals first; 0
 * never drops) until the rest fits. The rank and runs tables, the header
 * and the footer's keys all fit this way. No curses: unit-tested. */
#ifndef DDPTOP_FIT_H
#define DDPTOP_FIT_H

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

#endif
