/* Element types, shapes and runtime tensor values: the lowest layer's view of a tensor (util/
 * is below model/, engine/, store/: every module that handles tensors includes this). */
#ifndef CD_VALUE_H
#define CD_VALUE_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"

#define CD_MAX_RANK 8

typedef enum { CD_F32 = 0, CD_F16, CD_I8, CD_I16, CD_I32, CD_I64, CD_U8, CD_BOOL, CD_F64, CD_DTYPE_COUNT } cd_dtype;
size_t cd_dtype_size(cd_dtype t);
const char *cd_dtype_name(cd_dtype t);

typedef struct {
    int rank;
    int64_t d[CD_MAX_RANK];
} cd_shape;
/* Element count; returns -1 on overflow / negative dims (product capped at 2^62). */
int64_t cd_shape_numel(const cd_shape *s);
bool cd_shape_eq(const cd_shape *a, const cd_shape *b);
/* Formats "[1,3,224,224]" into buf. */
const char *cd_shape_str(const cd_shape *s, char *buf, size_t n);

typedef struct cd_value {
    cd_dtype dtype; /* CD_F32 or CD_F16 for activations; integer types for index tensors */
    cd_shape shape;
    void *data; /* host memory, row-major; NULL until allocated */
    size_t nbytes;
    bool owned; /* data is freed by cd_value_release */
} cd_value;

cd_status cd_value_alloc(cd_value *v, cd_error *err); /* allocates nbytes for dtype/shape */
void cd_value_release(cd_value *v);
int64_t cd_value_numel(const cd_value *v);
/* Reads element i as double / writes it (any dtype, half via cd_fp16). */
double cd_value_get(const cd_value *v, int64_t i);
void cd_value_set(cd_value *v, int64_t i, double x);
#endif
