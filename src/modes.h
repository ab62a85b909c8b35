/* modes.h - the modes other than training: --info and --bench-comm. */
#ifndef DDPTOP_MODES_H
#define DDPTOP_MODES_H

struct config;

/* Prints each selected model's layer table for the data set's input shape.
 * Needs no data files. Returns the exit status. */
int info_main(const struct config *cfg);
/* The collective benchmark. Returns the exit status. */
int bench_comm_main(const struct config *cfg);

#endif
