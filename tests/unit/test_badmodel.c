/* Hostile inputs: truncations, corrupted bytes and crafted field values must all fail with
 * CD_E_MODEL and a message naming the problem and its byte offset; never crash or leak
 * (run this binary under ASan: -DCLDIFF_SANITIZE=ON). Inputs are real and generated models
 * patched byte by byte, locating fields with the FlatBuffers reader itself. */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include "model/fb.h"
#include "model/nb_reader.h"
#include "model/nb_writer.h"

static uint8_t *slurp(const char *path, size_t *len) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    uint8_t *b = malloc((size_t)n);
    cr_assert(b);
    cr_assert_eq(fread(b, 1, (size_t)n, f), (size_t)n);
    fclose(f);
    *len = (size_t)n;
    return b;
}

static uint8_t *tiny(size_t *len) {
    uint8_t *b = slurp(CD_SOURCE_DIR "/testdata/mobilenet_tiny.nb", len);
    cr_assert(b, "testdata/mobilenet_tiny.nb missing (run cldiff_gen_testdata)");
    return b;
}

static const char *models_dir(void) {
    const char *e = getenv("CD_SHARED_MODELS");
    return e && *e ? e : CD_SOURCE_DIR "/../shared/models";
}

static uint8_t *shared(const char *file, size_t *len) {
    char p[4096];
    snprintf(p, sizeof p, "%s/%s", models_dir(), file);
    return slurp(p, len);
}

/* Loads and expects CD_E_MODEL with every needle in the message. */
static void expect_bad(const uint8_t *b, size_t len, const char *n1, const char *n2) {
    cd_graph *g = NULL;
    cd_error err = {0};
    cd_status st = cd_nb_load_mem(b, len, &g, &err);
    cr_assert_eq(st, CD_E_MODEL, "expected CD_E_MODEL, got %d (%s)", st, err.msg);
    cr_assert_null(g);
    if (n1) cr_assert(strstr(err.msg, n1), "message lacks '%s': %s", n1, err.msg);
    if (n2) cr_assert(strstr(err.msg, n2), "message lacks '%s': %s", n2, err.msg);
}

static void put32(uint8_t *p, uint32_t v) { memcpy(p, &v, 4); }
static void put64(uint8_t *p, uint64_t v) { memcpy(p, &v, 8); }

/* File position of the first parameter record's FlatBuffer, and its ParamDesc_.LoDTensorDesc. */
typedef struct {
    size_t sec, rec, fb_pos, fb_len;
    cd_fb fb;
    cd_fb_table root, lt;
} prec;

static void first_param(const uint8_t *b, size_t len, prec *r) {
    cd_error err = {0};
    r->sec = 26 + cd_ld_u64(b + 18);
    r->rec = r->sec + 12; /* reserved_len 0, header_len 6 in generated files */
    r->fb_pos = r->rec + 8;
    r->fb_len = cd_ld_u32(b + r->rec) - 4;
    cr_assert_eq(cd_fb_init(&r->fb, b + r->fb_pos, r->fb_len, r->fb_pos, "p", &err), CD_OK);
    cr_assert_eq(cd_fb_root(&r->fb, &r->root, &err), CD_OK);
    cr_assert_eq(cd_fb_sub(&r->fb, &r->root, 3, "variable", true, NULL, &r->lt, &err), CD_OK);
}

Test(badmodel, truncated_everywhere) {
    size_t len;
    uint8_t *b = tiny(&len);
    /* Every length near the ends, then a stride through the middle. */
    for (size_t n = 0; n < len; n += (n < 400 || n > len - 400) ? 1 : 13)
        expect_bad(b, n, n < 26 ? "26-byte" : "offset", NULL);
    free(b);
    b = shared("mask_detector_fp32_arm_meta0_7735976.nb", &len);
    if (!b) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    for (size_t n = 0; n < len; n += (n < 2000 ? 3 : 997)) expect_bad(b, n, NULL, NULL);
    free(b);
}

Test(badmodel, random_corruption_never_crashes) {
    size_t len;
    uint8_t *orig = tiny(&len);
    uint8_t *b = malloc(len);
    uint64_t s = 12345;
    int failures = 0;
    for (int trial = 0; trial < 3000; trial++) {
        memcpy(b, orig, len);
        for (int k = 0; k < 1 + trial % 4; k++) {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            size_t pos = 18 + (size_t)(s % (len - 18));
            b[pos] = (uint8_t)(s >> 32);
        }
        cd_graph *g = NULL;
        cd_error err = {0};
        cd_status st = cd_nb_load_mem(b, len, &g, &err);
        cr_assert(st == CD_OK || st == CD_E_MODEL, "trial %d: status %d (%s)", trial, st, err.msg);
        if (st) {
            failures++;
            cr_assert(err.msg[0], "trial %d: empty message", trial);
        }
        cd_graph_free(g);
    }
    cr_assert_gt(failures, 300, "corruption should usually be detected (%d)", failures);
    free(b);
    free(orig);
}

