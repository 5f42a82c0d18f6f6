/* OpenCL runtime pieces that need no kernels: library search, error names, device choice
 * (on PoCL), program assembly, and the program binary cache with corrupt entries. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/cache.h"
#include "backends/opencl/device.h"
#include "backends/opencl/loader.h"

/* For the tests that need an OpenCL device (PoCL on the native CI). When the loader finds
 * no platform at all AND CD_TEST_NO_OPENCL_DEVICE=1 is set, the test is skipped with a
 * visible message: scripts/cross-aarch64.sh sets it, because its arm64 sysroot has the ICD
 * loader (ocl-icd-libopencl1) but no driver and an empty etc/OpenCL/vendors. Without the
 * variable a missing device stays a failure. */
static void need_device_or_skip(const cd_clfn *fn) {
    const char *v = getenv("CD_TEST_NO_OPENCL_DEVICE");
    if (!v || strcmp(v, "1") != 0) return;
    cl_uint n = 0;
    cl_int rc = fn->clGetPlatformIDs(0, NULL, &n);
    if (rc == -1001 /* CL_PLATFORM_NOT_FOUND_KHR */ || (rc == CL_SUCCESS && n == 0))
        cr_skip_test("SKIP: no OpenCL platform (clGetPlatformIDs: %s, %u platforms) and CD_TEST_NO_OPENCL_DEVICE=1: "
                     "this test needs an OpenCL device",
                     cd_cl_err_name(rc), (unsigned)n);
}

Test(cl_loader, explicit_missing_library_says_what_to_do) {
    cd_clfn fn;
    cd_cl_search s;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_cl_load("/nonexistent/dir/libmali.so", &fn, &s, &e), CD_E_BACKEND);
    cr_assert_eq(s.n, 1);
    cr_assert_eq(s.found, -1);
    cr_assert(strstr(e.msg, "/nonexistent/dir/libmali.so"), "%s", e.msg);
    cr_assert(strstr(e.msg, "--cl-lib"), "%s", e.msg);
    cr_assert(strstr(e.msg, "No such file"), "dlerror text kept: %s", e.msg);
    cr_assert(strstr(e.msg, "What to do"), "%s", e.msg);
}

Test(cl_loader, library_without_opencl_names_missing_entry_points) {
    cd_clfn fn;
    cd_cl_search s;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_cl_load("libm.so.6", &fn, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(s.at[0].why, "30 of 30 OpenCL entry points are missing"), "%s", s.at[0].why);
    cr_assert(strstr(e.msg, "clGetPlatformIDs"), "%s", e.msg);
    cr_assert(strstr(e.msg, "clReleaseEvent"), "%s", e.msg);
}

Test(cl_loader, environment_variable_is_used_and_final) {
    setenv("CLDIFF_OPENCL_LIB", "/nope/libOpenCL.so", 1);
    cd_clfn fn;
    cd_cl_search s;
    cd_error e;
    cd_err_clear(&e);
    cd_status st = cd_cl_load(NULL, &fn, &s, &e);
    unsetenv("CLDIFF_OPENCL_LIB");
    cr_assert_eq(st, CD_E_BACKEND);
    cr_assert_eq(s.n, 1);
    cr_assert_str_eq(s.at[0].origin, "CLDIFF_OPENCL_LIB");
    cr_assert(strstr(e.msg, "CLDIFF_OPENCL_LIB"), "%s", e.msg);
}

