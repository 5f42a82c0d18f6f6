/* A runtime tensor value: dtype, shape and host memory. */
#ifndef CD_VALUE_H
#define CD_VALUE_H
#include "model/graph.h"

typedef struct cd_value {
    cd_dtype dtype;   /* CD_F32 or CD_F16 for activations; integer types for index tensors */
    cd_shape shape;
    void *data;       /* host memory, row-major; NULL until allocated */
    size_t nbytes;
    bool owned;       /* data is freed by cd_value_release */
} cd_value;

cd_status cd_value_alloc(cd_value *v, cd_error *err);  /* allocates nbytes for dtype/shape */
void cd_value_release(cd_value *v);
int64_t cd_value_numel(const cd_value *v);
/* Reads element i as double / writes it (any dtype, half via cd_fp16). */
double cd_value_get(const cd_value *v, int64_t i);
void cd_value_set(cd_value *v, int64_t i, double x);
#endif
