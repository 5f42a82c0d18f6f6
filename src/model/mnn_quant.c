/* MNN's weight-quantized convolutions (IDSTQuan in Convolution2D.quanParameter, docs/mnn.md "What
 * cldiff checks"): the weights decoded back to float as MNN's CPU does before it computes in float,
 * so that cldiff's CPU checks such a convolution with the same weights. Written from the format
 * (MNN's schema, CaffeOp.fbs, and the layout its converter writes); the buffer is untrusted: every
 * read is bounds-checked and a malformed one is CD_E_MODEL with the file offset.
 *
 * IDSTQuan.type 1 (mnnconvert --weightQuantBits N): buffer = u8 rank (<= 4), the dims (u16 each,
 * u32 with shapeInt32), u8 table size n (0: 256), n int8 table values (MNN sorts them ascending),
 * then one index into the sorted table per weight, ceil(log2 n) bits each, packed most
 * significant bit first. Type 4: the buffer is the int8 weights themselves. Type 3: half floats.
 * Then per output channel o (alpha holds one scale per channel, or [min, scale] pairs when
 * readType != 0): w = q * scale (+ min - aMin * scale, aMin 0 meaning -128), the scales times
 * quantScale when it is not 1 and has_scaleInt is false. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "model/mnn_priv.h"
#include "util/fp16.h"

/* IDSTQuan fields */
enum {
    IQ_BUFFER,
    IQ_ALPHA,
    IQ_TYPE,
    IQ_USEINT32,
    IQ_QUANTSCALE,
    IQ_SCALEIN,
    IQ_SCALEOUT,
    IQ_AMAX,
    IQ_AMIN,
    IQ_READTYPE,
    IQ_HAS_SCALEINT,
    IQ_SHAPEINT32,
    IQ_WEIGHTSIZE,
    IQ_INDEX,
    IQ_ALPHA_FP16,
    IQ_SCALE_STORAGE
};

#define MNN_IDST_MAX_WEIGHTS (1u << 28)

static int cmp_i8(const void *a, const void *b) { return (int)*(const int8_t *)a - (int)*(const int8_t *)b; }

/* Bits per index for a table of n values: ceil(log2 n), at least 1. */
static unsigned index_bits(unsigned n) {
    unsigned b = 1;
    while ((1u << b) < n) b++;
    return b;
}

/* Type 1: the table and the packed indexes -> int8 values (count of them in *n). */
static cd_status decode_indexed(const uint8_t *p, size_t len, size_t at, bool dims32, int8_t **q, uint32_t *n,
                                char *why, size_t wn, cd_error *err) {
    size_t k = 0;
    if (len < 1) return cd_err(err, CD_E_MODEL, "IDSTQuan buffer is empty (file offset %zu)", at);
    unsigned rank = p[k++];
    if (rank == 0 || rank > 4)
        return cd_err(err, CD_E_MODEL, "IDSTQuan buffer: weight rank %u (expected 1-4) (file offset %zu)", rank, at);
    uint64_t count = 1;
    for (unsigned d = 0; d < rank; d++) {
        size_t es = dims32 ? 4 : 2;
        if (k + es > len) return cd_err(err, CD_E_MODEL, "IDSTQuan buffer ends in its dims (file offset %zu)", at);
        uint32_t v = p[k] | (uint32_t)p[k + 1] << 8;
        if (dims32) v |= (uint32_t)p[k + 2] << 16 | (uint32_t)p[k + 3] << 24;
        k += es;
        count *= v;
        if (count > MNN_IDST_MAX_WEIGHTS)
            return cd_err(err, CD_E_MODEL, "IDSTQuan buffer: more than %u weights (file offset %zu)",
                          MNN_IDST_MAX_WEIGHTS, at);
    }
    if (!count) return cd_err(err, CD_E_MODEL, "IDSTQuan buffer: a zero dimension (file offset %zu)", at);
    if (k + 1 > len) return cd_err(err, CD_E_MODEL, "IDSTQuan buffer ends before its table (file offset %zu)", at);
    unsigned nt = p[k++];
    if (!nt) nt = 256;
    if (k + nt > len) return cd_err(err, CD_E_MODEL, "IDSTQuan buffer ends in its table (file offset %zu)", at);
    int8_t table[256];
    memcpy(table, p + k, nt);
    k += nt;
    qsort(table, nt, 1, cmp_i8);
    unsigned bits = index_bits(nt);
    uint64_t need = (count * bits + 7) / 8;
    if (need > len - k)
        return cd_err(err, CD_E_MODEL,
                      "IDSTQuan buffer: %llu weights of %u bits need %llu bytes, %zu are left (file offset %zu)",
                      (unsigned long long)count, bits, (unsigned long long)need, len - k, at);
    int8_t *out = malloc((size_t)count);
    if (!out) return cd_err(err, CD_E_NOMEM, "out of memory");
    const uint8_t *s = p + k;
    uint64_t bit = 0;
    for (uint64_t i = 0; i < count; i++) {
        unsigned idx = 0;
        for (unsigned b = 0; b < bits; b++, bit++) idx = idx << 1 | ((s[bit >> 3] >> (7 - (bit & 7))) & 1u);
        if (idx >= nt) {
            free(out);
            snprintf(why, wn, "an IDSTQuan index (%u) outside its table of %u values", idx, nt);
            return CD_OK;
        }
        out[i] = table[idx];
    }
    *q = out;
    *n = (uint32_t)count;
    return CD_OK;
}

