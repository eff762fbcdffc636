/* dtype.c: dtypes, operators and conversions (hostref.h).  IEEE round to nearest even; double
 * to 16-bit goes through f32 rounded to odd, so it is one rounding. */
#include <stdio.h>
#include <stdlib.h>

#include "check_internal.h"

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

float hr_f16_to_f32(uint16_t h) { return f16_to_f32_inline(h); }
uint16_t hr_f32_to_f16(float f) { return f32_to_f16_inline(f); }
float hr_bf16_to_f32(uint16_t h) { return bf16_to_f32_inline(h); }
uint16_t hr_f32_to_bf16(float f) { return f32_to_bf16_inline(f); }

double hr_load(hr_dtype dt, const void *base, size_t i) {
  switch (dt) {
  case HR_F32: return (double)((const float *)base)[i];
  case HR_F16: return (double)f16_to_f32_inline(((const uint16_t *)base)[i]);
  case HR_BF16: return (double)bf16_to_f32_inline(((const uint16_t *)base)[i]);
  }
  return NAN;
}
