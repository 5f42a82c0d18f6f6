/* yolo_box: decodes a YOLOv3 head [N, C, H, W] into boxes [N, A*H*W, 4] and class scores
 * [N, A*H*W, class_num] (Paddle's yolo_box).
 *
 * Channel layout per image: with iou_aware, A IoU maps come first; then, per anchor a,
 * 5 + class_num maps (tx, ty, tw, th, objectness, classes...). For cell (k, l) of anchor a
 * with ImgSize (img_h, img_w):
 *   conf = sigmoid(obj)  [iou_aware: conf^(1-f) * sigmoid(iou)^f]
 *   conf < conf_thresh -> box and scores stay 0;
 *   cx = (l + sigmoid(tx)*scale_x_y - 0.5*(scale_x_y-1)) * img_w / W  (cy alike with k, H)
 *   w  = exp(tw) * anchor_w[a] * img_w / (downsample_ratio * W)       (h alike)
 *   box = (cx - w/2, cy - h/2, cx + w/2, cy + h/2), clipped to [0, img - 1] if clip_bbox
 *   score[c] = conf * sigmoid(class c)
 * Output row index a*H*W + k*W + l. Arithmetic is float32 in both precisions
 * (see ops_detect_table.c). */
#include "engine/ops.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void cd_detect_load_f32(const cd_value *v, float *dst, int64_t n);
void cd_detect_store_f32(cd_value *v, int64_t off, const float *src, int64_t n);

#define MAX_ANCHORS 64

typedef struct {
    cd_value *x, *img, *boxes, *scores;
    int an, cls, down;
    float anchors[2 * MAX_ANCHORS];
    float conf_thresh, scale, iou_f;
    bool clip, iou_aware;
    int64_t n, ch, h, w;
} yolo;

static cd_status yolo_read(cd_op_ctx *c, yolo *y) {
    char b[96];
    if (!(y->x = cd_in_req(c, "X", 0))) return CD_E_MODEL;
    if (!(y->img = cd_in_req(c, "ImgSize", 0))) return CD_E_MODEL;
    y->boxes = cd_out(c, "Boxes", 0);
    y->scores = cd_out(c, "Scores", 0);
    if (!y->boxes || !y->scores) return cd_op_fail(c, CD_E_MODEL, "outputs Boxes and Scores must both be connected");
    const cd_shape *xs = &y->x->shape, *is = &y->img->shape;
    if (xs->rank != 4)
        return cd_op_fail(c, CD_E_MODEL, "X must be 4-D [N,C,H,W], got %s", cd_shape_str(xs, b, sizeof b));
    y->n = xs->d[0];
    y->ch = xs->d[1];
    y->h = xs->d[2];
    y->w = xs->d[3];
    if (is->rank != 2 || is->d[0] != y->n || is->d[1] != 2)
        return cd_op_fail(c, CD_E_MODEL, "ImgSize must be [N, 2] = [%lld, 2] (height, width per image), got %s",
                          (long long)y->n, cd_shape_str(is, b, sizeof b));
    const int64_t *an = NULL;
    int na = cd_attr_ints(c->op, "anchors", &an);
    if (na == 0 || na % 2 || na > 2 * MAX_ANCHORS)
        return cd_op_fail(c, CD_E_MODEL,
                          "anchors has %d values; it needs a non-empty list of (w, h) pairs, "
                          "at most %d pairs",
                          na, MAX_ANCHORS);
    for (int i = 0; i < na; i++) {
        if (an[i] <= 0 || an[i] > 1 << 20)
            return cd_op_fail(c, CD_E_MODEL, "anchors[%d] = %lld must be a positive size in pixels", i,
                              (long long)an[i]);
        y->anchors[i] = (float)an[i];
    }
    y->an = na / 2;
    int64_t cls = cd_attr_int(c->op, "class_num", 0), down = cd_attr_int(c->op, "downsample_ratio", 32);
    if (cls <= 0 || cls > 1 << 16)
        return cd_op_fail(c, CD_E_MODEL, "class_num = %lld must be in 1..65536", (long long)cls);
    if (down <= 0 || down > 1 << 16)
        return cd_op_fail(c, CD_E_MODEL, "downsample_ratio = %lld must be in 1..65536", (long long)down);
    y->cls = (int)cls;
    y->down = (int)down;
    y->iou_aware = cd_attr_bool(c->op, "iou_aware", false);
    int64_t want = (int64_t)y->an * (5 + y->cls + (y->iou_aware ? 1 : 0));
    if (y->ch != want)
        return cd_op_fail(c, CD_E_MODEL, "X has %lld channels but %d anchors x (5 + %d classes%s) need %lld",
                          (long long)y->ch, y->an, y->cls, y->iou_aware ? " + 1 IoU" : "", (long long)want);
    double ct = cd_attr_float(c->op, "conf_thresh", 0.01), sc = cd_attr_float(c->op, "scale_x_y", 1.0);
    double f = cd_attr_float(c->op, "iou_aware_factor", 0.5);
    /* values as stored, NaN/Inf and scale_x_y <= 0 included: Paddle-Lite computes with them (box
     * coordinates and comparisons; no count depends on them) */
    y->conf_thresh = (float)ct;
    y->scale = (float)sc;
    y->iou_f = (float)f;
    y->clip = cd_attr_bool(c->op, "clip_bbox", true);
    return CD_OK;
}

