/* The differential run (default command): runs are stored in the dump first, then compared
 * from the dump, so every report can be rebuilt later from the dump alone. This file walks
 * one run step by step over a diff_run (diff_priv.h); the steps' parts live beside it:
 * diff_verdict.c (policy, local check, verdict), diff_report.c (reports; `compare` and
 * `report`), diff_repro.c (repro pack), diff_inputs.c (--inputs, --calibrate). */
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include "cli/diff_priv.h"
#include "verdict/verdict.h"
#include "diag/diag.h"
#include "diag/pins.h"
#include "backends/registry.h"

/* CLDIFF_PHASE_TIMES=1: the wall and CPU time (user + sys of this process and of its waited-for
 * children, e.g. the OpenCL child) of each phase of the run, on stderr (docs/benchmarks.md,
 * "fp16 cost"). Each phase_end() reports the time since the previous one. */
static struct {
    int on;
    double wall, cpu;
} phase = {.on = -1};

static void phase_now(double *wall, double *cpu) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    *wall = (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
    struct rusage a, b;
    getrusage(RUSAGE_SELF, &a);
    getrusage(RUSAGE_CHILDREN, &b);
    *cpu = ((double)(a.ru_utime.tv_sec + a.ru_stime.tv_sec + b.ru_utime.tv_sec + b.ru_stime.tv_sec)) * 1e3 +
        (double)(a.ru_utime.tv_usec + a.ru_stime.tv_usec + b.ru_utime.tv_usec + b.ru_stime.tv_usec) / 1e3;
}

static void phase_end(const char *name) {
    if (phase.on < 0) {
        const char *e = getenv("CLDIFF_PHASE_TIMES");
        phase.on = e && *e && strcmp(e, "0");
        if (phase.on) phase_now(&phase.wall, &phase.cpu);
    }
    if (!phase.on) return;
    double w, c;
    phase_now(&w, &c);
    if (name) fprintf(stderr, "cldiff: phase %-12s wall %8.0f ms  cpu %8.0f ms\n", name, w - phase.wall, c - phase.cpu);
    phase.wall = w;
    phase.cpu = c;
}

/* Tests of interruptions (docs/verdicts.md "Incomplete"): CLDIFF_TEST_SIGNAL_AT=PHASE (A, B,
 * local, report) raises SIGINT on this process as the differential run enters that phase: an
 * interruption at a known point, not after a sleep. (run:RUN:N, op N of a run, is session.c's.) */
static void test_signal_at(diff_run *d, const char *ph, const char *what) {
    d->phase = what;
    const char *e = getenv("CLDIFF_TEST_SIGNAL_AT");
    if (e && !strcmp(e, ph)) raise(SIGINT);
}

static void diff_b_req(diff_run *d, cd_forcing *rec, cd_run_req *qb);

