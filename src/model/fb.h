/* Bounds-checked FlatBuffers reader (docs/nb-format.md §2, §2.11, §8.2).
 *
 * Every position is relative to the start of the FlatBuffer being read (alignment checks
 * too); messages report both that position and the file offset (base + position). All
 * loads go through memcpy, so the buffer may sit at any address. */
#ifndef CD_FB_H
#define CD_FB_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

#define CD_FB_MAX_DEPTH 64
#define CD_FB_MAX_VISITS 4000000L

typedef struct cd_fb {
    const uint8_t *buf;
    size_t len;
    size_t base;      /* file offset of buf[0] */
    const char *what; /* "topology", "parameter record 3", ... */
    long visits;      /* tables + strings + vectors opened so far */
} cd_fb;

typedef struct cd_fb_table {
    size_t pos; /* table start */
    size_t vt;  /* vtable start */
    uint16_t vt_size, obj_size;
    int depth;
} cd_fb_table;

static inline uint16_t cd_ld_u16(const uint8_t *p) {
    uint16_t v;
    __builtin_memcpy(&v, p, 2);
    return v;
}
static inline uint32_t cd_ld_u32(const uint8_t *p) {
    uint32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
}
static inline uint64_t cd_ld_u64(const uint8_t *p) {
    uint64_t v;
    __builtin_memcpy(&v, p, 8);
    return v;
}

/* Checks size limits; len must be >= 12 and < 2^31-1. */
cd_status cd_fb_init(cd_fb *fb, const uint8_t *buf, size_t len, size_t base, const char *what, cd_error *err);
/* Opens the root table. */
cd_status cd_fb_root(cd_fb *fb, cd_fb_table *t, cd_error *err);
/* Opens the table at pos (checked per §8.2 rule 11). */
cd_status cd_fb_table_at(cd_fb *fb, size_t pos, int depth, cd_fb_table *t, cd_error *err);

/* Offset of slot's inline data inside the table, 0 when absent. Checks o >= 4 and
 * o + size <= object_size (size = inline size of the field). */
cd_status cd_fb_field(cd_fb *fb, const cd_fb_table *t, int slot, size_t size, size_t *off, cd_error *err);

/* Scalars: *out keeps dflt when absent. */
cd_status cd_fb_i32(cd_fb *fb, const cd_fb_table *t, int slot, int32_t dflt, int32_t *out, cd_error *err);
cd_status cd_fb_i64(cd_fb *fb, const cd_fb_table *t, int slot, int64_t dflt, int64_t *out, cd_error *err);
cd_status cd_fb_u8(cd_fb *fb, const cd_fb_table *t, int slot, uint8_t dflt, uint8_t *out, cd_error *err);
cd_status cd_fb_f32(cd_fb *fb, const cd_fb_table *t, int slot, float *out, cd_error *err);
cd_status cd_fb_f64(cd_fb *fb, const cd_fb_table *t, int slot, double *out, cd_error *err);

/* Reference field target (rule 13); *present false when absent. */
cd_status cd_fb_ref(cd_fb *fb, const cd_fb_table *t, int slot, bool *present, size_t *target, cd_error *err);

/* Sub-table field. Missing + required -> error naming `field`. */
cd_status cd_fb_sub(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, bool required, bool *present,
                    cd_fb_table *sub, cd_error *err);

/* String field: *s points into the buffer, NUL-terminated, no embedded NUL (rule 14).
 * Absent: *s = NULL (error if required). */
cd_status cd_fb_str(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, bool required, const char **s,
                    uint32_t *len, cd_error *err);

/* Vector field with elem_size-byte elements (4 for tables/strings): *data = first element,
 * *count; absent -> count 0 (rule 18). */
cd_status cd_fb_vec(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, size_t elem_size, size_t *data,
                    uint32_t *count, cd_error *err);
/* Element i of a vector of tables / strings. */
cd_status cd_fb_vec_table(cd_fb *fb, size_t data, uint32_t i, int depth, cd_fb_table *out, cd_error *err);
cd_status cd_fb_vec_str(cd_fb *fb, size_t data, uint32_t i, const char **s, uint32_t *len, cd_error *err);

/* Formats a failure at buffer position pos. */
cd_status cd_fb_fail(cd_fb *fb, size_t pos, cd_error *err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
#endif
