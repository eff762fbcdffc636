/* fill.c: deterministic random inputs and the poison (hostref.h).  Random data is generated in
 * fixed blocks, each with its own generator seeded from (seed, block index), so the values never
 * depend on the number of threads. */
#include <stdio.h>
#include <stdlib.h>

#include "check_internal.h"

/* splitmix64 (Steele, Lea, Flood) seeds xoshiro256** (Blackman, Vigna); hr_mix64 is one step
 * of it from x, also a good 64-bit hash for deriving seeds. */
uint64_t hr_mix64(uint64_t x) {
  uint64_t z = x + 0x9e3779b97f4a7c15ull;
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
static inline uint64_t splitmix64(uint64_t *s) {
  uint64_t z = hr_mix64(*s);
  *s += 0x9e3779b97f4a7c15ull;
  return z;
}

typedef struct { uint64_t s[4]; } rng_t;

static inline uint64_t rotl64(uint64_t x, int k) { return (x << k) | (x >> (64 - k)); }

static inline uint64_t rng_next(rng_t *r) {
  uint64_t *s = r->s;
  uint64_t out = rotl64(s[1] * 5, 7) * 9;
  uint64_t t = s[1] << 17;
  s[2] ^= s[0];
  s[3] ^= s[1];
  s[1] ^= s[2];
  s[0] ^= s[3];
  s[2] ^= t;
  s[3] = rotl64(s[3], 45);
  return out;
}

/* uniform in [0, 1) with 53 random bits */
static inline double rng_unit(rng_t *r) { return (double)(rng_next(r) >> 11) * 0x1p-53; }

#define FILL_BLOCK ((size_t)1 << 16)

static void rng_for_block(rng_t *r, uint64_t seed, size_t block) {
  uint64_t s = seed;
  uint64_t base = splitmix64(&s);
  s = base ^ ((uint64_t)block * 0xd1b54a32d192ed03ull);
  for (int i = 0; i < 4; i++) r->s[i] = splitmix64(&s); /* splitmix64 never gives four zeros */
}

typedef struct {
  hr_dtype dt;
  void *dst;
  size_t n;
  uint64_t seed;
  double lo, span; /* value = lo + span * u, u uniform in [0, 1) */
  int expo;        /* 1: value = exp(lo + span * u) */
  size_t cols;     /* expo: row length (0: one row) */
} fill_job;

/* Factors for a product, rounded to a 16-bit dtype. Rounding exp(u) to f16/bf16 is biased when
 * u spans only a few ulps (the spacing below 1 is half the spacing above it: in bf16 with
 * u in +-0.002 every value rounds to 1 or to 1 - 2^-8, never up), and the bias compounds over a
 * long row (e^-44 over 10^6 bf16 factors, an f32 underflow for some lengths). So the log of
 * the rounding error is carried to the next factor of the same row and block: the log of the
 * product of a run of stored factors stays within half a log-ulp of the sum of their u. */
#define FILL_PROD16(CONV)                                                                    \
  do {                                                                                       \
    uint16_t *d = j->dst;                                                                    \
    double carry = 0;                                                                        \
    for (size_t i = i0; i < i1; i++) {                                                       \
      if (j->cols && i % j->cols == 0) carry = 0;                                            \
      double u = j->lo + j->span * rng_unit(&r);                                             \
      double t = u - carry;                                                                  \
      d[i] = CONV(exp(t));                                                                   \
      carry = log(LD16(d[i])) - t;                                                           \
    }                                                                                        \
  } while (0)

#define FILL_LOOP(STORE)                                                                     \
  do {                                                                                       \
    if (j->expo)                                                                             \
      for (size_t i = i0; i < i1; i++) { double v = exp(j->lo + j->span * rng_unit(&r)); STORE; } \
    else                                                                                     \
      for (size_t i = i0; i < i1; i++) { double v = j->lo + j->span * rng_unit(&r); STORE; } \
  } while (0)

static void fill_range(void *ctx, size_t b0, size_t b1, int tid) {
  const fill_job *j = ctx;
  (void)tid;
  for (size_t b = b0; b < b1; b++) {
    rng_t r;
    rng_for_block(&r, j->seed, b);
    size_t i0 = b * FILL_BLOCK, i1 = i0 + FILL_BLOCK < j->n ? i0 + FILL_BLOCK : j->n;
    if (j->expo && j->dt == HR_F16) {
#define LD16(h) (double)f16_to_f32_inline(h)
      FILL_PROD16(f64_to_f16);
#undef LD16
      continue;
    }
    if (j->expo && j->dt == HR_BF16) {
#define LD16(h) (double)bf16_to_f32_inline(h)
      FILL_PROD16(f64_to_bf16);
#undef LD16
      continue;
    }
    switch (j->dt) {
    case HR_F32: { float *d = j->dst; FILL_LOOP(d[i] = (float)v); break; }
    case HR_F16: { uint16_t *d = j->dst; FILL_LOOP(d[i] = f64_to_f16(v)); break; }
    case HR_BF16: { uint16_t *d = j->dst; FILL_LOOP(d[i] = f64_to_bf16(v)); break; }
    }
  }
}

static void fill_run(fill_job *j) {
  if (!j->dst || j->n == 0) return;
  size_t nblocks = (j->n + FILL_BLOCK - 1) / FILL_BLOCK;
  hr_parallel_for(nblocks, j->n, fill_range, j);
}

void hr_fill_uniform(hr_dtype dt, void *dst, size_t n, uint64_t seed, double lo, double hi) {
  fill_job j = {dt, dst, n, seed, lo, hi - lo, 0, 0};
  fill_run(&j);
  if (!dst || n == 0) return;
  /* Never all zeros: only possible when the whole range rounds to zero in dt; then the first
   * element becomes the smallest normal of dt, with the sign of the range. */
  size_t esz = hr_dtype_size(dt);
  const unsigned char *p = dst;
  for (size_t i = 0; i < n; i++) {
    uint32_t bits = 0;
    memcpy(&bits, p + i * esz, esz); /* little-endian: the sign is the top bit of the element */
    bits &= esz == 4 ? 0x7fffffffu : 0x7fffu;
    if (bits) return;
  }
  int neg = hi <= 0 && lo < 0;
  switch (dt) {
  case HR_F32: ((float *)dst)[0] = neg ? -0x1p-126f : 0x1p-126f; break;
  case HR_F16: ((uint16_t *)dst)[0] = neg ? 0x8400u : 0x0400u; break;
  case HR_BF16: ((uint16_t *)dst)[0] = neg ? 0x8080u : 0x0080u; break;
  }
}

void hr_fill_for_prod(hr_dtype dt, void *dst, size_t n, size_t cols, uint64_t seed) {
  double a = cols ? 2.0 / sqrt((double)cols) : 0.5;
  if (a > 0.5) a = 0.5;
  fill_job j = {dt, dst, n, seed, -a, 2.0 * a, 1, cols};
  fill_run(&j);
}

void hr_fill_pow2_for_prod(hr_dtype dt, void *dst, size_t n, size_t cols, uint64_t seed) {
  uint64_t s = seed ^ 0x5eed5eed5eed5eedull, bits = 0;
  int nbits = 0, e = 0;
  for (size_t i = 0; i < n; i++) {
    if (cols && i % cols == 0) e = 0;
    if (nbits < 3) { bits = splitmix64(&s); nbits = 64; }
    int r = (int)(bits & 3), neg = (int)((bits >> 2) & 1);
    bits >>= 3; nbits -= 3;
    int k = r == 3 ? 0 : r - 1;          /* -1, 0, 1, 0 */
    if (e + k > 8 || e + k < -8) k = -k;
    e += k;
    float v = ldexpf(neg ? -1.0f : 1.0f, k);
    if (dt == HR_F32) ((float *)dst)[i] = v;
    else if (dt == HR_F16) ((uint16_t *)dst)[i] = hr_f32_to_f16(v);
    else ((uint16_t *)dst)[i] = hr_f32_to_bf16(v);
  }
}

void hr_fill_poison(void *dst, size_t bytes) {
  if (dst && bytes) memset(dst, 0xff, bytes);
}
