/* Matrix products (docs/nb-format.md §7.6-7.9): fc, mul, matmul, matmul_v2. One batched GEMM with
 * element strides, so transposes and broadcast batches (stride 0) need no copies:
 *   C[b, m, n] = act(alpha * sum_k A[b, m, k] * B[b, k, n] + bias[n])
 * where A[b, m, k] = A[aoff(b) + m*am + k*ak] and aoff(b) = (b / nb1)*ab0 + (b % nb1)*ab1
 * (two batch levels cover NumPy broadcasting of rank-4 operands); likewise B.
 * 16x16 work-group, one output per work-item, 16x16 tiles of A and B in local memory. */
#define T 16

ACC mm_act(int kind, ACC x, float a, ACC al) {
    switch (kind) {
    case K_RELU: return x < ACC_ZERO ? ACC_ZERO : x;
    case K_RELU6: return (float)x < 0.0f ? ACC_ZERO : ((float)x > a ? (ACC)a : x);
    case K_LEAKY_RELU: return x < ACC_ZERO ? (ACC)(a * (float)x) : x;
    case K_PRELU: return x < ACC_ZERO ? al * x : x;
    }
    return x;
}

__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void
gemm(__global const REAL *A, __global const REAL *B, __global const REAL *bias, __global REAL *C,
     __global const REAL *alpha_t, int M, int N, int K, int nb1, int ab0, int ab1, int am, int ak, int bb0, int bb1,
     int bk, int bn, float alpha, int kind, float a, int amode) {
    __local ACC As[T][T + 1], Bs[T][T + 1];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int n = get_group_id(0) * T + lx, m = get_group_id(1) * T + ly, b = get_global_id(2);
    const size_t aoff = (size_t)(b / nb1) * ab0 + (size_t)(b % nb1) * ab1;
    const size_t boff = (size_t)(b / nb1) * bb0 + (size_t)(b % nb1) * bb1;
    const int am_row = get_group_id(1) * T + ly; /* row of A this item loads */
    const int bn_col = get_group_id(0) * T + lx; /* column of B this item loads */
    ACC acc = ACC_ZERO;
    for (int k0 = 0; k0 < K; k0 += T) {
        int ka = k0 + lx, kb = k0 + ly;
        As[ly][lx] = (am_row < M && ka < K) ? LOAD(A, aoff + (size_t)am_row * am + (size_t)ka * ak) : ACC_ZERO;
        Bs[ly][lx] = (kb < K && bn_col < N) ? LOAD(B, boff + (size_t)kb * bk + (size_t)bn_col * bn) : ACC_ZERO;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < T; kk++) acc = mad(As[ly][kk], Bs[kk][lx], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (m >= M || n >= N) return;
    if (alpha != 1.0f) acc *= (ACC)alpha;
    if (bias) acc += LOAD(bias, n);
    ACC al = kind == 9 ? LOAD(alpha_t, amode == 0 ? 0 : n) : ACC_ZERO;
    STORE(C, ((size_t)b * M + m) * N + n, mm_act(kind, acc, a, al));
}
