/* Cache-blocked, register-tiled matrix multiply for the CPU backend, in float32 and in
 * _Float16 (half storage and half arithmetic, the way ARM fp16 kernels accumulate).
 *
 *   C[M x N] = alpha * op(A)[M x K] * op(B)[K x N] + beta * C      (row-major)
 *
 * op(A)[i][k] is A[i*lda + k], or A[k*lda + i] when ta is set; likewise for B with tb.
 * beta == 0 overwrites C without reading it (so garbage or NaN in C does not leak in).
 *
 * B may also come from a packing callback instead of a matrix: conv2d uses that to build
 * im2col columns straight into the packed panel layout, so the full im2col matrix is
 * never materialised (for a 1024x1024 input it would take hundreds of MiB). */
#ifndef CD_CPU_GEMM_H
#define CD_CPU_GEMM_H
#include "util/error.h"
#include <stdbool.h>
#include <stddef.h>

/* Columns per packed B panel (the micro-kernel's vector width in elements). */
#define CD_GEMM_NR 16

/* Products (and direct convs) below this many multiply-adds run on one thread whatever the
 * threads argument: waking the OpenMP team and joining it costs more than the work, and far
 * more when the other cores are busy or the worker has gone to sleep after a run of
 * one-thread layers (measured: 100-200 us for the first parallel region after such a run,
 * on 2 pinned cores of an idle host). Results do not depend on the thread count either way.
 * 2M: the 1.2M-MAC 1x1 convs of the 48x192 classifiers take 35-70 us on one core. */
#ifndef CD_GEMM_ONE_THREAD_MACS
#define CD_GEMM_ONE_THREAD_MACS (1 << 21)
#endif
/* The threshold the GEMM, the direct and channel-vector convs use: CD_GEMM_ONE_THREAD_MACS, or
 * the environment variable CLDIFF_GEMM_ONE_THREAD_MACS (a positive integer, read once per
 * process) for an A/B of the thread split on another host (docs/benchmarks.md "Fourth round:
 * dense convolutions"). The depthwise, int8 and matmul thresholds keep the constant. */
long cd_gemm_one_thread_macs(void);

/* Packs rows [k0, k0+kc) and columns [n0, n0+nc) of the logical B into dst as
 * ceil(nc / CD_GEMM_NR) consecutive panels; panel p holds, for each k in [0, kc), the
 * CD_GEMM_NR values of columns n0 + p*NR ... (zeros past nc). dst element type is the
 * gemm's element type. */
typedef void (*cd_gemm_pack_fn)(const void *ctx, int k0, int kc, int n0, int nc, void *dst);

void cd_gemm_f32(int M, int N, int K, float alpha, const float *A, int lda, bool ta, const float *B, int ldb, bool tb,
                 float beta, float *C, int ldc, int threads);
void cd_gemm_f16(int M, int N, int K, _Float16 alpha, const _Float16 *A, int lda, bool ta, const _Float16 *B, int ldb,
                 bool tb, _Float16 beta, _Float16 *C, int ldc, int threads);

/* Same with B produced by pack (see cd_gemm_pack_fn). */
void cd_gemm_f32_packed_b(int M, int N, int K, float alpha, const float *A, int lda, bool ta, cd_gemm_pack_fn pack,
                          const void *pack_ctx, float beta, float *C, int ldc, int threads);
void cd_gemm_f16_packed_b(int M, int N, int K, _Float16 alpha, const _Float16 *A, int lda, bool ta,
                          cd_gemm_pack_fn pack, const void *pack_ctx, _Float16 beta, _Float16 *C, int ldc, int threads);

/* Direct convolution (no im2col panels), one group: Y[oc][oy][ox] = sum over k = (ic, ky, kx) in that order of W[oc][k] *
 * x[ic][oy*sh - pt + ky*dh][ox*sw - pl + kx*dw] (0 outside the input). W is [Cout][K]
 * row-major, x [Cin][H][W], Y [Cout][Ho][Wo]. Per output element the arithmetic is the
 * GEMM's (im2col + cd_gemm with alpha 1, beta 0, padding taps included as w * 0): the same
 * bits, without building im2col panels. Returns false (nothing written) when out of memory
 * for its small scratch. float32 only (half convs keep the im2col path). */
