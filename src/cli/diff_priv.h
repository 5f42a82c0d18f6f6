/* Private to the differential command (cmd_diff.c and its diff_*.c parts): the state of one
 * differential run and the steps the parts share. Not a module interface. */
#ifndef CD_DIFF_PRIV_H
#define CD_DIFF_PRIV_H
#include "cli/session.h"
#include "compare/dumpcmp.h"
#include "report/report.h"
#include "verdict/verdict.h"

/* --inputs: per-layer values of each metric over every input, for worst/mean/p99. */
typedef struct agg_state {
    int n_inputs, cap;
    char (*names)[256];
    int n_layers;
    cd_layer_cmp *proto; /* layer identities (from the first input) */
    double *v[4];        /* [input * n_layers + layer] */
    bool *fail;
} agg_state;

typedef struct diff_ctx {
    bool collect_only;    /* --inputs pass: run and compare, keep the analysis, no reports */
    cd_analysis *an_out;  /* collect_only: receives the analysis */
    const agg_state *agg; /* final pass of --inputs */
    const char *worst_input;
} diff_ctx;

/* One differential run, from the session to the reports (cmd_diff.c walks it step by step). */
typedef struct diff_run {
    const cd_cli_opts *o;
    diff_ctx *ctx;
    cd_session s;
    bool session_open; /* cd_session_open was called: cd_session_free is due */
    cd_policy pol;
    bool have_pol;
    bool auto_tol, local, crashed;
    bool engine_b; /* B is a whole-model engine: the CPU runs each layer on B's inputs */
    const char *A, *B;
    cd_protocol proto;      /* which runs are made where (src/verdict/judge.c) */
    const char *ref;        /* the reference backend (registry): its own runs (local reference, golden, float_ref) */
    const char *phase;      /* what runs now, for an interruption's report */
    const char *stop_phase; /* the phase a signal stopped after the runs (NULL: none) */
    char run_a[32], run_b[32], run_local[48];
    cd_run_result ra, rb, rg, rr, rl, rq;
    bool have_qref; /* run float_ref (the unquantized model) is in the dump */
    double wall_rep;
    cd_status stb; /* run B (and its repeats) */
    cd_error eb;
    cd_dump_reader *r;
    const char **outs;
    int64_t *acck;
    cd_cmp_request q;
    cd_analysis an;
    bool have_an; /* an holds an analysis to free */
    cd_cmp_unmatched *um;
    int nu;
    char pdesc[512], created[32], crash_desc[512];
    char compute_a[16], compute_b[16]; /* the arithmetic runs A and B recorded */
    cd_report_env env;
    bool *settled; /* fp32 local check: ops settled by B's free run (n_ops) */
    cd_settle_info *settled_info;
    cd_local_settle_ctx settle;
    /* fp16 with an OpenCL B: the local check on B's own inputs (rec is B's record; ref_local ran
     * on it and checked B's free-run outputs as it ran) */
    bool own_inputs;
    cd_forcing *rec; /* the forcing record, kept past the runs when --layers probes only some
                                 * layers: the local check's magnitudes and the repro pack read the
                                 * inputs the dump lacks from it (NULL otherwise) */
    /* run B started ahead (cd_session_prestart): its request and A's record, shared with B's
     * child (made before the runs) */
    cd_run_req qb;
    bool have_qb;
    bool unavailable; /* B's availability answer came after A and says no */
    cd_forcing *pre_rec;
} diff_run;

/* cmd_diff.c: the differential run (collect_only / agg passes of ctx included). */
int cd_diff_core(const cd_cli_opts *o, diff_ctx *ctx);

/* diff_verdict.c: tolerance policy from the command line, the local check's run description
 * (src/verdict/ decides), --baseline. */
cd_status cd_diff_load_policy(const cd_cli_opts *o, cd_precision prec, cd_policy *p, cd_error *err);
void cd_diff_policy_desc(const cd_policy *p, char *buf, size_t n);
/* Whether the differential run does the local check (--isolate/--local none and --dump
 * stats turn it off). */
bool cd_local_enabled(const cd_cli_opts *o);
/* The local check's run description for the judge; false when no local check runs. */
bool cd_diff_verdict_run(diff_run *d, cd_verdict_run *v);
cd_status cd_diff_baseline_gate(const cd_cli_opts *o, const cd_dump_reader *r, const char *run, const cd_policy *pol,
                                int *n_fail, cd_error *err);

/* diff_report.c: report writing, and the compare / report commands' comparison. */
void cd_diff_iso_time(char *buf, size_t n);
void cd_diff_fill_env(diff_run *d);
void cd_diff_store_table(diff_run *d);
cd_status cd_diff_write_reports(const cd_cmp_request *q, const cd_analysis *an, const cd_cmp_unmatched *um, int nu,
                                const cd_report_env *env, const char *out_dir, bool quiet, cd_error *err);
int cd_diff_compare_and_report(const cd_cli_opts *o, cd_dump_reader *ra, cd_dump_reader *rb, const char *run_a,
                               const char *run_b, bool same);

/* diff_repro.c: the repro pack. */
cd_status cd_diff_write_text(const char *path, const char *text, cd_error *err);
void cd_diff_repro_pack(diff_run *d);

/* diff_report.c: the --inputs aggregates into the worst input's analysis, before its reports. */
void cd_diff_agg_apply(const agg_state *g, cd_analysis *an);
/* diff_inputs.c: --inputs and --calibrate (each calls cd_diff_core per input or seed). */
int cd_diff_inputs(const cd_cli_opts *o);
int cd_diff_calibrate(const cd_cli_opts *o);
#endif