/* The tolerance policy and the session; names the runs. */
static cd_status diff_open(diff_run *d, cd_error *err) {
    const cd_cli_opts *o = d->o;
    d->auto_tol = o->tolerance_file && !strcmp(o->tolerance_file, "auto");
    d->have_pol = true;
    cd_status st = cd_diff_load_policy(o, o->prec, &d->pol, err);
    if (st) return st;
    /* which runs are made where: the verdict's protocol (src/verdict/judge.c) */
    cd_protocol *p = &d->proto;
    cd_verdict_protocol(o->backends[0], o->backends[1], o->prec, cd_local_enabled(o), p);
    /* run B started ahead where its backend can: the OpenCL child loads its driver, answers
     * the availability check and prepares while run A runs (isolate.c) */
    const cd_backend_def *db = cd_backend_lookup(o->backends[1]);
    bool ahead = (p->kind == CD_PROTO_A_RECORDS || p->kind == CD_PROTO_B_OWN) && db && db->prestart &&
        strcmp(o->backends[0], o->backends[1]) &&
        !(getenv("CLDIFF_NO_PRESTART") && strcmp(getenv("CLDIFF_NO_PRESTART"), "0"));
    d->session_open = true;
    if ((st = cd_session_open_defer(&d->s, o, ahead ? 1 : -1, err))) return st;
    if (ahead) {
        d->A = p->a;
        d->B = p->b;
        snprintf(d->run_a, sizeof d->run_a, "%s", p->run_a);
        snprintf(d->run_b, sizeof d->run_b, "%s", p->run_b);
        snprintf(d->run_local, sizeof d->run_local, "%s", p->run_local);
        d->local = p->local;
        if (d->local) {
            cd_error e2 = {0};
            const char *sd = getenv("CLDIFF_SCRATCH_DIR");
            /* not shared (no mapping): B's child starts after A, as it always did */
            if (cd_forcing_new_shared(sd && *sd ? sd : o->out_dir, d->s.g->n_tensors, &d->pre_rec, &e2) &&
                (st = cd_forcing_new(sd && *sd ? sd : o->out_dir, d->s.g->n_tensors, &d->pre_rec, err)))
                return st;
        }
        if (p->kind == CD_PROTO_B_OWN) /* fp16: B records its own activations (B's record) */
            d->qb = (cd_run_req){.backend = d->B, .run = d->run_b, .prec = o->prec, .record = d->pre_rec};
        else
            diff_b_req(d, d->pre_rec, &d->qb);
        d->have_qb = true;
        if ((st = cd_session_prestart(&d->s, &d->qb, err))) return st;
    }
    d->A = p->a;
    d->B = p->b;
    d->ref = p->ref;
    d->engine_b = p->kind == CD_PROTO_ENGINE_B;
    d->own_inputs = p->kind == CD_PROTO_B_OWN;
    d->local = p->local;
    snprintf(d->run_a, sizeof d->run_a, "%s", p->run_a);
    snprintf(d->run_b, sizeof d->run_b, "%s", p->run_b);
    snprintf(d->run_local, sizeof d->run_local, "%s", p->run_local);
    /* the compared pair, for whoever judges the dump later (cd_judge_pick_runs) */
    if ((st = cd_dump_set_attr_str(d->s.dump, "/", "run_a", d->run_a, err)) ||
        (st = cd_dump_set_attr_str(d->s.dump, "/", "run_b", d->run_b, err)))
        return st;
    if (!o->quiet && !d->ctx->collect_only)
        printf("cldiff %s: %s (%s), %d ops, %d probed, %s, %s vs %s%s\n", CLDIFF_VERSION, o->model, d->s.model_format,
               d->s.g->n_ops, d->s.n_probed, o->prec == CD_PREC_FP16 ? "fp16" : "fp32", d->A, d->B,
               o->repeat > 1 ? ", B repeated" : "");
    /* the header is the run's start, shown as it happens: a piped stdout was flushed by the fork of
     * B's child after it until that child was started ahead, before the header (isolate.c) */
    fflush(stdout);
    return CD_OK;
}

/* B's repeats (--repeat N): the same run again, for nondeterminism. */
static void diff_run_repeats(diff_run *d) {
    const cd_cli_opts *o = d->o;
    for (int r = 1; !d->stb && r < o->repeat; r++) {
        char rep[48];
        snprintf(rep, sizeof rep, "%s_rep%d", d->run_b, r);
        d->phase = "B's repeats";
        d->stb = cd_session_run(&d->s, d->B, rep, o->prec, &d->rr, &d->eb);
        d->wall_rep += d->rr.wall_ms;
        if (d->stb == CD_E_CRASH) d->crashed = true;
    }
    if (o->repeat > 1) phase_end("B repeats");
}

/* Run A (recording, for the local check, the activations every probed layer reads), run B
 * (running each probed layer again on them: run <b>_local) and B's repeats. B's failure
 * goes to d->stb / d->eb. */
/* B is a whole-model engine: it cannot run one layer on A's inputs, so the record keeps B's own
 * activations and cldiff's CPU runs every probed layer on them (run <b>_local): B's output of a
 * layer against the CPU's on the same inputs is that layer's local error (docs/verdicts.md,
 * "Engines"). */
