/* Analysis over the ordered per-layer comparison: first divergence, local vs inherited
 * error, error-versus-depth curve with growth factors and jumps. Pure data; reporters
 * read it. */
#ifndef CD_ANALYSIS_H
#define CD_ANALYSIS_H
#include "compare/metrics.h"
#include "compare/policy.h"

/* One output against a reference run: range error (max|a-b| / max|ref|), cosine and the
 * reference's max|ref| (finite elements). */
typedef struct cd_out_dist {
    bool has;
    double range_err, cos, ref_absmax;
} cd_out_dist;

typedef struct cd_layer_cmp {
    int op_index;
    int tensor_id;
    char layer[128];
    char op_type[64];
    char tensor[256];
    char dataset_a[320], dataset_b[320]; /* where the tensors are stored in their runs */
    cd_shape shape;
    cd_metrics m; /* B vs A */
    cd_tol tol;
    char rule[160];                /* which tolerance rule decided */
    char where_a[16], where_b[16]; /* "cpu", "opencl", "cpu-fallback" */
    char note_b[256];
    double us_a, us_b, kernel_us_b;
    /* fp16 mode: each side against the float32 golden run */
    bool has_golden;
    cd_metrics ga, gb; /* A vs golden, B vs golden */
    /* accumulation */
    double rel_err; /* rmse / rms(ref): scale-free error used for the curve */
    double growth;  /* rel_err / rel_err of the previous compared layer (1 at start) */
    bool jump;      /* growth above the jump threshold */
    /* isolation (local vs inherited) */
    bool isolated;
    cd_metrics iso;    /* B run on A's inputs vs A */
    bool is_output;    /* produces a model output */
    double top1, top5; /* outputs only, when the last axis looks like classes */
    bool has_topk;
    /* ---- diagnosis (docs/diagnosis.md) ---- */
    int64_t acc_k;           /* accumulation length K of the op, 0 when unknown */
    bool has_hazard;         /* fp16 mode: hazard counts from the float32 golden run */
    int64_t g_over, g_under; /* golden |x| > 65504; 0 < |x| < 2^-14 */
    double g_absmax;         /* largest finite |golden| */
    double risk;             /* fp16 risk score, 0 = not at risk (see cd_diag_rank_hazards) */
    int risk_rank;           /* 1 = riskiest layer, 0 = not at risk */
    char risk_reason[96];
    int64_t nf_new_a, nf_new_b; /* NaN/Inf on a side where the reference (golden when present,
                                   else the other side) is finite */
    bool nf_hard;               /* such values exist: a hard failure */
    bool has_repeat;            /* --repeat: B ran more than once */
    double spread;              /* max |B_r - B_1| over repeats (inf when NaN/Inf flips) */
    int64_t spread_count;       /* elements that changed in some repeat */
    bool nondet;                /* outputs changed between repeats */
    /* --inputs: per-layer statistics over every input (index by CD_AGG_*) */
    int n_agg;      /* inputs aggregated, 0 when not an --inputs run */
    int n_agg_fail; /* inputs on which this layer failed */
    double agg_worst[4], agg_mean[4], agg_p99[4];
    char worst_input[256]; /* input with the largest rel_err at this layer */
    /* ---- local check (docs/verdicts.md): B's layer against the reference on the same inputs ---- */
    bool has_local;            /* the layer was checked locally (loc_note says why not) */
    cd_metrics loc;            /* B vs the local reference: fp32, B re-run on A's inputs vs A
                                   itself; fp16, B's free-run output vs the CPU float32 kernel on
                                   B's own half inputs and half weights (run ref_local) */
    char family[16];           /* error-bound family: exact, elementwise, transcendental,
                                   accumulate, normalize, rounding, generic */
    double loc_err, loc_bound; /* |B_local - ref| and its bound at the element of largest ratio */
    double loc_ratio;          /* max over elements of error / bound (0: exact; inf: bound 0, error > 0) */
    int64_t loc_exceed;        /* elements over their bound */
    int64_t loc_worst;         /* flat index of the largest ratio, -1 none */
    bool loc_pass;             /* every element within its bound, no NaN/Inf where ref is finite */
    char loc_note[200];        /* how the bound was made, or why the layer was not checked */
    bool loc_compared_only;    /* not checkable locally BY DESIGN (no cldiff kernel for the op, an
                                  output with no element bound): compared A vs B only, named in
                                  every report (loc_note says why), never makes the run
                                  incomplete; missing data (stats-only, not captured) is not this */
    /* ---- free run: information unless the layer is a model output ---- */
    bool drift; /* free-run element tolerance exceeded (!m.pass) */
    /* ---- model outputs (is_output): the output tolerance and task-aware summaries ---- */
    double out_range_err; /* max|a-b| / max|ref| */
    bool out_pass;        /* within the output tolerance */
    char out_rule[160];   /* which output rule decided */
    /* quantized models: run A's output against the unquantized float model (run float_ref):
     * the model's own quantization error, the yardstick its outputs are held to */
    cd_out_dist qref;
    /* fp16 runs: B's output, and A's, against the float32 golden run */
    cd_out_dist gref_b, gref_a;
    char task[16];                         /* "classifier", "detection" or "" (shape says nothing) */
    int64_t det_ref, det_val, det_matched; /* detection: boxes in A, in B, matched (IoU >= 0.5, same class) */
    /* detection outputs whose box counts differ (no element-wise comparison: counts_differ):
     * each side's boxes matched against the float32 golden run's; golden_ok when B matches the
     * golden run's boxes at least as well as A does (the fp16 yardstick for boxes) */
    bool counts_differ, det_golden_ok;
    int64_t det_gold, det_gold_a, det_gold_b;
} cd_layer_cmp;

