/* The one judge (docs/verdicts.md "One judge", docs/design.md §5.4): the verdict of two runs read
 * from their dumps. The differential run (live), `cldiff report DUMP` and `cldiff compare A B`
 * all call cd_judge and nothing else decides a verdict, so a report rebuilt from a dump is the
 * live run's report.
 *
 * What it does, in order: the runs' precision and (for two dumps) whether they are runs of one
 * model on one input; the comparison of the free runs with diag's rules; --repeat's
 * nondeterminism (every <b>_rep<k> run the dump holds); a crash recorded on run B; the growth
 * analysis; the local check (run now for a live run, read back from /local otherwise); the
 * output yardsticks (float_ref, golden); the verdict; then what the comparison did not cover:
 * a partial dump or run, an interruption, 0 layers, probed tensors in one run only, which makes
 * any verdict but a kernel fault or a crash `incomplete`, and a failed run, which makes it
 * `error`. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "backends/registry.h"
#include "diag/diag.h"
#include "util/sha256.h"
#include "verdict/verdict.h"

void cd_verdict_protocol(const char *a, const char *b, cd_precision prec, bool local, cd_protocol *p) {
    memset(p, 0, sizeof *p);
    const cd_backend_def *db = cd_backend_lookup(b);
    p->a = a;
    p->b = b;
    p->ref = cd_backend_reference()->name;
    snprintf(p->run_a, sizeof p->run_a, "%s", a);
    /* the same backend twice: B's run is <b>_b */
    snprintf(p->run_b, sizeof p->run_b, strcmp(a, b) ? "%s" : "%s_b", b);
    p->local = local;
    if (local) snprintf(p->run_local, sizeof p->run_local, "%s_local", p->run_b);
    p->kind = db && !db->op_by_op       ? CD_PROTO_ENGINE_B
        : local && prec == CD_PREC_FP16 ? CD_PROTO_B_OWN
                                        : CD_PROTO_A_RECORDS;
    /* settling needs B's process to hold A's record: the isolated OpenCL child */
    p->settle_b = local && p->kind == CD_PROTO_A_RECORDS && db && db->opencl;
    p->golden = prec == CD_PREC_FP16;
}

cd_precision cd_judge_precision(const cd_dump_reader *r) {
    char prec[16] = "fp32";
    cd_error e = {0};
    cd_dump_attr_str(r, "/", "precision", prec, sizeof prec, &e);
    return !strcmp(prec, "fp16") ? CD_PREC_FP16 : CD_PREC_FP32;
}

/* A helper run of a differential run, not one of the compared pair. */
static bool helper_run(const char *nm) {
    size_t l = strlen(nm);
    const char *rep = strstr(nm, "_rep");
    return !strcmp(nm, "golden") || !strcmp(nm, "float_ref") || (l > 6 && !strcmp(nm + l - 6, "_local")) ||
        (rep && rep[4] >= '0' && rep[4] <= '9');
}

static bool run_backend_is_reference(const cd_dump_reader *r, const char *run) {
    char path[300], be[64] = "";
    cd_error e = {0};
    snprintf(path, sizeof path, "/runs/%s", run);
    cd_dump_attr_str(r, path, "backend", be, sizeof be, &e);
    const cd_backend_def *d = cd_backend_lookup(be[0] ? be : run);
    return d && d->reference;
}

