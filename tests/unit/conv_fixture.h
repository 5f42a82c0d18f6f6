/* A hand-built single conv-family op for the unit tests of the CPU conv kernels
 * (test_conv_regress.c, test_dw.c): up to 4 inputs, one output, 8 attributes, NV values,
 * run through cd_op_find like the executor does. Include after <criterion/criterion.h>. */
#ifndef CLDIFF_TESTS_CONV_FIXTURE_H
#define CLDIFF_TESTS_CONV_FIXTURE_H
#include <stdlib.h>
#include <string.h>
#include "engine/ops.h"

#define NV 8
typedef struct {
    cd_op op;
    cd_slot in[4], out[1];
    int ids_in[4][1], ids_out[1][1];
    cd_attr attrs[8];
    int64_t ints[8][4];
    double floats[8][4];
    cd_value vals[NV];
    cd_graph g;
    cd_tensor tensors[NV];
    cd_error err;
    cd_op_ctx c;
} T;

/* an op of this type and name at op_index, fp32 or fp16 values, on `threads` threads */
static inline T *t_new_op(const char *type, const char *name, int op_index, bool half, int threads) {
    T *t = calloc(1, sizeof *t);
    t->op.type = (char *)type;
    t->op.name = (char *)name;
    t->op.in = t->in;
    t->op.out = t->out;
    t->op.attrs = t->attrs;
    t->g.tensors = t->tensors;
    t->g.n_tensors = NV;
    for (int i = 0; i < NV; i++) {
        t->vals[i].shape.rank = -1;
        t->tensors[i].dtype = half ? CD_F16 : CD_F32;
    }
    t->c = (cd_op_ctx){.g = &t->g,
                       .op = &t->op,
                       .op_index = op_index,
                       .vals = t->vals,
                       .prec = half ? CD_PREC_FP16 : CD_PREC_FP32,
                       .threads = threads,
                       .err = &t->err};
    return t;
}

static inline void t_free(T *t) {
    for (int i = 0; i < NV; i++) cd_value_release(&t->vals[i]);
    free(t);
}

static inline void t_in(T *t, const char *slot, int id) {
    cd_slot *s = &t->in[t->op.n_in];
    s->name = (char *)slot;
    s->ids = t->ids_in[t->op.n_in++];
    s->ids[0] = id;
    s->n = 1;
}

static inline cd_attr *t_attr(T *t, const char *name, cd_attr_type ty) {
    cd_attr *a = &t->attrs[t->op.n_attr];
    a->name = (char *)name;
    a->type = ty;
    a->ints = t->ints[t->op.n_attr];
    a->floats = t->floats[t->op.n_attr];
    t->op.n_attr++;
    return a;
}

static inline void a_ints(T *t, const char *n, int k, const int64_t *v) {
    cd_attr *a = t_attr(t, n, CD_ATTR_INTS);
    a->n = k;
    memcpy(a->ints, v, (size_t)k * sizeof *v);
}

/* the op's one output, slot "Output", value id */
static inline void t_out(T *t, int id) {
    t->op.out[0] = (cd_slot){.name = (char *)"Output", .ids = t->ids_out[0], .n = 1};
    t->ids_out[0][0] = id;
    t->op.n_out = 1;
}

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
