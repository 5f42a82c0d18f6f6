/* `cldiff export MODEL.nb -o DIR [--dequant] [--keep-kernel-attrs]`: writes the model's
 * program and parameters as a Paddle inference model in the combined format
 * (DIR/model.pdmodel + DIR/model.pdiparams), which Paddle-Lite's `opt` / Python `Opt`
 * accepts (set_model_file / set_param_file); docs/paddle-lite-opencl.md.
 * Exit: 0 ok, 2 usage, 3 bad model, 6 cannot write, 8 cannot be exported. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "engine/executor.h"
#include "cli/cli.h"
#include "engine/params.h"
#include "engine/plan.h"
#include "model/nb_reader.h"
#include "backends/paddlelite/pd_export.h"

static void usage(FILE *f) {
    fprintf(f,
            "usage: cldiff export MODEL.nb -o DIR [--dequant] [--keep-kernel-attrs] [--shape NAME=DIMS]\n"
            "  Writes DIR/model.pdmodel (framework.proto ProgramDesc) and DIR/model.pdiparams\n"
            "  (combined parameters), the input of Paddle-Lite's opt:\n"
            "    paddle_lite_opt --model_file=DIR/model.pdmodel --param_file=DIR/model.pdiparams ...\n"
            "  Variables the .nb program writes more than once get the names <name>.cdv<k>;\n"
            "  io_copy/layout ops are left out (their output takes their input's name).\n"
            "  -o, --out DIR         output folder (created if missing)\n"
            "  --dequant             int8/int16 weights become float32 (scales of the consuming op),\n"
            "                        fp16 weights float32, calib ops pass-throughs, int8 attributes\n"
            "                        (enable_int8, <Slot><k>_scale, ...) dropped: the float program\n"
            "  --int8-marker         int8 model kept int8 (no --dequant): add an unused\n"
            "                        quantize_linear/dequantize_linear pair so that opt adds its int8\n"
            "                        places (it does so only for programs with quantize ops)\n"
            "  --keep-kernel-attrs   keep __@kernel_type_attr@__ (default: dropped, opt picks kernels)\n"
            "  --keep-fused-act      keep conv fusions Paddle-Lite's x86 conv lacks (activations\n"
            "                        hard_sigmoid/sigmoid/tanh/abs; SecondInput + fuse_elementwise_op_type);\n"
            "                        default: conv, then separate activation and elementwise ops\n"
            "  --fetch-all           add a fetch op for every float output of every op (after the\n"
            "                        model's own outputs) and list them in DIR/fetch.tsv: col,\n"
            "                        op index, op name, op type, tensor name (layer-by-layer checks)\n"
            "  --shape NAME=DIMS     input shape for the shape inference below (repeatable); default:\n"
            "                        the declared shape, dynamic dims 1 (batch) and 64 (others)\n"
            "  --declared-shapes     declare every variable with the .nb's declared shape (before\n"
            "                        2026-11: the default); see below\n"
            "  Activations are declared with the shapes of cldiff's shape inference, a dim -1 where\n"
            "  it changes with the input's dynamic dims (second inference: batch +1, others +32):\n"
            "  a .nb declares one shape per reused name, often another variable's (ppocr cls: a\n"
            "  reshape2 output [1,200] declared [-1,8,-1,-1]), and Opt decides OpenCL layouts and\n"
            "  folds constants from declared shapes (docs/paddle-lite-findings.md)\n"
            "  --help                this text\n");
}

/* one line, never the whole usage text */
static int fail_usage(const char *msg, const char *arg) {
    fprintf(stderr, "cldiff export: %s%s (cldiff export --help lists every option)\n", msg, arg ? arg : "");
    return 2;
}

/* mkdir -p */
static int make_dirs(const char *dir) {
    char *p = cd_strdup(dir);
    if (!p) return ENOMEM;
    for (char *c = p + 1; *c; c++) {
        if (*c != '/') continue;
        *c = 0;
        if (mkdir(p, 0777) != 0 && errno != EEXIST) {
            int e = errno;
            free(p);
            return e;
        }
        *c = '/';
    }
    int e = mkdir(p, 0777) != 0 && errno != EEXIST ? errno : 0;
    free(p);
    return e;
}

static bool has_quantized_params(const cd_graph *g) {
    for (int t = 0; t < g->n_tensors; t++)
        if (g->tensors[t].persistable && (g->tensors[t].dtype == CD_I8 || g->tensors[t].dtype == CD_I16)) return true;
    return false;
}

