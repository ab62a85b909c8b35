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

#endif
