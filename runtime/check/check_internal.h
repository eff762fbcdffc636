/* check_internal.h: what the files of runtime/check/ share and a user of weft_check does not see:
 * the inline conversions (the fills and the comparison run them per element, so they inline),
 * and the one parallel_for every reference and the comparison split their work with. */
#ifndef WEFT_CHECK_INTERNAL_H
#define WEFT_CHECK_INTERNAL_H
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include "hostref.h"

static inline uint32_t f32_bits(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static inline float f32_from_bits(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

static inline float f16_to_f32_inline(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000u) << 16;
  uint32_t e = (h >> 10) & 0x1fu, m = h & 0x3ffu;
  if (e == 0x1f) /* inf, or NaN with its payload kept and made quiet */
    return f32_from_bits(sign | 0x7f800000u | (m ? 0x400000u | (m << 13) : 0));
  if (e == 0) { /* zero or subnormal: m * 2^-24, exact in f32 */
    float v = (float)m * 0x1p-24f;
    return sign ? -v : v;
  }
  return f32_from_bits(sign | ((e + 112u) << 23) | (m << 13));
}

static inline uint16_t f32_to_f16_inline(float f) {
  uint32_t x = f32_bits(f);
  uint16_t sign = (uint16_t)((x >> 16) & 0x8000u);
  x &= 0x7fffffffu;
  if (x >= 0x7f800000u) { /* inf or NaN */
    if (x == 0x7f800000u) return sign | 0x7c00u;
    return (uint16_t)(sign | 0x7e00u | ((x >> 13) & 0x3ffu)); /* quiet, top payload bits kept */
  }
  if (x >= 0x477ff000u) return sign | 0x7c00u; /* >= 65520: rounds to inf (tie goes to even) */
  if (x >= 0x38800000u) {                       /* normal in f16: >= 2^-14 */
    uint32_t h = (x >> 13) - (112u << 10);      /* rebias exponent 127 -> 15 */
    uint32_t rem = x & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) h++; /* carry may bump the exponent */
    return (uint16_t)(sign | h);
  }
  if (x <= 0x33000000u) return sign; /* <= 2^-25: rounds to (signed) zero, 2^-25 is a tie */
  /* subnormal in f16: value = mant * 2^(E-150), in units of 2^-24: mant >> (126 - E) */
  uint32_t E = x >> 23, mant = (x & 0x7fffffu) | 0x800000u;
  uint32_t shift = 126u - E; /* 14..24 */
  uint32_t h = mant >> shift, rem = mant & ((1u << shift) - 1u), half = 1u << (shift - 1u);
  if (rem > half || (rem == half && (h & 1u))) h++; /* may become 0x400, the smallest normal */
  return (uint16_t)(sign | h);
}

static inline float bf16_to_f32_inline(uint16_t h) {
  uint32_t x = (uint32_t)h << 16;
  if ((h & 0x7f80u) == 0x7f80u && (h & 0x7fu)) x |= 0x400000u; /* NaN: quiet */
  return f32_from_bits(x);
}

static inline uint16_t f32_to_bf16_inline(float f) {
  uint32_t x = f32_bits(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return (uint16_t)((x >> 16) | 0x40u); /* quiet NaN */
  x += 0x7fffu + ((x >> 16) & 1u); /* round to nearest even; overflow carries into inf */
  return (uint16_t)(x >> 16);
}


/* double -> f32 rounding to odd: a later RNE rounding to f16/bf16 (at least 2 fewer significand
 * bits, in every range) then equals a single RNE rounding of the double. */
static inline float f64_to_f32_odd(double d) {
  float f = (float)d;
  if ((double)f != d && !isnan(d)) {
    uint32_t b = f32_bits(f);
    if (fabs((double)f) > fabs(d)) b -= 1; /* rounded away from zero: step back (inf -> max) */
    f = f32_from_bits(b | 1u);
  }
  return f;
}
static inline uint16_t f64_to_f16(double d) { return f32_to_f16_inline(f64_to_f32_odd(d)); }
static inline uint16_t f64_to_bf16(double d) { return f32_to_bf16_inline(f64_to_f32_odd(d)); }

/* At most this many threads; the work of one job is split into this many ranges at most. */
#define HR_MAX_THREADS 64

typedef void (*hr_range_fn)(void *ctx, size_t begin, size_t end, int tid);
/* Runs fn over [0, nitems) split into contiguous ranges, one per thread (tids 0..n-1, range t
 * before range t+1); threaded only when the job touches at least 2^20 elements (`elems`).
 * Returns the number of ranges.  Results never depend on the number of threads: the callers
 * give each item a fixed place. */
int hr_parallel_for(size_t nitems, size_t elems, hr_range_fn fn, void *ctx);
/* malloc that aborts with a message: the references' scratch, sized by the problem */
void *hr_xmalloc(size_t n);

#endif
