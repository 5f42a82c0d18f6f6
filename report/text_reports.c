/* layers.csv, summary.json, junit.xml, summary.md and the terminal summary, and cd_report_all,
 * which writes every report (html.c for report.html). The helpers every reporter reads the
 * verdict through are in report_common.c. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report/atomic.h"
#include "report/report.h"

static const char *verdict_str(cd_verdict v) { return cd_report_verdict_name(v); }

static const char *shape_s(const cd_shape *s, char *b, size_t n) { return cd_shape_str(s, b, n); }

/* Whether the layer's junit testcase fails: its local check when one ran, else the free run. */
static bool layer_fails(const cd_analysis *an, const cd_layer_cmp *l) {
    return an->local_ran ? l->has_local && !l->loc_pass : !l->m.pass;
}

/* Coordinates of a flat index in shape s (row-major); rank 0 when out of range. */
static void unravel(const cd_shape *s, int64_t flat, int64_t *coord, int *rank) {
    *rank = 0;
    int64_t n = cd_shape_numel(s);
    if (flat < 0 || n <= 0 || flat >= n || s->rank <= 0) return;
    for (int k = s->rank - 1; k >= 0; k--) {
        int64_t d = s->d[k] > 0 ? s->d[k] : 1;
        coord[k] = flat % d;
        flat /= d;
    }
    *rank = s->rank;
}

/* Probed tensors stored in one run only (an incomplete run): a row each, pass "not_compared",
 * the other columns empty (docs/verdicts.md "Incomplete"). Written before the compared rows. */
static void csv_unchecked(const cd_report_input *in, FILE *f, int ncols) {
    int rest = ncols - 7; /* the columns after `pass` */
    for (int i = 0; i < in->n_unchecked; i++) {
        const cd_cmp_unmatched *u = &in->unchecked[i];
        fprintf(f, ",%d,", u->op_index);
        cd_put_csv(f, u->layer);
        fputs(",,", f);
        cd_put_csv(f, u->tensor);
        fputs(",,not_compared", f);
        for (int k = 0; k < rest; k++) fputc(',', f);
        fputc('\n', f);
    }
}

cd_status cd_report_csv(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile a;
    cd_status st = cd_afile_open(&a, dir, "layers.csv", err);
    if (st) return st;
    FILE *f = a.f;
    const cd_analysis *an = in->an;
    bool golden = an->n_layers && an->layers[0].has_golden;
    static const char *const hdr[] = {
        "order,op_index,layer,op_type,tensor,shape,pass,max_abs,mean_abs,rmse,max_rel,cosine,snr_db,max_ulp,"
        "fail_count,fail_fraction,worst_index,worst_coord,worst_ref,worst_val,nan_a,nan_b,inf_a,inf_b,"
        "nonfinite_mismatch,rel_err,growth,jump,atol,rtol,min_cos,max_fail_fraction,rule,where_a,where_b,"
        "note_b,us_a,us_b,kernel_us_b,isolated,iso_max_abs,iso_pass,top1,top5",
        ",a_vs_golden_max_abs,a_vs_golden_rel_rmse,b_vs_golden_max_abs,b_vs_golden_rel_rmse",
        /* diagnosis columns (docs/diagnosis.md), always present, appended after the others */
        ",acc_k,golden_over,golden_under,golden_absmax,fp16_risk,risk_rank,risk_reason,nonfinite_new_a,"
        "nonfinite_new_b,nonfinite_hard,repeat_spread,repeat_changed,nondeterministic,inputs,inputs_failed,"
        "worst_input,worst_max_abs,mean_max_abs,p99_max_abs,worst_rel_err,mean_rel_err,p99_rel_err,"
        "worst_fail_fraction,mean_fail_fraction,p99_fail_fraction,worst_cosine,mean_cosine,p1_cosine",
        /* local check and output tolerance (docs/verdicts.md), appended after the others */
        ",local_family,local_err,local_bound,local_ratio,local_exceed,local_pass,local_note,drift,is_output,"
        "out_range_err,out_pass"};
    int ncols = 0;
    for (int k = 0; k < 4; k++) {
        if (k == 1 && !golden) continue;
        fputs(hdr[k], f);
        for (const char *c = hdr[k]; *c; c++) ncols += *c == ',';
    }
    fputc('\n', f);
    csv_unchecked(in, f, ncols + 1);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        const cd_metrics *m = &l->m;
        char sh[128], wc[128] = "";
        size_t o = 0;
        for (int k = 0; k < l->shape.rank && o < sizeof wc; k++)
            o += (size_t)snprintf(wc + o, sizeof wc - o, "%s%lld", k ? " " : "", (long long)m->worst_coord[k]);
        fprintf(f, "%d,%d,", i, l->op_index);
        cd_put_csv(f, l->layer);
        fputc(',', f);
        cd_put_csv(f, l->op_type);
        fputc(',', f);
        cd_put_csv(f, l->tensor);
        fputc(',', f);
        cd_put_csv(f, shape_s(&l->shape, sh, sizeof sh));
        fprintf(f,
                ",%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.0f,%lld,%.9g,%lld,%s,%.9g,%.9g,%lld,%lld,%lld,%lld,%lld,%.9g,%.6g,"
                "%d,%g,%g,%g,%g,",
                m->pass, m->max_abs, m->mean_abs, m->rmse, m->max_rel, m->cosine, m->snr_db, m->max_ulp,
                (long long)m->fail_count, m->fail_fraction, (long long)m->worst_index, wc, m->worst_ref, m->worst_val,
                (long long)m->nan_ref, (long long)m->nan_val, (long long)m->inf_ref, (long long)m->inf_val,
                (long long)m->nonfinite_mismatch, l->rel_err, l->growth, l->jump, l->tol.atol, l->tol.rtol,
                l->tol.min_cos, l->tol.max_fail_fraction);
        cd_put_csv(f, l->rule);
        fputc(',', f);
        cd_put_csv(f, l->where_a);
        fputc(',', f);
        cd_put_csv(f, l->where_b);
        fputc(',', f);
        cd_put_csv(f, l->note_b);
        fprintf(f, ",%.1f,%.1f,%.1f,%d,", l->us_a, l->us_b, l->kernel_us_b, l->isolated);
        if (l->isolated)
            fprintf(f, "%.9g,%d,", l->iso.max_abs, l->iso.pass);
        else
            fputs(",,", f);
        if (l->has_topk)
            fprintf(f, "%.4f,%.4f", l->top1, l->top5);
        else
            fputc(',', f);
        if (golden) {
            if (l->has_golden)
                fprintf(f, ",%.9g,%.9g,%.9g,%.9g", l->ga.max_abs,
                        l->ga.ref_rms > 0 ? l->ga.rmse / l->ga.ref_rms : l->ga.rmse, l->gb.max_abs,
                        l->gb.ref_rms > 0 ? l->gb.rmse / l->gb.ref_rms : l->gb.rmse);
            else
                fputs(",,,,", f);
        }
        fprintf(f, ",%lld,", (long long)l->acc_k);
        if (l->has_hazard)
            fprintf(f, "%lld,%lld,%.9g,%.4g,%d,", (long long)l->g_over, (long long)l->g_under, l->g_absmax, l->risk,
                    l->risk_rank);
        else
            fputs(",,,,,", f);
        cd_put_csv(f, l->risk_reason);
        fprintf(f, ",%lld,%lld,%d,", (long long)l->nf_new_a, (long long)l->nf_new_b, l->nf_hard);
        if (l->has_repeat)
            fprintf(f, "%.9g,%lld,%d,", l->spread, (long long)l->spread_count, l->nondet);
        else
            fputs(",,,", f);
        if (l->n_agg) {
            fprintf(f, "%d,%d,", l->n_agg, l->n_agg_fail);
            cd_put_csv(f, l->worst_input);
            for (int k = 0; k < 4; k++) fprintf(f, ",%.9g,%.9g,%.9g", l->agg_worst[k], l->agg_mean[k], l->agg_p99[k]);
        } else
            fputs(",,,,,,,,,,,,,,", f);
        fputc(',', f);
        cd_put_csv(f, l->family);
        if (l->has_local)
            fprintf(f, ",%.9g,%.9g,%.9g,%lld,%d,", l->loc_err, l->loc_bound, l->loc_ratio, (long long)l->loc_exceed,
                    l->loc_pass);
        else
            fputs(",,,,,,", f);
        cd_put_csv(f, l->loc_note);
        fprintf(f, ",%d,%d,", l->drift, l->is_output);
        if (l->is_output && cd_report_outputs_judged(an))
            fprintf(f, "%.9g,%d", l->out_range_err, l->out_pass);
        else
            fputc(',', f);
        fputc('\n', f);
    }
    return cd_afile_commit(&a, err);
}

