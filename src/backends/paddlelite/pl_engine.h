/* The real Paddle-Lite runtime as a whole-model engine (docs/paddle-lite.md).
 *
 * cldiff cannot call the runtime op by op, so it instruments the model (probes/instrument.h:
 * every probed tensor also fetched, memory-reused names undone), runs it once in Paddle-Lite
 * through scripts/pl_bridge.py (a Python subprocess over the `paddlelite` wheel, in the venv
 * scripts/setup.sh makes: .venv-pl), exchanging .npy files in a temporary folder, and hands
 * every fetched tensor to the probe sink as if its op had just run. The dump run is an
 * ordinary run: compare and every report work on it.
 *
 * Generic over the model file and the place: the bridge loads any .nb (the kernels are in
 * the file); target and precision are recorded (and passed on) for runtimes that choose. */
#ifndef CD_PL_ENGINE_H
#define CD_PL_ENGINE_H
#include "engine/executor.h"
#include "engine/forcing.h"

/* "paddle-lite", "paddle-lite-x86", "paddle-lite-opencl", "paddle-lite-arm". */
bool cd_pl_is_backend(const char *name);
/* The target a backend name asks for ("x86", "opencl", "arm"), or "" for "paddle-lite"
 * (the model's own kernels). */
const char *cd_pl_backend_target(const char *name);

typedef struct cd_pl_env {
    char python[1024]; /* interpreter of the venv */
    char bridge[1024]; /* scripts/pl_bridge.py */
    char version[64];  /* Paddle-Lite version the wheel reports, e.g. "v2.13-rc" */
    char python_version[32];
} cd_pl_env;

/* Finds the venv's Python and the bridge and asks the wheel for its version. Looked up in
 * order: $CLDIFF_PL_PYTHON / $CLDIFF_PL_BRIDGE, then .venv-pl and scripts/ beside the
 * executable's folder and its parent, then the source tree cldiff was built from. Missing:
 * CD_E_BACKEND with what to install. */
cd_status cd_pl_find(cd_pl_env *env, cd_error *err);

/* One run of scripts/pl_bridge.py on any .nb (the building block; the `cldiff export` + Opt models of
 * docs/paddle-lite-opencl.md use it as they are): dir holds input_<k>.npy and receives out_<i>.npy, run.json and
 * bridge.log. A signal or timeout -> CD_E_CRASH (*crashed set), bridge exit 3 -> CD_E_MODEL,
 * 2 -> CD_E_USAGE, else CD_E_BACKEND; messages carry the bridge's last lines. */
typedef struct cd_pl_bridge_req {
    const char *model;     /* .nb to run */
    const char *dir;       /* exchange folder */
    const char *target;    /* "x86", "opencl", "arm" (recorded; opencl: --opencl-precision auto) */
    const char *precision; /* "fp32" / "fp16" */
    int threads;
    double timeout_s;    /* <= 0: none */
    const char *what;    /* model named in messages (default: model) */
    const char *backend; /* backend named in messages (default "paddle-lite") */
    bool arm_hint;       /* a crash says that the wheel has no ARM kernels */
    volatile int *stop;  /* may be NULL: nonzero (SIGINT) kills the bridge -> CD_E_INTERRUPTED */
} cd_pl_bridge_req;
cd_status cd_pl_bridge_run(const cd_pl_env *env, const cd_pl_bridge_req *b, double *wall_ms, bool *crashed,
                           cd_error *err);

typedef struct cd_pl_req {
    const cd_plan *plan;    /* fp32 plan of the original graph */
    const bool *mask;       /* probed ops */
    const cd_value *inputs; /* host inputs (float32, plan shapes), feed col order */
    const char *model_path, *model_sha256;
    const char *backend;   /* backend name (target from it) */
    const char *precision; /* "fp32" / "fp16" */
    const char *work_dir;  /* the temporary folder goes here (the --out folder) */
    int threads;
    double timeout_s;
    cd_probe_sink *sink; /* every probed tensor */
    cd_forcing *record;  /* may be NULL: every fetched activation (+ the inputs) */
    volatile int *stop;  /* may be NULL: set by a signal handler */
} cd_pl_req;

typedef struct cd_pl_result {
    cd_pl_env env;
    char target[16];  /* target of the model's kernels / asked */
    char device[256]; /* "Paddle-Lite v2.13-rc, x86 kernels (paddlelite wheel, Python 3.10.13)" */
    double load_ms, run_ms;
    int n_fetch, n_hits, n_shape_mismatch;
    int n_dequantized; /* int8 tensors turned into q * scale floats, as cldiff keeps them */
    int renamed;       /* activations given names of their own */
    bool crashed;
    char note[512];
} cd_pl_result;

/* Instruments, runs the bridge (killed after timeout_s), stores. Bridge exit 4 or no
 * wheel -> CD_E_BACKEND; exit 3 -> CD_E_MODEL; a signal or timeout -> CD_E_CRASH. */
cd_status cd_pl_run(const cd_pl_req *q, cd_pl_result *res, cd_error *err);
#endif