typedef struct {
    const float *x;
    int Cin, H, W, KH, KW, sh, sw, dh, dw, pt, pl, Ho, Wo;
} cd_conv_direct_geo;
bool cd_conv_direct_f32(const cd_conv_direct_geo *g, int Cout, const float *W, float *Y, int threads);

/* A conv's epilogue applied in the store of the last K slice, while the tile is in registers:
 * y = act(y + bias[row]) (bias may be NULL; row = output channel = row of C), per element with
 * the conv epilogue's operations in its order (ops_nn_conv_tmpl.h: v + b, then the activation;
 * no multiply-add pair to contract), so the bits are those of the separate pass. */
enum { CD_GEMM_EPI_NONE, CD_GEMM_EPI_RELU, CD_GEMM_EPI_RELU6, CD_GEMM_EPI_LEAKY_RELU, CD_GEMM_EPI_HARD_SWISH };
typedef struct {
    const float *bias;
    int act;       /* CD_GEMM_EPI_* */
    float a, b, c; /* relu6: a threshold; leaky_relu: a alpha; hard_swish: a threshold, b scale, c offset */
} cd_gemm_epi;
/* The epilogue on one vector R of type VT (float lanes; MT: int lanes of the same count), bv
 * the row's bias (used where ep->bias is set): R + bv, then the activation with ordered
 * compares (false for NaN: R kept) and selects, as the conv epilogue's vector path
 * (ops_nn_conv_tmpl.h F(ev_act)) writes it. One definition for every store that applies it
 * (direct GEMM, direct conv, depthwise plane kernel). */
#define CD_GEMM_EPI_SEL(MT, VT, m, a, b) ((VT)(((m) & (MT)(a)) | (~(m) & (MT)(b))))
#define CD_GEMM_EPI_APPLY(VT, MT, R, ep, bv)                                                                           \
    do {                                                                                                               \
        const VT z_ = {0};                                                                                             \
        if ((ep)->bias) R = R + (bv);                                                                                  \
        switch ((ep)->act) {                                                                                           \
        case CD_GEMM_EPI_RELU: R = CD_GEMM_EPI_SEL(MT, VT, R < z_, z_, R); break;                                      \
        case CD_GEMM_EPI_RELU6: {                                                                                      \
            const VT th_ = z_ + (ep)->a;                                                                               \
            R = CD_GEMM_EPI_SEL(MT, VT, R < z_, z_, CD_GEMM_EPI_SEL(MT, VT, R > th_, th_, R));                         \
            break;                                                                                                     \
        }                                                                                                              \
        case CD_GEMM_EPI_LEAKY_RELU: R = CD_GEMM_EPI_SEL(MT, VT, R < z_, (z_ + (ep)->a) * R, R); break;                \
        case CD_GEMM_EPI_HARD_SWISH: {                                                                                 \
            const VT th_ = z_ + (ep)->a, sc_ = z_ + (ep)->b, off_ = z_ + (ep)->c;                                      \
            VT tt_ = R + off_;                                                                                         \
            tt_ = CD_GEMM_EPI_SEL(MT, VT, tt_ < z_, z_, CD_GEMM_EPI_SEL(MT, VT, tt_ > th_, th_, tt_));                 \
            R = R * tt_ / sc_;                                                                                         \
            break;                                                                                                     \
        }                                                                                                              \
        default: break;                                                                                                \
        }                                                                                                              \
    } while (0)
/* Applies ep to rows [r0, r1) x columns [j0, j0 + ncols) of C (row stride ldc; bias row = row
 * of C) in place: the pass over a finished block. cd_gemm_epi_pick_f32() returns the one for
 * this machine's fp32 level (CLDIFF_GEMM_F32_KERNEL included); pick once per op. */
