/* scroll.c - the scroll keys of a pane's list (see scroll.h). */
#include "scroll.h"

#include <curses.h>

int scroll_key(int ch, unsigned keys, int *first, int rows, int total)
{
    int max0 = total - rows > 0 ? total - rows : 0, at = *first;
    if ((keys & SCROLL_LINES) && ch == KEY_UP)
        *first = at > 0 ? at - 1 : 0;
    else if ((keys & SCROLL_LINES) && ch == KEY_DOWN)
        *first = at < max0 ? at + 1 : max0;
    else if ((keys & SCROLL_PAGES) && ch == KEY_PPAGE)
        *first = at > rows ? at - rows : 0;
    else if ((keys & SCROLL_PAGES) && ch == KEY_NPAGE)
        *first = at + rows < max0 ? at + rows : max0;
    else if ((keys & SCROLL_ENDS) && ch == KEY_HOME)
        *first = 0;
    else if ((keys & SCROLL_ENDS) && ch == KEY_END)
        *first = max0;
    else
        return 0;
    return 1;
}
