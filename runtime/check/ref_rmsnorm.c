/* ref_rmsnorm.c: the CPU reference of family rmsnorm (see ref_rmsnorm.h). */
#if !defined(_GNU_SOURCE) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include "ref_rmsnorm.h"

#include <math.h>
#include <pthread.h>
#include <string.h>
#include <unistd.h>

#define REF_MAX_THREADS 32

typedef struct {
  hr_dtype dt;
  const void *x, *r, *w;
  long cols;
  float eps;
  void *h;
  double *y, *rstd;
  long r0, r1;
} rms_job;

/* element i of a dt array as float (every dt value is exact in f32) */
static float ld_f(hr_dtype dt, const void *p, size_t i) { return (float)hr_load(dt, p, i); }

static void st_t(hr_dtype dt, void *p, size_t i, float v) {
  switch (dt) {
  case HR_F32: ((float *)p)[i] = v; break;
  case HR_F16: ((uint16_t *)p)[i] = hr_f32_to_f16(v); break;
  case HR_BF16: ((uint16_t *)p)[i] = hr_f32_to_bf16(v); break;
  }
}

static void *rms_rows(void *arg) {
  const rms_job *j = arg;
  for (long row = j->r0; row < j->r1; row++) {
    size_t base = (size_t)row * (size_t)j->cols;
    const void *hsrc = j->x;
    if (j->r) {
      /* the kernel adds in f32 (one rounding; C's float + float is the same IEEE add) and
       * rounds to dt once more: the rounded h is what it normalises */
      for (long c = 0; c < j->cols; c++) {
        float s = ld_f(j->dt, j->x, base + (size_t)c) + ld_f(j->dt, j->r, base + (size_t)c);
        st_t(j->dt, j->h, base + (size_t)c, s);
      }
      hsrc = j->h;
    }
    double ss = 0;
    for (long c = 0; c < j->cols; c++) {
      double v = hr_load(j->dt, hsrc, base + (size_t)c);
      ss += v * v;
    }
    double rs = 1.0 / sqrt(ss / (double)j->cols + (double)j->eps);
    if (j->rstd) j->rstd[row] = rs;
    for (long c = 0; c < j->cols; c++)
      j->y[base + (size_t)c] = hr_load(j->dt, hsrc, base + (size_t)c) * rs * hr_load(j->dt, j->w, (size_t)c);
  }
  return NULL;
}

void ref_rmsnorm(hr_dtype dt, const void *x, const void *r, const void *w, long rows, long cols, float eps,
                 void *h, double *y, double *rstd) {
  long ncpu = sysconf(_SC_NPROCESSORS_ONLN);
  int nt = ncpu < 1 ? 1 : ncpu > REF_MAX_THREADS ? REF_MAX_THREADS : (int)ncpu;
  if ((double)rows * (double)cols < (double)(1 << 20)) nt = 1;   /* not worth a thread */
  if (nt > rows) nt = rows > 0 ? (int)rows : 1;
  rms_job job[REF_MAX_THREADS];
  pthread_t th[REF_MAX_THREADS];
  int started[REF_MAX_THREADS] = {0};
  for (int t = 0; t < nt; t++) {
    job[t] = (rms_job){dt, x, r, w, cols, eps, h, y, rstd, rows * t / nt, rows * (t + 1) / nt};
    started[t] = t > 0 && pthread_create(&th[t], NULL, rms_rows, &job[t]) == 0;
  }
  for (int t = 0; t < nt; t++) /* range 0, and any whose thread did not start */
    if (!started[t]) rms_rows(&job[t]);
  for (int t = 1; t < nt; t++)
    if (started[t]) pthread_join(th[t], NULL);
}

double ref_rmsnorm_rtol(hr_dtype dt) {
  switch (dt) {
  case HR_F32: return 4e-6;
  case HR_F16: return 0x1p-11 + 4e-6;
  case HR_BF16: return 0x1p-8 + 4e-6;
  }
  return 0;
}

double ref_rmsnorm_atol(hr_dtype dt) {
  switch (dt) {
  case HR_F32: return 0x1p-150;
  case HR_F16: return 0x1p-25;
  case HR_BF16: return 0x1p-134;
  }
  return 0;
}
