/* .npy reader/writer written from the NumPy format description (NEP 1). The header is a
 * Python dict literal; we parse exactly the subset numpy writes (string, bool and tuple
 * values) with a bounded cursor, so a hostile header can never read past its end. */
#include "util/npy.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *descr;
    cd_dtype t;
} DESCRS[] = {{"<f4", CD_F32},
              {"<f2", CD_F16},
              {"<f8", CD_F64},
              {"<i2", CD_I16},
              {"<i4", CD_I32},
              {"<i8", CD_I64},
              {"|u1", CD_U8},
              {"|i1", CD_I8},
              {"|b1", CD_BOOL},
              /* equivalent spellings numpy accepts for one-byte types and native order on LE hosts */
              {"<u1", CD_U8},
              {"<i1", CD_I8},
              {"<b1", CD_BOOL},
              {"=f4", CD_F32},
              {"=f2", CD_F16},
              {"=f8", CD_F64},
              {"=i2", CD_I16},
              {"=i4", CD_I32},
              {"=i8", CD_I64}};

const char *cd_npy_descr(cd_dtype t) {
    for (size_t i = 0; i < sizeof DESCRS / sizeof DESCRS[0]; i++)
        if (DESCRS[i].t == t) return DESCRS[i].descr;
    return NULL;
}

typedef struct {
    const char *p, *end, *start;
    size_t base; /* file offset of start, for messages */
    const char *what;
    cd_error *err;
} cursor;

static cd_status bad(cursor *c, const char *fmt, const char *detail) {
    char d[160];
    snprintf(d, sizeof d, fmt, detail);
    return cd_err(c->err, CD_E_MODEL, "%s: bad .npy header at byte %zu: %s (re-save the array with numpy.save)",
                  c->what, c->base + (size_t)(c->p - c->start), d);
}

static void skip_ws(cursor *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r')) c->p++;
}

static bool eat(cursor *c, char ch) {
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* Python string literal in single or double quotes, no escapes (numpy never writes any). */
static cd_status parse_str(cursor *c, char *out, size_t cap) {
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return bad(c, "expected a quoted string%s", "");
    char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (*c->p == '\\') return bad(c, "escape sequences are not supported in strings%s", "");
        if (n + 1 >= cap) return bad(c, "string longer than %s bytes", cap > 32 ? "63" : "15");
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return bad(c, "unterminated string%s", "");
    c->p++;
    out[n] = 0;
    return CD_OK;
}

static cd_status parse_shape(cursor *c, cd_shape *s) {
    if (!eat(c, '(')) return bad(c, "'shape' must be a tuple like (1, 3, 64, 64)%s", "");
    s->rank = 0;
    for (;;) {
        skip_ws(c);
        if (eat(c, ')')) return CD_OK;
        if (c->p >= c->end || *c->p < '0' || *c->p > '9') return bad(c, "expected a dimension (digits)%s", "");
        int64_t v = 0;
        while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
            if (v > ((int64_t)1 << 50)) return bad(c, "dimension too large%s", "");
            v = v * 10 + (*c->p++ - '0');
        }
        if (c->p < c->end && *c->p == 'L') c->p++; /* Python 2 longs */
        if (s->rank >= CD_MAX_RANK) return bad(c, "more than 8 dimensions%s", "");
        s->d[s->rank++] = v;
        if (eat(c, ',')) continue;
        if (eat(c, ')')) return CD_OK;
        return bad(c, "expected ',' or ')' in shape%s", "");
    }
}

