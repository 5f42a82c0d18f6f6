/* Model input construction from --input specs (see inputs.h). */
#include "cli/inputs.h"
#include <errno.h>
#include <hdf5.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include "engine/plan.h"
#include "store/dump.h"
#include "util/fp16.h"
#include "util/npy.h"

/* ---------------- random ---------------- */

typedef struct {
    uint64_t state, inc;
} pcg32;

static uint32_t pcg32_next(pcg32 *r) {
    uint64_t old = r->state;
    r->state = old * 6364136223846793005ULL + r->inc;
    uint32_t xs = (uint32_t)(((old >> 18) ^ old) >> 27);
    uint32_t rot = (uint32_t)(old >> 59);
    return (xs >> rot) | (xs << ((32 - rot) & 31));
}

static void pcg32_seed(pcg32 *r, uint64_t seed, uint64_t stream) {
    r->state = 0;
    r->inc = (stream << 1) | 1u;
    pcg32_next(r);
    r->state += seed;
    pcg32_next(r);
}

void cd_fill_random(float *x, int64_t n, uint64_t seed, uint64_t stream) {
    pcg32 r;
    pcg32_seed(&r, seed, stream);
    for (int64_t i = 0; i < n; i++) {
        /* 24 random bits -> exact float in [0,1), then exact affine map to [-1,1) */
        float u = (float)(pcg32_next(&r) >> 8) * (1.0f / 16777216.0f);
        x[i] = u * 2.0f - 1.0f;
    }
}

/* ---------------- helpers ---------------- */

cd_status cd_parse_float_list(const char *opt, const char *s, float *out, int max, int *n, cd_error *err) {
    *n = 0;
    const char *p = s;
    while (*p) {
        char *end;
        errno = 0;
        float v = strtof(p, &end);
        if (end == p || errno == ERANGE)
            return cd_err(err, CD_E_USAGE, "%s '%s': '%s' is not a number (write e.g. 0.485,0.456,0.406)", opt, s, p);
        if (*n >= max) return cd_err(err, CD_E_USAGE, "%s '%s': at most %d values", opt, s, max);
        out[(*n)++] = v;
        while (*end == ' ') end++;
        if (*end == ',')
            end++;
        else if (*end)
            return cd_err(err, CD_E_USAGE, "%s '%s': unexpected '%s'", opt, s, end);
        p = end;
        while (*p == ' ') p++;
    }
    if (!*n) return cd_err(err, CD_E_USAGE, "%s needs at least one number", opt);
    return CD_OK;
}

static bool ends_with(const char *s, const char *suf) {
    size_t a = strlen(s), b = strlen(suf);
    return a >= b && !strcasecmp(s + a - b, suf);
}

static cd_status alloc_f32(const cd_shape *shape, cd_value *out, const char *name, cd_error *err) {
    memset(out, 0, sizeof *out);
    out->dtype = CD_F32;
    out->shape = *shape;
    int64_t n = cd_shape_numel(shape);
    if (n < 0) {
        char sb[160];
        return cd_err(err, CD_E_MODEL, "input '%s' has an unresolved or invalid shape %s; give --shape %s=DIMS", name,
                      cd_shape_str(shape, sb, sizeof sb), name);
    }
    out->data = cd_malloc((size_t)n * sizeof(float), err);
    if (!out->data) return CD_E_NOMEM;
    out->nbytes = (size_t)n * sizeof(float);
    out->owned = true;
    return CD_OK;
}

static bool same_ignoring_ones(const cd_shape *a, const cd_shape *b) {
    int i = 0, j = 0;
    for (;;) {
        while (i < a->rank && a->d[i] == 1) i++;
        while (j < b->rank && b->d[j] == 1) j++;
        if (i == a->rank || j == b->rank) return i == a->rank && j == b->rank;
        if (a->d[i++] != b->d[j++]) return false;
    }
}

static cd_status shape_mismatch(const char *name, const cd_shape *want, const char *file, const cd_shape *got,
                                cd_error *err) {
    char a[160], b[160];
    return cd_err(err, CD_E_MODEL, "input '%s' expects %s (%lld values) but %s holds %s (%lld)", name,
                  cd_shape_str(want, a, sizeof a), (long long)cd_shape_numel(want), file,
                  cd_shape_str(got, b, sizeof b), (long long)cd_shape_numel(got));
}

static cd_status need_file(const char *path, cd_error *err) {
    struct stat st;
    if (stat(path, &st) != 0)
        return cd_err(err, CD_E_USAGE, "input file '%s': %s (check the path given to --input)", path, strerror(errno));
    if (!S_ISREG(st.st_mode)) return cd_err(err, CD_E_USAGE, "input file '%s' is not a regular file", path);
    return CD_OK;
}

/* ---------------- sources ---------------- */