static void json_metrics(FILE *f, const cd_metrics *m) {
    fputs("{\"max_abs\":", f);
    cd_put_json_num(f, m->max_abs);
    fputs(",\"mean_abs\":", f);
    cd_put_json_num(f, m->mean_abs);
    fputs(",\"rmse\":", f);
    cd_put_json_num(f, m->rmse);
    fputs(",\"max_rel\":", f);
    cd_put_json_num(f, m->max_rel);
    fputs(",\"cosine\":", f);
    cd_put_json_num(f, m->cosine);
    fputs(",\"snr_db\":", f);
    cd_put_json_num(f, m->snr_db);
    fputs(",\"max_ulp\":", f);
    cd_put_json_num(f, m->max_ulp);
    fprintf(f, ",\"fail_count\":%lld,\"fail_fraction\":", (long long)m->fail_count);
    cd_put_json_num(f, m->fail_fraction);
    fprintf(f, ",\"worst_index\":%lld,\"nan\":[%lld,%lld],\"inf\":[%lld,%lld],\"nonfinite_mismatch\":%lld,\"pass\":%s}",
            (long long)m->worst_index, (long long)m->nan_ref, (long long)m->nan_val, (long long)m->inf_ref,
            (long long)m->inf_val, (long long)m->nonfinite_mismatch, m->pass ? "true" : "false");
}

/* Top-level diagnosis fields of summary.json (docs/diagnosis.md). */
static void diag_json(FILE *f, const cd_analysis *an) {
    fputs(",\n  \"fp16_hazards\": [", f);
    int shown = 0;
    for (int rank = 1; rank <= an->n_at_risk; rank++)
        for (int i = 0; i < an->n_layers; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (l->risk_rank != rank) continue;
            fprintf(f, "%s{\"rank\": %d, \"op_index\": %d, \"layer\": ", shown++ ? ", " : "", rank, l->op_index);
            cd_put_json_str(f, l->layer);
            fprintf(f,
                    ", \"acc_k\": %lld, \"golden_over\": %lld, \"golden_under\": %lld, \"risk\": ", (long long)l->acc_k,
                    (long long)l->g_over, (long long)l->g_under);
            cd_put_json_num(f, l->risk);
            fputs(", \"reason\": ", f);
            cd_put_json_str(f, l->risk_reason);
            fprintf(f, ", \"failed\": %s}", l->m.pass ? "false" : "true");
        }
    fprintf(f, "],\n  \"nondeterminism\": {\"repeat\": %d, \"layers\": [", an->repeat_n);
    shown = 0;
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (!l->nondet) continue;
        fprintf(f, "%s{\"op_index\": %d, \"layer\": ", shown++ ? ", " : "", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"spread\": ", f);
        cd_put_json_num(f, l->spread);
        fprintf(f, ", \"changed\": %lld, \"diagnosis\": \"race or uninitialised read\"}", (long long)l->spread_count);
    }
    fputs("], \"first\": ", f);
    if (an->first_nondet >= 0)
        cd_put_json_str(f, an->layers[an->first_nondet].layer);
    else
        fputs("null", f);
    fputs("},\n  \"inputs\": ", f);
    if (an->n_inputs_run) {
        fprintf(f, "{\"count\": %d, \"dir\": ", an->n_inputs_run);
        cd_put_json_str(f, an->inputs_dir);
        fputs(", \"worst_input\": ", f);
        cd_put_json_str(f, an->worst_input);
        fputs(", \"failing_layers\": [", f);
        shown = 0;
        for (int i = 0; i < an->n_layers; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->n_agg_fail) continue;
            fprintf(f, "%s{\"layer\": ", shown++ ? ", " : "");
            cd_put_json_str(f, l->layer);
            fprintf(f, ", \"failed_inputs\": %d, \"worst_input\": ", l->n_agg_fail);
            cd_put_json_str(f, l->worst_input);
            fputs(", \"worst_rel_err\": ", f);
            cd_put_json_num(f, l->agg_worst[CD_AGG_REL_ERR]);
            fputc('}', f);
        }
        fputs("]}", f);
    } else
        fputs("null", f);
    fputs(",\n  \"repro\": ", f);
    if (an->repro_dir[0]) {
        fputs("{\"dir\": ", f);
        cd_put_json_str(f, an->repro_dir);
        fputs(", \"command\": ", f);
        cd_put_json_str(f, an->repro_cmd);
        fputc('}', f);
    } else
        fputs("null", f);
    fputs(",\n  \"pins\": ", f);
    if (an->n_pins || an->pins_note[0]) {
        fputs("{\"note\": ", f);
        cd_put_json_str(f, an->pins_note);
        fputs(", \"tried\": [", f);
        for (int i = 0; i < an->n_pins; i++) {
            const cd_pin_result *p = &an->pins[i];
            fputs(i ? ", {\"layers\": " : "{\"layers\": ", f);
            cd_put_json_str(f, p->layers);
            fprintf(f, ", \"n\": %d, \"pass\": %s, \"out_max_abs\": ", p->n_pinned, p->pass ? "true" : "false");
            cd_put_json_num(f, p->out_max_abs);
            fputs(", \"out_cosine\": ", f);
            cd_put_json_num(f, p->out_cosine);
            fputs(", \"error\": ", f);
            cd_put_json_str(f, p->error);
            fputc('}', f);
        }
        fputs("]}", f);
    } else
        fputs("null", f);
    fprintf(f, ",\n  \"auto_tolerance\": %s", an->auto_tol ? "true" : "false");
}

/* Diagnosis sentences shared by the Markdown summary and the terminal. */
static void diag_text(const cd_report_input *in, FILE *f, bool md) {
    const cd_analysis *an = in->an;
    const char *q = md ? "`" : "";
    if (an->nonfinite_origin >= 0) {
        const cd_layer_cmp *l = &an->layers[an->nonfinite_origin];
        const char *side = !strcmp(an->nonfinite_side, "a") ? in->env->backend_a
            : !strcmp(an->nonfinite_side, "b")              ? in->env->backend_b
                                                            : "both sides";
        fprintf(f,
                "%sNaN/Inf origin%s: %s%s%s (op #%d, %s) on %s where the reference is finite (%lld on A, %lld on B); "
                "%d layer(s) hold such values.\n",
                md ? "**" : "", md ? "**" : "", q, l->layer, q, l->op_index, l->op_type, side, (long long)l->nf_new_a,
                (long long)l->nf_new_b, an->n_nonfinite_hard);
    }
    if (an->n_at_risk) {
        fprintf(f, "%sFP16 hazards%s (from the float32 golden run), %d layer(s) at risk:", md ? "**" : "",
                md ? "**" : "", an->n_at_risk);
        for (int rank = 1; rank <= an->n_at_risk && rank <= 5; rank++)
            for (int i = 0; i < an->n_layers; i++)
                if (an->layers[i].risk_rank == rank)
                    fprintf(f, "%s %d. %s%s%s (K=%lld, %s)", md ? "\n" : "\n ", rank, q, an->layers[i].layer, q,
                            (long long)an->layers[i].acc_k, an->layers[i].risk_reason);
        fputc('\n', f);
    }
    if (an->repeat_n > 1) {
        if (an->n_nondet) {
            fprintf(f, "%sNondeterministic%s over %d runs of %s (race or uninitialised read), %d layer(s):",
                    md ? "**" : "", md ? "**" : "", an->repeat_n, in->env->backend_b, an->n_nondet);
            for (int i = 0, k = 0; i < an->n_layers && k < 8; i++)
                if (an->layers[i].nondet) {
                    k++;
                    fprintf(f, " %s%s%s (spread %.4g, %lld changed)", q, an->layers[i].layer, q, an->layers[i].spread,
                            (long long)an->layers[i].spread_count);
                }
            fputc('\n', f);
        } else
            fprintf(f, "Deterministic: %d runs of %s gave bit-identical layers.\n", an->repeat_n, in->env->backend_b);
    }
    if (an->n_inputs_run) {
        fprintf(f, "Inputs: %d from %s; worst input %s%s%s (its tensors are kept).", an->n_inputs_run, an->inputs_dir,
                q, an->worst_input, q);
        for (int i = 0, k = 0; i < an->n_layers && k < 8; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->n_agg_fail) continue;
            fprintf(f, "%s %s%s%s fails on %d/%d input(s), worst %s%s%s (rel err %.3g)", k++ ? ";" : "", q, l->layer, q,
                    l->n_agg_fail, l->n_agg, q, l->worst_input, q, l->agg_worst[CD_AGG_REL_ERR]);
        }
        fputc('\n', f);
    }
    if (an->repro_dir[0]) fprintf(f, "Repro pack: %s%s%s — %s%s%s\n", q, an->repro_dir, q, q, an->repro_cmd, q);
    if (an->n_pins || an->pins_note[0]) {
        fprintf(f, "Pins (float32 on the CPU): %s.", an->pins_note);
        for (int i = 0; i < an->n_pins && i < 6; i++)
            fprintf(f, " [%s] %s%s (out max |d| %.3g)%s", an->pins[i].layers, an->pins[i].pass ? "PASS" : "fail",
                    an->pins[i].error[0] ? " error" : "", an->pins[i].out_max_abs,
                    i + 1 < an->n_pins && i < 5 ? ";" : "");
        fputc('\n', f);
    }
}

