/* theme.c - the theme table, its built-in defaults, and the theme file
 * parser and finder (format in theme.h). Theme files are read through
 * trace/infile.h: only a regular file of at most THEME_FILE_MAX bytes. */
#include "theme.h"

#include <ctype.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "infile.h"

#ifndef DDPTOP_THEME_DIR
#define DDPTOP_THEME_DIR ""
#endif

#define THEME_FILE_MAX (64 * 1024)

static const char *const el_names[TH_COUNT] = {
    "normal",  "border", "border-focus", "title",   "title-focus", "label",   "value",     "dim",
    "running", "paused", "done",         "failed",  "data",        "forward", "backward",  "optimizer",
    "comm",    "wait",   "idle",         "compute", "series",      "mean",    "threshold", "accuracy",
    "bytes",   "busbw",  "prediction",   "axis",    "status",      "error",   "key",       "selected",
};
_Static_assert(sizeof(el_names) / sizeof(el_names[0]) == TH_COUNT, "one name per theme element");

static const char *const colour_names[8] = {"black", "red", "green", "yellow", "blue", "magenta", "cyan", "white"};

enum { K = THEME_DEFAULT_COLOUR, BLACK = 0, RED, GREEN, YELLOW, BLUE, MAGENTA, CYAN, WHITE };
#define B THEME_BOLD
#define D THEME_DIM
#define R THEME_REVERSE
#define U THEME_UNDERLINE

/* The built-in default, for dark terminals; themes/default.theme says the
 * same, so a missing themes folder changes nothing. */
static const struct theme_style builtin_colour[TH_COUNT] = {
    [TH_NORMAL] = {K, K, 0},
    [TH_BORDER] = {BLUE, K, 0},
    [TH_BORDER_FOCUS] = {CYAN, K, B},
    [TH_TITLE] = {WHITE, K, B},
    [TH_TITLE_FOCUS] = {BLACK, CYAN, B},
    [TH_LABEL] = {CYAN, K, 0},
    [TH_VALUE] = {K, K, B},
    [TH_DIM] = {K, K, D},
    [TH_RUNNING] = {GREEN, K, B},
    [TH_PAUSED] = {YELLOW, K, B},
    [TH_DONE] = {CYAN, K, B},
    [TH_FAILED] = {WHITE, RED, B},
    [TH_CAT_DATA] = {YELLOW, K, 0},
    [TH_CAT_FORWARD] = {GREEN, K, 0},
    [TH_CAT_BACKWARD] = {CYAN, K, 0},
    [TH_CAT_OPTIMIZER] = {MAGENTA, K, 0},
    [TH_CAT_COMM] = {RED, K, B},
    [TH_CAT_WAIT] = {WHITE, K, D},
    [TH_CAT_IDLE] = {K, K, D},
    [TH_COMPUTE] = {GREEN, K, 0},
    [TH_SERIES] = {BLUE, K, 0},
    [TH_MEAN] = {YELLOW, K, B},
    [TH_THRESHOLD] = {RED, K, 0},
    [TH_ACCURACY] = {MAGENTA, K, B},
    [TH_BYTES] = {CYAN, K, 0},
    [TH_BUSBW] = {GREEN, K, 0},
    [TH_PREDICTION] = {YELLOW, K, D},
    [TH_AXIS] = {K, K, D},
    [TH_STATUS] = {K, K, 0},
    [TH_ERROR] = {RED, K, B},
    [TH_KEY] = {BLACK, CYAN, 0},
    [TH_SELECTED] = {YELLOW, K, B},
};

/* Without colour, attributes carry the meaning; the categories differ by
 * glyph (draw.c), so they need no attribute of their own. */
