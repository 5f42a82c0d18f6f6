/* layers.csv, summary.json, junit.xml, summary.md and the terminal summary. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report/atomic.h"
#include "report/report.h"

static const char *verdict_str(cd_verdict v) { return v == CD_VERDICT_PASS ? "pass" : v == CD_VERDICT_FAIL ? "fail" : "crash"; }

static const char *shape_s(const cd_shape *s, char *b, size_t n) { return cd_shape_str(s, b, n); }

cd_status cd_report_csv(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile a;
    cd_status st = cd_afile_open(&a, dir, "layers.csv", err);
    if (st) return st;
    FILE *f = a.f;
    const cd_analysis *an = in->an;
    bool golden = an->n_layers && an->layers[0].has_golden;
    fputs("order,op_index,layer,op_type,tensor,shape,pass,max_abs,mean_abs,rmse,max_rel,cosine,snr_db,max_ulp,"
          "fail_count,fail_fraction,worst_index,worst_coord,worst_ref,worst_val,nan_a,nan_b,inf_a,inf_b,"
          "nonfinite_mismatch,rel_err,growth,jump,atol,rtol,min_cos,max_fail_fraction,rule,where_a,where_b,"
          "note_b,us_a,us_b,kernel_us_b,isolated,iso_max_abs,iso_pass,top1,top5", f);
    if (golden) fputs(",a_vs_golden_max_abs,a_vs_golden_rel_rmse,b_vs_golden_max_abs,b_vs_golden_rel_rmse", f);
    /* diagnosis columns (docs/diagnosis.md), always present, appended after the others */
    fputs(",acc_k,golden_over,golden_under,golden_absmax,fp16_risk,risk_rank,risk_reason,nonfinite_new_a,"
          "nonfinite_new_b,nonfinite_hard,repeat_spread,repeat_changed,nondeterministic,inputs,inputs_failed,"
          "worst_input,worst_max_abs,mean_max_abs,p99_max_abs,worst_rel_err,mean_rel_err,p99_rel_err,"
          "worst_fail_fraction,mean_fail_fraction,p99_fail_fraction,worst_cosine,mean_cosine,p1_cosine", f);
    fputc('\n', f);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        const cd_metrics *m = &l->m;
        char sh[128], wc[128] = "";
        size_t o = 0;
        for (int k = 0; k < l->shape.rank && o < sizeof wc; k++)
            o += (size_t)snprintf(wc + o, sizeof wc - o, "%s%lld", k ? " " : "", (long long)m->worst_coord[k]);
        fprintf(f, "%d,%d,", i, l->op_index);
        cd_put_csv(f, l->layer); fputc(',', f);
        cd_put_csv(f, l->op_type); fputc(',', f);
        cd_put_csv(f, l->tensor); fputc(',', f);
        cd_put_csv(f, shape_s(&l->shape, sh, sizeof sh));
        fprintf(f, ",%d,%.9g,%.9g,%.9g,%.9g,%.9g,%.6g,%.0f,%lld,%.9g,%lld,%s,%.9g,%.9g,%lld,%lld,%lld,%lld,%lld,%.9g,%.6g,%d,%g,%g,%g,%g,",
                m->pass, m->max_abs, m->mean_abs, m->rmse, m->max_rel, m->cosine, m->snr_db, m->max_ulp,
                (long long)m->fail_count, m->fail_fraction, (long long)m->worst_index, wc, m->worst_ref, m->worst_val,
                (long long)m->nan_ref, (long long)m->nan_val, (long long)m->inf_ref, (long long)m->inf_val,
                (long long)m->nonfinite_mismatch, l->rel_err, l->growth, l->jump, l->tol.atol, l->tol.rtol,
                l->tol.min_cos, l->tol.max_fail_fraction);
        cd_put_csv(f, l->rule); fputc(',', f);
        cd_put_csv(f, l->where_a); fputc(',', f);
        cd_put_csv(f, l->where_b); fputc(',', f);
        cd_put_csv(f, l->note_b);
        fprintf(f, ",%.1f,%.1f,%.1f,%d,", l->us_a, l->us_b, l->kernel_us_b, l->isolated);
        if (l->isolated) fprintf(f, "%.9g,%d,", l->iso.max_abs, l->iso.pass); else fputs(",,", f);
        if (l->has_topk) fprintf(f, "%.4f,%.4f", l->top1, l->top5); else fputc(',', f);
        if (golden) {
            if (l->has_golden)
                fprintf(f, ",%.9g,%.9g,%.9g,%.9g", l->ga.max_abs, l->ga.ref_rms > 0 ? l->ga.rmse / l->ga.ref_rms : l->ga.rmse,
                        l->gb.max_abs, l->gb.ref_rms > 0 ? l->gb.rmse / l->gb.ref_rms : l->gb.rmse);
            else fputs(",,,,", f);
        }
        fprintf(f, ",%lld,", (long long)l->acc_k);
        if (l->has_hazard) fprintf(f, "%lld,%lld,%.9g,%.4g,%d,", (long long)l->g_over, (long long)l->g_under, l->g_absmax, l->risk, l->risk_rank);
        else fputs(",,,,,", f);
        cd_put_csv(f, l->risk_reason);
        fprintf(f, ",%lld,%lld,%d,", (long long)l->nf_new_a, (long long)l->nf_new_b, l->nf_hard);
        if (l->has_repeat) fprintf(f, "%.9g,%lld,%d,", l->spread, (long long)l->spread_count, l->nondet);
        else fputs(",,,", f);
        if (l->n_agg) {
            fprintf(f, "%d,%d,", l->n_agg, l->n_agg_fail);
            cd_put_csv(f, l->worst_input);
            for (int k = 0; k < 4; k++) fprintf(f, ",%.9g,%.9g,%.9g", l->agg_worst[k], l->agg_mean[k], l->agg_p99[k]);
        } else fputs(",,,,,,,,,,,,,,", f);
        fputc('\n', f);
    }
    return cd_afile_commit(&a, err);
}

