/* comm_gloo_mpi.c - gloo's rendezvous through MPI: one MPI_Iallgather of
 * every rank's record of addresses (gloo_shim.h), polled against the
 * timeout, as comm_mpi.c polls its calls. */
#include "comm_gloo_mpi.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "probe.h"

int comm_gloo_mpi_allgather(void *arg, const void *mine, void *all, size_t bytes, int64_t timeout_ms, char *err,
                            size_t errlen)
{
    MPI_Comm over = *(MPI_Comm *)arg;
    int world = 0;
    MPI_Comm_size(over, &world);
    if (bytes > (size_t)INT32_MAX) {
        snprintf(err, errlen, "MPI cannot gather records of %zu bytes", bytes);
        return -1;
    }
    /* MPI's own buffers: on a timeout MPI may still write them */
    char *in = malloc(bytes), *out = malloc(bytes * (size_t)world);
    if (!in || !out) {
        free(in);
        free(out);
        snprintf(err, errlen, "out of memory");
        return -1;
    }
    memcpy(in, mine, bytes);
    MPI_Request req;
    if (MPI_Iallgather(in, (int)bytes, MPI_BYTE, out, (int)bytes, MPI_BYTE, over, &req) != MPI_SUCCESS) {
        snprintf(err, errlen, "MPI_Iallgather failed");
        free(in);
        free(out);
        return -1;
    }
    int64_t t0 = probe_now_ns();
    for (;;) {
        int done = 0;
        if (MPI_Test(&req, &done, MPI_STATUS_IGNORE) != MPI_SUCCESS) {
            snprintf(err, errlen, "MPI_Iallgather failed");
            return -1; /* the buffers stay MPI's */
        }
        if (done)
            break;
        int64_t waited = probe_now_ns() - t0;
        if (timeout_ms > 0 && waited > timeout_ms * 1000000) {
            snprintf(err, errlen, "timed out after %.3g s in MPI's allgather of the ranks' gloo addresses",
                     (double)waited / 1e9);
            return -1;
        }
        probe_nap_us(200);
    }
    memcpy(all, out, bytes * (size_t)world);
    free(in);
    free(out);
    return 0;
}

struct comm *comm_gloo_create_mpi(MPI_Comm over, const struct comm_gloo_params *p, char *err, size_t errlen)
{
    struct comm_gloo_params q = *p;
    if (MPI_Comm_rank(over, &q.rank) != MPI_SUCCESS || MPI_Comm_size(over, &q.world) != MPI_SUCCESS) {
        snprintf(err, errlen, "gloo: MPI cannot say this process's rank");
        return NULL;
    }
    q.store = NULL;
    q.allgather = comm_gloo_mpi_allgather;
    q.allgather_arg = &over;
    return comm_gloo_create(&q, err, errlen);
}
