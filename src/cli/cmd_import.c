/* `cldiff import DIR --manifest probed.manifest.json -o dump.h5 [--run NAME] [--model M.nb]`:
 * turns what a Paddle-Lite runtime saved for an instrumented model into a dump run that
 * `cldiff compare` and `cldiff report` take (docs/paddle-lite.md).
 *
 * DIR holds either
 *   out_<col>.npy for every fetch column of the manifest (the probes/paddle-lite runner,
 *     scripts/pl_bridge.py), or
 *   Paddle-Lite's precision-profiler tensor files (a build with LITE_WITH_PRECISION_PROFILE
 *     writes, for every op output, "<tensor name, '/' -> '_'>.txt" with one "[i] value" line
 *     per element, value printed with %f, into /storage/emulated/0/PaddleLite_<date>/ beside
 *     precision_summary.log; lite/core/profile/precision_profiler.h). A file is rewritten
 *     each time its name is written, so run the instrumented model (its probed names are
 *     unique) and expect %f's 6 decimals.
 * Every probed tensor of the manifest must be there with its shape; anything else is exit 3
 * naming the file and the tensor. */
#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/session.h"
#include "model/nb_reader.h"
#include "probes/instrument.h"
#include "util/npy.h"
#include "util/sha256.h"

/* The scale an int8 output of op stands for: calib's `scale`, an int8_out conv's Output0_scale,
 * fc's Out0_scale (as the engines keep them: backends/paddlelite, cd_pl_collect); 0: none. */
static double int8_scale(const cd_graph *g, int op_index) {
    if (!g || op_index < 0 || op_index >= g->n_ops) return 0;
    const cd_op *op = &g->ops[op_index];
    const double *sv = NULL;
    if (!strcmp(op->type, "calib")) return cd_attr_float(op, "scale", 0);
    if (cd_attr_floats(op, "Output0_scale", &sv) >= 1 || cd_attr_floats(op, "Out0_scale", &sv) >= 1) return sv[0];
    return 0;
}

/* Paddle-Lite hands int8 activations over as their integers; cldiff keeps every tensor as the
 * value it stands for, q * scale, so that compare sets them against float runs (an int8 layer
 * stored raw differs from everything). false: no scale known (v left as it is). */
static bool int8_to_values(const cd_graph *g, int op_index, cd_value *v, cd_error *err, cd_status *st) {
    double sc = int8_scale(g, op_index);
    if (v->dtype != CD_I8 || !(sc > 0)) return false;
    cd_value fv = {.dtype = CD_F32, .shape = v->shape};
    if ((*st = cd_value_alloc(&fv, err))) return false;
    const int8_t *q = v->data;
    float *o = fv.data, fs = (float)sc;
    for (int64_t e = 0; e < cd_value_numel(v); e++) o[e] = (float)q[e] * fs;
    cd_value_release(v);
    *v = fv;
    return true;
}

static bool shape_known(const cd_shape *s) {
    for (int i = 0; i < s->rank; i++)
        if (s->d[i] < 0) return false;
    return true;
}

/* Profiler file of a tensor: '/' replaced by '_' (generate_valid_tensor_name). */
static void profiler_path(const char *dir, const char *tensor, char *out, size_t n) {
    char nm[512];
    snprintf(nm, sizeof nm, "%s", tensor);
    for (char *p = nm; *p; p++)
        if (*p == '/') *p = '_';
    snprintf(out, n, "%s/%s.txt", dir, nm);
}

