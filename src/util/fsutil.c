#include "util/fsutil.h"
#include <errno.h>
#include <stdarg.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <unistd.h>

bool cd_fs_is_file(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode);
}

bool cd_fs_is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

bool cd_fs_is_exec(const char *p) { return cd_fs_is_file(p) && access(p, X_OK) == 0; }

void cd_fs_exe_dir(char *out, size_t n) {
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    out[0] = 0;
    if (l <= 0) return;
    exe[l] = 0;
    char *s = strrchr(exe, '/');
    if (!s) return;
    *s = 0;
    snprintf(out, n, "%s", exe[0] ? exe : "/");
}

bool cd_fs_up(char *p) {
    char *s = strrchr(p, '/');
    if (!s || (s == p && !p[1])) return false;
    if (s == p)
        p[1] = 0;
    else
        *s = 0;
    return true;
}

bool cd_fs_which(const char *name, char *out, size_t n) {
    out[0] = 0;
    if (!name || !*name) return false;
    if (strchr(name, '/')) {
        if (!cd_fs_is_exec(name)) return false;
        snprintf(out, n, "%s", name);
        return true;
    }
    const char *path = getenv("PATH");
    if (!path || !*path) path = "/usr/local/bin:/usr/bin:/bin";
    while (*path) {
        size_t l = strcspn(path, ":");
        char p[PATH_MAX];
        snprintf(p, sizeof p, "%.*s/%s", (int)(l ? l : 1), l ? path : ".", name);
        if (cd_fs_is_exec(p)) {
            snprintf(out, n, "%s", p);
            return true;
        }
        path += l;
        if (*path) path++;
    }
    return false;
}

void cd_fs_cache_root(char *out, size_t n) {
    const char *c = getenv("CLDIFF_CACHE_DIR"), *x = getenv("XDG_CACHE_HOME"), *h = getenv("HOME");
    if (c && *c)
        snprintf(out, n, "%s", c);
    else if (x && *x)
        snprintf(out, n, "%s/cldiff", x);
    else if (h && *h)
        snprintf(out, n, "%s/.cache/cldiff", h);
    else
        snprintf(out, n, "/tmp/cldiff-cache-%u", (unsigned)getuid());
}

bool cd_fs_mkdirs(const char *path, unsigned mode) {
    char p[PATH_MAX];
    snprintf(p, sizeof p, "%s", path);
    for (char *s = p + 1; *s; s++)
        if (*s == '/') {
            *s = 0;
            if (mkdir(p, (mode_t)mode) != 0 && errno != EEXIST) return false;
            *s = '/';
        }
    return mkdir(p, (mode_t)mode) == 0 || errno == EEXIST;
}

const char *cd_fs_host_arch(void) {
    static struct utsname u;
    if (uname(&u) != 0) return "unknown";
    if (!strcmp(u.machine, "arm64")) return "aarch64";
    return u.machine;
}

void cd_appendf(char *buf, size_t n, const char *fmt, ...) {
    size_t l = strlen(buf);
    if (l + 1 >= n) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf + l, n - l, fmt, ap);
    va_end(ap);
}
