/* A hand-built single op for the unit tests of the CPU kernels (test_ops_basic.c, and through
 * conv_fixture.h test_conv_regress.c and test_dw.c): up to 8 input and 4 output slots of up to
 * 8 values each, 16 attributes, NV values, run through cd_op_find like the executor does.
 * Values and their data are each test's own (t_val there). Include after
 * <criterion/criterion.h>. */
#ifndef CLDIFF_TESTS_OP_FIXTURE_H
#define CLDIFF_TESTS_OP_FIXTURE_H
#include <stdlib.h>
#include <string.h>
#include "engine/ops.h"

#define NV 16
typedef struct {
    cd_op op;
    cd_slot in[8], out[4];
    int ids_in[8][8], ids_out[4][8];
    cd_attr attrs[16];
    int64_t ints[16][8];
    double floats[16][4];
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

/* the slot of this name (a new one after the last if there is none yet) */
static inline cd_slot *slot_for(cd_slot *arr, int *n, int (*ids)[8], const char *name) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(arr[i].name, name)) return &arr[i];
    cd_slot *s = &arr[*n];
    s->name = (char *)name;
    s->ids = ids[*n];
    s->n = 0;
    (*n)++;
    return s;
}
/* value id appended to input / output slot `slot` */
static inline void t_in(T *t, const char *slot, int id) {
    cd_slot *s = slot_for(t->in, &t->op.n_in, t->ids_in, slot);
    s->ids[s->n++] = id;
}
static inline void t_out(T *t, const char *slot, int id) {
    cd_slot *s = slot_for(t->out, &t->op.n_out, t->ids_out, slot);
    s->ids[s->n++] = id;
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
static inline void a_int(T *t, const char *n, int64_t v) { t_attr(t, n, CD_ATTR_INT)->i = v; }
static inline void a_bool(T *t, const char *n, bool v) { t_attr(t, n, CD_ATTR_BOOL)->i = v; }
static inline void a_float(T *t, const char *n, double v) { t_attr(t, n, CD_ATTR_FLOAT)->f = (float)v; }
static inline void a_str(T *t, const char *n, const char *v) { t_attr(t, n, CD_ATTR_STRING)->s = (char *)v; }
static inline void a_ints(T *t, const char *n, int k, const int64_t *v) {
    cd_attr *a = t_attr(t, n, CD_ATTR_INTS);
    a->n = k;
    memcpy(a->ints, v, (size_t)k * sizeof *v);
}

static inline cd_status t_infer(T *t) {
    const cd_op_def *d = cd_op_find(t->op.type);
    cr_assert(d, "op %s is not registered", t->op.type);
    return d->infer(&t->c);
}

/* infer, allocate outputs, run */
static inline cd_status t_run(T *t) {
    cd_status s = t_infer(t);
    if (s) return s;
    for (int k = 0; k < t->op.n_out; k++)
        for (int j = 0; j < t->out[k].n; j++) cr_assert_eq(cd_value_alloc(&t->vals[t->out[k].ids[j]], NULL), CD_OK);
    return cd_op_find(t->op.type)->run(&t->c);
}
#endif
