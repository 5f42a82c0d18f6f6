/* The verdict (docs/verdicts.md, docs/design.md §5): the module's one public header.
 *
 * Given a dump with runs A and B (and B's local run), the model and B's plan, it decides for
 * every probed layer whether B's kernel is wrong or the layer only inherited error:
 *
 * - the comparison of the free runs with diag's rules plugged in (automatic tolerance, golden
 *   hazards) and --repeat's nondeterminism (cd_verdict_compare_runs, cd_verdict_merge_repeats);
 * - the local check: B's output of each layer against the reference on the same inputs (fp32:
 *   B re-run on A's exact inputs; fp16: B's free run on its own), held to the error bound of its
 *   op family (bound specs, magnitudes sum |w x|, the int8 bounds, settling by the free run);
 *   cd_verdict_local builds the request from the run's sides, cd_local_check_layers runs it;
 * - the exit code of a decided analysis (compare/analysis.h decides the kind of fault and
 *   applies the output yardsticks).
 *
 * Nothing here parses a command line or prints: the caller (src/cli/) fills the structs below
 * and reports. The per-layer results go into the analysis; cd_local_store (compare/dumpcmp.h)
 * keeps them in the dump so that `cldiff report` reads them back without the model. */
#ifndef CD_VERDICT_H
#define CD_VERDICT_H
#include "compare/analysis.h"
#include "compare/bounds.h"
#include "compare/dumpcmp.h"
#include "compare/policy.h"
#include "engine/backend.h"
#include "engine/executor.h"
#include "model/extract.h"

/* ---------------------------------------------------------------- the local check */

typedef struct cd_local_req {
    const cd_graph *g;   /* the model */
    const cd_plan *plan; /* B's plan at the run's precision: the parameters as B has them */
    /* options of the CPU magnitude runs (threads; the float path is forced) and the flag that
     * stops them (NULL: none) */
    cd_backend_opts cpu_opts;
    volatile int *stop_flag;
    const cd_dump_reader *r;
    const char *run_a;       /* A's free run: where the inputs of each layer come from */
    const char *run_ref;     /* the local reference: run_a (fp32) or "ref_local" (fp16) */
    const char *run_local;   /* B's local run */
    cd_arith ref, b;         /* how each side computes */
    const cd_policy *policy; /* user tolerances: extra local allowance where given */
    bool user_tol;           /* the policy holds user values (command line or file) */
    const char *run_free;    /* B's free run, and the ops settled by it (NULL: none) */
    const bool *settled;
    const cd_settle_info *settled_info;
    /* A's forcing record when --layers left some layer's inputs out of the dump (NULL: none);
     * the inputs of run_a that the dump lacks come from it */
    const cd_forcing *force;
    /* fp16 on B's own inputs: run_a and run_local are B's free run, run_ref the reference on
     * B's activations; settled[] marks the layers checked as the reference ran */
    bool own_inputs;
    /* B is a whole-model engine (run_ref: the CPU on B's inputs): an input the engine's route
     * does not hand over leaves the layer compared only (by design), not missing */
    bool engine_b;
} cd_local_req;

/* Settling (fp32): B's free-run output of a probed op checked, in B's process, against A's
 * recorded value under the op's local bound; an op so settled is not run again by the local
 * pass, its free-run output stands for the local one. Conservative: whatever cannot be
 * decided cheaply (a whole magnitude run needed, shapes changed, NaN/Inf) does not settle. */
typedef struct cd_local_settle_ctx {
    const cd_graph *g;
    const cd_plan *plan; /* B's plan (its parameters) */
    cd_arith ref, b;
    int threads; /* threads of the check (its result does not depend on them); 0 or 1: one */
} cd_local_settle_ctx;
bool cd_local_settle(void *user, const cd_forcing *force, int op_index, int tensor, const cd_value *out,
                     cd_settle_info *info);
/* The fp16 local check on B's own inputs (docs/verdicts.md, "Two errors per layer"): asked, as the reference
 * run (ref_local, forced from B's recorded activations) re-runs each probed op, with the
 * reference's output; true when B's free-run output of it, in force (B's record), lies within
 * the op's local bound of it. The ctx's ref is the reference's arithmetic, b is B's. */
bool cd_local_settle_own(void *user, const cd_forcing *force, int op_index, int tensor, const cd_value *out,
                         cd_settle_info *info);

/* Fills the local fields of every layer of an (matched by op index + tensor). */
cd_status cd_local_check_layers(const cd_local_req *q, cd_analysis *an, cd_error *err);
/* The bound spec of op i (exposed for tests and docs). */
void cd_local_spec(const cd_graph *g, const cd_plan *plan, int op_index, cd_arith ref, cd_arith b, cd_bound_spec *spec,
                   char *desc, size_t n);