/* Every float, non-parameter output of every op except XShape and constants; DIR/fetch.tsv
 * lists them. A constant is the output of an op that reads only parameters and constants
 * (ppocr_v2.0_cls: reshape2 of a conv bias): Opt folds such ops into parameters for OpenCL
 * (ssd_boxes_calc_offline_pass), and a fetch of the folded parameter gets a layout op that
 * reads an image nobody wrote: Paddle-Lite's OpenCL run then crashes (SIGSEGV in
 * LayoutComputeImageDefaultToBufferChw::Run, docs/paddle-lite-findings.md). */
static cd_status write_fetch_list(const cd_graph *g, const cd_pd_export_opts *o, const char *dir, int *ids, int *n,
                                  cd_error *err) {
    cd_dtype *dt = cd_calloc((size_t)g->n_tensors + 1, sizeof *dt, err);
    bool *cst = cd_calloc((size_t)g->n_tensors + 1, sizeof *cst, err);
    if (!dt || !cst || cd_pd_export_dtypes(g, o, dt, err)) {
        free(dt);
        free(cst);
        return err->code;
    }
    cd_pd_export_constants(g, g->n_ops, cst);
    char path[4096];
    snprintf(path, sizeof path, "%s/fetch.tsv", dir);
    FILE *f = fopen(path, "w");
    if (!f) {
        free(dt);
        free(cst);
        return cd_err(err, CD_E_IO, "cannot create '%s': %s", path, strerror(errno));
    }
    fprintf(f, "col\top_index\top_name\top_type\ttensor\n");
    *n = 0;
    for (int oi = 0; oi < g->n_ops; oi++) {
        const cd_op *op = &g->ops[oi];
        if (cd_pd_export_skips_fetch(op->type)) continue;
        for (int s = 0; s < op->n_out; s++) {
            if (cd_exec_training_only(op->type, op->out[s].name)) continue;
            for (int k = 0; k < op->out[s].n; k++) {
                int t = op->out[s].ids[k];
                if (t < 0 || cst[t]) continue;
                if (dt[t] != CD_F32 && dt[t] != CD_F16) continue;
                fprintf(f, "%d\t%d\t%s\t%s\t%s\n", g->n_outputs + *n, oi, op->name, op->type, g->tensors[t].name);
                ids[(*n)++] = t;
            }
        }
    }
    free(dt);
    free(cst);
    if (fclose(f) != 0) return cd_err(err, CD_E_IO, "cannot write '%s'", path);
    return CD_OK;
}

