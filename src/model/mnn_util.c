/* Small pieces the MNN reader's files share (mnn_priv.h): MNN's op type names, and field
 * getters with MNN's schema defaults. Calls nothing of mnn_reader.c or mnn_map.c (both call it). */
#include <stdlib.h>
#include <string.h>
#include "model/mnn_priv.h"

static const struct {
    int t;
    const char *name;
} OP_NAMES[] = {
    {0, "AbsVal"},
    {1, "QuantizedAdd"},
    {2, "ArgMax"},
    {4, "InstanceNorm"},
    {5, "BatchToSpaceND"},
    {6, "Copy"},
    {7, "BinaryOp"},
    {9, "Cast"},
    {10, "Concat"},
    {11, "Const"},
    {12, "Convolution"},
    {13, "ConvolutionDepthwise"},
    {14, "Crop"},
    {17, "Deconvolution"},
    {18, "DeconvolutionDepthwise"},
    {19, "Dequantize"},
    {20, "DetectionOutput"},
    {21, "Dropout"},
    {22, "Eltwise"},
    {23, "ELU"},
    {25, "Exp"},
    {26, "ExpandDims"},
    {27, "Fill"},
    {28, "Flatten"},
    {30, "Gather"},
    {31, "GatherV2"},
    {33, "InnerProduct"},
    {34, "Input"},
    {35, "Interp"},
    {36, "Log"},
    {37, "LRN"},
    {38, "LSTM"},
    {39, "MatMul"},
    {43, "Normalize"},
    {44, "Pack"},
    {45, "Padding"},
    {46, "Permute"},
    {47, "Pooling"},
    {48, "Power"},
    {49, "PReLU"},
    {50, "PriorBox"},
    {51, "Proposal"},
    {52, "QuantizedAvgPool"},
    {53, "QuantizedBiasAdd"},
    {54, "QuantizedConcat"},
    {55, "QuantizedDepthwiseConv2D"},
    {56, "QuantizedLogistic"},
    {58, "QuantizedMaxPool"},
    {61, "QuantizedReshape"},
    {62, "QuantizedSoftmax"},
    {63, "QuantizeMaxMin"},
    {64, "QuantizeV2"},
    {65, "Range"},
    {66, "Rank"},
    {68, "Reduction"},
    {69, "ReLU"},
    {70, "ReLU6"},
    {72, "Requantize"},
    {73, "Reshape"},
    {74, "Resize"},
    {75, "RNN"},
    {76, "ROIPooling"},
    {77, "Scale"},
    {78, "Selu"},
    {80, "Shape"},
    {81, "Sigmoid"},
    {82, "Size"},
    {83, "Slice"},
    {84, "SliceTf"},
    {85, "Softmax"},
    {86, "SpaceToBatchND"},
    {90, "Squeeze"},
    {91, "StridedSlice"},
    {95, "TanH"},
    {96, "TfQuantizedConv2D"},
    {97, "Threshold"},
    {98, "Tile"},
    {99, "TopKV2"},
    {100, "Transpose"},
    {101, "UnaryOp"},
    {102, "Unpack"},
    {103, "Where"},
    {104, "Moments"},
    {106, "BatchMatMul"},
    {107, "Unsqueeze"},
    {109, "DepthToSpace"},
    {110, "SpaceToDepth"},
    {112, "Pooling3D"},
    {113, "Convolution3D"},
    {115, "GatherND"},
    {119, "OneHot"},
    {120, "BroadcastTo"},
    {122, "Interp3D"},
    {128, "Raster"},
    {129, "ConvertTensor"},
    {130, "ArgMin"},
    {142, "Reverse"},
    {143, "ROIAlign"},
    {148, "CumSum"},
    {152, "GatherElements"},
    {155, "DynamicQuant"},
    {256, "Plugin"},
    {257, "Select"},
    {258, "ZerosLike"},
    {259, "Broastcast"},
    {262, "Identity"},
    {267, "BatchNorm"},
    {299, "Attention"},
    {304, "GroupNorm"},
    {306, "RoPE"},
    {512, "Extra"},
    {513, "ConvInt8"},
    {514, "Int8ToFloat"},
    {515, "DepthwiseConvInt8"},
    {517, "FloatToInt8"},
    {518, "EltwiseInt8"},
    {600, "While"},
    {601, "If"},
    {603, "LayerNorm"},
    {604, "GridSample"},
};

const char *cd_mnn_op_type_name(int type) {
    for (size_t i = 0; i < sizeof OP_NAMES / sizeof *OP_NAMES; i++)
        if (OP_NAMES[i].t == type) return OP_NAMES[i].name;
    return NULL;
}