/* Reads the inputs of an extracted op from run A of the dump (model inputs from /inputs) as
 * float32; one the dump lacks (--layers left its producer out) comes from force, A's forcing
 * record, when given. note is set (and CD_OK returned) when one was not captured in full. */
cd_status cd_local_load_inputs(const cd_graph *g, const cd_plan *plan, const cd_dump_reader *r, const char *run_a,
                               const cd_forcing *force, const cd_extracted *ex, cd_value *ins, cd_shape *in_shapes,
                               char *note, size_t note_len, cd_error *err);

/* ---------------------------------------------------------------- one differential run */

/* How a side computes (docs/verdicts.md): in fp16, half arithmetic where the run recorded
 * compute=fp16 (the CPU's fp16 path, OpenCL's fp16-compute variant on a device with
 * cl_khr_fp16), else float arithmetic on half storage. compute is the run's recorded
 * CD_RUN_ATTR_COMPUTE ("" or NULL: float). */
cd_arith cd_verdict_side_arith(const char *compute, cd_precision prec);
/* The arithmetic run `run` of the dump recorded (CD_RUN_ATTR_COMPUTE) into buf ("" none). */
void cd_verdict_run_compute(const cd_dump_reader *r, const char *run, char *buf, size_t n);

/* What the local check of a differential run needs: the model and B's plan, the dump and its
 * runs, and which backends made them. Filled by the caller; nothing is owned. */
typedef struct cd_verdict_run {
    const cd_graph *g;
    const cd_plan *plan;      /* B's plan at prec */
    cd_backend_opts cpu_opts; /* the CPU magnitude runs' options */
    volatile int *stop_flag;
    const cd_dump_reader *r;
    cd_precision prec;
    const char *a, *b;                     /* backend names of runs A and B */
    bool engine_b;                         /* B is a whole-model engine: the CPU ran each layer on B's inputs */
    const char *compute_a, *compute_b;     /* the arithmetic the runs recorded ("fp16", "fp32"; "" unknown) */
    const char *run_a, *run_b, *run_local; /* dump runs: A's and B's free runs, B's local run */
    const cd_policy *policy;
    const bool *settled; /* fp32: ops settled by B's free run (NULL: none) */
    const cd_settle_info *settled_info;
    const cd_forcing *force; /* A's forcing record (NULL: none); B's with own_inputs */
    /* fp16 with an OpenCL B: the local reference ran on B's own activations (run ref_local)
     * and checked B's free-run outputs as it ran (settled, settled_info) */
    bool own_inputs;
} cd_verdict_run;

/* The local check's request for run v: which runs are compared and how each side computes
 * (fp16: the float32 reference; an engine as B: its own output against cldiff's CPU on its
 * inputs; 256 ulps for transcendental functions where an engine is a side). */
void cd_verdict_local_req(const cd_verdict_run *v, cd_local_req *q);
/* The local check of every layer of an, then its results copied to the isolation columns
 * that earlier reports read (cd_verdict_local_as_isolation). */
cd_status cd_verdict_local(const cd_verdict_run *v, cd_analysis *an, cd_error *err);
void cd_verdict_local_as_isolation(cd_analysis *an);

/* The fp16 local reference's plan: the float32 plan with every parameter that plan16 keeps
 * in half rounded to half, so it sees exactly the weights B sees. */
cd_status cd_verdict_ref_plan(const cd_graph *g, const cd_shape *in_shapes, const cd_plan *plan16, cd_plan *out,
                              cd_error *err);

/* cd_compare_runs with diag's rules plugged in (automatic tolerance, golden hazards) and the
 * hazards ranked afterwards. */
cd_status cd_verdict_compare_runs(cd_cmp_request *q, bool auto_tol, cd_analysis *an, cd_cmp_unmatched **um, int *nu,
                                  cd_error *err);
/* --repeat: compares every repeat of B (runs <run_b>_rep<r>) with its first run, exactly: any
 * change marks the layer nondeterministic (a race or an uninitialised read). */
cd_status cd_verdict_merge_repeats(const cd_cmp_request *q0, const char *run_b, int repeat, cd_analysis *an,
                                   cd_error *err);
/* The exit code of a decided analysis (docs/design.md §6): 0 pass, 1 kernel fault / drift /
 * nondeterminism, 5 crash, 10 incomplete, the failure's own code for error. A process that a
 * signal stopped exits 130 whatever the verdict (the caller's). (src/verdict/judge.c) */
int cd_verdict_exit_code(const cd_analysis *an);

/* ---------------------------------------------------------------- the run protocol */

/* Which runs a differential run makes and where (docs/design.md §3, docs/verdicts.md "Two
 * errors per layer"): the caller (src/cli/) executes them in this order. */
