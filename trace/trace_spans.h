/* trace_spans.h - a foreign (PyTorch profiler) trace's window as the
 * timeline's spans, beside its breakdown (trace_analyze.h): what --follow
 * draws for a rank's cycle.
 *
 * Each thread's ops are flattened to the innermost op open at each
 * instant, as the breakdown does; the main thread's go to the main lane,
 * another thread's comm and data ops to the comm and data lanes, device
 * ops to the GPU lane. Spans are cut at the window's step bounds (outside
 * the steps nothing counts), a span that continues the one before it on
 * its lane joins it, and where there are too many the newest whole steps
 * are kept.
 */
#ifndef DDPTOP_TRACE_SPANS_H
#define DDPTOP_TRACE_SPANS_H

#include <stddef.h>

#include "probe.h"
#include "trace_read.h"

/* Window w of r as timeline spans, at most `most` of them (the newest
 * whole steps that fit), into *out (malloc'd), their lanes as bits
 * (1 << lane) in *lanes. 0, or -1 when out of memory. */
int trace_window_spans(const struct trace_rank *r, const struct trace_window *w, size_t most, struct span **out,
                       size_t *nout, unsigned *lanes);

#endif
