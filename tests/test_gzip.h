/* test_gzip.h - gzip made in a test, for the trace readers' tests.
 * Include after <cmocka.h> (zlib's answers are asserted). */
#ifndef DDPTOP_TEST_GZIP_H
#define DDPTOP_TEST_GZIP_H

#include <stdint.h>
#include <string.h>
#include <zlib.h>

/* text[0..n) as one gzip member, deflated at `level`, into out[0..cap);
 * returns its size. */
static inline size_t gzip_member(const char *text, size_t n, char *out, size_t cap, int level)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    assert_int_equal(deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY), Z_OK);
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)n;
    z.next_out = (Bytef *)out;
    z.avail_out = (uInt)cap;
    assert_int_equal(deflate(&z, Z_FINISH), Z_STREAM_END);
    size_t got = cap - z.avail_out;
    deflateEnd(&z);
    return got;
}

#endif
