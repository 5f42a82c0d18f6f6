/* Paddle-Lite SDKs found, not assumed (docs/paddle-lite.md), for the paddle-lite-arm and
 * paddle-lite-opencl engines: which SDK (Paddle-Lite's release layout, include/paddle_api.h and
 * lib/libpaddle_light_api_shared.so) each engine uses and how it was found, the
 * probes/paddle-lite/pl_probe_runner built against it (cached), how to launch it (natively or
 * under qemu-aarch64), and the checks `cldiff doctor` prints.
 *
 * Nothing here loads Paddle-Lite into cldiff's process: the SDK's library is read as a file
 * (ELF header, a few marker strings) and run only inside the runner, a child process. */
#ifndef CD_PL_SDK_H
#define CD_PL_SDK_H
#include <stdbool.h>
#include <stddef.h>
#include "util/error.h"

/* PHONE: the armv8 SDK built with OpenCL, the model as given (opencl,arm), under qemu-aarch64
 * on an arm64 PoCL sysroot (pl_phone.h). */
typedef enum cd_pl_engine_kind { CD_PL_ENGINE_ARM, CD_PL_ENGINE_OPENCL, CD_PL_ENGINE_PHONE } cd_pl_engine_kind;

/* "paddle-lite-arm" / "paddle-lite-opencl" / "paddle-lite-phone". */
const char *cd_pl_engine_name(cd_pl_engine_kind k);
/* "CLDIFF_PL_ARM_SDK" / "CLDIFF_PL_OPENCL_SDK" / "CLDIFF_PL_PHONE_SDK". */
const char *cd_pl_sdk_env_name(cd_pl_engine_kind k);

typedef struct cd_pl_sdk {
    char dir[1024];  /* SDK root in release layout: include/paddle_api.h, lib/libpaddle_light_api_shared.so */
    char lib[1200];  /* the light-API library */
    char arch[16];   /* "aarch64" / "x86_64", read from the library's ELF header */
    char from[256];  /* how it was found: "--backend-opt paddle-lite-arm:sdk=...", "CLDIFF_PL_ARM_SDK",
                            "default: <path>" */
    bool opencl;     /* the library was built with LITE_WITH_OPENCL (it calls clCreateProgramWithSource) */
    int glibc_minor; /* highest GLIBC_2.N symbol version the library asks for (0: none seen) */
} cd_pl_sdk;

/* given: the user's path (NULL or "": none). Order: given, then the environment variable
 * (CLDIFF_PL_ARM_SDK / CLDIFF_PL_OPENCL_SDK), then the defaults. A path named by the user or the
 * environment that is not a usable SDK is an error (another SDK is never taken in its place).
 * A path may also be the folder above the SDK's cxx/ (Paddle-Lite's inference_lite_lib.* archive).
 * Defaults, first found: <d>/.paddle-lite/<sdk> for <d> = the running executable's folder and
 * each of its parents, then <exe>/../share/cldiff/paddle-lite/<sdk> (an installed cldiff), then
 * CLDIFF_SOURCE_DIR/.paddle-lite/<sdk> (the source tree cldiff was built from). <sdk>: ARM
 * sdk-armv8-armlinux; OpenCL on x86-64 sdk-x86_64-ubuntu24 where glibc >= 2.38, then
 * sdk-x86_64-debian12; OpenCL on aarch64 sdk-armv8-armlinux.
 * Checks: the layout, the library's ELF machine (ARM: aarch64; OpenCL: this machine's, since an
 * OpenCL platform is only reachable natively), for OpenCL that the library was built with OpenCL,
 * for a native library the glibc it needs. Missing or unusable -> CD_E_BACKEND saying what to do. */
cd_status cd_pl_sdk_find(cd_pl_engine_kind k, const char *given, cd_pl_sdk *out, cd_error *err);
/* The same with the default folders given: roots[i]/<sdk> (e.g. ".../.paddle-lite"), in order. */
cd_status cd_pl_sdk_find_in(cd_pl_engine_kind k, const char *given, const char *const *roots, int n_roots,
                            cd_pl_sdk *out, cd_error *err);

typedef struct cd_pl_runner {
    char exe[1200];      /* the runner built for this SDK */
    char launcher[1024]; /* "" or the qemu-aarch64 path (foreign arch) */
    char sysroot[512];   /* qemu -L argument ("/usr/aarch64-linux-gnu"), "" when native */
    char compiler[1024]; /* the compiler that built it */
    bool built;          /* compiled by this call (false: taken from the cache) */
} cd_pl_runner;

/* The pl_probe_runner for this SDK: compiled on first use from probes/paddle-lite/pl_probe_runner.cc
 * (found by cd_pl_find_helper; $CLDIFF_PL_RUNNER_SRC overrides) with c++ (native) or
 * aarch64-linux-gnu-g++ (an aarch64 SDK on another machine), $CLDIFF_PL_CXX overriding either,
 * with -Wl,-rpath to the SDK's lib, into <cache>/pl-runner/<hash of the SDK path, the library's
 * size and mtime, the runner source and the compiler>/pl_probe_runner, where <cache> is
 * $CLDIFF_CACHE_DIR, else $XDG_CACHE_HOME/cldiff, else ~/.cache/cldiff. A fresh build is run once
 * with no arguments (usage, exit 2) before it is kept, so a runner in the cache is known to load.
 * Foreign arch: the launcher is qemu-aarch64 with -L $QEMU_LD_PREFIX or /usr/aarch64-linux-gnu.
 * A compile failure, a runner that does not load, a missing compiler, qemu or sysroot ->
 * CD_E_BACKEND naming what is missing and the Debian package to install. */
cd_status cd_pl_runner_get(const cd_pl_sdk *sdk, cd_pl_runner *out, cd_error *err);

/* The command prefix that starts the runner: {launcher, "-L", sysroot, exe} or {exe}; argv gets
 * up to 4 pointers into r; returns how many. */
int cd_pl_runner_argv(const cd_pl_runner *r, const char *argv[4]);

/* Runs the runner with no arguments (through its launcher) and checks it answers with its usage
 * and exit 2, i.e. the executable and the SDK's library load. msg: what was seen (the loader's
 * error and the package that provides a missing library when it fails). */
bool cd_pl_runner_loads(const cd_pl_runner *r, double *ms, char *msg, size_t n);

/* A file cldiff needs at run time (rel: "scripts/pl_bridge.py", "scripts/pl_ocl.py",
 * "probes/paddle-lite/pl_probe_runner.cc"), looked up in: the executable's folder, its parent,
 * <exe>/../share/cldiff (after `cmake --install`), CLDIFF_SOURCE_DIR (the source tree of this
 * build). out gets the first path that exists; false when none. */
bool cd_pl_find_helper(const char *rel, char *out, size_t n);

/* For `cldiff doctor`: one line per check ("  ok      what ..." / "  MISSING what: what to do"),
 * appended to report; true when the engine is usable. given_sdk as in cd_pl_sdk_find. Runs the
 * driver's OpenCL code (platform list) and the runner in child processes only. */
bool cd_pl_engine_check(cd_pl_engine_kind k, const char *given_sdk, char *report, size_t n);
#endif
