/* test_ui_core.c - the UI's curses-free modules: theme files, the binned
 * series behind the plots, number formats, fitting items to a width, the
 * next run's plan, speedups over the session's runs and DDP's buckets
 * found in a rank's spans.
 *
 * Themes: every file shipped in themes/ parses and sets every element (a
 * typo in an element name would otherwise leave a built-in default in
 * place silently), the shipped four list first in order, errors name
 * file:line, $DDPTOP_THEME_DIR wins over the other folders, NO_COLOR follows
 * no-color.org (set and not empty), and a theme that is not a regular file
 * (a FIFO, a device) or is too big is refused before it is read.
 * Series: bins merge pairwise when full, so the mean of everything pushed
 * and the x extent are preserved exactly, and NaN is a gap.
 * Formats: a rate label keeps three digits and its unit inside the
 * traffic pane's label column; the cut-off note names the keys. Scroll:
 * a pane's keys move its first row within its list and leave the keys it
 * does not take.
 * Plan: r/R and b/B stop at their bounds, the first change keeps the
 * strategy, n moves it. Scaling: results_speedup's base is a 1-rank run of
 * the same model, the live run too. Buckets: ready and allreduce times are
 * means over the steps asked for, from each step's first span.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <curses.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "buckets.h"
#include "fit.h"
#include "fmt.h"
#include "plan.h"
#include "scaling.h"
#include "scroll.h"
#include "series.h"
#include "strategy.h"
#include "theme.h"

/* ---- themes ------------------------------------------------------------------ */

/* (a test program is not beside the build tree's themes/: it names the
 * source's) */
static void test_shipped_themes_complete(void **state)
{
    setenv("DDPTOP_THEME_DIR", DDPTOP_SOURCE_THEME_DIR, 1);
    DIR *d = opendir(DDPTOP_SOURCE_THEME_DIR);
    assert_non_null(d);
    struct dirent *e;
    int files = 0;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (len <= 6 || strcmp(e->d_name + len - 6, ".theme"))
            continue;
        char path[1024], name[64];
        snprintf(path, sizeof(path), "%s/%s", DDPTOP_SOURCE_THEME_DIR, e->d_name);
        snprintf(name, sizeof(name), "%.*s", (int)(len - 6), e->d_name);
        FILE *f = fopen(path, "r");
        assert_non_null(f);
        static char text[65536];
        size_t n = fread(text, 1, sizeof(text) - 1, f);
        text[n] = 0;
        fclose(f);
        /* a sentinel base shows which elements the file did not set */
        struct theme t;
        memset(&t, 0, sizeof(t));
        for (int i = 0; i < TH_COUNT; i++)
            t.el[i].fg = -7;
        char err[256] = "";
        if (theme_parse(&t, text, path, err, sizeof(err)) != 0)
            fail_msg("%s: %s", path, err);
        for (int i = 0; i < TH_COUNT; i++)
            if (t.el[i].fg == -7)
                fail_msg("%s does not set '%s'", path, theme_el_name(i));
        /* and theme_load finds it by name */
        struct theme l;
        if (theme_load(&l, name, err, sizeof(err)) != 0)
            fail_msg("theme_load(%s): %s", name, err);
        assert_string_equal(l.name, name);
        files++;
    }
    closedir(d);
    assert_true(files >= 4);
    unsetenv("DDPTOP_THEME_DIR");
}

static void test_theme_list_order(void **state)
{
    setenv("DDPTOP_THEME_DIR", DDPTOP_SOURCE_THEME_DIR, 1);
    char names[THEME_MAX_LIST][THEME_NAME];
    int n = theme_list(names, THEME_MAX_LIST);
    assert_true(n >= 4);
    assert_string_equal(names[0], "default");
    assert_string_equal(names[1], "light");
    assert_string_equal(names[2], "high-contrast");
    assert_string_equal(names[3], "monochrome");
    for (int i = 0; i < n; i++)
        for (int j = 0; j < i; j++)
            assert_string_not_equal(names[i], names[j]);
    unsetenv("DDPTOP_THEME_DIR");
}

static void expect_error(const char *text, const char *needle)
{
    struct theme t;
    theme_builtin(&t, 0);
    char err[256] = "";
    assert_int_equal(theme_parse(&t, text, "x.theme", err, sizeof(err)), -1);
    if (!strstr(err, needle))
        fail_msg("error '%s' lacks '%s'", err, needle);
}

static void test_theme_syntax(void **state)
{
    struct theme t;
    theme_builtin(&t, 0);
    char err[256] = "";
    const char *good = "# comment\n\n  title = bright-red blue bold underline  # trailing\n"
                       "comm = 200\nidle = default default dim\nborder = green reverse\n";
    assert_int_equal(theme_parse(&t, good, "g.theme", err, sizeof(err)), 0);
    assert_int_equal(t.el[TH_TITLE].fg, 9);
    assert_int_equal(t.el[TH_TITLE].bg, 4);
    assert_int_equal(t.el[TH_TITLE].attr, THEME_BOLD | THEME_UNDERLINE);
    assert_int_equal(t.el[TH_CAT_COMM].fg, 200);
    assert_int_equal(t.el[TH_CAT_COMM].bg, THEME_DEFAULT_COLOUR);
    assert_int_equal(t.el[TH_CAT_IDLE].attr, THEME_DIM);
    assert_int_equal(t.el[TH_BORDER].fg, 2);
    assert_int_equal(t.el[TH_BORDER].bg, THEME_DEFAULT_COLOUR);
    assert_int_equal(t.el[TH_BORDER].attr, THEME_REVERSE);

    expect_error("titel = red\n", "x.theme:1: unknown element 'titel'");
    expect_error("\n\ncomm = purple\n", "x.theme:3:");
    expect_error("comm = 256\n", "not a colour");
    expect_error("comm = red blue green\n", "'green' is not a colour or attribute");
    expect_error("comm = red blink\n", "'blink'");
    expect_error("comm red\n", "x.theme:1: expected");
    expect_error("comm =\n", "no colour");
}

