/* Data-movement ops (docs/nb-format.md §7.13, §7.17-7.19, §7.25): transpose, concat, split, slice,
 * stack, expand, shuffle_channel are all one strided copy
 *   dst[dbase + sum_d i_d * dstr_d] = src[sbase + sum_d i_d * sstr_d]
 * over an index space of up to 8 dims (dim 0 outermost) whose strides the host computes.
 * Elements are moved as raw bits (uchar/ushort/uint/ulong by element size), so the kernels
 * are exact for every dtype and variant and never touch half arithmetic. pad works the same
 * way; arg_max reads REAL values. */

int sh_get(int8 v, int d) {
    switch (d) {
    case 0: return v.s0; case 1: return v.s1; case 2: return v.s2; case 3: return v.s3;
    case 4: return v.s4; case 5: return v.s5; case 6: return v.s6;
    }
    return v.s7;
}

#define DEF_COPY(NAME, T)                                                                                 \
    __kernel void NAME(__global const T *src, __global T *dst, int n, int nd, int8 dims, int8 sstr,     \
                       int8 dstr, int sbase, int dbase) {                                                \
        int i = get_global_id(0);                                                                         \
        if (i >= n) return;                                                                               \
        int so = sbase, dof = dbase, r = i;                                                               \
        for (int d = nd - 1; d >= 0; d--) {                                                               \
            int dim = sh_get(dims, d), q = r % dim;                                                       \
            r /= dim;                                                                                     \
            so += q * sh_get(sstr, d);                                                                    \
            dof += q * sh_get(dstr, d);                                                                   \
        }                                                                                                 \
        dst[dof] = src[so];                                                                               \
    }
DEF_COPY(strided_copy_1, uchar)
DEF_COPY(strided_copy_2, ushort)
DEF_COPY(strided_copy_4, uint)
DEF_COPY(strided_copy_8, ulong)

/* pad2d / pad3d as an N-d pad over raw element bits: output index i over dims `odims`
 * (dim 0 outermost); per dim the source coordinate is o - before[d], mapped by mode
 * (0 constant, 1 reflect, 2 edge, 3 circular); a constant-mode miss writes `fill` (the pad
 * value's bits in the tensor's dtype, computed by the host). */
int pd_src(int o, int before, int n, int mode) {
    int i = o - before;
    if (i >= 0 && i < n) return i;
    if (mode == 1) return i < 0 ? -i : 2 * (n - 1) - i;
    if (mode == 2) return i < 0 ? 0 : n - 1;
    if (mode == 3) return ((i % n) + n) % n;
    return -1;
}

#define DEF_PAD(NAME, T)                                                                                  \
    __kernel void NAME(__global const T *src, __global T *dst, int n, int nd, int8 odims, int8 idims,     \
                       int8 before, int mode, ulong fill) {                                               \
        int i = get_global_id(0);                                                                         \
        if (i >= n) return;                                                                               \
        int r = i, so = 0, stride = 1;                                                                    \
        for (int d = nd - 1; d >= 0; d--) {                                                               \
            int od = sh_get(odims, d), q = r % od, id = sh_get(idims, d);                                 \
            r /= od;                                                                                      \
            int s = pd_src(q, sh_get(before, d), id, mode);                                               \
            if (s < 0) { dst[i] = (T)fill; return; }                                                      \
            so += s * stride;                                                                             \
            stride *= id;                                                                                 \
        }                                                                                                 \
        dst[i] = src[so];                                                                                 \
    }
DEF_PAD(pad_1, uchar)
DEF_PAD(pad_2, ushort)
DEF_PAD(pad_4, uint)
DEF_PAD(pad_8, ulong)

/* arg_max over the middle dim of [outer, len, inner]; the first maximum wins and NaN never
 * wins over a number (like the CPU kernel). out64: output int64 (else int32). */
__kernel void arg_max(__global const REAL *x, __global int *out32, __global long *out64, int outer, int len, int inner) {
    const int i = get_global_id(0);
    if (i >= outer * inner) return;
    const int o = i / inner, in = i - o * inner;
    const size_t base = (size_t)o * len * inner + in;
    float m = LOADF(x, base);
    int best = 0;
    for (int j = 1; j < len; j++) {
        float v = LOADF(x, base + (size_t)j * inner);
        if (v > m || (isnan(m) && !isnan(v))) { m = v; best = j; }
    }
    if (out64) out64[i] = best;
    else out32[i] = best;
}

/* cast (docs/nb-format.md §7.25) between the run's float type and int32/int64, with the CPU's
 * rules (engine/value.c cd_value_set): int -> float is one rounding to nearest of the
 * exact integer, as the CPU's int -> double -> float / half (for |v| >= 2^53 the CPU's
 * double rounds first, which cast_i64_f reproduces in integer arithmetic); float -> int
 * truncates toward zero, saturates at the CPU's limits and maps NaN to 0. */
__kernel void cast_i32_f(__global const int *x, __global REAL *y, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    STOREF(y, i, (float)x[i]);
}

/* v rounded to 53 significant bits, nearest-even: what the CPU's (double)v does. */
float ca_i64_to_float(long v) {
    ulong a = v < 0 ? (ulong)0 - (ulong)v : (ulong)v;
    int bits = 64 - (int)clz(a);
    if (bits > 53) {
        int sh = bits - 53;
        ulong mask = ((ulong)1 << sh) - 1, rem = a & mask, halfw = (ulong)1 << (sh - 1);
        a >>= sh;
        if (rem > halfw || (rem == halfw && (a & 1))) a++;
        a <<= sh; /* a <= 2^64 - 2^11 before the shift back: cannot overflow */
    }
    float f = (float)a;
    return v < 0 ? -f : f;
}

__kernel void cast_i64_f(__global const long *x, __global REAL *y, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    STOREF(y, i, ca_i64_to_float(x[i]));
}

__kernel void cast_f_i32(__global const REAL *x, __global int *y, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    float f = LOADF(x, i);
    y[i] = isnan(f) ? 0 : (f >= 2147483648.0f ? INT_MAX : (f <= -2147483648.0f ? INT_MIN : (int)f));
}

__kernel void cast_f_i64(__global const REAL *x, __global long *y, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    float f = LOADF(x, i);
    /* the CPU saturates at the largest double below 2^63, 9223372036854774784 */
    y[i] = isnan(f) ? 0 : (f >= 9223372036854775808.0f ? 9223372036854774784L
                                                         : (f <= -9223372036854775808.0f ? LONG_MIN : (long)f));
}

__kernel void cast_i64_i32(__global const long *x, __global int *y, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    long v = x[i];
    y[i] = v > INT_MAX ? INT_MAX : (v < INT_MIN ? INT_MIN : (int)v);
}

__kernel void cast_i32_i64(__global const int *x, __global long *y, int n) {
    int i = get_global_id(0);
    if (i >= n) return;
    y[i] = x[i];
}

/* fill_constant (float outputs; integer ones are shape arithmetic on the host): every
 * element gets the same raw bits, the value converted to the dtype by the host. */
#define DEF_FILL(NAME, T)                                                                                 \
    __kernel void NAME(__global T *dst, int n, ulong bits) {                                              \
        int i = get_global_id(0);                                                                         \
        if (i < n) dst[i] = (T)bits;                                                                      \
    }
DEF_FILL(fill_1, uchar)
DEF_FILL(fill_2, ushort)
DEF_FILL(fill_4, uint)
DEF_FILL(fill_8, ulong)
