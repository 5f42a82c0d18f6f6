/* Paddle's rnn op (docs/nb-format.md §7.25; reference src/backends/cpu/ops_rnn.c): LSTM, GRU,
 * RNN_TANH, RNN_RELU, multi-layer, bidirectional, time-major, optional SequenceLength.
 * The host loops over layers, directions and time steps; per (layer, direction):
 *   rnn_proj   gx[r, j] = sum_k in[r, k] * W_ih[j, k] + b_ih[j]   for all T*N rows at once
 *              (stored in REAL, like the CPU's gemm result plus bias)
 *   rnn_step   one time step: u_g = h' W_hh[g]^T, the cell, the output row and the new
 *              state. h is double-buffered (h_in -> h_out) because every work-item reads
 *              all of h'; c is per element and updated in place.
 * Gate sums follow the CPU's association: x + (u + b_hh). Sigmoid / tanh in float, rounded
 * to ACC, like the CPU's kernels. Modes: 0 LSTM (gates i, f, c~, o), 1 GRU (r, z, c~),
 * 2 RNN_TANH, 3 RNN_RELU. */

#define RNN_TILE 16

/* gx[r, j] for r < rows, j < GH; a 16x16 work-group tiles rows x gates through local memory. */
__kernel __attribute__((reqd_work_group_size(16, 16, 1))) void
rnn_proj(__global const REAL *in, __global const REAL *w, __global const REAL *b, __global REAL *gx, int rows,
         int GH, int K) {
    __local ACC As[RNN_TILE][RNN_TILE + 1], Ws[RNN_TILE][RNN_TILE + 1];
    const int lx = get_local_id(0), ly = get_local_id(1);
    const int j = get_group_id(0) * RNN_TILE + lx, r = get_group_id(1) * RNN_TILE + ly;
    const int wrow = get_group_id(0) * RNN_TILE + ly; /* W row (gate unit) this item loads */
    ACC acc = ACC_ZERO;
    for (int k0 = 0; k0 < K; k0 += RNN_TILE) {
        int k = k0 + lx;
        As[ly][lx] = (r < rows && k < K) ? LOAD(in, (size_t)r * K + k) : ACC_ZERO;
        Ws[ly][lx] = (wrow < GH && k < K) ? LOAD(w, (size_t)wrow * K + k) : ACC_ZERO;
        barrier(CLK_LOCAL_MEM_FENCE);
        for (int kk = 0; kk < RNN_TILE; kk++) acc = mad(As[ly][kk], Ws[lx][kk], acc);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (r >= rows || j >= GH) return;
    /* the CPU rounds the product to the storage type, then adds the bias */
    STORE(gx, (size_t)r * GH + j, acc + LOAD(b, j));
}

ACC rn_sig(ACC x) { return (ACC)(1.0f / (1.0f + exp(-(float)x))); }
ACC rn_tanh(ACC x) { return (ACC)tanh((float)x); }

/* Sequence length of batch row n (NULL: every row runs all T steps). */
long rn_len(__global const int *len32, __global const long *len64, int n, int T) {
    if (len32) return len32[n];
    if (len64) return len64[n];
    return T;
}

/* One step t of one direction: work-item (k, n) with k < H, n < N. out row (t, n) at column
 * block col0 of width H inside rows of DH; h_in/h_out [N, H]; cst [N, H] (LSTM). */
__kernel void rnn_step(__global const REAL *gx, __global const REAL *whh, __global const REAL *bhh,
                       __global const REAL *h_in, __global REAL *h_out, __global REAL *cst, __global REAL *out,
                       __global const int *len32, __global const long *len64, int mode, int t, int T, int N, int H,
                       int G, int DH, int col0) {
    const int k = get_global_id(0), n = get_global_id(1);
    if (k >= H || n >= N) return;
    const size_t orow = ((size_t)t * N + n) * DH + col0;
    if (t >= rn_len(len32, len64, n, T)) { /* padding step: output zero, state held */
        STORE(out, orow + k, ACC_ZERO);
        STORE(h_out, (size_t)n * H + k, LOAD(h_in, (size_t)n * H + k));
        return;
    }
    const int GH = G * H;
    __global const REAL *x = gx + ((size_t)t * N + n) * GH;
    __global const REAL *hp = h_in + (size_t)n * H;
    ACC u[4];
    for (int g = 0; g < G; g++) {
        __global const REAL *wr = whh + (size_t)(g * H + k) * H;
        ACC acc = ACC_ZERO;
        for (int m = 0; m < H; m++) acc = mad(LOAD(hp, m), LOAD(wr, m), acc);
        u[g] = acc;
    }
    ACC hv;
    if (mode == 0) {
        ACC gi = rn_sig(LOAD(x, k) + (u[0] + LOAD(bhh, k)));
        ACC gf = rn_sig(LOAD(x, H + k) + (u[1] + LOAD(bhh, H + k)));
        ACC gc = rn_tanh(LOAD(x, 2 * H + k) + (u[2] + LOAD(bhh, 2 * H + k)));
        ACC go = rn_sig(LOAD(x, 3 * H + k) + (u[3] + LOAD(bhh, 3 * H + k)));
        ACC cv = gf * LOAD(cst, (size_t)n * H + k) + gi * gc;
        STORE(cst, (size_t)n * H + k, cv);
        hv = go * rn_tanh(LOAD(cst, (size_t)n * H + k));
    } else if (mode == 1) {
        ACC gr = rn_sig(LOAD(x, k) + (u[0] + LOAD(bhh, k)));
        ACC gz = rn_sig(LOAD(x, H + k) + (u[1] + LOAD(bhh, H + k)));
        ACC gc = rn_tanh(LOAD(x, 2 * H + k) + gr * (u[2] + LOAD(bhh, 2 * H + k)));
        hv = gz * LOAD(hp, k) + (ACC_ONE - gz) * gc;
    } else if (mode == 2) {
        hv = rn_tanh(LOAD(x, k) + (u[0] + LOAD(bhh, k)));
    } else {
        ACC a = LOAD(x, k) + (u[0] + LOAD(bhh, k));
        hv = a < ACC_ZERO ? ACC_ZERO : a;
    }
    STORE(out, orow + k, hv);
    STORE(h_out, (size_t)n * H + k, hv);
}