static cd_status from_npy(const char *name, const cd_shape *shape, const char *path, cd_value *out, cd_error *err) {
    cd_status st = need_file(path, err);
    if (st) return st;
    cd_value v;
    if ((st = cd_npy_read(path, &v, err))) return st;
    if (cd_shape_numel(&v.shape) != cd_shape_numel(shape) || !same_ignoring_ones(&v.shape, shape)) {
        st = shape_mismatch(name, shape, path, &v.shape, err);
        cd_value_release(&v);
        return st;
    }
    if ((st = alloc_f32(shape, out, name, err))) {
        cd_value_release(&v);
        return st;
    }
    int64_t n = cd_shape_numel(shape);
    float *x = out->data;
    if (v.dtype == CD_F32)
        memcpy(x, v.data, (size_t)n * 4);
    else if (v.dtype == CD_F16)
        for (int64_t i = 0; i < n; i++) x[i] = cd_half_to_float(((const uint16_t *)v.data)[i]);
    else
        for (int64_t i = 0; i < n; i++) x[i] = (float)cd_value_get(&v, i);
    cd_value_release(&v);
    return CD_OK;
}

static cd_status from_bin(const char *name, const cd_shape *shape, const char *path, cd_value *out, cd_error *err) {
    cd_status st = need_file(path, err);
    if (st) return st;
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open input file '%s': %s", path, strerror(errno));
    fseek(f, 0, SEEK_END);
    long sz = ftell(f);
    rewind(f);
    int64_t n = cd_shape_numel(shape);
    char sb[160];
    if (n < 0 || sz != (long)(n * 4)) {
        fclose(f);
        return cd_err(err, CD_E_MODEL,
                      "input '%s' expects %s (%lld values = %lld bytes of float32) but %s holds %ld bytes", name,
                      cd_shape_str(shape, sb, sizeof sb), (long long)n, (long long)n * 4, path, sz);
    }
    if ((st = alloc_f32(shape, out, name, err))) {
        fclose(f);
        return st;
    }
    unsigned char *b = out->data;
    size_t got = fread(b, 1, (size_t)n * 4, f);
    fclose(f);
    if (got != (size_t)n * 4) {
        cd_value_release(out);
        return cd_err(err, CD_E_USAGE, "short read on '%s'", path);
    }
    /* the file is little-endian; swap on big-endian hosts */
    const uint16_t probe = 1;
    if (*(const unsigned char *)&probe == 0)
        for (int64_t i = 0; i < n; i++) {
            unsigned char t;
            t = b[4 * i];
            b[4 * i] = b[4 * i + 3];
            b[4 * i + 3] = t;
            t = b[4 * i + 1];
            b[4 * i + 1] = b[4 * i + 2];
            b[4 * i + 2] = t;
        }
    return CD_OK;
}

static cd_status from_h5_read(const char *name, const cd_shape *shape, const char *path, const char *dset,
                              cd_value *out, char *source, size_t sn, cd_error *err) {
    cd_status st = CD_OK;
    cd_dump_h5_quiet();
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return cd_err(err, CD_E_MODEL,
                      "input file '%s' is not an HDF5 file (give an HDF5 file, or a .npy, .bin or .png input)", path);
    }
    char dpath[600];
    if (dset && *dset)
        snprintf(dpath, sizeof dpath, "%s", dset);
    else {
        char esc[512];
        if (!cd_dump_escape(name, esc, sizeof esc)) return cd_err(err, CD_E_MODEL, "input name too long");
        snprintf(dpath, sizeof dpath, "/inputs/%s", esc);
    }
    snprintf(source, sn, "%s:%s", path, dpath);
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return cd_dump_h5_error(err, CD_E_MODEL, "cannot open HDF5 input file '%s'", path);
    /* H5Dopen on a missing path prints nothing (auto printing is off) but fails: say which */
    hid_t ds = H5Oexists_by_name(f, dpath, H5P_DEFAULT) > 0 ? H5Dopen2(f, dpath, H5P_DEFAULT) : -1;
    if (ds < 0) {
        H5Eclear2(H5E_DEFAULT);
        H5Fclose(f);
        return cd_err(err, CD_E_MODEL, "HDF5 input file '%s' has no dataset '%s'%s", path, dpath,
                      dset ? "" : " (not a cldiff dump of this model? give FILE.h5:/DATASET)");
    }
    hid_t sp = H5Dget_space(ds), t = H5Dget_type(ds);
    cd_shape fs = {0};
    int rank = H5Sget_simple_extent_ndims(sp);
    H5T_class_t cls = H5Tget_class(t);
    if (rank < 0 || rank > CD_MAX_RANK || (cls != H5T_FLOAT && cls != H5T_INTEGER)) {
        st = cd_err(err, CD_E_MODEL, "dataset '%s' in '%s' is not a numeric array of rank <= %d", dpath, path,
                    CD_MAX_RANK);
    } else {
        hsize_t dims[CD_MAX_RANK];
        H5Sget_simple_extent_dims(sp, dims, NULL);
        fs.rank = rank;
        for (int i = 0; i < rank; i++) fs.d[i] = (int64_t)dims[i];
        if (cd_shape_numel(&fs) != cd_shape_numel(shape) || !same_ignoring_ones(&fs, shape))
            st = shape_mismatch(name, shape, source, &fs, err);
    }
    if (!st) st = alloc_f32(shape, out, name, err);
    if (!st && cd_shape_numel(shape) > 0 &&
        H5Dread(ds, H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, out->data) < 0) {
        st = cd_dump_h5_error(err, CD_E_MODEL, "cannot read dataset '%s' of '%s'", dpath, path);
        cd_value_release(out);
    }
    H5Tclose(t);
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(f);
    return st;
}

