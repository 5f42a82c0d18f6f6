/* Model layer: graph builder semantics, and every shared real model loads with the op
 * counts, parameter counts and inputs/outputs that MANIFEST.md lists. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "model/nb_reader.h"
#include "util/fp16.h"

static const char *models_dir(void) {
    const char *e = getenv("CD_SHARED_MODELS");
    return e && *e ? e : CD_SOURCE_DIR "/../shared/models";
}

static bool have_models(void) {
    struct stat st;
    return stat(models_dir(), &st) == 0 && S_ISDIR(st.st_mode);
}

static cd_graph *load(const char *file) {
    char path[4096];
    snprintf(path, sizeof path, "%s/%s", models_dir(), file);
    cd_error err = {0};
    cd_graph *g = NULL;
    cr_assert_eq(cd_nb_load(path, &g, &err), CD_OK, "%s: %s", file, err.msg);
    return g;
}

/* Expected values, copied from MANIFEST.md ("op types (count)" and "params" columns). */
static const struct {
    const char *file, *version, *ops;
    int meta, params, inputs, outputs;
} manifest[] = {
    {"ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb", "v2.10",
     "conv2d 42, io_copy 42, layout 41, depthwise_conv2d 11, pool2d 11, elementwise_mul 9, shape 2, slice 2, feed 1, "
     "reshape2 1, fc 1, softmax 1, fetch 1",
     2, 108, 1, 1},
    {"mask_detector_fp32_arm_v2.10rc.nb", "v2.10-rc",
     "conv2d 22, elementwise_add 2, feed 1, scale 1, concat 1, relu 1, fc 1, softmax 1, fetch 1", 2, 46, 1, 1},
    {"mask_detector_fp32_arm_meta0_7735976.nb", "7735976",
     "conv2d 22, elementwise_add 2, concat 1, fc 1, feed 1, fetch 1, relu 1, scale 1, softmax 1", 0, 46, 1, 1},
    {"ppocr_v4_mobile_cls_fp32_arm_v2.13rc.nb", "v2.13-rc",
     "conv2d 41, depthwise_conv2d 11, pool2d 11, hard_sigmoid 9, elementwise_mul 9, hard_swish 8, elementwise_add 7, "
     "feed 1, shape 1, slice 1, fill_constant 1, reshape2 1, fc 1, softmax 1, fetch 1",
     2, 106, 1, 1},
    {"ppocr_v2.0_cls_fp32_arm_v2.14rc.nb", "v2.14-rc",
     "conv2d 41, reshape2 19, elementwise_add 16, depthwise_conv2d 11, pool2d 11, fusion_elementwise_add_activation 9, "
     "hard_sigmoid 9, elementwise_mul 9, hard_swish 8, feed 1, shape 1, slice 1, fill_constant 1, fc 1, softmax 1, "
     "fetch 1",
     2, 106, 1, 1},
    {"pyramidbox_lite_fp32_arm_v2.10rc.nb", "v2.10-rc",
     "conv2d 37, concat 10, transpose2 7, reshape2 7, pool2d 6, flatten2 6, fetch 4, scale 3, sigmoid 3, "
     "elementwise_mul 3, density_prior_box 2, feed 1, box_coder 1, softmax 1, multiclass_nms2 1",
     2, 74, 1, 4},
    {"ppocr_v3_det_fp32_x86_v2.12.nb", "v2.12",
     "conv2d 57, elementwise_add 21, depthwise_conv2d 15, pool2d 8, hard_sigmoid 8, elementwise_mul 8, "
     "nearest_interp_v2 6, conv2d_transpose 2, feed 1, concat 1, sigmoid 1, fetch 1",
     2, 140, 1, 1},
    {"blazeface_int8_arm_v2.12.nb", "v2.12",
     "conv2d 37, calib 35, depthwise_conv2d 32, fusion_elementwise_add_activation 31, concat 12, fill_constant 10, "
     "transpose2 4, reshape2 4, pool2d 3, fetch 2, feed 1",
     2, 138, 1, 2},
    {"ppocr_v2.0_det_slim_int8_arm_v2.10rc.nb", "v2.10-rc",
     "calib 44, conv2d 41, hard_swish 20, depthwise_conv2d 15, elementwise_add 13, nearest_interp_v2 6, "
     "conv2d_transpose 2, feed 1, concat 1, sigmoid 1, scale 1, fetch 1",
     2, 108, 1, 1},
    {"picodetv2_relu6_coco_int8_arm_f0b8344.nb", "f0b8344",
     "conv2d 85, depthwise_conv2d 37, calib 31, reshape2 13, concat 12, sigmoid 12, elementwise_mul 11, pool2d 6, "
     "scale 5, sqrt 4, transpose2 4, softmax 4, matmul_v2 4, elementwise_add 3, feed 2, hard_sigmoid 2, "
     "nearest_interp_v2 2, split 2, fetch 2, elementwise_div 1, multiclass_nms3 1",
     2, 247, 2, 2},
};