static void test_theme_dirs_and_env(void **state)
{
    char dir[] = "/tmp/ddptop-theme-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof(path), "%s/zz-custom.theme", dir);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("comm = magenta\n", f);
    fclose(f);
    snprintf(path, sizeof(path), "%s/default.theme", dir);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("title = yellow\n", f);
    fclose(f);

    setenv("DDPTOP_THEME_DIR", dir, 1);
    struct theme t;
    char err[512];
    assert_int_equal(theme_load(&t, "zz-custom", err, sizeof(err)), 0);
    assert_int_equal(t.el[TH_CAT_COMM].fg, 5);
    /* the env folder wins over the others */
    assert_int_equal(theme_load(&t, "default", err, sizeof(err)), 0);
    assert_int_equal(t.el[TH_TITLE].fg, 3);
    char names[THEME_MAX_LIST][THEME_NAME];
    int n = theme_list(names, THEME_MAX_LIST), found = 0;
    for (int i = 0; i < n; i++)
        found |= !strcmp(names[i], "zz-custom");
    assert_true(found);
    assert_string_equal(names[n - 1], "zz-custom");

    assert_int_equal(theme_load(&t, "no-such-theme", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "no-such-theme"));
    assert_non_null(strstr(err, dir));
    assert_int_equal(theme_load(&t, "../etc/passwd", err, sizeof(err)), -1);

    unsetenv("DDPTOP_THEME_DIR");
    unlink(path);
    snprintf(path, sizeof(path), "%s/zz-custom.theme", dir);
    unlink(path);
    rmdir(dir);
}

/* A FIFO named like a theme would block its reader until a writer came. */
#define HANG_LIMIT_S 30

static void test_theme_not_regular(void **state)
{
    char dir[] = "/tmp/ddptop-theme-XXXXXX";
    assert_non_null(mkdtemp(dir));
    char fifo[256], dev[256], big[256], err[512];
    snprintf(fifo, sizeof(fifo), "%s/pipe.theme", dir);
    snprintf(dev, sizeof(dev), "%s/zero.theme", dir);
    snprintf(big, sizeof(big), "%s/big.theme", dir);
    assert_int_equal(mkfifo(fifo, 0600), 0);
    assert_int_equal(symlink("/dev/zero", dev), 0);
    FILE *f = fopen(big, "w");
    assert_non_null(f);
    for (int i = 0; i < 70000; i++)
        fputc('\n', f);
    fclose(f);
    setenv("DDPTOP_THEME_DIR", dir, 1);
    struct theme t;
    alarm(HANG_LIMIT_S);
    assert_int_equal(theme_load(&t, "pipe", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "pipe.theme: not a regular file (a FIFO)"));
    assert_int_equal(theme_load(&t, "zero", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "zero.theme: not a regular file (a character device)"));
    alarm(0);
    assert_int_equal(theme_load(&t, "big", err, sizeof(err)), -1);
    assert_non_null(strstr(err, "big.theme: larger than 65536 bytes"));
    unsetenv("DDPTOP_THEME_DIR");
    unlink(fifo);
    unlink(dev);
    unlink(big);
    rmdir(dir);
}

static void test_no_color(void **state)
{
    unsetenv("NO_COLOR");
    assert_false(theme_no_color_env());
    setenv("NO_COLOR", "", 1);
    assert_false(theme_no_color_env());
    setenv("NO_COLOR", "1", 1);
    assert_true(theme_no_color_env());
    unsetenv("NO_COLOR");
    struct theme m;
    theme_builtin(&m, 1);
    for (int i = 0; i < TH_COUNT; i++) {
        assert_int_equal(m.el[i].fg, THEME_DEFAULT_COLOUR);
        assert_int_equal(m.el[i].bg, THEME_DEFAULT_COLOUR);
    }
}

/* ---- series ------------------------------------------------------------------ */

static void test_series_binning(void **state)
{
    static struct series s;
    series_reset(&s);
    double lo, hi;
    assert_false(series_range(&s, 0, &lo, &hi));
    assert_true(isnan(series_last(&s)));
    const int N = 100003;
    double sum = 0;
    for (int i = 0; i < N; i++) {
        series_push(&s, i);
        sum += i;
        assert_true(s.nbins <= SERIES_BINS);
    }
    assert_int_equal(s.n, N);
    /* nothing lost in the merges: bins add back up to every sample */
    uint64_t pushed = 0;
    double bsum = 0;
    for (int b = 0; b < s.nbins; b++) {
        pushed += s.pushed[b];
        bsum += s.sum[b];
        if (b < s.nbins - 1)
            assert_int_equal(s.pushed[b], s.per_bin);
    }
    assert_int_equal(pushed, N);
    assert_float_equal(bsum, sum, 1e-6 * sum);
    /* x extent: nbins full bins of per_bin cover every sample */
    assert_true((uint64_t)(s.nbins - 1) * s.per_bin < (uint64_t)N);
    assert_true((uint64_t)s.nbins * s.per_bin >= (uint64_t)N);
    assert_true(series_range(&s, 0, &lo, &hi));
    assert_true(lo < hi);
    assert_true(lo >= 0 && hi <= N - 1);
    assert_float_equal(series_bin(&s, 0), (s.per_bin - 1) / 2.0, 1e-9);
}

static void test_series_nan_and_log(void **state)
{
    static struct series s;
    series_reset(&s);
    series_push(&s, NAN);
    series_push(&s, 2.0);
    series_push(&s, -1.0);
    series_push(&s, INFINITY);
    assert_int_equal(s.n, 4);
    assert_true(isnan(series_bin(&s, 0)));
    assert_float_equal(series_bin(&s, 1), 2.0, 0);
    double lo, hi;
    assert_true(series_range(&s, 0, &lo, &hi));
    assert_float_equal(lo, -1.0, 0);
    assert_true(series_range(&s, 1, &lo, &hi)); /* log: only positives */
    assert_float_equal(lo, 2.0, 0);
    assert_float_equal(hi, 2.0, 0);
    assert_true(isnan(series_last(&s)));
}

