/* What the meta readers (nb_reader.c for meta 1 and 2, nb_meta0.c) decoded, checked and added
 * to the graph: variable declarations, parameter records and op attributes. Calls nothing of
 * the readers (both call it). */
#include "model/nb_reader.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

cd_status cd_nb_declare(cd_graph *g, const char *name, bool lod_tensor, int dtype, const int64_t *dims, int rank,
                        bool persistable, size_t file_off, cd_error *err) {
    if (!*name) return cd_err(err, CD_E_MODEL, "variable with an empty name (file offset %zu)", file_off);
    if (cd_graph_has_var(g, name))
        return cd_err(err, CD_E_MODEL, "variable '%s' is declared twice in block 0 (file offset %zu)", name, file_off);
    if (rank > CD_MAX_RANK)
        return cd_err(err, CD_E_MODEL, "variable '%s' has rank %d, over the limit %d (file offset %zu)", name, rank,
                      CD_MAX_RANK, file_off);
    for (int i = 0; i < rank; i++)
        if (dims[i] < -1)
            return cd_err(err, CD_E_MODEL, "variable '%s' has invalid dimension %lld at axis %d (file offset %zu)",
                          name, (long long)dims[i], i, file_off);
    if (dtype < 0) {
        /* A tensor declared with a container kind as element type: only a hint, use fp32. */
        if (lod_tensor) cd_graph_warn(g, "variable '%s' declares a non-element data type; assuming float32", name);
        dtype = CD_F32;
    }
    if (cd_graph_declare_var(g, name, (cd_dtype)dtype, dims, lod_tensor ? rank : 0, persistable && lod_tensor, err))
        return cd_err_prefix(err, "file offset %zu: ", file_off);
    return CD_OK;
}

cd_status cd_nb_param(cd_graph *g, const char *name, int dtype, const int64_t *dims, int rank, const uint8_t *data,
                      uint64_t data_len, size_t file_off, cd_error *err) {
    if (!*name) return cd_err(err, CD_E_MODEL, "parameter record with an empty name (file offset %zu)", file_off);
    if (dtype < 0 || dtype == CD_F64)
        return cd_err(err, CD_E_MODEL, "parameter '%s' has an element type Paddle-Lite cannot store (file offset %zu)",
                      name, file_off);
    if (rank > CD_MAX_RANK)
        return cd_err(err, CD_E_MODEL, "parameter '%s' has rank %d, over the limit %d (file offset %zu)", name, rank,
                      CD_MAX_RANK, file_off);
    cd_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return cd_err(err, CD_E_MODEL, "parameter '%s' has negative dimension %lld at axis %d (file offset %zu)",
                          name, (long long)dims[i], i, file_off);
        s.d[i] = dims[i];
    }
    int64_t ne = cd_shape_numel(&s);
    char sb[200];
    size_t es = cd_dtype_size((cd_dtype)dtype);
    if (ne < 0 || (uint64_t)ne > UINT64_MAX / es || (uint64_t)ne * es > SIZE_MAX)
        return cd_err(err, CD_E_MODEL, "parameter '%s' shape %s: element count overflows (file offset %zu)", name,
                      cd_shape_str(&s, sb, sizeof sb), file_off);
    uint64_t need = (uint64_t)ne * es;
    if (data_len < need)
        return cd_err(err, CD_E_MODEL,
                      "parameter '%s' (%s %s) needs %llu bytes but its data holds only %llu (file offset %zu)", name,
                      cd_dtype_name((cd_dtype)dtype), cd_shape_str(&s, sb, sizeof sb), (unsigned long long)need,
                      (unsigned long long)data_len, file_off);
    if (cd_graph_set_param(g, name, (cd_dtype)dtype, dims, rank, data, (size_t)data_len, err))
        return cd_err_prefix(err, "file offset %zu: ", file_off);
    return CD_OK;
}

cd_status cd_nb_add_attr(cd_graph *g, int oi, cd_attr *a, int n_blocks, cd_error *err) {
    const char *ot = g->ops[oi].type;
    if (a->type == CD_ATTR_BOOLS || a->type == CD_ATTR_BLOCK || a->type == CD_ATTR_BLOCKS)
        cd_graph_warn(g, "op #%d (%s): attribute '%s' has a kind opt never writes (%d); decoded anyway", oi, ot,
                      a->name, (int)a->type);
    if (a->name && !strcmp(a->name, "sub_block") && (a->type == CD_ATTR_INT || a->type == CD_ATTR_BLOCK) &&
        (a->i <= 0 || a->i >= n_blocks)) {
        cd_status st = cd_err(err, CD_E_MODEL, "op #%d (%s): sub_block %lld is not a valid block (model has %d)", oi,
                              ot, (long long)a->i, n_blocks);
        cd_op_add_attr(g, a, NULL); /* frees a */
        return st;
    }
    return cd_op_add_attr(g, a, err);
}
