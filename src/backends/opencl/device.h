/* OpenCL platforms and devices: enumeration, choice (--cl-platform / --cl-device) and the
 * description printed by `cldiff doctor` and stored in the dump. */
#ifndef CD_CL_DEVICE_H
#define CD_CL_DEVICE_H
#include <stdbool.h>
#include <stdio.h>
#include "backends/opencl/cl_api.h"

typedef struct cd_cl_devinfo {
    int platform_index, device_index; /* positions in enumeration order */
    char platform[128], platform_vendor[128], platform_version[128];
    char name[128], vendor[128], driver[128], version[128], c_version[128];
    char type[16]; /* "GPU", "CPU", "accelerator", ... */
    cl_uint compute_units, max_clock_mhz;
    cl_ulong global_mem, local_mem, max_alloc;
    size_t max_wg;
    cl_bool image_support;
    bool fp16, fp64;  /* cl_khr_fp16 / cl_khr_fp64 */
    bool correct_div; /* CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT for float */
    cl_uint vec_char, vec_short, vec_int, vec_long, vec_float, vec_double, vec_half;
} cd_cl_devinfo;

/* Fills info for a device (strings truncated to fit). */
cd_status cd_cl_describe(const cd_clfn *cl, cl_platform_id p, cl_device_id d, cd_cl_devinfo *info, cd_error *err);

typedef struct cd_cl_platform {
    cl_platform_id id;
    char name[128], vendor[128], version[128];
    int n_devices;
    cl_device_id *devices; /* owned */
    cl_int device_status;  /* result of clGetDeviceIDs (CL_DEVICE_NOT_FOUND: none) */
} cd_cl_platform;

/* Every platform and its devices; *out is freed with cd_cl_platforms_free. No platform at
 * all is an error (CD_E_BACKEND) that says what to install or check. */
cd_status cd_cl_platforms(const cd_clfn *cl, cd_cl_platform **out, int *n, cd_error *err);
void cd_cl_platforms_free(cd_cl_platform *p, int n);

/* Chooses a device. platform_sel / device_sel: NULL or "" (any), a decimal index, or a
 * case-insensitive substring of the name (platform: name or vendor). Without a device
 * choice the first GPU wins, else the first device. device_sel as an index counts within
 * the chosen platform, or over all platforms in order when no platform is chosen. */
cd_status cd_cl_pick(const cd_clfn *cl, const char *platform_sel, const char *device_sel, cl_platform_id *pid,
                     cl_device_id *did, cd_cl_devinfo *info, cd_error *err);

/* Multi-line description, each line prefixed by indent. */
void cd_cl_devinfo_print(const cd_cl_devinfo *d, FILE *f, const char *indent);
#endif