bool cd_judge_pick_runs(const cd_dump_reader *r, char *run_a, char *run_b, size_t n) {
    cd_error e = {0};
    run_a[0] = run_b[0] = 0;
    /* a differential run records its pair at the root */
    if (cd_dump_attr_str(r, "/", "run_a", run_a, n, &e) == CD_OK &&
        cd_dump_attr_str(r, "/", "run_b", run_b, n, &e) == CD_OK && run_a[0] && run_b[0] &&
        cd_dump_find_run(r, run_a) >= 0)
        return true;
    run_a[0] = run_b[0] = 0;
    const char *a = NULL, *b = NULL;
    for (int i = 0; i < cd_dump_n_runs(r); i++) {
        const char *nm = cd_dump_run_name(r, i);
        if (helper_run(nm)) continue;
        if (!a)
            a = nm;
        else if (!b)
            b = nm;
    }
    if (a && b) {
        /* B is the run with a local run (<b>_local: `--backends paddle-lite,cpu` stores runs
         * paddle-lite, cpu and cpu_local); else A is the run of the reference backend */
        char loc[300];
        snprintf(loc, sizeof loc, "%s_local", a);
        bool swap = cd_dump_find_run(r, loc) >= 0;
        snprintf(loc, sizeof loc, "%s_local", b);
        if (!swap && cd_dump_find_run(r, loc) < 0)
            swap = !run_backend_is_reference(r, a) && run_backend_is_reference(r, b);
        if (swap) {
            const char *t = a;
            a = b;
            b = t;
        }
    }
    if (a) snprintf(run_a, n, "%s", a);
    if (b) snprintf(run_b, n, "%s", b);
    return a && b;
}

/* The input digest of a dump: SHA-256 over every /inputs dataset's name, shape and float32
 * values, in the dump's order ("" when it holds none). */
static void input_digest(const cd_dump_reader *r, char hex[65]) {
    hex[0] = 0;
    char **names = NULL;
    int nn = 0;
    cd_error e = {0};
    if (!cd_dump_has(r, "/inputs") || cd_dump_list_group(r, "/inputs", &names, &nn, &e) || !nn) {
        if (names) cd_dump_names_free(names, nn);
        return;
    }
    cd_sha256_ctx c;
    cd_sha256_init(&c);
    for (int k = 0; k < nn; k++) {
        char ip[600], sh[96] = "";
        snprintf(ip, sizeof ip, "/inputs/%s", names[k]);
        float *data = NULL;
        cd_shape shp = {0};
        cd_sha256_update(&c, names[k], strlen(names[k]) + 1);
        if (cd_dump_read_path_f32(r, ip, &data, &shp, &e) == CD_OK) {
            cd_shape_str(&shp, sh, sizeof sh);
            cd_sha256_update(&c, sh, strlen(sh) + 1);
            cd_sha256_update(&c, data, (size_t)cd_shape_numel(&shp) * sizeof(float));
        }
        free(data);
    }
    cd_dump_names_free(names, nn);
    uint8_t dg[32];
    cd_sha256_final(&c, dg);
    cd_sha256_hex(dg, hex);
}

/* Two dumps hold runs of one model on one input, or the comparison means nothing. */
static cd_status same_model_and_input(const cd_judge_req *q, cd_error *err) {
    char ma[80] = "", mb[80] = "", ia[65], ib[65];
    cd_error e = {0};
    cd_dump_attr_str(q->ra, "/", "model_sha256", ma, sizeof ma, &e);
    cd_dump_attr_str(q->rb, "/", "model_sha256", mb, sizeof mb, &e);
    if (strcmp(ma, mb))
        return cd_err(err, CD_E_MODEL,
                      "the dumps hold runs of different models (model digest %s in %s, %s in %s): their layers do not "
                      "correspond; --force compares them anyway",
                      ma[0] ? ma : "(none)", cd_dump_reader_path(q->ra), mb[0] ? mb : "(none)",
                      cd_dump_reader_path(q->rb));
    input_digest(q->ra, ia);
    input_digest(q->rb, ib);
    /* a dump that recorded no inputs (an imported phone run: the device's outputs only) cannot
     * be checked for the input: said, not refused */
    if (!ia[0] || !ib[0]) {
        fprintf(stderr,
                "cldiff: note: %s records no inputs, so that both runs saw the same input is not checked "
                "(cldiff import keeps the device's outputs only)\n",
                cd_dump_reader_path(!ia[0] ? q->ra : q->rb));
        return CD_OK;
    }
    if (strcmp(ia, ib))
        return cd_err(err, CD_E_MODEL,
                      "the dumps hold runs on different inputs (input digest %s in %s, %s in %s); --force compares "
                      "them anyway",
                      ia[0] ? ia : "(none)", cd_dump_reader_path(q->ra), ib[0] ? ib : "(none)",
                      cd_dump_reader_path(q->rb));
    return CD_OK;
}

