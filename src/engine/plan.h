/* The plan: shapes and dtypes of every tensor for given input shapes, the op definitions,
 * buffer lifetimes and memory needs. Built before anything runs, so an unsupported op or
 * a shape error is reported before the run starts. */
#ifndef CD_PLAN_H
#define CD_PLAN_H
#include "engine/ops.h"

typedef struct cd_plan {
    const cd_graph *g;
    cd_precision prec;
    cd_value *meta;         /* per tensor id: dtype + shape; data set only for params
                                (converted, see params.h) and plan-time integer values */
    const cd_op_def **defs; /* per op */
    int *last_use;          /* per tensor: index of the last op reading it, -1 if none;
                                model outputs: n_ops */
    int64_t act_bytes_peak; /* peak live activation bytes */
    int64_t param_bytes;
    bool int8_dequantized; /* some weights were int8/int16 and were dequantized */
} cd_plan;

/* input_shapes[k] is the shape for model input k (graph->inputs[k]). Converts params to the
 * run's dtype, dequantizes int8/int16 weights, runs every op's shape rule in order. */
cd_status cd_plan_build(const cd_graph *g, const cd_shape *input_shapes, cd_precision prec, cd_plan *plan,
                        cd_error *err);
void cd_plan_free(cd_plan *plan);

/* Shapes the user did not give: returns the declared shape of input k with a leading -1
 * replaced by 1 (notice printed by caller); fails listing dynamic dims if others are -1.
 * overrides: "NAME=1,3,48,192" strings. */
cd_status cd_resolve_input_shapes(const cd_graph *g, const char *const *overrides, int n_overrides,
                                  cd_shape *shapes_out, char *notice, size_t notice_len, cd_error *err);
#endif