/* ---- formats and fitting ------------------------------------------------------ */

static void expect_rate(double v, const char *want)
{
    char b[32];
    fmt_rate(b, sizeof(b), v);
    if (strcmp(b, want))
        fail_msg("fmt_rate(%g) = '%s', expected '%s'", v, b, want);
}

static void test_fmt_rate(void **state)
{
    expect_rate(0, "0 B/s");
    expect_rate(NAN, "0 B/s");
    expect_rate(512, "512 B/s");
    expect_rate(59.3e6, "59.3 MB/s");
    expect_rate(142e6, "142 MB/s");
    expect_rate(4.448e9, "4.45 GB/s");
    expect_rate(999.7e6, "1.00 GB/s"); /* the rounding carries into the next unit */
    expect_rate(310e6, "310 MB/s");
    /* it fits the traffic pane's 9-column labels below 1000 TB/s */
    for (double v = 1; v < 1e15; v *= 1.37) {
        char b[32];
        fmt_rate(b, sizeof(b), v);
        if (strlen(b) > 9)
            fail_msg("fmt_rate(%g) = '%s' is wider than 9", v, b);
    }
}

/* Counts and rates in three significant figures, as the reports print
 * samples/s: a pane's 6.6k could not give back the speedup beside it. */
static void test_fmt_si(void **state)
{
    (void)state;
    static const struct {
        double v;
        const char *want;
    } cases[] = {{6612, "6.61k"}, {21612, "21.6k"}, {312, "312"}, {1.5e6, "1.50M"},
                 {9.5, "9.50"},   {999.4, "999"},   {0, "0.00"},  {-2500, "-2.50k"}};
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        char b[16];
        fmt_si(b, sizeof(b), cases[i].v);
        assert_string_equal(b, cases[i].want);
    }
}

static void test_scroll_key(void **state)
{
    (void)state;
    /* 10 items, 4 rows: the first row shown is 0 to 6 */
    int first = 0;
    assert_int_equal(scroll_key(KEY_UP, SCROLL_LINES, &first, 4, 10), 1);
    assert_int_equal(first, 0);
    assert_int_equal(scroll_key(KEY_DOWN, SCROLL_LINES, &first, 4, 10), 1);
    assert_int_equal(first, 1);
    assert_int_equal(scroll_key(KEY_NPAGE, SCROLL_LINES | SCROLL_PAGES, &first, 4, 10), 1);
    assert_int_equal(first, 5);
    assert_int_equal(scroll_key(KEY_NPAGE, SCROLL_PAGES, &first, 4, 10), 1);
    assert_int_equal(first, 6);
    assert_int_equal(scroll_key(KEY_DOWN, SCROLL_LINES, &first, 4, 10), 1);
    assert_int_equal(first, 6);
    assert_int_equal(scroll_key(KEY_PPAGE, SCROLL_PAGES, &first, 4, 10), 1);
    assert_int_equal(first, 2);
    assert_int_equal(scroll_key(KEY_PPAGE, SCROLL_PAGES, &first, 4, 10), 1);
    assert_int_equal(first, 0);
    assert_int_equal(scroll_key(KEY_END, SCROLL_ENDS, &first, 4, 10), 1);
    assert_int_equal(first, 6);
    assert_int_equal(scroll_key(KEY_HOME, SCROLL_ENDS, &first, 4, 10), 1);
    assert_int_equal(first, 0);
    /* keys the pane does not take are left to others, the row kept */
    first = 3;
    assert_int_equal(scroll_key(KEY_HOME, SCROLL_LINES | SCROLL_PAGES, &first, 4, 10), 0);
    assert_int_equal(scroll_key(KEY_NPAGE, SCROLL_LINES | SCROLL_ENDS, &first, 4, 10), 0);
    assert_int_equal(scroll_key('x', SCROLL_LINES | SCROLL_PAGES | SCROLL_ENDS, &first, 4, 10), 0);
    assert_int_equal(first, 3);
    /* everything fits: nowhere to go */
    assert_int_equal(scroll_key(KEY_DOWN, SCROLL_LINES, &first, 12, 10), 1);
    assert_int_equal(first, 0);
}

static void test_fmt_hidden(void **state)
{
    char b[128];
    fmt_hidden(b, sizeof(b), 0, 0, "rank", 0, 1);
    assert_string_equal(b, "");
    fmt_hidden(b, sizeof(b), 0, 3, "rank", 0, 1);
    assert_string_equal(b, "+3 ranks below: tab, then \u2193 scrolls");
    fmt_hidden(b, sizeof(b), 0, 1, "rank", 1, 0);
    assert_string_equal(b, "+1 rank below: Down scrolls");
    fmt_hidden(b, sizeof(b), 2, 0, "lane", 1, 0);
    assert_string_equal(b, "+2 lanes above: Up scrolls");
    fmt_hidden(b, sizeof(b), 1, 2, "layer", 0, 0);
    assert_string_equal(b, "+1 layer above, +2 below: tab, then Up/Down scroll");
}

/* The Kernels pane's rows fill the width given, the name taking what the
 * columns leave and cut with "..." (the figures as the report prints
 * them: mean us, total ms, share %); the spacing written out by hand. */
static void test_fmt_kernel_row(void **state)
{
    (void)state;
    char b[256];
    /* 80 columns: 13 type + 1, 27 name, then " %8s %10s %10s %7s" */
    fmt_kernel_row(b, sizeof(b), 80, "computation", "k01_gemm", 2, 150.0, 300000, 36.125);
    assert_string_equal(b, "computation   k01_gemm                           2      150.0      0.300    36.1");
    assert_int_equal(strlen(b), 80);
    fmt_kernel_head(b, sizeof(b), 80);
    assert_string_equal(b, "type          kernel                         count    mean us   total ms  share%");
    /* 65 columns leave the name its least, 12: nine characters and "..." */
    fmt_kernel_row(b, sizeof(b), 65, "communication", "ncclDevKernel_AllReduce_Sum_f32", 1, 300.0, 300000, 100);
    assert_string_equal(b, "communication ncclDevKe...        1      300.0      0.300   100.0");
    /* narrower still: the name keeps its least, the line runs over */
    fmt_kernel_row(b, sizeof(b), 40, "memory", "Memcpy DtoH (Device -> Pinned)", 0, 0.0, 0, 0);
    assert_string_equal(b, "memory        Memcpy Dt...        0        0.0      0.000     0.0");
}

