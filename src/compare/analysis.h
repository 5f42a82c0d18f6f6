/* Analysis over the ordered per-layer comparison: first divergence, local vs inherited
 * error, error-versus-depth curve with growth factors and jumps. Pure data; reporters
 * read it. */
#ifndef CD_ANALYSIS_H
#define CD_ANALYSIS_H
#include "compare/metrics.h"
#include "compare/policy.h"

typedef struct cd_layer_cmp {
    int op_index;
    int tensor_id;
    char layer[128];
    char op_type[64];
    char tensor[256];
    char dataset_a[320], dataset_b[320]; /* where the tensors are stored in their runs */
    cd_shape shape;
    cd_metrics m;               /* B vs A */
    cd_tol tol;
    char rule[160];             /* which tolerance rule decided */
    char where_a[16], where_b[16]; /* "cpu", "opencl", "cpu-fallback" */
    char note_b[256];
    double us_a, us_b, kernel_us_b;
    /* fp16 mode: each side against the float32 golden run */
    bool has_golden;
    cd_metrics ga, gb;          /* A vs golden, B vs golden */
    /* accumulation */
    double rel_err;             /* rmse / rms(ref): scale-free error used for the curve */
    double growth;              /* rel_err / rel_err of the previous compared layer (1 at start) */
    bool jump;                  /* growth above the jump threshold */
    /* isolation (local vs inherited) */
    bool isolated;
    cd_metrics iso;             /* B run on A's inputs vs A */
    bool is_output;             /* produces a model output */
    double top1, top5;          /* outputs only, when the last axis looks like classes */
    bool has_topk;
    /* ---- diagnosis (docs/diagnosis.md) ---- */
    int64_t acc_k;              /* accumulation length K of the op, 0 when unknown */
    bool has_hazard;            /* fp16 mode: hazard counts from the float32 golden run */
    int64_t g_over, g_under;    /* golden |x| > 65504; 0 < |x| < 2^-14 */
    double g_absmax;            /* largest finite |golden| */
    double risk;                /* fp16 risk score, 0 = not at risk (see cd_diag_rank_hazards) */
    int risk_rank;              /* 1 = riskiest layer, 0 = not at risk */
    char risk_reason[96];
    int64_t nf_new_a, nf_new_b; /* NaN/Inf on a side where the reference (golden when present,
                                   else the other side) is finite */
    bool nf_hard;               /* such values exist: a hard failure */
    bool has_repeat;            /* --repeat: B ran more than once */
    double spread;              /* max |B_r - B_1| over repeats (inf when NaN/Inf flips) */
    int64_t spread_count;       /* elements that changed in some repeat */
    bool nondet;                /* outputs changed between repeats */
    /* --inputs: per-layer statistics over every input (index by CD_AGG_*) */
    int n_agg;                  /* inputs aggregated, 0 when not an --inputs run */
    int n_agg_fail;             /* inputs on which this layer failed */
    double agg_worst[4], agg_mean[4], agg_p99[4];
    char worst_input[256];      /* input with the largest rel_err at this layer */
} cd_layer_cmp;

enum { CD_AGG_MAX_ABS = 0, CD_AGG_REL_ERR = 1, CD_AGG_FAIL_FRACTION = 2, CD_AGG_COSINE = 3 };

/* One tried pin set of --suggest-pins. */
typedef struct cd_pin_result {
    char layers[512];           /* pinned layers, comma-separated */
    int n_pinned;
    bool pass;                  /* final outputs within tolerance of the reference */
    double out_max_abs, out_cosine; /* worst over the model outputs */
    char error[256];            /* non-empty when the trial could not run */
} cd_pin_result;

typedef enum { CD_VERDICT_PASS = 0, CD_VERDICT_FAIL = 1, CD_VERDICT_CRASH = 2 } cd_verdict;

typedef struct cd_analysis {
    cd_layer_cmp *layers;
    int n_layers;
    int first_fail;             /* index into layers, -1 when all pass */
    int n_fail;
    cd_verdict verdict;
    char first_kind[16];        /* "local", "inherited", "unknown" (not isolated) */
    int jumps[8];               /* indices of the largest growth jumps */
    int n_jumps;
    int nonfinite_origin;       /* first layer where B has NaN/Inf but A is finite, -1 none */
    double noise_floor;         /* relative error treated as rounding noise when measuring growth:
                                   set by the caller per precision (0 -> 1e-6, float32 noise) */
    /* ---- diagnosis (docs/diagnosis.md); zero when the feature was not used ---- */
    char nonfinite_side[8];     /* side(s) where NaN/Inf first appeared: "a", "b", "a+b" */
    int n_nonfinite_hard;       /* layers with NaN/Inf where the reference is finite */
    int n_at_risk;              /* fp16 hazards: layers at risk */
    int repeat_n;               /* --repeat N (0/1: not used) */
    int n_nondet, first_nondet; /* nondeterministic layers, first of them (-1 none) */
    int n_inputs_run;           /* --inputs: inputs run */
    char inputs_dir[512];
    char worst_input[256];      /* --inputs: the input whose tensors the dump keeps */
    char repro_dir[512];        /* repro pack written, "" none */
    char repro_cmd[1024];
    cd_pin_result *pins;        /* --suggest-pins: tried sets, passing first, smallest first */
    int n_pins;
    char pins_note[256];
    bool auto_tol;              /* --tolerance auto */
    char calibrated[512];       /* --calibrate: tolerance file written */
} cd_analysis;

#define CD_JUMP_GROWTH 4.0  /* a layer multiplying the relative error by more than this */

/* Fills rel_err/growth/jump, first_fail, n_fail, verdict, jumps, nonfinite_origin. */
void cd_analyze(cd_analysis *a);
/* Classifies the first divergence once its isolated metrics are in. */
void cd_classify_first(cd_analysis *a);
void cd_analysis_free(cd_analysis *a);
#endif