static const struct theme_style builtin_mono[TH_COUNT] = {
    [TH_NORMAL] = {K, K, 0},        [TH_BORDER] = {K, K, 0},      [TH_BORDER_FOCUS] = {K, K, B},
    [TH_TITLE] = {K, K, B},         [TH_TITLE_FOCUS] = {K, K, R}, [TH_LABEL] = {K, K, 0},
    [TH_VALUE] = {K, K, B},         [TH_DIM] = {K, K, D},         [TH_RUNNING] = {K, K, B},
    [TH_PAUSED] = {K, K, R},        [TH_DONE] = {K, K, B},        [TH_FAILED] = {K, K, R | B},
    [TH_CAT_DATA] = {K, K, 0},      [TH_CAT_FORWARD] = {K, K, 0}, [TH_CAT_BACKWARD] = {K, K, 0},
    [TH_CAT_OPTIMIZER] = {K, K, 0}, [TH_CAT_COMM] = {K, K, 0},    [TH_CAT_WAIT] = {K, K, 0},
    [TH_CAT_IDLE] = {K, K, D},      [TH_COMPUTE] = {K, K, 0},     [TH_SERIES] = {K, K, D},
    [TH_MEAN] = {K, K, B},          [TH_THRESHOLD] = {K, K, 0},   [TH_ACCURACY] = {K, K, B},
    [TH_BYTES] = {K, K, 0},         [TH_BUSBW] = {K, K, B},       [TH_PREDICTION] = {K, K, D},
    [TH_AXIS] = {K, K, D},          [TH_STATUS] = {K, K, 0},      [TH_ERROR] = {K, K, B | U},
    [TH_KEY] = {K, K, R},           [TH_SELECTED] = {K, K, B},
};

#undef B
#undef D
#undef R
#undef U

const char *theme_el_name(int el)
{
    return el >= 0 && el < TH_COUNT ? el_names[el] : "?";
}

void theme_builtin(struct theme *t, int mono)
{
    memset(t, 0, sizeof(*t));
    snprintf(t->name, sizeof(t->name), "%s", mono ? "monochrome" : "default");
    memcpy(t->el, mono ? builtin_mono : builtin_colour, sizeof(t->el));
}

int theme_no_color_env(void)
{
    const char *v = getenv("NO_COLOR");
    return v && v[0];
}

/* A colour word: default, a name, bright-NAME or 0-255. */
static int parse_colour(const char *w, short *out)
{
    if (!strcmp(w, "default")) {
        *out = THEME_DEFAULT_COLOUR;
        return 0;
    }
    int bright = 0;
    if (!strncmp(w, "bright-", 7)) {
        bright = 8;
        w += 7;
    }
    for (int i = 0; i < 8; i++)
        if (!strcmp(w, colour_names[i])) {
            *out = (short)(i + bright);
            return 0;
        }
    if (bright || !isdigit((unsigned char)w[0]))
        return -1;
    char *end;
    long v = strtol(w, &end, 10);
    if (*end || v < 0 || v > 255)
        return -1;
    *out = (short)v;
    return 0;
}

static int parse_attr(const char *w, unsigned *out)
{
    static const struct {
        const char *name;
        unsigned bit;
    } attrs[] = {{"bold", THEME_BOLD},           {"dim", THEME_DIM},       {"reverse", THEME_REVERSE},
                 {"underline", THEME_UNDERLINE}, {"italic", THEME_ITALIC}, {"normal", 0}};
    for (size_t i = 0; i < sizeof(attrs) / sizeof(attrs[0]); i++)
        if (!strcmp(w, attrs[i].name)) {
            *out |= attrs[i].bit;
            return 0;
        }
    return -1;
}

static char *trim(char *s)
{
    while (isspace((unsigned char)*s))
        s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1]))
        *--e = 0;
    return s;
}

