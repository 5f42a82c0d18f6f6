/* Paddle-Lite SDK lookup (backends/paddlelite/pl_sdk.h): a given path, the environment
 * variable, the defaults, and the clear errors for a missing SDK, a folder without lib/, a
 * library for the wrong machine or without OpenCL, one that needs a newer glibc. The SDKs here
 * are made up (an ELF header and marker bytes are all the lookup reads), so the test needs
 * neither the real SDKs nor a compiler. */
#include <criterion/criterion.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>
#include "backends/paddlelite/pl_sdk.h"

static char tmp_root[PATH_MAX];

static void setup(void) {
    unsetenv("CLDIFF_PL_ARM_SDK");
    unsetenv("CLDIFF_PL_OPENCL_SDK");
    unsetenv("CLDIFF_PL_CXX");
    snprintf(tmp_root, sizeof tmp_root, "/tmp/cd_test_pl_sdk_XXXXXX");
    cr_assert_not_null(mkdtemp(tmp_root));
}

static void teardown(void) {
    char cmd[PATH_MAX + 16];
    snprintf(cmd, sizeof cmd, "rm -rf '%s'", tmp_root);
    cr_expect_eq(system(cmd), 0);
}

static void mkdirs(const char *p) {
    char b[PATH_MAX];
    snprintf(b, sizeof b, "%s", p);
    for (char *s = b + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            mkdir(b, 0755);
            *s = '/';
        }
    mkdir(b, 0755);
}

static void write_file(const char *path, const void *data, size_t n) {
    FILE *f = fopen(path, "wb");
    cr_assert_not_null(f, "cannot write %s", path);
    cr_assert_eq(fwrite(data, 1, n, f), n);
    fclose(f);
}

/* A made-up SDK: include/paddle_api.h and a lib/libpaddle_light_api_shared.so that is a
 * 64-bit little-endian ELF header for machine `em` (183 aarch64, 62 x86-64) followed by
 * `extra` (marker strings). with_lib false: no lib/ folder at all. */
static void make_sdk(const char *dir, int em, const char *extra, bool with_lib) {
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/include", dir);
    mkdirs(p);
    snprintf(p, sizeof p, "%s/include/paddle_api.h", dir);
    write_file(p, "// made up\n", 11);
    if (!with_lib) return;
    snprintf(p, sizeof p, "%s/lib", dir);
    mkdirs(p);
    unsigned char img[512] = {0x7f, 'E', 'L', 'F', 2, 1, 1};
    img[16] = 3; /* ET_DYN */
    img[18] = (unsigned char)(em & 0xff);
    img[19] = (unsigned char)(em >> 8);
    size_t n = 64;
    if (extra) {
        memcpy(img + n, extra, strlen(extra));
        n += strlen(extra);
    }
    snprintf(p, sizeof p, "%s/lib/libpaddle_light_api_shared.so", dir);
    write_file(p, img, n);
}

static bool host_is(const char *m) {
    struct utsname u;
    return uname(&u) == 0 && !strcmp(u.machine, m);
}

#define OCL_MARK "clCreateProgramWithSource GLIBC_2.17 GLIBC_2.34"

TestSuite(pl_sdk, .init = setup, .fini = teardown);

Test(pl_sdk, given_path) {
    char d[PATH_MAX + 32];
    snprintf(d, sizeof d, "%s/my-arm-sdk", tmp_root);
    make_sdk(d, 183, "GLIBC_2.17", true);
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, d, &s, &e), CD_OK, "%s", e.msg);
    char rp[PATH_MAX];
    cr_assert_not_null(realpath(d, rp));
    cr_assert_str_eq(s.dir, rp);
    char lib[PATH_MAX + 64];
    snprintf(lib, sizeof lib, "%s/lib/libpaddle_light_api_shared.so", rp);
    cr_assert_str_eq(s.lib, lib);
    cr_assert_str_eq(s.arch, "aarch64");
    char from[PATH_MAX + 64];
    snprintf(from, sizeof from, "--backend-opt paddle-lite-arm:sdk=%s", d);
    cr_assert_str_eq(s.from, from);
    cr_assert_eq(s.opencl, false);
    cr_assert_eq(s.glibc_minor, 17);
}

Test(pl_sdk, release_archive_cxx_folder) {
    /* inference_lite_lib.armlinux.armv8/cxx/{include,lib}: the folder above cxx/ is accepted */
    char d[PATH_MAX + 64], cxx[PATH_MAX + 64];
    snprintf(d, sizeof d, "%s/inference_lite_lib.armlinux.armv8", tmp_root);
    snprintf(cxx, sizeof cxx, "%s/cxx", d);
    make_sdk(cxx, 183, NULL, true);
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, d, &s, &e), CD_OK, "%s", e.msg);
    cr_assert(strstr(s.dir, "/inference_lite_lib.armlinux.armv8/cxx") != NULL, "%s", s.dir);
}

