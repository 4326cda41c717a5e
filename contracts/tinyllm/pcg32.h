/* tinyllm/pcg32.h: the PCG32 generator (M06.3), O'Neill's pcg32_random_r:
 * 64-bit LCG state, odd increment, XSH-RR output. Seeding follows
 * pcg32_srandom_r(initstate, initseq), so streams match the PCG paper's
 * reference programs number for number.
 *
 * The generator is a plain struct the caller owns (on the stack, in a model):
 * nothing here allocates, and no function can fail or set an error. A NULL
 * rng is a caller's bug (undefined, as for any C pointer). One generator must
 * not be used by two threads at once.
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

/* Seeds *rng: every (initstate, initseq) pair is valid; initseq picks one of
 * 2^63 streams. Clears the spare normal. */
void tl_pcg32_seed(tl_pcg32 *rng, uint64_t initstate, uint64_t initseq);
/* The next 32 random bits, uniform over [0, 2^32). */
uint32_t tl_pcg32_next(tl_pcg32 *rng);
/* Uniform in [0, bound) without modulo bias (rejection, as
 * pcg32_boundedrand_r). bound 0 has no valid result: returns 0, draws
 * nothing. */
uint32_t tl_pcg32_bounded(tl_pcg32 *rng, uint32_t bound);
/* Uniform float in [0, 1): the top 24 bits times 2^-24 (1.0 is never
 * returned). One draw. */
float tl_pcg32_uniform(tl_pcg32 *rng);
/* Standard normal by Box-Muller on two draws a, b: u1 = (a + 1) / 2^32,
 * u2 = b / 2^32, r = sqrt(-2 ln u1); returns r cos(2 pi u2) and keeps
 * r sin(2 pi u2) for the next call (which then draws nothing). */
double tl_pcg32_normal(tl_pcg32 *rng);

#endif