/* One "element = FG [BG] [ATTR...]" line, already without its comment. */
static int parse_line(struct theme *t, char *line, const char *src, int lineno, char *err, size_t errlen)
{
    char *eq = strchr(line, '=');
    if (!eq) {
        snprintf(err, errlen, "%s:%d: expected 'element = fg [bg] [attr...]'", src, lineno);
        return -1;
    }
    *eq = 0;
    char *name = trim(line), *rest = eq + 1;
    int el = -1;
    for (int i = 0; i < TH_COUNT; i++)
        if (!strcmp(name, el_names[i]))
            el = i;
    if (el < 0) {
        snprintf(err, errlen, "%s:%d: unknown element '%s'", src, lineno, name);
        return -1;
    }
    struct theme_style st = {THEME_DEFAULT_COLOUR, THEME_DEFAULT_COLOUR, 0};
    int nwords = 0, have_bg = 0, have_attr = 0;
    char *save = NULL;
    for (char *w = strtok_r(rest, " \t", &save); w; w = strtok_r(NULL, " \t", &save), nwords++) {
        short c;
        if (nwords == 0) {
            if (parse_colour(w, &st.fg) != 0) {
                snprintf(err, errlen, "%s:%d: %s: '%s' is not a colour", src, lineno, name, w);
                return -1;
            }
        } else if (!have_bg && !have_attr && parse_colour(w, &c) == 0) {
            st.bg = c;
            have_bg = 1;
        } else if (parse_attr(w, &st.attr) == 0) {
            have_attr = 1;
        } else {
            snprintf(err, errlen, "%s:%d: %s: '%s' is not a colour or attribute", src, lineno, name, w);
            return -1;
        }
    }
    if (nwords == 0) {
        snprintf(err, errlen, "%s:%d: %s: no colour given", src, lineno, name);
        return -1;
    }
    t->el[el] = st;
    return 0;
}

int theme_parse(struct theme *t, const char *text, const char *src, char *err, size_t errlen)
{
    char line[512];
    int lineno = 0;
    const char *p = text;
    while (*p) {
        const char *nl = strchr(p, '\n');
        size_t len = nl ? (size_t)(nl - p) : strlen(p);
        lineno++;
        if (len >= sizeof(line)) {
            snprintf(err, errlen, "%s:%d: line too long", src, lineno);
            return -1;
        }
        memcpy(line, p, len);
        line[len] = 0;
        p += len + (nl ? 1 : 0);
        char *hash = strchr(line, '#');
        if (hash)
            *hash = 0;
        char *s = trim(line);
        if (!*s)
            continue;
        if (parse_line(t, s, src, lineno, err, errlen) != 0)
            return -1;
    }
    return 0;
}

/* The folders to search, most specific first: $DDPTOP_THEME_DIR, the
 * themes/ folder beside the program (a build tree's copy), the install's
 * folder. Never the source tree: a built program does not know where it
 * was built from. */
static int theme_dirs(const char *dirs[3])
{
    static char beside[4096];
    int n = 0;
    const char *env = getenv("DDPTOP_THEME_DIR");
    if (env && env[0])
        dirs[n++] = env;
    if (!beside[0]) {
        char exe[4000];
        ssize_t k = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
        char *slash = k > 0 ? memrchr(exe, '/', (size_t)k) : NULL;
        if (slash)
            snprintf(beside, sizeof(beside), "%.*s/themes", (int)(slash - exe), exe);
    }
    if (beside[0])
        dirs[n++] = beside;
    if (DDPTOP_THEME_DIR[0])
        dirs[n++] = DDPTOP_THEME_DIR;
    return n;
}

static int load_file(struct theme *t, const char *path, char *err, size_t errlen)
{
    char *buf;
    size_t n;
    if (infile_read(path, 0, THEME_FILE_MAX, &buf, &n, err, errlen) != 0)
        return -1;
    int rc = -1;
    if (memchr(buf, 0, n))
        snprintf(err, errlen, "%s: not a text file", path);
    else
        rc = theme_parse(t, buf, path, err, errlen);
    free(buf);
    return rc;
}

/* The file theme `name` is read from, into path: 1, or 0 when no folder
 * has one. */
