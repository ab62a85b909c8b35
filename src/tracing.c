/* tracing.c - placeholder until the trace writer lands: asks for a trace
 * are refused with a clear message rather than ignored. */
#include "tracing.h"

#include <stdio.h>

#include "config.h"
#include "run.h"

struct tracer *tracer_open(const struct config *cfg, struct run *r, int run_index, char *err, size_t errlen)
{
    err[0] = 0;
    if (cfg->trace[0])
        snprintf(err, errlen, "--trace: trace export is not available in this build yet");
    return NULL;
}

int tracer_close(struct tracer *t, char *err, size_t errlen)
{
    return 0;
}

int run_export_trace(struct run *r, const char *path, char *err, size_t errlen)
{
    snprintf(err, errlen, "trace export is not available in this build yet");
    return -1;
}

int replay_main(const struct config *cfg)
{
    fprintf(stderr, "ddptop: --replay: not available in this build yet\n");
    return 2;
}
