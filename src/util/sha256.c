/* SHA-256 written from the FIPS 180-4 definition; on x86-64 CPUs with the SHA extensions the
 * compression function runs on them (sha256rnds2 / sha256msg1 / sha256msg2, picked at run
 * time: the same digest, ~5x faster: the model hash at load was 31% of a whole ppocr_v3_det
 * run's instructions). CLDIFF_SHA256=generic keeps the portable code (tests compare both). */
#include "util/sha256.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define SHA_X86 1
#include <cpuid.h>
#include <immintrin.h>
#endif

static const uint32_t K[64] = {
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2};

static inline uint32_t ror(uint32_t x, int n) { return (x >> n) | (x << (32 - n)); }

static void block(uint32_t h[8], const uint8_t *p) {
    uint32_t w[64];
    for (int i = 0; i < 16; i++)
        w[i] = (uint32_t)p[4 * i] << 24 | (uint32_t)p[4 * i + 1] << 16 | (uint32_t)p[4 * i + 2] << 8 |
            (uint32_t)p[4 * i + 3];
    for (int i = 16; i < 64; i++) {
        uint32_t s0 = ror(w[i - 15], 7) ^ ror(w[i - 15], 18) ^ (w[i - 15] >> 3);
        uint32_t s1 = ror(w[i - 2], 17) ^ ror(w[i - 2], 19) ^ (w[i - 2] >> 10);
        w[i] = w[i - 16] + s0 + w[i - 7] + s1;
    }
    uint32_t a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], hh = h[7];
    for (int i = 0; i < 64; i++) {
        uint32_t t1 = hh + (ror(e, 6) ^ ror(e, 11) ^ ror(e, 25)) + ((e & f) ^ (~e & g)) + K[i] + w[i];
        uint32_t t2 = (ror(a, 2) ^ ror(a, 13) ^ ror(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));
        hh = g;
        g = f;
        f = e;
        e = d + t1;
        d = c;
        c = b;
        b = a;
        a = t1 + t2;
    }
    h[0] += a;
    h[1] += b;
    h[2] += c;
    h[3] += d;
    h[4] += e;
    h[5] += f;
    h[6] += g;
    h[7] += hh;
}

#ifdef SHA_X86
/* n 64-byte blocks with the SHA extensions. The state lives as ABEF and CDGH (the lanes
 * sha256rnds2 takes); every 4 rounds the message words (byte-swapped to big-endian) plus their
 * K constants feed two sha256rnds2, and words 16..63 come from sha256msg1 (the sigma0 part),
 * the w[t-7] term and sha256msg2 (sigma1). */
__attribute__((target("sha,sse4.1,ssse3"))) static void blocks_ni(uint32_t h[8], const uint8_t *p, size_t n) {
    const __m128i bswap = _mm_set_epi64x(0x0c0d0e0f08090a0bULL, 0x0405060700010203ULL);
    __m128i dcba = _mm_loadu_si128((const __m128i *)h), hgfe = _mm_loadu_si128((const __m128i *)(h + 4));
    const __m128i badc = _mm_shuffle_epi32(dcba, 0xb1); /* lanes B A D C (low to high) */
    const __m128i efgh = _mm_shuffle_epi32(hgfe, 0x1b); /* lanes H G F E */
    __m128i abef = _mm_alignr_epi8(badc, efgh, 8);      /* F E B A */
    __m128i cdgh = _mm_blend_epi16(efgh, badc, 0xf0);   /* H G D C */
    for (; n > 0; n--, p += 64) {
        const __m128i abef0 = abef, cdgh0 = cdgh;
        __m128i m[4];
        for (int i = 0; i < 16; i++) {
            __m128i w;
            if (i < 4) {
                w = _mm_shuffle_epi8(_mm_loadu_si128((const __m128i *)(p + 16 * i)), bswap);
            } else { /* words 4i..4i+3 from the previous 16 */
                w = _mm_sha256msg1_epu32(m[i & 3], m[(i + 1) & 3]);
                w = _mm_add_epi32(w, _mm_alignr_epi8(m[(i + 3) & 3], m[(i + 2) & 3], 4));
                w = _mm_sha256msg2_epu32(w, m[(i + 3) & 3]);
            }
            m[i & 3] = w;
            __m128i wk = _mm_add_epi32(w, _mm_loadu_si128((const __m128i *)(K + 4 * i)));
            cdgh = _mm_sha256rnds2_epu32(cdgh, abef, wk); /* rounds 4i, 4i+1: the new ABEF */
            wk = _mm_shuffle_epi32(wk, 0x0e);
            abef = _mm_sha256rnds2_epu32(abef, cdgh, wk); /* rounds 4i+2, 4i+3 */
        }
        abef = _mm_add_epi32(abef, abef0);
        cdgh = _mm_add_epi32(cdgh, cdgh0);
    }
    const __m128i feba = _mm_shuffle_epi32(abef, 0x1b);                   /* A B E F */
    const __m128i dchg = _mm_shuffle_epi32(cdgh, 0xb1);                   /* G H C D */
    _mm_storeu_si128((__m128i *)h, _mm_blend_epi16(feba, dchg, 0xf0));    /* A B C D */
    _mm_storeu_si128((__m128i *)(h + 4), _mm_alignr_epi8(dchg, feba, 8)); /* E F G H */
}

