/* ref_allreduce.c: the allreduce's reference (ref_allreduce.h). */
#include <stdlib.h>

#include "check_internal.h"
#include "ref_allreduce.h"

int ref_allreduce(hr_dtype dt, hr_op op, ref_fold_fn fold, void *fold_ud, int nranks, size_t n, ref_fill_fn fill,
                  void *fill_ud, double *want, double *scale) {
  size_t es = hr_dtype_size(dt);
  void **all = calloc((size_t)nranks, sizeof *all);
  double *col = malloc((size_t)nranks * sizeof *col);
  int bad = !all || !col;
  /* every rank's input at once: the custom fold takes one element of each rank in a row */
  for (int p = 0; !bad && p < nranks; p++) {
    if (!(all[p] = malloc(n ? n * es : 1))) bad = 1;
    else fill(fill_ud, p, n, all[p]);
  }
  for (size_t i = 0; !bad && i < n; i++) {
    double w = 0, s = 0;
    for (int p = 0; p < nranks; p++) {
      double v = hr_load(dt, all[p], i);
      col[p] = v;
      s += fabs(v);
      w = p == 0 ? v : hr_fold(op, w, v);
    }
    if (fold && fold(fold_ud, col, (size_t)nranks, &w)) bad = 1;
    want[i] = w;
    scale[i] = s;
  }
  for (int p = 0; all && p < nranks; p++) free(all[p]);
  free(all);
  free(col);
  return bad ? -1 : 0;
}

double ref_allreduce_rtol(hr_dtype dt, hr_op op, int custom) {
  if (!custom && (op == HR_MAX || op == HR_MIN)) return 0.0;
  return dt == HR_F16 ? ldexp(1.0, -11) * 1.01 : dt == HR_BF16 ? ldexp(1.0, -8) * 1.01 : 0.0;
}

double ref_allreduce_atol(hr_op op, int custom, double scale) {
  return custom || op == HR_SUM ? ldexp(scale, -22) + 1e-30 : 0.0;
}
