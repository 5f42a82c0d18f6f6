/* prior_box and density_prior_box: SSD anchor generation from the feature-map and image
 * shapes (the data of both inputs is never read).
 *
 * Semantics follow Paddle's documented operators:
 *  - step: step_w/step_h attributes, or image size / feature size when either is 0;
 *    box centre (w + offset) * step_w, (h + offset) * step_h, in pixels;
 *  - prior_box: aspect ratios expanded from [1] by each attribute value not already
 *    present (|a - b| < 1e-6), followed by its reciprocal when flip; per min_size, with
 *    min_max_aspect_ratios_order the square min box, the sqrt(min*max) box, then the other
 *    ratios; without it every ratio (1 first) then the sqrt(min*max) box;
 *  - density_prior_box: per fixed size s (density d) and fixed ratio r, a d x d grid of
 *    boxes of size (s*sqrt(r), s/sqrt(r)) spaced shift = int(step_avg) / d pixels
 *    (integer division, step_avg = int((step_w + step_h) / 2)) around the cell centre;
 *    coordinates always clamped to [0, 1];
 *  - outputs Boxes and Variances [H, W, num_priors, 4] (density: [H*W*num_priors, 4]
 *    when flatten_to_2d); clip clamps every coordinate to [0, 1].
 * Arithmetic is float32 in both precisions (see ops_detect_table.c). */
#include "engine/ops.h"
#include <math.h>
#include <stdlib.h>

void cd_detect_store_f32(cd_value *v, int64_t off, const float *src, int64_t n);

/* Attribute lists are bounded so that per-cell work stays small and arrays live on the
 * stack; real models use a handful of sizes and ratios. */
#define MAX_LIST 64
#define MAX_PRIORS 4096

typedef struct {
    int fh, fw, ih, iw; /* feature and image sizes */
    float step_w, step_h, offset;
    float var[4];
    bool clip;
} prior_common;

/* Reads a FLOATS attribute into out[], the values as stored: Paddle-Lite computes box sizes from
 * them without checks (a 0, negative or NaN size gives such boxes); the counts come from the
 * list lengths. */
static cd_status read_floats(cd_op_ctx *c, const char *name, bool required, float *out, int *n) {
    const double *v = NULL;
    int k = cd_attr_floats(c->op, name, &v);
    if (k == 0 && required)
        return cd_op_fail(c, CD_E_MODEL, "attribute %s is missing or empty; the op needs at least one value", name);
    if (k > MAX_LIST)
        return cd_op_fail(c, CD_E_MODEL, "attribute %s has %d values; cldiff accepts at most %d", name, k, MAX_LIST);
    for (int i = 0; i < k; i++) out[i] = (float)v[i];
    *n = k;
    return CD_OK;
}

static cd_status read_common(cd_op_ctx *c, prior_common *p) {
    cd_value *in = cd_in_req(c, "Input", 0);
    if (!in) return CD_E_MODEL;
    cd_value *img = cd_in_req(c, "Image", 0);
    if (!img) return CD_E_MODEL;
    char b[96];
    if (in->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "Input must be 4-D [N,C,H,W], got %s", cd_shape_str(&in->shape, b, sizeof b));
    if (img->shape.rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "Image must be 4-D [N,C,H,W], got %s", cd_shape_str(&img->shape, b, sizeof b));
    for (int i = 2; i < 4; i++)
        if (in->shape.d[i] <= 0 || in->shape.d[i] > 65536 || img->shape.d[i] <= 0 || img->shape.d[i] > 65536)
            return cd_op_fail(c, CD_E_MODEL, "feature map and image sizes must be in 1..65536 (Input %s, Image %s)",
                              cd_shape_str(&in->shape, b, sizeof b), cd_shape_str(&img->shape, b + 48, sizeof b - 48));
    p->fh = (int)in->shape.d[2];
    p->fw = (int)in->shape.d[3];
    p->ih = (int)img->shape.d[2];
    p->iw = (int)img->shape.d[3];
    double sw = cd_attr_float(c->op, "step_w", 0.0), sh = cd_attr_float(c->op, "step_h", 0.0);
    double off = cd_attr_float(c->op, "offset", 0.5);
    /* steps and offset as stored (a negative or NaN step places centers there, as in Paddle-Lite) */
    if (sw == 0 || sh == 0) { /* both derived, as in Paddle, when either is unset */
        p->step_w = (float)p->iw / (float)p->fw;
        p->step_h = (float)p->ih / (float)p->fh;
    } else {
        p->step_w = (float)sw;
        p->step_h = (float)sh;
    }
    p->offset = (float)off;
    int nv = 0;
    cd_status s = read_floats(c, "variances", false, p->var, &nv);
    if (s) return s;
    if (nv == 0) { /* Paddle's default variances */
        p->var[0] = p->var[1] = 0.1f;
        p->var[2] = p->var[3] = 0.2f;
    } else if (nv != 4) {
        return cd_op_fail(c, CD_E_MODEL, "attribute variances has %d values; it needs exactly 4", nv);
    }
    p->clip = cd_attr_bool(c->op, "clip", false);
    return CD_OK;
}