Test(badmodel, container_fields) {
    size_t len;
    uint8_t *b = tiny(&len);
    b[0] = 3;
    expect_bad(b, len, "meta_version 3", "offset 0");
    b[0] = 2;
    put64(b + 18, len); /* topology larger than the file */
    expect_bad(b, len, "topology size", "offset 18");
    put64(b + 18, 4);
    expect_bad(b, len, "topology size", "too small");
    free(b);
    b = tiny(&len);
    prec r;
    first_param(b, len, &r);
    b[r.sec] = 1; /* param_format_version */
    expect_bad(b, len, "format version 1", "offset");
    b[r.sec] = 0;
    uint32_t rl = cd_ld_u32(b + r.rec);
    put32(b + r.rec, 0x7ffffff0); /* record longer than the file */
    expect_bad(b, len, "record 0", "inconsistent");
    put32(b + r.rec, rl);
    put32(b + r.rec + 4, 2); /* fb_start < 4 */
    expect_bad(b, len, "fb_start 2", NULL);
    put32(b + r.rec + 4, 4);
    b[r.sec + 6] = 0xff; /* param_count 255: records run out */
    expect_bad(b, len, "parameter record", "offset");
    free(b);
}

Test(badmodel, trailing_bytes_warn) {
    size_t len;
    uint8_t *b = tiny(&len);
    uint8_t *c = calloc(1, len + 5);
    memcpy(c, b, len);
    cd_graph *g = NULL;
    cd_error err = {0};
    cr_assert_eq(cd_nb_load_mem(c, len + 5, &g, &err), CD_OK, "%s", err.msg);
    cr_assert(g->warnings && strstr(g->warnings, "5 trailing bytes"));
    cd_graph_free(g);
    free(c);
    free(b);
}

Test(badmodel, flatbuffer_structure) {
    size_t len;
    uint8_t *b = tiny(&len);
    uint32_t root = cd_ld_u32(b + 26);
    put32(b + 26, 0xfffffff0u);
    expect_bad(b, len, "root offset", "file offset 26");
    put32(b + 26, root + 2); /* misaligned table */
    expect_bad(b, len, "aligned", NULL);
    put32(b + 26, root);
    uint32_t so = cd_ld_u32(b + 26 + root);
    put32(b + 26 + root, 0x80000000u); /* vtable far outside */
    expect_bad(b, len, "vtable", "outside");
    put32(b + 26 + root, so);
    /* blocks vector with a huge element count */
    cd_fb fb;
    cd_fb_table t;
    cd_error err = {0};
    uint64_t topo = cd_ld_u64(b + 18);
    cr_assert_eq(cd_fb_init(&fb, b + 26, topo, 26, "t", &err), CD_OK);
    cr_assert_eq(cd_fb_root(&fb, &t, &err), CD_OK);
    size_t d;
    uint32_t c;
    cr_assert_eq(cd_fb_vec(&fb, &t, 0, "blocks", 4, &d, &c, &err), CD_OK);
    put32(b + 26 + d - 4, 0x40000000u);
    expect_bad(b, len, "claims 1073741824 elements", "offset");
    put32(b + 26 + d - 4, 0);
    expect_bad(b, len, "no blocks", NULL);
    put32(b + 26 + d - 4, c);
    /* ops vector: huge count */
    cd_fb_table blk;
    cr_assert_eq(cd_fb_vec_table(&fb, d, 0, 2, &blk, &err), CD_OK);
    size_t od;
    uint32_t oc;
    cr_assert_eq(cd_fb_vec(&fb, &blk, 3, "ops", 4, &od, &oc, &err), CD_OK);
    put32(b + 26 + od - 4, 0xffffffffu);
    expect_bad(b, len, "ops", "offset");
    put32(b + 26 + od - 4, oc);
    /* first op: break its type string's NUL, then make its attr type VAR */
    cd_fb_table op;
    cr_assert_eq(cd_fb_vec_table(&fb, od, 0, 3, &op, &err), CD_OK);
    const char *ty;
    uint32_t tl;
    cr_assert_eq(cd_fb_str(&fb, &op, 0, "type", true, &ty, &tl, &err), CD_OK);
    size_t nul = (size_t)(ty - (const char *)b) + tl;
    b[nul] = 'x';
    expect_bad(b, len, "NUL", "op #0");
    b[nul] = 0;
    b[nul - 1] = 0; /* embedded NUL */
    expect_bad(b, len, "embedded NUL", NULL);
    b[nul - 1] = 'd'; /* "feed" */
    cr_assert_eq(cd_fb_vec(&fb, &op, 3, "attrs", 4, &d, &c, &err), CD_OK);
    cd_fb_table at;
    cr_assert_eq(cd_fb_vec_table(&fb, d, 0, 4, &at, &err), CD_OK);
    /* point the vtable's "type" slot at the table's soffset field, whose value is not 13;
     * instead overwrite a field we know: set the vtable size to an odd number. */
    uint16_t vs = cd_ld_u16(b + 26 + at.vt);
    b[26 + at.vt] = (uint8_t)(vs | 1);
    expect_bad(b, len, "vtable size", "offset");
    b[26 + at.vt] = (uint8_t)vs;
    cd_graph *g = NULL;
    cr_assert_eq(cd_nb_load_mem(b, len, &g, &err), CD_OK, "restored file loads: %s", err.msg);
    cd_graph_free(g);
    free(b);
}

