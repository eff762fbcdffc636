/* ref_cluster.c: cluster_reduce's reference (ref_cluster.h). */
#include <stdlib.h>

#include "check_internal.h"
#include "ref_cluster.h"

int ref_cluster_check(const ref_cluster_shape *s, const float *in, const float *out, hr_op op, int check_values,
                      ref_fold_fn fold, void *fold_ud, ref_cluster_report *r) {
  const int C = s->C, T = s->T, W = s->W, I = s->I;
  size_t per = (size_t)I * (size_t)W, nref = (size_t)s->clusters * per;   /* CTA 0's outputs */
  double *want = malloc((nref ? nref : 1) * sizeof *want), *atol = malloc((nref ? nref : 1) * sizeof *atol);
  double *v = malloc((size_t)C * (size_t)T * sizeof *v);
  long long *rows = malloc((size_t)(s->clusters > 0 ? s->clusters : 1) * sizeof *rows);
  int rc = -1;
  memset(r, 0, sizeof *r);
  hr_report_init(&r->values, per);
  if (!want || !atol || !v || !rows) goto out;
  for (long cl = 0; cl < s->clusters; cl++) {
    rows[cl] = (long long)cl * C;   /* CTA 0's block of I*W outputs */
    for (int it = 0; it < I; it++)
      for (int w = 0; w < W; w++) {
        uint32_t b0;
        memcpy(&b0, &out[((size_t)(cl * C) * I + it) * W + w], 4);
        double x0 = 0, scale = 0;
        int nv = 0;
        for (int c = 0; c < C; c++) {
          uint32_t b;
          memcpy(&b, &out[((size_t)(cl * C + c) * I + it) * W + w], 4);
          r->unwritten += b == 0xffffffffu;
          r->differ += b != b0;
          for (int t = 0; t < T; t++) {
            double x = in[(((size_t)(cl * C + c) * I + it) * T + t) * W + w];
            x0 = nv == 0 ? x : hr_fold(op, x0, x);
            scale += fabs(x);
            v[nv++] = x;
          }
        }
        if (fold && check_values && fold(fold_ud, v, (size_t)nv, &x0)) goto out;
        size_t at = (size_t)cl * per + (size_t)it * W + (size_t)w;
        want[at] = x0;
        atol[at] = fold || op == HR_SUM ? ldexp(scale, -22) : 0;
      }
  }
  if (check_values) {
    hr_tol tol = {atol, nref, 0.0, 0};
    hr_compare_rows(&r->values, HR_F32, out, rows, (size_t)s->clusters, want, &tol);
  }
  rc = r->differ || r->unwritten || r->values.bad;
out:
  free(want); free(atol); free(v); free(rows);
  return rc;
}
