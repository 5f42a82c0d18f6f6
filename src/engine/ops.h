/* The op registry: for every op type cldiff knows, its shape rule and its CPU kernels.
 *
 * Precision: activations are CD_F32 in fp32 runs and CD_F16 (_Float16 storage and
 * arithmetic) in fp16 runs; index tensors (shape, arg_max, nms counts...) keep integer
 * dtypes. Parameters are handed to kernels already converted: float weights in the run's
 * activation dtype, int8/int16 weights dequantized by their stored scales (engine/params.c). */
#ifndef CD_OPS_H
#define CD_OPS_H
#include "model/graph.h"
#include "util/value.h"
#include <stdlib.h>

typedef enum { CD_PREC_FP32 = 0, CD_PREC_FP16 = 1 } cd_precision;

typedef struct cd_op_ctx {
    const cd_graph *g;
    const cd_op *op;
    int op_index;
    cd_value *vals;    /* indexed by tensor id; inputs hold data, outputs are allocated */
    cd_precision prec; /* activation precision of this run */
    int threads;
    cd_error *err;
    /* What the op's prepare hook made of its attributes and planned shapes (NULL when it has
     * none, or when the run's shapes are no longer the planned ones): read-only to run. */
    const void *state;
    /* The unquantized float model (the quantization yardstick run, docs/verdicts.md): fake
     * quantization (calib float -> int8 grid) passes values through unchanged. */
    bool no_quant;
    /* Scratch memory the backend keeps for the op's run (its pages already touched, so the
     * timed op pays no page faults): scratch_bytes may be 0 (none; the op allocates). Only the
     * CPU backend's int8 kernels use it (cd_cpu_int8_scratch). */
    void *scratch;
    size_t scratch_bytes;
} cd_op_ctx;

/* Shape rule: from vals[input].shape/dtype (and data for integer tensors that are
 * available at plan time) set vals[output].shape and .dtype. Must validate attributes
 * and shapes and fail with a message naming the op (index, name) and what is wrong. */
typedef cd_status (*cd_infer_fn)(cd_op_ctx *c);
/* CPU kernel: inputs in vals[...].data, outputs pre-allocated by the executor. */
typedef cd_status (*cd_run_fn)(cd_op_ctx *c);
/* Optional, CPU backend: runs once per op before the run, on the planned shapes (c->vals =
 * the plan's values; activations have no data), and returns in *state a malloc'd block the
 * backend frees with free(). The run gets it back as c->state. It is how an op parses its
 * attributes (name lookups, validation) outside the timed op; a failure is not reported here:
 * the run, given no state, parses again and reports it. */
typedef cd_status (*cd_prepare_fn)(cd_op_ctx *c, void **state);
/* In a run: G = the prepared GEO_T, or PARSE(c, &G) when there is none. */
#define CD_PARSED(c, GEO_T, PARSE, G) ((c)->state ? (G = *(const GEO_T *)(c)->state, CD_OK) : PARSE(c, &G))

enum {
    CD_OPF_IDENTITY = 1,   /* output = input (feed, fetch, io_copy, layout, dropout...) */
    CD_OPF_SHAPE = 2,      /* cheap host op on shapes/int data; also run at plan time */
    CD_OPF_HOST = 4,       /* detection post-processing: runs on the host in every backend */
    CD_OPF_DYNAMIC = 8,    /* output shape known only after running (nms): run computes it */
    CD_OPF_WRITES_ALL = 16 /* the kernel writes every element of its outputs: the CPU backend
                              hands it recycled buffers without zeroing them first */
};

typedef struct cd_op_def {
    const char *type;
    cd_infer_fn infer;
    cd_run_fn run;
    int flags;
    /* Multiply-accumulate count for GFLOP/s (NULL: not a compute op). */
    double (*macs)(const cd_op_ctx *c);
    cd_prepare_fn prepare; /* NULL: nothing to prepare */
} cd_op_def;

/* Finds the definition for an op type; NULL when unknown. */
const cd_op_def *cd_op_find(const char *type);
/* Every registered definition (for listings); returns count. */
int cd_op_all(const cd_op_def *const **out);

/* Each op family file exports a table, collected by ops_registry.c. */
typedef struct {
    const cd_op_def *defs;
    int n;
} cd_op_table;

