/* Export of a graph as a Paddle inference model in the combined format, the input of
 * Paddle-Lite's `opt`/`Opt` (docs/paddle-lite-opencl.md):
 *   model.pdmodel    a framework.proto ProgramDesc serialized as protobuf (proto2 wire format)
 *   model.pdiparams  every persistable variable of block 0 as a LoDTensor stream record, in
 *                    byte-wise ascending name order (Paddle-Lite's LoadCombinedParamsPb sorts
 *                    the names and reads the records back to back, up to end of file)
 * The protobuf encoding is written here by hand: only the messages the program needs
 * (ProgramDesc, Version, BlockDesc, VarDesc, VarType, TensorDesc, LoDTensorDesc, OpDesc,
 * OpDesc.Var, OpDesc.Attr) and only their fields.
 *
 * The graph is in SSA form; the exported program is too: a variable written for the k-th
 * time (k > 0) by the .nb program's memory-reusing ops gets the name "<name>.cdv<k>", so the
 * exported program has no reused names. The feed/fetch variables keep their names. */
#ifndef CD_PD_EXPORT_H
#define CD_PD_EXPORT_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "model/graph.h"

typedef struct cd_pd_export_opts {
    /* Per tensor id: float32 data that replaces the parameter's record (the caller's
     * dequantized weights), or NULL to keep the record as stored. May be NULL. */
    float *const *param_f32;
    /* Remove what a quantized program carries for Paddle-Lite's int8 kernels: `calib`
     * ops become pass-throughs, and enable_int8, <Slot><k>_scale, bit_length and
     * *_quant_scale attributes are dropped (use with param_f32 holding the dequantized
     * weights: the result is the float program). */
    bool strip_quant;
    /* Keep the saved kernel choice attribute (__@kernel_type_attr@__); off by default, so
     * that opt picks kernels for the places it is given. */
    bool keep_kernel_attr;
    /* Keep conv2d/depthwise_conv2d fusions that Paddle-Lite's x86 float conv lacks: fused
     * hard_sigmoid/sigmoid/tanh/abs activations, and the OpenCL-only SecondInput +
     * fuse_elementwise_op_type. By default such a conv is exported as the conv (output
     * "<out>.cdpre"), then the activation op, then the elementwise op. */
    bool keep_fused_act;
    /* Append a quantize_linear/dequantize_linear pair on the first input that nothing reads
     * (persistable cldiff_int8_marker.scale/.zero_point): Opt adds its int8 places only to a
     * program with such ops (IsQuantizedMode), and the folded int8 form of a .nb has none. */
    bool int8_marker;
    /* Extra fetch ops, after the model's own (col = n_outputs + k): tensor ids, e.g. every
     * op's output for a layer-by-layer comparison with Paddle-Lite. */
    const int *extra_fetch;
    int n_extra_fetch;
    /* Per tensor id: the shape to declare for a non-persistable variable, in place of the
     * .nb's declared shape (rank < 0: keep the declared one). May be NULL. The .nb declares
     * one shape per *name*, and after Paddle-Lite's memory optimizer reused a name that shape
     * belongs to whichever variable had the name first: a reshape2 output [1,200] can be
     * declared [-1,8,-1,-1]. Opt decides things from declared shapes (the OpenCL layout
     * pass's rank test, the constant reshape folding of ssd_boxes_calc_offline_pass), so
     * cmd_export passes the shapes of cldiff's plan (docs/paddle-lite-findings.md). */
    const cd_shape *act_shape;
} cd_pd_export_opts;

typedef struct cd_pd_export_info {
    int n_ops, n_vars, n_params, n_dropped_ops, n_renamed, n_unfused;
    size_t program_bytes, params_bytes;
} cd_pd_export_info;

/* Ops whose outputs a layer-by-layer export does not fetch: feed/fetch, the host<->device copies
 * and layout changes (left out of the export) and calib (a pass-through or int8). */
bool cd_pd_export_skips_fetch(const char *op_type);

/* cst[t] (g->n_tensors entries): tensor t is a parameter, or the output of one of the first n_ops
 * ops that reads only parameters and constants (a reshape2 of a conv bias): Opt folds those into
 * parameters for OpenCL, and a fetch of a folded one crashes Paddle-Lite's layout op
 * (docs/paddle-lite-findings.md, report C), so layer-by-layer exports do not fetch them. */
void cd_pd_export_constants(const cd_graph *g, int n_ops, bool *cst);

/* io_copy, io_copy_once, layout, layout_once (and calib under strip_quant) are exported as
 * pass-throughs: their output is renamed to their input and the op is left out. */
cd_status cd_pd_export_mem(const cd_graph *g, const cd_pd_export_opts *opts, uint8_t **program, size_t *program_len,
                           uint8_t **params, size_t *params_len, cd_pd_export_info *info, cd_error *err);
/* Shapes for opts->act_shape (*out: g->n_tensors entries, free()), from cldiff's shape
 * inference: a plan at input shapes A (in_shapes, one per model input; NULL: the declared
 * shapes with dynamic dims 1 for the batch and 64 for the others) and a second plan at B (every
 * dim an input declares dynamic: batch +1, others +32); a dim that differs between the two is
 * -1, as Paddle declares dynamic dims; rank -1 where no plan set a shape. When no plan can be
 * made, *out is NULL (the declared shapes are kept) and note says why; when only the second
 * fails, dims are A's. Fails only when out of memory. */
cd_status cd_pd_export_infer_shapes(const cd_graph *g, const cd_shape *in_shapes, cd_shape **out, char *note,
                                    size_t note_len, cd_error *err);
/* The element type each tensor gets in the exported program (out: g->n_tensors entries):
 * the declared type, except where a reused name carries a stale integer type (pd_export.c,
 * act_dtypes). */
cd_status cd_pd_export_dtypes(const cd_graph *g, const cd_pd_export_opts *opts, cd_dtype *out, cd_error *err);
/* Writes DIR/model.pdmodel and DIR/model.pdiparams (DIR must exist). */
cd_status cd_pd_export(const cd_graph *g, const cd_pd_export_opts *opts, const char *dir, cd_pd_export_info *info,
                       cd_error *err);
#endif
