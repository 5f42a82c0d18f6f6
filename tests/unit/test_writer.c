/* Writer round trips: graph -> .nb (meta 2) -> graph must be identical: every op, slot,
 * attribute, tensor (dtype, shape, SSA version, producer) and parameter byte. */
#include <criterion/criterion.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/fb.h"
#include "model/nb_reader.h"
#include "model/nb_writer.h"

static const char *models_dir(void) {
    const char *e = getenv("CD_SHARED_MODELS");
    return e && *e ? e : CD_SOURCE_DIR "/../shared/models";
}

/* Tensor of g2 with the same (name, version) as g1's tensor id, or -1. */
static int match(const cd_graph *g1, int id, const cd_graph *g2) {
    if (id < 0) return -1;
    const cd_tensor *t = &g1->tensors[id];
    for (int i = 0; i < g2->n_tensors; i++)
        if (g2->tensors[i].version == t->version && !strcmp(g2->tensors[i].name, t->name)) return i;
    return -2;
}

static void cmp_slots(const cd_graph *a, const cd_graph *b, const cd_op *oa, const cd_op *ob, bool out) {
    int na = out ? oa->n_out : oa->n_in, nb = out ? ob->n_out : ob->n_in;
    cr_assert_eq(na, nb, "op %s: slot count", oa->name);
    for (int s = 0; s < na; s++) {
        const cd_slot *sa = out ? &oa->out[s] : &oa->in[s];
        const cd_slot *sb = out ? cd_op_out_slot(ob, sa->name) : cd_op_in_slot(ob, sa->name);
        cr_assert(sb, "op %s: slot %s missing after round trip", oa->name, sa->name);
        cr_assert_eq(sa->n, sb->n, "op %s slot %s: argument count", oa->name, sa->name);
        for (int k = 0; k < sa->n; k++)
            cr_assert_eq(match(a, sa->ids[k], b), sb->ids[k], "op %s slot %s[%d]: tensor differs", oa->name, sa->name,
                         k);
    }
}

static void cmp_attr(const cd_op *o, const cd_attr *x, const cd_attr *y) {
    cr_assert(y, "op %s: attribute %s lost", o->name, x->name);
    cr_assert_eq(x->type, y->type, "op %s attr %s: type", o->name, x->name);
    cr_assert_eq(x->i, y->i, "op %s attr %s: int value", o->name, x->name);
    cr_assert(x->f == y->f || (isnan(x->f) && isnan(y->f)), "op %s attr %s: float value", o->name, x->name);
    cr_assert_str_eq(x->s ? x->s : "", y->s ? y->s : "", "op %s attr %s: string", o->name, x->name);
    cr_assert_eq(x->n, y->n, "op %s attr %s: count", o->name, x->name);
    for (int k = 0; k < x->n; k++) {
        if (x->ints) cr_assert_eq(x->ints[k], y->ints[k], "op %s attr %s[%d]", o->name, x->name, k);
        if (x->floats)
            cr_assert(!memcmp(&x->floats[k], &y->floats[k], 8) || x->floats[k] == y->floats[k], "op %s attr %s[%d]",
                      o->name, x->name, k);
        if (x->strings) cr_assert_str_eq(x->strings[k], y->strings[k], "op %s attr %s[%d]", o->name, x->name, k);
    }
}

