/* .npy reader/writer (round trips, numpy-written bytes, hostile headers) and SHA-256
 * known-answer vectors (both live in util/). */
#include <criterion/criterion.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "util/npy.h"
#include "util/sha256.h"

static cd_status parse(const char *bytes, size_t n, cd_value *v, cd_error *e) {
    return cd_npy_parse(bytes, n, "t.npy", v, e);
}

/* Builds a v1.0 file image from a header dict and payload. */
static size_t mkfile(char *buf, const char *dict, const void *data, size_t dn) {
    size_t hl = strlen(dict);
    memcpy(buf, "\x93NUMPY\x01\x00", 8);
    buf[8] = (char)(hl & 0xff);
    buf[9] = (char)(hl >> 8);
    memcpy(buf + 10, dict, hl);
    if (dn) memcpy(buf + 10 + hl, data, dn);
    return 10 + hl + dn;
}

Test(npy, round_trip_all_dtypes) {
    char path[] = "/tmp/cd_test_npy_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_geq(fd, 0);
    close(fd);
    cd_dtype types[] = {CD_F32, CD_F16, CD_F64, CD_I32, CD_I64, CD_U8, CD_I8, CD_BOOL, CD_I16};
    unsigned char raw[6 * 8];
    for (size_t i = 0; i < sizeof raw; i++) raw[i] = (unsigned char)(i * 37 + 1);
    for (size_t t = 0; t < sizeof types / sizeof types[0]; t++) {
        cd_value v = {.dtype = types[t], .shape = {2, {2, 3}}, .data = raw};
        v.nbytes = 6 * cd_dtype_size(types[t]);
        if (types[t] == CD_BOOL) memset(raw, 1, 6);
        cd_error e = {0};
        cr_assert_eq(cd_npy_write(path, &v, &e), CD_OK, "%s", e.msg);
        cd_value b;
        cr_assert_eq(cd_npy_read(path, &b, &e), CD_OK, "%s: %s", cd_dtype_name(types[t]), e.msg);
        cr_assert_eq(b.dtype, types[t]);
        cr_assert_eq(b.shape.rank, 2);
        cr_assert_eq(b.shape.d[1], 3);
        cr_assert_eq(b.nbytes, v.nbytes);
        cr_assert_eq(memcmp(b.data, raw, v.nbytes), 0);
        cd_value_release(&b);
        /* data starts at a multiple of 64 like numpy's files */
        FILE *f = fopen(path, "rb");
        fseek(f, 0, SEEK_END);
        cr_assert_eq((ftell(f) - (long)v.nbytes) % 64, 0);
        fclose(f);
    }
    /* rank 0 and rank 1 headers */
    float one = 2.5f;
    cd_value s = {.dtype = CD_F32, .shape = {0, {0}}, .data = &one, .nbytes = 4};
    cd_error e;
    cr_assert_eq(cd_npy_write(path, &s, &e), CD_OK);
    cd_value b;
    cr_assert_eq(cd_npy_read(path, &b, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(b.shape.rank, 0);
    cr_assert_eq(*(float *)b.data, 2.5f);
    cd_value_release(&b);
    unlink(path);
}

Test(npy, reads_numpy_style_headers) {
    char buf[256];
    float d[3] = {1, 2, 3};
    /* exactly what numpy 1.x writes for np.array([1,2,3], 'f4') (padding shortened) */
    size_t n = mkfile(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }         \n", d, 12);
    cd_value v;
    cd_error e;
    cr_assert_eq(parse(buf, n, &v, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(v.shape.rank, 1);
    cr_assert_eq(((float *)v.data)[2], 3.0f);
    cd_value_release(&v);
    /* key order, double quotes, version 2.0 */
    char b2[256];
    const char *dict = "{\"shape\": (1, 3), \"fortran_order\": False, \"descr\": \"<f4\"}\n";
    size_t hl = strlen(dict);
    memcpy(b2, "\x93NUMPY\x02\x00", 8);
    b2[8] = (char)hl;
    b2[9] = 0;
    b2[10] = 0;
    b2[11] = 0;
    memcpy(b2 + 12, dict, hl);
    memcpy(b2 + 12 + hl, d, 12);
    cr_assert_eq(parse(b2, 12 + hl + 12, &v, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(v.shape.d[1], 3);
    cd_value_release(&v);
}

static void hostile(const char *dict, const void *data, size_t dn, const char *needle) {
    char buf[512];
    size_t n = mkfile(buf, dict, data, dn);
    cd_value v;
    cd_error e = {0};
    cr_assert_eq(parse(buf, n, &v, &e), CD_E_MODEL, "header %s accepted", dict);
    cr_assert(strstr(e.msg, needle), "header %s: message '%s' lacks '%s'", dict, e.msg, needle);
    cr_assert(strstr(e.msg, "t.npy"), "%s", e.msg);
}

Test(npy, hostile_headers) {
    float d[4] = {0};
    hostile("{'descr': '>f4', 'fortran_order': False, 'shape': (4,), }", d, 16, "unsupported dtype '>f4'");
    hostile("{'descr': '<c8', 'fortran_order': False, 'shape': (2,), }", d, 16, "unsupported dtype");
    hostile("{'descr': '<f4', 'fortran_order': True, 'shape': (4,), }", d, 16, "fortran_order True");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (5,), }", d, 16, "only 16 data bytes");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", d, 16, "corrupt");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, 9999999999), }", d, 16,
            "data bytes");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", d, 4, "more than 8");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (-4,), }", d, 16, "expected a dimension");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,) ", d, 16, "expected ',' or '}'");
    hostile("{'descr': '<f4', 'fortran_order': False}", d, 16, "lacks 'shape'");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'evil': 1}", d, 16, "unexpected key 'evil'");
    hostile("{'descr': '<f4, 'fortran_order': False, 'shape': (4,)}", d, 16, "unsupported dtype '<f4, '");
    hostile("{'descr' '<f4'}", d, 16, "expected ':' after key 'descr'");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,)} junk", d, 16, "trailing bytes");
    hostile("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), 'descr\\x': 1}", d, 16, "escape");
    hostile("['descr']", d, 16, "must start with '{'");
    hostile("{'descrdescrdescrdescrdescrdescrdescrdescr': 1}", d, 16, "string longer");
    /* header length beyond the file, bad magic, bad version, truncated */
    char buf[64];
    size_t n = mkfile(buf, "{}", NULL, 0);
    buf[8] = (char)0xff;
    cd_value v;
    cd_error e;
    cr_assert_eq(parse(buf, n, &v, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "runs past the end"), "%s", e.msg);
    cr_assert_eq(parse("\x93NUMPX\x01\x00\x00\x00", 10, &v, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "magic"), "%s", e.msg);
    cr_assert_eq(parse("\x93NUMPY\x09\x00\x00\x00", 10, &v, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "version 9.0"), "%s", e.msg);
    cr_assert_eq(parse("\x93NUM", 4, &v, &e), CD_E_MODEL);
    cr_assert_eq(parse("\x93NUMPY\x02\x00\x00", 9, &v, &e), CD_E_MODEL);
    /* an embedded NUL / non-ASCII byte */
    n = mkfile(buf, "{'descr'\x01", NULL, 0);
    buf[13] = 0;
    cr_assert_eq(parse(buf, n, &v, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "byte 13"), "%s", e.msg);
    cr_assert_eq(cd_npy_read("/nonexistent.npy", &v, &e), CD_E_USAGE);
}

