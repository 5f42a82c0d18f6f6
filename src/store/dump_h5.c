/* The HDF5 helpers every part of the dump writer and reader shares: HDF5's error stack as a
 * cd_error, the escaping of link names, and the writing of one dataset. Calls nothing of the
 * other dump files (dump.c, dump_attr.c, dump_table.c and dump_run.c call it). */
#include "store/dump.h"
#include <hdf5.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "store/dump_writer.h"
#include "util/fp16.h"

/* ---------------- HDF5 error capture ---------------- */

/* Silences HDF5's error printing (errors become cd_error messages) and stops its atexit
 * shutdown: after a failed flush (disk full) H5Fclose fails and leaves the file open inside
 * HDF5, whose exit-time close then crashes in H5F__close_cb. Our files are closed (or
 * discarded) explicitly; nothing needs HDF5's exit handler. */
void cd_dump_h5_quiet(void) {
    static int once;
    if (!once) {
        once = 1;
        H5dont_atexit();
    }
    H5Eset_auto2(H5E_DEFAULT, NULL, NULL);
}

typedef struct {
    char desc[600];
    int n;
} h5_walk;

static herr_t walk_cb(unsigned n, const H5E_error2_t *e, void *ud) {
    h5_walk *w = ud;
    char minor[160] = "";
    if (H5Eget_msg(e->min_num, NULL, minor, sizeof minor) < 0) minor[0] = 0;
    /* walking downward, the last entry is the innermost and most specific one */
    snprintf(w->desc, sizeof w->desc, "%s%s%s", e->desc ? e->desc : "", minor[0] ? " / " : "", minor);
    w->n = (int)n + 1;
    return 0;
}

cd_status cd_dump_h5_error(cd_error *err, cd_status code, const char *fmt, ...) {
    char head[1024];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(head, sizeof head, fmt, ap);
    va_end(ap);
    h5_walk w = {"", 0};
    H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, walk_cb, &w);
    H5Eclear2(H5E_DEFAULT);
    if (w.n) return cd_err(err, code, "%s (HDF5: %s)", head, w.desc);
    return cd_err(err, code, "%s", head);
}

/* ---------------- escaping ---------------- */

bool cd_dump_escape(const char *name, char *out, size_t n) {
    static const char hex[] = "0123456789ABCDEF";
    size_t o = 0;
    for (const unsigned char *p = (const unsigned char *)name; *p; p++) {
        bool keep = *p >= 0x21 && *p <= 0x7e && *p != '/' && *p != '%';
        size_t need = keep ? 1 : 3;
        if (o + need >= n) {
            if (n) out[n - 1 > o ? o : n - 1] = 0;
            return false;
        }
        if (keep)
            out[o++] = (char)*p;
        else {
            out[o++] = '%';
            out[o++] = hex[*p >> 4];
            out[o++] = hex[*p & 15];
        }
    }
    if (o >= n) return false;
    out[o] = 0;
    return true;
}

static int hexval(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    return -1;
}

void cd_dump_unescape(const char *name, char *out, size_t n) {
    size_t o = 0;
    if (!n) return;
    for (const char *p = name; *p && o + 1 < n; p++) {
        int h, l;
        if (*p == '%' && (h = hexval(p[1])) >= 0 && (l = hexval(p[2])) >= 0) {
            out[o++] = (char)(h * 16 + l);
            p += 2;
        } else {
            out[o++] = *p;
        }
    }
    out[o] = 0;
}

/* ---------------- datasets ---------------- */

/* IEEE binary16 in the given byte order (platform-notes.md recipe). */
static hid_t half_type(hid_t base) {
    hid_t t = H5Tcopy(base);
    H5Tset_fields(t, 15, 10, 5, 0, 10);
    H5Tset_precision(t, 16);
    H5Tset_ebias(t, 15);
    H5Tset_size(t, 2);
    return t;
}

