/* Dump writer: attributes (fixed-length strings, integers, doubles, int64 arrays), groups,
 * and cd_dump_set_attr_*. */
#include <hdf5.h>
#include <stdio.h>
#include <string.h>
#include "store/dump.h"
#include "store/dump_writer.h"

/* ---------------- attributes ---------------- */

/* String attributes are fixed-length (exactly the value plus its NUL): reading a
 * variable-length string goes through HDF5's global heap, where a crafted file makes
 * HDF5 1.10 copy out of bounds (tests/fuzz/regressions/dump/hdf5-vlen-attr-huge-copy), so
 * the reader refuses variable-length strings and the writer never makes them. */
static hid_t str_type(size_t len) {
    hid_t t = H5Tcopy(H5T_C_S1);
    H5Tset_size(t, len + 1);
    H5Tset_strpad(t, H5T_STR_NULLTERM);
    H5Tset_cset(t, H5T_CSET_UTF8);
    return t;
}

/* Deletes an attribute of that name if present so the write replaces it. */
static herr_t drop_attr(hid_t obj, const char *name) {
    htri_t ex = H5Aexists(obj, name);
    if (ex < 0) return -1;
    return ex > 0 ? H5Adelete(obj, name) : 0;
}

_Thread_local bool cd_dumpw_attr_fresh;

static herr_t attr_write(hid_t obj, const char *name, hid_t ftype, hid_t mtype, hid_t space, const void *buf) {
    if (!cd_dumpw_attr_fresh && drop_attr(obj, name) < 0) return -1;
    hid_t a = H5Acreate2(obj, name, ftype, space, H5P_DEFAULT, H5P_DEFAULT);
    if (a < 0) return -1;
    herr_t r = buf ? H5Awrite(a, mtype, buf) : 0;
    if (H5Aclose(a) < 0) r = -1;
    return r;
}

herr_t cd_dumpw_attr_str(hid_t obj, const char *name, const char *v) {
    const char *p = v ? v : "";
    hid_t t = str_type(strlen(p)), s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, t, t, s, p);
    H5Sclose(s);
    H5Tclose(t);
    return r;
}

herr_t cd_dumpw_attr_i64(hid_t obj, const char *name, int64_t v) {
    hid_t s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, s, &v);
    H5Sclose(s);
    return r;
}

herr_t cd_dumpw_attr_u64(hid_t obj, const char *name, uint64_t v) {
    hid_t s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, s, &v);
    H5Sclose(s);
    return r;
}

herr_t cd_dumpw_attr_f64(hid_t obj, const char *name, double v) {
    hid_t s = H5Screate(H5S_SCALAR);
    herr_t r = attr_write(obj, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, s, &v);
    H5Sclose(s);
    return r;
}

/* 1-D int64 array; an empty array (rank-0 shape) uses a null dataspace. */
herr_t cd_dumpw_attr_i64s(hid_t obj, const char *name, const int64_t *v, int n) {
    hsize_t dim = (hsize_t)n;
    hid_t s = n > 0 ? H5Screate_simple(1, &dim, NULL) : H5Screate(H5S_NULL);
    herr_t r = attr_write(obj, name, H5T_STD_I64LE, H5T_NATIVE_INT64, s, n > 0 ? v : NULL);
    H5Sclose(s);
    return r;
}

/* ---------------- groups ---------------- */

cd_status cd_dumpw_make_groups(cd_dump *d, const char *path, cd_error *err) {
    if (!cd_dumpw_valid_path(path))
        return cd_err(err, CD_E_INTERNAL, "dump path '%s' must be absolute", path ? path : "");
    char buf[1024];
    size_t len = strlen(path);
    if (len >= sizeof buf) return cd_err(err, CD_E_INTERNAL, "dump path too long: %.100s...", path);
    memcpy(buf, path, len + 1);
    for (size_t i = 1; i <= len; i++) {
        if (buf[i] != '/' && buf[i] != 0) continue;
        char save = buf[i];
        buf[i] = 0;
        if (i > 1 && buf[i - 1] != '/') {
            htri_t ex = H5Lexists(d->file, buf, H5P_DEFAULT);
            if (ex < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot look up '%s' in dump '%s'", buf, d->path);
            if (!ex) {
                hid_t g = H5Gcreate2(d->file, buf, H5P_DEFAULT, d->gcpl, H5P_DEFAULT);
                if (g < 0) return cd_dump_h5_error(err, CD_E_IO, "cannot create group '%s' in dump '%s'", buf, d->path);
                H5Gclose(g);
            }
        }
        buf[i] = save;
    }
    return CD_OK;
}

cd_status cd_dump_make_group(cd_dump *d, const char *path, cd_error *err) { return cd_dumpw_make_groups(d, path, err); }

static cd_status attr_status(cd_dump *d, herr_t r, const char *path, const char *name, cd_error *err) {
    if (r < 0)
        return cd_dump_h5_error(err, CD_E_IO, "cannot write attribute '%s' on '%s' in dump '%s'", name, path, d->tmp);
    return CD_OK;
}

static hid_t open_obj(cd_dump *d, const char *path, cd_error *err) {
    hid_t o = H5Oopen(d->file, path, H5P_DEFAULT);
    if (o < 0) cd_dump_h5_error(err, CD_E_INTERNAL, "no object '%s' in dump '%s'", path, d->path);
    return o;
}

cd_status cd_dump_set_attr_str(cd_dump *d, const char *path, const char *name, const char *value, cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = cd_dumpw_attr_str(o, name, value);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

cd_status cd_dump_set_attr_i64(cd_dump *d, const char *path, const char *name, int64_t value, cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = cd_dumpw_attr_i64(o, name, value);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

cd_status cd_dump_set_attr_f64(cd_dump *d, const char *path, const char *name, double value, cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = cd_dumpw_attr_f64(o, name, value);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}

cd_status cd_dump_set_attr_i64s(cd_dump *d, const char *path, const char *name, const int64_t *v, int n,
                                cd_error *err) {
    hid_t o = open_obj(d, path, err);
    if (o < 0) return err ? err->code : CD_E_INTERNAL;
    herr_t r = cd_dumpw_attr_i64s(o, name, v, n);
    H5Oclose(o);
    return attr_status(d, r, path, name, err);
}
