/* Platform/device enumeration and choice. */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>
#include "backends/opencl/device.h"
#include "backends/opencl/loader.h"

static void pinfo(const cd_clfn *cl, cl_platform_id p, cl_platform_info what, char *buf, size_t n) {
    buf[0] = 0;
    if (cl->clGetPlatformInfo(p, what, n - 1, buf, NULL) != CL_SUCCESS) snprintf(buf, n, "?");
    buf[n - 1] = 0;
}

/* String device info, truncated: drivers return CL_INVALID_VALUE when the buffer is too
 * small, so the size is asked first. */
static void dstr(const cd_clfn *cl, cl_device_id d, cl_device_info what, char *buf, size_t n) {
    size_t need = 0;
    buf[0] = 0;
    if (cl->clGetDeviceInfo(d, what, 0, NULL, &need) != CL_SUCCESS || need == 0) {
        snprintf(buf, n, "?");
        return;
    }
    char *tmp = malloc(need + 1);
    if (!tmp) {
        snprintf(buf, n, "?");
        return;
    }
    if (cl->clGetDeviceInfo(d, what, need, tmp, NULL) != CL_SUCCESS) snprintf(tmp, need + 1, "?");
    tmp[need] = 0;
    snprintf(buf, n, "%s", tmp);
    /* trailing spaces are common in vendor strings */
    for (size_t l = strlen(buf); l > 0 && isspace((unsigned char)buf[l - 1]); l--) buf[l - 1] = 0;
    free(tmp);
}

static bool has_ext(const cd_clfn *cl, cl_device_id d, const char *ext) {
    size_t need = 0;
    if (cl->clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, 0, NULL, &need) != CL_SUCCESS || !need) return false;
    char *s = malloc(need + 1);
    if (!s) return false;
    bool found = false;
    if (cl->clGetDeviceInfo(d, CL_DEVICE_EXTENSIONS, need, s, NULL) == CL_SUCCESS) {
        s[need] = 0;
        size_t el = strlen(ext);
        for (char *t = strstr(s, ext); t && !found; t = strstr(t + 1, ext))
            found = (t == s || t[-1] == ' ') && (t[el] == 0 || t[el] == ' ');
    }
    free(s);
    return found;
}

#define DVAL(what, var)                                                                                                \
    do {                                                                                                               \
        if (cl->clGetDeviceInfo(d, what, sizeof(var), &(var), NULL) != CL_SUCCESS) memset(&(var), 0, sizeof(var));     \
    } while (0)

