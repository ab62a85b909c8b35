/* comm_mpi.h - the MPI communicator: ddptop's collectives over MPI's own
 * (MPI_Iallreduce and the rest) on host buffers, one rank per MPI process
 * of the communicator it is given. Only files built with MPI include this. */
#ifndef DDPTOP_COMM_MPI_H
#define DDPTOP_COMM_MPI_H

#include <mpi.h>
#include <stddef.h>

#include "comm.h"

/* A communicator over a duplicate of `over` (collective: every process of
 * `over` calls it, in the same order). NULL with err set on failure. */
struct comm *comm_mpi_create(MPI_Comm over, char *err, size_t errlen);

/* 1 once a wait was given up while MPI held a call's buffers: the process
 * cannot go on to another run, nor call MPI_Finalize, and leaves through
 * MPI_Abort. */
int comm_mpi_tainted(void);

#endif
