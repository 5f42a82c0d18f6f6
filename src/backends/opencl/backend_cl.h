/* The OpenCL backend's extras beyond the backend.h vtable: the phase hook the isolating
 * parent uses to know what the child was doing when it died, and the program builder
 * shared with `cldiff doctor`. */
#ifndef CD_BACKEND_CL_H
#define CD_BACKEND_CL_H
#include "backends/opencl/cache.h"
#include "backends/opencl/cl_ops.h"
#include "backends/opencl/device.h"
#include "engine/backend.h"

/* Generated from the kernels directory (every .cl file) by scripts/embed_kernels.cmake. */
typedef struct {
    const char *name;
    const char *source;
} cd_embedded_kernel;
extern const cd_embedded_kernel cd_embedded_kernels[];
extern const int cd_embedded_kernel_count;

#define CD_CL_PRELUDE "common.h.cl"

/* Called BEFORE each risky step: phase is "build", "run" or "read-back"; kernel is the
 * family (build) or kernel name (run), variant the cd_cl_variant_name. op_index -1 when
 * the step belongs to no op (reading a model output after the run). */
typedef void (*cd_cl_phase_fn)(void *user, int op_index, const char *kernel, const char *variant, const char *phase);
void cd_opencl_set_phase_hook(cd_backend *b, cd_cl_phase_fn fn, void *user);
/* Variant the backend builds its kernels in (valid after open). */
cd_cl_variant cd_opencl_variant(const cd_backend *b);

/* Source of kernels/<file> (e.g. "conv.cl"): kernel_dir/<file> when it exists, else the
 * embedded copy. origin receives "embedded" or the path. NULL + CD_E_USAGE if neither. */
char *cd_cl_kernel_source(const char *kernel_dir, const char *file, char *origin, size_t on, cd_error *err);
/* Every kernel file (embedded or in kernel_dir), sorted, the prelude excluded; *names and
 * each entry malloc'd; returns the count or -1 (err set). */
int cd_cl_kernel_files(const char *kernel_dir, char ***names, cd_error *err);
void cd_cl_kernel_files_free(char **names, int n);
/* Complete program text of a family in a variant: pragma (fp16-compute), prelude, source. */
char *cd_cl_program_source(const char *kernel_dir, const char *family, cd_cl_variant v, cd_error *err);
/* Build options of a variant ("-cl-std=CL1.2 -DCD_FP16=1"). */
/* Build options of a variant for a device: the variant macro, and IEEE-rounded float
 * division and sqrt where the device offers them (x/scale must round like the CPU's, or
 * fake-quantisation flips at quantisation boundaries: seen on NVIDIA's default 2.5-ulp
 * division). info may be NULL. */
const char *cd_cl_build_options(cd_cl_variant v, const cd_cl_devinfo *info);
/* Builds a program for one device, through the cache when cache is not NULL. On a build
 * failure returns CD_E_UNSUPPORTED, *log (malloc'd, may be NULL) holds the build log and
 * err starts with its first non-empty line. */
cd_status cd_cl_build_program(const cd_clfn *cl, cl_context ctx, cl_device_id dev, const cd_cl_devinfo *info,
                              const char *source, const char *options, cd_cl_cache *cache, cl_program *out, char **log,
                              cd_error *err);
/* Whether the cache holds an entry for the program (its file exists; cd_cl_build_program
 * still checks it); path (may be NULL) receives the entry's path. false when cache is NULL
 * or disabled. */
bool cd_cl_program_cached(const cd_cl_devinfo *info, const char *source, const char *options, const cd_cl_cache *cache,
                          char *path, size_t pn);

/* Building a plan's programs ahead of its run, several at a time (isolate.c: each in a child
 * process of its own, docs/opencl.md "Program builds ahead of the run"). */
/* The kernel families the plan's ops run with on this backend (op_mode kernel), each once, in
 * order of first use; returns their count (at most max). */
int cd_cl_plan_families(const cd_plan *plan, const cd_backend_opts *o, const char **fam, int max);
/* 1 when the family's program (in the backend's variant) is in the program cache, 0 when
 * not, -1 when its source cannot be assembled (the run says why); path (may be NULL)
 * receives the cache entry's path. */
int cd_opencl_family_cached(cd_backend *b, const char *family, char *path, size_t pn);
/* Builds the family's program (through the cache: a build stores its binary); CD_OK or the
 * build's error. */
cd_status cd_opencl_build_family(cd_backend *b, const char *family, cd_error *err);
#endif
