/* Comparing runs stored in dumps: matches tensors, computes metrics per layer, and stores
 * the comparison table back into a dump. */
#ifndef CD_DUMPCMP_H
#define CD_DUMPCMP_H
#include "compare/analysis.h"
#include "store/dump.h"

typedef struct cd_cmp_unmatched {
    char side; /* 'a' or 'b' */
    char tensor[256];
    char layer[128];
    int op_index;
} cd_cmp_unmatched;

typedef struct cd_cmp_request {
    const cd_dump_reader *ra, *rb; /* may be the same reader */
    const char *run_a, *run_b;
    const cd_dump_reader *rg; /* golden (fp16 mode), NULL if none */
    const char *run_g;
    const cd_policy *policy;
    bool by_op_index;                  /* same model: match on op index + tensor; else name + shape */
    bool half_ulps;                    /* ULPs in binary16 */
    const char *const *output_tensors; /* names of model outputs (top-k), may be NULL */
    int n_outputs;
    /* diagnosis (docs/diagnosis.md); all optional. compare/ does not call diag/: the caller
     * passes diag's rules in as functions (NULL: not used) and ranks hazards afterwards. */
    const int64_t *acc_k; /* per op index: accumulation length K (cd_diag_acc_len) */
    int n_acc_k;
    /* --tolerance auto: a layer's tolerance from its K, rms(ref) and precision (cd_diag_auto_tol) */
    cd_tol (*auto_tol)(const cd_tol *base, bool fp16, int64_t k, double ref_rms, char *rule, size_t n);
    /* with a golden run: its values beyond the half range (cd_diag_hazard_counts); sets has_hazard */
    void (*hazard_counts)(const float *golden, int64_t n, int64_t *over, int64_t *under, double *absmax);
    bool fp16;   /* precision of the compared runs (auto tolerance, hazards) */
    int threads; /* each metric pass runs on up to this many threads (0 or 1: one);
                                       the results do not depend on it */
} cd_cmp_request;

cd_status cd_compare_runs(const cd_cmp_request *q, cd_analysis *an, cd_cmp_unmatched **unmatched, int *n_unmatched,
                          cd_error *err);
/* Writes the comparison table under /compare/ (+ attrs: policy, first_divergence, verdict, kind). */
cd_status cd_compare_store(cd_dump *d, const char *run_a, const char *run_b, const cd_analysis *an,
                           const char *policy_desc, cd_error *err);
/* The local check's per-layer results: /local/<run_local> (table) with attribute reference. */
cd_status cd_local_store(cd_dump *d, const char *run_local, const cd_analysis *an, cd_error *err);
/* Reads /local/<run_local> back into the layers of an (matched by op index + tensor); *found
 * is false (and CD_OK returned) when the dump has no such table. */
cd_status cd_local_load(const cd_dump_reader *r, const char *run_local, cd_analysis *an, bool *found, cd_error *err);
/* Reads the two tensors of layer i back (for heatmaps); ref and val are malloc-ed. */
/* Quantized models: fills qref of every output layer of an from run A
 * against run_q (the unquantized float model) of the same dump (docs/verdicts.md). */
cd_status cd_compare_quant_ref(const cd_dump_reader *r, const char *run_a, const char *run_q, cd_analysis *an,
                               cd_error *err);
/* fp16 runs: every output of run B (gref_b) and of run A (gref_a) against the float32 golden run. */
cd_status cd_compare_golden_outputs(const cd_dump_reader *r, const char *run_a, const char *run_b, const char *run_g,
                                    cd_analysis *an, cd_error *err);
cd_status cd_compare_read_pair(const cd_cmp_request *q, const cd_layer_cmp *l, float **ref, float **val, cd_error *err);
#endif