typedef struct {
    const char *name, *path, *dset;
    const cd_shape *shape;
} h5_input_args;

static void from_h5_child(void *p) {
    const h5_input_args *a = p;
    cd_value v = {0};
    char src[700];
    cd_error e;
    if (from_h5_read(a->name, a->shape, a->path, a->dset, &v, src, sizeof src, &e) == CD_OK) cd_value_release(&v);
}

/* An HDF5 input is a file from anywhere: as for dumps (store/dump.h, cd_dump_run_isolated),
 * the same read runs first in a forked child, so a file that crashes the HDF5 library is
 * refused with a message instead of taking cldiff down. */
static cd_status from_h5(const char *name, const cd_shape *shape, const char *path, const char *dset, cd_value *out,
                         char *source, size_t sn, cd_error *err) {
    cd_status st = need_file(path, err);
    if (st) return st;
    h5_input_args a = {name, path, dset, shape};
    if ((st = cd_dump_run_isolated(path, from_h5_child, &a, err))) return st;
    return from_h5_read(name, shape, path, dset, out, source, sn, err);
}

/* Bilinear sample with half-pixel centres (align_corners=false), edges clamped. */
static void resize_bilinear(const float *src, int sh, int sw, int c, float *dst, int dh, int dw) {
    float sy = (float)sh / (float)dh, sx = (float)sw / (float)dw;
    for (int y = 0; y < dh; y++) {
        float fy = ((float)y + 0.5f) * sy - 0.5f;
        if (fy < 0) fy = 0;
        int y0 = (int)fy;
        if (y0 > sh - 1) y0 = sh - 1;
        int y1 = y0 + 1 < sh ? y0 + 1 : sh - 1;
        float wy = fy - (float)y0;
        for (int x = 0; x < dw; x++) {
            float fx = ((float)x + 0.5f) * sx - 0.5f;
            if (fx < 0) fx = 0;
            int x0 = (int)fx;
            if (x0 > sw - 1) x0 = sw - 1;
            int x1 = x0 + 1 < sw ? x0 + 1 : sw - 1;
            float wx = fx - (float)x0;
            for (int k = 0; k < c; k++) {
                float a = src[((size_t)y0 * sw + x0) * c + k], b = src[((size_t)y0 * sw + x1) * c + k];
                float cc = src[((size_t)y1 * sw + x0) * c + k], d = src[((size_t)y1 * sw + x1) * c + k];
                float top = a + (b - a) * wx, bot = cc + (d - cc) * wx;
                dst[((size_t)y * dw + x) * c + k] = top + (bot - top) * wy;
            }
        }
    }
}

