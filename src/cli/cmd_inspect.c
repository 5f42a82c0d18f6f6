/* `cldiff inspect MODEL.nb [--shape NAME=dims]...`: what is in a model and whether cldiff
 * can run it. Shapes come from the planner (engine) for the given/declared input shapes;
 * if planning fails the declared shapes are shown and the plan error becomes a warning.
 * Exit: 0 ok, 2 usage (bad option, missing file), 3 bad model. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/cli.h"
#include "cli/inputs.h"
#include "backends/registry.h"
#include "engine/ops.h"
#include "engine/plan.h"
#include "model/nb_reader.h"
#include "cli/inspect_mnn.h"
#include "model/mnn_reader.h"

#define MAX_SHAPES 64

static void usage(FILE *f) {
    fprintf(f,
            "usage: cldiff inspect MODEL.nb [--shape NAME=d0,d1,...]...\n"
            "  Shows the model header, inputs/outputs, every op (inputs -> outputs with shapes,\n"
            "  key attributes, saved kernel target/precision/layout), parameter totals, and\n"
            "  warnings about ops or features cldiff cannot run.\n"
            "  --shape NAME=dims  input shape to plan with (repeatable; needed for dynamic dims)\n"
            "  --backends A[,B]   where each op will run on these backends (kernel, fallback and why),\n"
            "                     without running the model; paddle-lite-opencl runs Opt to learn it\n"
            "  --backend-opt NAME:key=value  a backend's option (as for the comparison)\n"
            "  --help             this text\n");
}

/* Training-time or bookkeeping attributes that never influence inference (docs/nb-format.md §4.3). */
static bool boring_attr(const char *n) {
    static const char *skip[] = {"use_cudnn",
                                 "use_mkldnn",
                                 "data_format",
                                 "is_test",
                                 "use_quantizer",
                                 "mkldnn_data_type",
                                 "fuse_relu_before_depthwise_conv",
                                 "workspace_size_MB",
                                 "exhaustive_search",
                                 "force_fp32_output",
                                 "use_addto",
                                 "name",
                                 NULL};
    if (!strncmp(n, "__@", 3)) return true;
    for (int i = 0; skip[i]; i++)
        if (!strcmp(n, skip[i])) return true;
    return false;
}

static void print_attr(const cd_attr *a) {
    printf(" %s=", a->name);
    int lim = a->n < 8 ? a->n : 8;
    switch (a->type) {
    case CD_ATTR_INT:
    case CD_ATTR_LONG:
    case CD_ATTR_BLOCK: printf("%lld", (long long)a->i); break;
    case CD_ATTR_BOOL: printf("%s", a->i ? "true" : "false"); break;
    case CD_ATTR_FLOAT:
    case CD_ATTR_FLOAT64: printf("%g", a->f); break;
    case CD_ATTR_STRING: printf("\"%.40s%s\"", a->s ? a->s : "", a->s && strlen(a->s) > 40 ? "..." : ""); break;
    case CD_ATTR_INTS:
    case CD_ATTR_LONGS:
    case CD_ATTR_BOOLS:
    case CD_ATTR_BLOCKS:
        printf("[");
        for (int i = 0; i < lim; i++) printf("%s%lld", i ? "," : "", (long long)a->ints[i]);
        printf("%s]", a->n > lim ? ",..." : "");
        break;
    case CD_ATTR_FLOATS:
    case CD_ATTR_FLOAT64S:
        printf("[");
        for (int i = 0; i < lim; i++) printf("%s%g", i ? "," : "", a->floats[i]);
        printf("%s]", a->n > lim ? ",..." : "");
        break;
    case CD_ATTR_STRINGS:
        printf("[");
        for (int i = 0; i < lim; i++) printf("%s\"%s\"", i ? "," : "", a->strings[i]);
        printf("%s]", a->n > lim ? ",..." : "");
        break;
    default: printf("?"); break;
    }
}

static const cd_shape *shape_of(const cd_graph *g, const cd_plan *plan, int id) {
    return plan ? &plan->meta[id].shape : &g->tensors[id].shape;
}