/* ---- helpers for op implementations (engine/ops_util.c) ---- */
/* Input value of slot[idx] or NULL when not connected. */
cd_value *cd_in(cd_op_ctx *c, const char *slot, int idx);
cd_value *cd_out(cd_op_ctx *c, const char *slot, int idx);
/* Fails with "op #12 conv2d_3 (conv2d): <message>" */
cd_status cd_op_fail(cd_op_ctx *c, cd_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Required input: fails when missing. */
cd_value *cd_in_req(cd_op_ctx *c, const char *slot, int idx);
/* The activation dtype of this run. */
static inline cd_dtype cd_act_dtype(const cd_op_ctx *c) { return c->prec == CD_PREC_FP16 ? CD_F16 : CD_F32; }

/* Fused activation description shared by conv, fc, elementwise fusion, etc. */
typedef enum {
    CD_ACT_NONE = 0,
    CD_ACT_RELU,
    CD_ACT_RELU6,
    CD_ACT_LEAKY_RELU,
    CD_ACT_SIGMOID,
    CD_ACT_TANH,
    CD_ACT_SWISH,
    CD_ACT_HARD_SWISH,
    CD_ACT_HARD_SIGMOID,
    CD_ACT_PRELU,
    CD_ACT_ABS,
    CD_ACT_GELU,
    CD_ACT_EXP,
    CD_ACT_SQRT
} cd_act_kind;
typedef struct {
    cd_act_kind kind;
    float a, b, c;
} cd_act; /* params per kind, see ops_util.c */
float cd_act_apply(const cd_act *a, float x);
/* ---- appended by the engine (engine/ops_util.c, engine/ops_registry.c) ----
 * cd_act parameters per kind (a, b, c; unlisted = unused):
 *   RELU6        a = threshold (clip value)
 *   LEAKY_RELU   a = alpha (negative slope)
 *   PRELU        a = alpha of the element being computed: the kernel copies the cd_act and
 *                sets a per channel/element from the Prelu_alpha / Alpha tensor
 *   SWISH        a = beta:  x * sigmoid(beta * x)
 *   HARD_SWISH   a = threshold, b = scale, c = offset:  x * min(max(x + c, 0), a) / b
 *   HARD_SIGMOID a = slope, b = offset:  min(max(a * x + b, 0), 1)
 *   GELU         a = 0 exact (erf), a != 0 tanh approximation
 *   RELU, SIGMOID, TANH, ABS, EXP, SQRT: none
 * NaN inputs propagate through every kind. */
/* Name ("relu", "relu6", ...) -> kind with the standalone-op defaults of docs/nb-format.md §7.21
 * (relu6 6, leaky 0.02, swish beta 1, hard_swish 6/6/3, hard_sigmoid 0.2/0.5, gelu exact).
 * NULL or "" -> CD_ACT_NONE. Unknown names fail (CD_E_UNSUPPORTED) naming the op. */
cd_status cd_act_from_name(cd_op_ctx *c, const char *name, cd_act *out);
/* conv2d / depthwise_conv2d / conv2d_transpose: BOOLEAN with_act + STRING act_type with the
 * parameter attrs of §7.1 (fuse_brelu_threshold, leaky_relu_alpha, hard_swish_*, slope,
 * offset, swish_scale, prelu_mode checked). with_act false/absent -> NONE (fuse_relu alone
 * never activates). PRELU: the op reads its Prelu_alpha tensor itself. */
cd_status cd_act_from_conv(cd_op_ctx *c, cd_act *out);
/* Activation named by STRING attr kind_attr (fc: "activation_type", fusion_elementwise_*:
 * "act_type", elementwise_mul fuse_scale: "activation_type"); relu6 threshold from FLOAT
 * `alpha` when present (else 6); gelu approximate from BOOLEAN `approximate`. */
cd_status cd_act_from_op(cd_op_ctx *c, const char *kind_attr, cd_act *out);
/* Standalone activation op (relu, relu6, leaky_relu, sigmoid, tanh, swish, silu, hard_swish,
 * hard_sigmoid, abs, gelu, exp, sqrt) with its §7.21 attributes. */
cd_status cd_act_from_standalone(cd_op_ctx *c, cd_act *out);
const char *cd_act_name(cd_act_kind k);
/* Non-NULL message when the registry is inconsistent (a type defined twice). */
const char *cd_op_registry_error(void);
#endif