static cd_status from_png(const char *name, const cd_shape *shape, const char *path, const cd_input_opts *o,
                          cd_value *out, char *source, size_t sn, cd_error *err) {
    cd_status st = need_file(path, err);
    if (st) return st;
    char sb[160];
    int64_t N = 1, C, H, W;
    if (shape->rank == 4)
        N = shape->d[0], C = shape->d[1], H = shape->d[2], W = shape->d[3];
    else if (shape->rank == 3)
        C = shape->d[0], H = shape->d[1], W = shape->d[2];
    else
        return cd_err(err, CD_E_MODEL, "input '%s' has shape %s; an image input needs [N,C,H,W] or [C,H,W]", name,
                      cd_shape_str(shape, sb, sizeof sb));
    if (C != 1 && C != 3)
        return cd_err(err, CD_E_MODEL, "input '%s' has %lld channels (shape %s); PNG inputs need 1 or 3", name,
                      (long long)C, cd_shape_str(shape, sb, sizeof sb));
    if (H <= 0 || W <= 0 || H > 16384 || W > 16384 || N <= 0)
        return cd_err(err, CD_E_MODEL, "input '%s' shape %s is not a usable image size", name,
                      cd_shape_str(shape, sb, sizeof sb));
    float mean[4] = {0, 0, 0, 0}, stdv[4] = {1, 1, 1, 1};
    int nm = 0, ns = 0;
    if (o && o->mean) {
        if ((st = cd_parse_float_list("--mean", o->mean, mean, 4, &nm, err))) return st;
        if (nm != 1 && nm != C)
            return cd_err(err, CD_E_USAGE, "--mean has %d values; input '%s' has %lld channels", nm, name,
                          (long long)C);
        if (nm == 1) mean[1] = mean[2] = mean[0];
    }
    if (o && o->std) {
        if ((st = cd_parse_float_list("--std", o->std, stdv, 4, &ns, err))) return st;
        if (ns != 1 && ns != C)
            return cd_err(err, CD_E_USAGE, "--std has %d values; input '%s' has %lld channels", ns, name, (long long)C);
        if (ns == 1) stdv[1] = stdv[2] = stdv[0];
        for (int k = 0; k < C; k++)
            if (stdv[k] == 0) return cd_err(err, CD_E_USAGE, "--std value %d is 0", k + 1);
    }
    bool bgr = false;
    if (o && o->channel_order) {
        if (!strcasecmp(o->channel_order, "bgr"))
            bgr = true;
        else if (strcasecmp(o->channel_order, "rgb"))
            return cd_err(err, CD_E_USAGE, "--channel-order '%s': use rgb or bgr", o->channel_order);
    }
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    if (!png_image_begin_read_from_file(&img, path))
        return cd_err(err, CD_E_MODEL, "cannot read PNG '%s': %s (a damaged or not-PNG file: re-export the image)",
                      path, img.message);
    img.format = C == 1 ? PNG_FORMAT_GRAY : PNG_FORMAT_RGB;
    int ih = (int)img.height, iw = (int)img.width;
    if (img.height > 32768 || img.width > 32768) {
        png_image_free(&img);
        return cd_err(err, CD_E_MODEL, "PNG '%s' is %ux%u; images up to 32768x32768 are read", path, img.width,
                      img.height);
    }
    size_t bytes = PNG_IMAGE_SIZE(img);
    /* zeroed: an alpha channel is composited onto this buffer, i.e. onto black */
    png_bytep px = cd_calloc(bytes, 1, err);
    if (!px) {
        png_image_free(&img);
        return CD_E_NOMEM;
    }
    if (!png_image_finish_read(&img, NULL, px, 0, NULL)) {
        free(px);
        return cd_err(err, CD_E_MODEL, "cannot decode PNG '%s': %s", path, img.message);
    }
    if ((ih != H || iw != W) && !(o && o->resize)) {
        free(px);
        return cd_err(err, CD_E_MODEL,
                      "input '%s' expects %lldx%lld images (shape %s) but %s is %dx%d; "
                      "allow resizing (drop --no-resize) or resize the image",
                      name, (long long)W, (long long)H, cd_shape_str(shape, sb, sizeof sb), path, iw, ih);
    }
    int c = (int)C;
    float *hwc = malloc(sizeof(float) * (size_t)ih * (size_t)iw * (size_t)c);
    float *rs = NULL;
    if (!hwc) {
        free(px);
        return cd_err(err, CD_E_NOMEM, "out of memory decoding '%s'", path);
    }
    for (size_t i = 0; i < (size_t)ih * (size_t)iw * (size_t)c; i++) hwc[i] = (float)px[i] / 255.0f;
    free(px);
    if (ih != H || iw != W) {
        rs = malloc(sizeof(float) * (size_t)H * (size_t)W * (size_t)c);
        if (!rs) {
            free(hwc);
            return cd_err(err, CD_E_NOMEM, "out of memory resizing '%s'", path);
        }
        resize_bilinear(hwc, ih, iw, c, rs, (int)H, (int)W);
        free(hwc);
        hwc = rs;
    }
    if ((st = alloc_f32(shape, out, name, err))) {
        free(hwc);
        return st;
    }
    float *x = out->data;
    size_t plane = (size_t)H * (size_t)W;
    for (int k = 0; k < c; k++) {
        int srcc = bgr && c == 3 ? 2 - k : k;
        float m = mean[k], s = stdv[k];
        for (size_t i = 0; i < plane; i++) x[(size_t)k * plane + i] = (hwc[i * (size_t)c + (size_t)srcc] - m) / s;
    }
    for (int64_t b = 1; b < N; b++) memcpy(x + (size_t)b * plane * (size_t)c, x, plane * (size_t)c * sizeof(float));
    free(hwc);
    snprintf(source, sn, "%s (png %dx%d%s, %s, mean %g,%g,%g, std %g,%g,%g)", path, iw, ih,
             (ih != H || iw != W) ? " resized bilinear" : "", bgr ? "bgr" : "rgb", mean[0], mean[1], mean[2], stdv[0],
             stdv[1], stdv[2]);
    return CD_OK;
}