static int count_type(const cd_graph *g, const char *type) {
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) n += !strcmp(g->ops[i].type, type);
    return n;
}

Test(model, shared_models_match_manifest) {
    if (!have_models()) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    for (size_t m = 0; m < sizeof manifest / sizeof *manifest; m++) {
        cd_graph *g = load(manifest[m].file);
        cr_assert_eq(g->meta_version, manifest[m].meta, "%s meta", manifest[m].file);
        cr_assert_str_eq(g->opt_version, manifest[m].version, "%s version", manifest[m].file);
        int total = 0;
        char buf[1024];
        snprintf(buf, sizeof buf, "%s", manifest[m].ops);
        for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
            char type[128];
            int n;
            cr_assert_eq(sscanf(tok, " %127s %d", type, &n), 2);
            cr_assert_eq(count_type(g, type), n, "%s: %s count %d, manifest says %d", manifest[m].file, type,
                         count_type(g, type), n);
            total += n;
        }
        cr_assert_eq(g->n_ops, total, "%s: op total", manifest[m].file);
        int np = 0;
        for (int t = 0; t < g->n_tensors; t++) np += g->tensors[t].persistable;
        cr_assert_eq(np, manifest[m].params, "%s: %d params", manifest[m].file, np);
        cr_assert_eq(g->n_inputs, manifest[m].inputs);
        cr_assert_eq(g->n_outputs, manifest[m].outputs);
        /* Op names are <type>_<k>; every op has a parsed kernel record in these files. */
        for (int i = 0; i < g->n_ops; i++) {
            cr_assert(g->ops[i].kernel.present, "%s op %d has no kernel record", manifest[m].file, i);
            cr_assert(!strncmp(g->ops[i].name, g->ops[i].type, strlen(g->ops[i].type)));
        }
        cd_graph_free(g);
    }
}

