/* Graph IR queries: an op's attributes by name (typed, with defaults) and its slots. */
#include <string.h>
#include "model/graph.h"

/* ---------------------------------------------------------------- queries */
/* a == b, the first characters compared inline: most names of an op differ there, and the
 * CPU kernels look slots and attributes up at every run (a library strcmp per entry was ~2% of
 * a small model's warm run) */
static inline bool name_eq(const char *a, const char *b) { return a[0] == b[0] && !strcmp(a, b); }

const cd_attr *cd_op_attr(const cd_op *op, const char *name) {
    if (!op || !name) return NULL;
    for (int i = 0; i < op->n_attr; i++)
        if (name_eq(op->attrs[i].name, name)) return &op->attrs[i];
    return NULL;
}

int64_t cd_attr_int(const cd_op *op, const char *name, int64_t dflt) {
    const cd_attr *a = cd_op_attr(op, name);
    if (!a) return dflt;
    switch (a->type) {
    case CD_ATTR_INT:
    case CD_ATTR_BOOL:
    case CD_ATTR_LONG:
    case CD_ATTR_BLOCK: return a->i;
    default: return dflt;
    }
}

bool cd_attr_bool(const cd_op *op, const char *name, bool dflt) {
    const cd_attr *a = cd_op_attr(op, name);
    if (!a) return dflt;
    switch (a->type) {
    case CD_ATTR_INT:
    case CD_ATTR_BOOL:
    case CD_ATTR_LONG: return a->i != 0;
    default: return dflt;
    }
}

double cd_attr_float(const cd_op *op, const char *name, double dflt) {
    const cd_attr *a = cd_op_attr(op, name);
    if (!a) return dflt;
    switch (a->type) {
    case CD_ATTR_FLOAT:
    case CD_ATTR_FLOAT64: return a->f;
    case CD_ATTR_INT:
    case CD_ATTR_LONG: return (double)a->i;
    default: return dflt;
    }
}

const char *cd_attr_str(const cd_op *op, const char *name, const char *dflt) {
    const cd_attr *a = cd_op_attr(op, name);
    if (!a || a->type != CD_ATTR_STRING || !a->s) return dflt;
    return a->s;
}

int cd_attr_ints(const cd_op *op, const char *name, const int64_t **out) {
    const cd_attr *a = cd_op_attr(op, name);
    if (out) *out = NULL;
    if (!a) return 0;
    switch (a->type) {
    case CD_ATTR_INTS:
    case CD_ATTR_LONGS:
    case CD_ATTR_BOOLS:
    case CD_ATTR_BLOCKS:
        if (out) *out = a->ints;
        return a->n;
    default: return 0;
    }
}

int cd_attr_floats(const cd_op *op, const char *name, const double **out) {
    const cd_attr *a = cd_op_attr(op, name);
    if (out) *out = NULL;
    if (!a) return 0;
    if (a->type == CD_ATTR_FLOATS || a->type == CD_ATTR_FLOAT64S) {
        if (out) *out = a->floats;
        return a->n;
    }
    return 0;
}

const cd_slot *cd_op_in_slot(const cd_op *op, const char *slot) {
    if (!op || !slot) return NULL;
    for (int i = 0; i < op->n_in; i++)
        if (name_eq(op->in[i].name, slot)) return &op->in[i];
    return NULL;
}

const cd_slot *cd_op_out_slot(const cd_op *op, const char *slot) {
    if (!op || !slot) return NULL;
    for (int i = 0; i < op->n_out; i++)
        if (name_eq(op->out[i].name, slot)) return &op->out[i];
    return NULL;
}

int cd_op_in(const cd_op *op, const char *slot, int idx) {
    const cd_slot *s = cd_op_in_slot(op, slot);
    return (s && idx >= 0 && idx < s->n) ? s->ids[idx] : -1;
}

int cd_op_out(const cd_op *op, const char *slot, int idx) {
    const cd_slot *s = cd_op_out_slot(op, slot);
    return (s && idx >= 0 && idx < s->n) ? s->ids[idx] : -1;
}
