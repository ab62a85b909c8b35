/* bench_comm.c - placeholder for the collective benchmark. */
#include <stdio.h>

#include "modes.h"

int bench_comm_main(const struct config *cfg)
{
    fprintf(stderr, "ddptop: --bench-comm: not available in this build yet\n");
    return 2;
}