cd_status cd_input_from_spec(const char *name, int index, const cd_shape *shape, const char *spec,
                             const cd_input_opts *o, cd_value *out, char *source, size_t sn, cd_error *err) {
    memset(out, 0, sizeof *out);
    char dummy[8];
    if (!source) source = dummy, sn = sizeof dummy;
    snprintf(source, sn, "%s", spec ? spec : "random");
    uint64_t seed = o ? o->seed : 1;
    cd_status st;
    if (!spec || !*spec || !strcmp(spec, "random") || !strncmp(spec, "random:", 7)) {
        if (spec && !strncmp(spec, "random:", 7)) {
            char *end;
            errno = 0;
            unsigned long long s = strtoull(spec + 7, &end, 0);
            if (end == spec + 7 || *end || errno)
                return cd_err(err, CD_E_USAGE, "--input %s=%s: seed must be an integer (random:42)", name, spec);
            seed = s;
        }
        if ((st = alloc_f32(shape, out, name, err))) return st;
        cd_fill_random(out->data, cd_shape_numel(shape), seed, (uint64_t)index);
        snprintf(source, sn, "random uniform[-1,1) pcg32 seed=%llu stream=%d", (unsigned long long)seed, index);
        return CD_OK;
    }
    if (!strncmp(spec, "const:", 6)) {
        char *end;
        float v = strtof(spec + 6, &end);
        if (end == spec + 6 || *end)
            return cd_err(err, CD_E_USAGE, "--input %s=%s: '%s' is not a number (const:0.5)", name, spec, spec + 6);
        if ((st = alloc_f32(shape, out, name, err))) return st;
        float *x = out->data;
        for (int64_t i = 0, n = cd_shape_numel(shape); i < n; i++) x[i] = v;
        return CD_OK;
    }
    if (ends_with(spec, ".npy")) return from_npy(name, shape, spec, out, err);
    if (ends_with(spec, ".bin") || ends_with(spec, ".raw")) return from_bin(name, shape, spec, out, err);
    if (ends_with(spec, ".png")) return from_png(name, shape, spec, o, out, source, sn, err);
    if (ends_with(spec, ".h5") || ends_with(spec, ".hdf5"))
        return from_h5(name, shape, spec, NULL, out, source, sn, err);
    /* FILE.h5:/dataset */
    const char *colon = strstr(spec, ".h5:");
    size_t skip = 4;
    if (!colon) colon = strstr(spec, ".hdf5:"), skip = 6;
    if (colon) {
        size_t fl = (size_t)(colon - spec) + skip - 1;
        char *file = malloc(fl + 1);
        if (!file) return cd_err(err, CD_E_NOMEM, "out of memory");
        memcpy(file, spec, fl);
        file[fl] = 0;
        st = from_h5(name, shape, file, colon + skip, out, source, sn, err);
        free(file);
        return st;
    }
    return cd_err(err, CD_E_USAGE,
                  "--input %s=%s: unknown input spec (use random, random:SEED, const:VALUE, FILE.npy, FILE.bin, "
                  "FILE.h5:/DATASET, FILE.h5 (a cldiff dump) or FILE.png)",
                  name, spec);
}

void cd_inputs_free(cd_input_set *s) {
    if (!s) return;
    for (int i = 0; i < s->n; i++) {
        if (s->values) cd_value_release(&s->values[i]);
        if (s->names) free(s->names[i]);
        if (s->sources) free(s->sources[i]);
    }
    free(s->values);
    free(s->names);
    free(s->sources);
    memset(s, 0, sizeof *s);
}

/* chosen[k] = the spec (NAME= stripped) given for model input k, or NULL. */
static cd_status assign_specs(const cd_graph *g, const char *const *specs, int n_specs, const char **chosen,
                              cd_error *err) {
    int n = g->n_inputs;
    cd_status st = CD_OK;
    char names[512];
    size_t no = 0;
    names[0] = 0;
    for (int k = 0; k < n && no < sizeof names - 64; k++)
        no += (size_t)snprintf(names + no, sizeof names - no, "%s%s", k ? ", " : "", g->tensors[g->inputs[k]].name);
    for (int i = 0; i < n_specs && !st; i++) {
        const char *s = specs[i];
        const char *eq = strchr(s, '=');
        int which = -1;
        const char *spec = s;
        if (eq) {
            for (int k = 0; k < n; k++) {
                const char *nm = g->tensors[g->inputs[k]].name;
                if (strlen(nm) == (size_t)(eq - s) && !strncmp(nm, s, (size_t)(eq - s))) {
                    which = k;
                    spec = eq + 1;
                }
            }
        }
        /* one input: "y=random" names an input the model lacks, unless it is a file's name */
        bool named = eq && !memchr(s, '/', (size_t)(eq - s)) && !memchr(s, '.', (size_t)(eq - s)) && access(s, F_OK);
        if (which < 0) {
            if (n == 1 && !named)
                which = 0;
            else if (eq)
                st = cd_err(err, CD_E_USAGE, "--input %s: the model has no input '%.*s' (inputs: %s)", s, (int)(eq - s),
                            s, names);
            else
                st = cd_err(err, CD_E_USAGE,
                            "--input %s: the model has %d inputs; write --input NAME=SPEC (inputs: %s)", s, n, names);
        }
        if (!st && chosen[which])
            st = cd_err(err, CD_E_USAGE, "--input given twice for '%s' ('%s' and '%s')",
                        g->tensors[g->inputs[which]].name, chosen[which], spec);
        if (!st) chosen[which] = spec;
    }
    return st;
}

