/* Reporters: each takes the same analysed result and writes one format into the output
 * folder, through a temporary name renamed when complete. */
#ifndef CD_REPORT_H
#define CD_REPORT_H
#include <stdio.h>
#include "compare/analysis.h"
#include "compare/dumpcmp.h"

/* Everything about the run a report shows besides the per-layer table. */
typedef struct cd_report_env {
    const char *tool_version;
    const char *command_line;
    const char *model_path;
    const char *model_sha256;
    const char *model_format;
    const char *precision;             /* "fp32" / "fp16" */
    const char *backend_a, *backend_b; /* "cpu", "opencl" */
    const char *device_a, *driver_a, *device_b, *driver_b;
    const char *variant_b; /* OpenCL variant used: fp32, fp16 (storage), fp16-compute */
    unsigned long long seed;
    const char *input_desc; /* e.g. "x: random uniform[-1,1) seed=1 [1,3,64,64]" */
    double wall_ms_a, wall_ms_b, wall_ms_total;
    const char *tolerance_desc; /* e.g. "fp32 default atol=1e-4 rtol=1e-4 ..." */
    const char *crash;          /* non-NULL: crash/hang description of backend B */
    int n_ops;                  /* ops in the model */
    const char *created;        /* UTC ISO time */
} cd_report_env;

/* Per-channel error and heatmap data for the first failing layer and the worst layers
 * (the caller reads both tensors back from the dump). */
typedef struct cd_report_detail {
    int layer;              /* index into analysis->layers */
    const float *ref, *val; /* full tensors, shape = layers[layer].shape */
} cd_report_detail;

typedef struct cd_report_input {
    const cd_report_env *env;
    const cd_analysis *an;
    const cd_report_detail *details;
    int n_details;
    /* probed tensors stored in one run only (not compared): listed in layers.csv */
    const cd_cmp_unmatched *unchecked;
    int n_unchecked;
} cd_report_input;

/* Each writes <dir>/<file>; returns CD_E_IO with the path on failure. */
cd_status cd_report_csv(const cd_report_input *in, const char *dir, cd_error *err);      /* layers.csv */
cd_status cd_report_json(const cd_report_input *in, const char *dir, cd_error *err);     /* summary.json */
cd_status cd_report_html(const cd_report_input *in, const char *dir, cd_error *err);     /* report.html */
cd_status cd_report_junit(const cd_report_input *in, const char *dir, cd_error *err);    /* junit.xml */
cd_status cd_report_markdown(const cd_report_input *in, const char *dir, cd_error *err); /* summary.md */
/* All of the above. */
cd_status cd_report_all(const cd_report_input *in, const char *dir, cd_error *err);
/* Terminal summary (colour when use_color). */
void cd_report_terminal(const cd_report_input *in, FILE *f, bool use_color);

/* The verdict kind every report states (docs/verdicts.md): the analysis's kind, except that a
 * crash of backend B is a crash. Returns false when the analysis did not classify a failing
 * verdict (kind left at pass while verdict is fail): the reports then say so instead of
 * claiming a kind. */
bool cd_report_kind(const cd_report_input *in, cd_verdict_kind *kind);
/* "pass", "kernel_fault", "output_drift", "crash", "nondeterministic", "model_defect". */
const char *cd_report_kind_name(cd_verdict_kind kind);
/* The verdict word of summary.json and summary.md: pass, fail, crash, incomplete, error. */
const char *cd_report_verdict_name(cd_verdict v);
/* The layer at index i of the analysis, NULL when i is out of range (unset indices). */
const cd_layer_cmp *cd_report_layer(const cd_analysis *an, int i);
/* The first kernel fault, NULL unless the verdict kind is a kernel fault. */
const cd_layer_cmp *cd_report_first_fault(const cd_analysis *an);
/* The first model defect (a layer whose note starts with CD_MODEL_DEFECT_NOTE), NULL none. */
const cd_layer_cmp *cd_report_first_defect(const cd_analysis *an);
/* "MODEL DEFECT at conv2d_0 (conv2d, op #1) and N more op(s): ... . <what the engine does, how to
 * fix the model>"; "" when the run has none. Every report prints it. */
void cd_report_defect_line(const cd_analysis *an, char *buf, size_t n);
/* "compared only, not checkable locally: LAYER (type, op #N: why; A vs B within tolerance); ..."
 * naming the layers the local check cannot check by design (loc_compared_only: they never make a
 * run incomplete, docs/verdicts.md); "" when there are none. Every report prints it. */
void cd_report_compared_only_line(const cd_analysis *an, char *buf, size_t n);
/* loc.rmse / loc.ref_rms (loc.rmse when the reference is all zero). */
double cd_report_rel_local(const cd_layer_cmp *l);
/* Whether the output tolerance was applied (out_pass/out_range_err mean something). */
bool cd_report_outputs_judged(const cd_analysis *an);
/* What a PASS rests on, for every report: "N layers checked locally, all within their bounds",
 * "no layer checked locally (N compared)" when the local check ran but had nothing to check
 * (an engine that hands over the outputs only), or "N layers compared, no local check". */
void cd_report_pass_basis(const cd_analysis *an, char *buf, size_t n);
#endif
