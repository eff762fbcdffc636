/* hostref.h: weft_check's base: dtypes and conversions (dtype.c), random inputs and poison
 * (fill.c), the row references (ref_rows.c) and the one comparison (compare.c).  The other
 * families' references are ref_<family>.h.  Shared by `weft run` and the tests, so a kernel is
 * judged the same way everywhere. */
#ifndef WEFT_HOSTREF_H
#define WEFT_HOSTREF_H
#include <stddef.h>
#include <stdint.h>

typedef enum hr_dtype { HR_F32 = 0, HR_F16 = 1, HR_BF16 = 2 } hr_dtype;
typedef enum hr_op { HR_SUM = 0, HR_MAX = 1, HR_MIN = 2, HR_PROD = 3 } hr_op;

int hr_dtype_parse(const char *s, hr_dtype *out);   /* "f32"/"f16"/"bf16" -> 0, else -1 */
const char *hr_dtype_name(hr_dtype dt);
size_t hr_dtype_size(hr_dtype dt);
int hr_op_parse(const char *s, hr_op *out);          /* "sum"/"max"/"min"/"prod" -> 0, else -1 */
double hr_fold(hr_op op, double a, double b);        /* op(a, b) in double */

/* IEEE conversions, round to nearest even; NaN stays NaN, overflow gives inf. */
float hr_f16_to_f32(uint16_t h);
uint16_t hr_f32_to_f16(float f);
float hr_bf16_to_f32(uint16_t h);
uint16_t hr_f32_to_bf16(float f);
double hr_load(hr_dtype dt, const void *base, size_t i);   /* element i as double */

/* Deterministic uniform random values in [lo, hi), rounded to dt. Never all zeros. */
void hr_fill_uniform(hr_dtype dt, void *dst, size_t n, uint64_t seed, double lo, double hi);
uint64_t hr_mix64(uint64_t x);   /* splitmix64's step: a 64-bit hash, for deriving seeds */
/* Values for a product over `cols` factors that stays finite: exp(uniform(-a, a)), a small. */
void hr_fill_for_prod(hr_dtype dt, void *dst, size_t n, size_t cols, uint64_t seed);
/* Factors whose products are exact in f32 in any order: each element is +-2^k, k in {-1, 0, 1},
 * steered per row (of `cols` elements) so every prefix product stays within 2^-8..2^8.  A
 * product reduction then has one right answer to the bit: a missed or repeated element shows. */
void hr_fill_pow2_for_prod(hr_dtype dt, void *dst, size_t n, size_t cols, uint64_t seed);
/* Poison: every byte 0xff (a NaN in f32, f16 and bf16), so an unwritten output is caught. */
void hr_fill_poison(void *dst, size_t bytes);

/* Reductions of each row of x[rows][cols] (dt) in double: out[rows]. Multi-threaded. */
void hr_row_reduce_ref(hr_dtype dt, hr_op op, const void *x, long rows, long cols, double *out);
/* sum of |x| per row: the scale of rounding error for sum */
void hr_row_abs_sum(hr_dtype dt, const void *x, long rows, long cols, double *out);
/* Numerically stable softmax of each row in double: out[rows*cols]. Multi-threaded. */
void hr_row_softmax_ref(hr_dtype dt, const void *x, long rows, long cols, double *out);

typedef struct hr_report {
  size_t n;            /* elements compared */
  size_t bad;          /* failed: outside tolerance, unwritten or NaN */
  size_t unwritten;    /* still holding the poison pattern (counted in bad) */
  size_t nans;         /* NaN but not the poison (counted in bad) */
  double max_abs_err;
  double max_rel_err;  /* |got-want| / |want| over elements with want != 0 */
  size_t first_bad;    /* index into got of the first bad element (valid if bad > 0) */
  double first_got, first_want;
  double worst;        /* largest |got-want| / tolerance (0: every finite element equal) */
  size_t worst_at;     /* index into got of the worst element */
  double worst_got, worst_want, worst_tol;
  size_t cols;         /* row length of got: worst_at / cols is the row (hr_report_format_worst) */
} hr_report;

/* What "close enough" means: element t passes if |got-want| <= atol[t or 0] + rtol*|want|, or
 * rtol*max(|got|, |want|) with rtol_of_larger (two computed answers, neither of them the truth).
 * Equal values (infinities too) pass; the poison and NaN never do. */
typedef struct hr_tol {
  const double *atol;  /* one entry (n_atol == 1) or one per element compared; NULL: 0 */
  size_t n_atol;
  double rtol;
  int rtol_of_larger;
} hr_tol;

/* An empty report for a got of rows of `cols` elements. */
void hr_report_init(hr_report *r, size_t cols);
/* Adds to r the comparison of rows rows[0..nrows) of got (row-major, r->cols columns, out_dt;
 * rows NULL: rows 0..nrows-1) with want (nrows x cols: want's row t is got's row rows[t]).
 * Returns 1 if r holds a bad element (from this call or an earlier one), else 0. */
int hr_compare_rows(hr_report *r, hr_dtype out_dt, const void *got, const long long *rows, size_t nrows,
                    const double *want, const hr_tol *tol);
/* One vector of n: element i passes if |got-want| <= atol[i or 0] + rtol*|want|.
 * atol may have one entry (n_atol == 1) or n. Returns 0 if all pass, 1 otherwise. */
int hr_compare(hr_dtype out_dt, const void *got, const double *want, size_t n,
               const double *atol, size_t n_atol, double rtol, hr_report *r);
/* One line describing r, e.g. "3/4096 outside tolerance, first at [17]: got 1.5 want 1.25;
 * max abs err 0.25, max rel err 0.2; 0 unwritten" */
void hr_report_format(const hr_report *r, char *buf, size_t len);
/* The matrix form, naming the worst element by row and column: "1 elements never written (still
 * the 0xFF poison); 4096 elements compared, worst |err|/tol 0.41 at row 3 col 7: got .. want ..
 * (tol ..)" */
void hr_report_format_worst(const hr_report *r, char *buf, size_t len);

/* Tolerances weft uses, per output dtype and op (documented in README):
 *  reductions in f32 accumulation: sum: atol = 1e-5 * sum|x| + 1e-30; max/min: exact;
 *  prod: rtol 1e-4;  softmax: rtol f32 2e-5, f16 2e-3, bf16 1.6e-2 (one ulp of the output plus
 *  the f32 math), atol 1e-7 for f32 and half an ulp of the smallest normal for f16/bf16. */
double hr_softmax_rtol(hr_dtype out_dt);
double hr_softmax_atol(hr_dtype out_dt);

#endif
