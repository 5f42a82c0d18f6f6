/* cldiff instrument (probes/instrument.h): reused names get names of their own, probes become
 * fetch columns after the model's outputs, the result survives the writer and reader, and the
 * manifest reads back what was written; the JSON reader rejects malformed input by offset. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "model/nb_reader.h"
#include "model/nb_writer.h"
#include "probes/instrument.h"
#include "util/json.h"

static void op1(cd_graph *g, const char *type, const char *in_slot, const char *in, const char *out_slot,
                const char *out, int col) {
    cr_assert(cd_graph_add_op(g, type, NULL));
    cr_assert_eq(cd_op_add_input(g, in_slot, &in, 1, NULL), CD_OK);
    cr_assert_eq(cd_op_add_output(g, out_slot, &out, 1, NULL), CD_OK);
    if (col >= 0) {
        cd_attr a = {.name = strdup("col"), .type = CD_ATTR_INT, .i = col};
        cr_assert_eq(cd_op_add_attr(g, &a, NULL), CD_OK);
    }
    cd_attr k = {.name = strdup("__@kernel_type_attr@__"), .type = CD_ATTR_STRING};
    char rec[64];
    snprintf(rec, sizeof rec, "%s/def/%d/1/1", type, !strcmp(type, "feed") || !strcmp(type, "fetch") ? 1 : 4);
    k.s = strdup(rec);
    cr_assert_eq(cd_op_add_attr(g, &k, NULL), CD_OK);
}

/* x -> relu -> a -> relu -> b -> relu -> a (reused) -> fetch a */
static cd_graph *reuse_graph(void) {
    cd_graph *g = cd_graph_new();
    int64_t d[4] = {1, 2, 3, 4};
    cr_assert_eq(cd_graph_declare_var(g, "feed", CD_BOOL, NULL, 0, false, NULL), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "fetch", CD_BOOL, NULL, 0, false, NULL), CD_OK);
    const char *v[] = {"x", "a", "b"};
    for (int i = 0; i < 3; i++) cr_assert_eq(cd_graph_declare_var(g, v[i], CD_F32, d, 4, false, NULL), CD_OK);
    op1(g, "feed", "X", "feed", "Out", "x", 0);
    op1(g, "relu", "X", "x", "Out", "a", -1);
    op1(g, "relu", "X", "a", "Out", "b", -1);
    op1(g, "relu", "X", "b", "Out", "a", -1);
    op1(g, "fetch", "X", "a", "Out", "fetch", 0);
    cr_assert_eq(cd_graph_finalize(g, NULL), CD_OK);
    return g;
}

