/* Cuts one op out of a graph into a standalone graph: its parameters stay parameters, every
 * other input becomes a model input (feed, in input-slot order), every output a model
 * output (fetch). Used to re-run a layer on another backend with given inputs (local vs
 * inherited error) and to write repro packs. */
#ifndef CD_EXTRACT_H
#define CD_EXTRACT_H
#include "util/value.h"
#include "model/graph.h"

typedef struct cd_extracted {
    cd_graph *g;
    int n_inputs;
    int src_inputs[64]; /* tensor id in the source graph of extracted input k */
    int n_outputs;
    int src_outputs[64]; /* tensor id in the source graph of extracted output k */
} cd_extracted;

/* meta[t] (a plan's per-tensor dtype and shape; may be NULL) gives the run-time shape and
 * element type of source tensor t: the new inputs and outputs are declared with them (float
 * tensors as float32, what feeds take), not with the model's declarations, which can
 * disagree (a fake-quantised calib output is declared int8 but flows as float). */
cd_status cd_graph_extract_op(const cd_graph *g, int op_index, const cd_value *meta, cd_extracted *out, cd_error *err);
#endif
