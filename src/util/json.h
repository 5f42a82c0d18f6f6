/* A small JSON reader (RFC 8259 values; \uXXXX escapes become UTF-8) for the files cldiff
 * writes and reads back (the instrument manifest). Input is untrusted: depth and sizes are
 * bounded, errors name the byte offset. */
#ifndef CD_JSON_H
#define CD_JSON_H
#include <stddef.h>
#include "util/error.h"

typedef enum { CD_JSON_NULL, CD_JSON_BOOL, CD_JSON_NUM, CD_JSON_STR, CD_JSON_ARR, CD_JSON_OBJ } cd_json_kind;

typedef struct cd_json {
    cd_json_kind kind;
    double num;            /* NUM, BOOL (0/1) */
    char *str;             /* STR */
    int n;                 /* ARR/OBJ: element count */
    struct cd_json *items; /* ARR/OBJ: elements */
    char **keys;           /* OBJ: keys */
} cd_json;

/* Parses buf[0..len). what names the source in messages. Malformed -> CD_E_MODEL. */
cd_status cd_json_parse(const char *buf, size_t len, const char *what, cd_json *out, cd_error *err);
void cd_json_free(cd_json *j);
/* Member of an object by key (NULL when absent or j is not an object). */
const cd_json *cd_json_get(const cd_json *j, const char *key);
#endif
