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