Test(model, manifest_details) {
    if (!have_models()) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    cd_graph *g = load("picodetv2_relu6_coco_int8_arm_f0b8344.nb");
    char b[128];
    cr_assert_str_eq(g->tensors[g->inputs[0]].name, "image");
    cr_assert_str_eq(g->tensors[g->inputs[1]].name, "scale_factor");
    cr_assert_str_eq(cd_shape_str(&g->tensors[g->inputs[0]].shape, b, sizeof b), "[-1,3,416,416]");
    cr_assert_eq(g->tensors[g->outputs[1]].dtype, CD_I32);
    cr_assert_eq(g->program_version, 2003001);
    int i8 = 0, f32 = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].persistable) {
            i8 += g->tensors[t].dtype == CD_I8;
            f32 += g->tensors[t].dtype == CD_F32;
        }
    cr_assert_eq(i8, 122);
    cr_assert_eq(f32, 125);
    cd_graph_free(g);

    g = load("ppocr_v3_det_fp32_x86_v2.12.nb");
    int x86 = 0, host = 0;
    for (int i = 0; i < g->n_ops; i++) {
        x86 += g->ops[i].kernel.target == 2;
        host += g->ops[i].kernel.target == 1;
    }
    cr_assert_eq(x86, 119);
    cr_assert_eq(host, 10);
    int64_t pb = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].persistable) pb += (int64_t)g->tensors[t].nbytes;
    cr_assert_eq(pb, 2295620);
    cd_graph_free(g);

    /* Memory reuse: mask_detector's 31 ops write only a few names; SSA gives each write its own tensor. */
    g = load("mask_detector_fp32_arm_v2.10rc.nb");
    int maxver = 0;
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].version > maxver) maxver = g->tensors[t].version;
    cr_assert_gt(maxver, 3);
    for (int i = 0; i < g->n_ops; i++)
        for (int s = 0; s < g->ops[i].n_out; s++)
            for (int k = 0; k < g->ops[i].out[s].n; k++) {
                int id = g->ops[i].out[s].ids[k];
                cr_assert(id >= 0 && g->tensors[id].producer == i);
            }
    cd_graph_free(g);

    g = load("ppocr_v2.0_cls_slim_opencl-arm_int8_v2.10.nb");
    cr_assert_str_eq(g->tensors[g->outputs[0]].name, "softmax_0.tmp_0/target_trans");
    int ocl = 0;
    for (int i = 0; i < g->n_ops; i++) ocl += g->ops[i].kernel.target == 5;
    cr_assert_eq(ocl, 107);
    cd_graph_free(g);
}

Test(model, meta0_equals_meta2) {
    if (!have_models()) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    cd_graph *a = load("mask_detector_fp32_arm_meta0_7735976.nb"), *b = load("mask_detector_fp32_arm_v2.10rc.nb");
    cr_assert_eq(a->n_ops, b->n_ops);
    for (int i = 0; i < a->n_ops; i++) {
        const cd_op *x = &a->ops[i], *y = &b->ops[i];
        cr_assert_str_eq(x->type, y->type, "op %d", i);
        cr_assert_str_eq(x->name, y->name);
        cr_assert_eq(x->n_in, y->n_in, "op %d inputs", i);
        cr_assert_eq(x->n_out, y->n_out);
        for (int s = 0; s < x->n_in; s++) {
            const cd_slot *ys = cd_op_in_slot(y, x->in[s].name);
            cr_assert(ys && ys->n == x->in[s].n, "op %d slot %s", i, x->in[s].name);
            /* The two opt versions' memory optimizers picked different activation names, so
             * compare data flow: same producing op, and the same parameter by name. */
            for (int k = 0; k < ys->n; k++) {
                const cd_tensor *ta = &a->tensors[x->in[s].ids[k]], *tb = &b->tensors[ys->ids[k]];
                cr_assert_eq(ta->producer, tb->producer, "op %d slot %s[%d] producer", i, x->in[s].name, k);
                cr_assert_eq(ta->persistable, tb->persistable);
                if (ta->persistable) cr_assert_str_eq(ta->name, tb->name);
            }
        }
        cr_assert_eq(x->kernel.target, y->kernel.target, "op %d target", i);
        /* Shared numeric attributes carry the same values. */
        for (int k = 0; k < x->n_attr; k++) {
            const cd_attr *p = &x->attrs[k], *q = cd_op_attr(y, p->name);
            if (!q || p->type != q->type) continue;
            cr_assert_eq(p->i, q->i, "op %d attr %s", i, p->name);
            cr_assert_eq(p->n, q->n, "op %d attr %s", i, p->name);
        }
    }
    int np = 0;
    for (int t = 0; t < a->n_tensors; t++) {
        const cd_tensor *x = &a->tensors[t];
        if (!x->persistable) continue;
        np++;
        const cd_tensor *y = NULL;
        for (int u = 0; u < b->n_tensors; u++)
            if (b->tensors[u].persistable && !strcmp(b->tensors[u].name, x->name)) y = &b->tensors[u];
        cr_assert(y, "param %s missing in meta 2", x->name);
        cr_assert_eq(x->dtype, y->dtype);
        cr_assert(cd_shape_eq(&x->shape, &y->shape), "param %s shape", x->name);
        cr_assert_eq(x->nbytes, y->nbytes);
        cr_assert(!memcmp(x->data, y->data, x->nbytes), "param %s bytes differ", x->name);
    }
    cr_assert_eq(np, 46);
    cd_graph_free(a);
    cd_graph_free(b);
}

