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
} cd_layer_cmp;

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
} cd_analysis;

#define CD_JUMP_GROWTH 4.0  /* a layer multiplying the relative error by more than this */

/* Fills rel_err/growth/jump, first_fail, n_fail, verdict, jumps, nonfinite_origin. */
void cd_analyze(cd_analysis *a);
/* Classifies the first divergence once its isolated metrics are in. */
void cd_classify_first(cd_analysis *a);
void cd_analysis_free(cd_analysis *a);
#endif
