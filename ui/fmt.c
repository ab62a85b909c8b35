/* fmt.c - the panes' notes on what they cut off (see fmt.h). */
#include "fmt.h"

#include <stdio.h>

void fmt_hidden(char *buf, size_t n, int above, int below, const char *what, int focused, int utf8)
{
    if (n == 0)
        return;
    buf[0] = 0;
    if (above <= 0 && below <= 0)
        return;
    const char *up = utf8 ? "\u2191" : "Up", *down = utf8 ? "\u2193" : "Down";
    const char *keys = above > 0 && below > 0 ? (utf8 ? "\u2191/\u2193" : "Up/Down") : above > 0 ? up : down;
    int count = above > 0 ? above : below;
    if (above > 0 && below > 0)
        snprintf(buf, n, "+%d %s%s above, +%d below: %s%s scroll", above, what, above == 1 ? "" : "s", below,
                 focused ? "" : "tab, then ", keys);
    else
        snprintf(buf, n, "+%d %s%s %s: %s%s scrolls", count, what, count == 1 ? "" : "s", above > 0 ? "above" : "below",
                 focused ? "" : "tab, then ", keys);
}