typedef void (*cd_gemm_epi_fn)(float *C, size_t ldc, int r0, int r1, int j0, int ncols, const cd_gemm_epi *ep);
cd_gemm_epi_fn cd_gemm_epi_pick_f32(void);
/* Whether conv2d applies its epilogue per block (cd_gemm_f32_epi, cd_conv_direct_epi_f32, the
 * depthwise planes) on this machine: at the AVX2 + FMA and portable levels, whose separate
 * epilogue pass GCC compiles with scalar compares (the block pass removes 7-18% of a mobile
 * network's instructions there); not on AVX-512, where the separate pass is vector code and the
 * block pass measured no faster (docs/benchmarks.md "Third round: convolutions"). Both give the
 * same bits. */
bool cd_gemm_epi_blocks_f32(void);
/* cd_conv_direct_f32 with epi (NULL: the plain sums). */
bool cd_conv_direct_epi_f32(const cd_conv_direct_geo *g, int Cout, const float *W, float *Y, const cd_gemm_epi *epi,
                            int threads);
/* C[M x N] = A[M x K] * B[K x N] (alpha 1, beta 0, neither transposed), as cd_gemm_f32 computes
 * it; where the product takes the direct path (small products: the 1x1 convs of mobile
 * networks) epi is applied in its store and the call returns true; otherwise the plain product
 * is stored and it returns false (the caller's epilogue follows). The decision depends only on
 * M, N, K, ldb and the machine. */
bool cd_gemm_f32_epi(int M, int N, int K, const float *A, int lda, const float *B, int ldb, float *C, int ldc,
                     const cd_gemm_epi *epi, int threads);
/* Whether conv2d should take cd_conv_direct_f32 for this geometry on this machine (any K: the
 * reduction is summed in the GEMM's KC slices, so the bits are the im2col + GEMM ones either
 * way): K <= CD_CONV_DIRECT_SHORT_K always, longer reductions where output rows are wide
 * (Wo >= 32) and the wide-tile kernels run. */
#define CD_CONV_DIRECT_SHORT_K 64
bool cd_conv_direct_fits_f32(const cd_conv_direct_geo *g, int Cout);
/* The fp32 depthwise conv's sums (one input and one output channel per group, Cin = C of the
 * geometry, no bias or activation; implemented in ops_nn_conv.c): out[n][c] = sum over taps of
 * w[c][ky][kx] * in[n][c][...] for N images. Tap rows wholly in the padding are skipped. qinv != 0:
 * the input is quantized on the way into the kernel's padded plane (q8(x * qinv) held as floats,
 * int8_quant.h), as the int8 depthwise layers need (ops_int8.c); 0: taken as it is. */
struct cd_op_ctx;
cd_status cd_nn_depthwise_sums_f32(struct cd_op_ctx *c, const cd_conv_direct_geo *g, int N, const float *in,
                                   const float *w, float *out, float qinv);

/* Name of the micro-kernel this machine runs for the fp32 / fp16 GEMM: "neon-4x16"
 * (aarch64 NEON intrinsics), "avx512", "avx2-fma", "avx512fp16", "avx512f-f16c", "avx2-f16c",
 * or "generic" (portable vector-extension code). cd_gemm_kernel_name() is the fp32 one. */
const char *cd_gemm_kernel_name(void);
const char *cd_gemm_kernel_name_f32(void);
const char *cd_gemm_kernel_name_f16(void);

/* The environment variable CLDIFF_GEMM_F32_KERNEL=avx2-fma or generic, read once per process
 * (at the first fp32 pick; again after cd_gemm_f32_level_reload(), for a test that changes it),
 * caps the fp32 level of the GEMM, the direct and depthwise convs and the epilogues (the
 * AVX-512 machine then runs the AVX2 or the portable kernels; cd_gemm_kernel_name_f32() says
 * which): the levels give the same bits (the FMA ones those of a sequential fmaf chain), and
 * this lets one machine test them all. cd_gemm_f32_level_cap(): 2 any level, 1 AVX2 + FMA at
 * most, 0 the portable code.
 * The environment variable CLDIFF_GEMM_F16_KERNEL, read at every fp16 GEMM, runs it on the
 * named micro-kernel level (one of the names above) where this build and CPU have it, and on
 * the best one otherwise; cd_gemm_kernel_name_f16() says which runs. The levels give the same
 * bits; this is for tests and measurements. */
int cd_gemm_f32_level_cap(void);
void cd_gemm_f32_level_reload(void);
#endif