static void print_slots(const cd_graph *g, const cd_plan *plan, const cd_slot *s, int n) {
    for (int i = 0; i < n; i++) {
        printf("%s%s=", i ? " " : "", s[i].name);
        if (s[i].n == 0) printf("-");
        for (int k = 0; k < s[i].n; k++) {
            int id = s[i].ids[k];
            if (k) printf(",");
            if (id < 0) {
                printf("-");
                continue;
            }
            char b[200];
            printf("%s%s", g->tensors[id].name, cd_shape_str(shape_of(g, plan, id), b, sizeof b));
        }
    }
}

typedef struct {
    const char *key;
    int count;
} tally;

static void tally_add(tally *t, int *n, const char *key) {
    for (int i = 0; i < *n; i++)
        if (!strcmp(t[i].key, key)) {
            t[i].count++;
            return;
        }
    t[*n].key = key;
    t[*n].count = 1;
    (*n)++;
}

/* --backends A[,B]: where each op will run on each backend, asked of the backends without
 * running the model (src/backends/registry.h). */
static int print_placement(const cd_graph *g, const cd_plan *plan, const char *list, const char *const *kv, int n_kv,
                           const char *model) {
    if (!plan) {
        fprintf(stderr, "cldiff inspect: --backends needs planned shapes (give --shape for dynamic inputs)\n");
        return 2;
    }
    char buf[256];
    snprintf(buf, sizeof buf, "%s", list);
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
        const cd_backend_def *d = cd_backend_lookup(tok);
        if (!d) {
            char names[512];
            cd_backend_names(names, sizeof names);
            fprintf(stderr, "cldiff inspect: unknown backend '%s' (known: %s)\n", tok, names);
            return 2;
        }
        cd_backend_opts bo = {.prec = CD_PREC_FP32,
                              .threads = 1,
                              .int8_arm = true,
                              .int8_on_arm = true,
                              .isolate = true,
                              .kv = kv,
                              .n_kv = n_kv};
        cd_error e = {0};
        if (cd_backend_apply_opts(&bo, &e)) {
            fprintf(stderr, "cldiff inspect: %s\n", e.msg);
            return 2;
        }
        cd_exec_opts xo = {0};
        cd_runner_req q = {
            .backend = d->name, .plan = plan, .xo = &xo, .bo = &bo, .model_path = model, .work_dir = "/tmp"};
        cd_op_place *pl = calloc((size_t)g->n_ops + 1, sizeof *pl);
        char note[512] = "";
        if (!pl) {
            cd_err(&e, CD_E_NOMEM, "out of memory");
            return cd_cli_fail(&e);
        }
        cd_status st = d->placement ? d->placement(&q, pl, note, sizeof note, &e)
                                    : cd_err(&e, CD_E_UNSUPPORTED, "backend %s cannot say where ops run", d->name);
        if (st) {
            free(pl);
            return cd_cli_fail(&e);
        }
        printf("\nplacement on %s: %s\n", d->name, note);
        int unsupported = 0;
        for (int i = 0; i < g->n_ops; i++) {
            const cd_op_place *o = &pl[i];
            unsupported += !o->supported;
            printf("  %4d %-28s %-24s %-12s %-36s %s\n", i, g->ops[i].name, g->ops[i].type, o->where, o->kernel,
                   o->why);
        }
        if (unsupported) printf("  %d ops this backend cannot run\n", unsupported);
        free(pl);
    }
    return 0;
}

/* The command line of `cldiff inspect`; returns -1 to go on, else the exit code. */
typedef struct inspect_args {
    const char *model, *shapes[MAX_SHAPES], *backends, *kv[MAX_SHAPES];
    int n_shapes, n_kv;
} inspect_args;