Test(model, testdata_models) {
    cd_error err = {0};
    cd_graph *g = NULL;
    cr_assert_eq(cd_nb_load(CD_SOURCE_DIR "/testdata/mobilenet_tiny.nb", &g, &err), CD_OK, "%s", err.msg);
    char b[64];
    cr_assert_str_eq(cd_shape_str(&g->tensors[g->inputs[0]].shape, b, sizeof b), "[1,3,64,64]");
    cr_assert_eq(count_type(g, "conv2d"), 4);
    cr_assert_eq(count_type(g, "hard_swish"), 1);
    /* In-place hard_swish reads version 0 of pw.tmp and writes version 1. */
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].type, "hard_swish")) {
            int x = cd_op_in(&g->ops[i], "X", 0), o = cd_op_out(&g->ops[i], "Out", 0);
            cr_assert_eq(g->tensors[x].version, 0);
            cr_assert_eq(g->tensors[o].version, 1);
            cr_assert_str_eq(g->tensors[o].name, "pw.tmp");
        }
    cr_assert_eq(g->warnings_len, 0, "unexpected warnings: %s", g->warnings);
    cd_graph_free(g);
    cr_assert_eq(cd_nb_load(CD_SOURCE_DIR "/testdata/multi_input.nb", &g, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(g->n_inputs, 2);
    cr_assert_str_eq(g->tensors[g->inputs[0]].name, "a");
    cr_assert_str_eq(g->tensors[g->inputs[1]].name, "b");
    cr_assert_eq(g->n_outputs, 2);
    cd_graph_free(g);
}

/* ---- builder semantics ---- */
static cd_graph *G;
static cd_error E;
static void decl(const char *n, bool pers) {
    cr_assert_eq(cd_graph_declare_var(G, n, CD_F32, NULL, 0, pers, &E), CD_OK, "%s", E.msg);
}
static void op1(const char *type, const char *is, const char *in, const char *os, const char *out) {
    cr_assert(cd_graph_add_op(G, type, &E), "%s", E.msg);
    if (is) cr_assert_eq(cd_op_add_input(G, is, &in, 1, &E), CD_OK, "%s", E.msg);
    if (os) cr_assert_eq(cd_op_add_output(G, os, &out, 1, &E), CD_OK, "%s", E.msg);
}
static void col(int c) {
    cd_attr a = {.name = strdup("col"), .type = CD_ATTR_INT, .i = c};
    cr_assert_eq(cd_op_add_attr(G, &a, &E), CD_OK);
}
static void str_attr(const char *n, const char *v) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_STRING, .s = strdup(v)};
    cr_assert_eq(cd_op_add_attr(G, &a, &E), CD_OK);
}

static void base(void) {
    G = cd_graph_new();
    memset(&E, 0, sizeof E);
    decl("feed", false);
    decl("fetch", false);
    decl("x", false);
    decl("y", false);
}

