#define _XOPEN_SOURCE 700 /* nftw */
#include "cli/outdir.h"
#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include "cli/session.h"

/* What a run writes at the top of --out: moved away when a new run takes its place, so no
 * report or repro pack of an older run stays beside the new one. */
static const char *const ARTIFACTS[] = {"dump.h5",   "layers.csv", "summary.json", "report.html",
                                        "junit.xml", "summary.md", "repro",        "inputs-work"};

static bool is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static bool exists(const char *p) {
    struct stat st;
    return lstat(p, &st) == 0;
}

cd_status cd_outdir_begin(cd_outdir *d, const char *out, cd_error *err) {
    memset(d, 0, sizeof *d);
    size_t n = strlen(out);
    while (n > 1 && out[n - 1] == '/') n--;
    if (n >= sizeof d->final - 32) return cd_err(err, CD_E_USAGE, "--out path too long (%zu bytes)", n);
    snprintf(d->final, sizeof d->final, "%.*s", (int)n, out);
    const char *base = strrchr(d->final, '/');
    base = base ? base + 1 : d->final;
    if (!strcmp(base, ".") || !strcmp(base, "..") || !strcmp(d->final, "/")) {
        char rp[PATH_MAX];
        if (!realpath(d->final, rp)) return cd_err(err, CD_E_IO, "--out '%s': %s", out, strerror(errno));
        if (strlen(rp) >= sizeof d->final - 32) return cd_err(err, CD_E_USAGE, "--out path too long");
        snprintf(d->final, sizeof d->final, "%s", rp);
    }
    cd_status st;
    if (exists(d->final)) {
        if ((st = cd_make_dirs(d->final, err))) return st; /* a writable folder */
    } else {
        char parent[1024];
        snprintf(parent, sizeof parent, "%s", d->final);
        char *sl = strrchr(parent, '/');
        if (sl && sl != parent) {
            *sl = 0;
            if ((st = cd_make_dirs(parent, err))) return st;
        }
    }
    snprintf(d->stage, sizeof d->stage, "%s.tmp-%ld", d->final, (long)getpid());
    if (mkdir(d->stage, 0777) == 0) return CD_OK;
    int e = errno;
    if (is_dir(d->final)) { /* a writable --out in a read-only folder: stage inside it */
        d->inside = true;
        snprintf(d->stage, sizeof d->stage, "%s/.cldiff-tmp-%ld", d->final, (long)getpid());
        if (mkdir(d->stage, 0777) == 0) return CD_OK;
        e = errno;
    }
    return cd_err(
        err, CD_E_IO,
        "cannot create output folder '%s' (the temporary folder of --out %s): %s (choose a writable --out DIR)",
        d->stage, out, strerror(e));
}

static int rm_one(const char *p, const struct stat *sb, int flag, struct FTW *f) {
    (void)sb;
    (void)f;
    return flag == FTW_DP ? rmdir(p) : unlink(p);
}

static void rm_tree(const char *p) {
    if (exists(p)) nftw(p, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

cd_status cd_outdir_commit(cd_outdir *d, cd_error *err) {
    if (!d->inside && !exists(d->final)) {
        if (rename(d->stage, d->final) == 0) return CD_OK;
        return cd_err(err, CD_E_IO, "cannot rename '%s' to --out '%s': %s (the run's files are in '%s')", d->stage,
                      d->final, strerror(errno), d->stage);
    }
    /* the previous run's files out of the way first, then this run's in: each rename is atomic */
    char old[1200], a[1400], b[1400];
    if (d->inside)
        snprintf(old, sizeof old, "%s/.cldiff-old-%ld", d->final, (long)getpid());
    else
        snprintf(old, sizeof old, "%s.old-%ld", d->final, (long)getpid());
    if (mkdir(old, 0777) != 0)
        return cd_err(err, CD_E_IO,
                      "cannot create '%s' to replace the files of --out '%s': %s (the run's files are in '%s')", old,
                      d->final, strerror(errno), d->stage);
    for (size_t i = 0; i < sizeof ARTIFACTS / sizeof *ARTIFACTS; i++) {
        snprintf(a, sizeof a, "%s/%s", d->final, ARTIFACTS[i]);
        snprintf(b, sizeof b, "%s/%s", old, ARTIFACTS[i]);
        if (exists(a)) rename(a, b);
    }
    DIR *dir = opendir(d->stage);
    cd_status st = dir
        ? CD_OK
        : cd_err(err, CD_E_IO, "cannot read '%s': %s (the run's files are there)", d->stage, strerror(errno));
    for (struct dirent *e; dir && !st && (e = readdir(dir));) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(a, sizeof a, "%s/%s", d->final, e->d_name);
        snprintf(b, sizeof b, "%s/%s", old, e->d_name);
        if (exists(a) && !exists(b)) rename(a, b);
        char s[1400];
        snprintf(s, sizeof s, "%s/%s", d->stage, e->d_name);
        if (rename(s, a) != 0)
            st = cd_err(err, CD_E_IO, "cannot move '%s' into --out '%s': %s", s, d->final, strerror(errno));
    }
    if (dir) closedir(dir);
    rm_tree(old);
    if (!st) rmdir(d->stage);
    return st;
}

void cd_outdir_abandon(cd_outdir *d, int exit_code, bool quiet) {
    if (rmdir(d->stage) == 0) return; /* nothing written */
    char part[1200], stamp[32];
    time_t t = time(NULL);
    struct tm tm;
    localtime_r(&t, &tm);
    strftime(stamp, sizeof stamp, "%Y%m%d-%H%M%S", &tm);
    if (d->inside)
        snprintf(part, sizeof part, "%s/cldiff-partial-%s", d->final, stamp);
    else
        snprintf(part, sizeof part, "%s.partial-%s", d->final, stamp);
    if (exists(part)) snprintf(part + strlen(part), sizeof part - strlen(part), "-%ld", (long)getpid());
    const char *kept = rename(d->stage, part) == 0 ? part : d->stage;
    if (!quiet)
        fprintf(stderr, "cldiff: --out %s is left as it was (this run %s); what it wrote is in %s\n", d->final,
                exit_code == 130 ? "was interrupted" : "did not reach a verdict", kept);
}
