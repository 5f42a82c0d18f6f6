/* --layers selection language. */
#include <criterion/criterion.h>
#include <string.h>
#include "probes/select.h"

/* feed, conv2d_0, relu_0, conv2d_1, pool2d_0, softmax_0, fetch; outputs: softmax out */
static cd_graph g;
static cd_tensor T[7];
static cd_op O[7];
static cd_slot S[7];
static int ids[7];
static int outs[1] = {5};

static void setup(void) {
    static const char *types[7] = {"feed", "conv2d", "relu", "conv2d", "pool2d", "softmax", "fetch"};
    static const char *names[7] = {"feed_0", "conv2d_0", "relu_0", "conv2d_1", "pool2d_0", "softmax_0", "fetch_0"};
    static const char *tn[7] = {"image",    "conv2d_0.tmp_0",           "relu_0.tmp_0", "conv2d_0.tmp_0",
                                "pool.out", "save_infer_model/scale_0", "fetch"};
    memset(&g, 0, sizeof g);
    for (int i = 0; i < 7; i++) {
        T[i] = (cd_tensor){.name = (char *)tn[i], .producer = i};
        ids[i] = i;
        S[i] = (cd_slot){.name = "Out", .n = 1, .ids = &ids[i]};
        O[i] = (cd_op){.type = (char *)types[i], .name = (char *)names[i], .n_out = 1, .out = &S[i]};
    }
    g.tensors = T;
    g.n_tensors = 7;
    g.ops = O;
    g.n_ops = 7;
    g.outputs = outs;
    g.n_outputs = 1;
}

TestSuite(select, .init = setup);

static void expect(const char *spec, const char *want) {
    bool m[7];
    int n = -1;
    cd_error e = {0};
    cr_assert_eq(cd_select_layers(&g, spec, m, &n, &e), CD_OK, "%s: %s", spec, e.msg);
    char got[8];
    int cnt = 0;
    for (int i = 0; i < 7; i++) got[i] = m[i] ? '1' : '0', cnt += m[i];
    got[7] = 0;
    cr_assert_str_eq(got, want, "spec '%s'", spec);
    cr_assert_eq(n, cnt);
}

static void expect_err(const char *spec, const char *needle) {
    bool m[7];
    cd_error e = {0};
    cr_assert_eq(cd_select_layers(&g, spec, m, NULL, &e), CD_E_USAGE, "spec '%s' should fail", spec);
    cr_assert(strstr(e.msg, needle), "spec '%s': message '%s' lacks '%s'", spec, e.msg, needle);
    for (int i = 0; i < 7; i++) cr_assert_not(m[i], "mask must be cleared on error");
}

Test(select, keywords) {
    expect(NULL, "0111110");
    expect("", "0111110");
    expect("all", "0111110");
    expect("outputs", "0000010");
}

Test(select, names_tensors_globs) {
    expect("relu_0", "0010000");
    expect("conv2d_0.tmp_0", "0101000"); /* a reused name: every writer */
    expect("save_infer_model/scale_0", "0000010");
    expect("conv2d_*", "0101000");
    expect("*pool*", "0000100");
    expect("op:conv2d", "0101000");
    expect("op:*pool*", "0000100");
    expect(" relu_0 , softmax_0 ", "0010010");
}

Test(select, ranges) {
    expect("#2", "0010000");
    expect("#0-3", "0111000");
    expect("#1-#2", "0110000");
    expect("#5-6,#2", "0010010"); /* fetch is dropped from the range */
    expect_err("#6-6,#2", "only feed/fetch");
}

Test(select, errors) {
    expect_err("conv2d_9", "no layer or tensor 'conv2d_9' in the model; nearest names: conv2d_0, conv2d_1, ");
    expect_err("conv2d_9", "`cldiff inspect MODEL` lists all 7 layers (--layers syntax:");
    expect_err("nothing*", "pattern 'nothing*' matches no layer");
    expect_err("op:conv3d", "nearest op types: conv2d");
    expect_err("#3-1", "backwards");
    expect_err("#7", "out of range: the model has 7 ops (#0-6)");
    expect_err("#x", "bad op index");
    expect_err("#1-", "bad op index");
    expect_err("#0", "only feed/fetch");
    expect_err("fetch_0", "never probed");
    expect_err("op:feed", "never probed");
    expect_err("relu_0,,softmax_0", "empty item");
    expect_err("relu_0,", "empty item");
    expect_err("op:", "needs an op type");
}

/* The unknown-layer message names the model and the command that lists its layers. */
Test(select, error_names_model_and_inspect) {
    bool m[7];
    cd_error e = {0};
    cr_assert_eq(cd_select_layers_in(&g, "dir/m.nb", "relu_9", m, NULL, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "--layers: no layer or tensor 'relu_9' in dir/m.nb; nearest names: relu_0, "), "%s", e.msg);
    cr_assert(strstr(e.msg, "; `cldiff inspect dir/m.nb` lists all 7 layers"), "%s", e.msg);
    cr_assert_null(strstr(e.msg, "cldiff info"), "%s", e.msg);
    /* at most five names, none of them feed/fetch, none twice (conv2d_0.tmp_0 is written twice) */
    const char *list = strstr(e.msg, "nearest names: ") + strlen("nearest names: ");
    const char *end = strchr(list, ';');
    int commas = 0;
    for (const char *p = list; p < end; p++) commas += *p == ',';
    cr_assert_eq(commas, 4, "%s", e.msg);
    cr_assert_null(strstr(e.msg, "fetch_0"), "%s", e.msg);
    const char *first = strstr(list, "conv2d_0.tmp_0");
    cr_assert(!first || !strstr(first + 1, "conv2d_0.tmp_0") || strstr(first + 1, "conv2d_0.tmp_0") > end, "%s", e.msg);
    cr_assert_eq(cd_select_layers_in(&g, "m.nb", "op:relu6", m, NULL, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "no op of type 'relu6' in m.nb; nearest op types: relu, "), "%s", e.msg);
}

Test(select, outputs_fed_directly_is_error) {
    outs[0] = 0; /* output is the feed's tensor */
    expect_err("outputs", "no op produces a model output");
    outs[0] = 5;
}