/* File and memory types for a dtype; both must be closed by the caller. */
static bool dtype_types(cd_dtype dt, hid_t *ftype, hid_t *mtype) {
    switch (dt) {
    case CD_F32:
        *ftype = H5Tcopy(H5T_IEEE_F32LE);
        *mtype = H5Tcopy(H5T_NATIVE_FLOAT);
        return true;
    case CD_F16:
        *ftype = half_type(H5T_IEEE_F32LE);
        *mtype = half_type(H5T_NATIVE_FLOAT);
        return true;
    case CD_F64:
        *ftype = H5Tcopy(H5T_IEEE_F64LE);
        *mtype = H5Tcopy(H5T_NATIVE_DOUBLE);
        return true;
    case CD_I8:
        *ftype = H5Tcopy(H5T_STD_I8LE);
        *mtype = H5Tcopy(H5T_NATIVE_INT8);
        return true;
    case CD_I16:
        *ftype = H5Tcopy(H5T_STD_I16LE);
        *mtype = H5Tcopy(H5T_NATIVE_INT16);
        return true;
    case CD_I32:
        *ftype = H5Tcopy(H5T_STD_I32LE);
        *mtype = H5Tcopy(H5T_NATIVE_INT32);
        return true;
    case CD_I64:
        *ftype = H5Tcopy(H5T_STD_I64LE);
        *mtype = H5Tcopy(H5T_NATIVE_INT64);
        return true;
    case CD_U8:
    case CD_BOOL:
        *ftype = H5Tcopy(H5T_STD_U8LE);
        *mtype = H5Tcopy(H5T_NATIVE_UINT8);
        return true;
    default: return false;
    }
}

/* Chunks of about 256 K elements split along the outer dimensions: large enough for fast
 * deflate, small enough for HDF5's 1 MiB default chunk cache when reading back. */
static void chunk_dims(const cd_shape *s, hsize_t *c) {
    const int64_t target = 256 * 1024;
    int64_t rest = 1;
    for (int i = 0; i < s->rank; i++) rest *= s->d[i] > 0 ? s->d[i] : 1;
    for (int i = 0; i < s->rank; i++) {
        int64_t d = s->d[i] > 0 ? s->d[i] : 1;
        rest /= d;
        if (rest >= target)
            c[i] = 1;
        else {
            int64_t k = target / rest;
            c[i] = (hsize_t)(k < d ? k : d);
            for (int j = i + 1; j < s->rank; j++) c[j] = (hsize_t)(s->d[j] > 0 ? s->d[j] : 1);
            return;
        }
    }
}

/* A 64-bit digest of n bytes: four lanes of 8-byte words, each multiplied, rotated and
 * multiplied (a change of any bit changes its lane), then the lanes, the tail bytes and the
 * length mixed. Not cryptographic: it finds damage, at several GB/s. */
static inline uint64_t rotl64(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }
static inline uint64_t lane(uint64_t h, uint64_t w) {
    return rotl64(h + w * 0xc2b2ae3d27d4eb4fULL, 31) * 0x9e3779b185ebca87ULL;
}
uint64_t cd_dump_digest64(const void *data, size_t n) {
    const unsigned char *p = data;
    uint64_t h[4] = {0x243f6a8885a308d3ULL, 0x13198a2e03707344ULL, 0xa4093822299f31d0ULL, 0x082efa98ec4e6c89ULL};
    size_t i = 0;
    for (; i + 32 <= n; i += 32)
        for (int k = 0; k < 4; k++) {
            uint64_t w;
            memcpy(&w, p + i + 8 * k, 8);
            h[k] = lane(h[k], w);
        }
    uint64_t x = rotl64(h[0], 1) + rotl64(h[1], 7) + rotl64(h[2], 12) + rotl64(h[3], 18) + (uint64_t)n;
    for (; i < n; i++) x = (x ^ p[i]) * 0x100000001b3ULL;
    x ^= x >> 33;
    x *= 0xff51afd7ed558ccdULL;
    x ^= x >> 33;
    x *= 0xc4ceb9fe1a85ec53ULL;
    return x ^ (x >> 33);
}

