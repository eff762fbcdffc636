/* runtime/core/tmap.c: the TMA tensor maps a kernel's manifest asks for, planned from its
 * launch arguments (and, for a communicator's buffers, the ranks' layout) and encoded with the
 * driver.  api_launch and the communicators' launches call these (internal.h). */
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "driver.h"
#include "internal.h"
#include "manifest.h"

/* Built at every launch: their addresses and sizes are the arguments', and encoding is a
 * host-only driver call.  Everything TMA requires is checked first (api_tmap_plan_make, no
 * driver), so a size it cannot take fails like any other argument check, naming the value. */

_Static_assert(_Alignof(CUtensorMap) >= 64, "cuTensorMapEncodeTiled needs 64-byte aligned maps");

#define TMA_MAX_DIM (1ULL << 32)
#define TMA_MAX_STRIDE (1ULL << 40)

static int gcd(int a, int b) { return b ? gcd(b, a % b) : a; }

weft_status api_tmap_plan_make(const weft_manifest *m, int i, void **args, const api_tmap_env *env,
                               api_tmap_plan *p, char *err, size_t errlen) {
  const weft_tmap *t = &m->tmaps[i];
  memset(p, 0, sizeof *p);
  int esize = manifest_dtype_bytes(t->dtype);
  p->dtype = esize == 4 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT32
           : strcmp(t->dtype, "f16") == 0 ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16 : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
  p->swizzle = t->swizzle == 128 ? CU_TENSOR_MAP_SWIZZLE_128B : t->swizzle == 64 ? CU_TENSOR_MAP_SWIZZLE_64B
             : t->swizzle == 32 ? CU_TENSOR_MAP_SWIZZLE_32B : CU_TENSOR_MAP_SWIZZLE_NONE;
  p->l2_promotion = t->l2_promotion == 0 ? CU_TENSOR_MAP_L2_PROMOTION_NONE
                  : t->l2_promotion == 64 ? CU_TENSOR_MAP_L2_PROMOTION_L2_64B
                  : t->l2_promotion == 128 ? CU_TENSOR_MAP_L2_PROMOTION_L2_128B : CU_TENSOR_MAP_L2_PROMOTION_L2_256B;
  p->n_dims = (unsigned)t->n_dims;
  int shards = strcmp(t->source, "comm.shards") == 0, local = strcmp(t->source, "comm.local") == 0;
  const char *what = shards ? "the ranks' shards" : local ? "this rank's data area" : t->source;
  if ((shards || local) && !env->peers) {
    snprintf(err, errlen, "%s: tensor map %s reads the communicator's buffer (%s): launch it with weft_comm_launch",
             m->name, t->name, t->source);
    return WEFT_ERR_INVALID;
  }
  manifest_dim kind[WEFT_TMAP_MAX_DIMS];
  for (int d = 0; d < t->n_dims; d++) {
    int a;
    kind[d] = manifest_tmap_dim(m, t->dims[d], &a);
    long long v = kind[d] == DIM_RANKS ? env->ranks : kind[d] == DIM_HALVES ? env->halves : 0;
    if (kind[d] == DIM_BAD) {   /* manifest_check refused these */
      snprintf(err, errlen, "%s: tensor map %s: dims[%d] = %s names no size argument", m->name, t->name, d + 1, t->dims[d]);
      return WEFT_ERR_INTERNAL;
    }
    if (kind[d] == DIM_ARG || kind[d] == DIM_ARG_PER_RANK) v = manifest_arg_long(&m->args[a], args[a]);
    if (kind[d] == DIM_ARG_PER_RANK) {
      if (v % env->ranks) {
        snprintf(err, errlen, "%s: tensor map %s: %s = %lld is not a multiple of the %d ranks (its dim %d is %s: "
                 "each rank's share of %s)", m->name, t->name, m->args[a].name, v, env->ranks, d + 1, t->dims[d],
                 m->args[a].name);
        return WEFT_ERR_LAUNCH;
      }
      v /= env->ranks;
    }
    if (v < 1 || (unsigned long long)v > TMA_MAX_DIM) {
      snprintf(err, errlen, "%s: tensor map %s: %s = %lld: TMA takes 1..2^32 elements per dim", m->name, t->name,
               t->dims[d], v);
      return WEFT_ERR_LAUNCH;
    }
    p->dims[d] = (cuuint64_t)v;
    p->box[d] = t->box[d];
  }

  /* strides in bytes (of dims 1..), the base, and how much of a data half the map spans */
  unsigned __int128 dense = (unsigned)esize, span;
  if (shards) {   /* dims { K, rows, ranks, halves }: shard s at region s of rank s's buffer */
    unsigned __int128 row = (unsigned __int128)p->dims[0] * esize, shard = row * p->dims[1];
    p->strides[0] = (cuuint64_t)row;
    p->strides[1] = env->symm_stride + shard > UINT64_MAX ? UINT64_MAX : (cuuint64_t)(env->symm_stride + shard);
    p->strides[2] = (cuuint64_t)env->half_bytes;
    span = shard * (unsigned)env->ranks;
    p->base = env->peers[0] + (CUdeviceptr)env->data_offset;
    for (int r = 1; r < env->ranks; r++)
      if (env->peers[r] != env->peers[0] + (CUdeviceptr)r * env->symm_stride) {
        snprintf(err, errlen, "%s: tensor map %s: rank %d's buffer is not %llu bytes after rank %d's; one tensor map "
                 "over the ranks' shards needs them evenly spaced (a bug in weft's symmetric memory)", m->name,
                 t->name, r, env->symm_stride, r - 1);
        return WEFT_ERR_INTERNAL;
      }
  } else {        /* dense, innermost first; "halves" steps from one data half to the next */
    for (int d = 0; d < t->n_dims; d++) {
      if (d > 0) {
        unsigned __int128 s = kind[d] == DIM_HALVES ? (unsigned __int128)env->half_bytes : dense;
        p->strides[d - 1] = s > UINT64_MAX ? UINT64_MAX : (cuuint64_t)s;
      }
      if (kind[d] != DIM_HALVES) dense *= p->dims[d];
    }
    span = dense;
    if (local) p->base = env->peers[env->rank] + (CUdeviceptr)env->data_offset;
    else p->base = *(CUdeviceptr *)args[manifest_arg_index(m, t->source)];
  }
  if ((shards || local) && span > (unsigned __int128)env->half_bytes) {
    snprintf(err, errlen, "%s: tensor map %s: %s spans %llu bytes of a data half, but this communicator's halves hold "
             "%lld bytes: create it with a larger max_elems", m->name, t->name, what,
             span > UINT64_MAX ? UINT64_MAX : (unsigned long long)span, env->half_bytes);
    return WEFT_ERR_LAUNCH;
  }
  if (p->base % 16) {
    snprintf(err, errlen, "%s: tensor map %s: %s = 0x%llx: TMA needs a 16-byte aligned address", m->name, t->name,
             what, (unsigned long long)p->base);
    return WEFT_ERR_LAUNCH;
  }
  for (int d = 1; d < t->n_dims; d++) {
    cuuint64_t s = p->strides[d - 1];
    if (s % 16 == 0 && s < TMA_MAX_STRIDE) continue;
    if (d == 1 && s % 16 && kind[0] <= DIM_ARG_PER_RANK)   /* the usual case: a row length TMA cannot step */
      snprintf(err, errlen, "%s: tensor map %s: %s = %llu: the rows of %s are %llu bytes, TMA needs a multiple of 16 "
               "bytes (%s a multiple of %d)", m->name, t->name, t->dims[0], (unsigned long long)p->dims[0], what,
               (unsigned long long)s, t->dims[0], 16 / gcd(16, esize));
    else
      snprintf(err, errlen, "%s: tensor map %s: dim %d (%s) of %s steps %llu bytes; TMA needs a multiple of 16 "
               "bytes, below 2^40", m->name, t->name, d + 1, t->dims[d], what, (unsigned long long)s);
    return WEFT_ERR_LAUNCH;
  }
  return WEFT_OK;
}