static const char *jbool(bool b) { return b ? "true" : "false"; }

/* Top-level verdict fields of summary.json (docs/verdicts.md). */
static void verdict_json(FILE *f, const cd_report_input *in) {
    const cd_analysis *an = in->an;
    cd_verdict_kind kind;
    fputs("  \"verdict_kind\": ", f);
    if (cd_report_kind(in, &kind))
        fprintf(f, "\"%s\"", cd_report_kind_name(kind));
    else
        fputs("null", f);
    fputs(",\n  \"model_defect\": ", f);
    {
        char dl[1400];
        cd_report_defect_line(an, dl, sizeof dl);
        const cd_layer_cmp *d = cd_report_first_defect(an);
        if (dl[0] && d) {
            fprintf(f, "{\"op_index\": %d, \"layer\": ", d->op_index);
            cd_put_json_str(f, d->layer);
            fprintf(f, ", \"ops\": %d, \"finding\": ", an->n_defects);
            cd_put_json_str(f, dl);
            fputs("}", f);
        } else
            fputs("null", f);
    }
    fputs(",\n  \"first_fault\": ", f);
    const cd_layer_cmp *l = cd_report_first_fault(an);
    if (l) {
        fprintf(f, "{\"op_index\": %d, \"layer\": ", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, l->op_type);
        fputs(", \"tensor\": ", f);
        cd_put_json_str(f, l->tensor);
        fputs(", \"family\": ", f);
        cd_put_json_str(f, l->family);
        fputs(", \"error\": ", f);
        cd_put_json_num(f, l->loc_err);
        fputs(", \"bound\": ", f);
        cd_put_json_num(f, l->loc_bound);
        fputs(", \"ratio\": ", f);
        cd_put_json_num(f, l->loc_ratio);
        fprintf(f, ", \"exceed\": %lld, \"elements\": %lld, \"worst_index\": %lld, \"worst_coord\": ",
                (long long)l->loc_exceed, (long long)l->loc.n, (long long)l->loc_worst);
        int64_t c[CD_MAX_RANK];
        int r;
        unravel(&l->shape, l->loc_worst, c, &r);
        if (r) {
            fputc('[', f);
            for (int k = 0; k < r; k++) fprintf(f, "%s%lld", k ? "," : "", (long long)c[k]);
            fputc(']', f);
        } else
            fputs("null", f);
        fputs(", \"note\": ", f);
        cd_put_json_str(f, l->loc_note);
        fputc('}', f);
    } else
        fputs("null", f);
    fprintf(f, ",\n  \"local_check\": {\"ran\": %s, \"reference\": ", jbool(an->local_ran));
    cd_put_json_str(f, an->local_ref);
    fprintf(f,
            ", \"layers_checked\": %d, \"faults\": %d},\n  \"layers_compared_only\": %d,\n  \"layers_drifted\": %d,\n "
            " \"output_tolerance\": ",
            an->n_local, an->n_faults, an->n_compared_only, an->n_drift);
    cd_put_json_str(f, an->out_tol_desc);
    fputs(",\n  \"outputs\": [", f);
    bool judged = cd_report_outputs_judged(an);
    int shown = 0;
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *o = &an->layers[i];
        if (!o->is_output) continue;
        fprintf(f, "%s{\"layer\": ", shown++ ? ", " : "");
        cd_put_json_str(f, o->layer);
        fputs(", \"tensor\": ", f);
        cd_put_json_str(f, o->tensor);
        fprintf(f, ", \"op_index\": %d, \"range_err\": ", o->op_index);
        if (judged)
            cd_put_json_num(f, o->out_range_err);
        else
            fputs("null", f);
        fputs(", \"cosine\": ", f);
        cd_put_json_num(f, o->m.cosine);
        fputs(", \"snr_db\": ", f);
        cd_put_json_num(f, o->m.snr_db);
        fputs(", \"max_abs\": ", f);
        cd_put_json_num(f, o->m.max_abs);
        fprintf(f, ", \"pass\": %s, \"rule\": ", judged ? jbool(o->out_pass) : "null");
        cd_put_json_str(f, o->out_rule);
        fputs(", \"task\": ", f);
        cd_put_json_str(f, o->task);
        if (o->has_topk) {
            fputs(", \"top1\": ", f);
            cd_put_json_num(f, o->top1);
            fputs(", \"top5\": ", f);
            cd_put_json_num(f, o->top5);
        }
        if (!strcmp(o->task, "detection"))
            fprintf(f, ", \"detections\": {\"ref\": %lld, \"val\": %lld, \"matched\": %lld}", (long long)o->det_ref,
                    (long long)o->det_val, (long long)o->det_matched);
        if (o->gref_b.has) { /* fp16: B against the float32 golden run */
            fputs(", \"b_vs_golden\": {\"range_err\": ", f);
            cd_put_json_num(f, o->gref_b.range_err);
            fputs(", \"cosine\": ", f);
            cd_put_json_num(f, o->gref_b.cos);
            fputs("}, \"a_vs_golden\": {\"range_err\": ", f);
            cd_put_json_num(f, o->gref_a.range_err);
            fputs(", \"cosine\": ", f);
            cd_put_json_num(f, o->gref_a.cos);
            fputc('}', f);
        }
        if (o->qref.has) { /* A against the unquantized float model: the quantization error */
            fputs(", \"quantization_error\": {\"range_err\": ", f);
            cd_put_json_num(f, o->qref.range_err);
            fputs(", \"cosine\": ", f);
            cd_put_json_num(f, o->qref.cos);
            fputc('}', f);
        }
        fputc('}', f);
    }
    fputs("],\n  \"amplifiers\": [", f);
    shown = 0;
    for (int j = 0; j < an->n_amplifiers && j < 8; j++) {
        const cd_layer_cmp *a = cd_report_layer(an, an->amplifiers[j]);
        if (!a) continue;
        fprintf(f, "%s{\"layer\": ", shown++ ? ", " : "");
        cd_put_json_str(f, a->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, a->op_type);
        fputs(", \"growth\": ", f);
        cd_put_json_num(f, a->growth);
        fputs(", \"rel_err\": ", f);
        cd_put_json_num(f, a->rel_err);
        fputc('}', f);
    }
    fputs("],\n  \"contributors\": [", f);
    shown = 0;
    for (int j = 0; j < an->n_contributors && j < 8; j++) {
        const cd_layer_cmp *c = cd_report_layer(an, an->contributors[j]);
        if (!c) continue;
        fprintf(f, "%s{\"layer\": ", shown++ ? ", " : "");
        cd_put_json_str(f, c->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, c->op_type);
        fputs(", \"ratio\": ", f);
        cd_put_json_num(f, c->loc_ratio);
        fputs(", \"rel_local\": ", f);
        cd_put_json_num(f, cd_report_rel_local(c));
        fputc('}', f);
    }
    fputs("],\n", f);
}

