/* Error heatmaps as PNG (libpng, in memory) and base64 for inlining into HTML. */
#ifndef CD_PNG_HEATMAP_H
#define CD_PNG_HEATMAP_H
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

/* Renders w x h values (>= 0) with a perceptual colour ramp, scaled to max; each value
 * becomes a scale x scale block. *png is malloc'ed. */
cd_status cd_heatmap_png(const float *v, int w, int h, int scale, uint8_t **png, size_t *len, cd_error *err);
/* Base64 (RFC 4648, with padding); returns malloc'ed NUL-terminated text. */
char *cd_base64(const uint8_t *data, size_t n);
#endif