static void json_metrics(FILE *f, const cd_metrics *m) {
    fputs("{\"max_abs\":", f); cd_put_json_num(f, m->max_abs);
    fputs(",\"mean_abs\":", f); cd_put_json_num(f, m->mean_abs);
    fputs(",\"rmse\":", f); cd_put_json_num(f, m->rmse);
    fputs(",\"max_rel\":", f); cd_put_json_num(f, m->max_rel);
    fputs(",\"cosine\":", f); cd_put_json_num(f, m->cosine);
    fputs(",\"snr_db\":", f); cd_put_json_num(f, m->snr_db);
    fputs(",\"max_ulp\":", f); cd_put_json_num(f, m->max_ulp);
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
            fprintf(f, ", \"acc_k\": %lld, \"golden_over\": %lld, \"golden_under\": %lld, \"risk\": ",
                    (long long)l->acc_k, (long long)l->g_over, (long long)l->g_under);
            cd_put_json_num(f, l->risk);
            fputs(", \"reason\": ", f); cd_put_json_str(f, l->risk_reason);
            fprintf(f, ", \"failed\": %s}", l->m.pass ? "false" : "true");
        }
    fprintf(f, "],\n  \"nondeterminism\": {\"repeat\": %d, \"layers\": [", an->repeat_n);
    shown = 0;
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (!l->nondet) continue;
        fprintf(f, "%s{\"op_index\": %d, \"layer\": ", shown++ ? ", " : "", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"spread\": ", f); cd_put_json_num(f, l->spread);
        fprintf(f, ", \"changed\": %lld, \"diagnosis\": \"race or uninitialised read\"}", (long long)l->spread_count);
    }
    fputs("], \"first\": ", f);
    if (an->first_nondet >= 0) cd_put_json_str(f, an->layers[an->first_nondet].layer); else fputs("null", f);
    fputs("},\n  \"inputs\": ", f);
    if (an->n_inputs_run) {
        fprintf(f, "{\"count\": %d, \"dir\": ", an->n_inputs_run);
        cd_put_json_str(f, an->inputs_dir);
        fputs(", \"worst_input\": ", f); cd_put_json_str(f, an->worst_input);
        fputs(", \"failing_layers\": [", f);
        shown = 0;
        for (int i = 0; i < an->n_layers; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->n_agg_fail) continue;
            fprintf(f, "%s{\"layer\": ", shown++ ? ", " : "");
            cd_put_json_str(f, l->layer);
            fprintf(f, ", \"failed_inputs\": %d, \"worst_input\": ", l->n_agg_fail);
            cd_put_json_str(f, l->worst_input);
            fputs(", \"worst_rel_err\": ", f); cd_put_json_num(f, l->agg_worst[CD_AGG_REL_ERR]);
            fputc('}', f);
        }
        fputs("]}", f);
    } else fputs("null", f);
    fputs(",\n  \"repro\": ", f);
    if (an->repro_dir[0]) {
        fputs("{\"dir\": ", f); cd_put_json_str(f, an->repro_dir);
        fputs(", \"command\": ", f); cd_put_json_str(f, an->repro_cmd);
        fputc('}', f);
    } else fputs("null", f);
    fputs(",\n  \"pins\": ", f);
    if (an->n_pins || an->pins_note[0]) {
        fputs("{\"note\": ", f); cd_put_json_str(f, an->pins_note);
        fputs(", \"tried\": [", f);
        for (int i = 0; i < an->n_pins; i++) {
            const cd_pin_result *p = &an->pins[i];
            fputs(i ? ", {\"layers\": " : "{\"layers\": ", f); cd_put_json_str(f, p->layers);
            fprintf(f, ", \"n\": %d, \"pass\": %s, \"out_max_abs\": ", p->n_pinned, p->pass ? "true" : "false");
            cd_put_json_num(f, p->out_max_abs);
            fputs(", \"out_cosine\": ", f); cd_put_json_num(f, p->out_cosine);
            fputs(", \"error\": ", f); cd_put_json_str(f, p->error);
            fputc('}', f);
        }
        fputs("]}", f);
    } else fputs("null", f);
    fprintf(f, ",\n  \"auto_tolerance\": %s", an->auto_tol ? "true" : "false");
}