cd_status cd_inputs_build(const cd_graph *g, const cd_shape *shapes, const char *const *specs, int n_specs,
                          const cd_input_opts *o, cd_input_set *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    int n = g->n_inputs;
    const char **chosen = cd_calloc((size_t)(n ? n : 1), sizeof *chosen, err);
    if (!chosen) return CD_E_NOMEM;
    cd_status st = assign_specs(g, specs, n_specs, chosen, err);
    if (!st) {
        out->values = cd_calloc((size_t)(n ? n : 1), sizeof *out->values, err);
        out->names = cd_calloc((size_t)(n ? n : 1), sizeof *out->names, err);
        out->sources = cd_calloc((size_t)(n ? n : 1), sizeof *out->sources, err);
        if (!out->values || !out->names || !out->sources)
            st = CD_E_NOMEM;
        else
            out->n = n;
    }
    for (int k = 0; k < n && !st; k++) {
        const char *nm = g->tensors[g->inputs[k]].name;
        char src[1024];
        out->names[k] = cd_strdup(nm);
        st = cd_input_from_spec(nm, k, &shapes[k], chosen[k], o, &out->values[k], src, sizeof src, err);
        if (!st) {
            out->sources[k] = cd_strdup(src);
            if (!out->names[k] || !out->sources[k]) st = cd_err(err, CD_E_NOMEM, "out of memory");
        }
    }
    free(chosen);
    if (st) cd_inputs_free(out);
    return st;
}

/* ---------------- shapes from input files ---------------- */

/* The shape an HDF5 input holds: the dims of DATASET, or of /inputs/<name> in a cldiff dump. */
static cd_status h5_shape_read(const char *name, const char *path, const char *dset, cd_shape *fs, cd_error *err) {
    cd_dump_h5_quiet();
    if (H5Fis_hdf5(path) <= 0) {
        H5Eclear2(H5E_DEFAULT);
        return cd_err(err, CD_E_MODEL,
                      "input file '%s' is not an HDF5 file (give an HDF5 file, or a .npy, .bin or .png input)", path);
    }
    char dpath[600];
    if (dset && *dset)
        snprintf(dpath, sizeof dpath, "%s", dset);
    else {
        char esc[512];
        if (!cd_dump_escape(name, esc, sizeof esc)) return cd_err(err, CD_E_MODEL, "input name too long");
        snprintf(dpath, sizeof dpath, "/inputs/%s", esc);
    }
    hid_t f = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    if (f < 0) return cd_dump_h5_error(err, CD_E_MODEL, "cannot open HDF5 input file '%s'", path);
    hid_t ds = H5Oexists_by_name(f, dpath, H5P_DEFAULT) > 0 ? H5Dopen2(f, dpath, H5P_DEFAULT) : -1;
    if (ds < 0) {
        H5Eclear2(H5E_DEFAULT);
        H5Fclose(f);
        return cd_err(err, CD_E_MODEL, "HDF5 input file '%s' has no dataset '%s'%s", path, dpath,
                      dset ? "" : " (not a cldiff dump of this model? give FILE.h5:/DATASET)");
    }
    cd_status st = CD_OK;
    hid_t sp = H5Dget_space(ds);
    int rank = H5Sget_simple_extent_ndims(sp);
    if (rank < 0 || rank > CD_MAX_RANK) {
        st = cd_err(err, CD_E_MODEL, "dataset '%s' in '%s' is not an array of rank <= %d", dpath, path, CD_MAX_RANK);
    } else {
        hsize_t dims[CD_MAX_RANK];
        H5Sget_simple_extent_dims(sp, dims, NULL);
        memset(fs, 0, sizeof *fs);
        fs->rank = rank;
        for (int i = 0; i < rank; i++) fs->d[i] = (int64_t)dims[i];
    }
    H5Sclose(sp);
    H5Dclose(ds);
    H5Fclose(f);
    return st;
}

