/* `cldiff instrument MODEL.nb --layers SPEC -o probed.nb`: the model with every probed
 * tensor also fetched (probes/instrument.h), and its manifest beside it
 * (probed.manifest.json): fetch column -> op index, layer, tensor, shape, dtype. Run
 * probed.nb in any Paddle-Lite runtime (the wheel, the probes/paddle-lite runner on a
 * phone), save every output, then `cldiff import`. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/inputs.h"
#include "cli/session.h"
#include "model/nb_reader.h"
#include "model/nb_writer.h"
#include "probes/instrument.h"
#include "probes/select.h"
#include "util/npy.h"
#include "util/sha256.h"

int cd_cmd_instrument(int argc, char **argv) {
    /* instrument's own option (--retarget TARGET), then the shared ones */
    char **av = calloc((size_t)argc + 1, sizeof *av);
    if (!av) return CD_E_NOMEM;
    int ac = 0;
    cd_retarget rt = {.target = -1, .host_ops = NULL};
    for (int i = 0; i < argc; i++) {
        if ((!strcmp(argv[i], "--host-ops") || !strcmp(argv[i], "--target-ops") || !strcmp(argv[i], "--retarget")) &&
            i + 1 >= argc) {
            fprintf(stderr, "cldiff instrument: option %s needs a value\n", argv[i]);
            free(av);
            return CD_E_USAGE;
        }
        if (!strcmp(argv[i], "--host-ops") && i + 1 < argc) {
            rt.host_ops = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--target-ops") && i + 1 < argc) {
            rt.target_ops = argv[++i];
            continue;
        }
        if (!strcmp(argv[i], "--keep-names")) {
            rt.keep_names = true;
            continue;
        }
        if (!strcmp(argv[i], "--retarget")) {
            if ((rt.target = cd_target_from_name(argv[i + 1])) < 0) {
                static const char *const vals[] = {"x86", "arm", "host", "opencl"};
                free(av);
                return cd_cli_bad_value("instrument", "--retarget", argv[i + 1], vals, 4);
            }
            i++;
            continue;
        }
        av[ac++] = argv[i];
    }
    cd_cli_opts o;
    int rc = cd_cli_parse(ac, av, 1, &o, "instrument");
    if (rc) {
        free(av);
        return rc;
    }
    cd_error err = {0};
    if (o.n_positional != 1) {
        free(av);
        fprintf(stderr,
                "usage: cldiff instrument MODEL.nb [--layers SPEC] [--shape NAME=dims] [-o probed.nb] "
                "[--retarget x86 [--host-ops OP,OP] [--target-ops OP,OP]] [--keep-names]\n");
        return CD_E_USAGE;
    }
    const char *model = o.positional[0];
    char out_nb[1024];
    if (!strcmp(o.out_dir, "cldiff-out")) {
        cd_status st = cd_make_dirs("cldiff-out", &err);
        if (st) {
            free(av);
            return cd_cli_fail(&err);
        }
        snprintf(out_nb, sizeof out_nb, "cldiff-out/probed.nb");
    } else {
        snprintf(out_nb, sizeof out_nb, "%s", o.out_dir);
        char parent[1024];
        snprintf(parent, sizeof parent, "%s", out_nb);
        char *sl = strrchr(parent, '/');
        if (sl && sl != parent) {
            *sl = 0;
            cd_status st = cd_make_dirs(parent, &err);
            if (st) {
                free(av);
                return cd_cli_fail(&err);
            }
        }
    }
    cd_graph *g = NULL;
    cd_status st = cd_nb_load(model, &g, &err);
    cd_shape *shapes = NULL;
    bool *mask = NULL;
    char sha[65] = "", notice[512] = "", mpath[1100] = "";
    cd_plan plan;
    bool have_plan = false;
    int n_sel = 0;
    if (!st) st = cd_sha256_file(model, sha, &err);
    if (!st && !(shapes = calloc((size_t)g->n_inputs + 1, sizeof *shapes)))
        st = cd_err(&err, CD_E_NOMEM, "out of memory");
    bool shapes_known = false;
    if (!st) {
        /* without --shape (or an --input file with a shape) for dynamic dims the manifest lists
         * the declared shapes (-1); a bad --input file is an error (its message differs from
         * the one of the declared shapes alone) */
        cd_error se = {0}, de = {0};
        if (cd_inputs_resolve_shapes(g, o.shapes, o.n_shapes, o.inputs, o.n_inputs, shapes, notice, sizeof notice,
                                     &se) == CD_OK)
            shapes_known = true;
        else if (o.n_shapes || cd_resolve_input_shapes(g, NULL, 0, shapes, NULL, 0, &de) == CD_OK ||
                 strcmp(se.msg, de.msg)) {
            err = se;
            st = se.code;
        } else {
            for (int k = 0; k < g->n_inputs; k++) shapes[k] = g->tensors[g->inputs[k]].shape;
            if (!o.quiet)
                fprintf(stderr,
                        "cldiff: note: dynamic input dims and no --shape: the manifest lists declared shapes\n");
        }
    }
    if (!st && notice[0] && !o.quiet) fprintf(stderr, "cldiff: note: %s\n", notice);
    if (!st && !(mask = calloc((size_t)g->n_ops + 1, 1))) st = cd_err(&err, CD_E_NOMEM, "out of memory");
    if (!st) st = cd_select_layers_in(g, model, o.layers, mask, &n_sel, &err);
    if (!st && shapes_known) {
        /* shapes and dtypes for the manifest come from cldiff's plan; a model cldiff cannot
         * plan is still instrumented, with the declared shapes */
        cd_error pe = {0};
        if (cd_plan_build(g, shapes, CD_PREC_FP32, &plan, &pe) == CD_OK)
            have_plan = true;
        else if (!o.quiet)
            fprintf(stderr, "cldiff: note: no plan (%s); the manifest lists declared shapes\n", pe.msg);
    }
    cd_instrumented in;
    memset(&in, 0, sizeof in);
    if (!st)
        st = cd_write_instrumented(g, mask, have_plan ? plan.meta : NULL, &rt, model, sha, shapes, out_nb, mpath,
                                   sizeof mpath, &in, &err);
    /* The input the device should run, beside probed.nb as the runner reads it (input_<k>.npy):
     * --input as everywhere (random with --seed by default, .npy, .png with --mean/--std), so
     * `cldiff run --input x=DIR/input_0.npy` feeds the reference the very same values. */
    int n_written = 0;
    if (!st && shapes_known) {
        cd_input_opts io = {
            .seed = o.seed, .resize = !o.no_resize, .mean = o.mean, .std = o.std, .channel_order = o.channel_order};
        cd_input_set set;
        memset(&set, 0, sizeof set);
        st = cd_inputs_build(g, shapes, o.inputs, o.n_inputs, &io, &set, &err);
        char dir[1024];
        snprintf(dir, sizeof dir, "%s", out_nb);
        char *sl = strrchr(dir, '/');
        if (sl)
            *sl = 0;
        else
            snprintf(dir, sizeof dir, ".");
        for (int k = 0; !st && k < set.n; k++) {
            char p[1100];
            snprintf(p, sizeof p, "%s/input_%d.npy", dir, k);
            st = cd_npy_write(p, &set.values[k], &err);
            if (!st && !o.quiet) printf("  input %d '%s': %s (%s)\n", k, set.names[k], p, set.sources[k]);
            n_written += !st;
        }
        cd_inputs_free(&set);
    }
    if (!st && !o.quiet) {
        printf(
            "cldiff instrument: %s -> %s (%d ops, %d probed layers, %d fetched tensors: %d model outputs + %d probes, "
            "%d activations renamed)\n",
            model, out_nb, g->n_ops, n_sel, in.n_fetch, in.n_model_outputs, in.n_fetch - in.n_model_outputs,
            in.n_renamed);
        printf("  manifest: %s\n", mpath);
        if (rt.target >= 0)
            printf("  kernel records with target arm rewritten to %s%s%s\n", cd_target_name(rt.target),
                   rt.host_ops ? ", host for " : "", rt.host_ops ? rt.host_ops : "");
    }
    cd_instrumented_free(&in);
    if (have_plan) cd_plan_free(&plan);
    free(mask);
    free(shapes);
    if (g) cd_graph_free(g);
    free(av);
    return st ? cd_cli_fail(&err) : 0;
}