static int parse_args(int argc, char **argv, inspect_args *ia) {
    memset(ia, 0, sizeof *ia);
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!strcmp(a, "--shape") || !strncmp(a, "--shape=", 8)) {
            const char *v = a[7] == '=' ? a + 8 : (i + 1 < argc ? argv[++i] : NULL);
            if (!v || !*v) {
                fprintf(stderr, "cldiff inspect: --shape needs NAME=dims\n\n");
                usage(stderr);
                return 2;
            }
            if (ia->n_shapes == MAX_SHAPES) {
                fprintf(stderr, "cldiff inspect: too many --shape options\n");
                return 2;
            }
            ia->shapes[ia->n_shapes++] = v;
            continue;
        }
        if (!strcmp(a, "--backends") || !strcmp(a, "--backend-opt")) {
            const char *v = i + 1 < argc ? argv[++i] : NULL;
            if (!v || !*v) {
                fprintf(stderr, "cldiff inspect: %s needs a value\n", a);
                return 2;
            }
            if (!strcmp(a, "--backends"))
                ia->backends = v;
            else {
                cd_error e = {0};
                if (cd_backend_opt_check(v, &e)) {
                    fprintf(stderr, "cldiff inspect: %s\n", e.msg);
                    return 2;
                }
                if (ia->n_kv == MAX_SHAPES) {
                    fprintf(stderr, "cldiff inspect: too many --backend-opt options\n");
                    return 2;
                }
                ia->kv[ia->n_kv++] = v;
            }
            continue;
        }
        if (a[0] == '-' && a[1]) {
            static const char *const opts[] = {"--shape", "--help", "-h", "--backends", "--backend-opt"};
            return cd_cli_unknown_option("inspect", a, opts, 5);
        }
        if (ia->model) {
            fprintf(stderr, "cldiff inspect: more than one model given ('%s', '%s')\n\n", ia->model, a);
            usage(stderr);
            return 2;
        }
        ia->model = a;
    }
    if (!ia->model) {
        fprintf(stderr, "cldiff inspect: no model file given\n\n");
        usage(stderr);
        return 2;
    }
    return -1;
}

/* The model's header, parameters, inputs and outputs; fills pcount (parameter tensors per dtype). */
static void print_header(const char *model, const cd_graph *g, const cd_plan *pp, bool planned, const char *notice,
                         int64_t *pcount) {
    printf("model: %s\n", model);
    printf("  meta_version %d, opt version '%s', program version %lld\n", g->meta_version,
           g->opt_version[0] ? g->opt_version : "(empty)", (long long)g->program_version);
    int n_params = 0;
    int64_t pbytes[CD_DTYPE_COUNT] = {0}, total = 0;
    for (int t = 0; t < g->n_tensors; t++) {
        const cd_tensor *ts = &g->tensors[t];
        if (!ts->persistable) continue;
        n_params++;
        pbytes[ts->dtype] += (int64_t)ts->nbytes;
        pcount[ts->dtype]++;
        total += (int64_t)ts->nbytes;
    }
    printf("  %d ops, %d tensors (SSA), %d parameters, %lld parameter bytes", g->n_ops, g->n_tensors, n_params,
           (long long)total);
    const char *sep = " (";
    for (int d = 0; d < CD_DTYPE_COUNT; d++)
        if (pcount[d]) {
            printf("%s%s: %lld in %lld bytes", sep, cd_dtype_name((cd_dtype)d), (long long)pcount[d],
                   (long long)pbytes[d]);
            sep = "; ";
        }
    printf("%s\n", n_params ? ")" : "");
    if (notice[0]) printf("  note: %s\n", notice);

    char b[200], b2[200];
    printf("inputs:\n");
    for (int k = 0; k < g->n_inputs; k++) {
        const cd_tensor *t = &g->tensors[g->inputs[k]];
        printf("  #%d %s %s declared %s", k, t->name, cd_dtype_name(t->dtype), cd_shape_str(&t->shape, b, sizeof b));
        if (planned) printf(", planned %s", cd_shape_str(&pp->meta[g->inputs[k]].shape, b2, sizeof b2));
        printf("\n");
    }
    printf("outputs:\n");
    for (int k = 0; k < g->n_outputs; k++) {
        int id = g->outputs[k];
        const cd_tensor *t = &g->tensors[id];
        printf("  #%d %s %s declared %s", k, t->name, cd_dtype_name(planned ? pp->meta[id].dtype : t->dtype),
               cd_shape_str(&t->shape, b, sizeof b));
        if (planned) printf(", planned %s", cd_shape_str(&pp->meta[id].shape, b2, sizeof b2));
        printf("\n");
    }
}