void cd_test_graph_eq(const cd_graph *a, const cd_graph *b);
void cd_test_graph_eq(const cd_graph *a, const cd_graph *b) {
    cr_assert_str_eq(a->opt_version, b->opt_version);
    cr_assert_eq(a->program_version, b->program_version);
    cr_assert_eq(a->n_tensors, b->n_tensors, "tensor count %d vs %d", a->n_tensors, b->n_tensors);
    for (int i = 0; i < a->n_tensors; i++) {
        int j = match(a, i, b);
        cr_assert(j >= 0, "tensor %s v%d missing", a->tensors[i].name, a->tensors[i].version);
        const cd_tensor *x = &a->tensors[i], *y = &b->tensors[j];
        cr_assert_eq(x->dtype, y->dtype, "tensor %s dtype", x->name);
        cr_assert(cd_shape_eq(&x->shape, &y->shape), "tensor %s shape", x->name);
        cr_assert_eq(x->persistable, y->persistable, "tensor %s persistable", x->name);
        cr_assert_eq(x->producer, y->producer, "tensor %s producer", x->name);
        cr_assert_eq(x->nbytes, y->nbytes, "tensor %s nbytes", x->name);
        if (x->nbytes) cr_assert(!memcmp(x->data, y->data, x->nbytes), "tensor %s bytes differ", x->name);
    }
    cr_assert_eq(a->n_ops, b->n_ops);
    for (int i = 0; i < a->n_ops; i++) {
        const cd_op *x = &a->ops[i], *y = &b->ops[i];
        cr_assert_str_eq(x->type, y->type);
        cr_assert_str_eq(x->name, y->name);
        cmp_slots(a, b, x, y, false);
        cmp_slots(a, b, x, y, true);
        cr_assert_eq(x->n_attr, y->n_attr, "op %s attribute count", x->name);
        for (int k = 0; k < x->n_attr; k++) cmp_attr(x, &x->attrs[k], cd_op_attr(y, x->attrs[k].name));
        cr_assert_eq(x->kernel.present, y->kernel.present);
        cr_assert_str_eq(x->kernel.alias, y->kernel.alias);
        cr_assert_eq(x->kernel.target, y->kernel.target);
        cr_assert_eq(x->kernel.precision, y->kernel.precision);
        cr_assert_eq(x->kernel.layout, y->kernel.layout);
    }
    cr_assert_eq(a->n_inputs, b->n_inputs);
    cr_assert_eq(a->n_outputs, b->n_outputs);
    for (int i = 0; i < a->n_inputs; i++) cr_assert_eq(match(a, a->inputs[i], b), b->inputs[i]);
    for (int i = 0; i < a->n_outputs; i++) cr_assert_eq(match(a, a->outputs[i], b), b->outputs[i]);
}

static cd_graph *roundtrip(const cd_graph *g, uint8_t **bytes, size_t *len) {
    cd_error err = {0};
    cr_assert_eq(cd_nb_write_mem(g, bytes, len, &err), CD_OK, "write: %s", err.msg);
    cd_graph *r = NULL;
    cr_assert_eq(cd_nb_load_mem(*bytes, *len, &r, &err), CD_OK, "read back: %s", err.msg);
    return r;
}