/* Per-layer local check in summary.json. */
static void local_json(FILE *f, const cd_layer_cmp *l) {
    fputs(", \"local\": ", f);
    if (!l->has_local) {
        fputs("null", f);
        if (l->loc_note[0]) {
            fputs(", \"local_note\": ", f);
            cd_put_json_str(f, l->loc_note);
        }
    } else {
        fputs("{\"family\": ", f);
        cd_put_json_str(f, l->family);
        fputs(", \"error\": ", f);
        cd_put_json_num(f, l->loc_err);
        fputs(", \"bound\": ", f);
        cd_put_json_num(f, l->loc_bound);
        fputs(", \"ratio\": ", f);
        cd_put_json_num(f, l->loc_ratio);
        /* the ratio sits on a cheap bound (docs/verdicts.md): exact ratio <= this */
        fprintf(f, ", \"ratio_upper\": %s", jbool(strstr(l->loc_note, "ratio: an upper bound") != NULL));
        fprintf(f, ", \"exceed\": %lld, \"pass\": %s, \"max_abs\": ", (long long)l->loc_exceed, jbool(l->loc_pass));
        cd_put_json_num(f, l->loc.max_abs);
        fputs(", \"cosine\": ", f);
        cd_put_json_num(f, l->loc.cosine);
        fputs(", \"note\": ", f);
        cd_put_json_str(f, l->loc_note);
        fputc('}', f);
    }
    fprintf(f, ", \"drift\": %s, \"is_output\": %s", jbool(l->drift), jbool(l->is_output));
}

static void json_kv(FILE *f, const char *k, const char *v, bool comma) {
    fprintf(f, "%s\n    ", comma ? "," : "");
    cd_put_json_str(f, k);
    fputc(':', f);
    cd_put_json_str(f, v);
}

