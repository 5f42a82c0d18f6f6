/* OpenCL library search and symbol resolution. */
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "backends/opencl/loader.h"

/* Libraries boards ship without an ICD loader. Bare names go through the dynamic linker's
 * path (LD_LIBRARY_PATH, ld.so.cache); absolute paths cover Android vendor partitions and
 * Debian/Ubuntu multiarch directories that are not always in the cache. */
static const char *const k_icd[] = {"libOpenCL.so.1", "libOpenCL.so"};
static const char *const k_vendor[] = {
    "libmali.so",
    "libmali.so.1",
    "libGLES_mali.so",
    "libGLES_mali.so.1",
    "/usr/lib/aarch64-linux-gnu/libmali.so",
    "/usr/lib/aarch64-linux-gnu/libmali.so.1",
    "/usr/lib/aarch64-linux-gnu/libOpenCL.so",
    "/usr/lib/aarch64-linux-gnu/libOpenCL.so.1",
    "/usr/lib/arm-linux-gnueabihf/libmali.so",
    "/usr/lib/libmali.so",
    "/vendor/lib64/libOpenCL.so",
    "/system/vendor/lib64/libOpenCL.so",
    "/system/lib64/libOpenCL.so",
    "/vendor/lib64/egl/libGLES_mali.so",
    "/system/vendor/lib64/egl/libGLES_mali.so",
    "/vendor/lib64/libGLES_mali.so",
    "libPVROCL.so",
    "/vendor/lib64/libPVROCL.so",
    "/system/vendor/lib64/libPVROCL.so",
};

static const char *const k_names[] = {
#define CD_CL_NAME(n) #n,
    CD_CL_FUNCS(CD_CL_NAME)
#undef CD_CL_NAME
};

/* Tries one library; on success fills fn and keeps the handle. */
static bool try_lib(const char *path, const char *origin, cd_clfn *fn, cd_cl_attempt *a) {
    memset(a, 0, sizeof *a);
    snprintf(a->path, sizeof a->path, "%s", path);
    snprintf(a->origin, sizeof a->origin, "%s", origin);
    struct stat st;
    a->exists = path[0] == '/' && stat(path, &st) == 0;
    dlerror();
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        const char *e = dlerror();
        snprintf(a->why, sizeof a->why, "%s", e ? e : "dlopen failed without a message");
        return false;
    }
    cd_clfn tmp;
    memset(&tmp, 0, sizeof tmp);
    size_t nmiss = 0, used = 0;
    char miss[sizeof a->why];
    miss[0] = 0;