cd_status cd_cl_describe(const cd_clfn *cl, cl_platform_id p, cl_device_id d, cd_cl_devinfo *info, cd_error *err) {
    (void)err;
    memset(info, 0, sizeof *info);
    info->platform_index = info->device_index = -1;
    pinfo(cl, p, CL_PLATFORM_NAME, info->platform, sizeof info->platform);
    pinfo(cl, p, CL_PLATFORM_VENDOR, info->platform_vendor, sizeof info->platform_vendor);
    pinfo(cl, p, CL_PLATFORM_VERSION, info->platform_version, sizeof info->platform_version);
    dstr(cl, d, CL_DEVICE_NAME, info->name, sizeof info->name);
    dstr(cl, d, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor);
    dstr(cl, d, CL_DRIVER_VERSION, info->driver, sizeof info->driver);
    dstr(cl, d, CL_DEVICE_VERSION, info->version, sizeof info->version);
    dstr(cl, d, CL_DEVICE_OPENCL_C_VERSION, info->c_version, sizeof info->c_version);
    cl_device_type t = 0;
    DVAL(CL_DEVICE_TYPE, t);
    snprintf(info->type, sizeof info->type, "%s",
             (t & CL_DEVICE_TYPE_GPU)               ? "GPU"
                 : (t & CL_DEVICE_TYPE_CPU)         ? "CPU"
                 : (t & CL_DEVICE_TYPE_ACCELERATOR) ? "accelerator"
                                                    : "other");
    DVAL(CL_DEVICE_MAX_COMPUTE_UNITS, info->compute_units);
    DVAL(CL_DEVICE_MAX_CLOCK_FREQUENCY, info->max_clock_mhz);
    DVAL(CL_DEVICE_GLOBAL_MEM_SIZE, info->global_mem);
    DVAL(CL_DEVICE_LOCAL_MEM_SIZE, info->local_mem);
    DVAL(CL_DEVICE_MAX_MEM_ALLOC_SIZE, info->max_alloc);
    DVAL(CL_DEVICE_MAX_WORK_GROUP_SIZE, info->max_wg);
    DVAL(CL_DEVICE_IMAGE_SUPPORT, info->image_support);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_CHAR, info->vec_char);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_SHORT, info->vec_short);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_INT, info->vec_int);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_LONG, info->vec_long);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_FLOAT, info->vec_float);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_DOUBLE, info->vec_double);
    DVAL(CL_DEVICE_PREFERRED_VECTOR_WIDTH_HALF, info->vec_half);
    info->fp16 = has_ext(cl, d, "cl_khr_fp16");
    info->fp64 = has_ext(cl, d, "cl_khr_fp64");
    cl_device_fp_config fpc = 0;
    info->correct_div = cl->clGetDeviceInfo(d, CL_DEVICE_SINGLE_FP_CONFIG, sizeof fpc, &fpc, NULL) == CL_SUCCESS &&
        (fpc & CL_FP_CORRECTLY_ROUNDED_DIVIDE_SQRT);
    return CD_OK;
}

void cd_cl_platforms_free(cd_cl_platform *p, int n) {
    if (!p) return;
    for (int i = 0; i < n; i++) free(p[i].devices);
    free(p);
}

cd_status cd_cl_platforms(const cd_clfn *cl, cd_cl_platform **out, int *n, cd_error *err) {
    *out = NULL;
    *n = 0;
    cl_uint np = 0;
    cl_int rc = cl->clGetPlatformIDs(0, NULL, &np);
    if (rc != CL_SUCCESS && rc != -1001 /* CL_PLATFORM_NOT_FOUND_KHR: ICD found no driver */)
        return cd_err(err, CD_E_BACKEND, "clGetPlatformIDs failed in %s: %s", cl->path, cd_cl_err_name(rc));
    if (np == 0)
        return cd_err(err, CD_E_BACKEND,
                      "the OpenCL library %s reports no platform: no OpenCL driver is registered. "
                      "What to do: install a driver (Debian: `apt install pocl-opencl-icd`; GPU: the "
                      "vendor's OpenCL package), check that /etc/OpenCL/vendors/*.icd names a library "
                      "that exists (OCL_ICD_VENDORS overrides that directory), or pass the vendor "
                      "library itself with --cl-lib PATH.",
                      cl->path);
    cl_platform_id *ids = calloc(np, sizeof *ids);
    cd_cl_platform *ps = calloc(np, sizeof *ps);
    if (!ids || !ps) {
        free(ids);
        free(ps);
        return cd_err(err, CD_E_NOMEM, "out of memory listing %u OpenCL platforms", np);
    }
    rc = cl->clGetPlatformIDs(np, ids, NULL);
    if (rc != CL_SUCCESS) {
        free(ids);
        free(ps);
        return cd_err(err, CD_E_BACKEND, "clGetPlatformIDs failed in %s: %s", cl->path, cd_cl_err_name(rc));
    }
    for (cl_uint i = 0; i < np; i++) {
        cd_cl_platform *p = &ps[i];
        p->id = ids[i];
        pinfo(cl, ids[i], CL_PLATFORM_NAME, p->name, sizeof p->name);
        pinfo(cl, ids[i], CL_PLATFORM_VENDOR, p->vendor, sizeof p->vendor);
        pinfo(cl, ids[i], CL_PLATFORM_VERSION, p->version, sizeof p->version);
        cl_uint nd = 0;
        p->device_status = cl->clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, 0, NULL, &nd);
        if (p->device_status != CL_SUCCESS || nd == 0) continue;
        p->devices = calloc(nd, sizeof *p->devices);
        if (!p->devices) {
            cd_cl_platforms_free(ps, (int)np);
            free(ids);
            return cd_err(err, CD_E_NOMEM, "out of memory listing OpenCL devices");
        }
        p->device_status = cl->clGetDeviceIDs(ids[i], CL_DEVICE_TYPE_ALL, nd, p->devices, NULL);
        if (p->device_status == CL_SUCCESS) p->n_devices = (int)nd;
    }
    free(ids);
    *out = ps;
    *n = (int)np;
    return CD_OK;
}