cd_status cd_report_json(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile a;
    cd_status st = cd_afile_open(&a, dir, "summary.json", err);
    if (st) return st;
    FILE *f = a.f;
    const cd_analysis *an = in->an;
    const cd_report_env *e = in->env;
    fprintf(f, "{\n  \"schema\": \"cldiff-summary/1\",\n  \"verdict\": \"%s\",\n", verdict_str(an->verdict));
    fprintf(f, "  \"layers_compared\": %d,\n  \"layers_failed\": %d,\n", an->n_layers, an->n_fail);
    verdict_json(f, in);
    fputs("  \"first_divergence\": ", f);
    if (an->first_fail >= 0) {
        const cd_layer_cmp *l = &an->layers[an->first_fail];
        fprintf(f, "{\"op_index\": %d, \"layer\": ", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, l->op_type);
        fputs(", \"tensor\": ", f);
        cd_put_json_str(f, l->tensor);
        fprintf(f, ", \"kind\": \"%s\", \"metrics\": ", an->first_kind);
        json_metrics(f, &l->m);
        fputs(", \"isolated\": ", f);
        if (l->isolated)
            json_metrics(f, &l->iso);
        else
            fputs("null", f);
        fputs(", \"rule\": ", f);
        cd_put_json_str(f, l->rule);
        fputs("},\n", f);
    } else
        fputs("null,\n", f);
    fputs("  \"nonfinite_origin\": ", f);
    if (an->nonfinite_origin >= 0)
        cd_put_json_str(f, an->layers[an->nonfinite_origin].layer);
    else
        fputs("null", f);
    fputs(",\n  \"nonfinite\": {\"origin\": ", f);
    if (an->nonfinite_origin >= 0) {
        const cd_layer_cmp *l = &an->layers[an->nonfinite_origin];
        fprintf(f, "{\"op_index\": %d, \"layer\": ", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, l->op_type);
        fprintf(f, ", \"side\": \"%s\", \"new_a\": %lld, \"new_b\": %lld}", an->nonfinite_side, (long long)l->nf_new_a,
                (long long)l->nf_new_b);
    } else
        fputs("null", f);
    fprintf(f, ", \"hard_failures\": %d}", an->n_nonfinite_hard);
    diag_json(f, an);
    fputs(",\n  \"growth_jumps\": [", f);
    for (int j = 0; j < an->n_jumps; j++) {
        const cd_layer_cmp *l = &an->layers[an->jumps[j]];
        fprintf(f, "%s{\"layer\": ", j ? ", " : "");
        cd_put_json_str(f, l->layer);
        fputs(", \"growth\": ", f);
        cd_put_json_num(f, l->growth);
        fputs(", \"rel_err\": ", f);
        cd_put_json_num(f, l->rel_err);
        fputc('}', f);
    }
    fputs("],\n  \"incomplete\": ", f);
    if (an->incomplete[0])
        cd_put_json_str(f, an->incomplete);
    else
        fputs("null", f);
    fputs(",\n  \"compared_only\": [", f);
    for (int i = 0, k = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (!l->loc_compared_only) continue;
        fprintf(f, "%s{\"layer\": ", k++ ? ", " : "");
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, l->op_type);
        fputs(", \"tensor\": ", f);
        cd_put_json_str(f, l->tensor);
        fputs(", \"why\": ", f);
        cd_put_json_str(f, l->loc_note);
        fprintf(f, ", \"within_tolerance\": %s}", jbool(l->m.pass));
    }
    fputc(']', f);
    fprintf(f, ",\n  \"interrupted\": %s,\n  \"layers_not_compared\": %d,\n  \"error\": ", jbool(an->interrupted),
            an->n_unchecked);
    if (an->error[0])
        fprintf(f, "{\"message\": "), cd_put_json_str(f, an->error), fprintf(f, ", \"exit_code\": %d}", an->error_code);
    else
        fputs("null", f);
    fputs(",\n  \"crash\": ", f);
    if (e->crash)
        cd_put_json_str(f, e->crash);
    else
        fputs("null", f);
    fputs(",\n  \"environment\": {", f);
    json_kv(f, "tool_version", e->tool_version, false);
    json_kv(f, "command_line", e->command_line, true);
    json_kv(f, "model_path", e->model_path, true);
    json_kv(f, "model_sha256", e->model_sha256, true);
    json_kv(f, "model_format", e->model_format, true);
    json_kv(f, "precision", e->precision, true);
    json_kv(f, "backend_a", e->backend_a, true);
    json_kv(f, "device_a", e->device_a, true);
    json_kv(f, "driver_a", e->driver_a, true);
    json_kv(f, "backend_b", e->backend_b, true);
    json_kv(f, "device_b", e->device_b, true);
    json_kv(f, "driver_b", e->driver_b, true);
    json_kv(f, "variant_b", e->variant_b, true);
    json_kv(f, "inputs", e->input_desc, true);
    json_kv(f, "tolerance", e->tolerance_desc, true);
    json_kv(f, "created", e->created, true);
    fprintf(f, ",\n    \"seed\": %llu\n  },\n", e->seed);
    fputs("  \"timings_ms\": {\"a\": ", f);
    cd_put_json_num(f, e->wall_ms_a);
    fputs(", \"b\": ", f);
    cd_put_json_num(f, e->wall_ms_b);
    fputs(", \"total\": ", f);
    cd_put_json_num(f, e->wall_ms_total);
    fputs("},\n  \"layers\": [", f);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        fprintf(f, "%s\n    {\"op_index\": %d, \"layer\": ", i ? "," : "", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f);
        cd_put_json_str(f, l->op_type);
        fputs(", \"where_b\": ", f);
        cd_put_json_str(f, l->where_b);
        fputs(", \"rel_err\": ", f);
        cd_put_json_num(f, l->rel_err);
        fputs(", \"growth\": ", f);
        cd_put_json_num(f, l->growth);
        fputs(", \"metrics\": ", f);
        json_metrics(f, &l->m);
        if (l->has_golden) {
            fputs(", \"a_vs_golden\": ", f);
            json_metrics(f, &l->ga);
            fputs(", \"b_vs_golden\": ", f);
            json_metrics(f, &l->gb);
        }
        if (l->has_topk) {
            fputs(", \"top1\": ", f);
            cd_put_json_num(f, l->top1);
            fputs(", \"top5\": ", f);
            cd_put_json_num(f, l->top5);
        }
        fputs(", \"rule\": ", f);
        cd_put_json_str(f, l->rule);
        local_json(f, l);
        fprintf(f, ", \"acc_k\": %lld, \"nonfinite_new\": [%lld,%lld], \"nonfinite_hard\": %s", (long long)l->acc_k,
                (long long)l->nf_new_a, (long long)l->nf_new_b, l->nf_hard ? "true" : "false");
        if (l->has_hazard) {
            fprintf(f, ", \"fp16_hazard\": {\"golden_over\": %lld, \"golden_under\": %lld, \"golden_absmax\": ",
                    (long long)l->g_over, (long long)l->g_under);
            cd_put_json_num(f, l->g_absmax);
            fputs(", \"risk\": ", f);
            cd_put_json_num(f, l->risk);
            fprintf(f, ", \"risk_rank\": %d, \"reason\": ", l->risk_rank);
            cd_put_json_str(f, l->risk_reason);
            fputc('}', f);
        }
        if (l->has_repeat) {
            fputs(", \"repeat\": {\"spread\": ", f);
            cd_put_json_num(f, l->spread);
            fprintf(f, ", \"changed\": %lld, \"nondeterministic\": %s}", (long long)l->spread_count,
                    l->nondet ? "true" : "false");
        }
        if (l->n_agg) {
            static const char *const names[4] = {"max_abs", "rel_err", "fail_fraction", "cosine"};
            fprintf(f, ", \"inputs\": {\"count\": %d, \"failed\": %d, \"worst_input\": ", l->n_agg, l->n_agg_fail);
            cd_put_json_str(f, l->worst_input);
            for (int k = 0; k < 4; k++) {
                fprintf(f, ", \"%s\": {\"worst\": ", names[k]);
                cd_put_json_num(f, l->agg_worst[k]);
                fputs(", \"mean\": ", f);
                cd_put_json_num(f, l->agg_mean[k]);
                fprintf(f, ", \"%s\": ", k == CD_AGG_COSINE ? "p1" : "p99");
                cd_put_json_num(f, l->agg_p99[k]);
                fputc('}', f);
            }
            fputc('}', f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return cd_afile_commit(&a, err);
}

/* Output testcases exist when the local check ran (the new verdict model); without it the
 * layer testcases keep their free-run meaning and the file is as it always was. They form a
 * second testsuite, so the first keeps one testcase per compared layer. */
static bool junit_outputs(const cd_analysis *an) { return an->local_ran; }

/* Failing layer testcases: failing layers (local check, or free run without one) and
 * nondeterministic layers that do not fail otherwise. */
static int junit_layer_failures(const cd_analysis *an) {
    int n = 0;
    for (int i = 0; i < an->n_layers; i++) n += layer_fails(an, &an->layers[i]) || an->layers[i].nondet;
    return n;
}

static void junit_free_run(FILE *f, const cd_layer_cmp *l) {
    fputs("tensor ", f);
    cd_put_xml(f, l->tensor);
    fprintf(f,
            ": max_abs=%.9g mean_abs=%.9g rmse=%.9g max_rel=%.9g cosine=%.9g snr_db=%.3f max_ulp=%.0f "
            "fail_count=%lld worst_index=%lld (ref %.9g, got %.9g) nan=%lld/%lld inf=%lld/%lld rule=",
            l->m.max_abs, l->m.mean_abs, l->m.rmse, l->m.max_rel, l->m.cosine, l->m.snr_db, l->m.max_ulp,
            (long long)l->m.fail_count, (long long)l->m.worst_index, l->m.worst_ref, l->m.worst_val,
            (long long)l->m.nan_ref, (long long)l->m.nan_val, (long long)l->m.inf_ref, (long long)l->m.inf_val);
    cd_put_xml(f, l->rule);
}

/* Diagnosis that travels with a layer testcase, failing or not. */
static void junit_diag(FILE *f, const cd_analysis *an, int i) {
    const cd_layer_cmp *l = &an->layers[i];
    if (i == an->first_fail) fprintf(f, " first-divergence kind=%s", an->first_kind);
    if (l->nf_hard)
        fprintf(f, " nonfinite-where-reference-finite=%lld/%lld", (long long)l->nf_new_a, (long long)l->nf_new_b);
    if (l->risk_rank) {
        fprintf(f, " fp16-risk-rank=%d ", l->risk_rank);
        cd_put_xml(f, l->risk_reason);
    }
}

/* Model outputs against the output tolerance: one testcase each. */
static void junit_output_suite(FILE *f, const cd_report_input *in) {
    const cd_analysis *an = in->an;
    int tests = 0, failures = 0;
    for (int i = 0; i < an->n_layers; i++)
        if (an->layers[i].is_output) {
            tests++;
            failures += !an->layers[i].out_pass;
        }
    if (!tests) return;
    fputs("  <testsuite name=\"cldiff ", f);
    cd_put_xml(f, in->env->model_path);
    fprintf(f, " outputs\" tests=\"%d\" failures=\"%d\" errors=\"0\">\n", tests, failures);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (!l->is_output) continue;
        fputs("    <testcase classname=\"cldiff.output\" name=\"output ", f);
        cd_put_xml(f, l->tensor);
        fputc('"', f);
        if (l->out_pass) {
            fputs("/>\n", f);
            continue;
        }
        fprintf(f, ">\n      <failure message=\"output drift: range error %.6g beyond the output tolerance (",
                l->out_range_err);
        cd_put_xml(f, l->out_rule);
        fputs(")\">layer ", f);
        cd_put_xml(f, l->layer);
        fprintf(f, " (op #%d): range error %.9g, cosine %.9g, snr_db %.3f, max_abs %.9g", l->op_index, l->out_range_err,
                l->m.cosine, l->m.snr_db, l->m.max_abs);
        if (l->has_topk) fprintf(f, ", top1 %.4f, top5 %.4f", l->top1, l->top5);
        if (!strcmp(l->task, "detection"))
            fprintf(f, ", detections %lld matched of %lld (B found %lld)", (long long)l->det_matched,
                    (long long)l->det_ref, (long long)l->det_val);
        fputs("; tolerance: ", f);
        cd_put_xml(f, an->out_tol_desc);
        fputs("</failure>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n", f);
}

cd_status cd_report_junit(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile a;
    cd_status st = cd_afile_open(&a, dir, "junit.xml", err);
    if (st) return st;
    FILE *f = a.f;
    const cd_analysis *an = in->an;
    bool no_verdict = an->kind == CD_KIND_INCOMPLETE || an->kind == CD_KIND_ERROR;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"cldiff ", f);
    cd_put_xml(f, in->env->model_path);
    fprintf(f, " %s %s vs %s\" tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n", in->env->precision,
            in->env->backend_a, in->env->backend_b, an->n_layers + (no_verdict ? 1 : 0), junit_layer_failures(an),
            (in->env->crash ? 1 : 0) + (no_verdict ? 1 : 0), in->env->wall_ms_total / 1e3);
    char col[1400];
    cd_report_compared_only_line(an, col, sizeof col);
    if (col[0]) {
        fputs("    <properties><property name=\"compared_only\" value=\"", f);
        cd_put_xml(f, col);
        fputs("\"/></properties>\n", f);
    }
    /* incomplete or error: never a pass (docs/verdicts.md) */
    if (no_verdict) {
        fprintf(f, "    <testcase classname=\"cldiff.run\" name=\"verdict\"><error type=\"%s\" message=\"",
                cd_report_verdict_name(an->verdict));
        if (an->kind == CD_KIND_ERROR) {
            fputs("error: ", f);
            cd_put_xml(f, an->error);
        } else {
            fputs("incomplete: ", f);
            cd_put_xml(f, an->incomplete);
        }
        fputs("\"/></testcase>\n", f);
    }
    if (in->env->crash) {
        fputs("    <testcase classname=\"cldiff.run\" name=\"backend\"><error message=\"", f);
        cd_put_xml(f, in->env->crash);
        fputs("\"/></testcase>\n", f);
    }
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        fputs("    <testcase classname=\"cldiff.", f);
        cd_put_xml(f, l->op_type);
        fprintf(f, "\" name=\"%04d ", l->op_index);
        cd_put_xml(f, l->layer);
        fprintf(f, "\" time=\"%.6f\"", l->us_b / 1e6);
        bool fails = layer_fails(an, l);
        if (l->nondet && !fails) {
            fprintf(f,
                    ">\n      <failure message=\"nondeterministic: spread %.6g over %d runs (race or uninitialised "
                    "read)\"/>\n    </testcase>\n",
                    l->spread, an->repeat_n);
            continue;
        }
        if (!fails) {
            /* Passing: free-run drift (and why the layer was not checked locally) is information. */
            bool drift = an->local_ran && !l->m.pass, unchecked = an->local_ran && !l->has_local && l->loc_note[0],
                 diag = an->local_ran && (l->nf_hard || l->risk_rank);
            if (!drift && !unchecked && !diag) {
                fputs("/>\n", f);
                continue;
            }
            fputs(">\n      <system-out>", f);
            if (unchecked) {
                if (!l->loc_compared_only) fputs("not checked locally: ", f); /* its note says "compared only" */
                cd_put_xml(f, l->loc_note);
                fputs(drift || diag ? "\n" : "", f);
            }
            if (drift) {
                fputs("free-run drift beyond the element tolerance (information): ", f);
                junit_free_run(f, l);
            }
            if (drift || diag) junit_diag(f, an, i);
            fputs("</system-out>\n    </testcase>\n", f);
            continue;
        }
        if (!strncmp(l->note_b, CD_MODEL_DEFECT_NOTE, strlen(CD_MODEL_DEFECT_NOTE))) {
            /* a model defect at this op: a failure of the model, not of the kernel */
            fputs(">\n      <failure message=\"model defect\">", f);
            cd_put_xml(f, l->note_b);
            fputs("</failure>\n    </testcase>\n", f);
            continue;
        }
        if (an->local_ran) {
            fprintf(f,
                    ">\n      <failure message=\"kernel fault: local error %.6g &gt; bound %.6g (ratio %.4g, %lld of "
                    "%lld elements, family ",
                    l->loc_err, l->loc_bound, l->loc_ratio, (long long)l->loc_exceed, (long long)l->loc.n);
            cd_put_xml(f, l->family);
            fputs(")\">", f);
            fprintf(f, "%slocal check on %s's inputs: max_abs=%.9g cosine=%.9g worst_index=%lld bound: ",
                    i == an->first_fault ? "first kernel fault; " : "", in->env->backend_a, l->loc.max_abs,
                    l->loc.cosine, (long long)l->loc_worst);
            cd_put_xml(f, l->loc_note);
            fputs("\nfree run: ", f);
            junit_free_run(f, l);
        } else {
            fprintf(f, ">\n      <failure message=\"max_abs=%.6g cosine=%.8f fail_fraction=%.6g (atol=%g rtol=%g)\">",
                    l->m.max_abs, l->m.cosine, l->m.fail_fraction, l->tol.atol, l->tol.rtol);
            junit_free_run(f, l);
        }
        junit_diag(f, an, i);
        fputs("</failure>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n", f);
    if (junit_outputs(an)) junit_output_suite(f, in);
    fputs("</testsuites>\n", f);
    return cd_afile_commit(&a, err);
}

