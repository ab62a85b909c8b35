/* comm_gloo_mpi.h - a gloo communicator whose world comes from MPI (under
 * mpirun, as PyTorch's env:// takes it from the launcher): ranks and world
 * size are MPI's, and the rendezvous is an MPI allgather of the ranks'
 * gloo addresses, so no store is needed, on one node or many. MPI carries
 * nothing after that; gloo's TCP does. Only files built with MPI and gloo
 * include this. */
#ifndef DDPTOP_COMM_GLOO_MPI_H
#define DDPTOP_COMM_GLOO_MPI_H

#include <mpi.h>
#include <stddef.h>

#include "comm_gloo.h"

/* The gloo allgather over MPI communicator *(MPI_Comm *)arg (for
 * comm_gloo_params.allgather, where the caller makes ranks of its own). It
 * polls, so that timeout_ms holds; a process that times out leaves MPI's
 * request and its buffers in flight (they are never freed). */
int comm_gloo_mpi_allgather(void *arg, const void *mine, void *all, size_t bytes, int64_t timeout_ms, char *err,
                            size_t errlen);

/* Collective over `over`: one gloo rank per process, rank and world MPI's
 * (p->rank, p->world, p->store and p->allgather are ignored; host, iface,
 * algo, timeout_s and abort are p's). NULL with err set on failure. */
struct comm *comm_gloo_create_mpi(MPI_Comm over, const struct comm_gloo_params *p, char *err, size_t errlen);

#endif
