/* Dump probe sink: statistics + HDF5 dataset per hit.
 *
 * Each probed tensor is stored synchronously from the executor's (lent) buffer; the
 * statistics are computed on the second OpenMP thread, idle between layers, while the data
 * is written (cd_tensor_rec.stats). A writer thread that queued copies of the tensors was
 * tried and measured: slower whenever the compute threads occupy every core, no faster with
 * spare cores (docs/benchmarks.md), so it is not used. */
#include "probes/sink.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct cd_dump_sink {
    cd_probe_sink probe;
    cd_dump *d;
    const cd_graph *g;
    char run[128];
    cd_sink_mode mode;
    int n_probed, n_nonfinite, first_nonfinite;
    void (*progress)(void *, int, const cd_op_report *);
    void *progress_user;
};

static cd_status sink_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                          cd_error *err) {
    cd_dump_sink *s = user;
    const cd_graph *g = s->g;
    if (op_index < 0 || op_index >= g->n_ops || tensor_id < 0 || tensor_id >= g->n_tensors || !host)
        return cd_err(err, CD_E_INTERNAL, "probe hit for op %d / tensor %d outside the graph (%d ops, %d tensors)",
                      op_index, tensor_id, g->n_ops, g->n_tensors);
    const cd_op *op = &g->ops[op_index];
    cd_tensor_stats st;
    cd_tensor_rec rec = {
        .op_index = op_index,
        .op_type = op->type,
        .layer = op->name,
        .tensor = g->tensors[tensor_id].name,
        .elapsed_us = rep ? rep->elapsed_us : 0,
        .kernel_us = rep ? rep->kernel_us : -1,
        .where = rep ? rep->where : "",
        .kernel = rep ? rep->kernel : "",
        .note = rep ? rep->note : "",
        .stats = &st,
    };
    cd_status r = cd_dump_write_tensor(s->d, s->run, &rec, host, s->mode == CD_SINK_STATS, err);
    if (r)
        return cd_err_prefix(err, "while storing op %d (%s) output '%s': ", op_index, op->name ? op->name : "?",
                             rec.tensor ? rec.tensor : "?");
    if ((st.nan_count || st.inf_count)) {
        s->n_nonfinite++;
        if (s->first_nonfinite < 0) s->first_nonfinite = op_index;
    }
    s->n_probed++;
    return CD_OK;
}

static void sink_op_done(void *user, int op_index, const cd_op_report *rep) {
    cd_dump_sink *s = user;
    if (s->progress) s->progress(s->progress_user, op_index, rep);
}

cd_status cd_dump_sink_new(cd_dump *d, const char *run, const cd_graph *g, cd_sink_mode mode, cd_dump_sink **out,
                           cd_error *err) {
    *out = NULL;
    if (!d || !g || !run) return cd_err(err, CD_E_INTERNAL, "cd_dump_sink_new: missing dump, graph or run");
    if (strlen(run) >= sizeof((cd_dump_sink *)0)->run) return cd_err(err, CD_E_INTERNAL, "run name too long");
    cd_dump_sink *s = cd_calloc(1, sizeof *s, err);
    if (!s) return CD_E_NOMEM;
    s->d = d;
    s->g = g;
    snprintf(s->run, sizeof s->run, "%s", run);
    s->mode = mode;
    s->first_nonfinite = -1;
    s->probe.user = s;
    s->probe.hit = sink_hit;
    s->probe.op_done = sink_op_done;
    *out = s;
    return CD_OK;
}

cd_probe_sink *cd_dump_sink_probe(cd_dump_sink *s) { return &s->probe; }

void cd_dump_sink_on_op_done(cd_dump_sink *s, void (*fn)(void *, int, const cd_op_report *), void *user) {
    s->progress = fn;
    s->progress_user = user;
}

cd_status cd_dump_sink_finish(cd_dump_sink *s, cd_error *err) {
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", s->run);
    const char *layer = "";
    if (s->first_nonfinite >= 0 && s->g->ops[s->first_nonfinite].name) layer = s->g->ops[s->first_nonfinite].name;
    cd_status st;
    if ((st = cd_dump_set_attr_i64(s->d, path, "n_probed", s->n_probed, err))) return st;
    if ((st = cd_dump_set_attr_i64(s->d, path, "n_nonfinite", s->n_nonfinite, err))) return st;
    if ((st = cd_dump_set_attr_i64(s->d, path, "first_nonfinite_op", s->first_nonfinite, err))) return st;
    if ((st = cd_dump_set_attr_str(s->d, path, "first_nonfinite_layer", layer, err))) return st;
    return cd_dump_set_attr_str(s->d, path, "dump_mode", s->mode == CD_SINK_STATS ? "stats" : "full", err);
}

int cd_dump_sink_count(const cd_dump_sink *s) { return s->n_probed; }
int cd_dump_sink_first_nonfinite(const cd_dump_sink *s) { return s->first_nonfinite; }
void cd_dump_sink_free(cd_dump_sink *s) { free(s); }