/* A small graph using every attribute kind the writer supports. */
static cd_graph *build_small(void) {
    cd_error err = {0};
    cd_graph *g = cd_graph_new();
    strcpy(g->opt_version, "v2.13-rc");
    g->program_version = 2003002;
    int64_t xd[4] = {-1, 3, 8, 8}, wd[4] = {4, 3, 3, 3}, bd[1] = {4};
    cr_assert_eq(cd_graph_declare_var(g, "feed", CD_BOOL, NULL, 0, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "fetch", CD_BOOL, NULL, 0, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "x", CD_F32, xd, 4, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "w", CD_F32, wd, 4, true, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "b", CD_I8, bd, 1, true, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "y", CD_F32, NULL, 0, false, &err), CD_OK);
    const char *feed[] = {"feed"}, *x[] = {"x"}, *w[] = {"w"}, *b[] = {"b"}, *y[] = {"y"}, *fe[] = {"fetch"};
    cd_graph_add_op(g, "feed", &err);
    cd_op_add_input(g, "X", feed, 1, &err);
    cd_op_add_output(g, "Out", x, 1, &err);
    cd_attr a = {.name = strdup("col"), .type = CD_ATTR_INT, .i = 0};
    cd_op_add_attr(g, &a, &err);
    cd_graph_add_op(g, "conv2d", &err);
    cd_op_add_input(g, "Bias", b, 1, &err);
    cd_op_add_input(g, "Filter", w, 1, &err);
    cd_op_add_input(g, "Input", x, 1, &err);
    cd_op_add_output(g, "Output", y, 1, &err);
    cd_attr at[] = {
        {.name = strdup("__@kernel_type_attr@__"), .type = CD_ATTR_STRING, .s = strdup("conv2d/def/4/1/1")},
        {.name = strdup("an_int"), .type = CD_ATTR_INT, .i = -7},
        {.name = strdup("a_float"), .type = CD_ATTR_FLOAT, .f = 0.25},
        {.name = strdup("a_bool"), .type = CD_ATTR_BOOL, .i = 1},
        {.name = strdup("a_long"), .type = CD_ATTR_LONG, .i = 1ll << 40},
        {.name = strdup("a_f64"), .type = CD_ATTR_FLOAT64, .f = 1e-300},
        {.name = strdup("zero_int"), .type = CD_ATTR_INT, .i = 0},
        {.name = strdup("empty_s"), .type = CD_ATTR_STRING, .s = strdup("")},
    };
    for (size_t i = 0; i < sizeof at / sizeof *at; i++)
        cr_assert_eq(cd_op_add_attr(g, &at[i], &err), CD_OK, "%s", err.msg);
    cd_attr ints = {.name = strdup("strides"), .type = CD_ATTR_INTS, .n = 2};
    ints.ints = malloc(16);
    ints.ints[0] = 1;
    ints.ints[1] = -2;
    cd_op_add_attr(g, &ints, &err);
    cd_attr fl = {.name = strdup("scales"), .type = CD_ATTR_FLOATS, .n = 3};
    fl.floats = malloc(24);
    fl.floats[0] = 0.5;
    fl.floats[1] = -3;
    fl.floats[2] = 1e-3f;
    cd_op_add_attr(g, &fl, &err);
    cd_attr ls = {.name = strdup("longs"), .type = CD_ATTR_LONGS, .n = 1};
    ls.ints = malloc(8);
    ls.ints[0] = -(1ll << 50);
    cd_op_add_attr(g, &ls, &err);
    cd_attr st = {.name = strdup("names"), .type = CD_ATTR_STRINGS, .n = 2};
    st.strings = malloc(16);
    st.strings[0] = strdup("a");
    st.strings[1] = strdup("");
    cd_op_add_attr(g, &st, &err);
    cd_attr f6 = {.name = strdup("f64s"), .type = CD_ATTR_FLOAT64S, .n = 1};
    f6.floats = malloc(8);
    f6.floats[0] = 3.141592653589793;
    cd_op_add_attr(g, &f6, &err);
    cd_graph_add_op(g, "fetch", &err);
    cd_op_add_input(g, "X", y, 1, &err);
    cd_op_add_output(g, "Out", fe, 1, &err);
    cd_attr c2 = {.name = strdup("col"), .type = CD_ATTR_INT, .i = 0};
    cd_op_add_attr(g, &c2, &err);
    float wv[108];
    for (int i = 0; i < 108; i++) wv[i] = (float)i * 0.01f - 0.5f;
    int8_t bv[4] = {-128, 0, 1, 127};
    cr_assert_eq(cd_graph_set_param(g, "w", CD_F32, wd, 4, wv, sizeof wv, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_graph_set_param(g, "b", CD_I8, bd, 1, bv, 4, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    return g;
}

Test(writer, small_graph_roundtrip) {
    cd_graph *g = build_small();
    uint8_t *bytes;
    size_t len;
    cd_graph *r = roundtrip(g, &bytes, &len);
    cd_test_graph_eq(g, r);
    cr_assert_eq(r->ops[1].kernel.target, 4);
    cr_assert_eq(cd_attr_int(&r->ops[1], "an_int", 0), -7);
    cr_assert_eq(cd_attr_int(&r->ops[1], "a_long", 0), 1ll << 40);
    cr_assert_eq(len % 2, 0);
    /* A second write of the read-back graph is byte-identical (the layout is canonical). */
    uint8_t *b2;
    size_t l2;
    cd_error err = {0};
    cr_assert_eq(cd_nb_write_mem(r, &b2, &l2, &err), CD_OK);
    cr_assert_eq(len, l2);
    cr_assert(!memcmp(bytes, b2, len));
    free(b2);
    free(bytes);
    cd_graph_free(r);
    cd_graph_free(g);
}

/* Properties of docs/nb-format.md §2.10: defaults omitted (INT 0 attr has no type/i field), params sorted. */
Test(writer, layout_properties) {
    cd_graph *g = build_small();
    uint8_t *bytes;
    size_t len;
    cd_error err = {0};
    cr_assert_eq(cd_nb_write_mem(g, &bytes, &len, &err), CD_OK);
    cr_assert_eq(bytes[0], 2);
    cr_assert_eq(bytes[1], 0);
    cr_assert_str_eq((const char *)bytes + 2, "v2.13-rc");
    uint64_t topo = cd_ld_u64(bytes + 18);
    cr_assert_eq(topo % 8, 0, "topology length is a multiple of 8");
    size_t p = 26 + topo;
    cr_assert_eq(cd_ld_u16(bytes + p), 0);
    cr_assert_eq(cd_ld_u16(bytes + p + 4), 6);
    cr_assert_eq(cd_ld_u16(bytes + p + 6), 2);
    cr_assert_eq(cd_ld_u32(bytes + p + 8), 432, "max_data_bytes = 108 floats");
    /* First record must be "b" (sorted), record_len = fb_len + 4, fb_start = 4. */
    size_t r0 = p + 12;
    cr_assert_eq(cd_ld_u32(bytes + r0 + 4), 4);
    cd_fb fb;
    cd_fb_table root;
    cr_assert_eq(cd_fb_init(&fb, bytes + r0 + 8, cd_ld_u32(bytes + r0) - 4, r0 + 8, "param", &err), CD_OK);
    cr_assert_eq(cd_fb_root(&fb, &root, &err), CD_OK);
    const char *name;
    cr_assert_eq(cd_fb_str(&fb, &root, 1, "name", true, &name, NULL, &err), CD_OK);
    cr_assert_str_eq(name, "b");
    size_t r1 = r0 + 4 + cd_ld_u32(bytes + r0);
    cr_assert_eq(r1 + 4 + cd_ld_u32(bytes + r1), len, "two records end exactly at end of file");
    free(bytes);
    cd_graph_free(g);
}

Test(writer, shared_models_roundtrip) {
    DIR *d = opendir(models_dir());
    if (!d) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".nb")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", models_dir(), e->d_name);
        cd_error err = {0};
        cd_graph *g = NULL;
        cr_assert_eq(cd_nb_load(path, &g, &err), CD_OK, "%s", err.msg);
        uint8_t *bytes;
        size_t len;
        cd_graph *r = roundtrip(g, &bytes, &len);
        cd_test_graph_eq(g, r);
        free(bytes);
        cd_graph_free(r);
        cd_graph_free(g);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 10, "expected the 10 shared models, found %d", n);
}

/* meta_version 1 (CombinedParamsDesc): every shared model written as meta 1 reads back
 * identical to its meta-2 original. */
Test(writer, shared_models_meta1_roundtrip) {
    DIR *d = opendir(models_dir());
    if (!d) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    struct dirent *e;
    int n = 0;
    while ((e = readdir(d))) {
        size_t l = strlen(e->d_name);
        if (l < 4 || strcmp(e->d_name + l - 3, ".nb") || strstr(e->d_name, "meta0")) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/%s", models_dir(), e->d_name);
        cd_error err = {0};
        cd_graph *g = NULL, *r = NULL;
        cr_assert_eq(cd_nb_load(path, &g, &err), CD_OK, "%s", err.msg);
        uint8_t *bytes;
        size_t len;
        cr_assert_eq(cd_nb_write_mem_meta(g, 1, &bytes, &len, &err), CD_OK, "%s", err.msg);
        uint16_t mv;
        memcpy(&mv, bytes, 2);
        cr_assert_eq(mv, 1);
        cr_assert_eq(cd_nb_load_mem(bytes, len, &r, &err), CD_OK, "%s meta 1: %s", e->d_name, err.msg);
        cr_assert_eq(r->meta_version, 1);
        r->meta_version = 2; /* the only intended difference */
        cd_test_graph_eq(g, r);
        /* truncated meta-1 parameter section: an error naming the offset, no crash */
        cd_graph *t = NULL;
        cr_assert_eq(cd_nb_load_mem(bytes, len - 7, &t, &err), CD_E_MODEL);
        free(bytes);
        cd_graph_free(r);
        cd_graph_free(g);
        n++;
    }
    closedir(d);
    cr_assert_geq(n, 9, "expected the 9 meta-2 shared models, found %d", n);
}

Test(writer, unwritable_path) {
    cd_graph *g = build_small();
    cd_error err = {0};
    cr_assert_eq(cd_nb_write(g, "/nonexistent-dir/x.nb", &err), CD_E_IO);
    cr_assert(strstr(err.msg, "/nonexistent-dir/x.nb"));
    cd_graph_free(g);
}
