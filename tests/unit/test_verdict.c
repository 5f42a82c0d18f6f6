/* The verdict module on its own (src/verdict/verdict.h, docs/design.md §8.2): no command line,
 * no session. A one-op model (scale) and a dump written here: run A, B's free run and B's local
 * run; the comparison and the local check then decide. A clean local run passes, one element
 * off beyond the scale op's bound is caught at that layer; and the request the verdict builds for
 * each kind of run (fp32, fp16, an engine as B). */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "engine/plan.h"
#include "store/dump.h"
#include "backends/registry.h"
#include "verdict/verdict.h"

static cd_error err;
static char tmpdir[256];

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cd_test_verdict_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", tmpdir);
}

TestSuite(verdict, .init = setup, .fini = teardown);

static void op1(cd_graph *g, const char *type, const char *islot, const char *in, const char *oslot, const char *out) {
    cr_assert_not_null(cd_graph_add_op(g, type, &err), "%s", err.msg);
    cr_assert_eq(cd_op_add_input(g, islot, &in, 1, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_op_add_output(g, oslot, &out, 1, &err), CD_OK, "%s", err.msg);
}

static void attr(cd_graph *g, const char *name, cd_attr_type t, double f, int64_t i) {
    cd_attr a = {0};
    a.name = cd_strdup(name);
    a.type = t;
    a.f = f;
    a.i = i;
    cr_assert_eq(cd_op_add_attr(g, &a, &err), CD_OK, "%s", err.msg);
}

#define N 64
/* feed x[1,N] -> scale (y = 2x + 0.5) -> fetch */
static cd_graph *scale_model(void) {
    cd_graph *g = cd_graph_new();
    int64_t none[1] = {0}, d[2] = {1, N};
    cr_assert_eq(cd_graph_declare_var(g, "feed", CD_F32, none, 0, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "fetch", CD_F32, none, 0, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "x", CD_F32, d, 2, false, &err), CD_OK);
    cr_assert_eq(cd_graph_declare_var(g, "y", CD_F32, none, 0, false, &err), CD_OK);
    op1(g, "feed", "X", "feed", "Out", "x");
    attr(g, "col", CD_ATTR_INT, 0, 0);
    op1(g, "scale", "X", "x", "Out", "y");
    attr(g, "scale", CD_ATTR_FLOAT, 2.0, 0);
    attr(g, "bias", CD_ATTR_FLOAT, 0.5, 0);
    attr(g, "bias_after_scale", CD_ATTR_BOOL, 0, 1);
    op1(g, "fetch", "X", "y", "Out", "fetch");
    attr(g, "col", CD_ATTR_INT, 0, 0);
    cr_assert_eq(cd_graph_finalize(g, &err), CD_OK, "%s", err.msg);
    return g;
}

static cd_value f32(float *data, int n) {
    cd_value v = {.dtype = CD_F32, .data = data, .nbytes = (size_t)n * sizeof(float)};
    v.shape.rank = 2;
    v.shape.d[0] = 1;
    v.shape.d[1] = n;
    return v;
}

static void put_run(cd_dump *d, const char *run, const char *backend, int op, float *y) {
    cd_run_info ri = {backend, "fp32", "test", "", "", "", 1};
    cr_assert_eq(cd_dump_begin_run(d, run, &ri, &err), CD_OK, "%s", err.msg);
    cd_tensor_rec rec = {.op_index = op,
                         .op_type = "scale",
                         .layer = "scale_0",
                         .tensor = "y",
                         .elapsed_us = 1,
                         .kernel_us = -1,
                         .where = backend,
                         .kernel = "",
                         .note = ""};
    cd_value v = f32(y, N);
    cr_assert_eq(cd_dump_write_tensor(d, run, &rec, &v, false, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_dump_end_run(d, run, 1.0, true, &err), CD_OK, "%s", err.msg);
}

/* Writes the dump (the local run's element `bad` off by `delta`; bad < 0: none), compares the
 * free runs and runs the local check; returns the scale layer's results in *out. */
static void decide(int bad, float delta, cd_layer_cmp *out, int *exit_code) {
    cd_graph *g = scale_model();
    int op = -1;
    for (int i = 0; i < g->n_ops; i++)
        if (!strcmp(g->ops[i].type, "scale")) op = i;
    cr_assert_geq(op, 0);
    cd_shape in = {.rank = 2, .d = {1, N}};
    cd_plan plan;
    cr_assert_eq(cd_plan_build(g, &in, CD_PREC_FP32, &plan, &err), CD_OK, "%s", err.msg);

    float x[N], y[N], yl[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)(i - N / 2) * 0.37f;
        y[i] = 2.0f * x[i] + 0.5f;
        yl[i] = y[i];
    }
    if (bad >= 0) yl[bad] += delta;
    char path[512];
    snprintf(path, sizeof path, "%s/dump_%d.h5", tmpdir, bad);
    cd_dump_meta m = {"test_verdict", "scale.nb", "00", "test", "fp32", 1, 0};
    cd_dump *d = NULL;
    cr_assert_eq(cd_dump_create(path, &m, &d, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_dump_write_model(d, g, &err), CD_OK, "%s", err.msg);
    cd_value xv = f32(x, N);
    cr_assert_eq(cd_dump_write_input(d, "x", &xv, "test", &err), CD_OK, "%s", err.msg);
    put_run(d, "cpu", "cpu", op, y);
    put_run(d, "opencl", "opencl", op, yl);       /* B's free run: what its local run shows */
    put_run(d, "opencl_local", "opencl", op, yl); /* B's run of the layer on A's inputs */
    cr_assert_eq(cd_dump_close(d, true, &err), CD_OK, "%s", err.msg);

    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &err), CD_OK, "%s", err.msg);
    cd_policy pol;
    cd_policy_init(&pol, CD_PREC_FP32);
    cd_cmp_request q = {.ra = r, .rb = r, .run_a = "cpu", .run_b = "opencl", .policy = &pol, .by_op_index = true};
    cd_analysis an;
    cd_cmp_unmatched *um = NULL;
    int nu = 0;
    cr_assert_eq(cd_verdict_compare_runs(&q, false, &an, &um, &nu, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(nu, 0);
    cd_verdict_run v = {.g = g,
                        .plan = &plan,
                        .cpu_opts = {.prec = CD_PREC_FP32, .threads = 1},
                        .r = r,
                        .prec = CD_PREC_FP32,
                        .a = "cpu",
                        .b = "opencl",
                        .compute_a = "fp32",
                        .compute_b = "fp32",
                        .run_a = "cpu",
                        .run_b = "opencl",
                        .run_local = "opencl_local",
                        .policy = &pol};
    cr_assert_eq(cd_verdict_local(&v, &an, &err), CD_OK, "%s", err.msg);
    const cd_layer_cmp *l = NULL;
    for (int i = 0; i < an.n_layers; i++)
        if (an.layers[i].op_index == op && !strcmp(an.layers[i].tensor, "y")) l = &an.layers[i];
    cr_assert_not_null(l, "the scale layer is not in the analysis");
    *out = *l;
    *exit_code = cd_verdict_exit_code(&an);
    cr_assert(an.local_ran);
    free(um);
    cd_analysis_free(&an);
    cd_policy_free(&pol);
    cd_dump_reader_close(r);
    cd_plan_free(&plan);
    cd_graph_free(g);
}

Test(verdict, clean_local_run_passes_its_bound) {
    cd_layer_cmp l;
    int rc;
    decide(-1, 0, &l, &rc);
    cr_assert(l.has_local, "no local result: %s", l.loc_note);
    cr_assert(l.loc_pass, "clean layer failed its local check: %s", l.loc_note);
    cr_assert(l.isolated && l.iso.pass, "the isolation columns do not mirror the local check");
    cr_assert_eq(l.loc_err, 0);
    cr_assert_eq(rc, 0);
}

Test(verdict, element_off_beyond_the_bound_is_a_local_fault) {
    cd_layer_cmp l;
    int rc;
    decide(5, 0.25f, &l, &rc);
    cr_assert(l.has_local, "no local result: %s", l.loc_note);
    cr_assert_not(l.loc_pass, "an element 0.25 off passed the local check (bound %g): %s", l.loc_bound, l.loc_note);
    cr_assert_gt(l.loc_ratio, 1);
    cr_assert_eq(l.loc_worst, 5, "worst element %lld, not the planted one", (long long)l.loc_worst);
    cr_assert(fabs(l.loc_err - 0.25) < 1e-6, "local error %g", l.loc_err);
    cr_assert_eq(rc, CD_E_TOLERANCE);
}

Test(verdict, request_fp32_compares_a_with_b_local) {
    cd_verdict_run v = {.prec = CD_PREC_FP32,
                        .a = "cpu",
                        .b = "opencl",
                        .compute_a = "fp32",
                        .compute_b = "fp32",
                        .run_a = "cpu",
                        .run_b = "opencl",
                        .run_local = "opencl_local"};
    cd_local_req q;
    cd_verdict_local_req(&v, &q);
    cr_assert_str_eq(q.run_a, "cpu");
    cr_assert_str_eq(q.run_ref, "cpu");
    cr_assert_str_eq(q.run_local, "opencl_local");
    cr_assert_str_eq(q.run_free, "opencl");
    cr_assert(q.ref.u == CD_U32 && !q.ref.half_store && q.b.u == CD_U32 && !q.b.half_store);
    cr_assert_eq(q.ref.trans_ulps, 0);
}

Test(verdict, request_fp16_holds_b_to_the_float32_reference) {
    cd_verdict_run v = {.prec = CD_PREC_FP16,
                        .a = "cpu",
                        .b = "opencl",
                        .compute_a = "fp16",
                        .compute_b = "fp32", /* OpenCL's fp16 variant: float arithmetic, half storage */
                        .run_a = "cpu",
                        .run_b = "opencl",
                        .run_local = "opencl_local"};
    cd_local_req q;
    cd_verdict_local_req(&v, &q);
    cr_assert_str_eq(q.run_ref, "ref_local");
    cr_assert(q.ref.u == CD_U32 && !q.ref.half_store, "fp16 reference is not float32");
    cr_assert(q.b.u == CD_U32 && q.b.half_store, "OpenCL fp16: float arithmetic on half storage");
    v.compute_b = "fp16"; /* the fp16-compute variant on a device with cl_khr_fp16 */
    cd_verdict_local_req(&v, &q);
    cr_assert(q.b.u == CD_U16 && q.b.half_store, "fp16-compute: half arithmetic");
    cr_assert(cd_verdict_side_arith("fp16", CD_PREC_FP16).u == CD_U16);
    /* what the backend recorded, not the flag: --fp16-compute without cl_khr_fp16 computes in float */
    cr_assert(cd_verdict_side_arith("fp32", CD_PREC_FP16).u == CD_U32);
}

Test(verdict, request_engine_b_checks_its_own_output_against_the_cpu) {
    bool settled[4] = {0};
    cd_verdict_run v = {.prec = CD_PREC_FP32,
                        .a = "paddle-lite-arm",
                        .b = "paddle-lite-opencl",
                        .engine_b = true,
                        .compute_a = "fp32",
                        .compute_b = "fp32",
                        .run_a = "arm",
                        .run_b = "ocl",
                        .run_local = "ocl_local",
                        .settled = settled};
    cd_local_req q;
    cd_verdict_local_req(&v, &q);
    cr_assert_str_eq(q.run_a, "ocl");
    cr_assert_str_eq(q.run_ref, "ocl_local");
    cr_assert_str_eq(q.run_local, "ocl");
    cr_assert_null(q.run_free);
    cr_assert_null(q.settled);
    cr_assert_eq(q.ref.trans_ulps, 256);
    cr_assert_eq(q.b.trans_ulps, 256);
}

/* ---------------------------------------------------------------- the one judge (judge.c) */

/* A dump of the scale model: run A ("cpu") and run B ("opencl", with the tensor unless b_empty),
 * closed complete or not; the root attributes of extra (name=value pairs) added. */
static void judge_dump(const char *path, const char *sha, bool complete, bool b_empty, const char *const *extra) {
    cd_graph *g = scale_model();
    float x[N], y[N];
    for (int i = 0; i < N; i++) {
        x[i] = (float)i * 0.25f;
        y[i] = 2.0f * x[i] + 0.5f;
    }
    cd_dump_meta m = {"test_judge", "scale.nb", sha, "test", "fp32", 1, 0};
    cd_dump *d = NULL;
    cr_assert_eq(cd_dump_create(path, &m, &d, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_dump_write_model(d, g, &err), CD_OK, "%s", err.msg);
    cd_value xv = f32(x, N);
    cr_assert_eq(cd_dump_write_input(d, "x", &xv, "test", &err), CD_OK, "%s", err.msg);
    put_run(d, "cpu", "cpu", 1, y);
    if (b_empty) {
        cd_run_info ri = {"opencl", "fp32", "test", "", "", "", 1};
        cr_assert_eq(cd_dump_begin_run(d, "opencl", &ri, &err), CD_OK, "%s", err.msg);
        cr_assert_eq(cd_dump_end_run(d, "opencl", 1.0, false, &err), CD_OK, "%s", err.msg);
    } else {
        put_run(d, "opencl", "opencl", 1, y);
    }
    for (int i = 0; extra && extra[i]; i += 2)
        if (!strcmp(extra[i], "error_code"))
            cr_assert_eq(cd_dump_set_attr_i64(d, "/", extra[i], atoi(extra[i + 1]), &err), CD_OK, "%s", err.msg);
        else
            cr_assert_eq(cd_dump_set_attr_str(d, "/", extra[i], extra[i + 1], &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_dump_close(d, complete, &err), CD_OK, "%s", err.msg);
    cd_graph_free(g);
}

/* The judge's verdict of one dump; returns the exit code, the analysis's note in why. */
static int judge_one(const char *path, cd_verdict *v, char *why, size_t n, int *n_layers) {
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &err), CD_OK, "%s", err.msg);
    cd_policy pol;
    cd_policy_init(&pol, cd_judge_precision(r));
    cd_judge_req q = {.ra = r, .rb = r, .policy = &pol};
    cd_judgement j;
    cr_assert_eq(cd_judge(&q, &j, &err), CD_OK, "%s", err.msg);
    *v = j.an.verdict;
    snprintf(why, n, "%s%s", j.an.incomplete, j.an.error);
    *n_layers = j.an.n_layers;
    int rc = cd_verdict_exit_code(&j.an);
    cd_judgement_free(&j);
    cd_policy_free(&pol);
    cd_dump_reader_close(r);
    return rc;
}

Test(verdict, judge_passes_a_complete_run_and_nothing_else) {
    char p[512], why[600];
    cd_verdict v;
    int nl;
    snprintf(p, sizeof p, "%s/ok.h5", tmpdir);
    judge_dump(p, "aa", true, false, NULL);
    cr_assert_eq(judge_one(p, &v, why, sizeof why, &nl), 0, "%s", why);
    cr_assert_eq(v, CD_VERDICT_PASS);
    cr_assert_eq(nl, 1);
    cr_assert_str_empty(why);
    /* a partial dump: same tensors, never a pass */
    snprintf(p, sizeof p, "%s/partial.h5", tmpdir);
    judge_dump(p, "aa", false, false, NULL);
    cr_assert_eq(judge_one(p, &v, why, sizeof why, &nl), CD_E_INCOMPLETE, "%s", why);
    cr_assert_eq(v, CD_VERDICT_INCOMPLETE);
    cr_assert(strstr(why, "partial (complete=0)"), "%s", why);
    /* run B without the layer: 0 layers compared, one probed tensor not compared */
    snprintf(p, sizeof p, "%s/empty_b.h5", tmpdir);
    judge_dump(p, "aa", true, true, NULL);
    cr_assert_eq(judge_one(p, &v, why, sizeof why, &nl), CD_E_INCOMPLETE, "%s", why);
    cr_assert_eq(nl, 0);
    cr_assert(strstr(why, "no layer compared") && strstr(why, "1 probed tensor(s) in one run only") &&
                  strstr(why, "run opencl stopped early"),
              "%s", why);
    /* the dump says a signal stopped it */
    snprintf(p, sizeof p, "%s/interrupted.h5", tmpdir);
    const char *const intr[] = {"interrupted", "the local check", NULL};
    judge_dump(p, "aa", true, false, intr);
    cr_assert_eq(judge_one(p, &v, why, sizeof why, &nl), CD_E_INCOMPLETE, "%s", why);
    cr_assert(strstr(why, "interrupted during the local check"), "%s", why);
    /* a run that failed: verdict error with the failure's exit code */
    snprintf(p, sizeof p, "%s/failed.h5", tmpdir);
    const char *const fail[] = {"error", "backend opencl unavailable", "error_code", "4", NULL};
    judge_dump(p, "aa", false, false, fail);
    cr_assert_eq(judge_one(p, &v, why, sizeof why, &nl), CD_E_BACKEND, "%s", why);
    cr_assert_eq(v, CD_VERDICT_ERROR);
    cr_assert(strstr(why, "backend opencl unavailable"), "%s", why);
}

Test(verdict, judge_refuses_dumps_of_different_models_unless_forced) {
    char pa[512], pb[512];
    snprintf(pa, sizeof pa, "%s/a.h5", tmpdir);
    snprintf(pb, sizeof pb, "%s/b.h5", tmpdir);
    judge_dump(pa, "1111", true, false, NULL);
    judge_dump(pb, "2222", true, false, NULL);
    cd_dump_reader *ra = NULL, *rb = NULL;
    cr_assert_eq(cd_dump_open(pa, &ra, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_dump_open(pb, &rb, &err), CD_OK, "%s", err.msg);
    cd_policy pol;
    cd_policy_init(&pol, CD_PREC_FP32);
    cd_judge_req q = {.ra = ra, .rb = rb, .run_a = "opencl", .run_b = "opencl", .policy = &pol};
    cd_judgement j;
    cd_error e = {0};
    cr_assert_eq(cd_judge(&q, &j, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "1111") && strstr(e.msg, "2222") && strstr(e.msg, "--force"), "%s", e.msg);
    cd_judgement_free(&j);
    q.force = true;
    cr_assert_eq(cd_judge(&q, &j, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(j.an.n_layers, 1);
    cd_judgement_free(&j);
    cd_policy_free(&pol);
    cd_dump_reader_close(ra);
    cd_dump_reader_close(rb);
}

Test(verdict, judge_takes_the_reference_role_from_the_registry) {
    /* runs named against the alphabet: the reference backend's run is A all the same */
    char p[512];
    snprintf(p, sizeof p, "%s/roles.h5", tmpdir);
    cd_graph *g = scale_model();
    float y[N] = {0};
    cd_dump_meta m = {"test_judge", "scale.nb", "aa", "test", "fp32", 1, 0};
    cd_dump *d = NULL;
    cr_assert_eq(cd_dump_create(p, &m, &d, &err), CD_OK, "%s", err.msg);
    cr_assert_eq(cd_dump_write_model(d, g, &err), CD_OK, "%s", err.msg);
    put_run(d, "aa_device", "opencl", 1, y);
    put_run(d, "zz_reference", "cpu", 1, y);
    cr_assert_eq(cd_dump_close(d, true, &err), CD_OK, "%s", err.msg);
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(p, &r, &err), CD_OK, "%s", err.msg);
    char a[64], b[64];
    cr_assert(cd_judge_pick_runs(r, a, b, sizeof a));
    cr_assert_str_eq(a, "zz_reference");
    cr_assert_str_eq(b, "aa_device");
    cr_assert(cd_backend_reference()->reference);
    cr_assert_str_eq(cd_backend_reference()->name, "cpu");
    cd_dump_reader_close(r);
    cd_graph_free(g);
}

Test(verdict, protocol_says_which_runs_are_made_where) {
    cd_protocol p;
    cd_verdict_protocol("cpu", "opencl", CD_PREC_FP32, true, &p);
    cr_assert_eq(p.kind, CD_PROTO_A_RECORDS);
    cr_assert(p.settle_b && !p.golden && p.local);
    cr_assert_str_eq(p.ref, "cpu");
    cr_assert_str_eq(p.run_b, "opencl");
    cr_assert_str_eq(p.run_local, "opencl_local");
    cd_verdict_protocol("cpu", "opencl", CD_PREC_FP16, true, &p);
    cr_assert_eq(p.kind, CD_PROTO_B_OWN);
    cr_assert(p.golden && !p.settle_b);
    cd_verdict_protocol("cpu", "paddle-lite-opencl", CD_PREC_FP32, true, &p);
    cr_assert_eq(p.kind, CD_PROTO_ENGINE_B);
    cr_assert(!p.settle_b);
    cd_verdict_protocol("cpu", "cpu", CD_PREC_FP32, false, &p);
    cr_assert_str_eq(p.run_b, "cpu_b");
    cr_assert(!p.local && !p.settle_b && !p.run_local[0]);
}
