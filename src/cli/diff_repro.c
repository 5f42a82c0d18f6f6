/* The repro pack of the differential command (docs/diagnosis.md): layer.nb with only the
 * failing op, its inputs from backend A, both outputs, the devices, and the command that
 * reproduces the finding. */
#include <errno.h>
#include <ctype.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/diff_priv.h"
#include "verdict/verdict.h"
#include "backends/mnn/mnn_extract.h"
#include "model/extract.h"
#include "model/mnn_reader.h"
#include "model/nb_writer.h"
#include "util/npy.h"

static void sh_quote(char *buf, size_t n, const char *s) {
    size_t o = strlen(buf);
    if (o + 3 >= n) return;
    bool plain = s[0] != 0;
    for (const char *p = s; *p; p++)
        if (!(isalnum((unsigned char)*p) || strchr("_-./=:,@+%", *p))) plain = false;
    if (plain) {
        snprintf(buf + o, n - o, "%s", s);
        return;
    }
    buf[o++] = '\'';
    for (const char *p = s; *p && o + 6 < n; p++) {
        if (*p == '\'') {
            memcpy(buf + o, "'\\''", 4);
            o += 4;
        } else
            buf[o++] = *p;
    }
    buf[o++] = '\'';
    buf[o] = 0;
}

static void cat_arg(char *buf, size_t n, const char *opt, const char *val) {
    size_t o = strlen(buf);
    snprintf(buf + o, n - o, " %s", opt);
    if (val) {
        o = strlen(buf);
        snprintf(buf + o, n - o, " ");
        sh_quote(buf, n, val);
    }
}

cd_status cd_diff_write_text(const char *path, const char *text, cd_error *err) {
    FILE *f = fopen(path, "w");
    if (!f) return cd_err(err, CD_E_IO, "cannot write '%s': %s", path, strerror(errno));
    fputs(text, f);
    if (fclose(f) != 0) return cd_err(err, CD_E_IO, "cannot write '%s': %s", path, strerror(errno));
    return CD_OK;
}

/* Writes in<k>.npy, the op's exact inputs, and names them in the command. */
static cd_status repro_inputs(const cd_graph *g, const cd_extracted *ex, cd_value *ins, const cd_shape *in_shapes,
                              const char *dir, char *cmd, size_t cmd_n, cd_error *err) {
    char path[1200];
    for (int k = 0; k < ex->n_inputs; k++) {
        char fn[32], spec[600];
        snprintf(fn, sizeof fn, "in%d.npy", k);
        snprintf(path, sizeof path, "%s/%s", dir, fn);
        ins[k].shape = in_shapes[k];
        cd_status st = cd_npy_write(path, &ins[k], err);
        if (st) return st;
        snprintf(spec, sizeof spec, "%s=%s", g->tensors[ex->src_inputs[k]].name, fn);
        cat_arg(cmd, cmd_n, "--input", spec);
    }
    return CD_OK;
}

