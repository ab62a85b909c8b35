/* test_trace_big.c - a trace over 2 GiB replays whole, plain and gzip.
 *
 * zlib's gzread and read(2) count in int, so a reader that hands them the
 * whole remaining size stops at 2 GiB and takes the rest for a cut. The
 * traces here are made at run time in a temporary folder (never kept):
 * whitespace padding between the events, so that the last event lies past
 * 2 GiB, plain and through gzip. The gzip file is one member per MiB of
 * padding, all the same, compressed once: cheap to make, and a reader must
 * take every member (as gzip -c a b > ab.gz makes). Labelled `slow` (2 GB of
 * disk and 2 to 4 GB of memory); DDPTOP_BIG_TRACE_MB sets the padding
 * (default 2150). The gzip trace inflates a thousand times over, so it is
 * first refused as a bomb under the default caps, then read whole with
 * DDPTOP_GZIP_MAX_RATIO and DDPTOP_GZIP_MAX_MB raised, as a user would.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>

#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zlib.h>

#include "test_gzip.h"
#include "trace_read.h"

#define HEAD "{\"ddptop\":{},\"traceEvents\":[" EVENT(0) ","
#define EVENT(pid)                                                                                                     \
    "{\"ph\":\"X\",\"name\":\"forward\",\"cat\":\"forward\",\"ts\":1,\"dur\":1,\"pid\":" #pid                          \
    ",\"tid\":0,\"args\":{\"step\":0}}"
#define TAIL EVENT(1) "],\"ddptopTraceEnd\":{\"complete\":true}}"
#define PAD_BLOCK (1 << 20)

static char g_dir[256];

static int setup(void **state)
{
    snprintf(g_dir, sizeof(g_dir), "/tmp/ddptop_test_big_XXXXXX");
    return mkdtemp(g_dir) ? 0 : -1;
}

static int teardown(void **state)
{
    char cmd[300];
    snprintf(cmd, sizeof(cmd), "rm -rf '%s'", g_dir);
    return system(cmd) == 0 ? 0 : -1;
}

static size_t pad_bytes(void)
{
    const char *mb = getenv("DDPTOP_BIG_TRACE_MB");
    return (size_t)(mb && *mb ? atol(mb) : 2150) << 20;
}

/* HEAD, pad bytes of blanks (a multiple of PAD_BLOCK), TAIL: as they are,
 * or each part as its own gzip member. */
static void write_trace(const char *path, int gz, size_t pad)
{
    static char blanks[PAD_BLOCK], zblanks[PAD_BLOCK], zpart[4096];
    memset(blanks, ' ', sizeof(blanks));
    const char *block = blanks;
    size_t block_len = PAD_BLOCK;
    if (gz) {
        block_len = gzip_member(blanks, PAD_BLOCK, zblanks, sizeof(zblanks), 9);
        block = zblanks;
    }
    FILE *f = fopen(path, "wb");
    assert_non_null(f);
    const char *parts[2] = {HEAD, TAIL};
    for (int part = 0; part < 2; part++) {
        const char *p = parts[part];
        size_t len = strlen(p);
        if (gz) {
            len = gzip_member(p, len, zpart, sizeof(zpart), 9);
            p = zpart;
        }
        assert_int_equal(fwrite(p, 1, len, f), len);
        for (size_t done = 0; part == 0 && done < pad; done += PAD_BLOCK)
            assert_int_equal(fwrite(block, 1, block_len, f), block_len);
    }
    assert_int_equal(fclose(f), 0);
}

static void check_whole(const char *name, int gz)
{
    char path[300], err[512];
    snprintf(path, sizeof(path), "%s/%s", g_dir, name);
    size_t pad = pad_bytes();
    write_trace(path, gz, pad);
    struct trace_doc d;
    trace_doc_init(&d);
    int rc = trace_read_file(&d, path, err, sizeof(err));
    if (rc != 0)
        print_error("%s\n", err);
    assert_int_equal(rc, 0);
    assert_true(d.complete);
    assert_false(d.truncated);
    assert_int_equal(d.events, 2);
    assert_int_equal(d.nranks, 2); /* pid 1's event lies past the padding */
    trace_doc_free(&d);
    assert_int_equal(unlink(path), 0);
}

static void test_plain_over_2gib(void **state)
{
    check_whole("big.json", 0);
}

static void test_gzip_over_2gib(void **state)
{
    char path[300], err[512] = "";
    snprintf(path, sizeof(path), "%s/%s", g_dir, "bomb.json.gz");
    write_trace(path, 1, pad_bytes());
    struct trace_doc d;
    trace_doc_init(&d);
    unsetenv("DDPTOP_GZIP_MAX_RATIO");
    unsetenv("DDPTOP_GZIP_MAX_MB");
    assert_int_not_equal(trace_read_file(&d, path, err, sizeof(err)), 0);
    assert_non_null(strstr(err, "refused as a gzip bomb"));
    trace_doc_free(&d);
    assert_int_equal(unlink(path), 0);

    assert_int_equal(setenv("DDPTOP_GZIP_MAX_RATIO", "100000", 1), 0);
    assert_int_equal(setenv("DDPTOP_GZIP_MAX_MB", "8192", 1), 0);
    check_whole("big.json.gz", 1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_over_2gib),
        cmocka_unit_test(test_gzip_over_2gib),
    };
    return cmocka_run_group_tests(tests, setup, teardown);
}