static cd_status diff_run_engine_b(diff_run *d, cd_forcing *rec, cd_error *err) {
    const cd_cli_opts *o = d->o;
    cd_run_req qa = {.backend = d->A, .run = d->run_a, .prec = o->prec};
    test_signal_at(d, "A", "run A");
    cd_status st = cd_session_run_req(&d->s, &qa, &d->ra, err);
    phase_end("A");
    if (st) return st;
    cd_run_req qb = {.backend = d->B, .run = d->run_b, .prec = o->prec, .record = rec};
    test_signal_at(d, "B", "run B");
    d->stb = cd_session_run_req(&d->s, &qb, &d->rb, &d->eb);
    phase_end("B");
    d->crashed = d->stb == CD_E_CRASH;
    if (!d->stb && d->local && rec) {
        d->phase = "the local pass";
        cd_run_req ql = {.backend = d->ref,
                         .prec = o->prec,
                         .force = rec,
                         .local_run = d->run_local,
                         .forced_from = d->run_b,
                         .local_only = true,
                         .int8_dequant = cd_backend_lookup(d->B)->float_int8};
        st = cd_session_run_req(&d->s, &ql, &d->rl, err);
        phase_end("B local");
        if (st) return st;
    }
    diff_run_repeats(d);
    return CD_OK;
}

/* fp16: the local check on B's own inputs (docs/verdicts.md, "Two errors per layer"). In
 * fp16 B's inputs never equal A's (each side rounds to half its own way), so nothing settles
 * and re-running every layer of B on A's inputs doubled B's work. Instead B's free run records
 * its activations (rec) and ref_local, the float32 kernel with B's half weights, runs every
 * probed layer on them and checks B's free-run output of it under the layer's bound as it
 * runs (cd_local_settle_own). B runs nothing twice; only layers over their bound keep
 * ref_local's tensor in the dump for the local check's closer look. */
static cd_status diff_run_own_inputs(diff_run *d, cd_forcing *rec, cd_error *err) {
    const cd_cli_opts *o = d->o;
    cd_run_req qa = {.backend = d->A, .run = d->run_a, .prec = o->prec};
    test_signal_at(d, "A", "run A");
    cd_status st = cd_session_run_req(&d->s, &qa, &d->ra, err);
    phase_end("A");
    if (st) return st;
    if (!d->have_qb) {
        d->qb = (cd_run_req){.backend = d->B, .run = d->run_b, .prec = o->prec, .record = rec};
        d->have_qb = true;
    }
    if ((st = cd_session_prestart_check(&d->s, err))) { /* as in diff_run_a_b */
        d->unavailable = true;
        return st;
    }
    test_signal_at(d, "B", "run B");
    d->stb = cd_session_run_req(&d->s, &d->qb, &d->rb, &d->eb);
    phase_end("B");
    d->crashed = d->stb == CD_E_CRASH;
    if (!d->stb) {
        if (!(d->settled = calloc((size_t)d->s.g->n_ops + 1, 1)) ||
            !(d->settled_info = calloc((size_t)d->s.g->n_ops + 1, sizeof *d->settled_info)))
            return cd_err(err, CD_E_NOMEM, "out of memory");
        /* the reference computes in float32; B as its variant does (half storage) */
        d->settle = (cd_local_settle_ctx){.g = d->s.g,
                                          .plan = &d->s.plan,
                                          .ref = {.u = CD_U32, .half_store = false},
                                          .b = cd_verdict_side_arith(d->rb.compute, o->prec),
                                          .threads = cd_session_helper_threads(o)};
        cd_plan pref;
        if ((st = cd_verdict_ref_plan(d->s.g, d->s.in_shapes, &d->s.plan, &pref, err))) return st;
        d->phase = "the local reference run";
        cd_run_req qr = {.backend = d->ref,
                         .prec = CD_PREC_FP32,
                         .plan = &pref,
                         .force = rec,
                         .local_run = "ref_local",
                         .forced_from = d->run_b,
                         .local_only = true,
                         .int8_dequant = true,
                         .threads = cd_session_helper_threads(o),
                         .settle = cd_local_settle_own,
                         .settle_user = &d->settle,
                         .settled = d->settled,
                         .settled_info = d->settled_info};
        st = cd_session_run_req(&d->s, &qr, &d->rl, err);
        cd_plan_free(&pref);
        phase_end("ref_local");
        if (st) return st;
    }
    diff_run_repeats(d);
    return CD_OK;
}

/* Run B of the fp32 protocol: every probed layer again on A's record rec (run <b>_local).
 * Layers whose free-run output is already within their local bound of A's are settled by the
 * free run and not run again (docs/verdicts.md); the others run again on A's inputs and are
 * checked against A's values in B's process: only layers over their bound store their
 * tensors. */