static bool is_index(const char *s, long *v) {
    if (!s || !*s) return false;
    for (const char *t = s; *t; t++)
        if (!isdigit((unsigned char)*t)) return false;
    *v = strtol(s, NULL, 10);
    return true;
}

static bool contains_ci(const char *hay, const char *needle) {
    size_t n = strlen(needle);
    for (; *hay; hay++)
        if (!strncasecmp(hay, needle, n)) return true;
    return n == 0;
}

static void list_devices(const cd_clfn *cl, const cd_cl_platform *ps, int np, char *buf, size_t n) {
    size_t u = 0;
    buf[0] = 0;
    int k = 0;
    for (int i = 0; i < np; i++) {
        int w = snprintf(buf + u, n - u, "\n  platform %d: %s (%s)", i, ps[i].name, ps[i].vendor);
        if (w < 0 || u + (size_t)w >= n) return;
        u += (size_t)w;
        for (int j = 0; j < ps[i].n_devices; j++, k++) {
            char name[128];
            dstr(cl, ps[i].devices[j], CL_DEVICE_NAME, name, sizeof name);
            w = snprintf(buf + u, n - u, "\n    device %d (overall %d): %s", j, k, name);
            if (w < 0 || u + (size_t)w >= n) return;
            u += (size_t)w;
        }
    }
}