static cd_status set_outputs(cd_op_ctx *c, const prior_common *p, int64_t num_priors, bool flat) {
    static const char *const slots[2] = {"Boxes", "Variances"};
    for (int k = 0; k < 2; k++) {
        cd_value *o = cd_out(c, slots[k], 0);
        if (!o) {
            if (k == 0) return cd_op_fail(c, CD_E_MODEL, "output Boxes is not connected");
            continue;
        }
        o->dtype = cd_act_dtype(c);
        if (flat) {
            o->shape.rank = 2;
            o->shape.d[0] = (int64_t)p->fh * p->fw * num_priors;
            o->shape.d[1] = 4;
        } else {
            o->shape.rank = 4;
            o->shape.d[0] = p->fh;
            o->shape.d[1] = p->fw;
            o->shape.d[2] = num_priors;
            o->shape.d[3] = 4;
        }
    }
    return CD_OK;
}

/* Clamps, stores boxes (n_boxes x 4 floats) and fills variances. */
static void write_outputs(cd_op_ctx *c, const prior_common *p, float *boxes, int64_t n_boxes) {
    if (p->clip)
        for (int64_t i = 0; i < n_boxes * 4; i++) boxes[i] = fminf(fmaxf(boxes[i], 0.0f), 1.0f);
    cd_detect_store_f32(cd_out(c, "Boxes", 0), 0, boxes, n_boxes * 4);
    cd_value *var = cd_out(c, "Variances", 0);
    if (!var) return;
    for (int64_t i = 0; i < n_boxes; i++) cd_detect_store_f32(var, i * 4, p->var, 4);
}

/* ------------------------------------------------------------------ prior_box */

typedef struct {
    prior_common p;
    float min_s[MAX_LIST], max_s[MAX_LIST], ar[2 * MAX_LIST + 1];
    int n_min, n_max, n_ar;
    bool mm_order;
} prior_attrs;

static cd_status prior_read(cd_op_ctx *c, prior_attrs *a) {
    cd_status s = read_common(c, &a->p);
    if (s) return s;
    if ((s = read_floats(c, "min_sizes", true, a->min_s, &a->n_min))) return s;
    if ((s = read_floats(c, "max_sizes", false, a->max_s, &a->n_max))) return s;
    if (a->n_max && a->n_max != a->n_min)
        return cd_op_fail(c, CD_E_MODEL, "max_sizes has %d values but min_sizes has %d; they must pair up", a->n_max,
                          a->n_min);
    /* max_sizes not above min_sizes: Paddle-Lite (kernels/host/prior_box_compute.h) takes
     * sqrt(min * max) as it comes; so does cldiff */
    float raw[MAX_LIST];
    int n_raw = 0;
    if ((s = read_floats(c, "aspect_ratios", false, raw, &n_raw))) return s;
    bool flip = cd_attr_bool(c->op, "flip", false);
    a->ar[0] = 1.0f;
    a->n_ar = 1;
    for (int i = 0; i < n_raw; i++) {
        bool seen = false;
        for (int j = 0; j < a->n_ar && !seen; j++) seen = fabsf(raw[i] - a->ar[j]) < 1e-6f;
        if (seen) continue;
        a->ar[a->n_ar++] = raw[i];
        if (flip) a->ar[a->n_ar++] = 1.0f / raw[i];
    }
    a->mm_order = cd_attr_bool(c->op, "min_max_aspect_ratios_order", false);
    return CD_OK;
}

static int64_t prior_count(const prior_attrs *a) { return (int64_t)a->n_ar * a->n_min + a->n_max; }

cd_status cd_prior_box_infer(cd_op_ctx *c) {
    prior_attrs a;
    cd_status s = prior_read(c, &a);
    if (s) return s;
    return set_outputs(c, &a.p, prior_count(&a), false);
}

static float *emit(float *o, float cx, float cy, float bw, float bh, const prior_common *p) {
    o[0] = (cx - bw) / (float)p->iw;
    o[1] = (cy - bh) / (float)p->ih;
    o[2] = (cx + bw) / (float)p->iw;
    o[3] = (cy + bh) / (float)p->ih;
    return o + 4;
}