typedef struct {
    const char *name, *path, *dset;
} h5_shape_args;

static void h5_shape_child(void *p) {
    const h5_shape_args *a = p;
    cd_shape fs;
    cd_error e;
    (void)h5_shape_read(a->name, a->path, a->dset, &fs, &e);
}

/* The shape held by the file of an --input spec: 1 with *fs set for .npy and HDF5 inputs, 0 for
 * specs without a shape of their own (random, const:, raw .bin, images), or an error. */
static int spec_file_shape(const char *name, const char *spec, cd_shape *fs, cd_error *err) {
    if (!spec || !*spec) return 0;
    if (ends_with(spec, ".npy")) {
        cd_value v;
        if (need_file(spec, err) || cd_npy_read(spec, &v, err)) return -1;
        *fs = v.shape;
        cd_value_release(&v);
        return 1;
    }
    const char *colon = strstr(spec, ".h5:");
    size_t skip = 4;
    if (!colon) colon = strstr(spec, ".hdf5:"), skip = 6;
    bool whole = ends_with(spec, ".h5") || ends_with(spec, ".hdf5");
    if (!whole && !colon) return 0;
    size_t fl = whole ? strlen(spec) : (size_t)(colon - spec) + skip - 1;
    char *file = malloc(fl + 1);
    if (!file) {
        cd_err(err, CD_E_NOMEM, "out of memory");
        return -1;
    }
    memcpy(file, spec, fl);
    file[fl] = 0;
    const char *dset = whole ? NULL : colon + skip;
    h5_shape_args a = {name, file, dset};
    cd_status st = need_file(file, err);
    if (!st) st = cd_dump_run_isolated(file, h5_shape_child, &a, err);
    if (!st) st = h5_shape_read(name, file, dset, fs, err);
    free(file);
    return st ? -1 : 1;
}

/* A file shape fitted to the declared one: leading size-1 dims added or dropped to reach the
 * declared rank; false when the ranks still differ (*bad_dim = -1) or a fixed dim differs
 * (*bad_dim = that dim). */
static bool fit_shape(const cd_shape *declared, const cd_shape *file, cd_shape *out, int *bad_dim) {
    *bad_dim = -1;
    cd_shape f = *file;
    if (declared->rank == 0) { /* nothing declared: the file's shape as it is */
        *out = f;
        return f.rank > 0;
    }
    while (f.rank > declared->rank && f.d[0] == 1) {
        memmove(f.d, f.d + 1, sizeof f.d[0] * (size_t)(f.rank - 1));
        f.rank--;
    }
    if (f.rank < declared->rank) {
        int pad = declared->rank - f.rank;
        memmove(f.d + pad, f.d, sizeof f.d[0] * (size_t)f.rank);
        for (int i = 0; i < pad; i++) f.d[i] = 1;
        f.rank = declared->rank;
    }
    *out = f;
    if (f.rank != declared->rank) return false;
    for (int i = 0; i < f.rank; i++)
        if (declared->d[i] >= 0 && declared->d[i] != f.d[i]) {
            *bad_dim = i;
            return false;
        }
    return true;
}

/* --shape against the declared rank and fixed dims, as an .npy input is: a wrong size would
 * otherwise surface as a shape error deep in the plan (op #28 of a classifier). */
cd_status cd_inputs_check_declared(const cd_graph *g, const char *const *shapes, int n_shapes, const cd_shape *out,
                                   char *override, size_t override_len, cd_error *err) {
    cd_status st = CD_OK;
    int n = g->n_inputs;
    size_t ol = 0;
    if (override && override_len) override[0] = 0;
    for (int i = 0; i < n_shapes && !st; i++) {
        for (int k = 0; k < n; k++) {
            const cd_tensor *t = &g->tensors[g->inputs[k]];
            size_t tl = strlen(t->name);
            if (strncmp(shapes[i], t->name, tl) || shapes[i][tl] != '=' || t->shape.rank == 0) continue;
            const cd_shape *ds = &t->shape, *gs = &out[k];
            char a[160], why[96] = "";
            if (gs->rank != ds->rank) {
                snprintf(why, sizeof why, "rank %d where the model has %d", gs->rank, ds->rank);
                st = cd_err(err, CD_E_USAGE,
                            "--shape %s: input '%s' is declared %s: %s (only the -1 dims may differ; `cldiff "
                            "inspect MODEL` shows the declared shapes)",
                            shapes[i], t->name, cd_shape_str(ds, a, sizeof a), why);
                break;
            }
            for (int d = 0; !why[0] && d < ds->rank; d++)
                if (ds->d[d] >= 0 && ds->d[d] != gs->d[d])
                    snprintf(why, sizeof why, "dim %d is %lld where the model fixes %lld", d, (long long)gs->d[d],
                             (long long)ds->d[d]);
            if (why[0] && override && ol < override_len)
                ol += (size_t)snprintf(override + ol, override_len - ol, "%s--shape %s: input '%s' is declared %s: %s",
                                       ol ? "; " : "", shapes[i], t->name, cd_shape_str(ds, a, sizeof a), why);
        }
    }
    return st;
}