/* The model outputs (the inputs of the fetch ops in /model/ops) and each op's accumulation
 * length (the stored comparison table's acc_k), as the dump recorded them. */
static void read_outputs(const cd_dump_reader *r, cd_judgement *j) {
    cd_error e = {0};
    int64_t nr = 0;
    cd_column ops[] = {{"type", CD_COL_STR, NULL}, {"inputs", CD_COL_STR, NULL}};
    if (!cd_dump_has(r, "/model/ops") || cd_dump_read_table(r, "/model/ops", ops, 2, &nr, &e) != CD_OK) return;
    const char *const *ty = ops[0].data, *const *in = ops[1].data;
    j->outs = calloc((size_t)nr + 1, sizeof *j->outs);
    for (int64_t k = 0; j->outs && k < nr; k++) {
        const char *eq = ty[k] && !strcmp(ty[k], "fetch") && in[k] ? strchr(in[k], '=') : NULL;
        if (!eq || !eq[1]) continue;
        size_t len = strcspn(eq + 1, ",;");
        char *nm = malloc(len + 1);
        if (!nm) break;
        memcpy(nm, eq + 1, len);
        nm[len] = 0;
        j->outs[j->n_outs++] = nm;
    }
    cd_dump_table_free(ops, 2, nr);
}

static void read_acck(const cd_dump_reader *r, const char *run_a, const char *run_b, cd_judgement *j) {
    cd_error e = {0};
    int64_t nr = 0;
    char path[300];
    snprintf(path, sizeof path, "/compare/%s__%s/table", run_a, run_b);
    cd_column ck[] = {{"op_index", CD_COL_I64, NULL}, {"acc_k", CD_COL_I64, NULL}};
    if (!cd_dump_has(r, path) || cd_dump_read_table(r, path, ck, 2, &nr, &e) != CD_OK) return;
    const int64_t *oi = ck[0].data, *k = ck[1].data;
    int64_t mx = -1;
    for (int64_t i = 0; i < nr; i++)
        if (oi[i] > mx && oi[i] < (1 << 24)) mx = oi[i];
    if (mx >= 0 && (j->acck = calloc((size_t)mx + 1, sizeof *j->acck))) {
        j->n_acck = (int)mx + 1;
        for (int64_t i = 0; i < nr; i++)
            if (oi[i] >= 0 && oi[i] <= mx) j->acck[oi[i]] = k[i];
    }
    cd_dump_table_free(ck, 2, nr);
}

static int count_repeats(const cd_dump_reader *r, const char *run_b) {
    int n = 0;
    for (;; n++) {
        char rep[160];
        snprintf(rep, sizeof rep, "%s_rep%d", run_b, n + 1);
        if (cd_dump_find_run(r, rep) < 0) return n;
    }
}

static bool run_complete(const cd_dump_reader *r, const char *run) {
    char path[300];
    int64_t c = 1;
    cd_error e = {0};
    snprintf(path, sizeof path, "/runs/%s", run);
    return cd_dump_attr_i64(r, path, "complete", &c, &e) != CD_OK || c != 0;
}

static int run_tensors(const cd_dump_reader *r, const char *run, int *stats_only) {
    cd_dump_tensor_info *t = NULL;
    int n = 0;
    cd_error e = {0};
    if (cd_dump_find_run(r, run) < 0 || cd_dump_list_tensors(r, run, &t, &n, &e)) n = 0;
    if (stats_only) {
        *stats_only = 0;
        for (int i = 0; i < n; i++) *stats_only += t[i].stats_only;
    }
    free(t);
    return n;
}

static void empty_analysis(cd_analysis *an) {
    memset(an, 0, sizeof *an);
    an->first_fail = an->nonfinite_origin = an->first_nondet = an->first_fault = -1;
}

