/* A scalar field getter of fb.c, one body per type: the field's bytes when the table has it, the
 * default when the vtable leaves it out, an error when it lies outside the table.
 *
 * A part of fb.c's template body: included with FG_NAME (the function's name) and FG_T (the
 * field's type) defined, cd_fb_field in scope; #undefs both at its end (docs/design.md §7). */
#ifndef FG_T
#error "a part of fb.c's template body: included by fb.c only"
#endif

cd_status FG_NAME(cd_fb *fb, const cd_fb_table *t, int slot, FG_T dflt, FG_T *out, cd_error *err) {
    size_t o;
    *out = dflt;
    if (cd_fb_field(fb, t, slot, sizeof(FG_T), &o, err)) return err ? err->code : CD_E_MODEL;
    if (o) memcpy(out, fb->buf + o, sizeof(FG_T));
    return CD_OK;
}

#undef FG_NAME
#undef FG_T