/* The first failing model output, NULL when none (or outputs were not judged). */
static const cd_layer_cmp *first_failing_output(const cd_analysis *an) {
    if (!cd_report_outputs_judged(an)) return NULL;
    for (int i = 0; i < an->n_layers; i++)
        if (an->layers[i].is_output && !an->layers[i].out_pass) return &an->layers[i];
    return NULL;
}

/* The verdict line (docs/verdicts.md) and, in plain text, its short detail lines. `on`/`off`
 * colour the verdict word on a terminal. */
static void verdict_text(const cd_report_input *in, FILE *f, bool md, const char *on, const char *off) {
    const cd_analysis *an = in->an;
    const char *q = md ? "`" : "", *b0 = md ? "**" : on, *b1 = md ? "**" : off, *item = md ? "- " : "  ";
    cd_verdict_kind kind;
    if (!cd_report_kind(in, &kind)) {
        fprintf(f, "%sverdict: FAIL%s (not classified: %d of %d layers beyond the element tolerance in the free run)\n",
                b0, b1, an->n_fail, an->n_layers);
        return;
    }
    switch (kind) {
    case CD_KIND_FAULT: {
        const cd_layer_cmp *l = cd_report_first_fault(an);
        if (!l) {
            fprintf(f, "%sverdict: KERNEL FAULT%s (%d layer(s) over their local error bound)\n", b0, b1, an->n_faults);
            break;
        }
        fprintf(f,
                "%sverdict: KERNEL FAULT%s at %s%s%s (%s, op #%d): local error %.1e > bound %.1e (ratio %.3g, %lld of "
                "%lld elements)",
                b0, b1, q, l->layer, q, l->op_type, l->op_index, l->loc_err, l->loc_bound, l->loc_ratio,
                (long long)l->loc_exceed, (long long)l->loc.n);
        if (an->n_faults > 1) fprintf(f, "; %d layers fail their local check", an->n_faults);
        fputc('\n', f);
        if (md) fputc('\n', f);
        fprintf(f, "%s%s bound", item, l->family[0] ? l->family : "error");
        if (l->loc_note[0]) fprintf(f, ": %s", l->loc_note);
        if (an->local_inputs[0] && !strcmp(an->local_inputs, in->env->backend_b))
            fprintf(f, "; %s's own output against cldiff's CPU on the same inputs (run %s)\n", an->local_inputs,
                    an->local_ref);
        else
            fprintf(f, "; measured on %s's inputs against %s\n",
                    an->local_inputs[0] ? an->local_inputs : in->env->backend_a,
                    an->local_ref[0] ? an->local_ref : in->env->backend_a);
        break;
    }
    case CD_KIND_DRIFT: {
        const cd_layer_cmp *o = first_failing_output(an);
        fprintf(f, "%sverdict: OUTPUT DRIFT%s", b0, b1);
        if (o) fprintf(f, ": output %s%s%s range error %.1e > tolerance", q, o->tensor, q, o->out_range_err);
        if (an->n_out_fail > 1) fprintf(f, " (%d of %d outputs)", an->n_out_fail, an->n_outputs);
        if (!an->local_ran)
            fputs("; no local check ran", f);
        else if (an->n_local < an->n_layers)
            fprintf(f, "; no checked layer (%d of %d) is wrong on its own inputs", an->n_local, an->n_layers);
        else
            fputs("; no layer is wrong on its own inputs", f);
        for (int j = 0, k = 0; j < an->n_amplifiers && j < 8 && k < 4; j++) {
            const cd_layer_cmp *l = cd_report_layer(an, an->amplifiers[j]);
            if (!l) continue;
            fprintf(f, "%s%s%s%s (x%.3g)", k++ ? ", " : "; error amplified at ", q, l->layer, q, l->growth);
        }
        fputc('\n', f);
        if (md) break; /* the Markdown summary shows tables instead */
        int k = 0;
        for (int j = 0; j < an->n_contributors && j < 8 && k < 4; j++) {
            const cd_layer_cmp *l = cd_report_layer(an, an->contributors[j]);
            if (!l) continue;
            fprintf(f, "%s%s (ratio %.3g, local rel err %.2g)",
                    k++ ? ", " : "  largest local errors (within their bounds): ", l->layer, l->loc_ratio,
                    cd_report_rel_local(l));
        }
        if (k) fputc('\n', f);
        if (an->out_tol_desc[0]) fprintf(f, "  output tolerance: %s\n", an->out_tol_desc);
        break;
    }
    case CD_KIND_PASS:
        fprintf(f, "%sverdict: PASS%s (", b0, b1);
        {
            char basis[160];
            cd_report_pass_basis(an, basis, sizeof basis);
            fputs(basis, f);
        }
        if (cd_report_outputs_judged(an)) fprintf(f, "; %d output(s) within the output tolerance", an->n_outputs);
        if (an->n_drift)
            fprintf(f, "; %d intermediate layer(s) drifted beyond the element tolerance: information", an->n_drift);
        fputs(")\n", f);
        break;
    case CD_KIND_CRASH:
        fprintf(f, "%sverdict: CRASH%s: %s did not finish; layers before the crash are compared below\n", b0, b1,
                in->env->backend_b);
        break;
    case CD_KIND_INCOMPLETE:
        fprintf(f, "%sverdict: INCOMPLETE%s%s: %s\n", b0, b1, an->interrupted ? " (interrupted)" : "", an->incomplete);
        if (md) fputc('\n', f);
        fprintf(f, "%snothing is passed that was not checked: %d layer(s) compared, %d probed tensor(s) not compared\n",
                item, an->n_layers, an->n_unchecked);
        break;
    case CD_KIND_ERROR:
        fprintf(f, "%sverdict: ERROR%s (exit %d): %s\n", b0, b1, an->error_code, an->error);
        if (md) fputc('\n', f);
        fprintf(f, "%sno verdict: %d layer(s) were compared before the failure\n", item, an->n_layers);
        break;
    case CD_KIND_NONDET: {
        const cd_layer_cmp *l = cd_report_layer(an, an->first_nondet);
        fprintf(f,
                "%sverdict: NONDETERMINISTIC%s: %d layer(s) changed between %d runs of %s (race or uninitialised read)",
                b0, b1, an->n_nondet, an->repeat_n, in->env->backend_b);
        if (l) fprintf(f, ", first %s%s%s (op #%d)", q, l->layer, q, l->op_index);
        fputc('\n', f);
        break;
    }
    case CD_KIND_DEFECT:
        fprintf(f,
                "%sverdict: MODEL DEFECT%s: the model feeds Paddle-Lite's int8 kernels a tensor they cannot read; no "
                "kernel is wrong on its own inputs\n",
                b0, b1);
        break;
    }
    /* a finding on what was checked stands; the run is still said to be incomplete */
    if (an->incomplete[0] && kind != CD_KIND_INCOMPLETE) fprintf(f, "%sincomplete: %s\n", item, an->incomplete);
    if (!an->incomplete[0] && an->n_unchecked)
        fprintf(f,
                "%snot compared: %d probed tensor(s) stored by one run only (the other backend does not provide "
                "them; layers.csv lists them as not_compared)\n",
                item, an->n_unchecked);
    /* a model defect is named under every verdict kind (a finding) */
    char dl[1400];
    cd_report_defect_line(an, dl, sizeof dl);
    if (dl[0]) fprintf(f, "%s%s%s\n", md ? "\n" : item, dl, md ? "\n" : "");
    /* layers the local check cannot check by design: compared, named, never a gap */
    cd_report_compared_only_line(an, dl, sizeof dl);
    if (dl[0]) fprintf(f, "%s%s%s\n", md ? "\n" : item, dl, md ? "\n" : "");
}