static void test_fit_by_priority(void **state)
{
    /* widths 5 each with a 1-wide gap: 4 items need 24 */
    int w[4] = {5, 5, 5, 5}, drop[4] = {0, 2, 1, 2}, on[4];
    assert_int_equal(fit_by_priority(w, drop, 4, 1, 24, on), 24);
    assert_true(on[0] && on[1] && on[2] && on[3]);
    /* the highest drop goes first, the rightmost of equals first */
    fit_by_priority(w, drop, 4, 1, 23, on);
    assert_true(on[0] && on[1] && on[2] && !on[3]);
    fit_by_priority(w, drop, 4, 1, 17, on);
    assert_true(on[0] && !on[1] && on[2] && !on[3]);
    fit_by_priority(w, drop, 4, 1, 8, on);
    assert_true(on[0] && !on[1] && !on[2] && !on[3]);
    /* what never drops stays, even when it does not fit */
    assert_int_equal(fit_by_priority(w, drop, 4, 1, 2, on), 6);
    assert_true(on[0]);
}

/* No two labels share a column or cover a later mark, each stays inside
 * the line, and the last is kept. */
static void check_marks(const int *mark, const int *wide, const int *narrow, int n, int room, const int *x,
                        const int *len)
{
    assert_true(x[n - 1] >= 0);
    int prev_end = -1;
    for (int i = 0; i < n; i++) {
        if (x[i] < 0)
            continue;
        assert_true(len[i] == wide[i] || len[i] == narrow[i]);
        assert_true(x[i] >= 0 && x[i] + len[i] <= room);
        assert_true(x[i] > prev_end);
        /* (the last label may cover marks before it, but only in its short
         * form, where nothing else fits) */
        for (int j = 0; j < n; j++)
            assert_true(j == i || (i == n - 1 && j < i && len[i] == narrow[i]) || mark[j] < x[i] ||
                        mark[j] >= x[i] + len[i]);
        prev_end = x[i] + len[i];
    }
}

static void test_fit_marks(void **state)
{
    /* six epochs 12 columns apart, "acc 57.7%" wide: the last is at the
     * line's end and goes left of its mark, which leaves no room for the
     * fifth; the others are whole */
    int mark[6] = {10, 22, 34, 46, 58, 70}, wide[6], narrow[6], x[6], len[6];
    for (int i = 0; i < 6; i++) {
        wide[i] = 9;
        narrow[i] = 5;
    }
    fit_marks(mark, wide, narrow, 6, 71, x, len);
    check_marks(mark, wide, narrow, 6, 71, x, len);
    assert_int_equal(x[5], 61);
    assert_int_equal(len[5], 9);
    assert_int_equal(x[4], -1);
    for (int i = 0; i < 4; i++) {
        assert_int_equal(x[i], mark[i] + 1);
        assert_int_equal(len[i], 9);
    }
    /* 7 columns apart: only the short form fits between marks */
    int close[3] = {0, 7, 14};
    fit_marks(close, wide, narrow, 3, 40, x, len);
    check_marks(close, wide, narrow, 3, 40, x, len);
    assert_int_equal(len[0], 5);
    assert_int_equal(len[1], 5);
    assert_int_equal(len[2], 9);
    /* the last label goes left of its mark, but not over the mark before
     * it while the short form clears it: 64-68, not 60-68 over mark 63 */
    int end[3] = {55, 63, 69};
    fit_marks(end, wide, narrow, 3, 70, x, len);
    check_marks(end, wide, narrow, 3, 70, x, len);
    assert_int_equal(x[2], 64);
    assert_int_equal(len[2], 5);
    /* any marks at all: the rules hold */
    unsigned seed = 7;
    for (int t = 0; t < 2000; t++) {
        int n = 1 + (int)((seed = seed * 1103515245u + 12345u) >> 16) % 6, room = 20 + (int)(seed >> 8) % 60;
        int m[6], at = 0;
        for (int i = 0; i < n; i++) {
            seed = seed * 1103515245u + 12345u;
            at += (int)(seed >> 16) % 14;
            m[i] = at < room ? at : room - 1;
        }
        fit_marks(m, wide, narrow, n, room, x, len);
        check_marks(m, wide, narrow, n, room, x, len);
    }
}

/* Notes and status lines never cut a label in half (36.10: "s: start  g:"
 * and "final report on screen (s:" at 80x24): at every width, what is
 * shown is the longest of the whole-item prefixes listed here by hand that
 * fits, or, when not even the first fits, the text cut with a mark. */
static int utf8_cols(const char *s)
{
    int c = 0;
    for (; *s; s++)
        c += ((unsigned char)*s & 0xC0) != 0x80;
    return c;
}