static cd_status read_profiler_txt(const char *path, const cd_manifest_entry *e, cd_value *v, cd_error *err) {
    FILE *f = fopen(path, "r");
    if (!f)
        return cd_err(err, CD_E_MODEL, "missing tensor '%s' (col %d, op #%d %s): cannot open %s: %s", e->tensor, e->col,
                      e->op_index, e->layer, path, strerror(errno));
    size_t cap = 1024, n = 0;
    float *x = malloc(cap * sizeof *x);
    char line[256];
    long ln = 0;
    cd_status st = x ? CD_OK : cd_err(err, CD_E_NOMEM, "out of memory");
    while (!st && fgets(line, sizeof line, f)) {
        ln++;
        long idx;
        double val;
        char c;
        if (sscanf(line, " [%ld] %lf %c", &idx, &val, &c) != 2 || idx != (long)n) {
            if (strspn(line, " \t\r\n") == strlen(line)) continue;
            st = cd_err(err, CD_E_MODEL,
                        "%s:%ld: expected \"[%zu] value\" (Paddle-Lite precision-profiler tensor file "
                        "of '%s'), got \"%.60s\"",
                        path, ln, n, e->tensor, line);
            break;
        }
        if (n == cap) {
            cap *= 2;
            float *nx = realloc(x, cap * sizeof *nx);
            if (!nx) {
                st = cd_err(err, CD_E_NOMEM, "out of memory");
                break;
            }
            x = nx;
        }
        x[n++] = (float)val;
    }
    if (!st && ferror(f)) st = cd_err(err, CD_E_MODEL, "cannot read %s", path);
    fclose(f);
    if (st) {
        free(x);
        return st;
    }
    memset(v, 0, sizeof *v);
    v->dtype = CD_F32;
    v->data = x;
    v->nbytes = n * sizeof *x;
    v->owned = true;
    if (shape_known(&e->shape)) {
        v->shape = e->shape;
        if (cd_shape_numel(&e->shape) != (int64_t)n) {
            char a[96];
            cd_value_release(v);
            return cd_err(err, CD_E_MODEL,
                          "wrong element count for tensor '%s' (col %d, op #%d %s): %s holds %zu values, "
                          "the manifest's shape %s needs %lld",
                          e->tensor, e->col, e->op_index, e->layer, path, n, cd_shape_str(&e->shape, a, sizeof a),
                          (long long)cd_shape_numel(&e->shape));
        }
    } else {
        v->shape.rank = 1;
        v->shape.d[0] = (int64_t)n;
    }
    return CD_OK;
}

static int count_npy_outputs(const char *dir, int *max_col) {
    DIR *d = opendir(dir);
    int n = 0;
    *max_col = -1;
    if (!d) return -1;
    struct dirent *e;
    while ((e = readdir(d))) {
        int col;
        char tail[8];
        if (sscanf(e->d_name, "out_%d.np%1[y]%1s", &col, tail, tail + 2) == 2) {
            n++;
            if (col > *max_col) *max_col = col;
        }
    }
    closedir(d);
    return n;
}