enum { CD_AGG_MAX_ABS = 0, CD_AGG_REL_ERR = 1, CD_AGG_FAIL_FRACTION = 2, CD_AGG_COSINE = 3 };

/* One tried pin set of --suggest-pins. */
typedef struct cd_pin_result {
    char layers[512]; /* pinned layers, comma-separated */
    int n_pinned;
    bool pass;                      /* final outputs within tolerance of the reference */
    double out_max_abs, out_cosine; /* worst over the model outputs */
    char error[256];                /* non-empty when the trial could not run */
} cd_pin_result;

/* incomplete: the runs were not all compared (interrupted, a partial dump, an engine that stopped
 * early, 0 layers compared, probed layers in one run only); error: no comparison could be made
 * (a run failed before it was judged). Neither is ever a pass (docs/verdicts.md). */
typedef enum {
    CD_VERDICT_PASS = 0,
    CD_VERDICT_FAIL = 1,
    CD_VERDICT_CRASH = 2,
    CD_VERDICT_INCOMPLETE = 3,
    CD_VERDICT_ERROR = 4
} cd_verdict;
/* What a failing verdict is (docs/verdicts.md): a kernel fault (a layer's local error over its
 * bound), output drift (no fault, but a model output beyond the output tolerance), or a crash. */
typedef enum {
    CD_KIND_PASS = 0,
    CD_KIND_FAULT = 1,
    CD_KIND_DRIFT = 2,
    CD_KIND_CRASH = 3,
    CD_KIND_NONDET = 4,
    CD_KIND_INCOMPLETE = 5,
    CD_KIND_ERROR = 6,
    /* the model itself is wrong for the engine (a float tensor fed to an int8 kernel with no
     * calib): the engine computes what its code does with such a model, every layer is right on
     * its own inputs, and the outputs are still wrong (docs/paddle-lite-phone.md) */
    CD_KIND_DEFECT = 7
} cd_verdict_kind;

/* A layer's note (note_b) that starts with this names a model defect at that op: the engine's
 * kernel cannot read what the model gives it. Its local check is not a kernel fault. */
#define CD_MODEL_DEFECT_NOTE "MODEL DEFECT"

