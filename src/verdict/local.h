/* The local check of every probed layer (docs/verdicts.md): backend B's local run (each layer
 * on A's exact inputs) against the local reference, each layer held to the error bound of its
 * op family (src/compare/bounds.h). Needs the model (family, accumulation length, magnitude
 * runs); stores its per-layer results in the dump (/local/<run>) so that `cldiff report` and
 * `cldiff compare` read them back without the model. */
#ifndef CD_LOCAL_H
#define CD_LOCAL_H
#include "cli/session.h"
#include "compare/analysis.h"
#include "compare/bounds.h"
#include "compare/policy.h"
#include "model/extract.h"

typedef struct cd_local_req {
    cd_session *s;
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
} cd_local_req;

/* Settling (fp32): B's free-run output of a probed op checked, in B's process, against A's
 * recorded value under the op's local bound; an op so settled is not run again by the local
 * pass, its free-run output stands for the local one. Conservative: whatever cannot be
 * decided cheaply (a whole magnitude run needed, shapes changed, NaN/Inf) does not settle. */
typedef struct cd_local_settle_ctx {
    const cd_graph *g;
    const cd_plan *plan;     /* B's plan (its parameters) */
    cd_arith ref, b;
    /* fp16: the local reference's outputs (run ref_local, the float32 kernel on A's half
     * inputs), checked against instead of A's own half values; NULL: A's record */
    const cd_forcing *ref_rec;
    /* only the local pass's re-runs are checked (the free run's outputs are not offered:
     * in fp16 they almost never settle, docs/benchmarks.md "fp16 cost") */
    bool local_only;
} cd_local_settle_ctx;
bool cd_local_settle(void *user, const cd_forcing *force, int op_index, int tensor, const cd_value *out,
                     cd_settle_info *info);

/* Whether the differential run does the local check (--isolate/--local none and --dump
 * stats turn it off). */
bool cd_local_enabled(const cd_cli_opts *o);
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
#endif
