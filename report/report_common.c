/* What every reporter reads the verdict through (report.h): its kind and name, the layer by
 * index, the first kernel fault, the relative local error. Calls no reporter (html.c and
 * text_reports.c call it). */
#include "report/report.h"

bool cd_report_kind(const cd_report_input *in, cd_verdict_kind *kind) {
    const cd_analysis *an = in->an;
    *kind = an->kind;
    if (an->kind == CD_KIND_INCOMPLETE || an->kind == CD_KIND_ERROR) return true;
    if (an->verdict == CD_VERDICT_CRASH || in->env->crash) {
        *kind = CD_KIND_CRASH;
        return true;
    }
    if ((unsigned)an->kind > CD_KIND_ERROR) return false;
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