static void test_fit_note(void **state)
{
    (void)state;
    static const char *const cases[][5] = {
        {"3 runs", "3 runs  next: horovod, 1 rank x 32", "3 runs  next: horovod, 1 rank x 32  s: start",
         "3 runs  next: horovod, 1 rank x 32  s: start  g: plot", NULL},
        {"run done: 300 steps, 12.61 ms/step, 2.5k samples/s",
         "run done: 300 steps, 12.61 ms/step, 2.5k samples/s; final report on screen",
         "run done: 300 steps, 12.61 ms/step, 2.5k samples/s; final report on screen (s: next run, q: quit)", NULL},
        {"+1 run above: tab, then \u2191 scrolls",
         "+1 run above: tab, then \u2191 scrolls  !: run 2: efficiency 313% against run 1 is above 100%",
         "+1 run above: tab, then \u2191 scrolls  !: run 2: efficiency 313% against run 1 is above 100%; likely "
         "cause: step-time noise",
         NULL},
        {"next run: ddp, 1 rank x 16", "next run: ddp, 1 rank x 16  (s starts it; r/R ranks, b/B batch, n strategy)",
         NULL},
        {"steps 805-807", "steps 805-807  18.73 ms", "steps 805-807  18.73 ms  +/- zoom",
         "steps 805-807  18.73 ms  +/- zoom  <-/-> history", NULL},
    };
    for (size_t c = 0; c < sizeof(cases) / sizeof(cases[0]); c++) {
        int nk = 0;
        while (nk < 5 && cases[c][nk])
            nk++;
        const char *full = cases[c][nk - 1];
        int fullw = utf8_cols(full);
        for (int utf8 = 0; utf8 < 2; utf8++)
            for (int room = -1; room <= fullw + 3; room++) {
                char out[256], want[256] = "";
                int got = fit_note(full, room, utf8, out, sizeof(out));
                for (int k = 0; k < nk; k++)
                    if (utf8_cols(cases[c][k]) <= room)
                        snprintf(want, sizeof(want), "%s", cases[c][k]);
                if (!want[0] && room >= 1) {
                    /* not even the first item: room - 1 characters and the mark */
                    size_t at = 0;
                    for (int k = 0; k < room - 1; k++)
                        do
                            at++;
                        while (((unsigned char)full[at] & 0xC0) == 0x80);
                    snprintf(want, sizeof(want), "%.*s%s", (int)at, full, utf8 ? "\u2026" : "~");
                }
                if (strcmp(out, want) != 0)
                    fail_msg("case %zu, room %d: \"%s\", expected \"%s\"", c, room, out, want);
                assert_int_equal(got, utf8_cols(want));
                assert_true(got <= (room > 0 ? room : 0));
            }
    }
    /* a buffer too short cuts, never past its end nor inside a character */
    char tiny[6];
    fit_note("ab\u2191cd  ef", 40, 1, tiny, sizeof(tiny));
    assert_string_equal(tiny, "ab\u2191");
}

/* The help overlay's wrap, at every width: lines within the width, no
 * space at either end, the words in order and whole (unless a word alone
 * is wider than a line), and no line that could have taken the next word. */
static void test_fit_wrap(void **state)
{
    (void)state;
    static const char *const texts[] = {
        "stop this run, start the next (the Runs title says which)",
        "layers: per-layer times and ddp buckets (for the timeline)",
        "  two  spaces and a verylongwordthatdoesnotfit  ",
        "",
    };
    for (size_t t = 0; t < sizeof(texts) / sizeof(texts[0]); t++)
        for (int width = 0; width <= 70; width++) {
            int st[64], ln[64];
            int n = fit_wrap(texts[t], width, st, ln, 64);
            char joined[256] = "", words[256] = "";
            size_t jl = 0;
            for (int k = 0; k < n; k++) {
                const char *line = texts[t] + st[k];
                assert_true(ln[k] >= 1 && ln[k] <= width);
                assert_true(line[0] != ' ' && line[ln[k] - 1] != ' ');
                jl += (size_t)snprintf(joined + jl, sizeof(joined) - jl, "%s%.*s", k ? "\n" : "", ln[k], line);
                if (k + 1 < n && texts[t][st[k] + ln[k]] == ' ') {
                    /* the next line starts a word: it did not fit here */
                    int next = 0;
                    while (texts[t][st[k + 1] + next] && texts[t][st[k + 1] + next] != ' ')
                        next++;
                    assert_true(st[k + 1] - st[k] + next > width); /* (this line, the spaces, that word) */
                }
            }
            /* the words in order: the text's, spaces squeezed; the lines' */
            size_t wl = 0;
            for (const char *c = texts[t]; *c; c++)
                if (*c != ' ' && wl + 1 < sizeof(words))
                    words[wl++] = *c;
                else if (*c == ' ' && wl > 0 && words[wl - 1] != '\n' && wl + 1 < sizeof(words))
                    words[wl++] = '\n';
            while (wl > 0 && words[wl - 1] == '\n')
                wl--;
            words[wl] = 0;
            char squeezed[256];
            size_t q = 0;
            for (const char *c = joined; *c; c++)
                if (*c != ' ' && *c != '\n')
                    squeezed[q++] = *c;
                else if (q > 0 && squeezed[q - 1] != '\n')
                    squeezed[q++] = '\n';
            squeezed[q] = 0;
            if (width < 1) {
                assert_int_equal(n, 0);
            } else if (width >= 26) { /* (every word fits, the longest too: none is cut) */
                assert_string_equal(squeezed, words);
            } else {
                /* cut words: the characters still all there, in order */
                char a[256], b[256];
                size_t na = 0, nb = 0;
                for (const char *c = squeezed; *c; c++)
                    if (*c != '\n')
                        a[na++] = *c;
                for (const char *c = words; *c; c++)
                    if (*c != '\n')
                        b[nb++] = *c;
                a[na] = b[nb] = 0;
                assert_string_equal(a, b);
            }
        }
}

/* ---- the next run's plan ---------------------------------------------------------- */

