/* cd_cl_op_find over the dispatcher tables of every op family (cl_ops_<family>.c), sorted
 * once on first use. The references are strong on purpose: a weak reference would not pull
 * the family objects out of the static library, and every op would silently run on the CPU. */
#include "backends/opencl/cl_ops.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

extern const cd_cl_op_table cd_cl_ops_eltwise;
extern const cd_cl_op_table cd_cl_ops_conv;
extern const cd_cl_op_table cd_cl_ops_pool;
extern const cd_cl_op_table cd_cl_ops_matmul;
extern const cd_cl_op_table cd_cl_ops_norm;
extern const cd_cl_op_table cd_cl_ops_softmax;
extern const cd_cl_op_table cd_cl_ops_interp;
extern const cd_cl_op_table cd_cl_ops_shape;
extern const cd_cl_op_table cd_cl_ops_rnn;
extern const cd_cl_op_table cd_cl_ops_more;

static const cd_cl_op_def **g_sorted;
static int g_count;
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_def(const void *a, const void *b) {
    return strcmp((*(const cd_cl_op_def *const *)a)->type, (*(const cd_cl_op_def *const *)b)->type);
}

static void build_index(void) {
    const cd_cl_op_table *tabs[] = {&cd_cl_ops_eltwise, &cd_cl_ops_conv,    &cd_cl_ops_pool,   &cd_cl_ops_matmul,
                                    &cd_cl_ops_norm,    &cd_cl_ops_softmax, &cd_cl_ops_interp, &cd_cl_ops_shape,
                                    &cd_cl_ops_rnn,     &cd_cl_ops_more};
    int total = 0;
    for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++)
        if (tabs[t]) total += tabs[t]->n;
    g_sorted = calloc((size_t)(total ? total : 1), sizeof *g_sorted);
    if (!g_sorted) return; /* cd_cl_op_find then finds nothing: every op falls back to the CPU */
    for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++)
        if (tabs[t])
            for (int i = 0; i < tabs[t]->n; i++) g_sorted[g_count++] = &tabs[t]->defs[i];
    qsort(g_sorted, (size_t)g_count, sizeof *g_sorted, cmp_def);
}

/* bsearch key comparison: a type name against an entry of the sorted index */
static int cmp_key(const void *key, const void *entry) {
    return strcmp((const char *)key, (*(const cd_cl_op_def *const *)entry)->type);
}

const cd_cl_op_def *cd_cl_op_find(const char *type) {
    pthread_once(&g_once, build_index);
    if (!type || !g_sorted) return NULL;
    const cd_cl_op_def *const *hit = bsearch(type, g_sorted, (size_t)g_count, sizeof g_sorted[0], cmp_key);
    return hit ? *hit : NULL;
}