static cd_status parse_header(cursor *c, cd_dtype *dt, cd_shape *shape) {
    bool have_descr = false, have_order = false, have_shape = false;
    if (!eat(c, '{')) return bad(c, "header must start with '{'%s", "");
    for (;;) {
        if (eat(c, '}')) break;
        char key[32];
        if (parse_str(c, key, sizeof key)) return c->err ? c->err->code : CD_E_MODEL;
        if (!eat(c, ':')) return bad(c, "expected ':' after key '%s'", key);
        if (!strcmp(key, "descr")) {
            char d[16];
            if (parse_str(c, d, sizeof d)) return c->err ? c->err->code : CD_E_MODEL;
            size_t i;
            for (i = 0; i < sizeof DESCRS / sizeof DESCRS[0]; i++)
                if (!strcmp(d, DESCRS[i].descr)) break;
            if (i == sizeof DESCRS / sizeof DESCRS[0])
                return bad(c,
                           "unsupported dtype '%s' (supported: <f4 <f2 <f8 <i2 <i4 <i8 |u1 |i1 |b1; "
                           "big-endian and structured arrays must be converted, e.g. a.astype('<f4'))",
                           d);
            *dt = DESCRS[i].t;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            skip_ws(c);
            if ((size_t)(c->end - c->p) >= 5 && !memcmp(c->p, "False", 5))
                c->p += 5;
            else if ((size_t)(c->end - c->p) >= 4 && !memcmp(c->p, "True", 4))
                return bad(c, "fortran_order True is not supported%s; save with np.ascontiguousarray(a)", "");
            else
                return bad(c, "fortran_order must be False%s", "");
            have_order = true;
        } else if (!strcmp(key, "shape")) {
            if (parse_shape(c, shape)) return c->err ? c->err->code : CD_E_MODEL;
            have_shape = true;
        } else {
            return bad(c, "unexpected key '%s'", key);
        }
        if (eat(c, ',')) continue;
        if (eat(c, '}')) break;
        return bad(c, "expected ',' or '}'%s", "");
    }
    skip_ws(c);
    if (c->p != c->end) return bad(c, "trailing bytes after the header dict%s", "");
    if (!have_descr || !have_order || !have_shape)
        return bad(c, "header lacks %s", !have_descr ? "'descr'" : !have_order ? "'fortran_order'" : "'shape'");
    return CD_OK;
}

cd_status cd_npy_parse(const void *buf, size_t len, const char *what, cd_value *out, cd_error *err) {
    const unsigned char *b = buf;
    memset(out, 0, sizeof *out);
    if (len < 10 || memcmp(b, "\x93NUMPY", 6))
        return cd_err(err, CD_E_MODEL, "%s: not a .npy file (missing \\x93NUMPY magic at byte 0)", what);
    int major = b[6], minor = b[7];
    size_t hl, hstart;
    if (major == 1) {
        hl = (size_t)b[8] | (size_t)b[9] << 8;
        hstart = 10;
    } else if (major == 2 || major == 3) {
        if (len < 12) return cd_err(err, CD_E_MODEL, "%s: truncated .npy header (file is %zu bytes)", what, len);
        hl = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
        hstart = 12;
    } else {
        return cd_err(err, CD_E_MODEL, "%s: unsupported .npy format version %d.%d at byte 6 (1.0, 2.0, 3.0 are read)",
                      what, major, minor);
    }
    if (hl > len - hstart)
        return cd_err(err, CD_E_MODEL, "%s: .npy header length %zu at byte 8 runs past the end of the file (%zu bytes)",
                      what, hl, len);
    cursor c = {(const char *)b + hstart, (const char *)b + hstart + hl, (const char *)b + hstart, hstart, what, err};
    for (size_t i = 0; i < hl; i++) {
        unsigned char ch = b[hstart + i];
        if (ch == 0 || (major < 3 && ch >= 0x80)) {
            c.p = c.start + i;
            return bad(&c, "non-ASCII byte in header%s", "");
        }
    }
    cd_dtype dt = CD_F32;
    cd_shape shape = {0};
    if (parse_header(&c, &dt, &shape)) return err ? err->code : CD_E_MODEL;
    int64_t numel = cd_shape_numel(&shape);
    size_t es = cd_dtype_size(dt);
    size_t data_off = hstart + hl, avail = len - data_off;
    if (numel < 0 || (uint64_t)numel > avail / es) {
        char sb[160];
        return cd_err(err, CD_E_MODEL, "%s: header says %s %s (%lld values) but only %zu data bytes follow the header",
                      what, cd_dtype_name(dt), cd_shape_str(&shape, sb, sizeof sb), (long long)numel, avail);
    }
    size_t nb = (size_t)numel * es;
    if (nb != avail) {
        char sb[160];
        return cd_err(err, CD_E_MODEL,
                      "%s: header says %s %s (%zu bytes) but %zu data bytes follow; the file is "
                      "corrupt or not a single array",
                      what, cd_dtype_name(dt), cd_shape_str(&shape, sb, sizeof sb), nb, avail);
    }
    void *data = cd_malloc(nb, err);
    if (!data) return CD_E_NOMEM;
    if (nb) memcpy(data, b + data_off, nb);
    out->dtype = dt;
    out->shape = shape;
    out->data = data;
    out->nbytes = nb;
    out->owned = true;
    return CD_OK;
}

