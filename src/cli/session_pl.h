/* The paddle-lite backends inside a session (src/backends/paddlelite/pl_engine.h). */
#ifndef CD_SESSION_PL_H
#define CD_SESSION_PL_H
#include "cli/session.h"

/* Runs the instrumented model in Paddle-Lite and stores every probed tensor into run q->run
 * through sink (and q->record when set). Sets res->device/driver and the run's attributes
 * engine, engine_version, target, precision, bridge_python, renamed_activations. A local
 * pass (q->force) cannot run in a whole-model engine: the local run gets the attribute
 * unavailable with the reason. */
cd_status cd_session_run_pl(cd_session *s, const cd_run_req *q, const cd_plan *plan, cd_probe_sink *sink,
                            cd_run_result *res, cd_error *err);
#endif
