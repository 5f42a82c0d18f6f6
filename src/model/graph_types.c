/* Graph IR value types: dtypes (sizes, names, the model formats' codes), kernel-record names,
 * shapes, and a tensor's data as float32. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/graph.h"
#include "util/fp16.h"

/* ---------------------------------------------------------------- dtypes and names */
size_t cd_dtype_size(cd_dtype t) {
    switch (t) {
    case CD_F32: case CD_I32: return 4;
    case CD_F16: case CD_I16: return 2;
    case CD_I8: case CD_U8: case CD_BOOL: return 1;
    case CD_I64: case CD_F64: return 8;
    default: return 0;
    }
}

const char *cd_dtype_name(cd_dtype t) {
    static const char *n[] = {"float32", "float16", "int8", "int16", "int32", "int64", "uint8", "bool", "float64"};
    return ((unsigned)t < CD_DTYPE_COUNT) ? n[t] : "unknown";
}

int cd_dtype_from_fb(int v) {
    switch (v) {
    case 0: return CD_BOOL;
    case 1: return CD_I16;
    case 2: return CD_I32;
    case 3: return CD_I64;
    case 4: return CD_F16;
    case 5: return CD_F32;
    case 6: return CD_F64;
    case 20: return CD_U8;
    case 21: return CD_I8;
    default: return -1;
    }
}

int cd_dtype_to_fb(cd_dtype t) {
    switch (t) {
    case CD_BOOL: return 0;
    case CD_I16: return 1;
    case CD_I32: return 2;
    case CD_I64: return 3;
    case CD_F16: return 4;
    case CD_F32: return 5;
    case CD_F64: return 6;
    case CD_U8: return 20;
    case CD_I8: return 21;
    default: return -1;
    }
}

int cd_dtype_from_meta0(int v) {
    switch (v) {
    case 0: return CD_BOOL;
    case 1: return CD_I16;
    case 2: return CD_I32;
    case 3: return CD_I64;
    case 4: return CD_F16;
    case 5: return CD_F32;
    case 6: return CD_F64;
    case 8: return CD_U8;
    case 9: return CD_I8;
    default: return -1;
    }
}

const char *cd_target_name(int t) {
    static const char *n[] = {"unk", "host", "x86", "cuda", "arm", "opencl", "any", "fpga", "npu", "xpu",
                              "bm", "mlu", "rknpu", "apu", "huawei_ascend_npu", "imagination_nna",
                              "intel_fpga", "metal", "nnadapter"};
    return (t >= 0 && t < (int)(sizeof n / sizeof *n)) ? n[t] : "unknown";
}

const char *cd_precision_name(int p) {
    static const char *n[] = {"unk", "float", "int8_t", "int32_t", "any", "float16", "bool", "int64_t",
                              "int16_t", "uint8_t", "double"};
    return (p >= 0 && p < (int)(sizeof n / sizeof *n)) ? n[p] : "unknown";
}

const char *cd_layout_name(int l) {
    static const char *n[] = {"unk", "NCHW", "any", "NHWC", "ImageDefault", "ImageFolder", "ImageNW",
                              "MetalTexture2DArray", "MetalTexture2D"};
    return (l >= 0 && l < (int)(sizeof n / sizeof *n)) ? n[l] : "unknown";
}

/* ---------------------------------------------------------------- shapes */
int64_t cd_shape_numel(const cd_shape *s) {
    const int64_t cap = (int64_t)1 << 62;
    int64_t n = 1;
    if (s->rank < 0 || s->rank > CD_MAX_RANK) return -1;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->d[i];
        if (d < 0) return -1;
        if (d == 0) { n = 0; continue; }
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

float *cd_tensor_to_f32(const cd_tensor *t, cd_error *err) {
    if (!t || !t->data) {
        cd_err(err, CD_E_INTERNAL, "tensor '%s' has no data to convert", t && t->name ? t->name : "?");
        return NULL;
    }
    size_t es = cd_dtype_size(t->dtype);
    if (!es) { cd_err(err, CD_E_MODEL, "tensor '%s' has an unknown element type", t->name); return NULL; }
    size_t n = t->nbytes / es;
    if (n > SIZE_MAX / sizeof(float)) { cd_err(err, CD_E_NOMEM, "tensor '%s' too large", t->name); return NULL; }
    float *o = cd_malloc(n * sizeof(float), err);
    if (!o) return NULL;
    const unsigned char *b = t->data;
    for (size_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case CD_F32: memcpy(&o[i], b + 4 * i, 4); break;
        case CD_F16: { uint16_t h; memcpy(&h, b + 2 * i, 2); o[i] = cd_half_to_float(h); break; }
        case CD_I8: o[i] = (float)(int8_t)b[i]; break;
        case CD_U8: o[i] = (float)b[i]; break;
        case CD_BOOL: o[i] = b[i] ? 1.0f : 0.0f; break;
        case CD_I16: { int16_t v; memcpy(&v, b + 2 * i, 2); o[i] = (float)v; break; }
        case CD_I32: { int32_t v; memcpy(&v, b + 4 * i, 4); o[i] = (float)v; break; }
        case CD_I64: { int64_t v; memcpy(&v, b + 8 * i, 8); o[i] = (float)v; break; }
        case CD_F64: { double v; memcpy(&v, b + 8 * i, 8); o[i] = (float)v; break; }
        default: break;
        }
    }
    return o;
}