typedef struct cd_analysis {
    cd_layer_cmp *layers;
    int n_layers;
    int first_fail; /* index into layers, -1 when all pass */
    int n_fail;
    cd_verdict verdict;
    char first_kind[16]; /* "local", "inherited", "unknown" (not isolated) */
    int jumps[8];        /* indices of the largest growth jumps */
    int n_jumps;
    int nonfinite_origin; /* first layer where B has NaN/Inf but A is finite, -1 none */
    double noise_floor;   /* relative error treated as rounding noise when measuring growth:
                                   set by the caller per precision (0 -> 1e-6, float32 noise) */
    /* ---- diagnosis (docs/diagnosis.md); zero when the feature was not used ---- */
    char nonfinite_side[8];     /* side(s) where NaN/Inf first appeared: "a", "b", "a+b" */
    int n_nonfinite_hard;       /* layers with NaN/Inf where the reference is finite */
    int n_at_risk;              /* fp16 hazards: layers at risk */
    int repeat_n;               /* --repeat N (0/1: not used) */
    int n_nondet, first_nondet; /* nondeterministic layers, first of them (-1 none) */
    int n_inputs_run;           /* --inputs: inputs run */
    char inputs_dir[512];
    char worst_input[256]; /* --inputs: the input whose tensors the dump keeps */
    char repro_dir[512];   /* repro pack written, "" none */
    char repro_cmd[1024];
    cd_pin_result *pins; /* --suggest-pins: tried sets, passing first, smallest first */
    int n_pins;
    char pins_note[256];
    bool auto_tol;        /* --tolerance auto */
    char calibrated[512]; /* --calibrate: tolerance file written */
    /* ---- truthful verdicts (docs/verdicts.md) ---- */
    cd_verdict_kind kind;
    bool local_ran;        /* a local (teacher-forced) run of B exists */
    char local_ref[48];    /* run the local errors are measured against ("cpu", "ref_local") */
    char local_inputs[48]; /* run whose layer inputs the local pass used ("" : run A) */
    int n_local;           /* layers checked locally */
    int n_compared_only;   /* layers compared only, not checkable locally by design (loc_compared_only) */
    int first_fault;       /* first layer whose local check fails, -1 none */
    int n_faults;
    int n_drift;               /* layers beyond the element tolerance in the free run (information) */
    int n_outputs, n_out_fail; /* model outputs compared, out of the output tolerance */
    int amplifiers[8];         /* layers that multiply the free-run error most (growth), local pass */
    int n_amplifiers;
    int contributors[8]; /* layers whose local error, relative to their output, is largest */
    int n_contributors;
    char out_tol_desc[200]; /* the output tolerance in words */
    /* ---- verdicts that cannot lie (src/verdict/judge.c) ---- */
    char incomplete[512]; /* what was and was not checked when the verdict is incomplete ("" : all) */
    bool interrupted;     /* a signal stopped the run (the process exits 130) */
    int n_unchecked;      /* probed tensors present in one run only */
    char error[512];      /* verdict error: the failure that left the run unjudged */
    int error_code;       /* its exit code (docs/design.md §6) */
    /* ---- model defects (a finding in every report): layers whose note_b starts with
     * CD_MODEL_DEFECT_NOTE; not counted as kernel faults ---- */
    int n_defects;
    int first_defect; /* index into layers, -1 none */
} cd_analysis;

#define CD_JUMP_GROWTH 4.0 /* a layer multiplying the relative error by more than this */

/* Fills rel_err/growth/jump, first_fail, n_fail, verdict, jumps, nonfinite_origin. */
void cd_analyze(cd_analysis *a);
struct cd_policy;
/* An output that fails the output rule (range_err, cosine against A, or against the float32
 * golden run with vs_golden) is still within the model's own yardstick: its quantization error
 * (quantized models) or A's distance from float32 (fp16 runs). docs/verdicts.md. */
bool cd_output_yardstick(const cd_layer_cmp *l, const cd_policy *p, double range_err, double cosine, bool vs_golden);
/* fp16 (a float32 golden run was compared): the output lies below half's normal range
 * (2^-14) in A, in B and in the golden run, and A and B differ by less than 2^-14: a difference
 * that half cannot represent at that magnitude (a side may flush its subnormals), not drift
 * (docs/verdicts.md "Output tolerance"). */
bool cd_output_half_floor(const cd_layer_cmp *l);
void cd_analysis_free(cd_analysis *a);
#endif
