/* The phone route of the paddle-lite-phone engine (docs/paddle-lite-phone.md): the armv8
 * Paddle-Lite SDK built with OpenCL, as a phone has it, run under qemu-aarch64 with Debian's
 * arm64 PoCL as its OpenCL driver, from a private sysroot that scripts/setup_phone.sh builds by
 * download and extract (never installed). This file finds and checks the pieces (qemu, the
 * sysroot, the PoCL ICD, the linker wrapper PoCL links its kernels with), makes the engine's
 * environment (OCL_ICD_VENDORS, POCL_CACHE_DIR in cldiff's cache, PATH to the wrapper) and
 * shows progress while PoCL compiles kernels under emulation. */
#ifndef CD_PL_PHONE_H
#define CD_PL_PHONE_H
#include <limits.h>
#include <stdbool.h>
#include <stddef.h>
#include "util/error.h"

typedef struct cd_pl_phone {
    char qemu[PATH_MAX];    /* qemu-aarch64 */
    char sysroot[PATH_MAX]; /* qemu -L: the arm64 sysroot with PoCL */
    char from[PATH_MAX];    /* how the sysroot was found */
    char tools[PATH_MAX];   /* the linker wrapper's folder (first on the engine's PATH) */
    char vendors[PATH_MAX]; /* OCL_ICD_VENDORS: sysroot/etc/OpenCL/vendors */
    char pocl[PATH_MAX];    /* the host path of the arm64 libpocl the .icd file names */
    char kcache[PATH_MAX];  /* POCL_CACHE_DIR: <cldiff cache>/phone/pocl-kcache */
} cd_pl_phone;

/* given: --backend-opt paddle-lite-phone:sysroot=DIR (NULL: none). Order: given, then
 * $CLDIFF_PHONE_SYSROOT, then .phone/sysroot in the executable's folder and each folder above it,
 * then <cldiff cache>/phone/sysroot. Checks every piece; the first missing one ->
 * CD_E_BACKEND naming it and `scripts/setup_phone.sh`. */
cd_status cd_pl_phone_find(const char *given, cd_pl_phone *out, cd_error *err);

/* Doctor lines ("  ok      ..." / "  MISSING ...") for every piece; true when all are there. */
bool cd_pl_phone_check(const char *given, char *report, size_t n);

/* The engine's environment: this process's, with PATH (wrapper first), OCL_ICD_VENDORS and
 * POCL_CACHE_DIR replaced. bufs: 3 strings of PATH_MAX*2 owned by the caller. Free the array
 * (not its strings). NULL: out of memory. */
char **cd_pl_phone_env(const cd_pl_phone *ph, char bufs[3][PATH_MAX * 2]);

/* Kernels PoCL compiled into its cache (kernel .so files). */
int cd_pl_phone_kcache_count(const char *kcache);

/* A progress line on stderr while the engine runs (a thread: every 2 s on a terminal, every
 * 20 s otherwise), from the first 3 s on, with the count of kernels PoCL compiled so far. */
typedef struct cd_pl_progress cd_pl_progress;
/* where: how the engine runs, for the line ("under qemu-aarch64", "on PoCL"); quiet: no line,
 * the counts only. */
cd_pl_progress *cd_pl_progress_start(const char *name, const char *kcache, const char *where, bool quiet);
/* Stops the thread; the last line is ended. Returns the kernels PoCL compiled during the run;
 * *programs (may be NULL) receives the programs it built. */
int cd_pl_progress_stop(cd_pl_progress *p, int *programs);
/* The host PoCL's kernel cache: $POCL_CACHE_DIR, else $XDG_CACHE_HOME/pocl/kcache, else
 * ~/.cache/pocl/kcache; "" when none can be named. */
void cd_pl_host_kcache(char *out, size_t n);
#endif
