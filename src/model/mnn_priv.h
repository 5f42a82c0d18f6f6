/* Shared by the MNN reader's files (mnn_reader.c: the Net, its tensors, Input and Const ops;
 * mnn_map.c: the other ops' parameters and their mapping onto cldiff's op table). Private to
 * src/model/. Table and field order: MNN's public schema (schema/default/MNN.fbs and the files it includes), docs/mnn.md. */
#ifndef CD_MNN_PRIV_H
#define CD_MNN_PRIV_H
#include "model/fb.h"
#include "model/mnn_reader.h"

/* The union member numbers of MNN's OpParameter that the reader decodes. */
enum {
    MNN_P_ARGMAX = 2,
    MNN_P_AXIS = 4,
    MNN_P_BINARY = 6,
    MNN_P_BLOB = 7,
    MNN_P_CONV2D = 9,
    MNN_P_ELTWISE = 14,
    MNN_P_INPUT = 21,
    MNN_P_INTERP = 22,
    MNN_P_MATMUL = 25,
    MNN_P_PERMUTE = 29,
    MNN_P_POOL = 31,
    MNN_P_PRELU = 32,
    MNN_P_RELU = 51,
    MNN_P_RELU6 = 52,
    MNN_P_RESHAPE = 55,
    MNN_P_SCALE = 58,
    MNN_P_SLICE = 61,
    MNN_P_UNARY = 70,
    MNN_P_BATCHMATMUL = 73,
    MNN_P_QUANTFLOAT = 74,
    MNN_P_POOL3D = 79,
    MNN_P_LAYERNORM = 88,
};

/* A constant integer tensor (Const op with int32 data), for ops whose shape or permutation
 * comes in as a second input. */
typedef struct mnn_const {
    size_t pos; /* buffer position of the values (0: not such a constant) */
    int n;
} mnn_const;

typedef struct mnn_ctx {
    cd_fb fb;
    cd_graph *g;
    uint32_t n_tensors;
    char **tname;      /* tensor names (owned copies; "t<i>" where the file has none) */
    mnn_const *iconst; /* per tensor: int32 constant values */
    mnn_const *fconst; /* per tensor: float32 constant values */
    float *qscale;     /* per tensor: the int8 scale of a quantized activation (Net.extraTensorDescribe
                          quantInfo of type int8: MNN runs the ops around it in integers); 0: float */
} mnn_ctx;

/* One op as read: its table, type, name, tensor indexes (already checked < n_tensors). */
typedef struct mnn_op {
    int index; /* position in oplists */
    int type;
    const char *name;
    uint8_t main_type;
    bool has_main;
    cd_fb_table main;
    int n_in, n_out;
    const int32_t *in, *out; /* copies (owned by the caller) */
    size_t pos;              /* buffer position of the op's table */
} mnn_op;

/* Adds op o to the graph: mapped onto cldiff's op table where its parameters allow, else a
 * named op "mnn_<Type>". */
cd_status cd_mnn_map_op(mnn_ctx *c, const mnn_op *o, cd_error *err);
/* Value k of a constant (k < n). */
int32_t cd_mnn_iconst_at(const mnn_ctx *c, int tensor, int k);
float cd_mnn_fconst_at(const mnn_ctx *c, int tensor, int k);
/* Reads an int32 vector field (count and a malloc'd copy; absent: 0, NULL). */
cd_status cd_mnn_ints(mnn_ctx *c, const cd_fb_table *t, int slot, const char *field, int32_t **out, uint32_t *n,
                      cd_error *err);
/* A float32 field with its schema default. */
cd_status cd_mnn_f32(mnn_ctx *c, const cd_fb_table *t, int slot, float dflt, float *out, cd_error *err);
/* A Convolution2D's IDSTQuan (table q) decoded to float weights as MNN's CPU uses them (mnn_quant.c):
 * *w (malloc'd, *nw values in the float weight's order) and desc saying how; or why[0] != 0 and no
 * weights when cldiff does not decode this kind (sparse, integer scales, ...). outc: the conv's
 * output channels (0: unchecked). Malformed data -> CD_E_MODEL with the file offset. */
cd_status cd_mnn_idst_weights(mnn_ctx *c, const cd_fb_table *q, int outc, float **w, uint32_t *nw, char *desc,
                              size_t dn, char *why, size_t wn, cd_error *err);
#endif