static void test_plan(void **state)
{
    struct run_config cur;
    memset(&cur, 0, sizeof(cur));
    cur.strategy = STRAT_ALLREDUCE;
    cur.ranks = 2;
    cur.batch_size = 32;
    struct plan p;
    char err[128], d[96];
    plan_reset(&p, &cur);
    /* untouched, `s` moves to the next strategy as it always did */
    assert_int_equal(p.strategy, STRAT_DDP);
    assert_false(p.edited);
    /* the first change of ranks keeps the current strategy */
    assert_int_equal(plan_ranks(&p, &cur, -1, err, sizeof(err)), 0);
    assert_int_equal(p.ranks, 1);
    assert_int_equal(p.strategy, STRAT_ALLREDUCE);
    assert_true(p.edited);
    plan_describe(&p, d, sizeof(d));
    assert_string_equal(d, "allreduce, 1 rank x 32");
    /* at a bound: refused, with the bound, and the plan stays */
    assert_int_equal(plan_ranks(&p, &cur, -1, err, sizeof(err)), -1);
    assert_non_null(strstr(err, "1 is the fewest"));
    assert_int_equal(p.ranks, 1);
    assert_int_equal(plan_ranks(&p, &cur, 1, err, sizeof(err)), 0);
    assert_int_equal(plan_ranks(&p, &cur, 1, err, sizeof(err)), 0);
    assert_int_equal(p.ranks, 3);
    /* batch: halves and doubles, within 1..CFG_MAX_BATCH */
    assert_int_equal(plan_batch(&p, &cur, 1, err, sizeof(err)), 0);
    assert_int_equal(p.batch, 64);
    while (plan_batch(&p, &cur, -1, err, sizeof(err)) == 0)
        ;
    assert_int_equal(p.batch, 1);
    assert_non_null(strstr(err, "smallest"));
    while (plan_batch(&p, &cur, 1, err, sizeof(err)) == 0)
        ;
    assert_int_equal(p.batch, CFG_MAX_BATCH);
    /* n: the next strategy, wrapping; single runs the global batch on one rank */
    plan_next_strategy(&p);
    assert_int_equal(p.strategy, STRAT_DDP);
    plan_next_strategy(&p);
    assert_int_equal(p.strategy, STRAT_HOROVOD);
    plan_next_strategy(&p);
    assert_int_equal(p.strategy, STRAT_SINGLE);
    p.batch = 32;
    plan_describe(&p, d, sizeof(d));
    assert_string_equal(d, "single, 1 rank x 96");
    /* a new run resets it */
    cur.strategy = STRAT_HOROVOD; /* the last: the next wraps */
    plan_reset(&p, &cur);
    assert_int_equal(p.strategy, STRAT_SINGLE);
    assert_false(p.edited);
}

/* Every run the UI plans for comparison keeps the threads per rank of the
 * runs it is compared with: a 1-rank run planned after 2-rank runs of one
 * thread each must not get the cores the 2 ranks shared (36.1: 102.52x). */
static void test_plan_threads(void **state)
{
    (void)state;
    struct config cfg;
    char *argv[] = {"ddptop", "--batch", "--model", "lenet", "--ranks", "2", "--strategy", "allreduce"};
    assert_int_equal(config_parse(&cfg, 8, argv, stdout, stderr), 0);
    struct run_config cur;
    config_expand(&cfg, 0, &cur); /* the session's first run, as the command line made it */
    assert_true(cur.threads_per_rank >= 1);
    int made = cur.threads_per_rank;
    for (int pass = 0; pass < 2; pass++) {
        /* pass 1: the runs so far ran 7 threads per rank (whatever this
         * machine's cores would make the default) */
        int want = pass == 0 ? made : 7;
        cur.threads_per_rank = want;
        struct plan p;
        char err[128];
        struct run_config rc;
        plan_reset(&p, &cur);
        plan_config(&p, &cfg, &cur, &rc); /* s untouched: the next strategy */
        assert_int_equal(rc.threads_per_rank, want);
        assert_int_equal(plan_ranks(&p, &cur, -1, err, sizeof(err)), 0); /* r: 1 rank */
        plan_config(&p, &cfg, &cur, &rc);
        assert_int_equal(rc.ranks, 1);
        assert_int_equal(rc.threads_per_rank, want);
        while (p.strategy != STRAT_SINGLE) /* n: single, the global batch on one rank */
            plan_next_strategy(&p);
        plan_config(&p, &cfg, &cur, &rc);
        assert_int_equal(rc.threads_per_rank, want);
        assert_int_equal(plan_ranks(&p, &cur, 1, err, sizeof(err)), 0);
        assert_int_equal(plan_ranks(&p, &cur, 1, err, sizeof(err)), 0); /* R R: 3 ranks */
        plan_config(&p, &cfg, &cur, &rc);
        assert_int_equal(rc.ranks, 3);
        assert_int_equal(rc.threads_per_rank, want);
    }
}

/* ---- speedups ------------------------------------------------------------------------ */

static void result(struct run_result *r, const char *model, int strategy, int world, int global, double sps)
{
    memset(r, 0, sizeof(*r));
    snprintf(r->cfg.model, sizeof(r->cfg.model), "%s", model);
    r->cfg.strategy = strategy;
    r->world = world;
    r->global_batch = global;
    r->rate.samples_s = sps;
    /* speedups go by median step times, as a finished run's report has them */
    r->rate.ms = sps > 0 ? 1e3 * global / sps : 0;
    r->ms_mean = 1.5 * r->rate.ms; /* (a few slow steps pull the mean up) */
    r->ms_valid = r->batch_valid = sps > 0;
}

