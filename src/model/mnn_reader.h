/* Reader for MNN models (.mnn: one FlatBuffer whose root table is MNN's `Net`), docs/mnn.md.
 *
 * The file is untrusted: every offset, count and enum goes through the bounds-checked
 * FlatBuffers layer (model/fb.h); a failure is CD_E_MODEL with the file offset. The `Net`
 * becomes a cd_graph in cldiff's terms: MNN's Input ops become feed ops, Net.outputName fetch
 * ops, Const ops parameters, and every other op either an op of cldiff's op table (when its
 * parameters map onto it: cldiff's CPU can then check it) or a named op "mnn_<Type>" that is
 * compared but not checked. Every op keeps MNN's type and name as attributes mnn_type and
 * mnn_name, so the engines' runners find them again. */
#ifndef CD_MNN_READER_H
#define CD_MNN_READER_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model/graph.h"

/* Missing/unreadable file -> CD_E_USAGE; malformed model -> CD_E_MODEL. */
cd_status cd_mnn_load(const char *path, cd_graph **out, cd_error *err);
cd_status cd_mnn_load_mem(const uint8_t *buf, size_t len, cd_graph **out, cd_error *err);

/* True when buf looks like an MNN model: the root offset and the root table's vtable are
 * plausible and the table has an oplists vector (MNN files carry no file identifier). */
bool cd_mnn_sniff_mem(const uint8_t *buf, size_t len);
/* The file's extension is .mnn, or its first bytes pass cd_mnn_sniff_mem. */
bool cd_mnn_sniff(const char *path);

/* Loads a .mnn (cd_mnn_sniff) or else a Paddle-Lite .nb (cd_nb_load). */
cd_status cd_model_load(const char *path, cd_graph **out, cd_error *err);

/* The graph came from a .mnn file. */
bool cd_mnn_graph(const cd_graph *g);
/* MNN's OpType name for its number ("Convolution", "Raster", ...); NULL when unknown. */
const char *cd_mnn_op_type_name(int type);
/* CD_E_UNSUPPORTED naming the ops of an MNN graph that stay named (mnn_<Type>) and why: cldiff's
 * own backends have no kernel for them (only MNN's engines run such a model: docs/mnn.md, "Ops
 * cldiff does not map"). CD_OK for a graph without them or not from a .mnn. */
cd_status cd_mnn_check_runnable(const cd_graph *g, cd_error *err);
/* Sets (or replaces) op op_index's CD_ENGINE_SHAPES_ATTR to enc[0..n) (model/graph.h): the
 * shapes MNN gave its outputs (the shape pass of src/backends/mnn/mnn_shapes.c). */
cd_status cd_mnn_set_engine_shapes(cd_graph *g, int op_index, const int64_t *enc, int n, cd_error *err);
/* A Reshape kept named because its shape is computed at run time, once the shape pass gave its
 * output's shape (CD_ENGINE_SHAPES_ATTR, a float tensor, no zero dimension), becomes reshape2 to
 * that shape, reading the data only: cldiff's CPU checks it. Returns how many (or a negative
 * status on out of memory, err set). */
int cd_mnn_bind_reshapes(cd_graph *g, cd_error *err);
/* The op was mapped onto cldiff's op table (cldiff's CPU can check it). */
bool cd_mnn_op_mapped(const cd_op *op);
#endif