/* Every prefix of a valid file must be rejected cleanly (no crash, no over-read under ASan). */
Test(npy, every_truncation_rejected) {
    char buf[256];
    float d[3] = {1, 2, 3};
    size_t n = mkfile(buf, "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }\n", d, 12);
    for (size_t k = 0; k < n; k++) {
        char *copy = malloc(k ? k : 1);
        memcpy(copy, buf, k);
        cd_value v;
        cd_error e;
        cr_assert_eq(cd_npy_parse(copy, k, "t.npy", &v, &e), CD_E_MODEL, "prefix %zu accepted", k);
        free(copy);
    }
}

static void sha_hex(const char *msg, size_t n, char *hex) {
    uint8_t d[32];
    cd_sha256(msg, n, d);
    cd_sha256_hex(d, hex);
}

/* The SHA-extension compression function (sha256.c, picked at run time) against the portable
 * one (CLDIFF_SHA256=generic): every length 0..320 and a 1 MB buffer fed in uneven pieces. */
static void sha_both(const uint8_t *p, size_t n, size_t piece, char ni[65], char gen[65]) {
    for (int pass = 0; pass < 2; pass++) {
        if (pass) setenv("CLDIFF_SHA256", "generic", 1);
        cd_sha256_ctx c;
        cd_sha256_init(&c);
        for (size_t o = 0; o < n; o += piece) cd_sha256_update(&c, p + o, n - o < piece ? n - o : piece);
        uint8_t d[32];
        cd_sha256_final(&c, d);
        cd_sha256_hex(d, pass ? gen : ni);
        unsetenv("CLDIFF_SHA256");
    }
}

