/* matmul / matmul_v2 geometry (ops_nn_matmul.c), shared with the int8 kernels (ops_int8.c). */
#ifndef CD_CPU_MATMUL_GEO_H
#define CD_CPU_MATMUL_GEO_H
#include "engine/ops.h"

typedef struct {
    int64_t M, K, N;
    bool tx, ty; /* effective transposes of the matrix views */
    float alpha;
    int brank;                                                    /* broadcast batch rank */
    int64_t bdims[CD_MAX_RANK], xb[CD_MAX_RANK], yb[CD_MAX_RANK]; /* batch dims, x/y batch dims (1 = broadcast) */
    int64_t batches;
    bool outer; /* v1 1-D x 1-D with both transposes */
    cd_shape out;
} cd_mm_geo;

/* Parses and checks the op on c->vals' shapes (X, Y, attributes); fails naming the op. */
cd_status cd_nn_matmul_parse(cd_op_ctx *c, cd_mm_geo *g);
/* Product b of the broadcast batch: the index of its X matrix (*xo) and Y matrix (*yo). */
void cd_mm_batch(const cd_mm_geo *g, int64_t b, int64_t *xo, int64_t *yo);
/* out = the float32 products of x and y laid out as the op's X and Y (g from cd_nn_matmul_parse),
 * alpha 1: out[b][m][n] = sum over k of x * y, by the blocked GEMM. */
void cd_nn_matmul_sums_f32(const cd_mm_geo *g, const float *x, const float *y, float *out, int threads);
#endif
