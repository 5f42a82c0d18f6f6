/* Graph IR value types: dtypes (sizes, names, the model formats' codes), kernel-record names,
 * shapes, and a tensor's data as float32. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/graph.h"
#include "util/fp16.h"

/* ---------------------------------------------------------------- dtypes and names */
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
    static const char *n[] = {"unk",
                              "host",
                              "x86",
                              "cuda",
                              "arm",
                              "opencl",
                              "any",
                              "fpga",
                              "npu",
                              "xpu",
                              "bm",
                              "mlu",
                              "rknpu",
                              "apu",
                              "huawei_ascend_npu",
                              "imagination_nna",
                              "intel_fpga",
                              "metal",
                              "nnadapter"};
    return (t >= 0 && t < (int)(sizeof n / sizeof *n)) ? n[t] : "unknown";
}

const char *cd_precision_name(int p) {
    static const char *n[] = {"unk",  "float",   "int8_t",  "int32_t", "any",   "float16",
                              "bool", "int64_t", "int16_t", "uint8_t", "double"};
    return (p >= 0 && p < (int)(sizeof n / sizeof *n)) ? n[p] : "unknown";
}

const char *cd_layout_name(int l) {
    static const char *n[] = {"unk",           "NCHW",        "any",     "NHWC",
                              "ImageDefault",  "ImageFolder", "ImageNW", "MetalTexture2DArray",
                              "MetalTexture2D"};
    return (l >= 0 && l < (int)(sizeof n / sizeof *n)) ? n[l] : "unknown";
}

float *cd_tensor_to_f32(const cd_tensor *t, cd_error *err) {
    if (!t || !t->data) {
        cd_err(err, CD_E_INTERNAL, "tensor '%s' has no data to convert", t && t->name ? t->name : "?");
        return NULL;
    }
    size_t es = cd_dtype_size(t->dtype);
    if (!es) {
        cd_err(err, CD_E_MODEL, "tensor '%s' has an unknown element type", t->name);
        return NULL;
    }
    size_t n = t->nbytes / es;
    if (n > SIZE_MAX / sizeof(float)) {
        cd_err(err, CD_E_NOMEM, "tensor '%s' too large", t->name);
        return NULL;
    }
    float *o = cd_malloc(n * sizeof(float), err);
    if (!o) return NULL;
    const unsigned char *b = t->data;
    for (size_t i = 0; i < n; i++) {
        switch (t->dtype) {
        case CD_F32: memcpy(&o[i], b + 4 * i, 4); break;
        case CD_F16: {
            uint16_t h;
            memcpy(&h, b + 2 * i, 2);
            o[i] = cd_half_to_float(h);
            break;
        }
        case CD_I8: o[i] = (float)(int8_t)b[i]; break;
        case CD_U8: o[i] = (float)b[i]; break;
        case CD_BOOL: o[i] = b[i] ? 1.0f : 0.0f; break;
        case CD_I16: {
            int16_t v;
            memcpy(&v, b + 2 * i, 2);
            o[i] = (float)v;
            break;
        }
        case CD_I32: {
            int32_t v;
            memcpy(&v, b + 4 * i, 4);
            o[i] = (float)v;
            break;
        }
        case CD_I64: {
            int64_t v;
            memcpy(&v, b + 8 * i, 8);
            o[i] = (float)v;
            break;
        }
        case CD_F64: {
            double v;
            memcpy(&v, b + 8 * i, 8);
            o[i] = (float)v;
            break;
        }
        default: break;
        }
    }
    return o;
}