Test(cl_loader, default_search_finds_the_icd_loader) {
    unsetenv("CLDIFF_OPENCL_LIB");
    cd_clfn fn;
    cd_cl_search s;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_cl_load(NULL, &fn, &s, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(s.found, 0);
    cr_assert_str_eq(s.at[0].path, "libOpenCL.so.1");
    cr_assert(s.at[0].ok);
    cr_assert_not_null(fn.clGetPlatformIDs);
    cr_assert_not_null(fn.clReleaseEvent);
    cd_cl_unload(&fn);
    cr_assert_null(fn.handle);
}

Test(cl_loader, error_names) {
    cr_assert_str_eq(cd_cl_err_name(CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
    cr_assert_str_eq(cd_cl_err_name(CL_BUILD_PROGRAM_FAILURE), "CL_BUILD_PROGRAM_FAILURE");
    cr_assert_str_eq(cd_cl_err_name(-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    cr_assert_str_eq(cd_cl_err_name(-9999), "unknown OpenCL error -9999");
    cr_assert_str_eq(cd_cl_variant_name(CD_CLV_FP16_COMPUTE), "fp16-compute");
}

Test(cl_device, pick_by_index_name_and_reject_unknown) {
    cd_clfn fn;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_cl_load(NULL, &fn, NULL, &e), CD_OK, "%s", e.msg);
    need_device_or_skip(&fn);
    cl_platform_id p;
    cl_device_id d;
    cd_cl_devinfo info;
    cr_assert_eq(cd_cl_pick(&fn, NULL, NULL, &p, &d, &info, &e), CD_OK, "%s", e.msg);
    cr_assert(info.compute_units > 0);
    cr_assert(info.global_mem > 0);
    cr_assert(strlen(info.name) > 0);
    char name[128];
    snprintf(name, sizeof name, "%s", info.name);
    cd_cl_devinfo i2;
    cr_assert_eq(cd_cl_pick(&fn, "0", "0", &p, &d, &i2, &e), CD_OK, "%s", e.msg);
    cr_assert_str_eq(i2.name, name);
    /* name substring, case-insensitive */
    char sub[8];
    for (int k = 0; k < 4; k++) sub[k] = (char)(name[k] >= 'a' && name[k] <= 'z' ? name[k] - 32 : name[k]);
    sub[4] = 0;
    cr_assert_eq(cd_cl_pick(&fn, NULL, sub, &p, &d, &i2, &e), CD_OK, "%s", e.msg);
    cr_assert_str_eq(i2.name, name);
    cr_assert_eq(cd_cl_pick(&fn, NULL, "99", &p, &d, &i2, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "--cl-device 99 matches no OpenCL device"), "%s", e.msg);
    cr_assert(strstr(e.msg, name), "lists the devices: %s", e.msg);
    cr_assert_eq(cd_cl_pick(&fn, "no-such-vendor", NULL, &p, &d, &i2, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "--cl-platform no-such-vendor"), "%s", e.msg);
    cd_cl_unload(&fn);
}

Test(cl_program, source_assembly_and_kernel_dir_override) {
    cd_error e;
    cd_err_clear(&e);
    char **files;
    int n = cd_cl_kernel_files(NULL, &files, &e);
    cr_assert(n > 0, "%s", e.msg);
    for (int i = 0; i < n; i++) cr_assert_str_neq(files[i], CD_CL_PRELUDE);
    char fam[64];
    snprintf(fam, sizeof fam, "%s", files[0]);
    cd_cl_kernel_files_free(files, n);
    char *s = cd_cl_program_source(NULL, fam, CD_CLV_FP16_COMPUTE, &e);
    cr_assert_not_null(s, "%s", e.msg);
    cr_assert_eq(strncmp(s, "#pragma OPENCL EXTENSION cl_khr_fp16 : enable\n", 46), 0);
    cr_assert(strstr(s, "#define LOAD(p, i)"), "prelude prepended");
    char line[96];
    snprintf(line, sizeof line, "#line 1 \"%s\"", fam);
    cr_assert(strstr(s, line));
    free(s);
    s = cd_cl_program_source(NULL, fam, CD_CLV_FP32, &e);
    cr_assert(strncmp(s, "#pragma", 7) != 0);
    free(s);
    /* --kernel-dir: a file of the same name replaces the embedded one; new files appear */
    char dir[] = "/tmp/cd_kdir_XXXXXX";
    cr_assert_not_null(mkdtemp(dir));
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, fam);
    FILE *f = fopen(path, "w");
    fputs("__kernel void mine(__global REAL *x) { STORE(x, 0, ACC_ONE); }\n", f);
    fclose(f);
    snprintf(path, sizeof path, "%s/zz_vendor.cl", dir);
    f = fopen(path, "w");
    fputs("__kernel void v(void) {}\n", f);
    fclose(f);
    s = cd_cl_program_source(dir, fam, CD_CLV_FP16, &e);
    cr_assert(strstr(s, "__kernel void mine"), "override used");
    free(s);
    n = cd_cl_kernel_files(dir, &files, &e);
    cr_assert_str_eq(files[n - 1], "zz_vendor.cl");
    cd_cl_kernel_files_free(files, n);
    cr_assert_null(cd_cl_program_source(dir, "absent_family", CD_CLV_FP32, &e));
    cr_assert_eq(e.code, CD_E_USAGE);
    cr_assert(strstr(e.msg, "absent_family.cl"), "%s", e.msg);
    unlink(path);
    snprintf(path, sizeof path, "%s/%s", dir, fam);
    unlink(path);
    rmdir(dir);
}

/* ---- program cache ---- */

static void key_of(cd_cl_cache_key *k, const char *opts) {
    k->device = "Test GPU";
    k->driver = "1.2.3";
    k->options = opts;
    cd_cl_cache_hash_source(k, "__kernel void k(void) {}", 24);
}

static long file_size(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 ? (long)st.st_size : -1;
}

static void make_cache(cd_cl_cache *c, char *dir) {
    strcpy(dir, "/tmp/cd_cache_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    char sub[300];
    snprintf(sub, sizeof sub, "%s/a/b", dir); /* created on open */
    cd_cl_cache_open(c, sub, false);
    cr_assert(c->enabled, "%s", c->note);
}

Test(cl_cache, roundtrip_and_key_separation) {
    cd_cl_cache c;
    char dir[64];
    make_cache(&c, dir);
    cd_cl_cache_key k, k2;
    key_of(&k, "-DCD_FP32=1");
    key_of(&k2, "-DCD_FP16=1");
    uint8_t bin[300];
    for (int i = 0; i < 300; i++) bin[i] = (uint8_t)(i * 7 + 1);
    bin[10] = '\n';
    bin[11] = '\n'; /* binary payloads may hold anything */
    cd_cl_cache_put(&c, &k, bin, sizeof bin);
    cr_assert_eq(c.stored, 1, "%s", c.note);
    uint8_t *got;
    size_t n;
    cr_assert(cd_cl_cache_get(&c, &k, &got, &n));
    cr_assert_eq(n, sizeof bin);
    cr_assert_eq(memcmp(got, bin, n), 0);
    free(got);
    cr_assert_not(cd_cl_cache_get(&c, &k2, &got, &n), "other build options: other entry");
    cr_assert_eq(c.hits, 1);
    cr_assert_eq(c.rejected, 0);
    char p1[1024], p2[1024];
    cd_cl_cache_path(&c, &k, p1, sizeof p1);
    cd_cl_cache_path(&c, &k2, p2, sizeof p2);
    cr_assert_str_neq(p1, p2);
    /* no temporary file is left behind */
    char tmp[1100];
    snprintf(tmp, sizeof tmp, "%s.tmp.%ld", p1, (long)getpid());
    cr_assert_eq(file_size(tmp), -1);
    unlink(p1);
}

Test(cl_cache, corrupt_entry_is_deleted_not_trusted) {
    cd_cl_cache c;
    char dir[64];
    make_cache(&c, dir);
    cd_cl_cache_key k;
    key_of(&k, "-DCD_FP32=1");
    uint8_t bin[1000];
    memset(bin, 0xab, sizeof bin);
    cd_cl_cache_put(&c, &k, bin, sizeof bin);
    char p[1024];
    cd_cl_cache_path(&c, &k, p, sizeof p);
    long sz = file_size(p);
    cr_assert(sz > 1000);
    /* flip one byte of the binary */
    FILE *f = fopen(p, "r+b");
    fseek(f, sz - 10, SEEK_SET);
    fputc(0x00, f);
    fclose(f);
    uint8_t *got;
    size_t n;
    cr_assert_not(cd_cl_cache_get(&c, &k, &got, &n));
    cr_assert_eq(c.rejected, 1);
    cr_assert(strstr(c.note, "checksum mismatch"), "%s", c.note);
    cr_assert_eq(file_size(p), -1, "corrupt entry deleted");
    /* truncated entry */
    cd_cl_cache_put(&c, &k, bin, sizeof bin);
    cr_assert_eq(truncate(p, sz - 100), 0);
    cr_assert_not(cd_cl_cache_get(&c, &k, &got, &n));
    cr_assert(strstr(c.note, "truncated"), "%s", c.note);
    cr_assert_eq(file_size(p), -1);
    /* a foreign file under the entry's name */
    f = fopen(p, "wb");
    fputs("hello", f);
    fclose(f);
    cr_assert_not(cd_cl_cache_get(&c, &k, &got, &n));
    cr_assert(strstr(c.note, "not a cldiff cache entry"), "%s", c.note);
    cr_assert_eq(file_size(p), -1);
    /* rebuilt entry works again */
    cd_cl_cache_put(&c, &k, bin, sizeof bin);
    cr_assert(cd_cl_cache_get(&c, &k, &got, &n));
    free(got);
    cd_cl_cache_drop(&c, &k, "driver refused the cached binary: CL_INVALID_BINARY");
    cr_assert_eq(file_size(p), -1);
    cr_assert(strstr(c.note, "CL_INVALID_BINARY"), "%s", c.note);
}

Test(cl_cache, disabled_and_default_dir) {
    cd_cl_cache c;
    cd_cl_cache_open(&c, NULL, true);
    cr_assert_not(c.enabled);
    cr_assert(strstr(c.note, "--no-cache"));
    setenv("XDG_CACHE_HOME", "/tmp/cd_xdg_test", 1);
    cd_cl_cache_open(&c, NULL, false);
    cr_assert(c.enabled);
    cr_assert_str_eq(c.dir, "/tmp/cd_xdg_test/cldiff");
    unsetenv("XDG_CACHE_HOME");
    /* a directory that cannot exist disables the cache with a note, never fails */
    cd_cl_cache_open(&c, "/proc/self/nope/cache", false);
    cr_assert_not(c.enabled);
    cr_assert(strstr(c.note, "cannot create"), "%s", c.note);
}

/* Builds through the cache on PoCL: the second build is a hit; a corrupted entry is
 * rejected and rebuilt from source. */
Test(cl_cache, build_program_through_cache_on_device, .timeout = 300) {
    cd_clfn fn;
    cd_error e;
    cd_err_clear(&e);
    cr_assert_eq(cd_cl_load(NULL, &fn, NULL, &e), CD_OK, "%s", e.msg);
    need_device_or_skip(&fn);
    cl_platform_id p;
    cl_device_id d;
    cd_cl_devinfo info;
    cr_assert_eq(cd_cl_pick(&fn, NULL, NULL, &p, &d, &info, &e), CD_OK, "%s", e.msg);
    cl_int rc;
    cl_context ctx = fn.clCreateContext(NULL, 1, &d, NULL, NULL, &rc);
    cr_assert_eq(rc, CL_SUCCESS);
    cd_cl_cache c;
    char dir[64];
    make_cache(&c, dir);
    const char *src = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2.0f; }\n";
    cl_program prog;
    char *log;
    cr_assert_eq(cd_cl_build_program(&fn, ctx, d, &info, src, "-cl-std=CL1.2", &c, &prog, &log, &e), CD_OK, "%s",
                 e.msg);
    fn.clReleaseProgram(prog);
    cr_assert_eq(c.stored, 1, "%s", c.note);
    cr_assert_eq(cd_cl_build_program(&fn, ctx, d, &info, src, "-cl-std=CL1.2", &c, &prog, &log, &e), CD_OK, "%s",
                 e.msg);
    cr_assert_eq(c.hits, 1);
    cl_kernel k = fn.clCreateKernel(prog, "twice", &rc);
    cr_assert_eq(rc, CL_SUCCESS, "kernel from the cached binary");
    fn.clReleaseKernel(k);
    fn.clReleaseProgram(prog);
    /* corrupt the stored binary */
    cd_cl_cache_key key = {.device = info.name, .options = "-cl-std=CL1.2"};
    char driver[300];
    snprintf(driver, sizeof driver, "%s | %s", info.driver, info.platform_version);
    key.driver = driver;
    cd_cl_cache_hash_source(&key, src, strlen(src));
    char path[1024];
    cd_cl_cache_path(&c, &key, path, sizeof path);
    long sz = file_size(path);
    cr_assert(sz > 0, "entry at %s", path);
    FILE *f = fopen(path, "r+b");
    fseek(f, sz / 2 + 200, SEEK_SET);
    fputc(0x5a ^ fgetc(f), f);
    fclose(f);
    f = fopen(path, "r+b");
    fseek(f, sz - 1, SEEK_SET);
    fputc(0x77, f);
    fclose(f);
    cr_assert_eq(cd_cl_build_program(&fn, ctx, d, &info, src, "-cl-std=CL1.2", &c, &prog, &log, &e), CD_OK, "%s",
                 e.msg);
    cr_assert_eq(c.rejected, 1, "%s", c.note);
    cr_assert_eq(c.stored, 2, "rebuilt and stored again");
    fn.clReleaseProgram(prog);
    /* a build error returns CD_E_UNSUPPORTED with the log's first line */
    cr_assert_eq(
        cd_cl_build_program(&fn, ctx, d, &info, "__kernel void bad( { }", "-cl-std=CL1.2", NULL, &prog, &log, &e),
        CD_E_UNSUPPORTED);
    cr_assert(strstr(e.msg, "CL_BUILD_PROGRAM_FAILURE"), "%s", e.msg);
    cr_assert_not_null(log);
    free(log);
    fn.clReleaseContext(ctx);
    cd_cl_unload(&fn);
}