static void test_scaling(void **state)
{
    struct run_result res[3], live;
    result(&res[0], "lenet", STRAT_DDP, 2, 64, 1800);
    result(&res[1], "mlp", STRAT_DDP, 1, 32, 5000);
    result(&res[2], "lenet", STRAT_ALLREDUCE, 4, 128, 2000);
    struct scaling sc;
    memset(&sc, 0, sizeof(sc));
    /* no 1-rank lenet: no speedup for lenet's runs */
    assert_int_equal(scaling_update(&sc, res, 3, NULL, BASELINE_AUTO), 0);
    assert_int_equal(sc.n, 3);
    assert_false(sc.row[0].valid);
    assert_true(sc.row[1].valid);
    assert_float_equal(sc.row[1].speedup, 1.0, 1e-12);
    struct scaling_axes ax;
    assert_int_equal(scaling_axes(&sc, &ax), 1);
    /* the live run is a 1-rank lenet: the base of the finished ones */
    result(&live, "lenet", STRAT_DDP, 1, 32, 1000);
    assert_int_equal(scaling_update(&sc, res, 3, &live, BASELINE_AUTO), 0);
    assert_int_equal(sc.n, 4);
    assert_true(sc.row[0].valid);
    assert_float_equal(sc.row[0].speedup, 1.8, 1e-12);
    assert_float_equal(sc.row[0].efficiency_pct, 90.0, 1e-9);
    assert_float_equal(sc.row[2].speedup, 2.0, 1e-12);
    assert_float_equal(sc.row[2].efficiency_pct, 50.0, 1e-9);
    assert_int_equal(sc.row[2].world, 4);
    assert_int_equal(sc.row[2].strategy, STRAT_ALLREDUCE);
    assert_true(sc.row[3].valid);
    /* the axes: ranks to 4, speedup to the ideal's 4 */
    assert_int_equal(scaling_axes(&sc, &ax), 4);
    assert_int_equal(ax.max_world, 4);
    assert_float_equal(ax.max_y, 4.0, 0);
    /* the session's results are left as they were */
    assert_false(res[0].speedup_valid);
    /* many runs: the rows grow */
    static struct run_result many[40];
    for (int i = 0; i < 40; i++)
        result(&many[i], "lenet", STRAT_DDP, 1 + i % 8, 32 * (1 + i % 8), 900.0 * (1 + i % 8));
    assert_int_equal(scaling_update(&sc, many, 40, &live, BASELINE_AUTO), 0);
    assert_int_equal(sc.n, 41);
    assert_float_equal(sc.row[7].speedup, 8 * 900.0 / 900.0, 1e-9);
    /* the samples/s shown beside a speedup is the one it compares: the
     * global batch over the median step, not over the mean */
    assert_float_equal(sc.row[0].samples_per_s, 900.0, 1e-9);
    assert_float_equal(sc.row[7].samples_per_s, 8 * 900.0, 1e-9);
    scaling_free(&sc);
}

/* Two strategies at one speedup on the same rank count fall in one cell
 * of the Scaling plot: both letters are shown, side by side. Worked by
 * hand on 40 x 10 cells of 2 x 4 dots (80 x 40 dots), axes ranks 1..2 and
 * speedup 0..2: the 1-rank base at dot (0, 20), cell (0, 5); both 2-rank
 * runs (1800 against 1000 samples/s: 1.8x) at dot (79, 4), cell (39, 1),
 * the right edge, so the second moves left to (38, 1). */
static void test_scaling_marks_side_by_side(void **state)
{
    (void)state;
    struct run_result res[3];
    result(&res[0], "lenet", STRAT_DDP, 1, 32, 1000);
    result(&res[1], "lenet", STRAT_DDP, 2, 64, 1800);
    result(&res[2], "lenet", STRAT_ALLREDUCE, 2, 64, 1800);
    struct scaling sc;
    memset(&sc, 0, sizeof(sc));
    assert_int_equal(scaling_update(&sc, res, 3, NULL, BASELINE_AUTO), 0);
    struct scaling_axes ax;
    assert_int_equal(scaling_axes(&sc, &ax), 3);
    struct scaling_mark m[8];
    int crowded = -1;
    assert_int_equal(scaling_marks(&sc, &ax, 40, 10, 2, 4, m, 8, &crowded), 3);
    assert_int_equal(crowded, 0);
    assert_int_equal(m[0].x, 0);
    assert_int_equal(m[0].y, 5);
    assert_int_equal(m[1].x, 39);
    assert_int_equal(m[1].y, 1);
    assert_int_equal(m[1].letter, 'd'); /* the legend's letters */
    assert_int_equal(m[2].x, 38);
    assert_int_equal(m[2].y, 1);
    assert_int_equal(m[2].letter, 'a');
    /* a plot one cell wide has no room beside: the second stays, counted */
    assert_int_equal(scaling_marks(&sc, &ax, 1, 10, 2, 4, m, 8, &crowded), 3);
    assert_int_equal(crowded, 1);
    scaling_free(&sc);
}

/* An efficiency above 100% carries the batch report's note in the Runs
 * pane too: 2 ranks at 1600 samples/s against 1 rank at 320 is 5x on 2
 * ranks, 250% (worked by hand: 1600 / 320 = 5, 5 / 2 = 250%). */
static void test_scaling_over_ideal(void **state)
{
    (void)state;
    struct run_result res[2], live;
    result(&res[0], "lenet", STRAT_DDP, 1, 32, 320);
    result(&res[1], "lenet", STRAT_DDP, 2, 64, 1600);
    for (int i = 0; i < 2; i++) {
        res[i].ms_mean = res[i].ms_p90 = res[i].rate.ms; /* every statistic alike */
        res[i].steps = 100;
        res[i].threads_per_rank = 1;
    }
    struct scaling sc;
    memset(&sc, 0, sizeof(sc));
    assert_int_equal(scaling_update(&sc, res, 2, NULL, BASELINE_AUTO), 0);
    assert_float_equal(sc.row[1].efficiency_pct, 250.0, 1e-9);
    assert_string_equal(sc.row[0].over_note, "");
    assert_non_null(strstr(sc.row[1].over_note, "efficiency 250% against run 0 is above 100%; likely cause: "));
    /* the live run the same, from its figures; one at 90% has no note */
    result(&live, "lenet", STRAT_DDP, 2, 64, 576);
    live.steps = 100;
    live.threads_per_rank = 1;
    assert_int_equal(scaling_update(&sc, res, 1, &live, BASELINE_AUTO), 0);
    assert_float_equal(sc.row[1].efficiency_pct, 90.0, 1e-9);
    assert_string_equal(sc.row[1].over_note, "");
    live.rate.samples_s = 960; /* 3x on 2 ranks: 150% */
    live.rate.ms = 1e3 * 64 / 960;
    assert_int_equal(scaling_update(&sc, res, 1, &live, BASELINE_AUTO), 0);
    assert_non_null(strstr(sc.row[1].over_note, "efficiency 150% against run 0 is above 100%"));
    scaling_free(&sc);
}