/* Diagnosis sentences shared by the Markdown summary and the terminal. */
static void diag_text(const cd_report_input *in, FILE *f, bool md) {
    const cd_analysis *an = in->an;
    const char *q = md ? "`" : "";
    if (an->nonfinite_origin >= 0) {
        const cd_layer_cmp *l = &an->layers[an->nonfinite_origin];
        const char *side = !strcmp(an->nonfinite_side, "a") ? in->env->backend_a : !strcmp(an->nonfinite_side, "b") ? in->env->backend_b : "both sides";
        fprintf(f, "%sNaN/Inf origin%s: %s%s%s (op #%d, %s) on %s where the reference is finite (%lld on A, %lld on B); %d layer(s) hold such values.\n",
                md ? "**" : "", md ? "**" : "", q, l->layer, q, l->op_index, l->op_type, side, (long long)l->nf_new_a,
                (long long)l->nf_new_b, an->n_nonfinite_hard);
    }
    if (an->n_at_risk) {
        fprintf(f, "%sFP16 hazards%s (from the float32 golden run), %d layer(s) at risk:", md ? "**" : "", md ? "**" : "", an->n_at_risk);
        for (int rank = 1; rank <= an->n_at_risk && rank <= 5; rank++)
            for (int i = 0; i < an->n_layers; i++)
                if (an->layers[i].risk_rank == rank)
                    fprintf(f, "%s %d. %s%s%s (K=%lld, %s)", md ? "\n" : "\n ", rank, q, an->layers[i].layer, q,
                            (long long)an->layers[i].acc_k, an->layers[i].risk_reason);
        fputc('\n', f);
    }
    if (an->repeat_n > 1) {
        if (an->n_nondet) {
            fprintf(f, "%sNondeterministic%s over %d runs of %s (race or uninitialised read), %d layer(s):", md ? "**" : "",
                    md ? "**" : "", an->repeat_n, in->env->backend_b, an->n_nondet);
            for (int i = 0, k = 0; i < an->n_layers && k < 8; i++)
                if (an->layers[i].nondet) {
                    k++;
                    fprintf(f, " %s%s%s (spread %.4g, %lld changed)", q, an->layers[i].layer, q, an->layers[i].spread,
                            (long long)an->layers[i].spread_count);
                }
            fputc('\n', f);
        } else fprintf(f, "Deterministic: %d runs of %s gave bit-identical layers.\n", an->repeat_n, in->env->backend_b);
    }
    if (an->n_inputs_run) {
        fprintf(f, "Inputs: %d from %s; worst input %s%s%s (its tensors are kept).", an->n_inputs_run, an->inputs_dir, q,
                an->worst_input, q);
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
                    an->pins[i].error[0] ? " error" : "", an->pins[i].out_max_abs, i + 1 < an->n_pins && i < 5 ? ";" : "");
        fputc('\n', f);
    }
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
    fputs("  \"first_divergence\": ", f);
    if (an->first_fail >= 0) {
        const cd_layer_cmp *l = &an->layers[an->first_fail];
        fprintf(f, "{\"op_index\": %d, \"layer\": ", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f); cd_put_json_str(f, l->op_type);
        fputs(", \"tensor\": ", f); cd_put_json_str(f, l->tensor);
        fprintf(f, ", \"kind\": \"%s\", \"metrics\": ", an->first_kind);
        json_metrics(f, &l->m);
        fputs(", \"isolated\": ", f);
        if (l->isolated) json_metrics(f, &l->iso); else fputs("null", f);
        fputs(", \"rule\": ", f); cd_put_json_str(f, l->rule);
        fputs("},\n", f);
    } else fputs("null,\n", f);
    fputs("  \"nonfinite_origin\": ", f);
    if (an->nonfinite_origin >= 0) cd_put_json_str(f, an->layers[an->nonfinite_origin].layer); else fputs("null", f);
    fputs(",\n  \"nonfinite\": {\"origin\": ", f);
    if (an->nonfinite_origin >= 0) {
        const cd_layer_cmp *l = &an->layers[an->nonfinite_origin];
        fprintf(f, "{\"op_index\": %d, \"layer\": ", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f); cd_put_json_str(f, l->op_type);
        fprintf(f, ", \"side\": \"%s\", \"new_a\": %lld, \"new_b\": %lld}", an->nonfinite_side, (long long)l->nf_new_a, (long long)l->nf_new_b);
    } else fputs("null", f);
    fprintf(f, ", \"hard_failures\": %d}", an->n_nonfinite_hard);
    diag_json(f, an);
    fputs(",\n  \"growth_jumps\": [", f);
    for (int j = 0; j < an->n_jumps; j++) {
        const cd_layer_cmp *l = &an->layers[an->jumps[j]];
        fprintf(f, "%s{\"layer\": ", j ? ", " : "");
        cd_put_json_str(f, l->layer);
        fputs(", \"growth\": ", f); cd_put_json_num(f, l->growth);
        fputs(", \"rel_err\": ", f); cd_put_json_num(f, l->rel_err);
        fputc('}', f);
    }
    fputs("],\n  \"crash\": ", f);
    if (e->crash) cd_put_json_str(f, e->crash); else fputs("null", f);
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
    fputs("  \"timings_ms\": {\"a\": ", f); cd_put_json_num(f, e->wall_ms_a);
    fputs(", \"b\": ", f); cd_put_json_num(f, e->wall_ms_b);
    fputs(", \"total\": ", f); cd_put_json_num(f, e->wall_ms_total);
    fputs("},\n  \"layers\": [", f);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        fprintf(f, "%s\n    {\"op_index\": %d, \"layer\": ", i ? "," : "", l->op_index);
        cd_put_json_str(f, l->layer);
        fputs(", \"op_type\": ", f); cd_put_json_str(f, l->op_type);
        fputs(", \"where_b\": ", f); cd_put_json_str(f, l->where_b);
        fputs(", \"rel_err\": ", f); cd_put_json_num(f, l->rel_err);
        fputs(", \"growth\": ", f); cd_put_json_num(f, l->growth);
        fputs(", \"metrics\": ", f); json_metrics(f, &l->m);
        if (l->has_golden) {
            fputs(", \"a_vs_golden\": ", f); json_metrics(f, &l->ga);
            fputs(", \"b_vs_golden\": ", f); json_metrics(f, &l->gb);
        }
        if (l->has_topk) { fputs(", \"top1\": ", f); cd_put_json_num(f, l->top1); fputs(", \"top5\": ", f); cd_put_json_num(f, l->top5); }
        fputs(", \"rule\": ", f); cd_put_json_str(f, l->rule);
        fprintf(f, ", \"acc_k\": %lld, \"nonfinite_new\": [%lld,%lld], \"nonfinite_hard\": %s", (long long)l->acc_k,
                (long long)l->nf_new_a, (long long)l->nf_new_b, l->nf_hard ? "true" : "false");
        if (l->has_hazard) {
            fprintf(f, ", \"fp16_hazard\": {\"golden_over\": %lld, \"golden_under\": %lld, \"golden_absmax\": ",
                    (long long)l->g_over, (long long)l->g_under);
            cd_put_json_num(f, l->g_absmax);
            fputs(", \"risk\": ", f); cd_put_json_num(f, l->risk);
            fprintf(f, ", \"risk_rank\": %d, \"reason\": ", l->risk_rank);
            cd_put_json_str(f, l->risk_reason);
            fputc('}', f);
        }
        if (l->has_repeat) {
            fputs(", \"repeat\": {\"spread\": ", f); cd_put_json_num(f, l->spread);
            fprintf(f, ", \"changed\": %lld, \"nondeterministic\": %s}", (long long)l->spread_count, l->nondet ? "true" : "false");
        }
        if (l->n_agg) {
            static const char *const names[4] = {"max_abs", "rel_err", "fail_fraction", "cosine"};
            fprintf(f, ", \"inputs\": {\"count\": %d, \"failed\": %d, \"worst_input\": ", l->n_agg, l->n_agg_fail);
            cd_put_json_str(f, l->worst_input);
            for (int k = 0; k < 4; k++) {
                fprintf(f, ", \"%s\": {\"worst\": ", names[k]); cd_put_json_num(f, l->agg_worst[k]);
                fputs(", \"mean\": ", f); cd_put_json_num(f, l->agg_mean[k]);
                fprintf(f, ", \"%s\": ", k == CD_AGG_COSINE ? "p1" : "p99"); cd_put_json_num(f, l->agg_p99[k]);
                fputc('}', f);
            }
            fputc('}', f);
        }
        fputc('}', f);
    }
    fputs("\n  ]\n}\n", f);
    return cd_afile_commit(&a, err);
}