Test(builder, ssa_naming_and_kernel_records) {
    base();
    op1("feed", "X", "feed", "Out", "x");
    col(0);
    str_attr("__@kernel_type_attr@__", "feed/def/1/4/2");
    op1("relu", "X", "x", "Out", "x"); /* in place */
    str_attr("__@kernel_type_attr@__", "relu/image2d/5/5/4");
    op1("relu", "X", "x", "Out", "y");
    str_attr("__@kernel_type_attr@__", "relu/def/4/1"); /* malformed: 4 fields */
    op1("fetch", "X", "y", "Out", "fetch");
    col(0);
    str_attr("__@kernel_type_attr@__", "conv2d/def/99/1/1"); /* wrong type, unknown target */
    cr_assert_eq(cd_graph_finalize(G, &E), CD_OK, "%s", E.msg);
    cr_assert_str_eq(G->ops[1].name, "relu_0");
    cr_assert_str_eq(G->ops[2].name, "relu_1");
    cr_assert_str_eq(G->ops[3].name, "fetch_0");
    int x0 = cd_op_out(&G->ops[0], "Out", 0), x1 = cd_op_out(&G->ops[1], "Out", 0);
    cr_assert_eq(cd_op_in(&G->ops[1], "X", 0), x0);
    cr_assert_eq(cd_op_in(&G->ops[2], "X", 0), x1);
    cr_assert_eq(G->tensors[x0].version, 0);
    cr_assert_eq(G->tensors[x1].version, 1);
    cr_assert_eq(G->tensors[x1].producer, 1);
    cr_assert_eq(G->inputs[0], x0);
    cr_assert_eq(G->outputs[0], cd_op_out(&G->ops[2], "Out", 0));
    cr_assert(G->ops[1].kernel.present);
    cr_assert_str_eq(G->ops[1].kernel.alias, "image2d");
    cr_assert_eq(G->ops[1].kernel.target, 5);
    cr_assert_eq(G->ops[1].kernel.precision, 5);
    cr_assert_eq(G->ops[1].kernel.layout, 4);
    cr_assert_not(G->ops[2].kernel.present);
    cr_assert_eq(G->ops[3].kernel.target, 99);
    cr_assert_str_eq(cd_target_name(99), "unknown");
    cr_assert(strstr(G->warnings, "5 '/'-separated"));
    cr_assert(strstr(G->warnings, "different op type"));
    cr_assert_eq(cd_op_in(&G->ops[1], "Nope", 0), -1);
    cd_graph_free(G);
}

Test(builder, feed_col_must_be_permutation) {
    base();
    op1("feed", "X", "feed", "Out", "x");
    col(1);
    op1("feed", "X", "feed", "Out", "y");
    col(1);
    cr_assert_eq(cd_graph_finalize(G, &E), CD_E_MODEL);
    cr_assert(strstr(E.msg, "permutation"), "%s", E.msg);
    cd_graph_free(G);
    base();
    op1("feed", "X", "feed", "Out", "x");
    cr_assert_eq(cd_graph_finalize(G, &E), CD_E_MODEL);
    cr_assert(strstr(E.msg, "col"), "%s", E.msg);
    cd_graph_free(G);
}

/* An op reads a parameter and writes the same name before the record arrives (Paddle 2.6.2's
 * unfused batch_norm: Mean -> MeanOut): the record must land on the version the op read. */
