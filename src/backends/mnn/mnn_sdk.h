/* MNN SDKs for the mnn-cpu, mnn-opencl and mnn-arm engines (docs/mnn.md, "Engines", "mnn-arm"):
 * which SDK (MNN's release layout, include/MNN/Interpreter.hpp and lib/libMNN.so) an engine uses
 * and how it was found, the probes/mnn/mnn_probe_runner built against it (cached; for mnn-arm's
 * aarch64 SDK on x86-64 cross-compiled and run under qemu-aarch64 -cpu max), and running it as a
 * child. Nothing here loads MNN into cldiff's process: the library runs only inside the runner. */
#ifndef CD_MNN_SDK_H
#define CD_MNN_SDK_H
#include <stdbool.h>
#include <stddef.h>
#include "model/graph.h"
#include "util/error.h"

typedef struct cd_mnn_sdk {
    char dir[1024];
    char lib[1200];
    char arch[16];
    char from[300]; /* "--backend-opt mnn-opencl:sdk=...", "CLDIFF_MNN_SDK=...", "default: <path>" */
    bool opencl;    /* the library holds MNN's OpenCL runtime (it names clCreateProgramWithSource) */
    bool arm82;     /* an aarch64 library with MNN's ARMv8.2 fp16 kernels (MNN_ARM82: it names Arm82Backend) */
    /* the runner's toolchain: the compiler, and for an aarch64 SDK on an x86-64 machine (mnn-arm)
     * qemu-aarch64 and the sysroot of its -L ("" when the runner runs natively) */
    char cxx[512], qemu[512], sysroot[512];
} cd_mnn_sdk;

/* given: the user's path (NULL/"": none); then $CLDIFF_MNN_SDK ($CLDIFF_MNN_ARM_SDK for mnn-arm);
 * then the defaults .mnn/sdk-mnn-<arch>-* beside the executable and in each folder above it, and
 * in the source tree cldiff was built from. <arch> is this machine's, aarch64 for mnn-arm (whose
 * SDK must be aarch64: on x86-64 it needs aarch64-linux-gnu-g++, qemu-aarch64 and the sysroot
 * /usr/aarch64-linux-gnu, $QEMU_LD_PREFIX names another). A path given by the user or the environment that is not an SDK is an
 * error (no other is taken in its place). need_opencl: the library must hold MNN's OpenCL runtime.
 * Missing or unusable -> CD_E_BACKEND saying what to do. engine names the engine in messages. */
cd_status cd_mnn_sdk_find(const char *engine, const char *given, bool need_opencl, cd_mnn_sdk *out, cd_error *err);

/* The runner for this SDK: compiled on first use from probes/mnn/mnn_probe_runner.cc with c++
 * ($CLDIFF_MNN_CXX overrides; aarch64-linux-gnu-g++ for an aarch64 SDK on x86-64) into <cache>/mnn-runner/<hash>/mnn_probe_runner (cache:
 * $CLDIFF_CACHE_DIR, $XDG_CACHE_HOME/cldiff or ~/.cache/cldiff) and run once with no arguments
 * (usage, exit 2) before it is kept. exe: its path; *built: compiled by this call. */
cd_status cd_mnn_runner_get(const cd_mnn_sdk *sdk, char *exe, size_t n, bool *built, cd_error *err);

/* The launcher in front of the runner's own argv: "qemu-aarch64 -cpu max -L SYSROOT" for an
 * emulated SDK (-cpu max: ARMv8.2 half arithmetic, FPHP and ASIMDHP), nothing when native. Fills
 * argv[0..n-1] (at most 5), returns n. */
int cd_mnn_runner_prefix(const cd_mnn_sdk *sdk, char *argv[5]);

/* Runs argv (argv[0] a path) with stdout+stderr into log_path, stdin /dev/null, killed after
 * timeout_s (<= 0: none) or when *stop is set (CD_E_INTERRUPTED). *wstatus: the wait status. */
cd_status cd_mnn_spawn_wait(char *const argv[], const char *log_path, double timeout_s, int *wstatus, bool *timed_out,
                            volatile int *stop, cd_error *err);

/* The last non-empty lines of a log (at most k), joined with " | ". */
void cd_mnn_log_tail(const char *path, int k, char *buf, size_t n);

/* How many ops of a .mnn graph stay named (mnn_<Type>: no counterpart in cldiff's op table). */
int cd_mnn_unmapped_ops(const cd_graph *g);
/* The shape pass (mnn_shapes.c, docs/mnn.md "Ops cldiff does not map"): MNN's own types and shapes of
 * the outputs of g's named ops for inputs of in_shapes (a session on MNN's CPU from the SDK
 * sdk_given or the default one; nothing runs), set on each such op as CD_ENGINE_SHAPES_ATTR so that
 * the plan takes them. CD_OK at once when every op maps. A note on stderr unless quiet. */
cd_status cd_mnn_shape_pass(cd_graph *g, const char *model_path, const cd_shape *in_shapes, const char *sdk_given,
                            double timeout_s, bool quiet, cd_error *err);

/* For `cldiff doctor`: lines "  ok ..." / "  MISSING ..." appended to report; true when usable. */
bool cd_mnn_engine_check(const char *engine, bool need_opencl, char *report, size_t n);
#endif
