/* test_layout.c - the UI layout over every terminal size from 40x12 to
 * 300x100 (and the sizes below the minimum).
 *
 * layout_compute() is a pure function, so every size is checked exactly:
 * no shown pane is smaller than its minimum, none overlap, none leave the
 * screen, together they tile it, and a pane shown at some height stays shown
 * when the terminal grows. The slots that two panes share (the timeline or
 * the layers pane; the runs table or the scaling plot) show one at most,
 * the one switched in; a pane the user asked for (keep) is dropped only
 * after every other optional pane. Below the minimum it must say "too
 * small" and show nothing.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <string.h>

#include "layout.h"

#define SWEEP_MIN_COLS 40
#define SWEEP_MIN_ROWS 12
#define SWEEP_MAX_COLS 300
#define SWEEP_MAX_ROWS 100

/* What the screen may ask for: pane sets (the default screen, each slot
 * switched, both) with and without panes the user asked for, and content
 * sizes that stress the rank table, the timeline, the layers and the runs
 * pane from tiny to huge. */
#define DEFAULT_PANES (PANE_ALL & ~(PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_KERNELS) | PANE_BIT(PANE_SCALING)))
#define SLOTS                                                                                                          \
    (PANE_BIT(PANE_TIMELINE) | PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_KERNELS) | PANE_BIT(PANE_RUNS) |                  \
     PANE_BIT(PANE_SCALING))
static const struct {
    unsigned want, keep;
} screens[] = {
    {DEFAULT_PANES, 0},
    {DEFAULT_PANES & ~PANE_BIT(PANE_RUNS), 0},
    {DEFAULT_PANES & ~PANE_BIT(PANE_TIMELINE), 0},
    {PANE_BIT(PANE_LOSS), 0},
    {PANE_BIT(PANE_TRAFFIC) | PANE_BIT(PANE_RUNS), 0},
    {0, 0},
    {DEFAULT_PANES | PANE_BIT(PANE_LAYERS), 0},
    {DEFAULT_PANES | PANE_BIT(PANE_LAYERS), SLOTS},
    {DEFAULT_PANES | PANE_BIT(PANE_SCALING), SLOTS},
    {DEFAULT_PANES | PANE_BIT(PANE_KERNELS), 0},
    {DEFAULT_PANES | PANE_BIT(PANE_KERNELS) | PANE_BIT(PANE_LAYERS), SLOTS},
    {PANE_ALL, SLOTS},
    {PANE_ALL, 0},
    {DEFAULT_PANES, SLOTS},
    {PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_SCALING) | PANE_BIT(PANE_LOSS), PANE_BIT(PANE_SCALING)},
};
static const int rank_rows[] = {0, 2, 64};
static const int lanes[] = {1, 4, 128};
static const int run_rows[] = {0, 1, 40};
static const int layer_rows[] = {0, 16, 500};

static int overlaps(const struct rect *a, const struct rect *b)
{
    return a->x < b->x + b->w && b->x < a->x + a->w && a->y < b->y + b->h && b->y < a->y + a->h;
}

