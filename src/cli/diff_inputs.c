/* The differential command over many inputs and runs: --inputs DIR (per-layer aggregates
 * over every input, full reports of the worst) and --calibrate N (a tolerance file from N
 * pairs of runs). */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <strings.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/diff_priv.h"

/* ---------------------------------------------------------------- --inputs aggregates */

static double metric_of(const cd_layer_cmp *l, int k) {
    switch (k) {
    case CD_AGG_MAX_ABS: return l->m.max_abs;
    case CD_AGG_REL_ERR: return l->rel_err;
    case CD_AGG_FAIL_FRACTION: return l->m.fail_fraction;
    default: return l->m.cosine;
    }
}

static cd_status agg_add(agg_state *g, const char *name, const cd_analysis *an, cd_error *err) {
    if (!g->proto) {
        g->n_layers = an->n_layers;
        g->proto = calloc((size_t)an->n_layers + 1, sizeof *g->proto);
        if (!g->proto) return cd_err(err, CD_E_NOMEM, "out of memory");
        memcpy(g->proto, an->layers, (size_t)an->n_layers * sizeof *g->proto);
    }
    if (g->n_inputs == g->cap) {
        int nc = g->cap ? g->cap * 2 : 16;
        void *p = realloc(g->names, (size_t)nc * sizeof *g->names);
        if (!p) return cd_err(err, CD_E_NOMEM, "out of memory");
        g->names = p;
        for (int k = 0; k < 4; k++) {
            p = realloc(g->v[k], (size_t)nc * (size_t)(g->n_layers + 1) * sizeof(double));
            if (!p) return cd_err(err, CD_E_NOMEM, "out of memory");
            g->v[k] = p;
        }
        p = realloc(g->fail, (size_t)nc * (size_t)(g->n_layers + 1));
        if (!p) return cd_err(err, CD_E_NOMEM, "out of memory");
        g->fail = p;
        g->cap = nc;
    }
    int ii = g->n_inputs++;
    snprintf(g->names[ii], sizeof g->names[ii], "%s", name);
    for (int i = 0; i < g->n_layers; i++) {
        /* match by op index + tensor: every input runs the same model and probes */
        const cd_layer_cmp *l = NULL;
        for (int j = 0; j < an->n_layers && !l; j++)
            if (an->layers[j].op_index == g->proto[i].op_index && !strcmp(an->layers[j].tensor, g->proto[i].tensor))
                l = &an->layers[j];
        for (int k = 0; k < 4; k++) g->v[k][(size_t)ii * (size_t)g->n_layers + (size_t)i] = l ? metric_of(l, k) : NAN;
        g->fail[(size_t)ii * (size_t)g->n_layers + (size_t)i] = l && !l->m.pass;
    }
    return CD_OK;
}

static void agg_free(agg_state *g) {
    free(g->names);
    free(g->proto);
    for (int k = 0; k < 4; k++) free(g->v[k]);
    free(g->fail);
    memset(g, 0, sizeof *g);
}

/* ---------------------------------------------------------------- --calibrate */

typedef struct {
    int op;
    char layer[128], type[64], tensor[256];
    double max_abs, min_cos, rms;
} cal;

/* Folds one run's analysis into the per-layer worst errors (layer identities from run 0). */
static void cal_add(cal *c, int nc, const cd_analysis *an, bool first) {
    for (int j = 0; j < an->n_layers && j < nc; j++) {
        const cd_layer_cmp *l = &an->layers[j];
        if (first) {
            c[j].op = l->op_index;
            snprintf(c[j].layer, sizeof c[j].layer, "%s", l->layer);
            snprintf(c[j].type, sizeof c[j].type, "%s", l->op_type);
            snprintf(c[j].tensor, sizeof c[j].tensor, "%s", l->tensor);
            c[j].min_cos = 1;
        }
        if (l->m.nonfinite_mismatch || l->nf_hard) continue; /* NaN/Inf is never noise */
        if (l->m.max_abs > c[j].max_abs) c[j].max_abs = l->m.max_abs;
        if (l->m.cosine < c[j].min_cos) c[j].min_cos = l->m.cosine;
        if (l->m.ref_rms > c[j].rms) c[j].rms = l->m.ref_rms;
    }
}

