#include "util/error.h"
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cd_status cd_err(cd_error *err, cd_status code, const char *fmt, ...) {
    if (err) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err->msg, sizeof err->msg, fmt, ap);
        va_end(ap);
        err->code = code;
    }
    return code;
}

cd_status cd_err_prefix(cd_error *err, const char *fmt, ...) {
    if (!err) return CD_E_INTERNAL;
    char pre[512], old[CD_ERR_MSG];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(pre, sizeof pre, fmt, ap);
    va_end(ap);
    memcpy(old, err->msg, sizeof old);
    size_t lp = strnlen(pre, sizeof pre), lo = strnlen(old, sizeof old);
    if (lp > sizeof err->msg - 1) lp = sizeof err->msg - 1;
    if (lo > sizeof err->msg - 1 - lp) lo = sizeof err->msg - 1 - lp;
    memcpy(err->msg, pre, lp);
    memcpy(err->msg + lp, old, lo);
    err->msg[lp + lo] = 0;
    return err->code;
}

void cd_err_clear(cd_error *err) {
    if (err) {
        err->code = CD_OK;
        err->msg[0] = 0;
    }
}

const char *cd_status_name(cd_status s) {
    switch (s) {
    case CD_OK: return "ok";
    case CD_E_TOLERANCE: return "out of tolerance";
    case CD_E_USAGE: return "usage error";
    case CD_E_MODEL: return "bad model or input";
    case CD_E_BACKEND: return "backend unavailable";
    case CD_E_CRASH: return "backend crashed or hung";
    case CD_E_IO: return "output error";
    case CD_E_NOMEM: return "out of memory";
    case CD_E_UNSUPPORTED: return "unsupported";
    case CD_E_INTERNAL: return "internal error";
    case CD_E_INCOMPLETE: return "incomplete: not everything probed was compared";
    case CD_E_INTERRUPTED: return "interrupted";
    }
    return "error";
}

void *cd_malloc(size_t n, cd_error *err) {
    void *p = malloc(n ? n : 1);
    if (!p) cd_err(err, CD_E_NOMEM, "out of memory allocating %zu bytes", n);
    return p;
}

void *cd_calloc(size_t count, size_t size, cd_error *err) {
    void *p = calloc(count ? count : 1, size ? size : 1);
    if (!p) cd_err(err, CD_E_NOMEM, "out of memory allocating %zu x %zu bytes", count, size);
    return p;
}

char *cd_strdup(const char *s) {
    if (!s) return NULL;
    size_t n = strlen(s) + 1;
    char *p = malloc(n);
    if (p) memcpy(p, s, n);
    return p;
}

const char *cd_signal_name(int s) {
    switch (s) {
    case SIGSEGV: return "SIGSEGV";
    case SIGABRT: return "SIGABRT";
    case SIGBUS: return "SIGBUS";
    case SIGFPE: return "SIGFPE";
    case SIGILL: return "SIGILL";
    case SIGKILL: return "SIGKILL";
    case SIGTERM: return "SIGTERM";
    case SIGINT: return "SIGINT";
    case SIGPIPE: return "SIGPIPE";
    case SIGTRAP: return "SIGTRAP";
    case SIGSYS: return "SIGSYS";
    default: return NULL;
    }
}

void cd_tail_append(char *tail, size_t cap, const char *s, size_t n) {
    size_t have = strlen(tail);
    if (n >= cap - 1) {
        memcpy(tail, s + n - (cap - 1), cap - 1);
        tail[cap - 1] = 0;
        return;
    }
    if (have + n >= cap) {
        size_t drop = have + n - (cap - 1);
        memmove(tail, tail + drop, have - drop + 1);
        have -= drop;
    }
    memcpy(tail + have, s, n);
    tail[have + n] = 0;
}