/* Checks one layout; on failure names the size and pane. */
static void check_layout(const struct layout_req *q, const struct layout *l)
{
    char where[160];
    snprintf(where, sizeof(where), "%dx%d want=%#x ranks=%d lanes=%d runs=%d", q->cols, q->rows, q->want, q->rank_rows,
             q->lanes, q->run_rows);
    if (l->too_small)
        fail_msg("%s: reported too small", where);
    unsigned always = PANE_BIT(PANE_HEADER) | PANE_BIT(PANE_RANKS) | PANE_BIT(PANE_FOOTER);
    if ((l->shown & always) != always)
        fail_msg("%s: header, ranks or footer missing (shown %#x)", where, l->shown);
    if (l->shown & ~(q->want | always))
        fail_msg("%s: shows a pane nobody asked for (shown %#x)", where, l->shown);
    /* a slot shows one pane, the one switched in when both are wanted */
    if ((l->shown & PANE_BIT(PANE_TIMELINE)) && (q->want & PANE_BIT(PANE_LAYERS)))
        fail_msg("%s: the timeline is shown while the layers pane is switched in", where);
    if ((l->shown & (PANE_BIT(PANE_TIMELINE) | PANE_BIT(PANE_LAYERS))) && (q->want & PANE_BIT(PANE_KERNELS)))
        fail_msg("%s: the timeline or layers pane is shown while the kernels pane is switched in", where);
    if ((l->shown & PANE_BIT(PANE_RUNS)) && (q->want & PANE_BIT(PANE_SCALING)))
        fail_msg("%s: the runs table is shown while the scaling plot is switched in", where);
    /* the panes the user asked for go last */
    unsigned optional = SLOTS | PANE_BIT(PANE_LOSS) | PANE_BIT(PANE_TRAFFIC);
    unsigned kept_lost = q->keep & q->want & optional & ~l->shown, others_shown = l->shown & optional & ~q->keep;
    for (int p = 0; p < PANE_COUNT; p++) {
        int sibling = p == PANE_TIMELINE  ? PANE_LAYERS
                      : p == PANE_LAYERS  ? PANE_TIMELINE
                      : p == PANE_RUNS    ? PANE_SCALING
                      : p == PANE_SCALING ? PANE_RUNS
                                          : -1;
        /* the pane a slot's other pane replaced is not lost */
        if (sibling >= 0 && (kept_lost & PANE_BIT(p)) && (q->want & PANE_BIT(sibling)) &&
            (p == PANE_TIMELINE || p == PANE_RUNS))
            kept_lost &= ~PANE_BIT(p);
    }
    if (q->want & PANE_BIT(PANE_KERNELS)) /* (it takes the step slot from either) */
        kept_lost &= ~(PANE_BIT(PANE_TIMELINE) | PANE_BIT(PANE_LAYERS));
    if (kept_lost && others_shown)
        fail_msg("%s: pane(s) %#x the user asked for were dropped while %#x nobody asked for are shown", where,
                 kept_lost, others_shown);
    long area = 0;
    for (int p = 0; p < PANE_COUNT; p++) {
        const struct rect *r = &l->pane[p];
        if (!(l->shown & PANE_BIT(p))) {
            if (r->h || r->w || r->x || r->y)
                fail_msg("%s: hidden pane %s has a rectangle", where, layout_pane_name(p));
            continue;
        }
        if (r->h < layout_min_h(p) || r->w < layout_min_w(p) || r->h <= 0 || r->w <= 0)
            fail_msg("%s: pane %s is %dx%d, below its minimum %dx%d", where, layout_pane_name(p), r->w, r->h,
                     layout_min_w(p), layout_min_h(p));
        if (r->x < 0 || r->y < 0 || r->x + r->w > q->cols || r->y + r->h > q->rows)
            fail_msg("%s: pane %s at %d,%d %dx%d leaves the screen", where, layout_pane_name(p), r->x, r->y, r->w,
                     r->h);
        for (int o = 0; o < p; o++)
            if ((l->shown & PANE_BIT(o)) && overlaps(r, &l->pane[o]))
                fail_msg("%s: panes %s and %s overlap", where, layout_pane_name(p), layout_pane_name(o));
        area += (long)r->w * r->h;
    }
    if (area != (long)q->rows * q->cols)
        fail_msg("%s: panes cover %ld cells of %ld", where, area, (long)q->rows * q->cols);
    const struct rect *h = &l->help;
    if (h->w < 20 || h->h < 6 || h->x < 0 || h->y < 0 || h->x + h->w > q->cols || h->y + h->h > q->rows)
        fail_msg("%s: help overlay %d,%d %dx%d does not fit", where, h->x, h->y, h->w, h->h);
}