cd_status cd_mnn_ints(mnn_ctx *c, const cd_fb_table *t, int slot, const char *field, int32_t **out, uint32_t *n,
                      cd_error *err) {
    size_t d;
    *out = NULL;
    *n = 0;
    if (cd_fb_vec(&c->fb, t, slot, field, 4, &d, n, err)) return err ? err->code : CD_E_MODEL;
    if (!*n) return CD_OK;
    *out = malloc(sizeof(int32_t) * *n);
    if (!*out) return cd_err(err, CD_E_NOMEM, "out of memory reading '%s'", field);
    memcpy(*out, c->fb.buf + d, sizeof(int32_t) * *n);
    return CD_OK;
}

cd_status cd_mnn_f32(mnn_ctx *c, const cd_fb_table *t, int slot, float dflt, float *out, cd_error *err) {
    size_t o;
    *out = dflt;
    if (cd_fb_field(&c->fb, t, slot, 4, &o, err)) return err ? err->code : CD_E_MODEL;
    if (o) memcpy(out, c->fb.buf + o, 4);
    return CD_OK;
}

int32_t cd_mnn_iconst_at(const mnn_ctx *c, int tensor, int k) {
    return (int32_t)cd_ld_u32(c->fb.buf + c->iconst[tensor].pos + 4 * (size_t)k);
}

float cd_mnn_fconst_at(const mnn_ctx *c, int tensor, int k) {
    float f;
    memcpy(&f, c->fb.buf + c->fconst[tensor].pos + 4 * (size_t)k, 4);
    return f;
}

cd_status cd_mnn_set_engine_shapes(cd_graph *g, int op_index, const int64_t *enc, int n, cd_error *err) {
    if (!g || op_index < 0 || op_index >= g->n_ops || n < 0)
        return cd_err(err, CD_E_INTERNAL, "engine shapes for op #%d of a graph with %d ops", op_index,
                      g ? g->n_ops : 0);
    cd_op *op = &g->ops[op_index];
    for (int i = 0; i < op->n_attr; i++)
        if (!strcmp(op->attrs[i].name, CD_ENGINE_SHAPES_ATTR)) { /* a second pass replaces the first */
            int64_t *v = malloc(sizeof *v * (size_t)(n ? n : 1));
            if (!v) return cd_err(err, CD_E_NOMEM, "out of memory");
            if (n) memcpy(v, enc, sizeof *v * (size_t)n);
            free(op->attrs[i].ints);
            op->attrs[i].ints = v;
            op->attrs[i].n = n;
            return CD_OK;
        }
    cd_attr *na = realloc(op->attrs, sizeof *na * (size_t)(op->n_attr + 1));
    if (!na) return cd_err(err, CD_E_NOMEM, "out of memory");
    op->attrs = na;
    cd_attr *a = &na[op->n_attr];
    memset(a, 0, sizeof *a);
    a->name = strdup(CD_ENGINE_SHAPES_ATTR);
    a->ints = malloc(sizeof *a->ints * (size_t)(n ? n : 1));
    if (!a->name || !a->ints) {
        free(a->name);
        free(a->ints);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    a->type = CD_ATTR_LONGS;
    a->n = n;
    if (n) memcpy(a->ints, enc, sizeof *a->ints * (size_t)n);
    op->n_attr++;
    return CD_OK;
}

int cd_mnn_bind_reshapes(cd_graph *g, cd_error *err) {
    int bound = 0;
    for (int i = 0; g && i < g->n_ops; i++) {
        cd_op *op = &g->ops[i];
        const int64_t *v = NULL;
        int nv = cd_attr_ints(op, CD_ENGINE_SHAPES_ATTR, &v);
        if (strcmp(op->type, "mnn_Reshape") || !cd_attr_int(op, "mnn_reshape_runtime", 0) || nv < 3 || nv != 2 + v[1] ||
            v[1] < 1 || v[1] > CD_MAX_RANK || (v[0] != CD_F32 && v[0] != CD_F16) || op->n_in != 1 || op->in[0].n != 2 ||
            op->n_out != 1 || op->out[0].n != 1)
            continue;
        bool zero = false;
        for (int d = 0; d < v[1]; d++) zero = zero || v[2 + d] <= 0; /* 0 would mean "copy" to reshape2 */
        if (zero) continue;
        cd_attr *na = realloc(op->attrs, sizeof *na * (size_t)(op->n_attr + 1));
        if (!na) {
            cd_err(err, CD_E_NOMEM, "out of memory");
            return -1;
        }
        op->attrs = na;
        cd_attr *a = &na[op->n_attr];
        memset(a, 0, sizeof *a);
        a->name = strdup("shape");
        a->ints = malloc(sizeof *a->ints * (size_t)v[1]);
        char *type = strdup("reshape2");
        if (!a->name || !a->ints || !type) {
            free(a->name);
            free(a->ints);
            free(type);
            cd_err(err, CD_E_NOMEM, "out of memory");
            return -1;
        }
        a->type = CD_ATTR_INTS;
        a->n = (int)v[1];
        memcpy(a->ints, v + 2, sizeof *a->ints * (size_t)v[1]);
        op->n_attr++;
        free(op->type);
        op->type = type;
        op->in[0].n = 1; /* the data only: the shape vector was MNN's to compute */
        bound++;
    }
    return bound;
}