cd_status cd_inputs_override_failed(const char *override, cd_error *err) {
    char m[CD_ERR_MSG];
    snprintf(m, sizeof m, "%s", err->msg);
    return cd_err(err, CD_E_USAGE,
                  "%s, and the model cannot take that size: %s (use the declared size, or change only the -1 dims; "
                  "`cldiff inspect MODEL` shows the declared shapes)",
                  override, m);
}

cd_status cd_inputs_resolve_shapes(const cd_graph *g, const char *const *shapes, int n_shapes, const char *const *specs,
                                   int n_specs, cd_shape *out, char *notice, size_t notice_len, cd_error *err) {
    int n = g->n_inputs;
    const char **chosen = cd_calloc((size_t)(n ? n : 1), sizeof *chosen, err);
    const char **all = cd_calloc((size_t)(n_shapes + n + 1), sizeof *all, err);
    char(*made)[CD_MAX_RANK * 24 + 600] = cd_calloc((size_t)(n ? n : 1), sizeof *made, err);
    char note[1024] = "";
    size_t nl = 0;
    cd_status st = !chosen || !all || !made ? CD_E_NOMEM : assign_specs(g, specs, n_specs, chosen, err);
    int n_all = 0;
    for (int i = 0; i < n_shapes && !st; i++) all[n_all++] = shapes[i];
    for (int k = 0; k < n && !st; k++) {
        const cd_tensor *t = &g->tensors[g->inputs[k]];
        const cd_shape *ds = &t->shape;
        bool dynamic = ds->rank == 0, given = false; /* rank 0: no declared shape (meta_version 0) */
        for (int d = 0; d < ds->rank; d++) dynamic |= ds->d[d] < 0;
        size_t tl = strlen(t->name);
        for (int i = 0; i < n_shapes; i++) given |= !strncmp(shapes[i], t->name, tl) && shapes[i][tl] == '=';
        if (!dynamic || given || !chosen[k]) continue;
        cd_shape fs, fit;
        int has = spec_file_shape(t->name, chosen[k], &fs, err);
        if (has < 0) {
            st = err ? err->code : CD_E_MODEL;
            break;
        }
        if (!has) continue;
        char a[160], b[160], why[96];
        int bad;
        if (!fit_shape(ds, &fs, &fit, &bad)) {
            if (bad >= 0)
                snprintf(why, sizeof why, "dim %d is %lld where the model fixes %lld", bad, (long long)fit.d[bad],
                         (long long)ds->d[bad]);
            else if (ds->rank == 0)
                snprintf(why, sizeof why, "a scalar, and the model declares no shape; give --shape %s=DIMS", t->name);
            else
                snprintf(why, sizeof why, "rank %d where the model has %d", fs.rank, ds->rank);
            st = cd_err(err, CD_E_MODEL,
                        "input '%s' is declared %s but %s holds %s: %s (only the -1 dims may "
                        "differ)",
                        t->name, cd_shape_str(ds, a, sizeof a), chosen[k], cd_shape_str(&fs, b, sizeof b), why);
            break;
        }
        int o = snprintf(made[k], sizeof made[k], "%s=", t->name);
        for (int d = 0; d < fit.rank && o < (int)sizeof made[k]; d++)
            o += snprintf(made[k] + o, sizeof made[k] - (size_t)o, "%s%lld", d ? "," : "", (long long)fit.d[d]);
        all[n_all++] = made[k];
        if (nl < sizeof note)
            nl += (size_t)snprintf(note + nl, sizeof note - nl, "%sinput '%s': shape %s taken from %s (%s%s)",
                                   nl ? "\n" : "", t->name, cd_shape_str(&fit, a, sizeof a), chosen[k],
                                   ds->rank ? "declared " : "no declared shape",
                                   ds->rank ? cd_shape_str(ds, b, sizeof b) : "");
    }
    if (!st) st = cd_resolve_input_shapes(g, all, n_all, out, notice, notice_len, err);
    if (!st) st = cd_inputs_check_declared(g, shapes, n_shapes, out, NULL, 0, err);
    if (!st && note[0] && notice && notice_len) {
        size_t used = strlen(notice);
        snprintf(notice + used, notice_len - used, "%s%s", used ? "\n" : "", note);
    }
    free(chosen);
    free(all);
    free(made);
    return st;
}
