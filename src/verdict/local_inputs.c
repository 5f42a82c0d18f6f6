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

/* Run A's tensor table, read once for the whole check (cd_local_check_layers sets it while it
 * runs): each layer's magnitudes load their inputs through cd_local_load_inputs, and reading
 * the table from the dump per layer was the fp16 check's largest cost (docs/benchmarks.md,
 * "fp16 cost"). */
static struct {
    const cd_dump_reader *r;
    char run[64];
    cd_dump_tensor_info *t;
    int n;
} g_tab;

void cd_local_tab_keep(const cd_dump_reader *r, const char *run) {
    free(g_tab.t);
    memset(&g_tab, 0, sizeof g_tab);
    cd_error te = {0};   /* without the table, each layer reads it itself */
    if (r && strlen(run) < sizeof g_tab.run && !cd_dump_list_tensors(r, run, &g_tab.t, &g_tab.n, &te)) {
        g_tab.r = r;
        snprintf(g_tab.run, sizeof g_tab.run, "%s", run);
    }
}

cd_status cd_local_load_inputs(const cd_graph *g, const cd_plan *plan, const cd_dump_reader *r, const char *run_a,
                               const cd_forcing *force, const cd_extracted *ex, cd_value *ins, cd_shape *in_shapes,
                               char *note, size_t note_len, cd_error *err) {
    cd_dump_tensor_info *ta = NULL;
    int na = 0;
    bool cached = g_tab.r && g_tab.r == r && !strcmp(g_tab.run, run_a);
    cd_status st = CD_OK;
    if (cached) { ta = g_tab.t; na = g_tab.n; }
    else st = cd_dump_list_tensors(r, run_a, &ta, &na, err);
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