int cd_cmd_export(int argc, char **argv) {
    const char *model = NULL, *dir = NULL;
    cd_pd_export_opts o = {0};
    bool dequant = false, fetch_all = false, declared_shapes = false;
    int *extra = NULL, n_shapes = 0;
    const char *shapes[64];
    cd_shape *act_shape = NULL;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "-o") || !strcmp(a, "--out")) {
            if (i + 1 >= argc) return fail_usage("missing value for ", a);
            dir = argv[++i];
        } else if (!strncmp(a, "--out=", 6)) {
            dir = a + 6;
        } else if (!strcmp(a, "--dequant")) {
            dequant = true;
        } else if (!strcmp(a, "--fetch-all")) {
            fetch_all = true;
        } else if (!strcmp(a, "--int8-marker")) {
            o.int8_marker = true;
        } else if (!strcmp(a, "--keep-fused-act")) {
            o.keep_fused_act = true;
        } else if (!strcmp(a, "--keep-kernel-attrs")) {
            o.keep_kernel_attr = true;
        } else if (!strcmp(a, "--declared-shapes")) {
            declared_shapes = true;
        } else if (!strcmp(a, "--shape")) {
            if (i + 1 >= argc) return fail_usage("missing value for ", a);
            if (n_shapes == 64) return fail_usage("more than 64 --shape options at ", a);
            shapes[n_shapes++] = argv[++i];
        } else if (!strncmp(a, "--shape=", 8)) {
            if (n_shapes == 64) return fail_usage("more than 64 --shape options at ", a);
            shapes[n_shapes++] = a + 8;
        } else if (a[0] == '-' && a[1]) {
            static const char *const opts[] = {"-o",
                                               "--out",
                                               "--dequant",
                                               "--fetch-all",
                                               "--int8-marker",
                                               "--keep-fused-act",
                                               "--keep-kernel-attrs",
                                               "--shape",
                                               "--declared-shapes",
                                               "--help",
                                               "-h"};
            return cd_cli_unknown_option("export", a, opts, (int)(sizeof opts / sizeof *opts));
        } else if (!model) {
            model = a;
        } else {
            return fail_usage("unexpected argument ", a);
        }
    }
    if (!model) return fail_usage("expected a model file", NULL);
    if (!dir) return fail_usage("expected -o DIR", NULL);
    cd_error err = {0};
    cd_graph *g = NULL;
    if (cd_nb_load(model, &g, &err)) return cd_cli_fail(&err);
    int e = make_dirs(dir);
    if (e) {
        cd_err(&err, CD_E_IO, "cannot create '%s': %s", dir, strerror(e));
        cd_graph_free(g);
        return cd_cli_fail(&err);
    }
    cd_value *meta = NULL;
    float **f32 = NULL;
    if (dequant) {
        meta = cd_calloc((size_t)g->n_tensors + 1, sizeof *meta, &err);
        f32 = cd_calloc((size_t)g->n_tensors + 1, sizeof *f32, &err);
        int64_t bytes;
        bool dq;
        if (!meta || !f32 || cd_params_prepare(g, CD_PREC_FP32, meta, &bytes, &dq, &err)) goto fail;
        for (int t = 0; t < g->n_tensors; t++)
            if (g->tensors[t].persistable && g->tensors[t].dtype != CD_F32 && meta[t].dtype == CD_F32 && meta[t].data)
                f32[t] = meta[t].data;
        o.param_f32 = f32;
        o.strip_quant = true;
    } else if (has_quantized_params(g)) {
        fprintf(stderr,
                "cldiff export: note: %s holds int8/int16 weights, exported as stored with the int8 "
                "attributes of their ops (the form opt itself wrote); --dequant exports the float program\n",
                model);
    }
    if (!declared_shapes) {
        cd_shape *given = NULL;
        if (n_shapes) {
            given = cd_calloc((size_t)g->n_inputs + 1, sizeof *given, &err);
            if (!given || cd_resolve_input_shapes(g, shapes, n_shapes, given, NULL, 0, &err)) {
                free(given);
                goto fail;
            }
        }
        char note[512];
        e = cd_pd_export_infer_shapes(g, given, &act_shape, note, sizeof note, &err);
        free(given);
        if (e) goto fail;
        if (note[0]) fprintf(stderr, "cldiff export: note: %s\n", note);
        o.act_shape = act_shape;
    }
    if (fetch_all) {
        extra = cd_calloc((size_t)g->n_tensors + 1, sizeof *extra, &err);
        if (!extra || write_fetch_list(g, &o, dir, extra, &o.n_extra_fetch, &err)) goto fail;
        o.extra_fetch = extra;
    }
    cd_pd_export_info info;
    if (cd_pd_export(g, &o, dir, &info, &err)) goto fail;
    printf("exported %s -> %s/model.pdmodel (%zu bytes: %d ops, %d vars, %d renamed), %s/model.pdiparams (%zu bytes: "
           "%d params)%s\n",
           model, dir, info.program_bytes, info.n_ops, info.n_vars, info.n_renamed, dir, info.params_bytes,
           info.n_params, dequant ? ", dequantized" : "");
    printf("  activation shapes: %s\n",
           act_shape ? "cldiff's shape inference (dynamic dims -1)" : "as the .nb declares them");
    if (info.n_unfused)
        printf("  %d convs with fused activation/SecondInput exported as separate ops (--keep-fused-act keeps them)\n",
               info.n_unfused);
    if (info.n_dropped_ops)
        printf("  %d io_copy/layout%s ops left out as pass-throughs\n", info.n_dropped_ops, dequant ? "/calib" : "");
    for (int i = 0; i < g->n_inputs; i++) {
        char b[160];
        const cd_tensor *t = &g->tensors[g->inputs[i]];
        printf("  input %d: %s %s %s\n", i, t->name, cd_dtype_name(t->dtype), cd_shape_str(&t->shape, b, sizeof b));
    }
    for (int i = 0; i < g->n_outputs; i++) printf("  output %d: %s\n", i, g->tensors[g->outputs[i]].name);
    if (o.n_extra_fetch) printf("  %d extra fetch ops: %s/fetch.tsv\n", o.n_extra_fetch, dir);
    if (meta)
        for (int t = 0; t < g->n_tensors; t++) cd_value_release(&meta[t]);
    free(meta);
    free(f32);
    free(extra);
    free(act_shape);
    cd_graph_free(g);
    return 0;
fail:
    free(extra);
    free(act_shape);
    if (meta)
        for (int t = 0; t < g->n_tensors; t++) cd_value_release(&meta[t]);
    free(meta);
    free(f32);
    cd_graph_free(g);
    return cd_cli_fail(&err);
}