cd_status cd_cl_pick(const cd_clfn *cl, const char *platform_sel, const char *device_sel, cl_platform_id *pid,
                     cl_device_id *did, cd_cl_devinfo *info, cd_error *err) {
    cd_cl_platform *ps;
    int np;
    cd_status st = cd_cl_platforms(cl, &ps, &np, err);
    if (st) return st;
    char avail[1024];
    list_devices(cl, ps, np, avail, sizeof avail);
    int pfirst = 0, plast = np - 1;
    long v;
    if (platform_sel && *platform_sel) {
        int hit = -1;
        if (is_index(platform_sel, &v)) {
            if (v < np) hit = (int)v;
        } else {
            for (int i = 0; i < np && hit < 0; i++)
                if (contains_ci(ps[i].name, platform_sel) || contains_ci(ps[i].vendor, platform_sel)) hit = i;
        }
        if (hit < 0) {
            st = cd_err(err, CD_E_USAGE,
                        "--cl-platform %s matches no OpenCL platform (give an index or a part of the "
                        "name). Available:%s",
                        platform_sel, avail);
            cd_cl_platforms_free(ps, np);
            return st;
        }
        pfirst = plast = hit;
    }
    int bp = -1, bd = -1;
    if (device_sel && *device_sel) {
        if (is_index(device_sel, &v)) {
            long k = 0;
            for (int i = pfirst; i <= plast && bp < 0; i++)
                for (int j = 0; j < ps[i].n_devices && bp < 0; j++, k++)
                    if (k == v) {
                        bp = i;
                        bd = j;
                    }
        } else {
            for (int i = pfirst; i <= plast && bp < 0; i++)
                for (int j = 0; j < ps[i].n_devices && bp < 0; j++) {
                    char name[128];
                    dstr(cl, ps[i].devices[j], CL_DEVICE_NAME, name, sizeof name);
                    if (contains_ci(name, device_sel)) {
                        bp = i;
                        bd = j;
                    }
                }
        }
        if (bp < 0) {
            st = cd_err(err, CD_E_USAGE,
                        "--cl-device %s matches no OpenCL device%s (give an index or a part of the "
                        "name). Available:%s",
                        device_sel, platform_sel && *platform_sel ? " of the chosen platform" : "", avail);
            cd_cl_platforms_free(ps, np);
            return st;
        }
    } else {
        for (int i = pfirst; i <= plast && bp < 0; i++)
            for (int j = 0; j < ps[i].n_devices && bp < 0; j++) {
                cl_device_type t = 0;
                if (cl->clGetDeviceInfo(ps[i].devices[j], CL_DEVICE_TYPE, sizeof t, &t, NULL) == CL_SUCCESS &&
                    (t & CL_DEVICE_TYPE_GPU)) {
                    bp = i;
                    bd = j;
                }
            }
        for (int i = pfirst; i <= plast && bp < 0; i++)
            if (ps[i].n_devices > 0) {
                bp = i;
                bd = 0;
            }
        if (bp < 0) {
            st = cd_err(err, CD_E_BACKEND,
                        "OpenCL platform(s) found in %s but no device: %s. What to do: check that the "
                        "driver supports this hardware (and that /dev/dri or /dev/mali* is readable "
                        "by this user). Platforms:%s",
                        cl->path, cd_cl_err_name(ps[pfirst].device_status), avail);
            cd_cl_platforms_free(ps, np);
            return st;
        }
    }
    *pid = ps[bp].id;
    *did = ps[bp].devices[bd];
    if (info) {
        st = cd_cl_describe(cl, *pid, *did, info, err);
        info->platform_index = bp;
        info->device_index = bd;
    }
    cd_cl_platforms_free(ps, np);
    return st;
}

static void fmt_bytes(cl_ulong b, char *buf, size_t n) {
    if (b >= (1ull << 30))
        snprintf(buf, n, "%.1f GiB", (double)b / (1ull << 30));
    else if (b >= (1ull << 20))
        snprintf(buf, n, "%.1f MiB", (double)b / (1ull << 20));
    else
        snprintf(buf, n, "%.1f KiB", (double)b / 1024.0);
}

void cd_cl_devinfo_print(const cd_cl_devinfo *d, FILE *f, const char *indent) {
    char g[32], l[32], a[32];
    fmt_bytes(d->global_mem, g, sizeof g);
    fmt_bytes(d->local_mem, l, sizeof l);
    fmt_bytes(d->max_alloc, a, sizeof a);
    fprintf(f, "%sname:            %s (%s)\n", indent, d->name, d->type);
    fprintf(f, "%svendor:          %s\n", indent, d->vendor);
    fprintf(f, "%sdriver:          %s\n", indent, d->driver);
    fprintf(f, "%sversion:         %s; %s\n", indent, d->version, d->c_version);
    fprintf(f, "%scompute units:   %u @ %u MHz, max work-group %zu\n", indent, d->compute_units, d->max_clock_mhz,
            d->max_wg);
    fprintf(f, "%smemory:          global %s (max buffer %s), local %s\n", indent, g, a, l);
    fprintf(f, "%simages:          %s\n", indent, d->image_support ? "yes" : "no");
    fprintf(f, "%scl_khr_fp16:     %s\n", indent,
            d->fp16 ? "yes (fp16-compute variant available)" : "no (fp16 runs use half storage with float arithmetic)");
    fprintf(f, "%scl_khr_fp64:     %s\n", indent, d->fp64 ? "yes" : "no");
    fprintf(f, "%svector widths:   char %u short %u int %u long %u float %u double %u half %u\n", indent, d->vec_char,
            d->vec_short, d->vec_int, d->vec_long, d->vec_float, d->vec_double, d->vec_half);
}
