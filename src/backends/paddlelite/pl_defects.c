/* Model defects that Paddle-Lite's own kernels run without a word (pl_priv.h, cd_pl_model_defect):
 * an int8 kernel record whose activation input is a float tensor with no calib op before it.
 * Opt writes a calib (fp32_to_int8) in front of every int8 kernel that reads a float tensor; a
 * model without it (seen: ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb, whose int8 convs read the
 * model input and io_copy device_to_host outputs of OpenCL ops) makes the ARM int8 kernels take
 * the float32 buffer's bytes as int8 values (Tensor::data<int8_t>() reinterprets, nothing
 * converts): the phone computes a wrong answer and no tool says so (docs/paddle-lite-phone.md). */
#include <stdio.h>
#include <string.h>
#include "backends/paddlelite/pl_priv.h"

#define PREC_INT8 2 /* Paddle-Lite PrecisionType kInt8 */
/* the verdict reads a layer note that starts with this as a model defect (CD_MODEL_DEFECT_NOTE of
 * compare/analysis.h, a level above the backends) */
#define DEFECT "MODEL DEFECT"

/* The slot of an int8 op that carries the quantized activation. */
static const char *act_slot(const char *type) {
    if (!strcmp(type, "conv2d") || !strcmp(type, "depthwise_conv2d") || !strcmp(type, "fc") ||
        !strcmp(type, "conv2d_transpose"))
        return "Input";
    if (!strcmp(type, "mul") || !strcmp(type, "matmul") || !strcmp(type, "matmul_v2")) return "X";
    return NULL;
}

/* Whether tensor t reaches the op as a float buffer: a model input, or written by an op whose
 * output is not int8 (io_copy/layout from OpenCL, a float kernel, an int8 kernel with fp32
 * output). int8 writers: a calib to int8, an int8 kernel with int8 output (alias int8_out). */
static bool float_buffer(const cd_graph *g, int t, const char **from) {
    const cd_tensor *x = &g->tensors[t];
    if (x->persistable) return false; /* the declared dtype of a reused name says nothing */
    int p = x->producer;
    if (p < 0 || !strcmp(g->ops[p].type, "feed")) {
        *from = "the model input";
        return true;
    }
    const cd_op *w = &g->ops[p];
    if (!strcmp(w->type, "calib")) return strstr(w->kernel.alias, "to_int8") == NULL && (*from = "a calib to float");
    if (w->kernel.present && w->kernel.precision == PREC_INT8 && strstr(w->kernel.alias, "int8_out")) return false;
    if (!w->kernel.present) return false; /* unknown: say nothing */
    *from = !strcmp(w->type, "io_copy") ? "io_copy device_to_host from OpenCL"
        : !strcmp(w->type, "layout")    ? "a layout op"
                                        : "a float op";
    return true;
}

bool cd_pl_model_defect(const cd_graph *g, int op_index, char *buf, size_t n) {
    if (n) buf[0] = 0;
    if (op_index < 0 || op_index >= g->n_ops) return false;
    const cd_op *op = &g->ops[op_index];
    if (!op->kernel.present || op->kernel.precision != PREC_INT8) return false;
    if (op->kernel.target != 4 && op->kernel.target != 2) return false; /* ARM, X86 */
    const char *slot = act_slot(op->type);
    if (!slot) return false;
    for (int s = 0; s < op->n_in; s++) {
        if (strcmp(op->in[s].name, slot) || op->in[s].n < 1 || op->in[s].ids[0] < 0) continue;
        int t = op->in[s].ids[0];
        const char *from = "";
        if (!float_buffer(g, t, &from)) return false;
        const double *sv = NULL;
        double sc = cd_attr_floats(op, "Input0_scale", &sv) >= 1 ? sv[0]
            : cd_attr_floats(op, "X0_scale", &sv) >= 1           ? sv[0]
                                                                 : 0;
        snprintf(buf, n,
                 "%s: int8 kernel fed float32 '%.40s' (%s) with no calib: Paddle-Lite reads its bytes as int8. "
                 "Fix the model: a calib fp32_to_int8 (scale %.6g) before it (Opt does so), or run the op in float",
                 DEFECT, g->tensors[t].name, from, sc);
        return true;
    }
    return false;
}
