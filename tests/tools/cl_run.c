/* cl_run: a minimal driver of the OpenCL runtime for the fault tests: load a model, plan it,
 * run it on OpenCL in the isolating child (or in process), dump every layer, and record a
 * crash on the run group the way `cldiff run` does (attributes crashed, crash_*).
 *
 *   cl_run [--fp16] [--fp16-compute] [--cl-lib P] [--cl-platform P] [--cl-device D]
 *          [--kernel-dir D] [--cache-dir D] [--no-cache] [--timeout S] [--no-isolate]
 *          [--also-cpu] --out FILE.h5 MODEL.nb
 *   cl_run doctor [doctor options]      (same as `cldiff doctor`)
 * Exit code: the cd_status of the run (0 ok, 4 no OpenCL, 5 crash/hang, ...). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "engine/isolate.h"
#include "model/nb_reader.h"
#include "probes/sink.h"
#include "store/dump.h"

static int fail(const cd_error *e) {
    fprintf(stderr, "cl_run: %s\n", e->msg);
    return e->code ? (int)e->code : 9;
}

/* Deterministic inputs in [-1, 1) (xorshift), integers as small indices. */
static void fill_input(cd_value *v, uint64_t seed) {
    uint64_t s = seed * 0x9E3779B97F4A7C15ull + 1;
    int64_t n = cd_value_numel(v);
    for (int64_t i = 0; i < n; i++) {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        double u = (double)(s >> 11) / 9007199254740992.0;
        if (v->dtype == CD_F32 || v->dtype == CD_F16 || v->dtype == CD_F64) cd_value_set(v, i, 2.0 * u - 1.0);
        else cd_value_set(v, i, 0);
    }
}

/* Stores the crash description on /runs/<run> (the dump keeps every layer before it). */
static cd_status record_crash(cd_dump *d, const char *run, const cd_crash_info *c, const char *msg, cd_error *err) {
    char path[128];
    snprintf(path, sizeof path, "/runs/%s", run);
    cd_status st = cd_dump_set_attr_i64(d, path, "crashed", 1, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "crash_message", msg, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "crash_signal", c->timed_out ? "timeout" : c->signal_name, err);
    if (!st) st = cd_dump_set_attr_i64(d, path, "crash_op_index", c->op_index, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "crash_layer", c->layer, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "crash_kernel", c->kernel, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "crash_variant", c->variant, err);
    if (!st) st = cd_dump_set_attr_str(d, path, "crash_phase", c->phase, err);
    return st;
}