static void diff_b_req(diff_run *d, cd_forcing *rec, cd_run_req *qb) {
    *qb = (cd_run_req){.backend = d->B,
                       .run = d->run_b,
                       .prec = d->o->prec,
                       .force = rec,
                       .local_run = d->local ? d->run_local : NULL,
                       .forced_from = d->run_a};
    if (d->proto.settle_b && rec && (d->settled = calloc((size_t)d->s.g->n_ops + 1, 1)) &&
        (d->settled_info = calloc((size_t)d->s.g->n_ops + 1, sizeof *d->settled_info))) {
        cd_arith f32 = {.u = CD_U32, .half_store = false};
        d->settle = (cd_local_settle_ctx){.g = d->s.g, .plan = &d->s.plan, .ref = f32, .b = f32};
        qb->settle = cd_local_settle;
        qb->settle_user = &d->settle;
        qb->settled = d->settled;
        qb->settled_info = d->settled_info;
    }
}

static cd_status diff_run_a_b(diff_run *d, cd_forcing *rec, cd_error *err) {
    const cd_cli_opts *o = d->o;
    if (d->engine_b) return diff_run_engine_b(d, rec, err);
    if (d->own_inputs) return diff_run_own_inputs(d, rec, err);
    cd_run_req qa = {.backend = d->A, .run = d->run_a, .prec = o->prec, .record = rec};
    test_signal_at(d, "A", "run A");
    cd_status st = cd_session_run_req(&d->s, &qa, &d->ra, err);
    phase_end("A");
    if (st) return st;
    if (!d->have_qb) {
        diff_b_req(d, rec, &d->qb);
        d->have_qb = true;
    }
    /* B started ahead without its availability answer (a device found before): B missing now
     * fails the run as the check before A would have, nothing kept */
    if ((st = cd_session_prestart_check(&d->s, err))) {
        d->unavailable = true;
        return st;
    }
    test_signal_at(d, "B", "run B");
    d->stb = cd_session_run_req(&d->s, &d->qb, &d->rb, &d->eb);
    phase_end("B");
    d->crashed = d->stb == CD_E_CRASH;
    diff_run_repeats(d);
    return CD_OK;
}

/* fp16: the golden run (CPU float32: each side's distance from float32, the fp16 hazards). */
static cd_status diff_run_golden(diff_run *d, cd_error *err) {
    const cd_cli_opts *o = d->o;
    if ((d->stb != CD_OK && !d->crashed) || !d->proto.golden) return CD_OK;
    /* an op cldiff's CPU has no kernel for (an MNN op planned from the engine's shapes,
     * docs/mnn.md "Ops cldiff does not map"): no golden run, the fp16 yardsticks go without it */
    for (int i = 0; i < d->s.g->n_ops; i++)
        if (!d->s.plan.defs[i] && strcmp(d->s.g->ops[i].type, "feed")) {
            if (!o->quiet)
                fprintf(stderr, "cldiff: note: no golden run (float32 on cldiff's CPU): op #%d %s has no CPU kernel\n",
                        i, d->s.g->ops[i].name);
            return CD_OK;
        }
    /* the fp16 runs' program in float32: int8 weights dequantized, as A's fp16 path has them */
    d->phase = "the golden run";
    cd_run_req qg = {.backend = d->ref,
                     .run = "golden",
                     .prec = CD_PREC_FP32,
                     .int8_dequant = true,
                     .threads = cd_session_helper_threads(o)};
    cd_status st = cd_session_run_req(&d->s, &qg, &d->rg, err);
    phase_end("golden");
    return st;
}

/* A quantized model (int8 weights or fake quantization): its outputs are held to its own
 * quantization error, measured against the unquantized float model (docs/verdicts.md). */
static bool model_quantized(const diff_run *d) {
    if (d->s.plan.int8_dequantized) return true;
    for (int i = 0; i < d->s.g->n_ops; i++)
        if (!strcmp(d->s.g->ops[i].type, "calib")) return true;
    return false;
}

/* The unquantized float model on the CPU (int8 weights dequantized, calib passing values
 * through): run float_ref, the yardstick of a quantized model's outputs. */
