/* The "basic" op family: elementwise arithmetic, activations, scale, placement/identity
 * ops, calib, interpolation, padding, shuffle_channel and arg_max (backends/cpu/ops_basic_*.c). */
#include "engine/ops.h"
#include "engine/op_list.h"

/* defined in ops_basic_eltwise.c, ops_basic_act.c, ops_basic_misc.c, ops_basic_interp.c */
cd_status cd_basic_eltwise_infer(cd_op_ctx *c);
cd_status cd_basic_eltwise_run(cd_op_ctx *c);
double cd_basic_eltwise_macs(const cd_op_ctx *c);
cd_status cd_basic_unary_infer(cd_op_ctx *c);
cd_status cd_basic_unary_run(cd_op_ctx *c);
cd_status cd_basic_identity_infer(cd_op_ctx *c);
cd_status cd_basic_identity_run(cd_op_ctx *c);
cd_status cd_basic_calib_infer(cd_op_ctx *c);
cd_status cd_basic_calib_run(cd_op_ctx *c);
cd_status cd_basic_shuffle_infer(cd_op_ctx *c);
cd_status cd_basic_shuffle_run(cd_op_ctx *c);
cd_status cd_basic_argmax_infer(cd_op_ctx *c);
cd_status cd_basic_argmax_run(cd_op_ctx *c);
cd_status cd_basic_pad_infer(cd_op_ctx *c);
cd_status cd_basic_pad_run(cd_op_ctx *c);
cd_status cd_basic_interp_infer(cd_op_ctx *c);
cd_status cd_basic_interp_run(cd_op_ctx *c);

/* Elementwise and scale also run at plan time when all their inputs are known integer
 * (or constant) data: models compute reshape targets with them (the planner evaluates a
 * CD_OPF_SHAPE op only when nothing it reads is missing). */
#define ELT(name)                                                                                                      \
    {                                                                                                                  \
        name, cd_basic_eltwise_infer, cd_basic_eltwise_run, CD_OPF_SHAPE | CD_OPF_WRITES_ALL, cd_basic_eltwise_macs,   \
            NULL                                                                                                       \
    }
#define UN(name)                                                                                                       \
    { name, cd_basic_unary_infer, cd_basic_unary_run, 0, NULL, NULL }
#define UN_TYPE(type) UN(#type),
#define IDENT(name)                                                                                                    \
    { name, cd_basic_identity_infer, cd_basic_identity_run, CD_OPF_IDENTITY, NULL, NULL }

static const cd_op_def k_defs[] = {
    ELT("elementwise_add"),
    ELT("elementwise_sub"),
    ELT("elementwise_mul"),
    ELT("elementwise_div"),
    ELT("elementwise_max"),
    ELT("elementwise_min"),
    ELT("elementwise_pow"),
    ELT("elementwise_floordiv"),
    ELT("elementwise_mod"),
    ELT("fusion_elementwise_add_activation"),
    ELT("fusion_elementwise_sub_activation"),
    ELT("fusion_elementwise_mul_activation"),
    ELT("fusion_elementwise_div_activation"),
    ELT("fusion_elementwise_max_activation"),
    ELT("fusion_elementwise_min_activation"),
/* every ACT op of the op table (engine/op_list.def): standalone activations and math functions */
#define CD_OP(type, group, ...) CD_OPL_SELECT_##group(UN_TYPE, type)
#include "engine/op_list.def"
#undef CD_OP
    UN("prelu"),
    UN("dropout"),
    {"scale", cd_basic_unary_infer, cd_basic_unary_run, CD_OPF_SHAPE, NULL, NULL},
    IDENT("feed"),
    IDENT("fetch"),
    IDENT("io_copy"),
    IDENT("io_copy_once"),
    IDENT("layout"),
    IDENT("layout_once"),
    {"calib", cd_basic_calib_infer, cd_basic_calib_run, CD_OPF_SHAPE, NULL, NULL},
    {"calib_once", cd_basic_calib_infer, cd_basic_calib_run, CD_OPF_SHAPE, NULL, NULL},
    {"bilinear_interp", cd_basic_interp_infer, cd_basic_interp_run, 0, NULL, NULL},
    {"bilinear_interp_v2", cd_basic_interp_infer, cd_basic_interp_run, 0, NULL, NULL},
    {"nearest_interp", cd_basic_interp_infer, cd_basic_interp_run, 0, NULL, NULL},
    {"nearest_interp_v2", cd_basic_interp_infer, cd_basic_interp_run, 0, NULL, NULL},
    {"pad2d", cd_basic_pad_infer, cd_basic_pad_run, 0, NULL, NULL},
    {"pad3d", cd_basic_pad_infer, cd_basic_pad_run, 0, NULL, NULL},
    {"shuffle_channel", cd_basic_shuffle_infer, cd_basic_shuffle_run, 0, NULL, NULL},
    {"arg_max", cd_basic_argmax_infer, cd_basic_argmax_run, CD_OPF_SHAPE, NULL, NULL},
};

const cd_op_table cd_ops_basic = {k_defs, (int)(sizeof k_defs / sizeof k_defs[0])};
