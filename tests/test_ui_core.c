/* test_ui_core.c - the UI's curses-free modules: theme files and the
 * binned series behind the plots.
 *
 * Themes: every file shipped in themes/ parses and sets every element (a
 * typo in an element name would otherwise leave a built-in default in
 * place silently), the shipped four list first in order, errors name
 * file:line, $DDPTOP_THEME_DIR wins over the source tree, NO_COLOR follows
 * no-color.org (set and not empty), and a theme that is not a regular file
 * (a FIFO, a device) or is too big is refused before it is read.
 * Series: bins merge pairwise when full, so the mean of everything pushed
 * and the x extent are preserved exactly, and NaN is a gap.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "series.h"
#include "theme.h"

/* ---- themes ------------------------------------------------------------------ */

static void test_shipped_themes_complete(void **state)
{
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
}

static void test_theme_list_order(void **state)
{
    unsetenv("DDPTOP_THEME_DIR");
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
    /* the env folder wins over the source tree */
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
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