weft_status api_tmap_encode(const drv_table *d, const weft_manifest *m, int i, const api_tmap_plan *p,
                            CUtensorMap *out, char *err, size_t errlen) {
  static const cuuint32_t ones[WEFT_TMAP_MAX_DIMS] = {1, 1, 1, 1, 1};
  /* OOB_FILL_NONE: elements outside the dims read as zero, which the kernels rely on for
   * sizes that are not multiples of their tiles */
  CUresult r = d->cuTensorMapEncodeTiled(out, p->dtype, p->n_dims, (void *)(uintptr_t)p->base, p->dims, p->strides,
                                         p->box, ones, CU_TENSOR_MAP_INTERLEAVE_NONE, p->swizzle,
                                         p->l2_promotion, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r == CUDA_SUCCESS) return WEFT_OK;
  char desc[512], shape[512];
  drv_describe(d, r, "cuTensorMapEncodeTiled", desc, sizeof desc);
  int n = snprintf(shape, sizeof shape, "address 0x%llx, dims", (unsigned long long)p->base);
  for (unsigned j = 0; j < p->n_dims && n < (int)sizeof shape; j++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, " %llu", (unsigned long long)p->dims[j]);
  for (unsigned j = 1; j < p->n_dims && n < (int)sizeof shape; j++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%llu", j == 1 ? ", strides " : " ",
                  (unsigned long long)p->strides[j - 1]);
  for (unsigned j = 0; j < p->n_dims && n < (int)sizeof shape; j++)
    n += snprintf(shape + n, sizeof shape - (size_t)n, "%s%u", j == 0 ? ", box " : " ", p->box[j]);
  snprintf(err, errlen, "%s: tensor map %s: %s (%s, swizzle %d)", m->name, m->tmaps[i].name, desc, shape,
           m->tmaps[i].swizzle);
  return WEFT_ERR_CUDA;
}