typedef enum {
    CD_PROTO_A_RECORDS, /* fp32: A records what every probed layer reads; B re-runs each on it */
    CD_PROTO_B_OWN, /* fp16: B records its own activations; the reference (float32) runs each layer on them (run ref_local) */
    CD_PROTO_ENGINE_B /* B is a whole-model engine: B records; the reference runs each layer on B's inputs (run <b>_local) */
} cd_proto_kind;

typedef struct cd_protocol {
    const char *a, *b; /* backends of runs A and B (registry names as given) */
    const char *ref;   /* the reference backend (registry role): the local reference, golden, float_ref */
    char run_a[32], run_b[32], run_local[48];
    cd_proto_kind kind;
    bool local;    /* the local check runs */
    bool settle_b; /* fp32: B's free-run outputs are checked in B's process (settling) */
    bool golden;   /* fp16: the float32 golden run on the reference */
} cd_protocol;

/* The protocol of a run of backends a and b at prec (local: the local check is on). */
void cd_verdict_protocol(const char *a, const char *b, cd_precision prec, bool local, cd_protocol *p);

/* ---------------------------------------------------------------- the one judge */

/* What cd_judge is asked: two runs in their dumps and the rules; for a live differential run
 * also what the dump cannot tell (the local check to run now, an interruption, a failed run).
 * Nothing is owned. */
typedef struct cd_judge_req {
    const cd_dump_reader *ra, *rb; /* run A's dump and run B's: one reader for a differential run and `report` */
    const char *run_a, *run_b;     /* NULL: the pair the dump records (cd_judge_pick_runs) */
    const cd_policy *policy;       /* for the dump's precision (cd_judge_precision) */
    bool auto_tol;                 /* --tolerance auto */
    int threads;
    bool force; /* two dumps: compare runs of different models or inputs anyway */
    /* the model outputs and each op's accumulation length (NULL: as the dump recorded them) */
    const char *const *outputs;
    int n_outputs;
    const int64_t *acc_k;
    int n_acc_k;
    /* a live run: the local check runs now with this (NULL: the one stored in /local is read) */
    const cd_verdict_run *live;
    /* the phase a signal stopped (NULL: the dump's root attribute `interrupted`, if any): the
     * verdict is incomplete */
    const char *interrupted;
    /* a run failed with this message (NULL: the dump's root attributes error, error_code): the
     * verdict is error */
    const char *error;
    int error_code; /* ... and this exit code */
} cd_judge_req;

typedef struct cd_judgement {
    cd_analysis an;
    bool have_an;
    cd_cmp_request q; /* the compared pair, for reporters reading tensors back (cd_compare_read_pair) */
    cd_cmp_unmatched *um;
    int nu;
    cd_precision prec;
    char run_a[128], run_b[128];
    bool interrupted_local;
    char **outs; /* owned copies read from the dump */
    int n_outs;
    int64_t *acck;
    int n_acck;
} cd_judgement;

/* The verdict of q's runs into j (free with cd_judgement_free, also after an error). Two dumps
 * of different models or inputs: CD_E_MODEL naming both digests unless q->force. */
cd_status cd_judge(const cd_judge_req *q, cd_judgement *j, cd_error *err);
void cd_judgement_free(cd_judgement *j);
/* A signal after the verdict (while the reports are written): the verdict an of q's runs
 * (run_a, run_b set; um/nu the judgement's) becomes incomplete, interrupted during phase (a
 * kernel fault or crash stands). */
void cd_judge_interrupted(const cd_judge_req *q, cd_analysis *an, const cd_cmp_unmatched *um, int nu,
                          const char *phase);
/* The precision the dump's runs were made at (root attribute precision). */
cd_precision cd_judge_precision(const cd_dump_reader *r);
/* The compared pair of a dump: the root attributes run_a/run_b of a differential run, else the
 * two runs that are not helper runs, B being the one with a local run or A the reference
 * backend's (cd_backend_def.reference). False when the dump holds fewer than two. */
bool cd_judge_pick_runs(const cd_dump_reader *r, char *run_a, char *run_b, size_t n);
/* Classifies the first divergence (local or inherited) once the local check is in. */
void cd_classify_first(cd_analysis *a);
/* The verdict (docs/verdicts.md), once the local check and the output summaries are in:
 * kernel fault at the first layer whose local check fails; else output drift when a model
 * output is beyond the output tolerance of p and its yardstick (cd_output_yardstick); else
 * pass. Also fills first_fault, n_faults, n_drift, output flags, amplifiers and contributors.
 * Call after cd_analyze. (src/verdict/decide.c) */
void cd_decide_verdict(cd_analysis *a, const cd_policy *p);
#endif
