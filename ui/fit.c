/* fit.c - dropping items by priority until a line fits (see fit.h). */
#include "fit.h"

int fit_by_priority(const int *width, const int *drop, int n, int sep, int room, int *on)
{
    for (int i = 0; i < n; i++)
        on[i] = 1;
    for (;;) {
        int need = 0;
        for (int i = 0; i < n; i++)
            if (on[i])
                need += width[i] + sep;
        if (need <= room)
            return need;
        int worst = -1;
        for (int i = 0; i < n; i++)
            if (on[i] && drop[i] > 0 && (worst < 0 || drop[i] >= drop[worst]))
                worst = i;
        if (worst < 0)
            return need;
        on[worst] = 0;
    }
}

void fit_marks(const int *mark, const int *wide, const int *narrow, int n, int room, int *x, int *len)
{
    int limit = room; /* the columns from here on are taken */
    for (int i = n - 1; i >= 0; i--) {
        x[i] = -1;
        len[i] = 0;
        for (int k = 0; k < 2 && x[i] < 0; k++) {
            int w = k ? narrow[i] : wide[i];
            if (w <= 0)
                continue;
            if (mark[i] + 1 + w <= limit)
                x[i] = mark[i] + 1;
            else if (mark[i] + 1 + w > room && mark[i] - w >= 0 && mark[i] <= limit &&
                     (i == 0 || mark[i] - w > mark[i - 1])) /* (the mark before it stays clear) */
                x[i] = mark[i] - w;
            if (x[i] >= 0)
                len[i] = w;
        }
        if (x[i] < 0 && i == n - 1 && narrow[i] > 0 && mark[i] - narrow[i] >= 0) {
            x[i] = mark[i] - narrow[i]; /* the last is kept, over the marks before it if it must */
            len[i] = narrow[i];
        }
        /* a gap before the label, and its mark stays clear too */
        int end = x[i] >= 0 && x[i] - 1 < mark[i] ? x[i] - 1 : mark[i];
        if (end < limit)
            limit = end;
    }
}