herr_t cd_dumpw_digest_attr(hid_t obj, const void *data, size_t nb) {
    char dg[32];
    snprintf(dg, sizeof dg, "d64:%016llx", (unsigned long long)cd_dump_digest64(nb ? data : "", nb));
    /* a fixed-length string, as every attribute cldiff writes (dump_attr.c) */
    hid_t t = H5Tcopy(H5T_C_S1), sp = H5Screate(H5S_SCALAR);
    H5Tset_size(t, strlen(dg) + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    hid_t a = H5Acreate2(obj, CD_DUMP_DIGEST_ATTR, t, sp, H5P_DEFAULT, H5P_DEFAULT);
    herr_t r = a < 0 ? -1 : H5Awrite(a, t, dg);
    if (a >= 0 && H5Aclose(a) < 0) r = -1;
    H5Sclose(sp);
    H5Tclose(t);
    return r;
}

/* Creates and writes a dataset holding v under loc/name (stats_only: null dataspace). */
hid_t cd_dumpw_write_values(cd_dump *d, hid_t loc, const char *name, const cd_value *v, bool stats_only,
                            cd_error *err) {
    /* the dtype's types are made on first use and kept (copying them per tensor was a
     * measurable part of storing a small one) */
    if ((unsigned)v->dtype >= CD_DTYPE_COUNT ||
        (d->ftype[v->dtype] < 0 && !dtype_types(v->dtype, &d->ftype[v->dtype], &d->mtype[v->dtype]))) {
        cd_err(err, CD_E_INTERNAL, "cannot store dtype %d", (int)v->dtype);
        return -1;
    }
    const hid_t ft = d->ftype[v->dtype], mt = d->mtype[v->dtype];
    if (ft < 0 || mt < 0) {
        cd_err(err, CD_E_INTERNAL, "cannot make the HDF5 types of dtype %s", cd_dtype_name(v->dtype));
        return -1;
    }
    int64_t numel = cd_shape_numel(&v->shape);
    size_t nb = numel >= 0 ? (size_t)numel * cd_dtype_size(v->dtype) : 0;
    if (numel < 0 || (!stats_only && (nb > v->nbytes || (nb && !v->data)))) {
        char sb[160];
        cd_err(err, CD_E_INTERNAL, "value for '%s' (shape %s) holds %zu bytes, needs %zu", name,
               cd_shape_str(&v->shape, sb, sizeof sb), v->nbytes, nb);
        return -1;
    }
    hid_t sp;
    hsize_t dims[CD_MAX_RANK];
    for (int i = 0; i < v->shape.rank; i++) dims[i] = (hsize_t)v->shape.d[i];
    if (stats_only)
        sp = H5Screate(H5S_NULL);
    else if (v->shape.rank == 0)
        sp = H5Screate(H5S_SCALAR);
    else
        sp = H5Screate_simple(v->shape.rank, dims, NULL);
    hid_t dcpl = d->dcpl_plain;
    bool own_dcpl = false;
    /* Uncompressed (the default): contiguous, written straight from the caller's buffer with
     * no fill pass. Compressed (--compress N): chunked, shuffle + deflate; tiny tensors stay
     * contiguous, where compression costs more than it saves. */
    if (!stats_only && d->deflate > 0 && v->shape.rank > 0 && nb >= 4096 && H5Zfilter_avail(H5Z_FILTER_DEFLATE) > 0) {
        hsize_t ch[CD_MAX_RANK];
        chunk_dims(&v->shape, ch);
        dcpl = H5Pcopy(d->dcpl_plain);
        own_dcpl = true;
        H5Pset_chunk(dcpl, v->shape.rank, ch);
        H5Pset_shuffle(dcpl);                       /* byte planes of floats compress much better */
        H5Pset_deflate(dcpl, (unsigned)d->deflate); /* level 1 gives most of the gain */
    }
    hid_t ds = H5Dcreate2(loc, name, ft, sp, H5P_DEFAULT, dcpl, H5P_DEFAULT);
    if (ds >= 0 && !stats_only && nb > 0 && H5Dwrite(ds, mt, H5S_ALL, H5S_ALL, H5P_DEFAULT, v->data) < 0) {
        H5Dclose(ds);
        ds = -1;
    }
    if (ds >= 0 && !stats_only && nb > 0) {
        if (cd_dumpw_digest_attr(ds, v->data, nb) < 0) {
            H5Dclose(ds);
            ds = -1;
        }
    }
    if (ds < 0) cd_dump_h5_error(err, CD_E_IO, "cannot write dataset '%s' to dump '%s' (disk full?)", name, d->tmp);
    if (own_dcpl) H5Pclose(dcpl);
    H5Sclose(sp);
    return ds;
}