/* What the comparison did not cover, in words (an->incomplete), "" when it covered all. The
 * interruption is the caller's (a live run) or the one the dump recorded (root attribute
 * `interrupted`, the phase). */
static const char *base_name(const char *p) {
    const char *s = p ? strrchr(p, '/') : NULL;
    return s ? s + 1 : p ? p : "";
}

static void coverage(const cd_judge_req *q, cd_analysis *an, const char *run_a, const char *run_b,
                     const cd_cmp_unmatched *um, int nu, const char *interrupted) {
    char why[320] = "", stored[96] = "";
    size_t o = 0;
    cd_error e = {0};
    an->incomplete[0] = 0;
    if ((!interrupted || !interrupted[0]) &&
        cd_dump_attr_str(q->ra, "/", "interrupted", stored, sizeof stored, &e) == CD_OK && stored[0])
        interrupted = stored;
#define WHY(...)                                                                                                       \
    do {                                                                                                               \
        if (o < sizeof why) o += (size_t)snprintf(why + o, sizeof why - o, "%s", o ? "; " : "");                       \
        if (o < sizeof why) o += (size_t)snprintf(why + o, sizeof why - o, __VA_ARGS__);                               \
    } while (0)
    if (interrupted && interrupted[0]) {
        WHY("interrupted during %s", interrupted);
        an->interrupted = true;
    }
    /* the file's name only: a live run's dump moves from the --out staging folder to --out or
     * to the partial folder beside it, and the report rebuilt from it must say the same */
    if (!cd_dump_reader_complete(q->ra)) WHY("dump %s is partial (complete=0)", base_name(cd_dump_reader_path(q->ra)));
    if (q->rb != q->ra && !cd_dump_reader_complete(q->rb))
        WHY("dump %s%s is partial (complete=0)", q->rb != q->ra ? "B " : "", base_name(cd_dump_reader_path(q->rb)));
    if (cd_dump_find_run(q->ra, run_a) < 0)
        WHY("run %s is missing", run_a);
    else if (!run_complete(q->ra, run_a))
        WHY("run %s stopped early", run_a);
    if (cd_dump_find_run(q->rb, run_b) < 0)
        WHY("run %s is missing", run_b);
    else if (!run_complete(q->rb, run_b))
        WHY("run %s stopped early", run_b);
    an->n_unchecked = nu;
    /* tensors stored by one run only: when both runs completed they are what one backend does
     * not provide (an engine route's in-place aliases, its unfetched tensors): named in every
     * report (layers.csv rows not_compared, summary.json layers_not_compared), not a reason of
     * their own; with a run that did not complete, or dumps of different models compared with
     * --force, they are part of what was not checked */
    bool blocking = o > 0 || (q->force && q->ra != q->rb);
    if (nu && blocking) WHY("%d probed tensor(s) in one run only, not compared", nu);
    /* the local check ran: every compared layer must have been checked by it */
    int first_nl = -1, n_nl = 0;
    for (int i = 0; an->local_ran && i < an->n_layers; i++)
        if (!an->layers[i].has_local && !an->layers[i].loc_compared_only) { /* missing data, not by design */
            if (first_nl < 0) first_nl = i;
            n_nl++;
        }
    if (n_nl)
        WHY("%d of %d layer(s) not checked locally, first %s (%s)", n_nl, an->n_layers, an->layers[first_nl].layer,
            an->layers[first_nl].loc_note[0] ? an->layers[first_nl].loc_note : "no local result");
    int sa = 0, na = run_tensors(q->ra, run_a, &sa), nb = run_tensors(q->rb, run_b, NULL);
    if (!an->n_layers)
        WHY("no layer compared%s", na && sa == na ? " (the runs hold statistics only, --dump stats: no values)" : "");
#undef WHY
    if (!why[0]) return;
    char first[200] = "";
    if (nu && blocking)
        snprintf(first, sizeof first, "; first not compared: %s (op #%d, only in %s)", um[0].layer, um[0].op_index,
                 um[0].side == 'a' ? run_a : run_b);
    snprintf(an->incomplete, sizeof an->incomplete, "%s: %d layer(s) compared (run %s stored %d, run %s %d)%s", why,
             an->n_layers, run_a, na, run_b, nb, first);
}

