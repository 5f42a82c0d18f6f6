/* `cldiff inspect model.mnn` and the MNN lines of `cldiff doctor` (docs/mnn.md). */
#ifndef CD_INSPECT_MNN_H
#define CD_INSPECT_MNN_H
#include "model/graph.h"

/* Prints MNN's view of the graph: every op with MNN's type and name, the cldiff op it maps to
 * (checked locally by cldiff's CPU) or why it stays a named op (compared, not checked), inputs,
 * outputs and tensors. Nothing for a graph that is not from a .mnn file. */
void cd_inspect_mnn(const cd_graph *g);

/* `cldiff doctor`: the MNN engines (mnn-cpu, mnn-opencl): usable or what is missing. */
void cd_doctor_mnn(void);
#endif