Test(builder, param_read_then_written_in_place) {
    base();
    int64_t d[1] = {2};
    cr_assert_eq(cd_graph_declare_var(G, "mean", CD_F32, d, 1, true, &E), CD_OK);
    cr_assert(cd_graph_add_op(G, "batch_norm", &E), "%s", E.msg);
    const char *x = "x", *m = "mean", *y = "y";
    cr_assert_eq(cd_op_add_input(G, "X", &x, 1, &E), CD_OK, "%s", E.msg);
    cr_assert_eq(cd_op_add_input(G, "Mean", &m, 1, &E), CD_OK, "%s", E.msg);
    cr_assert_eq(cd_op_add_output(G, "Y", &y, 1, &E), CD_OK, "%s", E.msg);
    cr_assert_eq(cd_op_add_output(G, "MeanOut", &m, 1, &E), CD_OK, "%s", E.msg);
    op1("relu", "X", "y", "Out", "y"); /* the loader adds every op before the parameter records */
    float v[2] = {0.5f, -2.0f};
    cr_assert_eq(cd_graph_set_param(G, "mean", CD_F32, d, 1, v, sizeof v, &E), CD_OK, "%s", E.msg);
    cr_assert_eq(cd_graph_finalize(G, &E), CD_OK, "%s", E.msg);
    int r = cd_op_in(&G->ops[0], "Mean", 0);
    cr_assert(G->tensors[r].persistable, "the Mean the op reads must be the parameter");
    cr_assert_eq(G->tensors[r].nbytes, sizeof v);
    cr_assert_eq(((const float *)G->tensors[r].data)[1], -2.0f);
    cr_assert_neq(cd_op_out(&G->ops[0], "MeanOut", 0), r);
    cd_graph_free(G);
}

Test(builder, params_checked) {
    base();
    int64_t d[2] = {2, 3};
    cr_assert_eq(cd_graph_declare_var(G, "w", CD_F32, d, 2, true, &E), CD_OK);
    float v[6] = {1, 2, 3, 4, 5, 6};
    cr_assert_eq(cd_graph_set_param(G, "w", CD_F32, d, 2, v, 20, &E), CD_E_MODEL, "short data must fail");
    cr_assert(strstr(E.msg, "needs 24 bytes"), "%s", E.msg);
    int64_t neg[2] = {2, -3};
    cr_assert_eq(cd_graph_set_param(G, "w", CD_F32, neg, 2, v, 24, &E), CD_E_MODEL);
    int64_t huge[3] = {1ll << 40, 1ll << 40, 1ll << 40};
    cr_assert_eq(cd_graph_set_param(G, "w", CD_F32, huge, 3, v, 24, &E), CD_E_MODEL);
    cr_assert(strstr(E.msg, "overflow"), "%s", E.msg);
    /* Missing record for a persistable var that an op reads. */
    op1("relu", "X", "w", "Out", "y");
    cr_assert_eq(cd_graph_finalize(G, &E), CD_E_MODEL);
    cr_assert(strstr(E.msg, "'w'"), "%s", E.msg);
    cd_graph_free(G);

    base();
    cr_assert_eq(cd_graph_declare_var(G, "w", CD_F32, d, 2, true, &E), CD_OK);
    cr_assert_eq(
        cd_graph_set_param(G, "w", CD_F16, d, 2, (uint16_t[]){0x3c00, 0xc000, 0, 0x7c00, 0x0001, 0x3555}, 12, &E),
        CD_OK);
    cr_assert_eq(cd_graph_set_param(G, "w", CD_F16, d, 2, v, 12, &E), CD_E_MODEL, "duplicate record");
    cr_assert_eq(cd_graph_set_param(G, "nothere", CD_F32, d, 2, v, 24, &E), CD_OK, "unknown name only warns");
    op1("relu", "X", "w", "Out", "y");
    cr_assert_eq(cd_graph_finalize(G, &E), CD_OK, "%s", E.msg);
    cr_assert(strstr(G->warnings, "nothere"));
    int w = cd_op_in(&G->ops[0], "X", 0);
    cr_assert(G->tensors[w].persistable);
    cr_assert_eq(G->tensors[w].producer, -1);
    float *f = cd_tensor_to_f32(&G->tensors[w], &E);
    cr_assert(f);
    cr_assert_eq(f[0], 1.0f);
    cr_assert_eq(f[1], -2.0f);
    cr_assert_eq(f[3], __builtin_inff());
    cr_assert_eq(f[4], 5.9604644775390625e-08f);
    free(f);
    cd_graph_free(G);
}

