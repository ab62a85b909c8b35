/* fuzz_config.c - libFuzzer target: the command line through config_parse.
 * The input is the arguments after "ddptop", separated by NUL bytes; a run
 * it accepts is expanded into every run of its sweep. */
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 64

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    /* --help and the errors are written where nobody reads them */
    static FILE *sink;
    if (!sink && !(sink = fopen("/dev/null", "w")))
        abort();
    char *text = malloc(size + 1);
    if (!text)
        return 0;
    memcpy(text, data, size);
    text[size] = 0;
    char *argv[MAX_ARGS + 2] = {"ddptop"};
    int argc = 1;
    for (char *p = text; p < text + size + 1 && argc <= MAX_ARGS; p += strlen(p) + 1)
        argv[argc++] = p;
    argv[argc] = NULL;
    struct config cfg;
    if (config_parse(&cfg, argc, argv, sink, sink) == 0) {
        int n = config_count(&cfg);
        if (n < 1 || n > CFG_MAX_LIST * CFG_MAX_LIST * CFG_MAX_LIST * CFG_MAX_LIST)
            abort();
        /* the first runs and the last: every list's first and last entry */
        for (int i = 0; i < n; i = i < 15 ? i + 1 : (i < n - 1 ? n - 1 : n)) {
            struct run_config rc;
            config_expand(&cfg, i, &rc);
            if (rc.ranks < 1 || rc.batch_size < 1 || rc.threads_per_rank < 1)
                abort();
        }
    }
    free(text);
    return 0;
}
