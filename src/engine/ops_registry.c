/* The op registry: the family tables defined by the op files, collected into one sorted
 * index on first use. The references are strong: a weak one would not pull the family's
 * object out of the static library, and its ops would silently be unknown. */
#include "engine/ops.h"
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

extern const cd_op_table cd_ops_nn;
extern const cd_op_table cd_ops_basic;
extern const cd_op_table cd_ops_shape;
extern const cd_op_table cd_ops_detect;
extern const cd_op_table cd_ops_rnn;
extern const cd_op_table cd_ops_more;

static const cd_op_def **g_sorted;
static int g_count;
static char g_dup[512]; /* set when two tables define the same type: a build bug */
static pthread_once_t g_once = PTHREAD_ONCE_INIT;

static int cmp_def(const void *a, const void *b) {
    const cd_op_def *x = *(const cd_op_def *const *)a, *y = *(const cd_op_def *const *)b;
    return strcmp(x->type, y->type);
}

static void build_index(void) {
    const cd_op_table *tabs[] = {&cd_ops_nn, &cd_ops_basic, &cd_ops_shape, &cd_ops_detect, &cd_ops_rnn, &cd_ops_more};
    int total = 0;
    for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++) total += tabs[t]->n;
    g_sorted = calloc((size_t)(total ? total : 1), sizeof *g_sorted);
    if (!g_sorted) return;
    for (size_t t = 0; t < sizeof tabs / sizeof tabs[0]; t++)
        for (int i = 0; i < tabs[t]->n; i++)
            if (tabs[t]->defs[i].type) g_sorted[g_count++] = &tabs[t]->defs[i];
    qsort(g_sorted, (size_t)g_count, sizeof *g_sorted, cmp_def);
    for (int i = 1; i < g_count; i++)
        if (!strcmp(g_sorted[i]->type, g_sorted[i - 1]->type) && !g_dup[0])
            snprintf(g_dup, sizeof g_dup,
                     "internal error: op type '%s' is defined by two op family tables; "
                     "every type must be registered once (report this bug)",
                     g_sorted[i]->type);
}

/* Non-empty when the registry is inconsistent; the planner turns it into CD_E_INTERNAL. */
const char *cd_op_registry_error(void) {
    pthread_once(&g_once, build_index);
    if (!g_sorted) return "internal error: out of memory building the op registry";
    return g_dup[0] ? g_dup : NULL;
}

/* bsearch key comparison: a type name against an entry of the sorted index */
static int cmp_key(const void *key, const void *entry) {
    return strcmp((const char *)key, (*(const cd_op_def *const *)entry)->type);
}

const cd_op_def *cd_op_find(const char *type) {
    pthread_once(&g_once, build_index);
    if (!type || !g_sorted) return NULL;
    const cd_op_def *const *hit = bsearch(type, g_sorted, (size_t)g_count, sizeof g_sorted[0], cmp_key);
    return hit ? *hit : NULL;
}

int cd_op_all(const cd_op_def *const **out) {
    pthread_once(&g_once, build_index);
    if (out) *out = g_sorted;
    return g_sorted ? g_count : 0;
}
