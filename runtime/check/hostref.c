/* hostref.c: host-side data, CPU references in double precision, and checks (see hostref.h).
 *
 * Determinism: every result depends only on the inputs (and the seed), never on the number of
 * threads.  Random data is generated in fixed blocks, each block with its own generator seeded
 * from (seed, block index); row reductions are computed over fixed chunks of each row whose
 * partial results are combined in chunk order.  Threads only decide who computes which block or
 * chunk. */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "hostref.h"

#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

/* ---- dtypes and ops ----------------------------------------------------------------------- */

int hr_dtype_parse(const char *s, hr_dtype *out) {
  if (!s || !out) return -1;
  if (strcmp(s, "f32") == 0) { *out = HR_F32; return 0; }
  if (strcmp(s, "f16") == 0) { *out = HR_F16; return 0; }
  if (strcmp(s, "bf16") == 0) { *out = HR_BF16; return 0; }
  return -1;
}

const char *hr_dtype_name(hr_dtype dt) {
  switch (dt) {
  case HR_F32: return "f32";
  case HR_F16: return "f16";
  case HR_BF16: return "bf16";
  }
  return "?";
}

size_t hr_dtype_size(hr_dtype dt) {
  switch (dt) {
  case HR_F32: return 4;
  case HR_F16: return 2;
  case HR_BF16: return 2;
  }
  return 0;
}

int hr_op_parse(const char *s, hr_op *out) {
  if (!s || !out) return -1;
  if (strcmp(s, "sum") == 0) { *out = HR_SUM; return 0; }
  if (strcmp(s, "max") == 0) { *out = HR_MAX; return 0; }
  if (strcmp(s, "min") == 0) { *out = HR_MIN; return 0; }
  if (strcmp(s, "prod") == 0) { *out = HR_PROD; return 0; }
  return -1;
}

double hr_fold(hr_op op, double a, double b) {
  switch (op) {
    case HR_SUM: return a + b;
    case HR_PROD: return a * b;
    case HR_MAX: return a > b ? a : b;
    default: return a < b ? a : b;
  }
}

/* ---- conversions -------------------------------------------------------------------------- */

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

float hr_f16_to_f32(uint16_t h) { return f16_to_f32_inline(h); }
uint16_t hr_f32_to_f16(float f) { return f32_to_f16_inline(f); }
float hr_bf16_to_f32(uint16_t h) { return bf16_to_f32_inline(h); }
uint16_t hr_f32_to_bf16(float f) { return f32_to_bf16_inline(f); }

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

double hr_load(hr_dtype dt, const void *base, size_t i) {
  switch (dt) {
  case HR_F32: return (double)((const float *)base)[i];
  case HR_F16: return (double)f16_to_f32_inline(((const uint16_t *)base)[i]);
  case HR_BF16: return (double)bf16_to_f32_inline(((const uint16_t *)base)[i]);
  }
  return NAN;
}

/* ---- threads ------------------------------------------------------------------------------ */

#define HR_MAX_THREADS 32
#define HR_PAR_MIN_ELEMS ((size_t)1 << 20)

typedef void (*range_fn)(void *ctx, size_t begin, size_t end, int tid);

typedef struct {
  range_fn fn;
  void *ctx;
  size_t begin, end;
  int tid;
} par_task;

static void *par_main(void *arg) {
  par_task *t = arg;
  t->fn(t->ctx, t->begin, t->end, t->tid);
  return NULL;
}

static int hr_ncpu(void) {
  long n = sysconf(_SC_NPROCESSORS_ONLN);
  if (n < 1) n = 1;
  if (n > HR_MAX_THREADS) n = HR_MAX_THREADS;
  return (int)n;
}

/* Run fn over [0, nitems) split into contiguous ranges, one per thread; threaded only when the
 * job covers at least HR_PAR_MIN_ELEMS elements. Returns the number of ranges (tids 0..n-1). */
