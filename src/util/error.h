/* Error reporting: every fallible function returns cd_status and fills a cd_error
 * whose message says what went wrong, where, and what to do. main() maps codes to exit codes. */
#ifndef CD_ERROR_H
#define CD_ERROR_H
#include <stddef.h>

typedef enum {
    CD_OK = 0,
    CD_E_TOLERANCE = 1,    /* a layer out of tolerance (exit 1) */
    CD_E_USAGE = 2,        /* bad command line, missing file (exit 2) */
    CD_E_MODEL = 3,        /* bad model or input data (exit 3) */
    CD_E_BACKEND = 4,      /* backend unavailable (exit 4) */
    CD_E_CRASH = 5,        /* backend crashed or hung (exit 5) */
    CD_E_IO = 6,           /* cannot write output (disk full, read-only) (exit 6) */
    CD_E_NOMEM = 7,        /* out of memory / over --max-memory (exit 7) */
    CD_E_UNSUPPORTED = 8,  /* an op or feature cldiff cannot run (exit 8) */
    CD_E_INTERNAL = 9,     /* a bug in cldiff (exit 9) */
    CD_E_INCOMPLETE = 10,  /* verdict incomplete: not everything probed was compared (exit 10) */
    CD_E_INTERRUPTED = 130 /* SIGINT/SIGTERM (exit 130) */
} cd_status;

#define CD_ERR_MSG 2048
typedef struct cd_error {
    cd_status code;
    char msg[CD_ERR_MSG];
} cd_error;

/* Sets err (if not NULL) and returns code. printf-style message. */
cd_status cd_err(cd_error *err, cd_status code, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Prefixes the existing message with context ("while reading op 12: ..."). */
cd_status cd_err_prefix(cd_error *err, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void cd_err_clear(cd_error *err);
const char *cd_status_name(cd_status s);
/* "SIGSEGV" etc. for the signals a crashed child reports; NULL for others. */
const char *cd_signal_name(int sig);

/* Allocation helpers that never return NULL silently: they return NULL and fill err. */
void *cd_malloc(size_t n, cd_error *err);
void *cd_calloc(size_t count, size_t size, cd_error *err);
char *cd_strdup(const char *s);
/* Appends s[0..n) to the NUL-terminated text tail (cap bytes), keeping only its last cap-1 bytes:
 * the end of a child's stderr for a crash report. */
void cd_tail_append(char *tail, size_t cap, const char *s, size_t n);
#endif