Test(badmodel, parameter_records) {
    size_t len;
    uint8_t *b = tiny(&len);
    prec r;
    first_param(b, len, &r);
    cd_error err = {0};
    size_t dd;
    uint32_t dc;
    cr_assert_eq(cd_fb_vec(&r.fb, &r.lt, 2, "dim", 8, &dd, &dc, &err), CD_OK);
    cr_assert_eq(dc, 1); /* "add.y" [32], first by name */
    uint8_t *dim = b + r.fb_pos + dd;
    int64_t d0;
    memcpy(&d0, dim, 8);
    put64(dim, (uint64_t)-5);
    expect_bad(b, len, "negative dimension -5", "offset");
    put64(dim, 64); /* shape needs 256 bytes, record has 128 */
    expect_bad(b, len, "needs 256 bytes", "holds only 128");
    put64(dim, (uint64_t)1 << 62);
    expect_bad(b, len, "overflow", "offset");
    put64(dim, (uint64_t)d0);
    /* dim count beyond rank limit */
    put32(dim - 4, 9);
    expect_bad(b, len, "rank limit", NULL);
    put32(dim - 4, 1);
    /* data_type 16 (undefined) via the LoDTensorDesc's data_type field (slot 3) */
    size_t off;
    cr_assert_eq(cd_fb_field(&r.fb, &r.lt, 3, 4, &off, &err), CD_OK);
    cr_assert_neq(off, 0, "FP32 data_type is stored (non-default)");
    int32_t dt;
    memcpy(&dt, b + r.fb_pos + off, 4);
    put32(b + r.fb_pos + off, 16);
    expect_bad(b, len, "data_type 16", "offset");
    put32(b + r.fb_pos + off, 6); /* FP64: defined but not storable */
    expect_bad(b, len, "data_type 6", NULL);
    put32(b + r.fb_pos + off, (uint32_t)dt);
    /* union tag */
    cr_assert_eq(cd_fb_field(&r.fb, &r.root, 2, 1, &off, &err), CD_OK);
    b[r.fb_pos + off] = 2;
    expect_bad(b, len, "variable_type 2", NULL);
    b[r.fb_pos + off] = 1;
    cd_graph *g = NULL;
    cr_assert_eq(cd_nb_load_mem(b, len, &g, &err), CD_OK, "restored file loads: %s", err.msg);
    cd_graph_free(g);
    free(b);
}

Test(badmodel, missing_and_duplicate_params) {
    size_t len;
    uint8_t *b = tiny(&len);
    prec r;
    first_param(b, len, &r);
    uint16_t n = cd_ld_u16(b + r.sec + 6);
    /* One record fewer: "pw.w" (last by name) loses its record and becomes trailing bytes. */
    b[r.sec + 6] = (uint8_t)(n - 1);
    b[r.sec + 7] = (uint8_t)((n - 1) >> 8);
    expect_bad(b, len, "no parameter record", "'pw.w'");
    free(b);
}

Test(badmodel, meta0_counts) {
    size_t len;
    uint8_t *b = shared("mask_detector_fp32_arm_meta0_7735976.nb", &len);
    if (!b) cr_skip_test("SKIPPED: shared models folder %s not found", models_dir());
    uint64_t blocks;
    memcpy(&blocks, b + 26, 8);
    put64(b + 26, (uint64_t)1 << 60);
    expect_bad(b, len, "count", "file offset 26");
    put64(b + 26, blocks);
    uint64_t topo = cd_ld_u64(b + 18);
    size_t ps = 26 + topo;
    put64(b + ps, 1000000);
    expect_bad(b, len, "parameter count 1000000", "offset");
    put64(b + ps, 46);
    put64(b + 18, topo - 1);
    expect_bad(b, len, "meta-0", NULL);
    put64(b + 18, topo);
    cd_graph *g = NULL;
    cd_error err = {0};
    cr_assert_eq(cd_nb_load_mem(b, len, &g, &err), CD_OK, "%s", err.msg);
    cd_graph_free(g);
    free(b);
}

Test(badmodel, null_and_tiny_buffers) {
    expect_bad(NULL, 0, "26-byte", NULL);
    uint8_t z[26] = {2};
    expect_bad(z, sizeof z, "topology size", NULL);
}