cd_status cd_npy_read(const char *path, cd_value *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open '%s': %s", path, strerror(errno));
    if (fseek(f, 0, SEEK_END) != 0) {
        fclose(f);
        return cd_err(err, CD_E_USAGE, "cannot seek in '%s'", path);
    }
    long sz = ftell(f);
    if (sz < 0) {
        fclose(f);
        return cd_err(err, CD_E_USAGE, "cannot determine the size of '%s'", path);
    }
    rewind(f);
    unsigned char *buf = cd_malloc((size_t)sz, err);
    if (!buf) {
        fclose(f);
        return CD_E_NOMEM;
    }
    size_t got = fread(buf, 1, (size_t)sz, f);
    fclose(f);
    if (got != (size_t)sz) {
        free(buf);
        return cd_err(err, CD_E_USAGE, "short read on '%s' (%zu of %ld bytes)", path, got, sz);
    }
    cd_status st = cd_npy_parse(buf, (size_t)sz, path, out, err);
    free(buf);
    return st;
}

cd_status cd_npy_write(const char *path, const cd_value *v, cd_error *err) {
    const char *descr = cd_npy_descr(v->dtype);
    if (!descr) return cd_err(err, CD_E_INTERNAL, "cannot write dtype %s to .npy", cd_dtype_name(v->dtype));
    int64_t numel = cd_shape_numel(&v->shape);
    if (numel < 0) return cd_err(err, CD_E_INTERNAL, "cannot write a tensor with a negative shape to '%s'", path);
    size_t nb = (size_t)numel * cd_dtype_size(v->dtype);
    if (nb > v->nbytes) return cd_err(err, CD_E_INTERNAL, "value for '%s' holds fewer bytes than its shape", path);
    char dict[512];
    int n = snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    /* Python tuple syntax: "()", "(5,)", "(1, 3, 64, 64)" */
    for (int i = 0; i < v->shape.rank; i++)
        n += snprintf(dict + n, sizeof dict - (size_t)n, i ? ", %lld" : "%lld", (long long)v->shape.d[i]);
    n += snprintf(dict + n, sizeof dict - (size_t)n, "%s), }", v->shape.rank == 1 ? "," : "");
    /* pad with spaces so the data starts at a multiple of 64, end with '\n' */
    size_t pre = 10, total = pre + (size_t)n + 1;
    size_t padded = (total + 63) / 64 * 64;
    size_t hl = padded - pre;
    char hdr[640];
    memcpy(hdr, "\x93NUMPY\x01\x00", 8);
    hdr[8] = (char)(hl & 0xff);
    hdr[9] = (char)(hl >> 8);
    memcpy(hdr + pre, dict, (size_t)n);
    memset(hdr + pre + n, ' ', hl - (size_t)n - 1);
    hdr[padded - 1] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) return cd_err(err, CD_E_IO, "cannot create '%s': %s", path, strerror(errno));
    bool ok = fwrite(hdr, 1, padded, f) == padded && (nb == 0 || fwrite(v->data, 1, nb, f) == nb);
    int e = errno;
    if (fclose(f) != 0 && ok) {
        ok = false;
        e = errno;
    }
    if (!ok) return cd_err(err, CD_E_IO, "cannot write '%s': %s (disk full?)", path, strerror(e));
    return CD_OK;
}
