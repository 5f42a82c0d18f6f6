/* Runtime tensor values: allocation and element access in any dtype. */
#include "util/value.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/fp16.h"

/* ---------------------------------------------------------------- dtypes */
size_t cd_dtype_size(cd_dtype t) {
    switch (t) {
    case CD_F32:
    case CD_I32: return 4;
    case CD_F16:
    case CD_I16: return 2;
    case CD_I8:
    case CD_U8:
    case CD_BOOL: return 1;
    case CD_I64:
    case CD_F64: return 8;
    default: return 0;
    }
}

const char *cd_dtype_name(cd_dtype t) {
    static const char *n[] = {"float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool", "float64"};
    return ((unsigned)t < CD_DTYPE_COUNT) ? n[t] : "unknown";
}

/* ---------------------------------------------------------------- shapes */
int64_t cd_shape_numel(const cd_shape *s) {
    const int64_t cap = (int64_t)1 << 62;
    int64_t n = 1;
    if (s->rank < 0 || s->rank > CD_MAX_RANK) return -1;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->d[i];
        if (d < 0) return -1;
        if (d == 0) {
            n = 0;
            continue;
        }
        if (n > cap / d) {
            /* A zero later in the shape still makes the product 0. */
            for (int j = i + 1; j < s->rank; j++)
                if (s->d[j] == 0) return 0;
            return -1;
        }
        n *= d;
    }
    return n;
}

bool cd_shape_eq(const cd_shape *a, const cd_shape *b) {
    if (a->rank != b->rank) return false;
    for (int i = 0; i < a->rank; i++)
        if (a->d[i] != b->d[i]) return false;
    return true;
}

const char *cd_shape_str(const cd_shape *s, char *buf, size_t n) {
    if (!n) return buf;
    size_t o = 0;
    int w = snprintf(buf, n, "[");
    if (w > 0) o = (size_t)w;
    for (int i = 0; i < s->rank && o < n; i++) {
        w = snprintf(buf + o, n - o, i ? ",%lld" : "%lld", (long long)s->d[i]);
        if (w < 0) break;
        o += (size_t)w;
    }
    if (o < n) snprintf(buf + o, n - o, "]");
    return buf;
}

int64_t cd_value_numel(const cd_value *v) { return cd_shape_numel(&v->shape); }

cd_status cd_value_alloc(cd_value *v, cd_error *err) {
    int64_t n = cd_value_numel(v);
    if (n < 0) {
        char b[160];
        return cd_err(err, CD_E_MODEL, "cannot allocate a tensor of shape %s: negative or overflowing dims",
                      cd_shape_str(&v->shape, b, sizeof b));
    }
    size_t es = cd_dtype_size(v->dtype);
    if (es == 0) return cd_err(err, CD_E_INTERNAL, "cannot allocate a tensor of unknown dtype %d", (int)v->dtype);
    if ((uint64_t)n > (uint64_t)SIZE_MAX / es)
        return cd_err(err, CD_E_NOMEM, "tensor of %lld elements does not fit in memory", (long long)n);
    size_t nb = (size_t)n * es;
    /* calloc: a kernel that writes only part of its output (nms padding) leaves zeros,
     * never uninitialised bytes that would differ run to run. */
    void *p = cd_calloc(nb ? nb : 1, 1, err);
    if (!p) return CD_E_NOMEM;
    if (v->owned) free(v->data);
    v->data = p;
    v->nbytes = nb;
    v->owned = true;
    return CD_OK;
}

void cd_value_release(cd_value *v) {
    if (!v) return;
    if (v->owned) free(v->data);
    v->data = NULL;
    v->nbytes = 0;
    v->owned = false;
}

double cd_value_get(const cd_value *v, int64_t i) {
    const void *p = v->data;
    switch (v->dtype) {
    case CD_F32: return ((const float *)p)[i];
    case CD_F16: return cd_half_to_float(((const uint16_t *)p)[i]);
    case CD_I8: return ((const int8_t *)p)[i];
    case CD_I16: return ((const int16_t *)p)[i];
    case CD_I32: return ((const int32_t *)p)[i];
    case CD_I64: return (double)((const int64_t *)p)[i];
    case CD_U8: return ((const uint8_t *)p)[i];
    case CD_BOOL: return ((const uint8_t *)p)[i] ? 1.0 : 0.0;
    case CD_F64: return ((const double *)p)[i];
    default: return NAN;
    }
}

/* Saturating conversion to an integer type: out-of-range doubles are UB in C casts. */
static int64_t sat_i64(double x, double lo, double hi) {
    if (isnan(x)) return 0;
    if (x <= lo) return (int64_t)lo;
    if (x >= hi) return (int64_t)hi;
    return (int64_t)x;
}

void cd_value_set(cd_value *v, int64_t i, double x) {
    void *p = v->data;
    switch (v->dtype) {
    case CD_F32: ((float *)p)[i] = (float)x; break;
    case CD_F16: ((uint16_t *)p)[i] = cd_float_to_half((float)x); break;
    case CD_I8: ((int8_t *)p)[i] = (int8_t)sat_i64(x, -128, 127); break;
    case CD_I16: ((int16_t *)p)[i] = (int16_t)sat_i64(x, -32768, 32767); break;
    case CD_I32: ((int32_t *)p)[i] = (int32_t)sat_i64(x, -2147483648.0, 2147483647.0); break;
    case CD_I64: ((int64_t *)p)[i] = sat_i64(x, -9223372036854775808.0, 9223372036854774784.0); break;
    case CD_U8: ((uint8_t *)p)[i] = (uint8_t)sat_i64(x, 0, 255); break;
    case CD_BOOL: ((uint8_t *)p)[i] = x != 0.0; break;
    case CD_F64: ((double *)p)[i] = x; break;
    default: break;
    }
}