/* Failing test cases: layers out of tolerance plus nondeterministic layers within it. */
static int junit_failures(const cd_analysis *an) {
    int n = an->n_fail;
    for (int i = 0; i < an->n_layers; i++) n += an->layers[i].nondet && an->layers[i].m.pass;
    return n;
}

cd_status cd_report_junit(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile a;
    cd_status st = cd_afile_open(&a, dir, "junit.xml", err);
    if (st) return st;
    FILE *f = a.f;
    const cd_analysis *an = in->an;
    fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites>\n  <testsuite name=\"cldiff ", f);
    cd_put_xml(f, in->env->model_path);
    fprintf(f, " %s %s vs %s\" tests=\"%d\" failures=\"%d\" errors=\"%d\" time=\"%.3f\">\n", in->env->precision,
            in->env->backend_a, in->env->backend_b, an->n_layers, junit_failures(an), in->env->crash ? 1 : 0,
            in->env->wall_ms_total / 1e3);
    if (in->env->crash) {
        fputs("    <testcase classname=\"cldiff.run\" name=\"backend\"><error message=\"", f);
        cd_put_xml(f, in->env->crash);
        fputs("\"/></testcase>\n", f);
    }
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        fprintf(f, "    <testcase classname=\"cldiff.%s\" name=\"", l->op_type);
        fprintf(f, "%04d ", l->op_index);
        cd_put_xml(f, l->layer);
        fprintf(f, "\" time=\"%.6f\"", l->us_b / 1e6);
        if (l->nondet && l->m.pass) {
            fprintf(f, ">\n      <failure message=\"nondeterministic: spread %.6g over %d runs (race or uninitialised read)\"/>\n    </testcase>\n",
                    l->spread, an->repeat_n);
            continue;
        }
        if (l->m.pass) { fputs("/>\n", f); continue; }
        fprintf(f, ">\n      <failure message=\"max_abs=%.6g cosine=%.8f fail_fraction=%.6g (atol=%g rtol=%g)\">", l->m.max_abs,
                l->m.cosine, l->m.fail_fraction, l->tol.atol, l->tol.rtol);
        fprintf(f, "tensor ");
        cd_put_xml(f, l->tensor);
        fprintf(f, ": max_abs=%.9g mean_abs=%.9g rmse=%.9g max_rel=%.9g cosine=%.9g snr_db=%.3f max_ulp=%.0f "
                   "fail_count=%lld worst_index=%lld (ref %.9g, got %.9g) nan=%lld/%lld inf=%lld/%lld rule=",
                l->m.max_abs, l->m.mean_abs, l->m.rmse, l->m.max_rel, l->m.cosine, l->m.snr_db, l->m.max_ulp,
                (long long)l->m.fail_count, (long long)l->m.worst_index, l->m.worst_ref, l->m.worst_val,
                (long long)l->m.nan_ref, (long long)l->m.nan_val, (long long)l->m.inf_ref, (long long)l->m.inf_val);
        cd_put_xml(f, l->rule);
        if (i == an->first_fail) fprintf(f, " first-divergence kind=%s", an->first_kind);
        if (l->nf_hard) fprintf(f, " nonfinite-where-reference-finite=%lld/%lld", (long long)l->nf_new_a, (long long)l->nf_new_b);
        if (l->risk_rank) { fprintf(f, " fp16-risk-rank=%d ", l->risk_rank); cd_put_xml(f, l->risk_reason); }
        fputs("</failure>\n    </testcase>\n", f);
    }
    fputs("  </testsuite>\n</testsuites>\n", f);
    return cd_afile_commit(&a, err);
}