static int parallel_for(size_t nitems, size_t elems, range_fn fn, void *ctx) {
  int nt = elems >= HR_PAR_MIN_ELEMS ? hr_ncpu() : 1;
  if ((size_t)nt > nitems) nt = nitems ? (int)nitems : 1;
  if (nt <= 1) {
    fn(ctx, 0, nitems, 0);
    return 1;
  }
  par_task task[HR_MAX_THREADS];
  pthread_t th[HR_MAX_THREADS];
  int started[HR_MAX_THREADS];
  for (int t = 0; t < nt; t++) {
    task[t] = (par_task){fn, ctx, nitems * (size_t)t / (size_t)nt,
                         nitems * (size_t)(t + 1) / (size_t)nt, t};
    started[t] = t > 0 && pthread_create(&th[t], NULL, par_main, &task[t]) == 0;
  }
  for (int t = 0; t < nt; t++) /* range 0, and any range whose thread did not start */
    if (!started[t]) par_main(&task[t]);
  for (int t = 1; t < nt; t++)
    if (started[t]) pthread_join(th[t], NULL);
  return nt;
}

static void *xmalloc(size_t n) {
  void *p = malloc(n ? n : 1);
  if (!p) {
    fprintf(stderr, "hostref: out of memory (%zu bytes)\n", n);
    abort();
  }
  return p;
}

/* ---- random ------------------------------------------------------------------------------- */

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
  parallel_for(nblocks, j->n, fill_range, j);
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

/* ---- row reductions ----------------------------------------------------------------------- */

/* Each row is cut into chunks of ROW_CHUNK elements (the last may be shorter); a work item is
 * one (row, chunk). Chunk results are combined per row in chunk order. */
#define ROW_CHUNK 32768L

enum rk { RK_SUM, RK_ABS, RK_MAX, RK_MIN, RK_PROD, RK_EXPSUM, RK_DIV };

#define LD_F32(p, i) ((double)((const float *)(p))[i])
#define LD_F16(p, i) ((double)f16_to_f32_inline(((const uint16_t *)(p))[i]))
#define LD_BF16(p, i) ((double)bf16_to_f32_inline(((const uint16_t *)(p))[i]))

#define CHUNK_KERNELS(SFX, LD)                                                               \
  static double sum_##SFX(const void *p, long n) {                                           \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                   \
    long i = 0;                                                                              \
    for (; i + 4 <= n; i += 4) {                                                             \
      s0 += LD(p, i); s1 += LD(p, i + 1); s2 += LD(p, i + 2); s3 += LD(p, i + 3);            \
    }                                                                                        \
    for (; i < n; i++) s0 += LD(p, i);                                                       \
    return (s0 + s1) + (s2 + s3);                                                            \
  }                                                                                          \
  static double abs_##SFX(const void *p, long n) {                                           \
    double s0 = 0, s1 = 0, s2 = 0, s3 = 0;                                                   \
    long i = 0;                                                                              \
    for (; i + 4 <= n; i += 4) {                                                             \
      s0 += fabs(LD(p, i)); s1 += fabs(LD(p, i + 1));                                        \
      s2 += fabs(LD(p, i + 2)); s3 += fabs(LD(p, i + 3));                                    \
    }                                                                                        \
    for (; i < n; i++) s0 += fabs(LD(p, i));                                                 \
    return (s0 + s1) + (s2 + s3);                                                            \
  }                                                                                          \
  static double prod_##SFX(const void *p, long n) {                                          \
    double s = 1;                                                                            \
    for (long i = 0; i < n; i++) s *= LD(p, i);                                              \
    return s;                                                                                \
  }                                                                                          \
  static double max_##SFX(const void *p, long n) {                                           \
    double m = -INFINITY;                                                                    \
    int nan = 0;                                                                             \
    for (long i = 0; i < n; i++) {                                                           \
      double v = LD(p, i);                                                                   \
      nan |= v != v;                                                                         \
      m = v > m ? v : m;                                                                     \
    }                                                                                        \
    return nan ? NAN : m;                                                                    \
  }                                                                                          \
  static double min_##SFX(const void *p, long n) {                                           \
    double m = INFINITY;                                                                     \
    int nan = 0;                                                                             \
    for (long i = 0; i < n; i++) {                                                           \
      double v = LD(p, i);                                                                   \
      nan |= v != v;                                                                         \
      m = v < m ? v : m;                                                                     \
    }                                                                                        \
    return nan ? NAN : m;                                                                    \
  }                                                                                          \
  static double expsum_##SFX(const void *p, long n, double mx, double *o) {                  \
    double s = 0;                                                                            \
    for (long i = 0; i < n; i++) {                                                           \
      double e = exp(LD(p, i) - mx);                                                         \
      o[i] = e;                                                                              \
      s += e;                                                                                \
    }                                                                                        \
    return s;                                                                                \
  }

