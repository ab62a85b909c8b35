/* loop_faults.c - --inject-fault in the rank loop: at the top of its step
 * on its rank, a fault poisons the loss or the gradients (loop.c's forward
 * and the modes' backward read the flags), slows the rank, kills or hangs
 * its thread, fails an allocation or breaks its link.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <unistd.h>

#include "comm.h"
#include "half.h"
#include "kernels_cpu.h"
#include "model.h"
#include "nvtx.h"
#include "outfile.h"
#include "optim.h"
#include "pipeline.h"
#include "probe.h"
#include "run.h"
#include "kernels_ref.h"
#include "loop.h"
#include "sync.h"
#include "zoo.h"

/* (loop.h) */
int loop_inject(struct loop *L, uint32_t step)
{
    const struct fault *f = &L->cfg->fault;
    struct rank *rk = L->rk;
    L->poison = 0;
    L->overflow = 0;
    if (f->kind == FAULT_NONE || f->rank != rk->id || (long)step < f->step)
        return 0;
    if (f->kind == FAULT_SLOW) {
        L->slow = L->slow > 5.0 ? L->slow : 5.0; /* from here on */
        return 0;
    }
    if ((long)step != f->step)
        return 0;
    char msg[128];
    switch (f->kind) {
    case FAULT_NAN:
        L->poison = 1;
        return 0;
    case FAULT_OVERFLOW:
        L->overflow = 1;
        return 0;
    case FAULT_CRASH:
        /* the thread dies without raising abort: its peers find out from
         * the collector, or from --comm-timeout */
        snprintf(rk->err, sizeof(rk->err), "the rank's thread died at step %u (injected fault)", step);
        rk->rc = -1;
        loop_rank_failed(rk); /* (the first to fail, as loop_fail names it) */
        return -1;
    case FAULT_HANG:
        /* takes no part in anything until the run is stopped: a peer's
         * collective times out (--comm-timeout), naming this rank */
        while (!atomic_load(&L->run->abort))
            probe_nap_ms(10);
        return -1;
    case FAULT_OOM:
        snprintf(msg, sizeof(msg), "step %u: out of memory for the activations (injected fault)", step);
        return loop_fail(rk, msg);
    case FAULT_COMM_ERROR:
        if (rk->comm)
            comm_break(rk->comm, "the link to the peers failed (injected fault)");
        return 0;
    default:
        return 0;
    }
}