/* What the op listing counts for the summary and the warnings. */
typedef struct op_counts {
    tally *unknown;
    int n_unknown, n_boundary, n_no_record, tcount[20], odd_targets;
} op_counts;

/* Every op with its kernel record, slots (planned shapes when pp) and attributes. */
static void print_ops(const cd_graph *g, const cd_plan *pp, bool planned, op_counts *c) {
    printf("ops:%s\n", planned ? "" : " (declared shapes; see warnings)");
    c->unknown = calloc((size_t)g->n_ops + 1, sizeof *c->unknown);
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        printf("  %4d %-28s %-20s", i, op->name, op->type);
        if (op->kernel.present)
            printf(" [%s/%s/%s alias=%s]", cd_target_name(op->kernel.target), cd_precision_name(op->kernel.precision),
                   cd_layout_name(op->kernel.layout), op->kernel.alias);
        else
            printf(" [no kernel record]");
        printf("\n       ");
        print_slots(g, pp, op->in, op->n_in);
        printf(" -> ");
        print_slots(g, pp, op->out, op->n_out);
        printf("\n");
        bool any = false;
        for (int a = 0; a < op->n_attr; a++) {
            if (boring_attr(op->attrs[a].name)) continue;
            if (!any) printf("      ");
            any = true;
            print_attr(&op->attrs[a]);
        }
        if (any) printf("\n");
        if (c->unknown && !cd_op_find(op->type)) tally_add(c->unknown, &c->n_unknown, op->type);
        if (!strcmp(op->type, "io_copy") || !strcmp(op->type, "io_copy_once") || !strcmp(op->type, "layout") ||
            !strcmp(op->type, "layout_once") || !strcmp(op->type, "calib") || !strcmp(op->type, "calib_once"))
            c->n_boundary++;
        if (!op->kernel.present) {
            c->n_no_record++;
            continue;
        }
        int t = op->kernel.target;
        if (t >= 0 && t < 20) c->tcount[t]++;
        if (t != 1 && t != 4 && t != 5 && t != 6) c->odd_targets++;
    }
}

/* The target summary and the warnings after the op listing. */
static void print_summary(const cd_graph *g, op_counts *c, const int64_t *pcount, const char *plan_problem) {
    const int *tcount = c->tcount;
    /* ---- summary ---- */
    printf("kernel targets:");
    for (int t = 0; t < 20; t++)
        if (tcount[t]) printf(" %s %d", cd_target_name(t), tcount[t]);
    if (c->n_no_record) printf(" (none recorded) %d", c->n_no_record);
    printf("\n");
    if (c->n_boundary) printf("placement/precision boundary ops (io_copy/layout/calib): %d\n", c->n_boundary);

    /* ---- warnings ---- */
    int nw = 0;
    printf("warnings:\n");
    if (c->n_unknown) {
        printf("  - ops cldiff cannot run (no implementation):");
        for (int i = 0; i < c->n_unknown; i++)
            printf("%s %s x%d", i ? "," : "", c->unknown[i].key, c->unknown[i].count);
        printf("\n");
        nw++;
    }
    free(c->unknown);
    c->unknown = NULL;
    if (c->odd_targets && !tcount[4] && !tcount[5]) {
        printf("  - the kernel records target");
        for (int t = 0; t < 20; t++)
            if (tcount[t] && t != 1 && t != 4 && t != 5 && t != 6) printf(" %s (%d ops)", cd_target_name(t), tcount[t]);
        printf(", not ARM or OpenCL: Paddle-Lite on an ARM device will refuse this model or crash "
               "loading it; cldiff runs it anyway with its own kernels\n");
        nw++;
    } else if (c->odd_targets) {
        printf("  - %d ops have kernel records for targets other than host/arm/opencl; cldiff runs them with its "
               "own kernels\n",
               c->odd_targets);
        nw++;
    }
    if (pcount[CD_I8] || pcount[CD_I16]) {
        printf("  - %lld int8 and %lld int16 weight tensors: cldiff dequantizes them and computes in float, so "
               "results match Paddle-Lite's integer kernels only to quantization accuracy\n",
               (long long)pcount[CD_I8], (long long)pcount[CD_I16]);
        nw++;
    }
    if (g->meta_version == 0) {
        printf("  - meta_version 0 (legacy) model: the file carries no tensor shapes; give input shapes with "
               "--shape\n");
        nw++;
    }
    if (plan_problem[0]) {
        printf("  - shapes could not be planned: %s\n", plan_problem);
        nw++;
    }
    if (g->warnings_len) {
        const char *p = g->warnings;
        while (*p) {
            const char *e = strchr(p, '\n');
            int len = e ? (int)(e - p) : (int)strlen(p);
            printf("  - %.*s\n", len, p);
            nw++;
            p = e ? e + 1 : p + len;
        }
    }
    if (!nw) printf("  (none)\n");
}