static int have_ni(void) {
    unsigned a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_SSE4_1) || !(c & bit_SSSE3)) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b >> 29) & 1; /* CPUID.(EAX=7,ECX=0):EBX.SHA[bit 29] */
}
#endif

/* 1: blocks_ni, 0: block; chosen per context at init (CLDIFF_SHA256=generic: 0) */
static int pick_impl(void) {
#ifdef SHA_X86
    const char *e = getenv("CLDIFF_SHA256");
    if (e && !strcmp(e, "generic")) return 0;
    return have_ni();
#else
    return 0;
#endif
}

const char *cd_sha256_impl(void) { return pick_impl() ? "sha-ni" : "generic"; }

static void blocks(cd_sha256_ctx *c, const uint8_t *p, size_t n) {
#ifdef SHA_X86
    if (c->impl == 1) {
        blocks_ni(c->h, p, n);
        return;
    }
#endif
    for (; n > 0; n--, p += 64) block(c->h, p);
}

void cd_sha256_init(cd_sha256_ctx *c) {
    static const uint32_t iv[8] = {0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a,
                                   0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19};
    memcpy(c->h, iv, sizeof iv);
    c->total = 0;
    c->used = 0;
    c->impl = pick_impl();
}

void cd_sha256_update(cd_sha256_ctx *c, const void *data, size_t n) {
    const uint8_t *p = data;
    c->total += n;
    if (c->used) {
        size_t take = 64 - c->used < n ? 64 - c->used : n;
        memcpy(c->buf + c->used, p, take);
        c->used += take;
        p += take;
        n -= take;
        if (c->used < 64) return;
        blocks(c, c->buf, 1);
        c->used = 0;
    }
    blocks(c, p, n / 64);
    p += n / 64 * 64;
    n %= 64;
    memcpy(c->buf, p, n);
    c->used = n;
}

void cd_sha256_final(cd_sha256_ctx *c, uint8_t digest[32]) {
    uint64_t bits = c->total * 8;
    uint8_t pad[72] = {0x80};
    /* pad to 56 mod 64, then the 64-bit big-endian bit length */
    size_t padlen = (c->used < 56 ? 56 - c->used : 120 - c->used);
    for (int i = 0; i < 8; i++) pad[padlen + i] = (uint8_t)(bits >> (56 - 8 * i));
    uint64_t total = c->total;
    cd_sha256_update(c, pad, padlen + 8);
    c->total = total;
    for (int i = 0; i < 8; i++) {
        digest[4 * i] = (uint8_t)(c->h[i] >> 24);
        digest[4 * i + 1] = (uint8_t)(c->h[i] >> 16);
        digest[4 * i + 2] = (uint8_t)(c->h[i] >> 8);
        digest[4 * i + 3] = (uint8_t)c->h[i];
    }
}

void cd_sha256(const void *data, size_t n, uint8_t digest[32]) {
    cd_sha256_ctx c;
    cd_sha256_init(&c);
    cd_sha256_update(&c, data, n);
    cd_sha256_final(&c, digest);
}

void cd_sha256_hex(const uint8_t digest[32], char hex[65]) {
    static const char dig[] = "0123456789abcdef";
    for (int i = 0; i < 32; i++) {
        hex[2 * i] = dig[digest[i] >> 4];
        hex[2 * i + 1] = dig[digest[i] & 15];
    }
    hex[64] = 0;
}

cd_status cd_sha256_file(const char *path, char hex[65], cd_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open '%s' to hash it: %s", path, strerror(errno));
    cd_sha256_ctx c;
    cd_sha256_init(&c);
    uint8_t buf[1 << 16];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) cd_sha256_update(&c, buf, n);
    int bad = ferror(f);
    fclose(f);
    if (bad) return cd_err(err, CD_E_USAGE, "read error while hashing '%s'", path);
    uint8_t d[32];
    cd_sha256_final(&c, d);
    cd_sha256_hex(d, hex);
    return CD_OK;
}
