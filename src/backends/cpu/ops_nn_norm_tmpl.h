/* The body of ops_nn_norm.c's float and _Float16 variants (the *_tmpl.h idiom, docs/design.md
 * §7): ops_nn_norm.c includes it once per element type after defining NN_T, NN_S;
 * it #undefs them at its end. Include it nowhere else. */
#ifndef NN_T
#error "ops_nn_norm_tmpl.h: define NN_T and NN_S, then include (ops_nn_norm.c does)"
#endif
#define CAT_(a, b) a##_##b
#define CAT(a, b) CAT_(a, b)
#define F(name) CAT(name, NN_S)

/* y = (x - mean) * inv * scale + bias over n values, in the storage type. */
static void F(normalize)(const NN_T *x, NN_T *y, int64_t n, double mean, double inv, const NN_T *scale,
                         const NN_T *bias, bool per_elem, const cd_act *act) {
    const NN_T m = (NN_T)mean, iv = (NN_T)inv;
    for (int64_t i = 0; i < n; i++) {
        NN_T v = (x[i] - m) * iv;
        if (scale) v = v * scale[per_elem ? i : 0];
        if (bias) v = v + bias[per_elem ? i : 0];
        if (act && act->kind != CD_ACT_NONE) v = (NN_T)cd_act_apply(act, (float)v);
        y[i] = v;
    }
}

static void F(moments)(const NN_T *x, int64_t n, double *mean, double *var) {
    double s = 0, s2 = 0;
    for (int64_t i = 0; i < n; i++) {
        double v = (double)x[i];
        s += v;
        s2 += v * v;
    }
    *mean = s / (double)n;
    *var = s2 / (double)n - *mean * *mean; /* biased, E[x^2] - mean^2 as the sheet defines */
    if (*var < 0) *var = 0;
}

static void F(bn_run)(cd_op_ctx *c, cd_value *xv, float eps) {
    const NN_T *x = xv->data, *sc = vdata(c, "Scale", false), *bi = vdata(c, "Bias", false);
    const NN_T *mu = vdata(c, "Mean", false), *va = vdata(c, "Variance", false);
    NN_T *y = vdata(c, "Y", true);
    const int64_t N = xv->shape.d[0], C = xv->shape.d[1], inner = nprod(&xv->shape, 2, xv->shape.rank);
    const int threads = c->threads;
    CD_PAR_FOR(N * C * inner > 65536, threads, int64_t, t, N * C, {
        int64_t ch = t % C;
        /* folded per-channel affine a*x + b (computed in float, then applied in NN_T) */
        float a = (float)sc[ch] / sqrtf((float)va[ch] + eps);
        float b = (float)bi[ch] - (float)mu[ch] * a;
        const NN_T at = (NN_T)a, bt = (NN_T)b;
        const NN_T *xp = x + t * inner;
        NN_T *yp = y + t * inner;
        for (int64_t i = 0; i < inner; i++) yp[i] = xp[i] * at + bt;
    });
    const char *mirror[][2] = {
        {"MeanOut", "Mean"}, {"VarianceOut", "Variance"}, {"SavedMean", "Mean"}, {"SavedVariance", "Variance"}};
    for (int i = 0; i < 4; i++) {
        NN_T *o = vdata(c, mirror[i][0], true);
        const NN_T *s = vdata(c, mirror[i][1], false);
        if (o && s) memcpy(o, s, (size_t)C * sizeof(NN_T));
    }
}

static void F(ln_run)(cd_op_ctx *c, cd_value *xv, int axis, float eps) {
    const NN_T *x = xv->data, *sc = vdata(c, "Scale", false), *bi = vdata(c, "Bias", false);
    NN_T *y = vdata(c, "Y", true), *mo = vdata(c, "Mean", true), *vo = vdata(c, "Variance", true);
    const int64_t L = nprod(&xv->shape, 0, axis), R = nprod(&xv->shape, axis, xv->shape.rank);
    const int threads = c->threads;
    CD_PAR_FOR(L * R > 65536, threads, int64_t, l, L, {
        double mean, var;
        F(moments)(x + l * R, R, &mean, &var);
        F(normalize)(x + l * R, y + l * R, R, mean, 1.0 / sqrt(var + eps), sc, bi, true, NULL);
        if (mo) mo[l] = (NN_T)mean;
        if (vo) vo[l] = (NN_T)var;
    });
}

static void F(in_run)(cd_op_ctx *c, cd_value *xv, float eps, const cd_act *act) {
    const NN_T *x = xv->data, *sc = vdata(c, "Scale", false), *bi = vdata(c, "Bias", false);
    NN_T *y = vdata(c, "Y", true), *mo = vdata(c, "SavedMean", true), *vo = vdata(c, "SavedVariance", true);
    const int64_t C = xv->shape.d[1], NC = xv->shape.d[0] * C, R = nprod(&xv->shape, 2, xv->shape.rank);
    const int threads = c->threads;
    CD_PAR_FOR(NC * R > 65536, threads, int64_t, t, NC, {
        double mean, var;
        F(moments)(x + t * R, R, &mean, &var);
        double inv = 1.0 / sqrt(var + eps);
        int64_t ch = t % C;
        F(normalize)(x + t * R, y + t * R, R, mean, inv, sc ? sc + ch : NULL, bi ? bi + ch : NULL, false, act);
        /* Paddle's SavedVariance holds the inverse standard deviation */
        if (mo) mo[t] = (NN_T)mean;
        if (vo) vo[t] = (NN_T)inv;
    });
}

#undef CAT_
#undef CAT
#undef F

#undef NN_T
#undef NN_S