/* The options of the finding's run that the command repeats. */
static void repro_options(const cd_cli_opts *o, char *cmd, size_t cmd_n) {
    cat_arg(cmd, cmd_n, "--layers", "all");
    char be[64];
    snprintf(be, sizeof be, "%s,%s", o->backends[0], o->backends[1]);
    cat_arg(cmd, cmd_n, "--backends", be);
    if (o->prec == CD_PREC_FP16) cat_arg(cmd, cmd_n, "--fp16", NULL);
    if (o->fp16_compute) cat_arg(cmd, cmd_n, "--fp16-compute", NULL);
    if (o->int8_mode && !strcmp(o->int8_mode, "dequant")) cat_arg(cmd, cmd_n, "--int8", "dequant");
    if (o->kernel_dir) {
        char abs_[PATH_MAX];
        cat_arg(cmd, cmd_n, "--kernel-dir", realpath(o->kernel_dir, abs_) ? abs_ : o->kernel_dir);
    }
    if (o->cl_lib) cat_arg(cmd, cmd_n, "--cl-lib", o->cl_lib);
    if (o->cl_platform) cat_arg(cmd, cmd_n, "--cl-platform", o->cl_platform);
    if (o->cl_device) cat_arg(cmd, cmd_n, "--cl-device", o->cl_device);
    for (int i = 0; i < o->n_backend_kv; i++) cat_arg(cmd, cmd_n, "--backend-opt", o->backend_kv[i]);
    if (o->tolerance_file) {
        char abs_[PATH_MAX];
        cat_arg(cmd, cmd_n, "--tolerance",
                !strcmp(o->tolerance_file, "auto")      ? "auto"
                    : realpath(o->tolerance_file, abs_) ? abs_
                                                        : o->tolerance_file);
    }
    char num[64];
    if (o->atol >= 0) {
        snprintf(num, sizeof num, "%.17g", o->atol);
        cat_arg(cmd, cmd_n, "--atol", num);
    }
    if (o->rtol >= 0) {
        snprintf(num, sizeof num, "%.17g", o->rtol);
        cat_arg(cmd, cmd_n, "--rtol", num);
    }
    if (o->min_cos >= 0) {
        snprintf(num, sizeof num, "%.17g", o->min_cos);
        cat_arg(cmd, cmd_n, "--min-cos", num);
    }
    if (o->max_fail_fraction >= 0) {
        snprintf(num, sizeof num, "%.17g", o->max_fail_fraction);
        cat_arg(cmd, cmd_n, "--max-fail-fraction", num);
    }
    cat_arg(cmd, cmd_n, "--no-repro", NULL);
    cat_arg(cmd, cmd_n, "--out", "repro-out");
}

/* Both outputs of the layer as the full run saw them. */
static cd_status repro_outputs(const cd_dump_reader *r, const char *run_a, const char *run_b, const cd_layer_cmp *l,
                               const char *dir, cd_error *err) {
    char path[1200];
    float *fa = NULL, *fb = NULL;
    int64_t n1 = 0, n2 = 0;
    cd_status st = cd_dump_read_f32(r, run_a, l->dataset_a, &fa, &n1, err);
    if (!st) st = cd_dump_read_f32(r, run_b, l->dataset_b, &fb, &n2, err);
    if (!st) {
        cd_value va = {.dtype = CD_F32, .shape = l->shape, .data = fa, .nbytes = (size_t)n1 * 4};
        cd_value vb = {.dtype = CD_F32, .shape = l->shape, .data = fb, .nbytes = (size_t)n2 * 4};
        snprintf(path, sizeof path, "%s/out_%s.npy", dir, run_a);
        st = cd_npy_write(path, &va, err);
        snprintf(path, sizeof path, "%s/out_%s.npy", dir, run_b);
        if (!st) st = cd_npy_write(path, &vb, err);
    }
    free(fa);
    free(fb);
    return st;
}