static cd_status diff_run_float_ref(diff_run *d, cd_error *err) {
    if (d->stb || d->crashed || !model_quantized(d) || !strcmp(d->o->dump_mode, "stats")) return CD_OK;
    d->phase = "the float_ref run";
    cd_run_req q = {.backend = d->ref,
                    .run = "float_ref",
                    .prec = CD_PREC_FP32,
                    .no_quant = true,
                    .threads = cd_session_helper_threads(d->o)};
    cd_status st = cd_session_run_req(&d->s, &q, &d->rq, err);
    phase_end("float_ref");
    cd_error e2 = {0};
    if (!st)
        st = cd_dump_set_attr_str(d->s.dump, "/runs/float_ref", "quantization", "none: calib passes values through",
                                  &e2);
    if (st && !err->msg[0]) *err = e2;
    d->have_qref = !st;
    return st;
}

/* All runs into the dump (docs/verdicts.md for the local check). */
static cd_status diff_runs(diff_run *d, cd_error *err) {
    const cd_cli_opts *o = d->o;
    cd_status st = CD_OK;
    cd_forcing *rec = NULL;
    if (d->pre_rec) { /* made with run B's start (diff_open) */
        rec = d->pre_rec;
        d->pre_rec = NULL;
    } else if (d->local) {
        /* the record lives beside the dump unless CLDIFF_SCRATCH_DIR names another disk */
        const char *sd = getenv("CLDIFF_SCRATCH_DIR");
        st = cd_forcing_new(sd && *sd ? sd : o->out_dir, d->s.g->n_tensors, &rec, err);
    }
    if (!st) st = diff_run_a_b(d, rec, err);
    if (!st) st = diff_run_golden(d, err);
    /* a partial --layers selection leaves inputs of probed layers out of the dump: keep the
     * record for the local check and the repro pack (freed with the run) */
    if (!st && rec && o->layers && strcmp(o->layers, "all"))
        d->rec = rec;
    else
        cd_forcing_free(rec);
    if (!st) st = diff_run_float_ref(d, err);
    if (!st && d->stb && !d->crashed) {
        st = d->stb;
        *err = d->eb;
    }
    return st;
}

/* The verdict of what the dump holds (src/verdict/judge.c): the live run's outputs and
 * accumulation lengths, the local check run now when live, an interruption or a failed run. */
static cd_status diff_judge(diff_run *d, const cd_verdict_run *live, const char *interrupted, const cd_error *failed,
                            cd_error *err) {
    const cd_cli_opts *o = d->o;
    const cd_graph *g = d->s.g;
    if (!d->outs && (d->outs = calloc((size_t)g->n_outputs + 1, sizeof *d->outs)))
        for (int k = 0; k < g->n_outputs; k++) d->outs[k] = g->tensors[g->outputs[k]].name;
    if (!d->acck && (d->acck = calloc((size_t)g->n_ops + 1, sizeof *d->acck)))
        for (int i = 0; i < g->n_ops; i++) d->acck[i] = cd_diag_acc_len(&d->s.plan, i);
    cd_judge_req jq = {.ra = d->r,
                       .rb = d->r,
                       .run_a = d->run_a,
                       .run_b = d->run_b,
                       .policy = &d->pol,
                       .auto_tol = d->auto_tol,
                       .threads = cd_session_helper_threads(o),
                       .outputs = d->outs,
                       .n_outputs = d->outs ? g->n_outputs : 0,
                       .acc_k = d->acck,
                       .n_acc_k = d->acck ? g->n_ops : 0,
                       .live = live,
                       .interrupted = interrupted,
                       .error = failed ? failed->msg : NULL,
                       .error_code = failed ? (int)failed->code : 0};
    cd_judgement j;
    cd_status st = cd_judge(&jq, &j, err);
    if (st) {
        cd_judgement_free(&j);
        return st;
    }
    d->an = j.an;
    d->have_an = j.have_an;
    d->q = j.q;
    /* j's run names live in j, on this stack frame: the request keeps d's own copies */
    d->q.run_a = d->run_a;
    d->q.run_b = d->run_b;
    d->um = j.um;
    d->nu = j.nu;
    if (j.interrupted_local) d->stop_phase = "the local check";
    j.have_an = false;
    j.um = NULL;
    cd_judgement_free(&j);
    return CD_OK;
}

