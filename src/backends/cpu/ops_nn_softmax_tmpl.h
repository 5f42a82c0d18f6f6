/* The body of ops_nn_softmax.c's float and _Float16 variants (the *_tmpl.h idiom, docs/design.md
 * §7): ops_nn_softmax.c includes it once per element type after defining NN_T, NN_S;
 * it #undefs them at its end. Include it nowhere else. */
#ifndef NN_T
#error "ops_nn_softmax_tmpl.h: define NN_T and NN_S, then include (ops_nn_softmax.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, NN_S)

#define SM_BLOCK 1024 /* inner values processed together (scratch per thread) */

/* Softmax of one task t: outer index t / nblk, inner values of block t % nblk, with the
 * thread's scratch (sum, mx: SM_BLOCK each). */
static void F(sm_task)(const sm_geo *g, const NN_T *in, NN_T *out, int64_t t, int64_t nblk, float *sum, NN_T *mx) {
    int64_t o = t / nblk, i0 = (t % nblk) * SM_BLOCK, bw = g->inner - i0 < SM_BLOCK ? g->inner - i0 : SM_BLOCK;
    const NN_T *x = in + o * g->n * g->inner + i0;
    NN_T *y = out + o * g->n * g->inner + i0;
    for (int64_t i = 0; i < bw; i++) {
        mx[i] = x[i];
        sum[i] = 0.0f;
    }
    for (int64_t a = 1; a < g->n; a++) {
        const NN_T *xr = x + a * g->inner;
        for (int64_t i = 0; i < bw; i++)
            if (xr[i] > mx[i] || xr[i] != xr[i]) mx[i] = xr[i];
    }
    for (int64_t a = 0; a < g->n; a++) {
        const NN_T *xr = x + a * g->inner;
        NN_T *yr = y + a * g->inner;
        for (int64_t i = 0; i < bw; i++) {
            NN_T d = xr[i] - mx[i];
            NN_T e = (NN_T)expf((float)d);
            sum[i] += (float)e;
            yr[i] = g->log ? d : e;
        }
    }
    if (g->log) {
        /* log of the sum rounded to the storage type, then one subtraction in it */
        for (int64_t i = 0; i < bw; i++) mx[i] = (NN_T)logf(sum[i]);
        for (int64_t a = 0; a < g->n; a++) {
            NN_T *yr = y + a * g->inner;
            for (int64_t i = 0; i < bw; i++) yr[i] = yr[i] - mx[i];
        }
    } else {
        for (int64_t a = 0; a < g->n; a++) {
            NN_T *yr = y + a * g->inner;
            for (int64_t i = 0; i < bw; i++) yr[i] = (NN_T)((float)yr[i] / sum[i]);
        }
    }
}

/* The scan `m = x[0]; m = x[a] where x[a] > m or x[a] is NaN` of one row, without its
 * loop-carried branch (rec_svtr's 200-value rows spent a third of the run in it): with a NaN in
 * the row the scan ends on the last NaN, so that row takes the scan itself; without one, the
 * scan's result is the first value equal to the maximum. Eight lanes of partial maxima
 * (x > p ? x : p, a max instruction) give the maximum's value; values that compare equal have
 * the same bits except +0 and -0, so a zero maximum is taken from the first zero of the row. */
static NN_T F(row_max)(const NN_T *x, int64_t n) {
    int nan = 0;
    for (int64_t a = 0; a < n; a++) nan |= x[a] != x[a];
    if (nan) {
        NN_T mx = x[0];
        for (int64_t a = 1; a < n; a++)
            if (x[a] > mx || x[a] != x[a]) mx = x[a];
        return mx;
    }
    NN_T p[8];
    for (int j = 0; j < 8; j++) p[j] = x[0];
    int64_t a = 0;
    for (; a + 8 <= n; a += 8)
        for (int j = 0; j < 8; j++) p[j] = x[a + j] > p[j] ? x[a + j] : p[j];
    for (; a < n; a++) p[0] = x[a] > p[0] ? x[a] : p[0];
    NN_T m = p[0];
    for (int j = 1; j < 8; j++) m = p[j] > m ? p[j] : m;
    if (m == (NN_T)0)
        for (a = 0; a < n; a++)
            if (x[a] == (NN_T)0) return x[a];
    return m;
}

/* Rows r0..r1-1 of a softmax over the last axis (inner == 1): sm_task's arithmetic on one
 * contiguous row, element by element in the same order (max scan, x - max, exp, the float sum
 * in axis order, then the division or the log subtraction), without sm_task's per-row
 * scratch blocks of one value (picodet's 256 rows of 8 took 24 us that way). Softmax rows go
 * eight at a time: the exponentials are stored first (the calls then carry no dependency from
 * one element to the next), then the eight rows' sums run interleaved, each its own chain of
 * additions in axis order (the same sums), instead of one latency-bound chain at a time. */