/* command.txt, README.md and device.txt. */
static cd_status repro_texts(const char *layer_file, const char *run_a, const char *run_b, const char *run_in,
                             const cd_layer_cmp *l, const cd_analysis *an, const cd_report_env *env, const char *dir,
                             const char *cmd, cd_error *err) {
    char inh[160];
    snprintf(inh, sizeof inh, "; on %s's inputs this layer is within tolerance, so the pack may pass", run_in);
    char path[1200], readme[8192];
    cd_status st;
    snprintf(path, sizeof path, "%s/command.txt", dir);
    {
        char line[4200];
        snprintf(line, sizeof line, "%s\n", cmd);
        if ((st = cd_diff_write_text(path, line, err))) return st;
    }
    char sh[96];
    snprintf(readme, sizeof readme,
             "# cldiff repro pack: %s (%s, op #%d of %s)\n\n"
             "Finding: layer `%s` is out of tolerance (%s error%s): max |a-b| = %.6g, cosine = %.9f, "
             "%lld of %lld elements out (%s vs %s, %s).\n\n"
             "Reproduce (from this folder):\n\n    %s\n\n"
             "Expected: exit 1 and `%s` named as the first divergence in repro-out/summary.json.\n\n"
             "Files:\n- `%s`: the op alone (params included), inputs declared as model inputs\n"
             "- `in<k>.npy`: its exact inputs as backend %s computed them (float32)\n"
             "- `out_%s.npy`, `out_%s.npy`: the layer's output on both backends in the full run, shape %s\n"
             "- `command.txt`: the command above\n\n"
             "Environment:\n- A: %s: %s %s\n- B: %s: %s %s (%s)\n- model: %s (sha256 %s)\n- cldiff %s: `%s`\n",
             l->layer, l->op_type, l->op_index, env->model_path, l->layer,
             !strcmp(an->first_kind, "local")           ? "local"
                 : !strcmp(an->first_kind, "inherited") ? "inherited"
                                                        : "unclassified",
             !strcmp(an->first_kind, "inherited") ? inh : "", l->m.max_abs, l->m.cosine, (long long)l->m.fail_count,
             (long long)l->m.n, run_a, run_b, env->precision, cmd, l->layer, layer_file, run_in, run_a, run_b,
             cd_shape_str(&l->shape, sh, sizeof sh), env->backend_a, env->device_a ? env->device_a : "",
             env->driver_a ? env->driver_a : "", env->backend_b, env->device_b ? env->device_b : "",
             env->driver_b ? env->driver_b : "", env->variant_b ? env->variant_b : "", env->model_path,
             env->model_sha256, env->tool_version, env->command_line ? env->command_line : "");
    snprintf(path, sizeof path, "%s/README.md", dir);
    if ((st = cd_diff_write_text(path, readme, err))) return st;
    snprintf(path, sizeof path, "%s/device.txt", dir);
    snprintf(readme, sizeof readme,
             "A %s\ndevice_a %s\ndriver_a %s\nB %s\ndevice_b %s\ndriver_b %s\nvariant_b %s\nprecision %s\n",
             env->backend_a, env->device_a ? env->device_a : "", env->driver_a ? env->driver_a : "", env->backend_b,
             env->device_b ? env->device_b : "", env->driver_b ? env->driver_b : "",
             env->variant_b ? env->variant_b : "", env->precision);
    return cd_diff_write_text(path, readme, err);
}

/* layer.mnn: the op writing the layer's first output, cut out of the user's .mnn by MNN (the
 * SDK of the run's MNN engine, else the default one), with the run's input shapes. */
static cd_status mnn_layer(cd_session *s, const cd_extracted *ex, const char *dir, const char *path, cd_error *err) {
    const cd_graph *g = s->g;
    const cd_cli_opts *o = s->o;
    const char *sdk = NULL;
    for (int i = 0; i < o->n_backend_kv && !sdk; i++)
        if (!strncmp(o->backend_kv[i], "mnn-", 4) && strstr(o->backend_kv[i], ":sdk=") &&
            strncmp(o->backend_kv[i], "mnn-arm:", 8))
            sdk = strstr(o->backend_kv[i], ":sdk=") + 5;
    char(*shapes)[600] = calloc((size_t)g->n_inputs + 1, sizeof *shapes);
    const char **sv = calloc((size_t)g->n_inputs + 1, sizeof *sv);
    cd_status st = CD_OK;
    if (!shapes || !sv) st = cd_err(err, CD_E_NOMEM, "out of memory");
    for (int i = 0; !st && i < g->n_inputs; i++) {
        int t = g->inputs[i];
        const cd_shape *sh = &s->plan.meta[t].shape;
        size_t n = (size_t)snprintf(shapes[i], sizeof shapes[i], "%s=", g->tensors[t].name);
        for (int k = 0; k < sh->rank && n < sizeof shapes[i]; k++)
            n += (size_t)snprintf(shapes[i] + n, sizeof shapes[i] - n, "%s%lld", k ? "," : "", (long long)sh->d[k]);
        sv[i] = shapes[i];
    }
    char logp[1200];
    snprintf(logp, sizeof logp, "%s/extract.log", dir);
    if (!st)
        st = cd_mnn_extract_op(sdk, o->model, g->tensors[ex->src_outputs[0]].name, sv, g->n_inputs, path, logp, err);
    if (!st) remove(logp);
    free(shapes);
    free(sv);
    return st;
}

/* The pack of layer l: the op alone, its inputs as run_in computed them (force: the record of
 * run_in, for inputs the dump lacks), both runs' outputs. */
