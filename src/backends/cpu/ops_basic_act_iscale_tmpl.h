/* Integer scale of ops_basic_act.c, one body per integer type: computed in double, truncated
 * toward zero and saturated to [IS_LO, IS_HI] (Paddle casts the float result back to the integer
 * type).
 *
 * A part of ops_basic_act.c's template body: included with IS_T, IS_NAME, IS_LO and IS_HI
 * defined, un_cfg in scope; #undefs all four at its end (docs/design.md §7). */
#ifndef IS_T
#error "a part of ops_basic_act.c's template body: included by ops_basic_act.c only"
#endif

static void IS_NAME(const IS_T *in, IS_T *out, int64_t n, const un_cfg *u) {
    for (int64_t i = 0; i < n; i++) {
        double v = u->p2 != 0.0f ? ((double)in[i] + u->p1) * u->p0 : (double)in[i] * u->p0 + u->p1;
        out[i] = v <= (double)(IS_LO) ? (IS_LO) : (v >= (double)(IS_HI) ? (IS_HI) : (IS_T)v);
    }
}

#undef IS_T
#undef IS_NAME
#undef IS_LO
#undef IS_HI
