/* Tolerance policy: defaults per precision, overrides per op type and per layer glob from
 * a tolerance file. Each layer's verdict records which rule decided it.
 *
 * File format (one rule per line, '#' starts a comment, blank lines ignored):
 *     default            atol=1e-4 rtol=1e-4 min_cos=0.99999 max_fail_fraction=0
 *     op:conv2d          atol=2e-4
 *     layer:conv2d_1*    rtol=1e-2 min_cos=0.999
 * Keys: atol, rtol, range_atol, min_cos, max_fail_fraction (any subset). Rules are applied in the order
 * default < op:TYPE < layer:GLOB; among rules of one kind, later lines win. */
#ifndef CD_POLICY_H
#define CD_POLICY_H
#include "compare/metrics.h"
#include "engine/ops.h"

typedef struct cd_tol_rule {
    int kind; /* 0 default, 1 op type, 2 layer glob */
    char pattern[128];
    double atol, rtol, min_cos, max_fail_fraction; /* < 0: not set by this rule */
    double range_atol;
    int line;
} cd_tol_rule;

typedef struct cd_policy {
    cd_tol base; /* precision defaults, then command-line overrides */
    /* The output tolerance (docs/verdicts.md): a model output passes when
     * max|a-b| <= out_range * max|ref| and cosine >= out_min_cos (and no NaN/Inf where the
     * reference is finite). With user tolerances (user = true) outputs take the element rule
     * of `base`/the file instead, and the same values are extra local allowances. */
    double out_range, out_min_cos;
    bool user;
    char base_source[64]; /* "fp32 default", "fp16 default", "command line" */
    cd_tol_rule *rules;
    int n_rules;
    char file[512];
} cd_policy;

/* Defaults (documented in README "Tolerances"):
 * fp32: atol 1e-4, rtol 1e-4, min_cos 0.99999, max_fail_fraction 0
 * fp16: atol 1e-3, rtol 1e-2, range_atol 4e-3, min_cos 0.999, max_fail_fraction 1e-3 */
void cd_policy_init(cd_policy *p, cd_precision prec);
/* Command-line overrides (negative = keep). */
void cd_policy_override(cd_policy *p, double atol, double rtol, double min_cos, double max_fail_fraction);
cd_status cd_policy_load(cd_policy *p, const char *path, cd_error *err);
cd_status cd_policy_parse(cd_policy *p, const char *text, const char *name, cd_error *err);
/* Tolerance for one layer; rule_out (may be NULL) describes the deciding rule. */
cd_tol cd_policy_for(const cd_policy *p, const char *op_type, const char *layer, char *rule_out, size_t n);
/* A model output against the output tolerance (the user's element rule when user is set). */
bool cd_policy_output_pass(const cd_policy *p, const cd_metrics *m);
void cd_policy_free(cd_policy *p);
#endif
