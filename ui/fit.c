/* fit.c - dropping items by priority until a line fits, notes cut only
 * between whole items, and word wrap (see fit.h). */
#include "fit.h"

#include <string.h>

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

/* columns of the first len bytes of UTF-8 text: its characters are one column each */
static int cols_of(const char *s, size_t len)
{
    int c = 0;
    for (size_t i = 0; i < len; i++)
        c += ((unsigned char)s[i] & 0xC0) != 0x80;
    return c;
}

/* bytes of the first cols characters of s (at most len bytes) */
static size_t bytes_of(const char *s, size_t len, int cols)
{
    size_t at = 0;
    for (int c = 0; at < len && c < cols; c++)
        do
            at++;
        while (at < len && ((unsigned char)s[at] & 0xC0) == 0x80);
    return at;
}

static int copy_out(char *out, size_t n, const char *s, size_t len)
{
    if (len >= n)
        len = n - 1;
    while (len > 0 && ((unsigned char)s[len] & 0xC0) == 0x80)
        len--; /* (a character is not split by a short buffer) */
    memcpy(out, s, len);
    out[len] = 0;
    return cols_of(out, len);
}

int fit_note(const char *text, int room, int utf8, char *out, size_t n)
{
    if (n == 0)
        return 0;
    out[0] = 0;
    size_t len = strlen(text);
    if (room < 1)
        return 0;
    if (cols_of(text, len) <= room)
        return copy_out(out, n, text, len);
    /* the longest run of whole items that fits: an item ends before a
     * separator met outside parentheses */
    size_t best = 0;
    int depth = 0;
    for (size_t i = 1; i < len; i++) {
        char c = text[i], next = text[i + 1], prev = text[i - 1];
        int sep =
            depth == 0 && prev != ' ' && ((c == ' ' && (next == ' ' || next == '(')) || (c == ';' && next == ' '));
        if (sep) {
            if (cols_of(text, i) > room)
                break;
            best = i;
        }
        depth += c == '(' ? 1 : c == ')' && depth > 0 ? -1 : 0;
    }
    if (best > 0)
        return copy_out(out, n, text, best);
    /* the first item alone is too wide: cut, and marked so */
    const char *mark = utf8 ? "\u2026" : "~";
    size_t at = bytes_of(text, len, room - 1), ml = strlen(mark);
    if (at + ml >= n)
        return copy_out(out, n, text, at);
    memcpy(out, text, at);
    memcpy(out + at, mark, ml + 1);
    return cols_of(out, at + ml);
}

int fit_wrap(const char *text, int width, int *start, int *len, int max)
{
    if (width < 1)
        return 0;
    int n = 0;
    size_t L = strlen(text), i = 0, ls = 0, le = 0; /* the line being filled: [ls, le) */
    int open = 0;
    while (n < max) {
        while (i < L && text[i] == ' ')
            i++;
        if (i >= L)
            break;
        size_t we = i;
        while (we < L && text[we] != ' ')
            we++;
        int wc = cols_of(text + i, we - i);
        if (open && cols_of(text + ls, we - ls) <= width) { /* (the spaces between as they are) */
            le = we;
            i = we;
            continue;
        }
        if (open) { /* the word goes to a line of its own */
            start[n] = (int)ls;
            len[n++] = (int)(le - ls);
            open = 0;
            continue;
        }
        if (wc <= width) {
            ls = i;
            le = we;
            open = 1;
            i = we;
            continue;
        }
        /* a word wider than a line: cut */
        size_t cut = bytes_of(text + i, we - i, width);
        start[n] = (int)i;
        len[n++] = (int)cut;
        i += cut;
    }
    if (open && n < max) {
        start[n] = (int)ls;
        len[n++] = (int)(le - ls);
    }
    return n;
}