cd_status cd_prior_box_run(cd_op_ctx *c) {
    prior_attrs a;
    cd_status s = prior_read(c, &a);
    if (s) return s;
    const prior_common *p = &a.p;
    int64_t np = prior_count(&a), n = (int64_t)p->fh * p->fw * np;
    float *boxes = cd_malloc((size_t)n * 4 * sizeof(float), c->err);
    if (!boxes) return CD_E_NOMEM;
    float *o = boxes;
    for (int h = 0; h < p->fh; h++)
        for (int w = 0; w < p->fw; w++) {
            float cx = ((float)w + p->offset) * p->step_w, cy = ((float)h + p->offset) * p->step_h;
            for (int k = 0; k < a.n_min; k++) {
                float mn = a.min_s[k];
                if (a.mm_order) {
                    o = emit(o, cx, cy, mn * 0.5f, mn * 0.5f, p);
                    if (a.n_max) {
                        float m = sqrtf(mn * a.max_s[k]) * 0.5f;
                        o = emit(o, cx, cy, m, m, p);
                    }
                    for (int r = 0; r < a.n_ar; r++) {
                        if (fabsf(a.ar[r] - 1.0f) < 1e-6f) continue;
                        float sr = sqrtf(a.ar[r]);
                        o = emit(o, cx, cy, mn * sr * 0.5f, mn / sr * 0.5f, p);
                    }
                } else {
                    for (int r = 0; r < a.n_ar; r++) {
                        float sr = sqrtf(a.ar[r]);
                        o = emit(o, cx, cy, mn * sr * 0.5f, mn / sr * 0.5f, p);
                    }
                    if (a.n_max) {
                        float m = sqrtf(mn * a.max_s[k]) * 0.5f;
                        o = emit(o, cx, cy, m, m, p);
                    }
                }
            }
        }
    write_outputs(c, p, boxes, n);
    free(boxes);
    return CD_OK;
}

/* ------------------------------------------------------------------ density_prior_box */

typedef struct {
    prior_common p;
    float sizes[MAX_LIST], ratios[MAX_LIST];
    int dens[MAX_LIST];
    int n_sizes, n_ratios;
    bool flat;
} density_attrs;

static cd_status density_read(cd_op_ctx *c, density_attrs *a) {
    cd_status s = read_common(c, &a->p);
    if (s) return s;
    if ((s = read_floats(c, "fixed_sizes", true, a->sizes, &a->n_sizes))) return s;
    if ((s = read_floats(c, "fixed_ratios", true, a->ratios, &a->n_ratios))) return s;
    const int64_t *d = NULL;
    int nd = cd_attr_ints(c->op, "densities", &d);
    if (nd != a->n_sizes)
        return cd_op_fail(c, CD_E_MODEL, "densities has %d values but fixed_sizes has %d; they must pair up", nd,
                          a->n_sizes);
    int64_t np = 0;
    for (int i = 0; i < nd; i++) {
        if (d[i] <= 0 || d[i] > 64)
            return cd_op_fail(c, CD_E_MODEL, "densities[%d] = %lld must be in 1..64", i, (long long)d[i]);
        a->dens[i] = (int)d[i];
        np += (int64_t)a->n_ratios * d[i] * d[i];
    }
    if (np > MAX_PRIORS)
        return cd_op_fail(c, CD_E_MODEL, "the attributes ask for %lld priors per cell; cldiff accepts at most %d",
                          (long long)np, MAX_PRIORS);
    a->flat = cd_attr_bool(c->op, "flatten_to_2d", false);
    return CD_OK;
}

static int64_t density_count(const density_attrs *a) {
    int64_t np = 0;
    for (int i = 0; i < a->n_sizes; i++) np += (int64_t)a->n_ratios * a->dens[i] * a->dens[i];
    return np;
}

cd_status cd_density_prior_box_infer(cd_op_ctx *c) {
    density_attrs a;
    cd_status s = density_read(c, &a);
    if (s) return s;
    return set_outputs(c, &a.p, density_count(&a), a.flat);
}

cd_status cd_density_prior_box_run(cd_op_ctx *c) {
    density_attrs a;
    cd_status s = density_read(c, &a);
    if (s) return s;
    const prior_common *p = &a.p;
    int64_t n = (int64_t)p->fh * p->fw * density_count(&a);
    float *boxes = cd_malloc((size_t)n * 4 * sizeof(float), c->err);
    if (!boxes) return CD_E_NOMEM;
    int step_avg = (int)((p->step_w + p->step_h) * 0.5f);
    float iw = (float)p->iw, ih = (float)p->ih, *o = boxes;
    for (int h = 0; h < p->fh; h++)
        for (int w = 0; w < p->fw; w++) {
            float cx = ((float)w + p->offset) * p->step_w, cy = ((float)h + p->offset) * p->step_h;
            for (int k = 0; k < a.n_sizes; k++) {
                int den = a.dens[k], shift = step_avg / den;
                /* Top-left sub-centre of the density grid inside this cell. */
                float dcx = cx - (float)step_avg * 0.5f + (float)shift * 0.5f;
                float dcy = cy - (float)step_avg * 0.5f + (float)shift * 0.5f;
                for (int r = 0; r < a.n_ratios; r++) {
                    float sr = sqrtf(a.ratios[r]);
                    float hw = a.sizes[k] * sr * 0.5f, hh = a.sizes[k] / sr * 0.5f;
                    for (int di = 0; di < den; di++)
                        for (int dj = 0; dj < den; dj++) {
                            float x = dcx + (float)(dj * shift), y = dcy + (float)(di * shift);
                            o[0] = fmaxf((x - hw) / iw, 0.0f);
                            o[1] = fmaxf((y - hh) / ih, 0.0f);
                            o[2] = fminf((x + hw) / iw, 1.0f);
                            o[3] = fminf((y + hh) / ih, 1.0f);
                            o += 4;
                        }
                }
            }
        }
    write_outputs(c, p, boxes, n);
    free(boxes);
    return CD_OK;
}