Test(instrument, renames_reused_names_and_appends_fetches) {
    cd_graph *g = reuse_graph();
    bool mask[5] = {true, true, true, true, true};
    cd_instrumented in;
    cd_error err = {0};
    cr_assert_eq(cd_instrument(g, mask, NULL, NULL, &in, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(in.n_model_outputs, 1);
    cr_assert_eq(in.n_fetch, 3, "model output + relu_0 + relu_1 (relu_2 is the output)");
    cr_assert_eq(in.n_renamed, 1, "the first 'a' only: the last one is the model output");
    cr_assert_eq(in.fetch[0].op_index, 3);
    cr_assert_str_eq(in.fetch[0].fetch_name, "a");
    cr_assert_eq(in.fetch[1].op_index, 1);
    cr_assert_str_eq(in.fetch[1].fetch_name, "a.cldiff0");
    cr_assert_str_eq(in.fetch[2].fetch_name, "b");
    /* the instrumented model: relu_1 reads the renamed tensor; three fetch ops, cols 0..2 */
    const cd_graph *h = in.g;
    cr_assert_eq(h->n_ops, 7);
    cr_assert_str_eq(h->tensors[cd_op_in(&h->ops[2], "X", 0)].name, "a.cldiff0");
    cr_assert_eq(h->n_outputs, 3);
    cr_assert_str_eq(h->tensors[h->outputs[1]].name, "a.cldiff0");
    /* through the writer and reader */
    uint8_t *buf;
    size_t len;
    cr_assert_eq(cd_nb_write_mem(h, &buf, &len, &err), CD_OK, "%s", err.msg);
    cd_graph *r;
    cr_assert_eq(cd_nb_load_mem(buf, len, &r, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(r->n_outputs, 3);
    cr_assert_str_eq(r->tensors[r->outputs[2]].name, "b");
    const cd_attr *k = cd_op_attr(&r->ops[6], "__@kernel_type_attr@__");
    cr_assert(k && !strcmp(k->s, "fetch/def/1/1/1"), "the model's own fetch record is reused");
    free(buf);
    cd_graph_free(r);
    cd_instrumented_free(&in);
    cd_graph_free(g);
}

Test(instrument, keep_names_and_retarget) {
    cd_graph *g = reuse_graph();
    bool mask[5] = {false, false, true, false, false};
    cd_instrumented in;
    cd_retarget rt = {.target = 2, .host_ops = "", .target_ops = NULL, .keep_names = true};
    cr_assert_eq(cd_instrument(g, mask, NULL, &rt, &in, NULL), CD_OK);
    cr_assert_eq(in.n_renamed, 0);
    cr_assert_eq(in.n_fetch, 2);
    cr_assert_str_eq(cd_attr_str(&in.g->ops[1], "__@kernel_type_attr@__", ""), "relu/def/2/1/1");
    cr_assert_str_eq(cd_attr_str(&in.g->ops[0], "__@kernel_type_attr@__", ""), "feed/def/1/1/1", "host stays host");
    cd_instrumented_free(&in);
    rt.keep_names = false;
    rt.host_ops = "relu";
    cr_assert_eq(cd_instrument(g, mask, NULL, &rt, &in, NULL), CD_OK);
    cr_assert_str_eq(cd_attr_str(&in.g->ops[1], "__@kernel_type_attr@__", ""), "relu/def/1/1/1");
    cd_instrumented_free(&in);
    cd_graph_free(g);
}

Test(instrument, manifest_round_trip) {
    cd_graph *g = reuse_graph();
    bool mask[5] = {true, true, true, true, true};
    cd_instrumented in;
    cr_assert_eq(cd_instrument(g, mask, NULL, NULL, &in, NULL), CD_OK);
    char path[] = "/tmp/cldiff_manifest_XXXXXX";
    int fd = mkstemp(path);
    cr_assert(fd >= 0);
    close(fd);
    const char *names[] = {"x"};
    cd_manifest_info mi = {.model_path = "m \"q\".nb",
                           .model_sha256 = "ab",
                           .instrumented_path = "p.nb",
                           .n_inputs = 1,
                           .input_names = names,
                           .input_shapes = &g->tensors[g->inputs[0]].shape};
    cd_error err = {0};
    cr_assert_eq(cd_manifest_write(path, g, &in, &mi, &err), CD_OK, "%s", err.msg);
    cd_manifest m;
    cr_assert_eq(cd_manifest_read(path, &m, &err), CD_OK, "%s", err.msg);
    cr_assert_str_eq(m.model_path, "m \"q\".nb");
    cr_assert_eq(m.n, 3);
    cr_assert_eq(m.n_model_outputs, 1);
    cr_assert(m.e[0].model_output && m.e[0].probed);
    cr_assert_str_eq(m.e[1].layer, "relu_0");
    cr_assert_str_eq(m.e[1].fetch_name, "a.cldiff0");
    cr_assert_eq(m.e[1].dtype, CD_F32);
    cr_assert_eq(m.e[1].shape.rank, 4);
    cr_assert_eq(m.e[1].shape.d[3], 4);
    cd_manifest_free(&m);
    remove(path);
    cd_instrumented_free(&in);
    cd_graph_free(g);
}

Test(json, parses_and_rejects) {
    cd_json j;
    cd_error err = {0};
    const char *ok = " {\"a\": [1, -2.5e1, true, null, \"x\\u00e9\\n\"], \"b\": {}} ";
    cr_assert_eq(cd_json_parse(ok, strlen(ok), "t", &j, &err), CD_OK, "%s", err.msg);
    const cd_json *a = cd_json_get(&j, "a");
    cr_assert(a && a->kind == CD_JSON_ARR && a->n == 5);
    cr_assert_eq(a->items[1].num, -25);
    cr_assert_str_eq(a->items[4].str, "x\xc3\xa9\n");
    cr_assert(cd_json_get(&j, "b") && !cd_json_get(&j, "c"));
    cd_json_free(&j);
    const char *bad[] = {"{", "[1,]", "{\"a\" 1}", "\"abc", "[1] x", "{\"a\": tru}", "[\"\\q\"]", ""};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        cr_assert_eq(cd_json_parse(bad[i], strlen(bad[i]), "bad.json", &j, &err), CD_E_MODEL, "'%s' accepted", bad[i]);
        cr_assert(strstr(err.msg, "bad.json") && strstr(err.msg, "byte"), "%s", err.msg);
    }
    char deep[200];
    memset(deep, '[', sizeof deep - 1);
    deep[sizeof deep - 1] = 0;
    cr_assert_eq(cd_json_parse(deep, strlen(deep), "deep", &j, &err), CD_E_MODEL);
}