/* First divergence of the free run: the failing layer of the old model, information under a
 * verdict kind that is not a kernel fault (docs/verdicts.md). */
static void first_sentence(const cd_report_input *in, FILE *f, bool md) {
    const cd_analysis *an = in->an;
    const char *q = md ? "`" : "";
    cd_verdict_kind kind;
    bool info = cd_report_kind(in, &kind) && kind != CD_KIND_FAULT;
    if (in->env->crash) { fprintf(f, "%s crashed: %s\n", in->env->backend_b, in->env->crash); }
    if (an->first_fail < 0) {
        fprintf(f, "All %d compared layers are within tolerance.\n", an->n_layers);
        return;
    }
    const cd_layer_cmp *l = &an->layers[an->first_fail];
    if (info)
        fprintf(f,
                "First divergence (information): %s%s%s (op #%d, %s), max |a-b| = %.4g, cosine = %.6f, %.3g%% of "
                "elements beyond the element tolerance in the free run.\n",
                q, l->layer, q, l->op_index, l->op_type, l->m.max_abs, l->m.cosine, 100 * l->m.fail_fraction);
    else
        fprintf(f,
                "First layer out of tolerance: %s%s%s (op #%d, %s), max |a-b| = %.4g, cosine = %.6f, %.3g%% of "
                "elements out.\n",
                q, l->layer, q, l->op_index, l->op_type, l->m.max_abs, l->m.cosine, 100 * l->m.fail_fraction);
    if (an->local_ran && l->has_local)
        fprintf(f, "Local check: on %s's inputs its error is %.2g against a bound of %.2g (ratio %.3g): %s.\n",
                an->local_inputs[0] ? an->local_inputs : in->env->backend_a, l->loc_err, l->loc_bound, l->loc_ratio,
                l->loc_pass ? "within its bound, so the divergence is accumulated error, not a fault of this layer"
                    : !strncmp(l->note_b, CD_MODEL_DEFECT_NOTE, strlen(CD_MODEL_DEFECT_NOTE))
                    ? "over its bound, where the model gives the kernel what it cannot read: a model defect, not a "
                      "kernel fault"
                    : "over its bound, a kernel fault");
    else if (an->local_ran)
        fprintf(f, "Not checked locally%s%s.\n", l->loc_note[0] ? ": " : "", l->loc_note);
    else if (l->nf_hard && an->first_fail == an->nonfinite_origin)
        fprintf(f,
                "Local error: the layer turns finite inputs into NaN/Inf where the reference is finite (%lld values on "
                "A, %lld on B).\n",
                (long long)l->nf_new_a, (long long)l->nf_new_b);
    else if (l->isolated)
        fprintf(f,
                "%s: on %s's inputs the %s result is %s tolerance (max |a-b| = %.4g vs %.4g in the full run), so the "
                "layer %s.\n",
                !strcmp(an->first_kind, "local") ? "Local error" : "Inherited error", in->env->backend_a,
                in->env->backend_b, l->iso.pass ? "within" : "out of", l->iso.max_abs, l->m.max_abs,
                !strcmp(an->first_kind, "local") ? "itself is wrong" : "only inherits error from earlier layers");
    else
        fprintf(f, "Not isolated (local vs inherited unknown).\n");
}

/* Markdown: outputs, amplifiers and contributors tables under an output-drift verdict, the
 * other kernel faults under a fault verdict. */
static void md_verdict_tables(const cd_report_input *in, FILE *f) {
    const cd_analysis *an = in->an;
    cd_verdict_kind kind;
    if (!cd_report_kind(in, &kind)) return;
    if (kind == CD_KIND_FAULT && an->n_faults > 1) {
        fputs("\n| # | layer | type | family | local error | bound | ratio | elements over "
              "|\n|---|---|---|---|---|---|---|---|\n",
              f);
        for (int i = 0, k = 0; i < an->n_layers && k < 10; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->has_local || l->loc_pass) continue;
            k++;
            fprintf(f, "| %d | `%s` | %s | %s | %.3g | %.3g | %.3g | %lld |\n", l->op_index, l->layer, l->op_type,
                    l->family, l->loc_err, l->loc_bound, l->loc_ratio, (long long)l->loc_exceed);
        }
    }
    if (kind != CD_KIND_DRIFT && kind != CD_KIND_PASS) return;
    if (cd_report_outputs_judged(an)) {
        fputs("\n| output | layer | range error | cosine | SNR dB | top-1 | top-5 | detections matched | within "
              "tolerance |\n"
              "|---|---|---|---|---|---|---|---|---|\n",
              f);
        for (int i = 0; i < an->n_layers; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->is_output) continue;
            fprintf(f, "| `%s` | `%s` | %.3g | %.6f | %.1f | ", l->tensor, l->layer, l->out_range_err, l->m.cosine,
                    l->m.snr_db);
            if (l->has_topk)
                fprintf(f, "%.4f | %.4f | ", l->top1, l->top5);
            else
                fputs(" | | ", f);
            if (!strcmp(l->task, "detection"))
                fprintf(f, "%lld of %lld (B: %lld) | ", (long long)l->det_matched, (long long)l->det_ref,
                        (long long)l->det_val);
            else
                fputs(" | ", f);
            fprintf(f, "%s |\n", l->out_pass ? "yes" : "**no**");
        }
        if (an->out_tol_desc[0]) fprintf(f, "\nOutput tolerance: %s\n", an->out_tol_desc);
    }
    if (kind != CD_KIND_DRIFT) return;
    if (an->n_amplifiers) {
        fputs("\nWhere the error is amplified (free run):\n\n| # | layer | type | growth | rel err "
              "|\n|---|---|---|---|---|\n",
              f);
        for (int j = 0; j < an->n_amplifiers && j < 8; j++) {
            const cd_layer_cmp *l = cd_report_layer(an, an->amplifiers[j]);
            if (l)
                fprintf(f, "| %d | `%s` | %s | x%.3g | %.3g |\n", l->op_index, l->layer, l->op_type, l->growth,
                        l->rel_err);
        }
    }
    if (an->n_contributors) {
        fputs("\nLargest local errors (each within its bound):\n\n| # | layer | type | ratio to bound | local rel err "
              "|\n|---|---|---|---|---|\n",
              f);
        for (int j = 0; j < an->n_contributors && j < 8; j++) {
            const cd_layer_cmp *l = cd_report_layer(an, an->contributors[j]);
            if (l)
                fprintf(f, "| %d | `%s` | %s | %.3g | %.3g |\n", l->op_index, l->layer, l->op_type, l->loc_ratio,
                        cd_report_rel_local(l));
        }
    }
}

