/* fuzz_trace.c - libFuzzer target: a trace file's bytes (ddptop, Kineto or
 * autograd JSON) through trace_read_buffer, then every rank it loads
 * through the breakdown that replay computes for foreign traces. */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "trace_analyze.h"
#include "trace_read.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct trace_doc d;
    char err[512];
    trace_doc_init(&d);
    if (trace_read_buffer(&d, (const char *)data, size, "fuzz", err, sizeof(err)) == 0) {
        if (d.nranks > TRACE_MAX_RANKS)
            abort();
        for (int r = 0; r < d.nranks; r++) {
            struct trace_figures f;
            if (trace_analyze_rank(&f, &d.ranks[r], TRACE_KERNEL_WAIT_NS) == 0 &&
                f.b.compute_ns + f.b.comm_ns + f.b.data_ns + f.b.idle_ns != f.b.wall_ns)
                abort(); /* the four parts always add up to the wall time */
        }
    }
    trace_doc_free(&d);
    return 0;
}
