/* What every reporter reads the verdict through (report.h): its kind and name, the layer by
 * index, the first kernel fault, the relative local error. Calls no reporter (html.c and
 * text_reports.c call it). */
#include "report/report.h"
#include <stdio.h>
#include <string.h>

bool cd_report_kind(const cd_report_input *in, cd_verdict_kind *kind) {
    const cd_analysis *an = in->an;
    *kind = an->kind;
    if (an->kind == CD_KIND_INCOMPLETE || an->kind == CD_KIND_ERROR) return true;
    if (an->verdict == CD_VERDICT_CRASH || in->env->crash) {
        *kind = CD_KIND_CRASH;
        return true;
    }
    if ((unsigned)an->kind > CD_KIND_DEFECT) return false;
    if (an->kind != CD_KIND_PASS || an->verdict == CD_VERDICT_PASS) return true;
    /* A failing verdict the analysis left unclassified: only nondeterminism keeps its old meaning. */
    if (an->n_nondet && !an->n_fail) {
        *kind = CD_KIND_NONDET;
        return true;
    }
    return false;
}

const char *cd_report_kind_name(cd_verdict_kind k) {
    switch (k) {
    case CD_KIND_PASS: return "pass";
    case CD_KIND_FAULT: return "kernel_fault";
    case CD_KIND_DRIFT: return "output_drift";
    case CD_KIND_CRASH: return "crash";
    case CD_KIND_NONDET: return "nondeterministic";
    case CD_KIND_INCOMPLETE: return "incomplete";
    case CD_KIND_ERROR: return "error";
    case CD_KIND_DEFECT: return "model_defect";
    }
    return "unknown";
}

const cd_layer_cmp *cd_report_layer(const cd_analysis *an, int i) {
    return i >= 0 && i < an->n_layers ? &an->layers[i] : NULL;
}

const cd_layer_cmp *cd_report_first_fault(const cd_analysis *an) {
    return an->kind == CD_KIND_FAULT ? cd_report_layer(an, an->first_fault) : NULL;
}

double cd_report_rel_local(const cd_layer_cmp *l) {
    return l->loc.ref_rms > 0 ? l->loc.rmse / l->loc.ref_rms : l->loc.rmse;
}

bool cd_report_outputs_judged(const cd_analysis *an) { return an->n_outputs > 0; }

void cd_report_pass_basis(const cd_analysis *an, char *buf, size_t n) {
    if (an->local_ran && an->n_local > 0)
        snprintf(buf, n, "%d layers checked locally, all within their bounds", an->n_local);
    else if (an->local_ran)
        snprintf(buf, n, "no layer checked locally (%d compared)", an->n_layers);
    else
        snprintf(buf, n, "%d layers compared, no local check", an->n_layers);
}

const char *cd_report_verdict_name(cd_verdict v) {
    switch (v) {
    case CD_VERDICT_PASS: return "pass";
    case CD_VERDICT_FAIL: return "fail";
    case CD_VERDICT_CRASH: return "crash";
    case CD_VERDICT_INCOMPLETE: return "incomplete";
    case CD_VERDICT_ERROR: return "error";
    }
    return "error";
}

const cd_layer_cmp *cd_report_first_defect(const cd_analysis *an) { return cd_report_layer(an, an->first_defect); }

void cd_report_defect_line(const cd_analysis *an, char *buf, size_t n) {
    buf[0] = 0;
    const cd_layer_cmp *l = cd_report_first_defect(an);
    if (!l || !an->n_defects) return;
    size_t o =
        (size_t)snprintf(buf, n, "%s at %s (%s, op #%d)", CD_MODEL_DEFECT_NOTE, l->layer, l->op_type, l->op_index);
    if (an->n_defects > 1 && o < n) o += (size_t)snprintf(buf + o, n - o, " and %d more op(s):", an->n_defects - 1);
    for (int i = 0, k = 0; i < an->n_layers && an->n_defects > 1 && k < 8 && o < n; i++)
        if (i != an->first_defect && !strncmp(an->layers[i].note_b, CD_MODEL_DEFECT_NOTE, strlen(CD_MODEL_DEFECT_NOTE)))
            o += (size_t)snprintf(buf + o, n - o, "%s %s", k++ ? "," : "", an->layers[i].layer);
    const char *why = l->note_b + strlen(CD_MODEL_DEFECT_NOTE);
    while (*why == ':' || *why == ' ') why++;
    if (o < n) snprintf(buf + o, n - o, ". %s", why);
}

void cd_report_compared_only_line(const cd_analysis *an, char *buf, size_t n) {
    buf[0] = 0;
    int k = 0;
    size_t o = 0;
    for (int i = 0; i < an->n_layers && o < n; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (!l->loc_compared_only) continue;
        if (!k++) o += (size_t)snprintf(buf, n, "compared only, not checkable locally:");
        if (k > 8) continue;
        const char *why = l->loc_note, *p = strstr(why, "locally: ");
        if (p) why = p + strlen("locally: ");
        if (o < n)
            o += (size_t)snprintf(buf + o, n - o, "%s %s (%s, op #%d: %s; A vs B %s)", k > 1 ? ";" : "", l->layer,
                                  l->op_type, l->op_index, why, l->m.pass ? "within tolerance" : "beyond tolerance");
    }
    if (k > 8 && o < n) snprintf(buf + o, n - o, "; and %d more", k - 8);
}