cd_status cd_mnn_idst_weights(mnn_ctx *c, const cd_fb_table *q, int outc, float **w, uint32_t *nw, char *desc,
                              size_t dn, char *why, size_t wn, cd_error *err) {
    *w = NULL;
    *nw = 0;
    why[0] = desc[0] = 0;
    size_t at = c->fb.base + q->pos;
    int32_t type, amin, read_type;
    uint8_t has_si, dims32, storage;
    float qs;
    if (cd_fb_i32(&c->fb, q, IQ_TYPE, 0, &type, err) || cd_fb_i32(&c->fb, q, IQ_AMIN, 0, &amin, err) ||
        cd_fb_i32(&c->fb, q, IQ_READTYPE, 0, &read_type, err) ||
        cd_fb_u8(&c->fb, q, IQ_HAS_SCALEINT, 0, &has_si, err) || cd_fb_u8(&c->fb, q, IQ_SHAPEINT32, 0, &dims32, err) ||
        cd_fb_u8(&c->fb, q, IQ_SCALE_STORAGE, 0, &storage, err) || cd_mnn_f32(c, q, IQ_QUANTSCALE, 0.0f, &qs, err))
        return err->code;
    size_t bd, ad, xd;
    uint32_t bn, an, xn;
    if (cd_fb_vec(&c->fb, q, IQ_BUFFER, "buffer", 1, &bd, &bn, err) ||
        cd_fb_vec(&c->fb, q, IQ_ALPHA, "alpha", 4, &ad, &an, err) ||
        cd_fb_vec(&c->fb, q, IQ_INDEX, "index", 4, &xd, &xn, err))
        return err->code;
    if (type == 2 || xn) {
        snprintf(why, wn, "sparse IDSTQuan weights (type %d)", type);
        return CD_OK;
    }
    if (type != 1 && type != 3 && type != 4) {
        snprintf(why, wn, "IDSTQuan type %d", type);
        return CD_OK;
    }
    if (has_si) {
        snprintf(why, wn, "IDSTQuan with integer scales (has_scaleInt: MNN computes in int8)");
        return CD_OK;
    }
    if (storage != 0) {
        snprintf(why, wn, "IDSTQuan scales stored as half");
        return CD_OK;
    }
    const uint8_t *buf = c->fb.buf + bd;
    if (type == 3) { /* half floats */
        if (bn % 2 || !bn) return cd_err(err, CD_E_MODEL, "IDSTQuan half weights: %u bytes (file offset %zu)", bn, at);
        float *f = malloc(sizeof *f * (bn / 2));
        if (!f) return cd_err(err, CD_E_NOMEM, "out of memory");
        for (uint32_t i = 0; i < bn / 2; i++) f[i] = cd_half_to_float((uint16_t)(buf[2 * i] | buf[2 * i + 1] << 8));
        *w = f;
        *nw = bn / 2;
        snprintf(desc, dn, "weights stored as half (IDSTQuan type 3), widened");
        return CD_OK;
    }
    int8_t *qv = NULL;
    uint32_t n = 0;
    if (type == 1) {
        cd_status st = decode_indexed(buf, bn, at, dims32, &qv, &n, why, wn, err);
        if (st || why[0]) return st;
    } else {
        if (!bn) return cd_err(err, CD_E_MODEL, "IDSTQuan int8 weights: empty buffer (file offset %zu)", at);
        if (!(qv = malloc(bn))) return cd_err(err, CD_E_NOMEM, "out of memory");
        memcpy(qv, buf, bn);
        n = bn;
    }
    bool old4 = type == 4 && amin == 0 && fabsf(qs) < 1e-6f;
    bool asym = read_type != 0 || old4;
    uint32_t per = asym ? 2 : 1;
    cd_status st = CD_OK;
    if (!an || an % per || (outc > 0 && an / per != (uint32_t)outc) || n % (an / per))
        st = cd_err(err, CD_E_MODEL,
                    "IDSTQuan: %u scales (%s) do not fit %u weights of %d output channels (file offset %zu)", an,
                    asym ? "min and scale pairs" : "one per channel", n, outc, at);
    float *f = st ? NULL : malloc(sizeof *f * (size_t)n);
    if (!st && !f) st = cd_err(err, CD_E_NOMEM, "out of memory");
    if (st) {
        free(qv);
        return st;
    }
    const uint8_t *ab = c->fb.buf + ad;
    uint32_t oc = an / per, part = n / oc;
    float clamp_min = amin == 0 ? -128.0f : (float)amin, factor = (!old4 && qs != 1.0f) ? qs : 1.0f;
    for (uint32_t o = 0; o < oc; o++) {
        float mn = 0, sc;
        if (asym) {
            memcpy(&mn, ab + 8 * (size_t)o, 4);
            memcpy(&sc, ab + 8 * (size_t)o + 4, 4);
            if (clamp_min < 0) mn -= clamp_min * sc;
            mn *= factor;
        } else {
            memcpy(&sc, ab + 4 * (size_t)o, 4);
        }
        sc *= factor;
        for (uint32_t v = 0; v < part; v++) f[(size_t)o * part + v] = (float)qv[(size_t)o * part + v] * sc + mn;
    }
    free(qv);
    *w = f;
    *nw = n;
    snprintf(desc, dn, "weights dequantized from IDSTQuan type %d (%s, %u channels)", type,
             asym ? "asymmetric" : "symmetric", oc);
    return CD_OK;
}