static cd_status write_repro(cd_session *s, const cd_dump_reader *r, const cd_forcing *force, const char *run_in,
                             const char *run_a, const char *run_b, const cd_layer_cmp *l, const cd_analysis *an,
                             const cd_report_env *env, const char *dir, char *cmd_out, size_t cmd_n, cd_error *err) {
    const cd_graph *g = s->g;
    cd_status st = cd_make_dirs(dir, err);
    if (st) return st;
    cd_extracted ex;
    st = cd_graph_extract_op(g, l->op_index, s->plan.meta, &ex, err);
    if (st) return st;
    cd_value *ins = calloc((size_t)ex.n_inputs + 1, sizeof *ins);
    cd_shape *in_shapes = calloc((size_t)ex.n_inputs + 1, sizeof *in_shapes);
    char path[1200], note[256] = "", cmd[4096] = "";
    if (!ins || !in_shapes) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    /* a .mnn model's layer is cut out by MNN itself, so MNN's engines run it; a .nb's by cldiff */
    const char *layer_file = cd_mnn_graph(g) ? "layer.mnn" : "layer.nb";
    snprintf(path, sizeof path, "%s/%s", dir, layer_file);
    if (cd_mnn_graph(g))
        st = mnn_layer(s, &ex, dir, path, err);
    else
        st = cd_nb_write(ex.g, path, err);
    if (st) goto done;
    if ((st = cd_local_load_inputs(g, &s->plan, r, run_in, force, &ex, ins, in_shapes, note, sizeof note, err)))
        goto done;
    if (note[0]) {
        st = cd_err(err, CD_E_USAGE, "repro pack of %s: %s", l->layer, note);
        goto done;
    }
    snprintf(cmd, sizeof cmd, "cldiff %s", layer_file);
    if ((st = repro_inputs(g, &ex, ins, in_shapes, dir, cmd, sizeof cmd, err))) goto done;
    repro_options(s->o, cmd, sizeof cmd);
    if ((st = repro_outputs(r, run_a, run_b, l, dir, err))) goto done;
    if ((st = repro_texts(layer_file, run_a, run_b, run_in, l, an, env, dir, cmd, err))) goto done;
    snprintf(cmd_out, cmd_n, "%s", cmd);
done:
    for (int k = 0; ins && k < ex.n_inputs; k++) cd_value_release(&ins[k]);
    free(ins);
    free(in_shapes);
    cd_graph_free(ex.g);
    return st;
}

/* the repro pack: of the faulty layer; of the layer that made NaN/Inf; on request, of the
 * first divergence */
void cd_diff_repro_pack(diff_run *d) {
    const cd_cli_opts *o = d->o;
    cd_analysis *an = &d->an;
    int repro_at = an->kind == CD_KIND_FAULT ? an->first_fault
        : an->nonfinite_origin >= 0          ? an->nonfinite_origin
        : o->repro_dir                       ? an->first_fail
                                             : -1;
    if (repro_at < 0 || d->crashed || o->no_repro) return;
    char dir[1100];
    if (o->repro_dir)
        snprintf(dir, sizeof dir, "%s", o->repro_dir);
    else
        snprintf(dir, sizeof dir, "%s/repro", o->out_dir);
    cd_error pe = {0};
    char cmd[4096] = "";
    /* the inputs the local check judged the layer on: A's, or B's own in fp16 (d->rec is the
     * record of that run; an engine's record is not kept) */
    /* the reports name the pack where it will be: --out, not the folder the run writes into */
    char shown[1100];
    if (o->repro_dir || !o->out_final)
        snprintf(shown, sizeof shown, "%s", dir);
    else
        snprintf(shown, sizeof shown, "%s/repro", o->out_final);
    if (write_repro(&d->s, d->r, d->engine_b ? NULL : d->rec, d->own_inputs ? d->run_b : d->run_a, d->run_a, d->run_b,
                    &an->layers[repro_at], an, &d->env, dir, cmd, sizeof cmd, &pe) == CD_OK) {
        snprintf(an->repro_dir, sizeof an->repro_dir, "%s", shown);
        snprintf(an->repro_cmd, sizeof an->repro_cmd, "cd %s && %s", shown, cmd);
    } else if (!o->quiet)
        fprintf(stderr, "cldiff: warning: repro pack not written: %s\n", pe.msg);
}