static void F(sm_rows)(const sm_geo *g, const NN_T *in, NN_T *out, int64_t r0, int64_t r1) {
    const int64_t n = g->n;
    if (g->log) {
        for (int64_t r = r0; r < r1; r++) {
            const NN_T *x = in + r * n;
            NN_T *y = out + r * n;
            const NN_T mx = F(row_max)(x, n);
            float sum = 0.0f;
            for (int64_t a = 0; a < n; a++) {
                NN_T d = x[a] - mx;
                sum += (float)(NN_T)expf((float)d);
                y[a] = d;
            }
            NN_T ls = (NN_T)logf(sum);
            for (int64_t a = 0; a < n; a++) y[a] = y[a] - ls;
        }
        return;
    }
    for (int64_t rb = r0; rb < r1; rb += 8) {
        const int nr = r1 - rb < 8 ? (int)(r1 - rb) : 8;
#if defined(NN_ROWS8)
        if (nr == 8 && n == 8 && NN_ROWS8(in + rb * 8, out + rb * 8)) continue; /* the same arithmetic, vectors */
#endif
        float sum[8];
        for (int j = 0; j < nr; j++) {
            const NN_T *x = in + (rb + j) * n;
            NN_T *y = out + (rb + j) * n;
            const NN_T mx = F(row_max)(x, n);
            for (int64_t a = 0; a < n; a++) {
                const NN_T d = x[a] - mx; /* rounded to NN_T, as sm_task's d (half: before expf) */
                y[a] = (NN_T)expf((float)d);
            }
        }
        const NN_T *yb = out + rb * n;
        if (nr == 8) {
            float s0 = 0.0f, s1 = 0.0f, s2 = 0.0f, s3 = 0.0f, s4 = 0.0f, s5 = 0.0f, s6 = 0.0f, s7 = 0.0f;
            for (int64_t a = 0; a < n; a++) {
                s0 += (float)yb[a];
                s1 += (float)yb[n + a];
                s2 += (float)yb[2 * n + a];
                s3 += (float)yb[3 * n + a];
                s4 += (float)yb[4 * n + a];
                s5 += (float)yb[5 * n + a];
                s6 += (float)yb[6 * n + a];
                s7 += (float)yb[7 * n + a];
            }
            sum[0] = s0, sum[1] = s1, sum[2] = s2, sum[3] = s3, sum[4] = s4, sum[5] = s5, sum[6] = s6, sum[7] = s7;
        } else
            for (int j = 0; j < nr; j++) {
                float sj = 0.0f;
                for (int64_t a = 0; a < n; a++) sj += (float)yb[j * n + a];
                sum[j] = sj;
            }
        for (int j = 0; j < nr; j++) {
            NN_T *y = out + (rb + j) * n;
            const float sj = sum[j];
            for (int64_t a = 0; a < n; a++) y[a] = (NN_T)((float)y[a] / sj);
        }
    }
}

static bool F(sm_run)(const sm_geo *g, const NN_T *in, NN_T *out, int threads) {
    const int64_t nblk = (g->inner + SM_BLOCK - 1) / SM_BLOCK, tasks = g->outer * nblk;
    bool ok = true;
    if (g->inner == 1) { /* rows split between threads in runs of whole rows: the same bits */
        const bool par = threads > 1 && g->outer > 1 && g->outer * g->n > 16384;
        const int64_t nt = par ? threads : 1, per = (g->outer + nt - 1) / nt;
        CD_PAR_FOR(par, threads, int64_t, t, nt, {
            int64_t r0 = t * per, r1 = r0 + per < g->outer ? r0 + per : g->outer;
            if (r0 < r1) F(sm_rows)(g, in, out, r0, r1);
        });
        return true;
    }
    if (threads < 2 || g->outer * g->n * g->inner <= 16384) { /* no OpenMP region (backends/cpu/par.h) */
        float *sum = malloc(SM_BLOCK * (sizeof(float) + sizeof(NN_T)));
        if (!sum) return false;
        for (int64_t t = 0; t < tasks; t++) F(sm_task)(g, in, out, t, nblk, sum, (NN_T *)(sum + SM_BLOCK));
        free(sum);
        return true;
    }
#pragma omp parallel num_threads(threads)
    {
        float *sum = malloc(SM_BLOCK * (sizeof(float) + sizeof(NN_T)));
        NN_T *mx = sum ? (NN_T *)(sum + SM_BLOCK) : NULL;
        if (!mx) {
#pragma omp atomic write
            ok = false;
        }
#pragma omp for schedule(static)
        for (int64_t t = 0; t < tasks; t++)
            if (mx) F(sm_task)(g, in, out, t, nblk, sum, mx);
        free(sum);
    }
    return ok;
}

#undef SM_BLOCK
#undef CAT_
#undef CAT
#undef F

#undef NN_T
#undef NN_S
