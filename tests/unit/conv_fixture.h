/* The conv-family parts of the unit tests of the CPU conv kernels (test_conv_regress.c,
 * test_dw.c) on the shared single-op fixture (op_fixture.h): values from float data, and the
 * bias + relu6 fusion. Include after <criterion/criterion.h>. */
#ifndef CLDIFF_TESTS_CONV_FIXTURE_H
#define CLDIFF_TESTS_CONV_FIXTURE_H
#include "op_fixture.h"

/* value id: shape and float data (converted to the value's dtype) */
static inline void t_val(T *t, int id, cd_dtype dt, int rank, const int64_t *dims, const float *data) {
    cd_value *v = &t->vals[id];
    v->dtype = dt;
    v->shape.rank = rank;
    for (int i = 0; i < rank; i++) v->shape.d[i] = dims[i];
    cr_assert_eq(cd_value_alloc(v, NULL), CD_OK);
    for (int64_t i = 0; i < cd_value_numel(v); i++) cd_value_set(v, i, data[i]);
}

/* a bias (value id, n values) fused with relu6, as Paddle-Lite's conv fusion writes it */
static inline void t_bias_relu6(T *t, int id, cd_dtype dt, int64_t n, const float *bias) {
    t_val(t, id, dt, 1, (int64_t[]){n}, bias);
    t_in(t, "Bias", id);
    t_attr(t, "with_act", CD_ATTR_BOOL)->i = 1;
    t_attr(t, "act_type", CD_ATTR_STRING)->s = (char *)"relu6";
}

#endif