int cd_cmd_import(int argc, char **argv) {
    const char *dir = NULL, *manifest = NULL, *out = "cldiff-out/dump.h5", *run = "paddle-lite", *model = NULL,
               *from = NULL;
    bool quiet = false;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if ((!strcmp(a, "--manifest") || !strcmp(a, "-o") || !strcmp(a, "--out") || !strcmp(a, "--run") ||
             !strcmp(a, "--model") || !strcmp(a, "--from")) &&
            !v) {
            fprintf(stderr, "cldiff: option %s needs a value\n", a);
            return CD_E_USAGE;
        }
        if (!strcmp(a, "--manifest"))
            manifest = argv[++i];
        else if (!strcmp(a, "-o") || !strcmp(a, "--out"))
            out = argv[++i];
        else if (!strcmp(a, "--run"))
            run = argv[++i];
        else if (!strcmp(a, "--model"))
            model = argv[++i];
        else if (!strcmp(a, "--from"))
            from = argv[++i];
        else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            quiet = true;
        else if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: cldiff import DIR --manifest probed.manifest.json [-o dump.h5] [--run NAME] "
                   "[--model MODEL.nb] [--from npy|profiler]\n"
                   "  DIR: out_<col>.npy per fetch column (probes/paddle-lite runner, scripts/pl_bridge.py), or\n"
                   "  Paddle-Lite's precision-profiler tensor files <tensor>.txt (docs/paddle-lite.md)\n");
            return 0;
        } else if (a[0] == '-') {
            static const char *const opts[] = {"--manifest", "-o",      "--out", "--run",  "--model",
                                               "--from",     "--quiet", "-q",    "--help", "-h"};
            return cd_cli_unknown_option("import", a, opts, (int)(sizeof opts / sizeof *opts));
        } else if (!dir)
            dir = a;
        else {
            fprintf(stderr, "cldiff: import: one folder expected, got '%s' too\n", a);
            return CD_E_USAGE;
        }
    }
    if (from && strcmp(from, "npy") && strcmp(from, "profiler")) {
        static const char *const vals[] = {"npy", "profiler"};
        return cd_cli_bad_value("import", "--from", from, vals, 2);
    }
    if (!dir || !manifest) {
        fprintf(stderr,
                "usage: cldiff import DIR --manifest probed.manifest.json [-o dump.h5] [--run NAME] "
                "[--model MODEL.nb] [--from npy|profiler]\n"
                "  DIR: out_<col>.npy per fetch column (probes/paddle-lite runner), or Paddle-Lite's\n"
                "  precision-profiler tensor files <tensor>.txt\n");
        return CD_E_USAGE;
    }
    cd_error err = {0};
    cd_manifest m;
    cd_status st = cd_manifest_read(manifest, &m, &err);
    if (st) return cd_cli_fail(&err);
    if (!from) {
        char p[1200];
        snprintf(p, sizeof p, "%s/out_0.npy", dir);
        FILE *f = fopen(p, "rb");
        if (f) fclose(f);
        from = f ? "npy" : "profiler";
    }
    bool npy = !strcmp(from, "npy");
    DIR *dd = opendir(dir);
    if (!dd) {
        cd_manifest_free(&m);
        cd_err(&err, CD_E_USAGE, "cannot open folder '%s': %s", dir, strerror(errno));
        return cd_cli_fail(&err);
    }
    closedir(dd);
    if (npy) {
        int max_col, n = count_npy_outputs(dir, &max_col);
        int want = 0;
        for (int k = 0; k < m.n; k++)
            if (m.e[k].col + 1 > want) want = m.e[k].col + 1;
        for (int k = 0; k < m.n; k++) {
            char p[1200];
            snprintf(p, sizeof p, "%s/out_%d.npy", dir, m.e[k].col);
            FILE *f = fopen(p, "rb");
            if (f) {
                fclose(f);
                continue;
            }
            cd_err(&err, CD_E_MODEL,
                   "missing tensor '%s' (col %d, op #%d %s): no %s (%d of the manifest's %d fetch "
                   "columns are in %s; did the runner save every output?)",
                   m.e[k].tensor, m.e[k].col, m.e[k].op_index, m.e[k].layer, p, n, want, dir);
            cd_manifest_free(&m);
            return cd_cli_fail(&err);
        }
        if (n != want || max_col != want - 1) {
            cd_err(&err, CD_E_MODEL,
                   "wrong output count: %s holds %d out_<col>.npy files (highest col %d) but the manifest "
                   "%s lists %d fetch columns: the outputs come from another instrumented model",
                   dir, n, max_col, manifest, want);
            cd_manifest_free(&m);
            return cd_cli_fail(&err);
        }
    }
    /* the original model, for /model/ops (optional: compare works on tensors alone) */
    const char *mp = model ? model : m.model_path;
    cd_graph *g = NULL;
    char sha[65] = "";
    if (mp && *mp) {
        cd_error ge = {0};
        if (cd_nb_load(mp, &g, &ge) == CD_OK && cd_sha256_file(mp, sha, &ge) == CD_OK) {
            if (m.model_sha256[0] && strcmp(sha, m.model_sha256)) {
                cd_err(&err, CD_E_MODEL,
                       "model %s (sha256 %.12s...) is not the one the manifest was made from (%.12s...)", mp, sha,
                       m.model_sha256);
                cd_graph_free(g);
                cd_manifest_free(&m);
                return cd_cli_fail(&err);
            }
        } else {
            if (model) {
                cd_manifest_free(&m);
                return cd_cli_fail(&ge);
            }
            if (g) cd_graph_free(g);
            g = NULL;
            if (!quiet)
                fprintf(stderr, "cldiff: note: model %s not readable (%s); the dump has no /model tables\n", mp,
                        ge.msg);
        }
    }
    /* output folder */
    char odir[1024];
    snprintf(odir, sizeof odir, "%s", out);
    char *slash = strrchr(odir, '/');
    if (slash) {
        *slash = 0;
        if (odir[0] && (st = cd_make_dirs(odir, &err))) {
            if (g) cd_graph_free(g);
            cd_manifest_free(&m);
            return cd_cli_fail(&err);
        }
    }
    char cl[2048];
    size_t off = (size_t)snprintf(cl, sizeof cl, "cldiff import");
    for (int i = 1; i < argc && off < sizeof cl; i++)
        off += (size_t)snprintf(cl + off, sizeof cl - off, " %s", argv[i]);
    cd_dump_meta meta = {.command_line = cl,
                         .model_path = m.model_path,
                         .model_sha256 = m.model_sha256,
                         .model_format = npy ? "paddle-lite nb, outputs imported (npy)"
                                             : "paddle-lite nb, imported from the precision profiler",
                         .precision = "fp32",
                         .seed = 0};
    cd_dump *d = NULL;
    st = cd_dump_create(out, &meta, &d, &err);
    if (!st && g) st = cd_dump_write_model(d, g, &err);
    for (int k = 0; !st && g && k < g->n_inputs; k++) {
        char p[1200];
        snprintf(p, sizeof p, "%s/input_%d.npy", dir, k);
        cd_value v = {0};
        cd_error ie = {0};
        if (cd_npy_read(p, &v, &ie) == CD_OK) {
            st = cd_dump_write_input(d, g->tensors[g->inputs[k]].name, &v, p, &err);
            cd_value_release(&v);
        }
    }
    cd_run_info info = {.backend = "paddle-lite",
                        .precision = "fp32",
                        .device = "imported",
                        .platform = "",
                        .driver = "",
                        .library_path = "",
                        .threads = 0};
    if (!st) st = cd_dump_begin_run(d, run, &info, &err);
    char rp[256];
    snprintf(rp, sizeof rp, "/runs/%s", run);
    if (!st) st = cd_dump_set_attr_str(d, rp, "engine", "paddle-lite", &err);
    if (!st) st = cd_dump_set_attr_str(d, rp, "imported_from", dir, &err);
    if (!st) st = cd_dump_set_attr_str(d, rp, "import_format", npy ? "npy" : "precision-profiler", &err);
    if (!st) st = cd_dump_set_attr_str(d, rp, "manifest", manifest, &err);
    int stored = 0, n_int8 = 0, n_int8_raw = 0;
    for (int k = 0; k < m.n && !st; k++) {
        const cd_manifest_entry *e = &m.e[k];
        if (!e->probed) continue;
        char p[1400];
        cd_value v = {0};
        if (npy) {
            snprintf(p, sizeof p, "%s/out_%d.npy", dir, e->col);
            st = cd_npy_read(p, &v, &err);
            if (st) {
                st = CD_E_MODEL;
                err.code = CD_E_MODEL;
                cd_err_prefix(&err, "tensor '%s' (col %d, op #%d %s): ", e->tensor, e->col, e->op_index, e->layer);
                break;
            }
            if (shape_known(&e->shape) && !cd_shape_eq(&v.shape, &e->shape) &&
                !(cd_shape_numel(&v.shape) == cd_shape_numel(&e->shape) && v.shape.rank == 0)) {
                char a[96], b[96];
                /* dynamic outputs (nms) may come back smaller than cldiff's planned upper bound */
                bool dyn = e->op_type[0] && strstr(e->op_type, "nms");
                if (!dyn) {
                    st = cd_err(&err, CD_E_MODEL,
                                "wrong shape for tensor '%s' (col %d, op #%d %s): %s holds %s, the "
                                "manifest says %s (was the model run on another input shape? instrument with --shape)",
                                e->tensor, e->col, e->op_index, e->layer, p, cd_shape_str(&v.shape, a, sizeof a),
                                cd_shape_str(&e->shape, b, sizeof b));
                    cd_value_release(&v);
                    break;
                }
            }
        } else {
            profiler_path(dir, e->fetch_name[0] ? e->fetch_name : e->tensor, p, sizeof p);
            if ((st = read_profiler_txt(p, e, &v, &err))) break;
        }
        if (v.dtype == CD_I8) {
            if (int8_to_values(g, e->op_index, &v, &err, &st))
                n_int8++;
            else if (st) {
                cd_value_release(&v);
                break;
            } else
                n_int8_raw++;
        }
        cd_tensor_stats ts;
        cd_tensor_rec rec = {.op_index = e->op_index,
                             .op_type = e->op_type,
                             .layer = e->layer,
                             .tensor = e->tensor,
                             .elapsed_us = 0,
                             .kernel_us = -1,
                             .where = "paddle-lite",
                             .kernel = "",
                             .note = npy ? "" : "precision profiler (%f text)",
                             .stats = &ts};
        st = cd_dump_write_tensor(d, run, &rec, &v, false, &err);
        cd_value_release(&v);
        stored++;
    }
    if (!st) st = cd_dump_set_attr_i64(d, rp, "n_probed", stored, &err);
    if (!st) st = cd_dump_set_attr_i64(d, rp, "int8_dequantized", n_int8, &err);
    if (!st && n_int8_raw && !quiet)
        fprintf(stderr,
                "cldiff: note: %d int8 tensors stored as their integers: no scale known for them (give the model "
                "with --model so that q x scale can be stored)\n",
                n_int8_raw);
    if (!st) st = cd_dump_end_run(d, run, 0, true, &err);
    if (st) {
        if (d) cd_dump_discard(d);
    } else {
        st = cd_dump_close(d, true, &err);
    }
    if (!st && !quiet)
        printf("cldiff import: %d tensors from %s (%s) -> %s, run '%s'%s\n", stored, dir, from, out, run,
               n_int8 ? " (int8 outputs stored as q x scale)" : "");
    if (g) cd_graph_free(g);
    cd_manifest_free(&m);
    return st ? cd_cli_fail(&err) : 0;
}