Test(pl_sdk, env_var_and_given_wins) {
    char a[PATH_MAX + 32], b[PATH_MAX + 32];
    snprintf(a, sizeof a, "%s/env-sdk", tmp_root);
    snprintf(b, sizeof b, "%s/given-sdk", tmp_root);
    make_sdk(a, 183, NULL, true);
    make_sdk(b, 183, NULL, true);
    setenv("CLDIFF_PL_ARM_SDK", a, 1);
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, NULL, &s, &e), CD_OK, "%s", e.msg);
    char from[PATH_MAX + 64];
    snprintf(from, sizeof from, "CLDIFF_PL_ARM_SDK=%s", a);
    cr_assert_str_eq(s.from, from);
    cr_assert(strstr(s.dir, "/env-sdk") != NULL, "%s", s.dir);
    /* the given path comes first */
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, b, &s, &e), CD_OK, "%s", e.msg);
    cr_assert(strstr(s.dir, "/given-sdk") != NULL, "%s", s.dir);
    cr_assert(!strncmp(s.from, "--backend-opt paddle-lite-arm:sdk=", 34), "%s", s.from);
    /* the OpenCL engine reads its own variable, not the ARM one */
    setenv("CLDIFF_PL_OPENCL_SDK", "/nonexistent/ocl-sdk", 1);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_OPENCL, NULL, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "CLDIFF_PL_OPENCL_SDK=/nonexistent/ocl-sdk") != NULL, "%s", e.msg);
}

Test(pl_sdk, missing_given_or_env_is_an_error_not_a_fallback) {
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, "/nonexistent/sdk", &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "/nonexistent/sdk") && strstr(e.msg, "does not exist"), "%s", e.msg);
    cr_assert(strstr(e.msg, "include/paddle_api.h") && strstr(e.msg, "lib/libpaddle_light_api_shared.so"), "%s", e.msg);
    setenv("CLDIFF_PL_ARM_SDK", "/nonexistent/env-sdk", 1);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, NULL, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "from CLDIFF_PL_ARM_SDK=/nonexistent/env-sdk") != NULL, "%s", e.msg);
    /* a file is not a folder */
    char f[PATH_MAX + 32];
    snprintf(f, sizeof f, "%s/afile", tmp_root);
    write_file(f, "x", 1);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, f, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "is a file, not a folder") != NULL, "%s", e.msg);
}

Test(pl_sdk, defaults_missing_says_what_to_do) {
    char root[PATH_MAX + 32];
    snprintf(root, sizeof root, "%s/.paddle-lite", tmp_root);
    mkdirs(root);
    const char *roots[] = {root};
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find_in(CD_PL_ENGINE_ARM, NULL, roots, 1, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "paddle-lite-arm unavailable") != NULL, "%s", e.msg);
    cr_assert(strstr(e.msg, "sdk-armv8-armlinux") && strstr(e.msg, root), "%s", e.msg);
    cr_assert(strstr(e.msg, "scripts/setup.sh") && strstr(e.msg, "CLDIFF_PL_ARM_SDK=DIR") &&
                  strstr(e.msg, "scripts/build_paddle_lite_sdk.sh armv8"),
              "%s", e.msg);
}

Test(pl_sdk, defaults_found) {
    char root[PATH_MAX + 32], d[PATH_MAX + 64];
    snprintf(root, sizeof root, "%s/.paddle-lite", tmp_root);
    snprintf(d, sizeof d, "%s/sdk-armv8-armlinux", root);
    make_sdk(d, 183, NULL, true);
    const char *roots[] = {"/nonexistent/.paddle-lite", root};
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find_in(CD_PL_ENGINE_ARM, NULL, roots, 2, &s, &e), CD_OK, "%s", e.msg);
    char rp[PATH_MAX], from[PATH_MAX + 32];
    cr_assert_not_null(realpath(d, rp));
    cr_assert_str_eq(s.dir, rp);
    snprintf(from, sizeof from, "default: %s", d);
    cr_assert_str_eq(s.from, from);
    if (!host_is("x86_64")) return;
    /* OpenCL on x86-64: the Debian 12 SDK (glibc 2.34) is a default on every glibc */
    snprintf(d, sizeof d, "%s/sdk-x86_64-debian12", root);
    make_sdk(d, 62, OCL_MARK, true);
    cr_assert_eq(cd_pl_sdk_find_in(CD_PL_ENGINE_OPENCL, NULL, roots, 2, &s, &e), CD_OK, "%s", e.msg);
    cr_assert_str_eq(s.arch, "x86_64");
    cr_assert(s.opencl);
    cr_assert(strstr(s.from, "default: ") && strstr(s.from, "/sdk-x86_64-debian12"), "%s", s.from);
}

