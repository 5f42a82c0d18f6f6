/* --suggest-pins (docs/diagnosis.md): re-runs the model on backend B at the session's
 * precision with chosen ops pinned to the CPU in float32 (cd_pinned_backend_open), one
 * failing layer at a time and then all of them, and records which pin sets bring every model
 * output back within tolerance of the float32 golden run (of run A when there is none). */
#ifndef CD_PINS_H
#define CD_PINS_H
#include "compare/analysis.h"
#include "engine/backend.h"
#include "engine/plan.h"

/* At most this many failing layers are tried as pins (the first ones in execution order). */
#define CD_PIN_MAX_CANDIDATES 8

/* Fills an->pins / n_pins (passing sets first, smallest first) and pins_note. Runs the
 * OpenCL backend in this process (after every isolated child has finished). */
/* What the trials run: the model, its plans and inputs, B's options, and the dump whose golden
 * run (else ref_run) the outputs are held to. Filled by the caller; nothing is owned. */
typedef struct cd_pins_run {
    const cd_graph *g;
    const cd_plan *plan;    /* B's plan at prec */
    const cd_plan *plan32;  /* the float32 plan the pinned ops run (NULL: plan) */
    const cd_value *inputs; /* the model inputs, as the runs were fed */
    cd_backend_opts opts;   /* B's options at prec */
    cd_precision prec;
    const char *dump_path;
    const char *ref_run;     /* the reference when the dump holds no golden run (run A) */
    volatile int *stop_flag; /* NULL: none */
} cd_pins_run;
struct cd_policy;
cd_status cd_diag_suggest_pins(const cd_pins_run *s, cd_analysis *an, const struct cd_policy *pol,
                               const char *backend_b, cd_error *err);
#endif
