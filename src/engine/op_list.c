/* The op table's entries (op_list.def expanded once) and their lookup. */
#include "engine/op_list.h"
#include "engine/ops.h"
#include <float.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#define AF(name, dflt)                                                                                                 \
    { CD_OPA_FLOAT, name, dflt }
#define AB(name, dflt)                                                                                                 \
    { CD_OPA_BOOL, name, dflt }
#define AC(value)                                                                                                      \
    { CD_OPA_CONST, NULL, value }
static const cd_op_info k_ops[CD_OPID_COUNT] = {
#define CD_OP(type, group, kind, bound, ulps, hazard, flags, ...)                                                      \
    {#type, CD_OPID_##type, CD_OPL_##group, kind, CD_OPB_##bound, ulps, CD_ACC_##hazard, flags, {__VA_ARGS__}},
#include "engine/op_list.def"
#undef CD_OP
};
#undef AF
#undef AB
#undef AC

/* The fused-activation kinds are cd_act_kind (engine/ops.h): conv, fc and the elementwise
 * fusions hand them to the same kernels' switches. */
#define SAME_KIND(type, act)                                                                                           \
    _Static_assert((int)CD_K_##type == (int)(act), "op_list.def: " #type "'s kind must be " #act)
SAME_KIND(relu, CD_ACT_RELU);
SAME_KIND(relu6, CD_ACT_RELU6);
SAME_KIND(leaky_relu, CD_ACT_LEAKY_RELU);
SAME_KIND(sigmoid, CD_ACT_SIGMOID);
SAME_KIND(tanh, CD_ACT_TANH);
SAME_KIND(swish, CD_ACT_SWISH);
SAME_KIND(silu, CD_ACT_SWISH);
SAME_KIND(hard_swish, CD_ACT_HARD_SWISH);
SAME_KIND(hard_sigmoid, CD_ACT_HARD_SIGMOID);
SAME_KIND(prelu, CD_ACT_PRELU);
SAME_KIND(abs, CD_ACT_ABS);
SAME_KIND(gelu, CD_ACT_GELU);
SAME_KIND(exp, CD_ACT_EXP);
SAME_KIND(sqrt, CD_ACT_SQRT);
_Static_assert(CD_ACT_SQRT < 20, "the standalone-only kinds start at 20, after every cd_act_kind");
/* An ACT entry has a kind in the eltwise `act` kernel's switch. */
#define ACT_HAS_KIND(type, group, kind, ...)                                                                           \
    _Static_assert(CD_OPL_##group != CD_OPL_ACT || (kind) >= 0, "op_list.def: ACT op " #type " needs a kind");
#define CD_OP ACT_HAS_KIND
#include "engine/op_list.def"
#undef CD_OP

static const cd_op_info *g_sorted[CD_OPID_COUNT];
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_info(const void *a, const void *b) {
    return strcmp((*(const cd_op_info *const *)a)->type, (*(const cd_op_info *const *)b)->type);
}

static void build_index(void) {
    for (int i = 0; i < CD_OPID_COUNT; i++) g_sorted[i] = &k_ops[i];
    qsort(g_sorted, CD_OPID_COUNT, sizeof g_sorted[0], cmp_info);
}

/* bsearch key comparison: a type name against an entry of the sorted index */
static int cmp_key(const void *key, const void *entry) {
    return strcmp((const char *)key, (*(const cd_op_info *const *)entry)->type);
}

const cd_op_info *cd_op_info_find(const char *type) {
    if (!type) return NULL;
    pthread_once(&g_once, build_index);
    const cd_op_info *const *hit = bsearch(type, g_sorted, (size_t)CD_OPID_COUNT, sizeof g_sorted[0], cmp_key);
    return hit ? *hit : NULL;
}

const cd_op_info *cd_op_info_at(cd_op_id id) { return id >= 0 && id < CD_OPID_COUNT ? &k_ops[id] : NULL; }

cd_op_id cd_op_id_of(const char *type) {
    const cd_op_info *i = cd_op_info_find(type);
    return i ? i->id : CD_OPID_COUNT;
}

bool cd_op_is_placement(const char *type) {
    const cd_op_info *i = cd_op_info_find(type);
    return i && (i->flags & CD_OPL_PLACEMENT);
}

void cd_op_params_parse(const cd_op *op, const cd_op_info *info, cd_op_params *out) {
    for (int i = 0; i < CD_OP_MAX_ATTRS; i++) {
        const cd_op_attrdef *a = info ? &info->attrs[i] : NULL;
        out->v[i] = 0.0f;
        if (!a) continue;
        switch (a->kind) {
        case CD_OPA_FLOAT:
            out->v[i] = (float)(op ? cd_attr_float(op, a->name, a->dflt) : a->dflt);
            break; /* NaN/Inf as stored */
        case CD_OPA_BOOL:
            out->v[i] = (op ? cd_attr_bool(op, a->name, a->dflt != 0) : a->dflt != 0) ? 1.0f : 0.0f;
            break;
        case CD_OPA_CONST: out->v[i] = (float)a->dflt; break;
        case CD_OPA_NONE: break;
        }
    }
}