static void test_sweep_sizes(void **state)
{
    long checked = 0;
    for (size_t wi = 0; wi < sizeof(screens) / sizeof(screens[0]); wi++)
        for (size_t ri = 0; ri < sizeof(rank_rows) / sizeof(rank_rows[0]); ri++)
            for (size_t li = 0; li < sizeof(lanes) / sizeof(lanes[0]); li++)
                for (size_t ui = 0; ui < sizeof(run_rows) / sizeof(run_rows[0]); ui++)
                    for (size_t yi = 0; yi < sizeof(layer_rows) / sizeof(layer_rows[0]); yi++) {
                        /* layer_rows (kernel_rows alike) only matter with the layers or kernels pane */
                        if (yi > 0 && !(screens[wi].want & (PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_KERNELS))))
                            continue;
                        for (int cols = SWEEP_MIN_COLS; cols <= SWEEP_MAX_COLS; cols++) {
                            unsigned prev_shown = 0;
                            for (int rows = SWEEP_MIN_ROWS; rows <= SWEEP_MAX_ROWS; rows++) {
                                struct layout_req q = {rows,          cols,         screens[wi].want, rank_rows[ri],
                                                       lanes[li],     run_rows[ui], layer_rows[yi],   screens[wi].keep,
                                                       layer_rows[yi]};
                                struct layout l, again;
                                layout_compute(&l, &q);
                                check_layout(&q, &l);
                                /* growing the terminal never hides a pane */
                                if ((l.shown & prev_shown) != prev_shown)
                                    fail_msg("%dx%d want=%#x keep=%#x: a pane shown at %d rows is hidden at %d "
                                             "(%#x -> %#x)",
                                             cols, rows, q.want, q.keep, rows - 1, rows, prev_shown, l.shown);
                                prev_shown = l.shown;
                                /* pure: the same question, the same answer (asked
                                 * again of every 61st layout: a layout that
                                 * read state would differ on many) */
                                if (checked % 61 == 0) {
                                    layout_compute(&again, &q);
                                    assert_memory_equal(&l, &again, sizeof(l));
                                }
                                checked++;
                            }
                        }
                    }
    assert_true(checked > 1000000);
}

static void test_too_small(void **state)
{
    for (int cols = 1; cols <= SWEEP_MAX_COLS; cols++)
        for (int rows = 1; rows <= SWEEP_MAX_ROWS; rows++) {
            struct layout_req q = {rows, cols, PANE_ALL, 2, 2, 1, 0, 0, 0};
            struct layout l;
            layout_compute(&l, &q);
            int small = rows < LAYOUT_MIN_ROWS || cols < LAYOUT_MIN_COLS;
            if (l.too_small != small)
                fail_msg("%dx%d: too_small is %d, expected %d", cols, rows, l.too_small, small);
            if (small && l.shown)
                fail_msg("%dx%d: too small, yet shows panes %#x", cols, rows, l.shown);
            assert_int_equal(l.min_rows, LAYOUT_MIN_ROWS);
            assert_int_equal(l.min_cols, LAYOUT_MIN_COLS);
        }
    /* the sweep's smallest size is usable, one less in either direction is not */
    struct layout l;
    struct layout_req q = {SWEEP_MIN_ROWS, SWEEP_MIN_COLS, PANE_ALL, 2, 2, 1, 0, 0, 0};
    layout_compute(&l, &q);
    assert_false(l.too_small);
    struct layout_req q2 = {LAYOUT_MIN_ROWS - 1, 300, PANE_ALL, 2, 2, 1, 0, 0, 0};
    layout_compute(&l, &q2);
    assert_true(l.too_small);
    struct layout_req q3 = {100, LAYOUT_MIN_COLS - 1, PANE_ALL, 2, 2, 1, 0, 0, 0};
    layout_compute(&l, &q3);
    assert_true(l.too_small);
}

/* The e2e tests' screen (160x50) and a common 80x24 show every pane they
 * should; the two plots share a row from 80 columns. */
static void test_common_sizes(void **state)
{
    struct layout l;
    struct layout_req big = {50, 160, DEFAULT_PANES, 2, 4, 2, 0, 0, 0};
    layout_compute(&l, &big);
    assert_int_equal(l.shown, DEFAULT_PANES);
    assert_int_equal(l.pane[PANE_LOSS].y, l.pane[PANE_TRAFFIC].y);
    assert_true(l.pane[PANE_RANKS].h >= 3 + 2);
    assert_true(l.pane[PANE_TIMELINE].h >= 4 + 4);

    struct layout_req vt = {24, 80, DEFAULT_PANES, 2, 2, 1, 0, 0, 0};
    layout_compute(&l, &vt);
    assert_true(l.shown & PANE_BIT(PANE_TIMELINE));
    assert_true(l.shown & PANE_BIT(PANE_LOSS));
    assert_true(l.shown & PANE_BIT(PANE_TRAFFIC));
    assert_int_equal(l.pane[PANE_LOSS].y, l.pane[PANE_TRAFFIC].y);

    struct layout_req narrow = {60, 79, DEFAULT_PANES, 2, 2, 1, 0, 0, 0};
    layout_compute(&l, &narrow);
    assert_true(l.pane[PANE_TRAFFIC].y > l.pane[PANE_LOSS].y);
    assert_int_equal(l.pane[PANE_TRAFFIC].x, 0);
}

