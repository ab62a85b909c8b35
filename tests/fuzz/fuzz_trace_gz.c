/* fuzz_trace_gz.c - libFuzzer target: gzip traces through
 * trace_read_buffer. The first byte picks how the rest is used:
 *  - even: as the file's bytes, gzip or not (the seeds are real .json.gz
 *    files, so mutations reach damaged streams, and bytes after a member);
 *  - odd: as plain JSON that is gzipped here, in one or two members, and
 *    cut short when the byte says so, so that whole and cut streams reach
 *    the JSON reader behind the inflater. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* Appends text[0..n) to out as one gzip member; returns its size. */
static size_t member(const uint8_t *text, size_t n, uint8_t *out, size_t cap)
{
    z_stream z;
    memset(&z, 0, sizeof(z));
    if (deflateInit2(&z, 1, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
        abort();
    z.next_in = (Bytef *)(uintptr_t)text;
    z.avail_in = (uInt)n;
    z.next_out = out;
    z.avail_out = (uInt)cap;
    if (deflate(&z, Z_FINISH) != Z_STREAM_END)
        abort();
    size_t got = cap - z.avail_out;
    deflateEnd(&z);
    return got;
}

static void read_doc(const uint8_t *bytes, size_t n)
{
    struct trace_doc d;
    char err[512];
    trace_doc_init(&d);
    trace_read_buffer(&d, (const char *)bytes, n, "fuzz.gz", err, sizeof(err));
    trace_doc_free(&d);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size < 1)
        return 0;
    uint8_t mode = data[0];
    data++;
    size--;
    if (!(mode & 1)) {
        read_doc(data, size);
        return 0;
    }
    size_t cap = 2 * (size_t)compressBound((uLong)size) + 64;
    uint8_t *gz = malloc(cap);
    if (!gz)
        return 0;
    size_t split = (mode & 2) ? size / 2 : size; /* two members, or one */
    size_t n = member(data, split, gz, cap);
    if (split < size)
        n += member(data + split, size - split, gz + n, cap - n);
    if (mode & 4)
        n = n * (size_t)(mode >> 3) / 32; /* cut short */
    read_doc(gz, n);
    free(gz);
    return 0;
}
