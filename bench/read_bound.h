/* read_bound.h: the bound of a memory-bound step: the time to read a set of
 * arrays once, on a given number of threads, as the kernels read weights
 * (pieces handed out through tl_parallel_chunks, long streams, integer adds
 * so that no byte pattern costs more than its load), by the fastest of the
 * CPU's read loops (chosen on the first call at each thread count). */
#ifndef TINYLLM_BENCH_READ_BOUND_H
#define TINYLLM_BENCH_READ_BOUND_H

#include <stddef.h>
#include <stdint.h>

typedef struct {
    const void *data;
    size_t bytes;
} read_region;

/* Reads every byte of the n regions once on `threads` threads; returns a sum
 * of what was read (so that the reads are not optimised away). */
uint64_t read_regions(const read_region *r, int n, int threads);

/* The loop read_regions chose at this thread count, for the report. */
const char *read_loop_name(int threads);

#endif