/* Interrupted, or a backend failed after run A: the reports say what was and was not checked
 * (verdict incomplete, or error naming the failure) from what the dump kept, marked
 * incomplete; the exit code is 130 or the failure's. A failure before run B has nothing to
 * judge. */
static int diff_runs_failed(diff_run *d, cd_status st, const cd_error *err) {
    cd_error e2 = {0};
    if (d->unavailable) return cd_cli_fail(err); /* the dump is discarded (cd_session_free) */
    bool interrupted = st == CD_E_INTERRUPTED;
    /* the dump says what stopped it, for whoever judges it later (cd_judge) */
    if (d->s.dump && interrupted)
        cd_dump_set_attr_str(d->s.dump, "/", "interrupted", d->phase ? d->phase : "the runs", &e2);
    else if (d->s.dump && d->ra.complete) {
        cd_dump_set_attr_str(d->s.dump, "/", "error", err->msg, &e2);
        cd_dump_set_attr_i64(d->s.dump, "/", "error_code", err->code ? (int)err->code : CD_E_INTERNAL, &e2);
    }
    bool closed = cd_session_close(&d->s, false, &e2) == CD_OK;
    if (!closed || d->ctx->collect_only || (!interrupted && !d->ra.complete)) return cd_cli_fail(err);
    if (cd_dump_open(d->s.dump_path, &d->r, &e2) != CD_OK) return cd_cli_fail(err);
    char phase[96];
    snprintf(phase, sizeof phase, "%s", d->phase ? d->phase : "the runs");
    if (diff_judge(d, NULL, interrupted ? phase : NULL, interrupted ? NULL : err, &e2) != CD_OK) {
        cd_cli_fail(&e2);
        return cd_cli_fail(err);
    }
    if (!d->o->quiet)
        fprintf(stderr, "cldiff: %s %s: writing the reports of what was compared (verdict %s)\n",
                interrupted ? "interrupted during" : "failed in", phase, interrupted ? "incomplete" : "error");
    cd_diff_fill_env(d);
    cd_dump_reader_close(d->r); /* the table goes into the dump, then the reports read it back */
    d->r = NULL;
    cd_diff_store_table(d);
    if (cd_dump_open(d->s.dump_path, &d->r, &e2) != CD_OK) return cd_cli_fail(err);
    d->q.ra = d->q.rb = d->r;
    if (d->q.rg) d->q.rg = d->r;
    cd_error re = {0};
    if (cd_diff_write_reports(&d->q, &d->an, d->um, d->nu, &d->env, d->o->out_dir, d->o->quiet, &re)) cd_cli_fail(&re);
    return cd_cli_fail(err);
}

/* The comparison from the dump, the local check of every layer and the verdict: the judge. */
static cd_status diff_compare(diff_run *d, cd_error *err) {
    cd_status st = cd_dump_open(d->s.dump_path, &d->r, err);
    if (st) return st;
    cd_verdict_run v;
    bool live = cd_diff_verdict_run(d, &v);
    test_signal_at(d, "local", "the local check");
    st = diff_judge(d, live ? &v : NULL, NULL, NULL, err);
    phase_end("judge");
    return st;
}

/* --inputs / --calibrate pass: the analysis goes to the caller, no reports. */
static int diff_hand_over(diff_run *d) {
    *d->ctx->an_out = d->an;
    memset(&d->an, 0, sizeof d->an);
    d->have_an = false;
    return cd_verdict_exit_code(d->ctx->an_out);
}

/* Reports from the dump (reopened: the comparison table is in it now), notes, exit code,
 * and the --baseline gate. */
static int diff_write_outputs(diff_run *d) {
    const cd_cli_opts *o = d->o;
    cd_error err = {0};
    if (cd_dump_open(d->s.dump_path, &d->r, &err)) return cd_cli_fail(&err);
    d->q.ra = d->q.rb = d->r;
    if (d->q.rg) d->q.rg = d->r;
    if (cd_diff_write_reports(&d->q, &d->an, d->um, d->nu, &d->env, o->out_dir, o->quiet, &err))
        return cd_cli_fail(&err);
    for (int i = 0; i < d->nu && !o->quiet; i++)
        fprintf(stderr, "cldiff: note: tensor '%s' of %s (op #%d) is only in run %s\n", d->um[i].tensor, d->um[i].layer,
                d->um[i].op_index, d->um[i].side == 'a' ? d->run_a : d->run_b);
    int rc = cd_stop_flag ? CD_E_INTERRUPTED : cd_verdict_exit_code(&d->an);
    if (d->crashed && !o->quiet) fprintf(stderr, "cldiff: %s\n", d->eb.msg);
    if (o->baseline) {
        int nf = 0;
        cd_error be = {0};
        cd_status bs = cd_diff_baseline_gate(o, d->r, d->run_b, &d->pol, &nf, &be);
        if (bs)
            rc = cd_cli_fail(&be);
        else if (nf && !rc)
            rc = CD_E_TOLERANCE;
    }
    return rc;
}

