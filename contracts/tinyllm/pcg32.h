/* tinyllm/pcg32.h: the PCG32 generator (M06.3), O'Neill's pcg32_random_r:
 * 64-bit LCG state, odd increment, XSH-RR output. Seeding follows
 * pcg32_srandom_r(initstate, initseq), so streams match the PCG paper's
 * reference programs number for number.
 */
#ifndef TINYLLM_PCG32_H
#define TINYLLM_PCG32_H

#include <stdint.h>

typedef struct {
    uint64_t state;
    uint64_t inc;        /* always odd */
    int has_spare;       /* Box-Muller makes normals in pairs */
    double spare;
} tl_pcg32;

void tl_pcg32_seed(tl_pcg32 *rng, uint64_t initstate, uint64_t initseq);
uint32_t tl_pcg32_next(tl_pcg32 *rng);
/* Uniform in [0, bound) without modulo bias. bound > 0. */
uint32_t tl_pcg32_bounded(tl_pcg32 *rng, uint32_t bound);
/* Uniform float in [0, 1) from the top 24 bits. */
float tl_pcg32_uniform(tl_pcg32 *rng);
/* Standard normal by Box-Muller (second value of each pair kept). */
double tl_pcg32_normal(tl_pcg32 *rng);

#endif