/* The live run's split from its ranks' (the Runs table): their summed
 * times over their summed wall, as the report's. By hand: 50% of 1 s and
 * 10% of 3 s are 0.8 s of 4 s, 20% (a plain mean of the two would say 30%). */
static void test_ranks_pct(void **state)
{
    const double pct[2] = {50.0, 10.0};
    const int64_t wall[2] = {1000000000, 3000000000};
    assert_float_equal(scaling_ranks_pct(pct, wall, 2), 20.0, 1e-9);
    assert_float_equal(scaling_ranks_pct(pct, wall, 0), 0.0, 0);
}

/* ---- buckets ---------------------------------------------------------------------------- */

static struct span sp(uint32_t step, int lane, int cat, int tag, int64_t t0, int64_t t1, int coll, int outer)
{
    struct span s = {.t0_ns = t0,
                     .t1_ns = t1,
                     .step = step,
                     .tag = (int16_t)tag,
                     .lane = (uint8_t)lane,
                     .cat = (uint8_t)cat,
                     .coll = (uint8_t)coll,
                     .outer = (uint8_t)outer,
                     .size = 4096};
    return s;
}

static void test_buckets(void **state)
{
    const int64_t MS = 1000000;
    struct span h[64];
    size_t n = 0;
    /* two steps, 100 ms apart; in step k everything is k ms later */
    for (uint32_t k = 0; k < 2; k++) {
        int64_t t = (int64_t)k * 100 * MS + (int64_t)k * MS;
        h[n++] = sp(k, LANE_MAIN, CAT_DATA, -1, t - (int64_t)k * MS, t + 2 * MS, 0, 0); /* the step starts here */
        h[n++] = sp(k, LANE_MAIN, CAT_FORWARD, -1, t + 2 * MS, t + 10 * MS, 0, 0);
        h[n++] = sp(k, LANE_MAIN, CAT_BACKWARD, -1, t + 10 * MS, t + 30 * MS, 0, 0);
        h[n++] = sp(k, LANE_MAIN, CAT_BACKWARD, 0, t + 15 * MS, t + 15 * MS, 0, 0); /* bucket 0 ready */
        h[n++] = sp(k, LANE_MAIN, CAT_BACKWARD, 1, t + 30 * MS, t + 30 * MS, 0, 0); /* bucket 1 ready */
        h[n++] = sp(k, LANE_COMM, CAT_COMM, 0, t + 16 * MS, t + 20 * MS, COLL_ALLREDUCE, 1);
        h[n++] = sp(k, LANE_COMM, CAT_WAIT, 0, t + 17 * MS, t + 18 * MS, COLL_ALLREDUCE, 0); /* not the collective */
        h[n++] = sp(k, LANE_COMM, CAT_COMM, 1, t + 30 * MS, t + 40 * MS, COLL_ALLREDUCE, 1);
        h[n++] = sp(k, LANE_MAIN, CAT_OPTIMIZER, -1, t + 41 * MS, t + 42 * MS, 0, 0);
    }
    /* a span of a step outside the window, and a device record: ignored */
    h[n++] = sp(2, LANE_MAIN, CAT_BACKWARD, 0, 900 * MS, 900 * MS, 0, 0);
    h[n++] = sp(1, LANE_GPU, CAT_FORWARD, -1, -5000 * MS, 5000 * MS, 0, 0);
    static struct bucket_times bt;
    buckets_from_spans(&bt, h, n, 1, 8);
    assert_int_equal(bt.steps, 2);
    assert_int_equal(bt.n, 2);
    /* step 0 starts at its data span (0), step 1 one ms before t: each
     * figure is the mean of k and k + 1 ms later */
    assert_float_equal(bt.b[0].ready_ms, 15.5, 1e-9);
    assert_float_equal(bt.b[0].start_ms, 16.5, 1e-9);
    assert_float_equal(bt.b[0].end_ms, 20.5, 1e-9);
    assert_float_equal(bt.b[1].ready_ms, 30.5, 1e-9);
    assert_float_equal(bt.b[1].end_ms, 40.5, 1e-9);
    assert_float_equal(bt.b[1].bytes, 4096, 0);
    assert_true(bt.b[0].have_ready && bt.b[0].have_allreduce);
    assert_float_equal(bt.step_ms, 42.5, 1e-9);
    assert_float_equal(bt.bwd_start_ms, 10.5, 1e-9);
    assert_float_equal(bt.bwd_end_ms, 30.5, 1e-9);
    /* only the newest step */
    buckets_from_spans(&bt, h, n, 1, 1);
    assert_int_equal(bt.steps, 1);
    assert_float_equal(bt.b[0].ready_ms, 16.0, 1e-9);
    /* no steps yet */
    buckets_from_spans(&bt, h, n, -1, 8);
    assert_int_equal(bt.steps, 0);
    assert_int_equal(bt.n, 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_shipped_themes_complete),
        cmocka_unit_test(test_theme_list_order),
        cmocka_unit_test(test_theme_syntax),
        cmocka_unit_test(test_theme_dirs_and_env),
        cmocka_unit_test(test_theme_not_regular),
        cmocka_unit_test(test_no_color),
        cmocka_unit_test(test_series_binning),
        cmocka_unit_test(test_series_nan_and_log),
        cmocka_unit_test(test_fmt_rate),
        cmocka_unit_test(test_fmt_si),
        cmocka_unit_test(test_fmt_hidden),
        cmocka_unit_test(test_fmt_kernel_row),
        cmocka_unit_test(test_scroll_key),
        cmocka_unit_test(test_fit_by_priority),
        cmocka_unit_test(test_fit_marks),
        cmocka_unit_test(test_fit_note),
        cmocka_unit_test(test_fit_wrap),
        cmocka_unit_test(test_plan),
        cmocka_unit_test(test_plan_threads),
        cmocka_unit_test(test_scaling),
        cmocka_unit_test(test_scaling_marks_side_by_side),
        cmocka_unit_test(test_scaling_over_ideal),
        cmocka_unit_test(test_ranks_pct),
        cmocka_unit_test(test_buckets),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
