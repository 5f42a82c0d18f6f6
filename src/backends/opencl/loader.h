/* Finding and loading the OpenCL library at run time (dlopen), so cldiff runs on machines
 * without an ICD loader (boards that ship only libmali.so) and reports why a library could
 * not be used instead of failing at link time. */
#ifndef CD_CL_LOADER_H
#define CD_CL_LOADER_H
#include <stdbool.h>
#include <stdio.h>
#include "backends/opencl/cl_api.h"

#define CD_CL_MAX_ATTEMPTS 40

typedef struct cd_cl_attempt {
    char path[256];  /* name or path handed to dlopen */
    char origin[24]; /* "--cl-lib", "CLDIFF_OPENCL_LIB", "ICD loader", "vendor" */
    bool ok;         /* loaded and every CD_CL_FUNCS entry resolved */
    bool exists;     /* absolute path that exists on disk (for the advice) */
    char why[1024];  /* dlerror text, or "missing entry points: clX, clY" */
} cd_cl_attempt;

typedef struct cd_cl_search {
    int n;
    cd_cl_attempt at[CD_CL_MAX_ATTEMPTS];
    int found; /* index of the attempt that was used, -1 when none */
} cd_cl_search;

/* Search order: cl_lib (--cl-lib), $CLDIFF_OPENCL_LIB, the ICD loader (libOpenCL.so.1,
 * libOpenCL.so), then vendor libraries shipped without an ICD (Mali, Adreno, PowerVR, in
 * the usual system and Android vendor directories). A library named explicitly (--cl-lib
 * or the environment variable) that fails ends the search with an error: silently using
 * another driver than the one asked for would make the comparison meaningless.
 * search (may be NULL) receives every attempt. On failure: CD_E_BACKEND with the attempts
 * and what to do. */
cd_status cd_cl_load(const char *cl_lib, cd_clfn *fn, cd_cl_search *search, cd_error *err);
void cd_cl_unload(cd_clfn *fn);
/* Prints one line per attempt: "  [found] path (origin)" / "  [no]    path: why". */
void cd_cl_search_print(const cd_cl_search *s, FILE *f);
/* "CL_OUT_OF_RESOURCES (-5)"-style name of an OpenCL error code (static storage for the
 * known codes; unknown codes are formatted into a thread-local buffer). */
const char *cd_cl_err_name(cl_int code);
#endif