/* L and g: the layers pane takes the timeline's place, the scaling plot
 * the runs table's, at 160x50 beside everything else, and at 80x24 (where
 * the runs table does not fit) the plot the user asked for pushes the
 * traffic and loss plots out rather than going itself. */
static void test_switched_slots(void **state)
{
    struct layout l;
    unsigned both = DEFAULT_PANES | PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_SCALING);
    struct layout_req big = {50, 160, both, 2, 4, 3, 16, SLOTS, 0};
    layout_compute(&l, &big);
    assert_int_equal(l.shown, both & ~(PANE_BIT(PANE_TIMELINE) | PANE_BIT(PANE_RUNS)));
    assert_int_equal(l.pane[PANE_LAYERS].y, l.pane[PANE_RANKS].y + l.pane[PANE_RANKS].h);
    assert_true(l.pane[PANE_LAYERS].h >= 3 + 12); /* LeNet's twelve layers, whole */
    assert_true(l.pane[PANE_SCALING].h >= 10);
    assert_int_equal(l.pane[PANE_SCALING].y + l.pane[PANE_SCALING].h, l.pane[PANE_FOOTER].y);

    /* nothing asked for: at 80x24 with 4 ranks the runs slot goes first */
    struct layout_req vt = {24, 80, DEFAULT_PANES | PANE_BIT(PANE_SCALING), 4, 8, 2, 0, 0, 0};
    layout_compute(&l, &vt);
    assert_false(l.shown & (PANE_BIT(PANE_SCALING) | PANE_BIT(PANE_RUNS)));
    vt.keep = SLOTS;
    layout_compute(&l, &vt);
    assert_true(l.shown & PANE_BIT(PANE_SCALING));
    assert_true(l.shown & PANE_BIT(PANE_TIMELINE));
    assert_true(l.pane[PANE_SCALING].h >= layout_min_h(PANE_SCALING));

    struct layout_req lay = {24, 80, DEFAULT_PANES | PANE_BIT(PANE_LAYERS), 4, 8, 2, 16, SLOTS, 0};
    layout_compute(&l, &lay);
    assert_true(l.shown & PANE_BIT(PANE_LAYERS));
    assert_false(l.shown & PANE_BIT(PANE_TIMELINE));

    /* K: the kernels pane over the layers pane, a line each when it fits */
    struct layout_req ker = {50,    160, DEFAULT_PANES | PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_KERNELS), 2, 4, 1, 16,
                             SLOTS, 12};
    layout_compute(&l, &ker);
    assert_true(l.shown & PANE_BIT(PANE_KERNELS));
    assert_false(l.shown & (PANE_BIT(PANE_LAYERS) | PANE_BIT(PANE_TIMELINE)));
    assert_int_equal(l.pane[PANE_KERNELS].y, l.pane[PANE_RANKS].y + l.pane[PANE_RANKS].h);
    assert_true(l.pane[PANE_KERNELS].h >= 2 + 12);
}

/* Many ranks do not starve the rest of the screen: the table scrolls. */
static void test_many_ranks(void **state)
{
    struct layout l;
    struct layout_req q = {50, 160, DEFAULT_PANES, 64, 128, 3, 0, 0, 0};
    layout_compute(&l, &q);
    assert_int_equal(l.shown, DEFAULT_PANES);
    assert_true(l.pane[PANE_RANKS].h <= (50 - 4) * 2 / 5);
    assert_true(l.pane[PANE_LOSS].h >= layout_min_h(PANE_LOSS));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_too_small),  cmocka_unit_test(test_common_sizes), cmocka_unit_test(test_switched_slots),
        cmocka_unit_test(test_many_ranks), cmocka_unit_test(test_sweep_sizes),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