cd_status cd_yolo_box_infer(cd_op_ctx *c) {
    yolo y;
    cd_status s = yolo_read(c, &y);
    if (s) return s;
    int64_t m = (int64_t)y.an * y.h * y.w;
    y.boxes->dtype = y.scores->dtype = cd_act_dtype(c);
    y.boxes->shape.rank = y.scores->shape.rank = 3;
    y.boxes->shape.d[0] = y.scores->shape.d[0] = y.n;
    y.boxes->shape.d[1] = y.scores->shape.d[1] = m;
    y.boxes->shape.d[2] = 4;
    y.scores->shape.d[2] = y.cls;
    return CD_OK;
}

static inline float sigm(float x) { return 1.0f / (1.0f + expf(-x)); }

cd_status cd_yolo_box_run(cd_op_ctx *c) {
    yolo y;
    cd_status s = yolo_read(c, &y);
    if (s) return s;
    int64_t hw = y.h * y.w, m = (int64_t)y.an * hw, per_img = y.ch * hw;
    float *x = cd_malloc((size_t)(per_img + m * 4 + m * y.cls) * sizeof(float), c->err);
    if (!x) return CD_E_NOMEM;
    float *bx = x + per_img, *sc = bx + m * 4;
    float bias = -0.5f * (y.scale - 1.0f);
    float in_w = (float)y.down * (float)y.w, in_h = (float)y.down * (float)y.h;
    for (int64_t n = 0; n < y.n; n++) {
        /* One image at a time keeps the float copy small for f16 inputs. */
        if (y.x->dtype == CD_F32)
            memcpy(x, (const float *)y.x->data + n * per_img, (size_t)per_img * sizeof(float));
        else {
            cd_value one = *y.x;
            one.data = (char *)y.x->data + (size_t)(n * per_img) * cd_dtype_size(y.x->dtype);
            cd_detect_load_f32(&one, x, per_img);
        }
        float img_h = (float)cd_value_get(y.img, n * 2), img_w = (float)cd_value_get(y.img, n * 2 + 1);
        memset(bx, 0, (size_t)(m * 4 + m * y.cls) * sizeof(float));
        const float *base = y.iou_aware ? x + (int64_t)y.an * hw : x;
        for (int a = 0; a < y.an; a++) {
            const float *e = base + (int64_t)a * (5 + y.cls) * hw;
            for (int64_t k = 0; k < y.h; k++)
                for (int64_t l = 0; l < y.w; l++) {
                    int64_t p = k * y.w + l, row = a * hw + p;
                    float conf = sigm(e[4 * hw + p]);
                    if (y.iou_aware) {
                        float iou = sigm(x[a * hw + p]);
                        conf = powf(conf, 1.0f - y.iou_f) * powf(iou, y.iou_f);
                    }
                    if (!(conf >= y.conf_thresh)) continue; /* NaN conf is dropped too */
                    float cx = ((float)l + sigm(e[p]) * y.scale + bias) * img_w / (float)y.w;
                    float cy = ((float)k + sigm(e[hw + p]) * y.scale + bias) * img_h / (float)y.h;
                    float w = expf(e[2 * hw + p]) * y.anchors[2 * a] * img_w / in_w;
                    float h = expf(e[3 * hw + p]) * y.anchors[2 * a + 1] * img_h / in_h;
                    float *o = bx + row * 4;
                    o[0] = cx - w * 0.5f;
                    o[1] = cy - h * 0.5f;
                    o[2] = cx + w * 0.5f;
                    o[3] = cy + h * 0.5f;
                    if (y.clip) {
                        o[0] = fmaxf(o[0], 0.0f);
                        o[1] = fmaxf(o[1], 0.0f);
                        o[2] = fminf(o[2], img_w - 1.0f);
                        o[3] = fminf(o[3], img_h - 1.0f);
                    }
                    float *so = sc + row * y.cls;
                    for (int cl = 0; cl < y.cls; cl++) so[cl] = conf * sigm(e[(5 + cl) * hw + p]);
                }
        }
        cd_detect_store_f32(y.boxes, n * m * 4, bx, m * 4);
        cd_detect_store_f32(y.scores, n * m * y.cls, sc, m * y.cls);
    }
    free(x);
    return CD_OK;
}