static int find_file(const char *name, char *path, size_t n)
{
    const char *dirs[3];
    int nd = theme_dirs(dirs);
    for (int i = 0; i < nd; i++) {
        snprintf(path, n, "%s/%s.theme", dirs[i], name);
        /* a name that exists is this theme, whatever it is: load_file
         * says why it cannot be read */
        struct stat st;
        if (stat(path, &st) == 0)
            return 1;
    }
    return 0;
}

const char *theme_file(const char *name, char *path, size_t n)
{
    if (!name[0] || strchr(name, '/') || strlen(name) >= THEME_NAME || !find_file(name, path, n))
        return NULL;
    return path;
}

int theme_load(struct theme *t, const char *name, char *err, size_t errlen)
{
    int mono = !strcmp(name, "monochrome");
    theme_builtin(t, mono);
    if (!name[0] || strchr(name, '/') || strlen(name) >= THEME_NAME) {
        snprintf(err, errlen, "'%s' is not a theme name", name);
        return -1;
    }
    char path[4200];
    if (find_file(name, path, sizeof(path))) {
        if (load_file(t, path, err, errlen) != 0)
            return -1;
        snprintf(t->name, sizeof(t->name), "%s", name);
        return 0;
    }
    /* the two built-ins need no file */
    if (mono || !strcmp(name, "default"))
        return 0;
    const char *dirs[3];
    int nd = theme_dirs(dirs);
    int k = snprintf(err, errlen, "no theme '%s' (looked for %s.theme in", name, name);
    for (int i = 0; i < nd && k > 0 && (size_t)k < errlen; i++)
        k += snprintf(err + k, errlen - (size_t)k, "%s %s", i ? "," : "", dirs[i]);
    if (k > 0 && (size_t)k < errlen)
        snprintf(err + k, errlen - (size_t)k, ")");
    return -1;
}

static int name_cmp(const void *a, const void *b)
{
    return strcmp((const char *)a, (const char *)b);
}

int theme_list(char names[][THEME_NAME], int max)
{
    static const char *const shipped[] = {"default", "light", "high-contrast", "monochrome"};
    char found[THEME_MAX_LIST][THEME_NAME];
    int nf = 0;
    const char *dirs[3];
    int nd = theme_dirs(dirs);
    for (int i = 0; i < nd; i++) {
        DIR *d = opendir(dirs[i]);
        if (!d)
            continue;
        struct dirent *e;
        while ((e = readdir(d)) != NULL && nf < THEME_MAX_LIST) {
            size_t len = strlen(e->d_name);
            if (len <= 6 || len - 6 >= THEME_NAME || strcmp(e->d_name + len - 6, ".theme") || e->d_name[0] == '.')
                continue;
            char nm[THEME_NAME];
            memcpy(nm, e->d_name, len - 6);
            nm[len - 6] = 0;
            int dup = 0;
            for (int k = 0; k < nf; k++)
                dup |= !strcmp(found[k], nm);
            if (!dup)
                memcpy(found[nf++], nm, THEME_NAME);
        }
        closedir(d);
    }
    qsort(found, (size_t)nf, THEME_NAME, name_cmp);
    int n = 0;
    for (size_t s = 0; s < sizeof(shipped) / sizeof(shipped[0]) && n < max; s++) {
        int here = !strcmp(shipped[s], "default") || !strcmp(shipped[s], "monochrome");
        for (int k = 0; k < nf; k++)
            here |= !strcmp(found[k], shipped[s]);
        if (here)
            snprintf(names[n++], THEME_NAME, "%s", shipped[s]);
    }
    for (int k = 0; k < nf && n < max; k++) {
        int dup = 0;
        for (int j = 0; j < n; j++)
            dup |= !strcmp(names[j], found[k]);
        if (!dup)
            snprintf(names[n++], THEME_NAME, "%s", found[k]);
    }
    return n;
}
