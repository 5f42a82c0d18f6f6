/* Writes the models and inputs of the diagnosis tests (tests/diag/test_diag.py) into a folder:
 *   overflow.nb  x[1,4,8,8] -> conv2d (3x3, every weight 100, pad 1) -> sigmoid -> y
 *                with --input const:20 the conv sums up to 36*100*20 = 72000 > 65504: an fp16
 *                overflow that the sigmoid absorbs (the output looks finite)
 *   scale.nb     x[1,4,8,8] -> scale (2x + 0.5) -> relu -> y   (kernel plants patch `scale`)
 *   inputs/      small_a.npy, small_b.npy (values in [-1, 1)), big.npy (values up to 200) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "model/nb_writer.h"
#include "util/npy.h"

static void die(const cd_error *e, const char *what) {
    fprintf(stderr, "diag_gen: %s: %s\n", what, e->msg);
    exit(1);
}

static void attr_int(cd_graph *g, const char *n, int64_t v, cd_error *e) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INT, .i = v};
    if (cd_op_add_attr(g, &a, e)) die(e, n);
}
static void attr_float(cd_graph *g, const char *n, double v, cd_error *e) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_FLOAT, .f = v};
    if (cd_op_add_attr(g, &a, e)) die(e, n);
}
static void attr_bool(cd_graph *g, const char *n, bool v, cd_error *e) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_BOOL, .i = v};
    if (cd_op_add_attr(g, &a, e)) die(e, n);
}
static void attr_ints(cd_graph *g, const char *n, int64_t a0, int64_t a1, cd_error *e) {
    cd_attr a = {.name = strdup(n), .type = CD_ATTR_INTS, .n = 2};
    a.ints = malloc(2 * sizeof *a.ints);
    a.ints[0] = a0;
    a.ints[1] = a1;
    if (cd_op_add_attr(g, &a, e)) die(e, n);
}

static void io(cd_graph *g, const char *slot_in, const char *in, const char *slot_out, const char *out, cd_error *e) {
    const char *i1[] = {in}, *o1[] = {out};
    if (cd_op_add_input(g, slot_in, i1, 1, e) || cd_op_add_output(g, slot_out, o1, 1, e)) die(e, "slots");
}

static cd_graph *begin(const int64_t *xd, cd_error *e) {
    cd_graph *g = cd_graph_new();
    strcpy(g->opt_version, "v2.13-rc");
    g->program_version = 2003002;
    if (cd_graph_declare_var(g, "feed", CD_BOOL, NULL, 0, false, e) ||
        cd_graph_declare_var(g, "fetch", CD_BOOL, NULL, 0, false, e) ||
        cd_graph_declare_var(g, "x", CD_F32, xd, 4, false, e))
        die(e, "declare");
    cd_graph_add_op(g, "feed", e);
    io(g, "X", "feed", "Out", "x", e);
    attr_int(g, "col", 0, e);
    return g;
}

static void finish(cd_graph *g, const char *last, const char *path, cd_error *e) {
    cd_graph_add_op(g, "fetch", e);
    io(g, "X", last, "Out", "fetch", e);
    attr_int(g, "col", 0, e);
    if (cd_graph_finalize(g, e)) die(e, "finalize");
    if (cd_nb_write(g, path, e)) die(e, path);
    cd_graph_free(g);
}

int main(int argc, char **argv) {
    if (argc != 2) {
        fprintf(stderr, "usage: diag_gen OUT_DIR\n");
        return 2;
    }
    cd_error e = {0};
    char p[1024];
    int64_t xd[4] = {1, 4, 8, 8}, wd[4] = {4, 4, 3, 3};
    /* overflow.nb */
    cd_graph *g = begin(xd, &e);
    if (cd_graph_declare_var(g, "w", CD_F32, wd, 4, true, &e) ||
        cd_graph_declare_var(g, "c", CD_F32, xd, 4, false, &e) ||
        cd_graph_declare_var(g, "y", CD_F32, xd, 4, false, &e))
        die(&e, "declare");
    cd_graph_add_op(g, "conv2d", &e);
    const char *w[] = {"w"};
    if (cd_op_add_input(g, "Filter", w, 1, &e)) die(&e, "filter");
    io(g, "Input", "x", "Output", "c", &e);
    attr_ints(g, "strides", 1, 1, &e);
    attr_ints(g, "paddings", 1, 1, &e);
    attr_ints(g, "dilations", 1, 1, &e);
    attr_int(g, "groups", 1, &e);
    cd_graph_add_op(g, "sigmoid", &e);
    io(g, "X", "c", "Out", "y", &e);
    float wv[144];
    for (int i = 0; i < 144; i++) wv[i] = 100.0f;
    if (cd_graph_set_param(g, "w", CD_F32, wd, 4, wv, sizeof wv, &e)) die(&e, "w");
    snprintf(p, sizeof p, "%s/overflow.nb", argv[1]);
    finish(g, "y", p, &e);
    /* scale.nb */
    g = begin(xd, &e);
    if (cd_graph_declare_var(g, "s", CD_F32, xd, 4, false, &e) ||
        cd_graph_declare_var(g, "y", CD_F32, xd, 4, false, &e))
        die(&e, "declare");
    cd_graph_add_op(g, "scale", &e);
    io(g, "X", "x", "Out", "s", &e);
    attr_float(g, "scale", 2.0, &e);
    attr_float(g, "bias", 0.5, &e);
    attr_bool(g, "bias_after_scale", true, &e);
    cd_graph_add_op(g, "relu", &e);
    io(g, "X", "s", "Out", "y", &e);
    snprintf(p, sizeof p, "%s/scale.nb", argv[1]);
    finish(g, "y", p, &e);
    /* inputs */
    snprintf(p, sizeof p, "%s/inputs", argv[1]);
    mkdir(p, 0777);
    float buf[256];
    cd_value v = {.dtype = CD_F32, .shape = {.rank = 4, .d = {1, 4, 8, 8}}, .data = buf, .nbytes = sizeof buf};
    const char *names[3] = {"small_a.npy", "big.npy", "small_b.npy"};
    for (int k = 0; k < 3; k++) {
        for (int i = 0; i < 256; i++) {
            double t = sin(0.37 * i + k); /* deterministic, in [-1, 1] */
            buf[i] = (float)(k == 1 ? (i % 5 == 0 ? 150 + 50 * t : t) : t);
        }
        snprintf(p, sizeof p, "%s/inputs/%s", argv[1], names[k]);
        if (cd_npy_write(p, &v, &e)) die(&e, p);
    }
    return 0;
}
