#include "report/png_heatmap.h"
#include <png.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

typedef struct membuf {
    uint8_t *p;
    size_t n, cap;
    bool oom;
} membuf;

static void write_mem(png_structp png, png_bytep data, png_size_t len) {
    membuf *m = png_get_io_ptr(png);
    if (m->oom) return;
    if (m->n + len > m->cap) {
        size_t nc = (m->cap ? m->cap * 2 : 4096);
        while (nc < m->n + len) nc *= 2;
        uint8_t *np = realloc(m->p, nc);
        if (!np) {
            m->oom = true;
            return;
        }
        m->p = np;
        m->cap = nc;
    }
    memcpy(m->p + m->n, data, len);
    m->n += len;
}

static void flush_mem(png_structp png) { (void)png; }

/* Dark blue -> teal -> yellow -> red: monotone in lightness for small errors up to hot. */
static void ramp(float t, uint8_t rgb[3]) {
    static const float stops[5][3] = {{13, 8, 135}, {0, 128, 160}, {80, 190, 90}, {250, 220, 40}, {220, 30, 30}};
    if (!(t >= 0)) t = 0;
    if (t > 1) t = 1;
    float x = t * 4;
    int i = (int)x;
    if (i >= 4) i = 3;
    float f = x - (float)i;
    for (int c = 0; c < 3; c++) rgb[c] = (uint8_t)(stops[i][c] + (stops[i + 1][c] - stops[i][c]) * f + 0.5f);
}

cd_status cd_heatmap_png(const float *v, int w, int h, int scale, uint8_t **out, size_t *len, cd_error *err) {
    *out = NULL;
    *len = 0;
    if (w <= 0 || h <= 0 || scale <= 0 || (int64_t)w * scale > 4096 || (int64_t)h * scale > 4096)
        return cd_err(err, CD_E_INTERNAL, "heatmap size %dx%d (scale %d) out of range", w, h, scale);
    float mx = 0;
    for (int64_t i = 0; i < (int64_t)w * h; i++)
        if (v[i] > mx) mx = v[i];
    int W = w * scale, H = h * scale;
    uint8_t *row = malloc((size_t)W * 3);
    membuf m = {0};
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, NULL, NULL, NULL);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    if (!row || !png || !info) {
        free(row);
        png_destroy_write_struct(&png, &info);
        return cd_err(err, CD_E_NOMEM, "out of memory rendering a heatmap");
    }
    if (setjmp(png_jmpbuf(png))) {
        free(row);
        free(m.p);
        png_destroy_write_struct(&png, &info);
        return cd_err(err, CD_E_INTERNAL, "libpng failed rendering a heatmap");
    }
    png_set_write_fn(png, &m, write_mem, flush_mem);
    png_set_IHDR(png, info, (png_uint_32)W, (png_uint_32)H, 8, PNG_COLOR_TYPE_RGB, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < H; y++) {
        for (int x = 0; x < W; x++) ramp(mx > 0 ? v[(int64_t)(y / scale) * w + x / scale] / mx : 0, row + 3 * x);
        png_write_row(png, row);
    }
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);
    if (m.oom) {
        free(m.p);
        return cd_err(err, CD_E_NOMEM, "out of memory rendering a heatmap");
    }
    *out = m.p;
    *len = m.n;
    return CD_OK;
}

char *cd_base64(const uint8_t *d, size_t n) {
    static const char tbl[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *s = malloc((n + 2) / 3 * 4 + 1), *p = s;
    if (!s) return NULL;
    size_t i = 0;
    for (; i + 2 < n; i += 3) {
        uint32_t v = (uint32_t)d[i] << 16 | (uint32_t)d[i + 1] << 8 | d[i + 2];
        *p++ = tbl[v >> 18];
        *p++ = tbl[(v >> 12) & 63];
        *p++ = tbl[(v >> 6) & 63];
        *p++ = tbl[v & 63];
    }
    if (i < n) {
        uint32_t v = (uint32_t)d[i] << 16 | (i + 1 < n ? (uint32_t)d[i + 1] << 8 : 0);
        *p++ = tbl[v >> 18];
        *p++ = tbl[(v >> 12) & 63];
        *p++ = i + 1 < n ? tbl[(v >> 6) & 63] : '=';
        *p++ = '=';
    }
    *p = 0;
    return s;
}
