/* theme.h - colour themes: a table of styles indexed by screen element,
 * loaded from small text files in themes/.
 *
 * A theme file is lines of
 *     element = FG [BG] [ATTR...]
 * where FG and BG are `default`, a colour name (black red green yellow blue
 * magenta cyan white, or bright-NAME) or a number 0-255, and ATTR is any of
 * bold dim reverse underline italic. `#` starts a comment. Elements not
 * named keep the built-in default's style, so a theme may be short; an
 * unknown element, colour or attribute is an error naming file:line.
 *
 * No curses here (draw.c turns styles into colour pairs), so themes are
 * parsed and checked without a terminal.
 */
#ifndef DDPTOP_THEME_H
#define DDPTOP_THEME_H

#include <stddef.h>

#include "probe.h"

enum theme_el {
    TH_NORMAL = 0,
    TH_BORDER,
    TH_BORDER_FOCUS,
    TH_TITLE,
    TH_TITLE_FOCUS,
    TH_LABEL, /* "step", "loss" ... in the header; column headers */
    TH_VALUE, /* the numbers next to labels */
    TH_DIM,   /* secondary text, n/a */
    TH_RUNNING,
    TH_PAUSED,
    TH_DONE,
    TH_FAILED,
    TH_CAT_DATA, /* the categories, in enum cat's order */
    TH_CAT_FORWARD,
    TH_CAT_BACKWARD,
    TH_CAT_OPTIMIZER,
    TH_CAT_COMM,
    TH_CAT_WAIT,
    TH_CAT_IDLE,
    TH_COMPUTE,    /* forward + backward + optimizer, in the rank table's bar */
    TH_SERIES,     /* per-rank loss curves */
    TH_MEAN,       /* the mean loss curve */
    TH_THRESHOLD,  /* the loss threshold line */
    TH_ACCURACY,   /* test accuracy markers */
    TH_BYTES,      /* bytes per second */
    TH_BUSBW,      /* measured bus bandwidth */
    TH_PREDICTION, /* the alpha-beta model's prediction */
    TH_AXIS,
    TH_STATUS,
    TH_ERROR,
    TH_KEY,      /* key names in the footer and help */
    TH_SELECTED, /* the current run's row */
    TH_COUNT
};

_Static_assert(TH_CAT_IDLE - TH_CAT_DATA == CAT_COUNT, "one theme element per category, then idle");

enum theme_attr {
    THEME_BOLD = 1u << 0,
    THEME_DIM = 1u << 1,
    THEME_REVERSE = 1u << 2,
    THEME_UNDERLINE = 1u << 3,
    THEME_ITALIC = 1u << 4
};

#define THEME_DEFAULT_COLOUR (-1)
#define THEME_NAME 32
#define THEME_MAX_LIST 32

struct theme_style {
    short fg, bg;  /* THEME_DEFAULT_COLOUR or 0-255 */
    unsigned attr; /* enum theme_attr bits */
};

struct theme {
    char name[THEME_NAME];
    struct theme_style el[TH_COUNT];
};

const char *theme_el_name(int el);
/* The compiled-in default (mono = 0) or monochrome (mono = 1) theme: used
 * when no theme file is found, and as the base every file starts from. */
void theme_builtin(struct theme *t, int mono);
/* Parses a theme file's text onto t (which should hold a base theme).
 * src names the text in errors ("themes/light.theme"). */
int theme_parse(struct theme *t, const char *text, const char *src, char *err, size_t errlen);
/* Loads theme `name` from the first folder that has NAME.theme:
 * $DDPTOP_THEME_DIR, themes/ beside the program (a build tree's copy of
 * the source's), the install folder. */
int theme_load(struct theme *t, const char *name, char *err, size_t errlen);
/* The file theme_load(name) reads, in path (n bytes): path, or NULL when
 * it reads none (a built-in, or no such theme). */
const char *theme_file(const char *name, char *path, size_t n);
/* Names of the themes found in those folders, the four shipped ones first
 * (default, light, high-contrast, monochrome), then others by name.
 * Returns how many (at most max). */
int theme_list(char names[][THEME_NAME], int max);
/* Whether colour should be off: NO_COLOR set and not empty. */
int theme_no_color_env(void);

#endif