int main(int argc, char **argv) {
    if (argc > 1 && !strcmp(argv[1], "doctor")) return cd_cmd_doctor(argc - 1, argv + 1);
    cd_backend_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.threads = 1;
    const char *out = NULL, *model = NULL;
    double timeout = 0;
    bool isolate = true, also_cpu = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--fp16")) bo.prec = CD_PREC_FP16;
        else if (!strcmp(a, "--fp16-compute")) bo.fp16_compute = true;
        else if (!strcmp(a, "--no-cache")) bo.no_cache = true;
        else if (!strcmp(a, "--no-isolate")) isolate = false;
        else if (!strcmp(a, "--also-cpu")) also_cpu = true;
        else if (v && !strcmp(a, "--cl-lib")) { bo.cl_lib = v; i++; }
        else if (v && !strcmp(a, "--cl-platform")) { bo.cl_platform = v; i++; }
        else if (v && !strcmp(a, "--cl-device")) { bo.cl_device = v; i++; }
        else if (v && !strcmp(a, "--kernel-dir")) { bo.kernel_dir = v; i++; }
        else if (v && !strcmp(a, "--cache-dir")) { bo.cache_dir = v; i++; }
        else if (v && !strcmp(a, "--timeout")) { timeout = atof(v); i++; }
        else if (v && !strcmp(a, "--out")) { out = v; i++; }
        else if (a[0] != '-' && !model) model = a;
        else { fprintf(stderr, "cl_run: bad argument '%s'\n", a); return 2; }
    }
    if (!out || !model) { fprintf(stderr, "usage: cl_run [options] --out FILE.h5 MODEL.nb\n"); return 2; }
    cd_error err;
    cd_err_clear(&err);
    cd_graph *g;
    if (cd_nb_load(model, &g, &err)) return fail(&err);
    cd_shape shapes[16];
    char notice[512];
    if (g->n_inputs > 16) { fprintf(stderr, "cl_run: too many inputs\n"); return 2; }
    if (cd_resolve_input_shapes(g, NULL, 0, shapes, notice, sizeof notice, &err)) return fail(&err);
    cd_plan plan;
    if (cd_plan_build(g, shapes, bo.prec, &plan, &err)) return fail(&err);
    cd_value inputs[16];
    memset(inputs, 0, sizeof inputs);
    for (int k = 0; k < g->n_inputs; k++) {
        const cd_value *m = &plan.meta[g->inputs[k]];
        inputs[k].dtype = m->dtype == CD_F16 ? CD_F32 : m->dtype;
        inputs[k].shape = m->shape;
        if (cd_value_alloc(&inputs[k], &err)) return fail(&err);
        fill_input(&inputs[k], (uint64_t)k + 1);
    }
    cd_dump_meta meta = {.command_line = "cl_run", .model_path = model, .precision = bo.prec ? "fp16" : "fp32", .seed = 1};
    cd_dump *d;
    if (cd_dump_create(out, &meta, &d, &err)) return fail(&err);
    if (cd_dump_write_model(d, g, &err)) { cd_dump_discard(d); return fail(&err); }
    bool *mask = calloc((size_t)g->n_ops, 1);
    for (int i = 0; i < g->n_ops; i++) mask[i] = true;
    cd_exec_opts xo = {.probe_mask = mask};
    cd_status result = CD_OK;
    cd_error run_err;
    cd_err_clear(&run_err);
    if (also_cpu) {
        cd_backend *cb;
        cd_run_info ri = {.backend = "cpu", .precision = meta.precision, .threads = 1};
        cd_dump_sink *s;
        if (cd_cpu_backend_open(&bo, &cb, &err) || cd_dump_begin_run(d, "cpu", &ri, &err) ||
            cd_dump_sink_new(d, "cpu", g, CD_SINK_FULL, &s, &err)) { cd_dump_discard(d); return fail(&err); }
        cd_status st = cd_execute(&plan, cb, inputs, &xo, cd_dump_sink_probe(s), &err);
        cd_backend_close(cb);
        if (!st) st = cd_dump_sink_finish(s, &err);
        cd_dump_sink_free(s);
        if (st || cd_dump_end_run(d, "cpu", 0, true, &err)) { cd_dump_discard(d); return fail(&err); }
    }
    cd_run_info ri = {.backend = "opencl", .precision = meta.precision, .threads = 1, .library_path = bo.cl_lib};
    cd_dump_sink *s;
    if (cd_dump_begin_run(d, "opencl", &ri, &err) || cd_dump_sink_new(d, "opencl", g, CD_SINK_FULL, &s, &err)) {
        cd_dump_discard(d);
        return fail(&err);
    }
    cd_isolated_run iso;
    memset(&iso, 0, sizeof iso);
    if (isolate) {
        result = cd_run_isolated(&plan, &bo, inputs, &xo, cd_dump_sink_probe(s), timeout, &iso, &run_err);
    } else {
        cd_backend *b;
        result = cd_opencl_backend_open(&bo, &b, &run_err);
        if (!result) {
            result = cd_execute(&plan, b, inputs, &xo, cd_dump_sink_probe(s), &run_err);
            if (b->vt->describe) b->vt->describe(b, iso.device, sizeof iso.device, iso.driver, sizeof iso.driver);
            cd_backend_close(b);
        }
    }
    char path[64] = "/runs/opencl";
    cd_status st = cd_dump_sink_finish(s, &err);
    cd_dump_sink_free(s);
    if (!st && iso.device[0]) st = cd_dump_set_attr_str(d, path, "device", iso.device, &err);
    if (!st && iso.driver[0]) st = cd_dump_set_attr_str(d, path, "driver", iso.driver, &err);
    if (!st && result == CD_E_CRASH) st = record_crash(d, "opencl", &iso.crash, run_err.msg, &err);
    if (!st) st = cd_dump_end_run(d, "opencl", iso.crash.elapsed_s * 1e3, result == CD_OK, &err);
    if (st) { cd_dump_discard(d); return fail(&err); }
    if (cd_dump_close(d, result == CD_OK, &err)) return fail(&err);
    for (int k = 0; k < g->n_inputs; k++) cd_value_release(&inputs[k]);
    free(mask);
    cd_plan_free(&plan);
    cd_graph_free(g);
    if (result) return fail(&run_err);
    printf("cl_run: ok: %s on %s\n", iso.device, iso.driver);
    return 0;
}