cd_status cd_report_markdown(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile a;
    cd_status st = cd_afile_open(&a, dir, "summary.md", err);
    if (st) return st;
    FILE *f = a.f;
    const cd_analysis *an = in->an;
    const cd_report_env *e = in->env;
    fprintf(f, "### cldiff: %s — %s (%s vs %s, %s)\n\n", e->model_path, verdict_str(an->verdict), e->backend_a,
            e->backend_b, e->precision);
    verdict_text(in, f, true, "", "");
    md_verdict_tables(in, f);
    fputc('\n', f);
    first_sentence(in, f, true);
    fputc('\n', f);
    diag_text(in, f, true);
    fprintf(f, "\n| | |\n|---|---|\n| model | `%s` (%s, sha256 `%.16s…`) |\n", e->model_path, e->model_format,
            e->model_sha256 ? e->model_sha256 : "");
    fprintf(f, "| A | %s: %s %s |\n| B | %s: %s %s (%s) |\n", e->backend_a, e->device_a ? e->device_a : "",
            e->driver_a ? e->driver_a : "", e->backend_b, e->device_b ? e->device_b : "",
            e->driver_b ? e->driver_b : "", e->variant_b ? e->variant_b : "");
    fprintf(f, "| inputs | %s |\n| tolerance | %s |\n| cldiff | %s, `%s` |\n\n", e->input_desc ? e->input_desc : "",
            e->tolerance_desc ? e->tolerance_desc : "", e->tool_version, e->command_line ? e->command_line : "");
    fprintf(f, "%d of %d layers out of tolerance%s.\n\n", an->n_fail, an->n_layers,
            an->local_ran ? " in the free run (information unless a kernel fault is named above)" : "");
    if (an->n_fail) {
        fputs("| # | layer | type | max abs | cosine | fail % | rel err | growth | local ratio "
              "|\n|---|---|---|---|---|---|---|---|---|\n",
              f);
        int shown = 0;
        for (int i = 0; i < an->n_layers && shown < 10; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (l->m.pass) continue;
            shown++;
            fprintf(f, "| %d | `%s` | %s | %.4g | %.6f | %.3g | %.3g | %.3g | ", l->op_index, l->layer, l->op_type,
                    l->m.max_abs, l->m.cosine, 100 * l->m.fail_fraction, l->rel_err, l->growth);
            if (l->has_local)
                fprintf(f, "%.3g%s |\n", l->loc_ratio, l->loc_pass ? "" : " **fault**");
            else
                fputs("|\n", f);
        }
        if (an->n_fail > shown) fprintf(f, "\n(%d more in layers.csv)\n", an->n_fail - shown);
    }
    return cd_afile_commit(&a, err);
}

cd_status cd_report_all(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_status st = cd_report_csv(in, dir, err);
    if (!st) st = cd_report_json(in, dir, err);
    if (!st) st = cd_report_junit(in, dir, err);
    if (!st) st = cd_report_markdown(in, dir, err);
    if (!st) st = cd_report_html(in, dir, err);
    return st;
}

void cd_report_terminal(const cd_report_input *in, FILE *f, bool color) {
    const cd_analysis *an = in->an;
    const char *red = color ? "\033[31;1m" : "", *green = color ? "\033[32;1m" : "", *yellow = color ? "\033[33m" : "",
               *dim = color ? "\033[2m" : "", *off = color ? "\033[0m" : "";
    fprintf(f, "\n%-5s %-28s %-22s %11s %11s %9s %8s %8s\n", "op", "layer", "type", "max_abs", "cosine", "fail%",
            "growth", "local");
    /* Long models: show every failing layer up to 40 lines and the first/last passing context.
     * With a local check, red marks a kernel fault and yellow free-run drift (information). */
    int shown = 0;
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        bool defect = !strncmp(l->note_b, CD_MODEL_DEFECT_NOTE, strlen(CD_MODEL_DEFECT_NOTE));
        bool fault = an->local_ran && l->has_local && !l->loc_pass;
        bool show = an->n_layers <= 40 || !l->m.pass || fault || i == an->n_layers - 1 ||
            (an->first_fail >= 0 && abs(i - an->first_fail) <= 2);
        if (!show || shown >= 60) continue;
        shown++;
        const char *c = !an->local_ran ? (l->m.pass ? "" : red) : fault ? red : l->m.pass ? "" : yellow;
        char ratio[16] = "-";
        if (l->has_local) snprintf(ratio, sizeof ratio, "%.3g", l->loc_ratio);
        fprintf(f, "%s%-5d %-28.28s %-22.22s %11.4g %11.8f %9.4g %8.3g %8s%s%s%s%s%s%s%s\n", c, l->op_index, l->layer,
                l->op_type, l->m.max_abs, l->m.cosine, 100 * l->m.fail_fraction, l->growth, ratio,
                defect      ? " MODEL DEFECT"
                    : fault ? " FAULT"
                            : "",
                l->jump ? " jump" : "", strcmp(l->where_b, "cpu-fallback") ? "" : " (B on cpu)",
                l->nf_hard ? " NaN/Inf" : "", l->nondet ? " NONDETERMINISTIC" : "",
                l->is_output && cd_report_outputs_judged(an) ? (l->out_pass ? " output" : " OUTPUT DRIFT") : "",
                *c ? off : "");
    }
    if (shown < an->n_layers)
        fprintf(f, "%s(%d of %d layers shown; all in layers.csv)%s\n", dim, shown, an->n_layers, off);
    fputc('\n', f);
    cd_verdict_kind kind;
    bool classified = cd_report_kind(in, &kind);
    verdict_text(in, f, false,
                 classified && kind == CD_KIND_PASS        ? green
                     : classified && kind == CD_KIND_DRIFT ? yellow
                                                           : red,
                 off);
    first_sentence(in, f, false);
    if (an->n_jumps) {
        fprintf(f, "Error growth jumps at:");
        for (int j = 0; j < an->n_jumps && j < 5; j++)
            fprintf(f, " %s (x%.3g)", an->layers[an->jumps[j]].layer, an->layers[an->jumps[j]].growth);
        fputc('\n', f);
    }
    if (an->nonfinite_origin >= 0)
        fprintf(f, "%sNaN/Inf first appears in %s on %s%s\n", red, an->layers[an->nonfinite_origin].layer,
                !strcmp(an->nonfinite_side, "a")         ? in->env->backend_a
                    : !strcmp(an->nonfinite_side, "a+b") ? "both sides"
                                                         : in->env->backend_b,
                off);
    diag_text(in, f, false);
    fprintf(f, "%sreports: layers.csv summary.json report.html junit.xml summary.md dump.h5%s\n", dim, off);
}