CHUNK_KERNELS(f32, LD_F32)
CHUNK_KERNELS(f16, LD_F16)
CHUNK_KERNELS(bf16, LD_BF16)

typedef struct {
  hr_dtype dt;
  enum rk kind;
  const void *x;
  long cols, nch;
  double *part;        /* [rows * nch] chunk results */
  double *out;         /* softmax: [rows * cols] */
  const double *rowv;  /* softmax: per-row max (RK_EXPSUM) or sum (RK_DIV) */
} row_job;

#define DISPATCH(FN, ...)                                                                    \
  (j->dt == HR_F32 ? FN##_f32(__VA_ARGS__)                                                   \
                   : j->dt == HR_F16 ? FN##_f16(__VA_ARGS__) : FN##_bf16(__VA_ARGS__))

static void row_range(void *ctx, size_t w0, size_t w1, int tid) {
  const row_job *j = ctx;
  size_t esz = hr_dtype_size(j->dt);
  (void)tid;
  for (size_t w = w0; w < w1; w++) {
    long r = (long)(w / (size_t)j->nch), c = (long)(w % (size_t)j->nch);
    long c0 = c * ROW_CHUNK, n = j->cols - c0 < ROW_CHUNK ? j->cols - c0 : ROW_CHUNK;
    size_t e0 = (size_t)r * (size_t)j->cols + (size_t)c0; /* first element of the chunk */
    const void *p = (const char *)j->x + e0 * esz;
    double v = 0;
    switch (j->kind) {
    case RK_SUM: v = DISPATCH(sum, p, n); break;
    case RK_ABS: v = DISPATCH(abs, p, n); break;
    case RK_MAX: v = DISPATCH(max, p, n); break;
    case RK_MIN: v = DISPATCH(min, p, n); break;
    case RK_PROD: v = DISPATCH(prod, p, n); break;
    case RK_EXPSUM: v = DISPATCH(expsum, p, n, j->rowv[r], j->out + e0); break;
    case RK_DIV: {
      double s = j->rowv[r], *o = j->out + e0;
      for (long i = 0; i < n; i++) o[i] /= s;
      break;
    }
    }
    j->part[w] = v;
  }
}

/* Combine the chunk results of each row in chunk order. */
static void row_combine(enum rk kind, const double *part, long rows, long nch, double *out) {
  for (long r = 0; r < rows; r++) {
    const double *p = part + (size_t)r * (size_t)nch;
    double v = p[0];
    int nan = v != v;
    for (long c = 1; c < nch; c++) {
      double u = p[c];
      nan |= u != u;
      switch (kind) {
      case RK_MAX: v = u > v ? u : v; break;
      case RK_MIN: v = u < v ? u : v; break;
      case RK_PROD: v *= u; break;
      default: v += u; break;
      }
    }
    out[r] = (kind == RK_MAX || kind == RK_MIN) && nan ? NAN : v;
  }
}

static void row_pass(row_job *j, long rows) {
  size_t items = (size_t)rows * (size_t)j->nch;
  parallel_for(items, (size_t)rows * (size_t)j->cols, row_range, j);
}

static long row_nchunks(long cols) { return cols > 0 ? (cols + ROW_CHUNK - 1) / ROW_CHUNK : 1; }

static void row_reduce(hr_dtype dt, enum rk kind, const void *x, long rows, long cols,
                       double *out) {
  if (rows <= 0 || !out) return;
  if (cols < 0) cols = 0;
  long nch = row_nchunks(cols);
  double *part = xmalloc((size_t)rows * (size_t)nch * sizeof(double));
  row_job j = {dt, kind, x, cols, nch, part, NULL, NULL};
  row_pass(&j, rows);
  row_combine(kind, part, rows, nch, out);
  free(part);
}

void hr_row_reduce_ref(hr_dtype dt, hr_op op, const void *x, long rows, long cols, double *out) {
  enum rk kind = RK_SUM;
  switch (op) {
  case HR_SUM: kind = RK_SUM; break;
  case HR_MAX: kind = RK_MAX; break;
  case HR_MIN: kind = RK_MIN; break;
  case HR_PROD: kind = RK_PROD; break;
  }
  row_reduce(dt, kind, x, rows, cols, out);
}

void hr_row_abs_sum(hr_dtype dt, const void *x, long rows, long cols, double *out) {
  row_reduce(dt, RK_ABS, x, rows, cols, out);
}

void hr_row_softmax_ref(hr_dtype dt, const void *x, long rows, long cols, double *out) {
  if (rows <= 0 || cols <= 0 || !out) return;
  long nch = row_nchunks(cols);
  double *part = xmalloc((size_t)rows * (size_t)nch * sizeof(double));
  double *rowv = xmalloc((size_t)rows * sizeof(double));
  row_job j = {dt, RK_MAX, x, cols, nch, part, out, rowv};
  row_pass(&j, rows); /* 1: max of each row */
  row_combine(RK_MAX, part, rows, nch, rowv);
  for (long r = 0; r < rows; r++) /* a row of -inf only: exp(-inf - 0) = 0, then 0/0 = NaN */
    if (rowv[r] == -INFINITY) rowv[r] = 0;
  j.kind = RK_EXPSUM; /* 2: out = exp(x - max), and the sum of each row */
  row_pass(&j, rows);
  row_combine(RK_SUM, part, rows, nch, rowv);
  j.kind = RK_DIV; /* 3: out /= sum */
  row_pass(&j, rows);
  free(rowv);
  free(part);
}

/* ---- comparison --------------------------------------------------------------------------- */

typedef struct {
  hr_dtype dt;
  const void *got;
  const double *want;
  const double *atol;
  size_t n_atol;
  double rtol;
  hr_report rep[HR_MAX_THREADS];
} cmp_job;

static inline void cmp_one(hr_report *r, size_t i, int poison, double g, double w, double atol,
                           double rtol) {
  int bad;
  if (poison) {
    r->unwritten++;
    bad = 1;
  } else if (g != g) {
    bad = 1;
  } else if (g == w) { /* also equal infinities */
    bad = 0;
  } else {
    double err = fabs(g - w);
    bad = !(err <= atol + rtol * fabs(w)); /* NaN in want or atol: bad */
    if (err > r->max_abs_err) r->max_abs_err = err;
    if (w != 0) {
      double rel = err / fabs(w);
      if (rel > r->max_rel_err) r->max_rel_err = rel;
    }
  }
  if (bad) {
    if (r->bad == 0) {
      r->first_bad = i;
      r->first_got = g;
      r->first_want = w;
    }
    r->bad++;
  }
}

#define CMP_LOOP(BITS_T, POISON, VALUE)                                                      \
  do {                                                                                       \
    const BITS_T *gp = j->got;                                                               \
    if (j->n_atol == 1) {                                                                    \
      double a = j->atol[0];                                                                 \
      for (size_t i = i0; i < i1; i++) {                                                     \
        BITS_T b = gp[i];                                                                    \
        cmp_one(r, i, b == (POISON), (VALUE), j->want[i], a, rtol);                          \
      }                                                                                      \
    } else {                                                                                 \
      for (size_t i = i0; i < i1; i++) {                                                     \
        BITS_T b = gp[i];                                                                    \
        cmp_one(r, i, b == (POISON), (VALUE), j->want[i], j->atol[i], rtol);                 \
      }                                                                                      \
    }                                                                                        \
  } while (0)

static void cmp_range(void *ctx, size_t i0, size_t i1, int tid) {
  cmp_job *j = ctx;
  hr_report *r = &j->rep[tid];
  double rtol = j->rtol;
  memset(r, 0, sizeof *r);
  r->n = i1 - i0;
  switch (j->dt) {
  case HR_F32: CMP_LOOP(uint32_t, 0xffffffffu, (double)f32_from_bits(b)); break;
  case HR_F16: CMP_LOOP(uint16_t, 0xffffu, (double)f16_to_f32_inline(b)); break;
  case HR_BF16: CMP_LOOP(uint16_t, 0xffffu, (double)bf16_to_f32_inline(b)); break;
  }
}

int hr_compare(hr_dtype out_dt, const void *got, const double *want, size_t n,
               const double *atol, size_t n_atol, double rtol, hr_report *r) {
  static const double zero = 0;
  hr_report local;
  if (!r) r = &local;
  memset(r, 0, sizeof *r);
  if (!atol || n_atol == 0) { atol = &zero; n_atol = 1; }
  if (n_atol != 1 && n_atol != n) { /* a caller error: report every element as bad */
    r->n = n;
    r->bad = n;
    r->first_got = r->first_want = NAN;
    return n ? 1 : 0;
  }
  if (n == 0) return 0;
  cmp_job *j = xmalloc(sizeof *j);
  j->dt = out_dt;
  j->got = got;
  j->want = want;
  j->atol = atol;
  j->n_atol = n_atol;
  j->rtol = rtol;
  int nt = parallel_for(n, n, cmp_range, j);
  for (int t = 0; t < nt; t++) { /* merge in index order */
    const hr_report *p = &j->rep[t];
    if (p->bad && r->bad == 0) {
      r->first_bad = p->first_bad;
      r->first_got = p->first_got;
      r->first_want = p->first_want;
    }
    r->n += p->n;
    r->bad += p->bad;
    r->unwritten += p->unwritten;
    if (p->max_abs_err > r->max_abs_err) r->max_abs_err = p->max_abs_err;
    if (p->max_rel_err > r->max_rel_err) r->max_rel_err = p->max_rel_err;
  }
  free(j);
  return r->bad ? 1 : 0;
}

void hr_report_format(const hr_report *r, char *buf, size_t len) {
  if (!buf || len == 0) return;
  if (!r) { snprintf(buf, len, "no report"); return; }
  if (r->bad)
    snprintf(buf, len,
             "%zu/%zu outside tolerance, first at [%zu]: got %.9g want %.9g; "
             "max abs err %.3g, max rel err %.3g; %zu unwritten",
             r->bad, r->n, r->first_bad, r->first_got, r->first_want, r->max_abs_err,
             r->max_rel_err, r->unwritten);
  else
    snprintf(buf, len,
             "0/%zu outside tolerance; max abs err %.3g, max rel err %.3g; %zu unwritten", r->n,
             r->max_abs_err, r->max_rel_err, r->unwritten);
}

/* ---- tolerances and time ------------------------------------------------------------------ */

double hr_softmax_rtol(hr_dtype out_dt) {
  switch (out_dt) {
  case HR_F32: return 2e-5;
  case HR_F16: return 2e-3;
  case HR_BF16: return 1.6e-2;
  }
  return 2e-5;
}

double hr_softmax_atol(hr_dtype out_dt) {
  switch (out_dt) {
  case HR_F32: return 1e-7;
  case HR_F16: return 0x1p-15;   /* half the smallest normal 2^-14: 3.05e-5 */
  case HR_BF16: return 0x1p-127; /* half the smallest normal 2^-126: 5.88e-39 */
  }
  return 1e-7;
}