/* After the verdict: aggregates, repro pack, pins, the stored table, the reports. */
static int diff_finish(diff_run *d) {
    const cd_cli_opts *o = d->o;
    test_signal_at(d, "report", "the reports");
    /* a signal after the verdict: the reports (and the dump) say the run was interrupted */
    if (cd_stop_flag && !d->stop_phase) {
        d->stop_phase = d->phase;
        cd_judge_req jq = {.ra = d->r, .rb = d->r, .run_a = d->run_a, .run_b = d->run_b};
        cd_judge_interrupted(&jq, &d->an, d->um, d->nu, d->stop_phase);
    }
    if (d->ctx->agg) {
        cd_diff_agg_apply(d->ctx->agg, &d->an);
        snprintf(d->an.inputs_dir, sizeof d->an.inputs_dir, "%s", o->inputs_dir ? o->inputs_dir : "");
        snprintf(d->an.worst_input, sizeof d->an.worst_input, "%s", d->ctx->worst_input ? d->ctx->worst_input : "");
    }
    cd_diff_fill_env(d);
    cd_diff_repro_pack(d);
    cd_dump_reader_close(d->r);
    d->r = NULL;
    /* --suggest-pins: float32 CPU pins for failing layers inside the fp16 OpenCL run. */
    if (o->suggest_pins && !d->crashed && !d->stop_phase) {
        cd_error pe = {0};
        cd_pins_run pr = {.g = d->s.g,
                          .plan = &d->s.plan,
                          .plan32 = d->s.have_plan32 ? &d->s.plan32 : NULL,
                          .inputs = d->s.inputs.values,
                          .opts = cd_session_backend_opts(o, o->prec),
                          .prec = o->prec,
                          .dump_path = d->s.dump_path,
                          .ref_run = o->backends[0],
                          .stop_flag = &cd_stop_flag};
        cd_status ps = cd_diag_suggest_pins(&pr, &d->an, &d->pol, d->B, &pe);
        if (ps == CD_E_INTERRUPTED) return cd_cli_fail(&pe);
        if (ps) snprintf(d->an.pins_note, sizeof d->an.pins_note, "%s", pe.msg);
    }
    cd_diff_store_table(d);
    return diff_write_outputs(d);
}

static void diff_free(diff_run *d) {
    cd_forcing_free(d->rec);
    cd_forcing_free(d->pre_rec);
    free(d->settled);
    free(d->settled_info);
    if (d->have_an) cd_analysis_free(&d->an);
    free(d->um);
    free(d->outs);
    free(d->acck);
    if (d->r) cd_dump_reader_close(d->r);
    if (d->session_open) cd_session_free(&d->s);
    if (d->have_pol) cd_policy_free(&d->pol);
}

int cd_diff_core(const cd_cli_opts *o, diff_ctx *ctx) {
    cd_install_signal_handlers();
    diff_run d;
    memset(&d, 0, sizeof d);
    d.o = o;
    d.ctx = ctx;
    cd_error err = {0};
    cd_status st;
    int rc;
    phase_end(NULL);
    if (diff_open(&d, &err))
        rc = cd_cli_fail(&err);
    else if (phase_end("open"), (st = diff_runs(&d, &err)))
        rc = diff_runs_failed(&d, st, &err);
    else if (cd_session_close(&d.s, true, &err) || (phase_end("close dump"), diff_compare(&d, &err)))
        rc = cd_cli_fail(&err);
    else if (ctx->collect_only)
        rc = diff_hand_over(&d);
    else
        rc = diff_finish(&d);
    diff_free(&d);
    phase_end("reports");
    return rc;
}
