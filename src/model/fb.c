/* Bounds-checked FlatBuffers reader. All arithmetic on positions is done in size_t after
 * checking against len, so no intermediate can wrap (len < 2^31). */
#include "model/fb.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#define FB_MAX_SIZE 0x7ffffffeu /* 2^31 - 2: buffer size must be < 2^31 - 1 */

cd_status cd_fb_fail(cd_fb *fb, size_t pos, cd_error *err, const char *fmt, ...) {
    char m[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(m, sizeof m, fmt, ap);
    va_end(ap);
    return cd_err(err, CD_E_MODEL, "corrupt %s FlatBuffer: %s (buffer offset %zu, file offset %zu)", fb->what, m, pos,
                  fb->base + pos);
}

cd_status cd_fb_init(cd_fb *fb, const uint8_t *buf, size_t len, size_t base, const char *what, cd_error *err) {
    fb->buf = buf;
    fb->len = len;
    fb->base = base;
    fb->what = what;
    fb->visits = 0;
    if (len < 12) return cd_fb_fail(fb, 0, err, "buffer is %zu bytes, smaller than the minimum 12", len);
    if (len > FB_MAX_SIZE) return cd_fb_fail(fb, 0, err, "buffer is %zu bytes, over the 2 GiB FlatBuffers limit", len);
    return CD_OK;
}

static cd_status visit(cd_fb *fb, size_t pos, cd_error *err) {
    if (++fb->visits > CD_FB_MAX_VISITS)
        return cd_fb_fail(fb, pos, err, "more than %ld tables/strings/vectors visited (shared-reference bomb?)",
                          (long)CD_FB_MAX_VISITS);
    return CD_OK;
}

cd_status cd_fb_table_at(cd_fb *fb, size_t pos, int depth, cd_fb_table *t, cd_error *err) {
    if (depth > CD_FB_MAX_DEPTH) return cd_fb_fail(fb, pos, err, "tables nested deeper than %d", CD_FB_MAX_DEPTH);
    if (visit(fb, pos, err)) return err ? err->code : CD_E_MODEL;
    if (pos > fb->len || fb->len - pos < 4) return cd_fb_fail(fb, pos, err, "table starts outside the buffer");
    if (pos & 3) return cd_fb_fail(fb, pos, err, "table is not 4-byte aligned");
    int32_t so = (int32_t)cd_ld_u32(fb->buf + pos);
    int64_t v = (int64_t)pos - (int64_t)so;
    if (v < 0 || v > (int64_t)fb->len - 4)
        return cd_fb_fail(fb, pos, err, "vtable (at %lld) lies outside the buffer", (long long)v);
    if (v & 1) return cd_fb_fail(fb, pos, err, "vtable at %lld is not 2-byte aligned", (long long)v);
    uint16_t vs = cd_ld_u16(fb->buf + v), os = cd_ld_u16(fb->buf + v + 2);
    if ((vs & 1) || vs < 4) return cd_fb_fail(fb, (size_t)v, err, "vtable size %u is invalid", vs);
    if ((uint64_t)v + vs > fb->len)
        return cd_fb_fail(fb, (size_t)v, err, "vtable of %u bytes runs past the buffer end", vs);
    if (os < 4) return cd_fb_fail(fb, pos, err, "table object size %u is smaller than 4", os);
    if ((uint64_t)pos + os > fb->len) return cd_fb_fail(fb, pos, err, "table of %u bytes runs past the buffer end", os);
    t->pos = pos;
    t->vt = (size_t)v;
    t->vt_size = vs;
    t->obj_size = os;
    t->depth = depth;
    return CD_OK;
}

cd_status cd_fb_root(cd_fb *fb, cd_fb_table *t, cd_error *err) {
    uint32_t r = cd_ld_u32(fb->buf);
    if (r == 0 || r >= 0x80000000u || r >= fb->len)
        return cd_fb_fail(fb, 0, err, "root offset %u points outside the buffer (size %zu)", r, fb->len);
    return cd_fb_table_at(fb, r, 1, t, err);
}

cd_status cd_fb_field(cd_fb *fb, const cd_fb_table *t, int slot, size_t size, size_t *off, cd_error *err) {
    *off = 0;
    size_t e = 4 + 2 * (size_t)slot;
    if (e + 2 > t->vt_size) return CD_OK; /* beyond the vtable: absent */
    uint16_t o = cd_ld_u16(fb->buf + t->vt + e);
    if (!o) return CD_OK;
    if (o < 4 || (size_t)o + size > t->obj_size)
        return cd_fb_fail(fb, t->pos, err, "field %d at table offset %u (size %zu) lies outside the table's %u bytes",
                          slot, o, size, t->obj_size);
    *off = t->pos + o;
    return CD_OK;
}

/* The integer field getters, one body per type (fb_getter_tmpl.h). */
#define FG_NAME cd_fb_i32
#define FG_T int32_t
#include "fb_getter_tmpl.h"
#define FG_NAME cd_fb_i64
#define FG_T int64_t
#include "fb_getter_tmpl.h"
#define FG_NAME cd_fb_u8
#define FG_T uint8_t
#include "fb_getter_tmpl.h"

cd_status cd_fb_f32(cd_fb *fb, const cd_fb_table *t, int slot, float *out, cd_error *err) {
    size_t o;
    *out = 0.0f;
    if (cd_fb_field(fb, t, slot, 4, &o, err)) return err ? err->code : CD_E_MODEL;
    if (o) memcpy(out, fb->buf + o, 4);
    return CD_OK;
}

cd_status cd_fb_f64(cd_fb *fb, const cd_fb_table *t, int slot, double *out, cd_error *err) {
    size_t o;
    *out = 0.0;
    if (cd_fb_field(fb, t, slot, 8, &o, err)) return err ? err->code : CD_E_MODEL;
    if (o) memcpy(out, fb->buf + o, 8);
    return CD_OK;
}

/* A uoffset stored at position f: checks rule 13 and returns the target. */
static cd_status follow(cd_fb *fb, size_t f, size_t *target, cd_error *err) {
    if (f & 3) return cd_fb_fail(fb, f, err, "reference is not 4-byte aligned");
    if (f > fb->len || fb->len - f < 4) return cd_fb_fail(fb, f, err, "reference lies outside the buffer");
    uint32_t u = cd_ld_u32(fb->buf + f);
    if (u == 0 || u >= 0x80000000u || (uint64_t)f + u >= fb->len)
        return cd_fb_fail(fb, f, err, "reference value %u points outside the buffer (size %zu)", u, fb->len);
    *target = f + u;
    return CD_OK;
}

cd_status cd_fb_ref(cd_fb *fb, const cd_fb_table *t, int slot, bool *present, size_t *target, cd_error *err) {
    size_t o;
    *present = false;
    if (cd_fb_field(fb, t, slot, 4, &o, err)) return err ? err->code : CD_E_MODEL;
    if (!o) return CD_OK;
    if (follow(fb, o, target, err)) return err ? err->code : CD_E_MODEL;
    *present = true;
    return CD_OK;
}

cd_status cd_fb_sub(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, bool required, bool *present,
                    cd_fb_table *sub, cd_error *err) {
    size_t tg;
    bool pr;
    if (cd_fb_ref(fb, t, slot, &pr, &tg, err)) return err ? err->code : CD_E_MODEL;
    if (present) *present = pr;
    if (!pr) {
        if (required) return cd_fb_fail(fb, t->pos, err, "required field '%s' is missing", field);
        return CD_OK;
    }
    return cd_fb_table_at(fb, tg, t->depth + 1, sub, err);
}

static cd_status string_at(cd_fb *fb, size_t p, const char **s, uint32_t *len, cd_error *err) {
    if (visit(fb, p, err)) return err ? err->code : CD_E_MODEL;
    if (p & 3) return cd_fb_fail(fb, p, err, "string length prefix is not 4-byte aligned");
    if (p > fb->len || fb->len - p < 4) return cd_fb_fail(fb, p, err, "string length prefix lies outside the buffer");
    uint32_t n = cd_ld_u32(fb->buf + p);
    if ((uint64_t)n + 5 > fb->len - p) return cd_fb_fail(fb, p, err, "string of %u bytes runs past the buffer end", n);
    const char *c = (const char *)fb->buf + p + 4;
    if (c[n] != 0) return cd_fb_fail(fb, p, err, "string is not NUL-terminated");
    if (memchr(c, 0, n)) return cd_fb_fail(fb, p, err, "string contains an embedded NUL byte");
    *s = c;
    if (len) *len = n;
    return CD_OK;
}

cd_status cd_fb_str(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, bool required, const char **s,
                    uint32_t *len, cd_error *err) {
    size_t tg;
    bool pr;
    *s = NULL;
    if (len) *len = 0;
    if (cd_fb_ref(fb, t, slot, &pr, &tg, err)) return err ? err->code : CD_E_MODEL;
    if (!pr) {
        if (required) return cd_fb_fail(fb, t->pos, err, "required string '%s' is missing", field);
        return CD_OK;
    }
    if (string_at(fb, tg, s, len, err)) return cd_err_prefix(err, "field '%s': ", field);
    return CD_OK;
}

cd_status cd_fb_vec(cd_fb *fb, const cd_fb_table *t, int slot, const char *field, size_t elem_size, size_t *data,
                    uint32_t *count, cd_error *err) {
    size_t p;
    bool pr;
    *data = 0;
    *count = 0;
    if (cd_fb_ref(fb, t, slot, &pr, &p, err)) return err ? err->code : CD_E_MODEL;
    if (!pr) return CD_OK;
    if (visit(fb, p, err)) return err ? err->code : CD_E_MODEL;
    if (p & 3) return cd_fb_fail(fb, p, err, "vector '%s' length prefix is not 4-byte aligned", field);
    if (p > fb->len || fb->len - p < 4)
        return cd_fb_fail(fb, p, err, "vector '%s' length prefix lies outside the buffer", field);
    uint32_t c = cd_ld_u32(fb->buf + p);
    if ((uint64_t)c > (fb->len - p - 4) / elem_size)
        return cd_fb_fail(fb, p, err, "vector '%s' claims %u elements of %zu bytes, more than the %zu bytes left",
                          field, c, elem_size, fb->len - p - 4);
    *data = p + 4;
    *count = c;
    return CD_OK;
}

cd_status cd_fb_vec_table(cd_fb *fb, size_t data, uint32_t i, int depth, cd_fb_table *out, cd_error *err) {
    size_t tg;
    if (follow(fb, data + 4 * (size_t)i, &tg, err)) return err ? err->code : CD_E_MODEL;
    return cd_fb_table_at(fb, tg, depth, out, err);
}

cd_status cd_fb_vec_str(cd_fb *fb, size_t data, uint32_t i, const char **s, uint32_t *len, cd_error *err) {
    size_t tg;
    if (follow(fb, data + 4 * (size_t)i, &tg, err)) return err ? err->code : CD_E_MODEL;
    return string_at(fb, tg, s, len, err);
}
