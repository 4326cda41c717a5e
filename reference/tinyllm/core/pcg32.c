/* pcg32.c: the PCG32 generator (M06.3).
 *
 * A 64-bit linear congruential state, advanced by state * MULT + inc, and an
 * output permutation (XSH-RR: xorshift the high bits, then rotate by the top
 * five) that hides the LCG's weak low bits. Seeding and bounded draws follow
 * pcg32_srandom_r and pcg32_boundedrand_r of the PCG paper's reference code,
 * so a stream matches its demo program number for number.
 *
 * The floats and normals are this course's own definitions, written out
 * below so an oracle in another language can reproduce them exactly.
 */
#include "tinyllm/pcg32.h"

#include <math.h>

#define PCG32_MULT 6364136223846793005ULL

static void pcg32_step(tl_pcg32 *rng) {
    rng->state = rng->state * PCG32_MULT + rng->inc;
}

void tl_pcg32_seed(tl_pcg32 *rng, uint64_t initstate, uint64_t initseq) {
    rng->state = 0;
    rng->inc = (initseq << 1) | 1u;   /* any odd increment gives the full period */
    pcg32_step(rng);
    rng->state += initstate;
    pcg32_step(rng);
    rng->has_spare = 0;
    rng->spare = 0.0;
}

uint32_t tl_pcg32_next(tl_pcg32 *rng) {
    uint64_t old = rng->state;
    pcg32_step(rng);
    uint32_t xorshifted = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xorshifted >> rot) | (xorshifted << ((32 - rot) & 31));
}

/* Rejection sampling: of the 2^32 raw values, the lowest 2^32 mod bound are
 * dropped so that every residue is hit equally often. (-bound) % bound is
 * 2^32 mod bound in 32-bit arithmetic. At most half the draws are rejected.
 * bound 0 has no valid result: 0, and nothing is drawn. */
uint32_t tl_pcg32_bounded(tl_pcg32 *rng, uint32_t bound) {
    if (bound == 0) return 0;
    uint32_t threshold = (0u - bound) % bound;
    for (;;) {
        uint32_t r = tl_pcg32_next(rng);
        if (r >= threshold) return r % bound;
    }
}

/* The top 24 bits times 2^-24: every value is an exact float in [0, 1), and
 * 1.0 is never returned (a float has 24 significant bits). */
float tl_pcg32_uniform(tl_pcg32 *rng) {
    return (float)(tl_pcg32_next(rng) >> 8) * 0x1.0p-24f;
}

/* Box-Muller on two draws a, b:
 *   u1 = (a + 1) / 2^32 in (0, 1]   (never 0, so the log is finite)
 *   u2 = b / 2^32       in [0, 1)
 *   r  = sqrt(-2 ln u1)
 * returns r cos(2 pi u2) and keeps r sin(2 pi u2) for the next call. */
double tl_pcg32_normal(tl_pcg32 *rng) {
    if (rng->has_spare) {
        rng->has_spare = 0;
        return rng->spare;
    }
    const double two_pi = 6.283185307179586476925286766559;
    double u1 = ((double)tl_pcg32_next(rng) + 1.0) * 0x1.0p-32;
    double u2 = (double)tl_pcg32_next(rng) * 0x1.0p-32;
    double r = sqrt(-2.0 * log(u1));
    rng->spare = r * sin(two_pi * u2);
    rng->has_spare = 1;
    return r * cos(two_pi * u2);
}
