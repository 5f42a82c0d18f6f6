/* The helpers the detection ops (ops_detect_*.c) share: loading any tensor as float and
 * storing floats into one, whatever its element type. Declared again where used (the family has
 * no private header); apart from ops_detect_table.c so that the kernels do not call the table
 * that lists them. */
#include "engine/ops.h"
#include "util/fp16.h"
#include <string.h>

/* Copies every element of v into dst as float. Float types only (f32, f16, f64) plus the
 * integer types, converted exactly where representable. */
void cd_detect_load_f32(const cd_value *v, float *dst, int64_t n) {
    switch (v->dtype) {
    case CD_F32: memcpy(dst, v->data, (size_t)n * sizeof(float)); return;
    case CD_F16: {
        const uint16_t *p = v->data;
        for (int64_t i = 0; i < n; i++) dst[i] = cd_half_to_float(p[i]);
        return;
    }
    default:
        for (int64_t i = 0; i < n; i++) dst[i] = (float)cd_value_get(v, i);
        return;
    }
}

/* Writes n floats into v (f32 as is, f16 rounded to nearest even, others via cd_value_set). */
void cd_detect_store_f32(cd_value *v, int64_t off, const float *src, int64_t n) {
    switch (v->dtype) {
    case CD_F32: memcpy((float *)v->data + off, src, (size_t)n * sizeof(float)); return;
    case CD_F16: {
        uint16_t *p = (uint16_t *)v->data + off;
        for (int64_t i = 0; i < n; i++) p[i] = cd_float_to_half(src[i]);
        return;
    }
    default:
        for (int64_t i = 0; i < n; i++) cd_value_set(v, off + i, src[i]);
        return;
    }
}