/* The N pairs of runs; *out gets the per-layer worst errors. */
static int cal_collect(const cd_cli_opts *o, const char *work, cal **out, int *n_out) {
    cd_cli_opts o2 = *o;
    o2.calibrate = 0;
    o2.no_repro = true;
    /* the local check stays on: a tolerance measured on a wrong kernel would bless it */
    o2.quiet = true;
    o2.out_dir = work;
    cal *c = NULL;
    int nc = 0, rc = 0;
    for (int i = 0; i < o->calibrate; i++) {
        o2.seed = o->seed + (uint64_t)i;
        cd_analysis an;
        memset(&an, 0, sizeof an);
        diff_ctx ctx = {.collect_only = true, .an_out = &an};
        if (!o->quiet)
            fprintf(stderr, "calibrate: run %d/%d (seed %llu)\n", i + 1, o->calibrate, (unsigned long long)o2.seed);
        rc = cd_diff_core(&o2, &ctx);
        if (rc != 0 && rc != CD_E_TOLERANCE) {
            cd_analysis_free(&an);
            free(c);
            return rc;
        }
        if (an.kind == CD_KIND_FAULT && an.first_fault >= 0 && an.first_fault < an.n_layers) {
            /* a kernel over its bound is no noise floor: refuse, write nothing */
            const cd_layer_cmp *l = &an.layers[an.first_fault];
            fprintf(stderr,
                    "cldiff: calibrate: run %d (seed %llu): KERNEL FAULT at %s (%s, op #%d): local error %.4g, "
                    "bound %.4g, ratio %.3g; no tolerance file written (calibrating would bless the fault; "
                    "its dump: %s/dump.h5, which cldiff report reads)\n",
                    i + 1, (unsigned long long)o2.seed, l->layer, l->op_type, l->op_index, l->loc_err, l->loc_bound,
                    l->loc_ratio, work);
            cd_analysis_free(&an);
            free(c);
            return CD_E_TOLERANCE;
        }
        if (!c) {
            c = calloc((size_t)an.n_layers + 1, sizeof *c);
            nc = an.n_layers;
            if (!c) {
                cd_analysis_free(&an);
                return CD_E_NOMEM;
            }
        }
        cal_add(c, nc, &an, i == 0);
        cd_analysis_free(&an);
    }
    *out = c;
    *n_out = nc;
    return 0;
}

/* The tolerance file's text (malloc-ed; NULL when out of memory). */
static char *cal_text(const cd_cli_opts *o, const cal *c, int nc) {
    double S = o->calibrate_safety, u = o->prec == CD_PREC_FP16 ? 4.8828125e-04 : 5.9604644775390625e-08;
    size_t cap = 4096 + (size_t)nc * 400, off = 0;
    char *txt = malloc(cap);
    if (!txt) return NULL;
    off += (size_t)snprintf(
        txt + off, cap - off,
        "# cldiff tolerance file written by --calibrate %d (safety factor %g), %s, %s vs %s\n"
        "# model %s\n# per layer: atol = %g x worst max|a-b| over the runs (at least %g x u x rms(ref)),\n"
        "# min_cos = 1 - %g x worst (1 - cosine); load with --tolerance FILE\n",
        o->calibrate, S, o->prec == CD_PREC_FP16 ? "fp16" : "fp32", o->backends[0], o->backends[1], o->model, S, S, S);
    for (int j = 0; j < nc; j++) {
        /* a layer name is a glob: escape its metacharacters so it matches only itself */
        char pat[300];
        size_t p = 0;
        for (const char *x = c[j].layer; *x && p + 3 < sizeof pat; x++) {
            if (strchr("*?[]\\", *x)) pat[p++] = '\\';
            pat[p++] = *x;
        }
        pat[p] = 0;
        /* 1.0001: the %.6g below must not round the bound under the measured error */
        double atol = 1.0001 * S * c[j].max_abs, floor_ = S * u * c[j].rms;
        if (atol < floor_) atol = floor_;
        if (!(atol > 0)) atol = 1e-30;
        double mc = 1 - S * (1 - c[j].min_cos) - 1e-12;
        if (mc < 0) mc = 0;
        if (off + 400 < cap)
            off += (size_t)snprintf(txt + off, cap - off,
                                    "layer:%s atol=%.6g rtol=0 min_cos=%.12g max_fail_fraction=0  # %s #%d %s\n", pat,
                                    atol, mc, c[j].type, c[j].op, c[j].tensor);
    }
    return txt;
}

/* --calibrate N: N pairs of runs (A and B at the run's precision, seeds seed..seed+N-1 for
 * random inputs), per-layer worst error times the safety factor, written as a tolerance
 * file (the --tolerance format) that later runs load. */
int cd_diff_calibrate(const cd_cli_opts *o) {
    cal *c = NULL;
    int nc = 0;
    char work[1100];
    snprintf(work, sizeof work, "%s/calibrate-work", o->out_dir);
    int rc = cal_collect(o, work, &c, &nc);
    if (rc) return rc;
    char *txt = cal_text(o, c, nc);
    free(c);
    if (!txt) return CD_E_NOMEM;
    char path[1200];
    snprintf(path, sizeof path, "%s/dump.h5", work);
    unlink(path);
    rmdir(work);
    snprintf(path, sizeof path, "%s/tolerance.txt", o->out_dir);
    cd_error err = {0};
    cd_status st = cd_diff_write_text(path, txt, &err);
    free(txt);
    if (st) return cd_cli_fail(&err);
    if (!o->quiet) printf("calibrated %d layers over %d runs: %s (use --tolerance %s)\n", nc, o->calibrate, path, path);
    return 0;
}

static bool input_file(const char *n) {
    const char *dot = strrchr(n, '.');
    return dot &&
        (!strcasecmp(dot, ".png") || !strcasecmp(dot, ".npy") || !strcasecmp(dot, ".h5") || !strcasecmp(dot, ".hdf5"));
}