#define CD_CL_RESOLVE(name)                                                                                            \
    tmp.name = (__typeof__(tmp.name))dlsym(h, #name);                                                                  \
    if (!tmp.name) {                                                                                                   \
        nmiss++;                                                                                                       \
        int w = snprintf(miss + used, sizeof miss - used, "%s%s", nmiss > 1 ? ", " : "", #name);                       \
        if (w > 0 && used + (size_t)w < sizeof miss) used += (size_t)w;                                                \
    }
    CD_CL_FUNCS(CD_CL_RESOLVE)
#undef CD_CL_RESOLVE
    if (nmiss) {
        snprintf(a->why, sizeof a->why, "loaded, but %zu of %zu OpenCL entry points are missing: %.900s", nmiss,
                 sizeof k_names / sizeof k_names[0], miss);
        dlclose(h);
        return false;
    }
    tmp.handle = h;
    snprintf(tmp.path, sizeof tmp.path, "%s", path);
    *fn = tmp;
    a->ok = true;
    snprintf(a->why, sizeof a->why, "loaded, all %zu entry points resolved", sizeof k_names / sizeof k_names[0]);
    return true;
}

static size_t append(char *buf, size_t cap, size_t used, const char *fmt, const char *a, const char *b) {
    if (used >= cap) return used;
    int w = snprintf(buf + used, cap - used, fmt, a, b);
    if (w < 0) return used;
    return used + (size_t)w < cap ? used + (size_t)w : cap;
}

static cd_status fail(const cd_cl_search *s, bool explicit_lib, cd_error *err) {
    char list[1800];
    size_t u = 0;
    list[0] = 0;
    for (int i = 0; i < s->n; i++) u = append(list, sizeof list, u, "\n  %s: %s", s->at[i].path, s->at[i].why);
    const char *existing = NULL; /* a vendor file that is there but could not be used */
    for (int i = 0; i < s->n; i++)
        if (s->at[i].exists) {
            existing = s->at[i].path;
            break;
        }
    if (explicit_lib) {
        const cd_cl_attempt *a = &s->at[s->n - 1];
        return cd_err(err, CD_E_BACKEND,
                      "cannot use the OpenCL library %s given by %s: %s\n"
                      "What to do: pass the path of a library that exports the OpenCL 1.2 API "
                      "(e.g. --cl-lib /usr/lib/aarch64-linux-gnu/libmali.so, or the ICD loader "
                      "libOpenCL.so.1), or unset CLDIFF_OPENCL_LIB to search the usual places; "
                      "`cldiff doctor` shows the whole search.",
                      a->path, a->origin, a->why);
    }
    char advice[700];
    if (existing)
        snprintf(advice, sizeof advice,
                 "%s exists but could not be loaded (see above: usually a missing dependency, "
                 "check `ldd %s`); ",
                 existing, existing);
    else
        advice[0] = 0;
    return cd_err(err, CD_E_BACKEND,
                  "no usable OpenCL library found (%d places tried, listed below; `cldiff doctor` shows "
                  "the search).\n"
                  "What to do: %sinstall an OpenCL driver and the ICD loader (Debian/Ubuntu: "
                  "`apt install ocl-icd-libopencl1 pocl-opencl-icd`, or your GPU vendor's driver); "
                  "or, if the board ships only a vendor library, pass it with --cl-lib PATH "
                  "(e.g. --cl-lib /usr/lib/aarch64-linux-gnu/libmali.so) or set "
                  "CLDIFF_OPENCL_LIB=PATH, or make it visible as the loader name: "
                  "`sudo ln -s PATH /usr/lib/libOpenCL.so.1 && sudo ldconfig`.\nTried, in order:%s",
                  s->n, advice, list);
}

cd_status cd_cl_load(const char *cl_lib, cd_clfn *fn, cd_cl_search *search, cd_error *err) {
    cd_cl_search local;
    cd_cl_search *s = search ? search : &local;
    memset(s, 0, sizeof *s);
    s->found = -1;
    memset(fn, 0, sizeof *fn);
    const char *env = getenv("CLDIFF_OPENCL_LIB");
    if (cl_lib && cl_lib[0]) {
        if (try_lib(cl_lib, "--cl-lib", fn, &s->at[s->n++])) {
            s->found = 0;
            return CD_OK;
        }
        return fail(s, true, err);
    }
    if (env && env[0]) {
        if (try_lib(env, "CLDIFF_OPENCL_LIB", fn, &s->at[s->n++])) {
            s->found = 0;
            return CD_OK;
        }
        return fail(s, true, err);
    }
    for (size_t i = 0; i < sizeof k_icd / sizeof k_icd[0] && s->n < CD_CL_MAX_ATTEMPTS; i++) {
        if (try_lib(k_icd[i], "ICD loader", fn, &s->at[s->n++])) {
            s->found = s->n - 1;
            return CD_OK;
        }
    }
    for (size_t i = 0; i < sizeof k_vendor / sizeof k_vendor[0] && s->n < CD_CL_MAX_ATTEMPTS; i++) {
        if (try_lib(k_vendor[i], "vendor", fn, &s->at[s->n++])) {
            s->found = s->n - 1;
            return CD_OK;
        }
    }
    return fail(s, false, err);
}

void cd_cl_unload(cd_clfn *fn) {
    if (fn && fn->handle) dlclose(fn->handle);
    if (fn) memset(fn, 0, sizeof *fn);
}

void cd_cl_search_print(const cd_cl_search *s, FILE *f) {
    for (int i = 0; i < s->n; i++) {
        const cd_cl_attempt *a = &s->at[i];
        fprintf(f, "  %-8s %s (%s): %s\n", a->ok ? "[found]" : "[no]", a->path, a->origin, a->why);
    }
}
