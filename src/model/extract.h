/* Cuts one op out of a graph into a standalone graph: its parameters stay parameters, every
 * other input becomes a model input (feed, in input-slot order), every output a model
 * output (fetch). Used to re-run a layer on another backend with given inputs (local vs
 * inherited error) and to write repro packs. */
#ifndef CD_EXTRACT_H
#define CD_EXTRACT_H
#include "model/graph.h"

typedef struct cd_extracted {
    cd_graph *g;
    int n_inputs;
    int src_inputs[64];    /* tensor id in the source graph of extracted input k */
    int n_outputs;
    int src_outputs[64];   /* tensor id in the source graph of extracted output k */
} cd_extracted;

/* shapes[t] gives the run-time shape of source tensor t (from a plan), used for declared
 * shapes of the new inputs. */
cd_status cd_graph_extract_op(const cd_graph *g, int op_index, const cd_shape *shapes, cd_extracted *out,
                              cd_error *err);
#endif