static int name_cmp(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* How bad one input's analysis is: failing layers first, then the largest relative error. */
static double badness(const cd_analysis *an) {
    double worst = 0;
    for (int i = 0; i < an->n_layers; i++) {
        double v = an->layers[i].rel_err;
        if (isnan(v) || isinf(v)) v = 1e30;
        if (v > worst) worst = v;
    }
    return (double)an->n_fail * 1e31 + worst;
}

/* The input files of DIR (.png, .npy, .h5), sorted by name. */
static int list_inputs(const char *dir_path, char ***out, int *n_out) {
    cd_error err = {0};
    DIR *d = opendir(dir_path);
    if (!d) {
        cd_err(&err, CD_E_USAGE, "--inputs: cannot open folder '%s': %s", dir_path, strerror(errno));
        return cd_cli_fail(&err);
    }
    char **files = NULL;
    int nf = 0;
    for (struct dirent *e; (e = readdir(d));) {
        if (e->d_name[0] == '.' || !input_file(e->d_name)) continue;
        char **nfp = realloc(files, (size_t)(nf + 1) * sizeof *files);
        if (!nfp) break;
        files = nfp;
        files[nf] = malloc(strlen(dir_path) + strlen(e->d_name) + 2);
        if (!files[nf]) break;
        sprintf(files[nf], "%s/%s", dir_path, e->d_name);
        nf++;
    }
    closedir(d);
    if (!nf) {
        free(files);
        cd_err(&err, CD_E_USAGE, "--inputs: folder '%s' holds no .png, .npy or .h5 files", dir_path);
        return cd_cli_fail(&err);
    }
    qsort(files, (size_t)nf, sizeof *files, name_cmp);
    *out = files;
    *n_out = nf;
    return 0;
}

/* --inputs DIR: every input is run and compared (no reports, tensors dropped after its
 * comparison); the worst input is run again for the full reports, with the per-layer
 * aggregates attached. Memory stays bounded by one input's tensors plus 4 doubles per layer
 * and input. */
int cd_diff_inputs(const cd_cli_opts *o) {
    cd_error err = {0};
    char **files = NULL;
    int nf = 0;
    int rc = list_inputs(o->inputs_dir, &files, &nf);
    if (rc) return rc;
    agg_state agg = {0};
    cd_cli_opts o2 = *o;
    o2.n_inputs = 1;
    o2.no_repro = true;
    o2.suggest_pins = false; /* the per-run layer progress bar stays on (silent when quiet) */
    o2.isolate_mode = "none";
    char work[1100];
    snprintf(work, sizeof work, "%s/inputs-work", o->out_dir);
    o2.out_dir = work;
    int worst = -1;
    double worst_bad = -1;
    bool tty = !o->quiet && isatty(2) && !getenv("CLDIFF_NO_PROGRESS");
    for (int i = 0; i < nf; i++) {
        o2.inputs[0] = files[i];
        if (!o->quiet)
            fprintf(stderr, "%sinput %d/%d: %s%s", tty ? "\r\033[K" : "", i + 1, nf, files[i], tty ? "" : "\n");
        cd_analysis an;
        memset(&an, 0, sizeof an);
        diff_ctx ctx = {.collect_only = true, .an_out = &an};
        rc = cd_diff_core(&o2, &ctx);
        if (rc != 0 && rc != CD_E_TOLERANCE) {
            cd_analysis_free(&an);
            goto done;
        }
        const char *base = strrchr(files[i], '/');
        if ((rc = agg_add(&agg, base ? base + 1 : files[i], &an, &err) ? cd_cli_fail(&err) : 0)) {
            cd_analysis_free(&an);
            goto done;
        }
        double b = badness(&an);
        if (b > worst_bad) {
            worst_bad = b;
            worst = i;
        }
        if (!o->quiet)
            fprintf(stderr, "%s  %d of %d layers out of tolerance%s%s\n", tty ? "\r\033[K" : "", an.n_fail, an.n_layers,
                    an.first_fail >= 0 ? ", first " : "", an.first_fail >= 0 ? an.layers[an.first_fail].layer : "");
        cd_analysis_free(&an);
    }
    {
        char p[1200];
        snprintf(p, sizeof p, "%s/dump.h5", work);
        unlink(p);
        rmdir(work);
    }
    /* full reports of the worst input */
    o2 = *o;
    o2.n_inputs = 1;
    o2.inputs[0] = files[worst];
    if (!o->quiet) printf("worst input: %s (of %d); full tensors and reports for it follow\n", files[worst], nf);
    {
        const char *base = strrchr(files[worst], '/');
        diff_ctx ctx = {.agg = &agg, .worst_input = base ? base + 1 : files[worst]};
        rc = cd_diff_core(&o2, &ctx);
    }
done:
    agg_free(&agg);
    for (int i = 0; i < nf; i++) free(files[i]);
    free(files);
    return rc;
}