static void first_sentence(const cd_report_input *in, FILE *f, bool md) {
    const cd_analysis *an = in->an;
    if (in->env->crash) { fprintf(f, "%s crashed: %s\n", in->env->backend_b, in->env->crash); }
    if (an->first_fail < 0) {
        fprintf(f, "All %d compared layers are within tolerance.\n", an->n_layers);
        return;
    }
    const cd_layer_cmp *l = &an->layers[an->first_fail];
    fprintf(f, "First layer out of tolerance: %s%s%s (op #%d, %s), max |a-b| = %.4g, cosine = %.6f, %.3g%% of elements out.\n",
            md ? "`" : "", l->layer, md ? "`" : "", l->op_index, l->op_type, l->m.max_abs, l->m.cosine,
            100 * l->m.fail_fraction);
    if (l->nf_hard && an->first_fail == an->nonfinite_origin)
        fprintf(f, "Local error: the layer turns finite inputs into NaN/Inf where the reference is finite (%lld values on A, %lld on B).\n",
                (long long)l->nf_new_a, (long long)l->nf_new_b);
    else if (l->isolated)
        fprintf(f, "%s: on %s's inputs the %s result is %s tolerance (max |a-b| = %.4g vs %.4g in the full run), so the layer %s.\n",
                !strcmp(an->first_kind, "local") ? "Local error" : "Inherited error", in->env->backend_a,
                in->env->backend_b, l->iso.pass ? "within" : "out of", l->iso.max_abs, l->m.max_abs,
                !strcmp(an->first_kind, "local") ? "itself is wrong" : "only inherits error from earlier layers");
    else
        fprintf(f, "Not isolated (local vs inherited unknown).\n");
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
    first_sentence(in, f, true);
    fputc('\n', f);
    diag_text(in, f, true);
    fprintf(f, "\n| | |\n|---|---|\n| model | `%s` (%s, sha256 `%.16s…`) |\n", e->model_path, e->model_format, e->model_sha256 ? e->model_sha256 : "");
    fprintf(f, "| A | %s: %s %s |\n| B | %s: %s %s (%s) |\n", e->backend_a, e->device_a ? e->device_a : "",
            e->driver_a ? e->driver_a : "", e->backend_b, e->device_b ? e->device_b : "", e->driver_b ? e->driver_b : "",
            e->variant_b ? e->variant_b : "");
    fprintf(f, "| inputs | %s |\n| tolerance | %s |\n| cldiff | %s, `%s` |\n\n", e->input_desc ? e->input_desc : "",
            e->tolerance_desc ? e->tolerance_desc : "", e->tool_version, e->command_line ? e->command_line : "");
    fprintf(f, "%d of %d layers out of tolerance.\n\n", an->n_fail, an->n_layers);
    if (an->n_fail) {
        fputs("| # | layer | type | max abs | cosine | fail % | rel err | growth |\n|---|---|---|---|---|---|---|---|\n", f);
        int shown = 0;
        for (int i = 0; i < an->n_layers && shown < 10; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (l->m.pass) continue;
            shown++;
            fprintf(f, "| %d | `%s` | %s | %.4g | %.6f | %.3g | %.3g | %.3g |\n", l->op_index, l->layer, l->op_type,
                    l->m.max_abs, l->m.cosine, 100 * l->m.fail_fraction, l->rel_err, l->growth);
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
    const char *red = color ? "\033[31;1m" : "", *green = color ? "\033[32;1m" : "", *dim = color ? "\033[2m" : "",
               *off = color ? "\033[0m" : "";
    fprintf(f, "\n%-5s %-28s %-22s %11s %11s %9s %8s\n", "op", "layer", "type", "max_abs", "cosine", "fail%", "growth");
    /* Long models: show every failing layer up to 40 lines and the first/last passing context. */
    int shown = 0;
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        bool show = an->n_layers <= 40 || !l->m.pass || i == an->n_layers - 1 || (an->first_fail >= 0 && abs(i - an->first_fail) <= 2);
        if (!show || shown >= 60) continue;
        shown++;
        fprintf(f, "%s%-5d %-28.28s %-22.22s %11.4g %11.8f %9.4g %8.3g%s%s%s%s%s\n", l->m.pass ? "" : red, l->op_index,
                l->layer, l->op_type, l->m.max_abs, l->m.cosine, 100 * l->m.fail_fraction, l->growth,
                l->jump ? " jump" : "", strcmp(l->where_b, "cpu-fallback") ? "" : " (B on cpu)",
                l->nf_hard ? " NaN/Inf" : "", l->nondet ? " NONDETERMINISTIC" : "", l->m.pass ? "" : off);
    }
    if (shown < an->n_layers) fprintf(f, "%s(%d of %d layers shown; all in layers.csv)%s\n", dim, shown, an->n_layers, off);
    fputc('\n', f);
    fprintf(f, "%s%s%s ", an->verdict == CD_VERDICT_PASS ? green : red,
            an->verdict == CD_VERDICT_PASS ? "PASS" : an->verdict == CD_VERDICT_FAIL ? "FAIL" : "CRASH", off);
    first_sentence(in, f, false);
    if (an->n_jumps) {
        fprintf(f, "Error growth jumps at:");
        for (int j = 0; j < an->n_jumps && j < 5; j++)
            fprintf(f, " %s (x%.3g)", an->layers[an->jumps[j]].layer, an->layers[an->jumps[j]].growth);
        fputc('\n', f);
    }
    if (an->nonfinite_origin >= 0)
        fprintf(f, "%sNaN/Inf first appears in %s on %s%s\n", red, an->layers[an->nonfinite_origin].layer,
                !strcmp(an->nonfinite_side, "a") ? in->env->backend_a : !strcmp(an->nonfinite_side, "a+b") ? "both sides" : in->env->backend_b, off);
    diag_text(in, f, false);
    fprintf(f, "%sreports: layers.csv summary.json report.html junit.xml summary.md dump.h5%s\n", dim, off);
}
