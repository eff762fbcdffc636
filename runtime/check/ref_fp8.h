/* ref_fp8.h: FP8 E4M3 outputs with a scale per row (the allreduce_norm family's quant = "fp8_e4m3").
 * What the kernel computes, from y (the norm's value in f32) for each row:
 *   amax  = max(max |y| over the row, 1/512),   scale = amax / 448,   q = e4m3(y / scale)
 * with E4M3 as OCP's e4m3fn (4 exponent bits, bias 7, 3 mantissa bits, no infinities, +-448 the
 * largest finite value, S.1111.111 NaN), rounded to nearest even and saturated to +-448.
 * The reference is y in double: the kernel's y differs from it by the f32 arithmetic before the
 * quantisation (ref_rmsnorm_rtol(f32)), so a code passes if it is a correct rounding of
 * y / scale up to that error, and a scale if it is within it. */
#ifndef WEFT_REF_FP8_H
#define WEFT_REF_FP8_H
#include <stddef.h>
#include <stdint.h>

#define REF_E4M3_MAX 448.0
#define REF_E4M3_MIN_AMAX (1.0 / 512.0)

double ref_e4m3_value(uint8_t code);   /* NaN for 0x7f and 0xff */
/* The spacing of E4M3 values around |t| (2^-9 below the smallest normal, 2^-6). */
double ref_e4m3_spacing(double t);

/* Checks codes q[rows * cols] and scales scale[rows] against y[rows * cols] (double).  Returns the
 * number of bad codes and scales (0: all pass); msg gets the first failure, or "". */
size_t ref_fp8_check(const double *y, long rows, long cols, const uint8_t *q, const float *scale, char *msg,
                     size_t len);

#endif