Test(sha256, sha_ni_matches_generic) {
    unsetenv("CLDIFF_SHA256");
    if (strcmp(cd_sha256_impl(), "sha-ni"))
        cr_skip_test("this CPU has no SHA extensions: only the portable SHA-256 runs (known_vectors tests it)");
    setenv("CLDIFF_SHA256", "generic", 1);
    cr_assert_str_eq(cd_sha256_impl(), "generic");
    unsetenv("CLDIFF_SHA256");
    size_t n = 1 << 20;
    uint8_t *buf = malloc(n);
    uint32_t r = 2463534242u;
    for (size_t i = 0; i < n; i++) {
        r ^= r << 13;
        r ^= r >> 17;
        r ^= r << 5;
        buf[i] = (uint8_t)r;
    }
    char a[65], b[65];
    for (size_t len = 0; len <= 320; len++) {
        sha_both(buf + len, len, len ? len : 1, a, b);
        cr_assert_str_eq(a, b, "length %zu: sha-ni %s, generic %s", len, a, b);
    }
    sha_both(buf, n, 1000, a, b);
    cr_assert_str_eq(a, b, "1 MB in 1000-byte pieces: sha-ni %s, generic %s", a, b);
    sha_both(buf, n, n, a, b);
    cr_assert_str_eq(a, b, "1 MB at once: sha-ni %s, generic %s", a, b);
    free(buf);
}

Test(sha256, known_vectors) {
    char hex[65];
    sha_hex("", 0, hex);
    cr_assert_str_eq(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    sha_hex("abc", 3, hex);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    const char *m2 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_hex(m2, strlen(m2), hex);
    cr_assert_str_eq(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    /* one million 'a', fed in uneven pieces through the streaming interface */
    cd_sha256_ctx c;
    cd_sha256_init(&c);
    char a[1000];
    memset(a, 'a', sizeof a);
    size_t left = 1000000, step = 1;
    while (left) {
        size_t k = step < left ? step : left;
        if (k > sizeof a) k = sizeof a;
        cd_sha256_update(&c, a, k);
        left -= k;
        step = step * 3 % 997 + 1;
    }
    uint8_t d[32];
    cd_sha256_final(&c, d);
    cd_sha256_hex(d, hex);
    cr_assert_str_eq(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
    /* 55/56/64-byte boundaries of the padding */
    char b[64];
    memset(b, 'x', sizeof b);
    static const struct {
        size_t n;
        const char *want;
    } v[] = {/* from Python hashlib */
             {55, "d5e285683cd4efc02d021a5c62014694958901005d6f71e89e0989fac77e4072"},
             {56, "04c26261370ee7541549d16dee320c723e3fd14671e66a099afe0a377c16888e"},
             {63, "75220b47218278e656f2013bb8f0c455a25eaf01e86c64924e9d48d89776d6f2"},
             {64, "7ce100971f64e7001e8fe5a51973ecdfe1ced42befe7ee8d5fd6219506b5393c"}};
    for (int i = 0; i < 4; i++) {
        sha_hex(b, v[i].n, hex);
        cr_assert_str_eq(hex, v[i].want, "%zu bytes", v[i].n);
    }
}

Test(sha256, file_and_missing) {
    char path[] = "/tmp/cd_test_sha_XXXXXX";
    int fd = mkstemp(path);
    cr_assert_eq(write(fd, "abc", 3), 3);
    close(fd);
    char hex[65];
    cd_error e;
    cr_assert_eq(cd_sha256_file(path, hex, &e), CD_OK, "%s", e.msg);
    cr_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    unlink(path);
    cr_assert_eq(cd_sha256_file(path, hex, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, path), "%s", e.msg);
}