Test(builder, attr_getters) {
    base();
    op1("batch_norm", "X", "x", "Y", "y");
    cd_attr a1 = {.name = strdup("is_test"), .type = CD_ATTR_INT, .i = 1};
    cd_attr a2 = {.name = strdup("flag"), .type = CD_ATTR_BOOL, .i = 1};
    cd_attr a3 = {.name = strdup("eps"), .type = CD_ATTR_FLOAT, .f = 0.5};
    cd_attr a4 = {.name = strdup("eps"), .type = CD_ATTR_FLOAT, .f = 0.25};
    cr_assert_eq(cd_op_add_attr(G, &a1, &E), CD_OK);
    cr_assert_eq(cd_op_add_attr(G, &a2, &E), CD_OK);
    cr_assert_eq(cd_op_add_attr(G, &a3, &E), CD_OK);
    cr_assert_eq(cd_op_add_attr(G, &a4, &E), CD_E_MODEL, "duplicate attribute");
    const cd_op *op = &G->ops[0];
    cr_assert(cd_attr_bool(op, "is_test", false));
    cr_assert_eq(cd_attr_int(op, "flag", 0), 1);
    cr_assert_eq(cd_attr_float(op, "eps", 0), 0.5);
    cr_assert_eq(cd_attr_int(op, "eps", 7), 7, "FLOAT is not an INT");
    cr_assert_str_eq(cd_attr_str(op, "missing", "dflt"), "dflt");
    const int64_t *iv;
    cr_assert_eq(cd_attr_ints(op, "is_test", &iv), 0, "INT is not INTS");
    cr_assert_eq(cd_graph_add_op(G, "bad-type", &E), NULL);
    cr_assert_eq(E.code, CD_E_MODEL);
    const char *u = "undeclared";
    cr_assert_eq(cd_op_add_input(G, "Z", &u, 1, &E), CD_E_MODEL);
    cr_assert(strstr(E.msg, "undeclared"));
    cd_graph_free(G);
}

Test(shape, numel_and_names) {
    cd_shape s = {.rank = 3, .d = {1ll << 31, 1ll << 31, 4}};
    cr_assert_eq(cd_shape_numel(&s), -1);
    cd_shape z = {.rank = 3, .d = {1ll << 40, 1ll << 40, 0}};
    cr_assert_eq(cd_shape_numel(&z), 0);
    cd_shape sc = {.rank = 0};
    cr_assert_eq(cd_shape_numel(&sc), 1);
    cd_shape neg = {.rank = 2, .d = {-1, 3}};
    cr_assert_eq(cd_shape_numel(&neg), -1);
    char b[64];
    cr_assert_str_eq(cd_shape_str(&neg, b, sizeof b), "[-1,3]");
    cr_assert_str_eq(cd_shape_str(&sc, b, sizeof b), "[]");
    for (int t = 0; t < CD_DTYPE_COUNT; t++) {
        cr_assert_eq(cd_dtype_from_fb(cd_dtype_to_fb((cd_dtype)t)), t);
        cr_assert_gt(cd_dtype_size((cd_dtype)t), 0);
    }
    cr_assert_eq(cd_dtype_from_fb(7), -1);
    cr_assert_eq(cd_dtype_from_fb(16), -1);
    cr_assert_eq(cd_dtype_from_meta0(5), CD_F32);
    cr_assert_eq(cd_dtype_from_meta0(9), CD_I8);
    cr_assert_eq(cd_dtype_from_meta0(10), -1);
    cr_assert_str_eq(cd_layout_name(4), "ImageDefault");
    cr_assert_str_eq(cd_precision_name(5), "float16");
    cr_assert_str_eq(cd_target_name(2), "x86");
}

Test(model, missing_file_is_usage_error) {
    cd_error err = {0};
    cd_graph *g = (cd_graph *)1;
    cr_assert_eq(cd_nb_load("/no/such/model.nb", &g, &err), CD_E_USAGE);
    cr_assert_null(g);
    cr_assert(strstr(err.msg, "cannot open model '/no/such/model.nb': No such file"), "%s", err.msg);
}
