/* The inputs of a layer as run A had them: read from the dump (model inputs from /inputs), or
 * from A's forcing record where --layers left them out; float32. Used by the check (local.c)
 * and the magnitudes (local_mag.c, local_allow.c); calls neither. */
#include "verdict/local_priv.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const cd_dump_tensor_info *cd_local_find_tensor(const cd_dump_tensor_info *t, int n, int op_index, const char *name) {
    for (int i = 0; i < n; i++)
        if (t[i].op_index == op_index && !strcmp(t[i].tensor, name)) return &t[i];
    return NULL;
}

/* The tensor tables of the dump's runs, each read once for the whole check
 * (cd_local_check_layers opens the cache while it runs): each layer's magnitudes load their
 * inputs through cd_local_load_inputs from run A, and free-run evidence from B's free run;
 * reading a table from the dump per layer was the check's largest cost (docs/benchmarks.md,
 * "fp16 cost"), quadratic in the layer count. */
#define TAB_SLOTS 4
static struct tab_slot {
    char run[64];
    cd_dump_tensor_info *t;
    int n;
} g_tab[TAB_SLOTS];
static const cd_dump_reader *g_tab_r;

static void tab_clear(void) {
    for (int i = 0; i < TAB_SLOTS; i++) free(g_tab[i].t);
    memset(g_tab, 0, sizeof g_tab);
    g_tab_r = NULL;
}

/* run's table from the cache, read into a free slot on first use; NULL (the caller reads it
 * itself) outside a check, for another reader, or when every slot is taken. */
static const struct tab_slot *tab_get(const cd_dump_reader *r, const char *run) {
    if (!g_tab_r || g_tab_r != r || strlen(run) >= sizeof g_tab[0].run) return NULL;
    for (int i = 0; i < TAB_SLOTS; i++) {
        if (g_tab[i].run[0] && !strcmp(g_tab[i].run, run)) return &g_tab[i];
        if (!g_tab[i].run[0]) {
            cd_error te = {0};
            if (cd_dump_list_tensors(r, run, &g_tab[i].t, &g_tab[i].n, &te)) return NULL;
            snprintf(g_tab[i].run, sizeof g_tab[i].run, "%s", run);
            return &g_tab[i];
        }
    }
    return NULL;
}

void cd_local_tab_keep(const cd_dump_reader *r, const char *run) {
    tab_clear();
    if (!r) return;
    g_tab_r = r;
    (void)tab_get(r, run); /* without the table, each layer reads it itself */
}

cd_status cd_local_load_inputs(const cd_graph *g, const cd_plan *plan, const cd_dump_reader *r, const char *run_a,
                               const cd_forcing *force, const cd_extracted *ex, cd_value *ins, cd_shape *in_shapes,
                               char *note, size_t note_len, cd_error *err) {
    cd_dump_tensor_info *ta = NULL;
    int na = 0;
    const struct tab_slot *ts = tab_get(r, run_a);
    bool cached = ts != NULL;
    cd_status st = CD_OK;
    if (cached) {
        ta = ts->t;
        na = ts->n;
    } else
        st = cd_dump_list_tensors(r, run_a, &ta, &na, err);
    for (int k = 0; !st && k < ex->n_inputs; k++) {
        int src = ex->src_inputs[k];
        const cd_tensor *t = &g->tensors[src];
        in_shapes[k] = plan->meta[src].shape;
        int prod = t->producer;
        const cd_op *pop = prod >= 0 ? &g->ops[prod] : NULL;
        if (!pop || !strcmp(pop->type, "feed")) {
            st = cd_dump_read_input(r, t->name, &ins[k], err);
            continue;
        }
        const cd_dump_tensor_info *ti = cd_local_find_tensor(ta, na, prod, t->name);
        if ((!ti || ti->stats_only) && force && cd_forcing_has(force, src)) {
            /* not probed, but recorded for the local re-run: the same values A computed */
            if ((st = cd_forcing_get(force, src, CD_F32, false, &ins[k], err))) break;
            in_shapes[k] = ins[k].shape;
            continue;
        }
        if (!ti || ti->stats_only) {
            snprintf(note, note_len, "input '%s' (from op #%d) was not captured in full; probe it (--layers all)",
                     t->name, prod);
            break;
        }
        float *f = NULL;
        int64_t n = 0;
        if ((st = cd_dump_read_f32(r, run_a, ti->dataset, &f, &n, err))) break;
        ins[k].dtype = CD_F32;
        ins[k].shape = ti->shape;
        ins[k].data = f;
        ins[k].nbytes = (size_t)n * sizeof(float);
        ins[k].owned = true;
    }
    if (!cached) free(ta);
    return st;
}