int cd_cmd_inspect(int argc, char **argv) {
    inspect_args ia;
    int prc = parse_args(argc, argv, &ia);
    if (prc >= 0) return prc;
    const char *model = ia.model, *backends = ia.backends;
    cd_error err = {0};
    cd_graph *g = NULL;
    if (cd_model_load(model, &g, &err)) return cd_cli_fail(&err);

    /* Shapes: plan with the user's / declared shapes; a failure is reported, not fatal. */
    cd_shape *in_shapes = calloc((size_t)(g->n_inputs ? g->n_inputs : 1), sizeof *in_shapes);
    cd_plan plan;
    memset(&plan, 0, sizeof plan);
    bool planned = false;
    char notice[2048] = "", plan_problem[CD_ERR_MSG + 64] = "";
    if (!in_shapes) {
        cd_graph_free(g);
        cd_err(&err, CD_E_NOMEM, "out of memory");
        return cd_cli_fail(&err);
    }
    cd_error perr = {0};
    cd_status st = cd_resolve_input_shapes(g, ia.shapes, ia.n_shapes, in_shapes, notice, sizeof notice, &perr);
    char override[512] = "";
    if (!st) st = cd_inputs_check_declared(g, ia.shapes, ia.n_shapes, in_shapes, override, sizeof override, &perr);
    if (st == CD_E_USAGE && ia.n_shapes) {
        /* A malformed or unknown --shape is the user's mistake, not the model's. */
        free(in_shapes);
        cd_graph_free(g);
        return cd_cli_fail(&perr);
    }
    if (!st) {
        st = cd_plan_build(g, in_shapes, CD_PREC_FP32, &plan, &perr);
        if (!st) planned = true;
        if (st && override[0] && st != CD_E_NOMEM) {
            cd_inputs_override_failed(override, &perr);
            free(in_shapes);
            cd_graph_free(g);
            return cd_cli_fail(&perr);
        }
    }
    if (st) snprintf(plan_problem, sizeof plan_problem, "%s", perr.msg);

    int64_t pcount[CD_DTYPE_COUNT] = {0};
    print_header(model, g, &plan, planned, notice, pcount);
    op_counts oc = {0};
    print_ops(g, planned ? &plan : NULL, planned, &oc);
    print_summary(g, &oc, pcount, plan_problem);
    cd_inspect_mnn(g);
    int rc = 0;
    if (backends) rc = print_placement(g, planned ? &plan : NULL, backends, ia.kv, ia.n_kv, model);
    if (planned) cd_plan_free(&plan);
    free(in_shapes);
    cd_graph_free(g);
    return rc;
}
