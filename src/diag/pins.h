/* --suggest-pins (docs/diagnosis.md): re-runs the model on backend B at the session's
 * precision with chosen ops pinned to the CPU in float32 (cd_pinned_backend_open), one
 * failing layer at a time and then all of them, and records which pin sets bring every model
 * output back within tolerance of the float32 golden run (of run A when there is none). */
#ifndef CD_PINS_H
#define CD_PINS_H
#include "cli/session.h"
#include "compare/analysis.h"

/* At most this many failing layers are tried as pins (the first ones in execution order). */
#define CD_PIN_MAX_CANDIDATES 8

/* Fills an->pins / n_pins (passing sets first, smallest first) and pins_note. Runs the
 * OpenCL backend in this process (after every isolated child has finished). */
struct cd_policy;
cd_status cd_diag_suggest_pins(cd_session *s, cd_analysis *an, const struct cd_policy *pol, const char *backend_b,
                               cd_error *err);
#endif