/* Incomplete overrides every verdict but the findings that stand on what was checked: a kernel
 * fault (a layer is wrong whatever comes after it) and a crash. */
static void mark_incomplete(cd_analysis *an) {
    if (!an->incomplete[0] || an->kind == CD_KIND_FAULT || an->kind == CD_KIND_CRASH || an->kind == CD_KIND_ERROR)
        return;
    an->kind = CD_KIND_INCOMPLETE;
    an->verdict = CD_VERDICT_INCOMPLETE;
}

void cd_judge_interrupted(const cd_judge_req *q, cd_analysis *an, const cd_cmp_unmatched *um, int nu,
                          const char *phase) {
    coverage(q, an, q->run_a, q->run_b, um, nu, phase);
    mark_incomplete(an);
}

cd_status cd_judge(const cd_judge_req *q, cd_judgement *j, cd_error *err) {
    memset(j, 0, sizeof *j);
    j->prec = cd_judge_precision(q->ra);
    if (q->run_a && q->run_b) {
        snprintf(j->run_a, sizeof j->run_a, "%s", q->run_a);
        snprintf(j->run_b, sizeof j->run_b, "%s", q->run_b);
    } else if (!cd_judge_pick_runs(q->ra, j->run_a, j->run_b, sizeof j->run_a) && q->ra == q->rb) {
        if (!j->run_a[0]) return cd_err(err, CD_E_MODEL, "%s holds no runs to judge", cd_dump_reader_path(q->ra));
        snprintf(j->run_b, sizeof j->run_b, "(none)"); /* B never ran: judged incomplete below */
    }
    if (q->ra != q->rb && !q->force) {
        cd_status st = same_model_and_input(q, err);
        if (st) return st;
    }
    bool fp16 = j->prec == CD_PREC_FP16, same = q->ra == q->rb;
    const cd_dump_reader *r = q->ra;
    if (q->outputs) {
        j->q.output_tensors = q->outputs;
        j->q.n_outputs = q->n_outputs;
    } else if (same) {
        read_outputs(r, j);
        j->q.output_tensors = (const char *const *)j->outs;
        j->q.n_outputs = j->n_outs;
    }
    if (q->acc_k) {
        j->q.acc_k = q->acc_k;
        j->q.n_acc_k = q->n_acc_k;
    } else if (same) {
        read_acck(r, j->run_a, j->run_b, j);
        j->q.acc_k = j->acck;
        j->q.n_acc_k = j->n_acck;
    }
    char path[300], crash[512] = "";
    cd_error e2 = {0};
    snprintf(path, sizeof path, "/runs/%s", j->run_b);
    bool crashed = cd_dump_find_run(q->rb, j->run_b) >= 0 &&
        cd_dump_attr_str(q->rb, path, "crash_message", crash, sizeof crash, &e2) == CD_OK && crash[0];
    j->q.ra = q->ra;
    j->q.rb = q->rb;
    j->q.run_a = j->run_a;
    j->q.run_b = j->run_b;
    j->q.rg = same && fp16 && cd_dump_find_run(r, "golden") >= 0 ? r : NULL;
    j->q.run_g = "golden";
    j->q.policy = q->policy;
    j->q.by_op_index = same;
    j->q.half_ulps = fp16;
    j->q.fp16 = fp16;
    j->q.threads = q->threads;
    cd_analysis *an = &j->an;
    cd_status st = CD_OK;
    if (cd_dump_find_run(q->ra, j->run_a) < 0 || cd_dump_find_run(q->rb, j->run_b) < 0) {
        empty_analysis(an); /* a run never started (interrupted before it, failed to start) */
    } else {
        if ((st = cd_verdict_compare_runs(&j->q, q->auto_tol, an, &j->um, &j->nu, err))) return st;
        int reps = count_repeats(q->rb, j->run_b);
        if (reps && !crashed && (st = cd_verdict_merge_repeats(&j->q, j->run_b, reps + 1, an, err))) return st;
    }
    j->have_an = true;
    if (crashed) an->verdict = CD_VERDICT_CRASH;
    an->noise_floor = fp16 ? 1e-3 : 1e-6;
    an->auto_tol = q->auto_tol;
    cd_analyze(an);
    cd_diag_rank_hazards(an);
    /* the local check: run now (live) or as the differential run stored it */
    if (q->live && !crashed && !q->error) {
        st = cd_verdict_local(q->live, an, err);
        if (st == CD_E_INTERRUPTED) {
            /* a signal stopped the local check: what it checked stands, the rest is unchecked */
            if (!q->interrupted || !q->interrupted[0]) j->interrupted_local = true;
            st = CD_OK;
        }
        if (st) return st;
        if (q->live->stop_flag && *q->live->stop_flag && (!q->interrupted || !q->interrupted[0]))
            j->interrupted_local = true;
    } else if (!q->live && cd_dump_find_run(q->rb, j->run_b) >= 0) {
        char lrun[200];
        bool found = false;
        snprintf(lrun, sizeof lrun, "%s_local", j->run_b);
        if ((st = cd_local_load(q->rb, lrun, an, &found, err))) return st;
        if (found) cd_verdict_local_as_isolation(an);
        /* the local table has no element count: the local output has the free-run layer's elements */
        for (int i = 0; i < an->n_layers; i++)
            if (an->layers[i].has_local && !an->layers[i].loc.n) an->layers[i].loc.n = an->layers[i].m.n;
    }
    /* a quantized model's yardstick: the unquantized float model, when the dump holds it */
    if (same && an->n_layers && cd_dump_find_run(r, "float_ref") >= 0 &&
        (st = cd_compare_quant_ref(r, j->run_a, "float_ref", an, err)))
        return st;
    if (same && fp16 && !crashed && an->n_layers && cd_dump_find_run(r, "golden") >= 0 &&
        (st = cd_compare_golden_outputs(r, j->run_a, j->run_b, "golden", an, err)))
        return st;
    cd_decide_verdict(an, q->policy);
    cd_classify_first(an);
    coverage(q, an, j->run_a, j->run_b, j->um, j->nu, j->interrupted_local ? "the local check" : q->interrupted);
    mark_incomplete(an);
    /* a run that failed: the caller's failure, or the one the dump recorded */
    char msg[sizeof an->error] = "";
    int64_t code = q->error_code;
    if (q->error && q->error[0])
        snprintf(msg, sizeof msg, "%s", q->error);
    else if (cd_dump_attr_str(q->rb, "/", "error", msg, sizeof msg, &e2) == CD_OK && msg[0] &&
             cd_dump_attr_i64(q->rb, "/", "error_code", &code, &e2) != CD_OK)
        code = CD_E_INTERNAL;
    if (msg[0] && an->kind != CD_KIND_CRASH) {
        snprintf(an->error, sizeof an->error, "%s", msg);
        an->error_code = code > 0 && code < 256 ? (int)code : CD_E_INTERNAL;
        an->kind = CD_KIND_ERROR;
        an->verdict = CD_VERDICT_ERROR;
    }
    return CD_OK;
}

void cd_judgement_free(cd_judgement *j) {
    if (j->have_an) cd_analysis_free(&j->an);
    free(j->um);
    for (int i = 0; i < j->n_outs; i++) free(j->outs[i]);
    free(j->outs);
    free(j->acck);
    memset(j, 0, sizeof *j);
}

int cd_verdict_exit_code(const cd_analysis *an) {
    switch (an->verdict) {
    case CD_VERDICT_PASS: return CD_OK;
    case CD_VERDICT_FAIL: return CD_E_TOLERANCE;
    case CD_VERDICT_CRASH: return CD_E_CRASH;
    case CD_VERDICT_INCOMPLETE: return CD_E_INCOMPLETE;
    case CD_VERDICT_ERROR: return an->error_code ? an->error_code : CD_E_INTERNAL;
    }
    return CD_E_INTERNAL;
}