Test(pl_sdk, folder_without_lib) {
    char d[PATH_MAX + 32];
    snprintf(d, sizeof d, "%s/headers-only", tmp_root);
    make_sdk(d, 183, NULL, false);
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, d, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "is not a Paddle-Lite SDK: it has no lib/ folder") != NULL, "%s", e.msg);
    cr_assert(strstr(e.msg, "headers-only") && strstr(e.msg, "release layout"), "%s", e.msg);
    /* lib/ without the library */
    char p[PATH_MAX + 64];
    snprintf(p, sizeof p, "%s/lib", d);
    mkdirs(p);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, d, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "no lib/libpaddle_light_api_shared.so") != NULL, "%s", e.msg);
}

Test(pl_sdk, wrong_machine_no_opencl_new_glibc) {
    if (!host_is("x86_64")) cr_skip_test("SKIP: the machine checks below are written for an x86-64 host");
    char x86[PATH_MAX + 32], arm[PATH_MAX + 32], noocl[PATH_MAX + 32], newg[PATH_MAX + 32];
    snprintf(x86, sizeof x86, "%s/x86", tmp_root);
    snprintf(arm, sizeof arm, "%s/arm", tmp_root);
    snprintf(noocl, sizeof noocl, "%s/noocl", tmp_root);
    snprintf(newg, sizeof newg, "%s/newglibc", tmp_root);
    make_sdk(x86, 62, OCL_MARK, true);
    make_sdk(arm, 183, OCL_MARK, true);
    make_sdk(noocl, 62, "GLIBC_2.17", true);
    make_sdk(newg, 62, "clCreateProgramWithSource GLIBC_2.999", true);
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_ARM, x86, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "is built for x86_64") && strstr(e.msg, "armv8 (aarch64)"), "%s", e.msg);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_OPENCL, arm, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "is built for aarch64, this machine is x86_64") != NULL, "%s", e.msg);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_OPENCL, noocl, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "has no OpenCL runtime") && strstr(e.msg, "LITE_WITH_OPENCL"), "%s", e.msg);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_OPENCL, newg, &s, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "needs glibc 2.999, this machine has 2.") != NULL, "%s", e.msg);
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_OPENCL, x86, &s, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(s.glibc_minor, 34);
}

Test(pl_sdk, runner_missing_compiler) {
    if (!host_is("x86_64")) cr_skip_test("SKIP: written for an x86-64 host");
    char d[PATH_MAX + 32];
    snprintf(d, sizeof d, "%s/x86", tmp_root);
    make_sdk(d, 62, OCL_MARK, true);
    cd_pl_sdk s;
    cd_error e = {0};
    cr_assert_eq(cd_pl_sdk_find(CD_PL_ENGINE_OPENCL, d, &s, &e), CD_OK, "%s", e.msg);
    setenv("CLDIFF_PL_CXX", "/nonexistent/bin/c++", 1);
    cd_pl_runner r;
    cr_assert_eq(cd_pl_runner_get(&s, &r, &e), CD_E_BACKEND);
    cr_assert(strstr(e.msg, "/nonexistent/bin/c++ not found (CLDIFF_PL_CXX)") && strstr(e.msg, "apt-get install g++"),
              "%s", e.msg);
}

Test(pl_sdk, runner_argv_and_helpers) {
    cd_pl_runner r;
    memset(&r, 0, sizeof r);
    snprintf(r.exe, sizeof r.exe, "/c/pl_probe_runner");
    const char *argv[4];
    cr_assert_eq(cd_pl_runner_argv(&r, argv), 1);
    cr_assert_str_eq(argv[0], "/c/pl_probe_runner");
    snprintf(r.launcher, sizeof r.launcher, "/usr/bin/qemu-aarch64");
    snprintf(r.sysroot, sizeof r.sysroot, "/usr/aarch64-linux-gnu");
    cr_assert_eq(cd_pl_runner_argv(&r, argv), 4);
    cr_assert_str_eq(argv[0], "/usr/bin/qemu-aarch64");
    cr_assert_str_eq(argv[1], "-L");
    cr_assert_str_eq(argv[2], "/usr/aarch64-linux-gnu");
    cr_assert_str_eq(argv[3], "/c/pl_probe_runner");
    /* the runner's source is found (the test runs from the build tree, CLDIFF_SOURCE_DIR) */
    char p[PATH_MAX];
    cr_assert(cd_pl_find_helper("probes/paddle-lite/pl_probe_runner.cc", p, sizeof p));
    char want[PATH_MAX], rp[PATH_MAX];
    snprintf(want, sizeof want, "%s/probes/paddle-lite/pl_probe_runner.cc", CD_SOURCE_DIR);
    cr_assert_not_null(realpath(want, rp));
    cr_assert_str_eq(p, rp);
    cr_assert_not(cd_pl_find_helper("scripts/no_such_helper.py", p, sizeof p));
}
