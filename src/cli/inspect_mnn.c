/* `cldiff inspect model.mnn` (inspect_mnn.h). */
#include "cli/inspect_mnn.h"
#include <stdio.h>
#include <string.h>
#include "model/mnn_reader.h"

static void shape_of(const cd_tensor *t, char *b, size_t n) {
    if (t->shape.rank == 0 && !t->persistable) {
        snprintf(b, n, "(shape from the run)");
        return;
    }
    cd_shape_str(&t->shape, b, n);
}

void cd_inspect_mnn(const cd_graph *g) {
    if (!cd_mnn_graph(g)) return;
    int n_ops = 0, mapped = 0, params = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const char *ty = g->ops[i].type;
        if (!strcmp(ty, "feed") || !strcmp(ty, "fetch")) continue;
        n_ops++;
        mapped += cd_mnn_op_mapped(&g->ops[i]);
    }
    for (int t = 0; t < g->n_tensors; t++) params += g->tensors[t].persistable;
    printf("\nMNN model: %d ops, %d tensors (%d constants)\n", n_ops, g->n_tensors, params);
    printf("  checked locally by cldiff's CPU: %d ops (mapped onto cldiff's op table)\n", mapped);
    printf("  compared only, unchecked:        %d ops (named mnn_<Type>)\n", n_ops - mapped);
    for (int k = 0; k < g->n_inputs; k++) {
        const cd_tensor *t = &g->tensors[g->inputs[k]];
        char sb[160];
        shape_of(t, sb, sizeof sb);
        printf("  input %d: %s %s %s\n", k, t->name, cd_dtype_name(t->dtype), sb);
    }
    for (int k = 0; k < g->n_outputs; k++) printf("  output %d: %s\n", k, g->tensors[g->outputs[k]].name);
    printf("  %-4s %-28s %-22s %-20s %s\n", "#", "MNN op", "MNN type", "cldiff op", "parameters / why unchecked");
    int k = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!strcmp(op->type, "feed") || !strcmp(op->type, "fetch")) continue;
        const char *why = cd_attr_str(op, "mnn_unmapped", NULL), *par = cd_attr_str(op, "mnn_params", "");
        printf("  %-4d %-28s %-22s %-20s %s%s%s%s\n", k++, cd_attr_str(op, "mnn_name", "?"),
               cd_attr_str(op, "mnn_type", "?"), cd_mnn_op_mapped(op) ? op->type : "unchecked", par,
               why && par[0] ? "; " : "", why ? "not mapped: " : "", why ? why : "");
    }
}
