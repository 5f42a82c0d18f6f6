/* Reader for Paddle-Lite optimized models (.nb), meta versions 0, 1 and 2.
 * The file is treated as hostile: every offset, count and enum is checked (docs/nb-format.md §8);
 * failures return CD_E_MODEL with the byte offset (and op index where relevant). */
#ifndef CD_NB_READER_H
#define CD_NB_READER_H
#include <stddef.h>
#include <stdint.h>
#include "model/graph.h"

/* Missing/unreadable file -> CD_E_USAGE; malformed model -> CD_E_MODEL. */
cd_status cd_nb_load(const char *path, cd_graph **out, cd_error *err);
cd_status cd_nb_load_mem(const uint8_t *buf, size_t len, cd_graph **out, cd_error *err);

/* ---- shared by nb_reader.c, nb_meta0.c and nb_build.c (not for other modules) ---- */
#define CD_NB_HEADER 26
/* Parses a meta-0 topology (buf = its bytes, base = its file offset) into g. */
cd_status cd_nb_meta0_topology(cd_graph *g, const uint8_t *buf, size_t len, size_t base, cd_error *err);
/* Parses the meta-0 parameter section (to end of file) into g. */
cd_status cd_nb_meta0_params(cd_graph *g, const uint8_t *buf, size_t len, size_t base, cd_error *err);
/* Checks and adds a decoded attribute to the last op (op_index for messages); takes
 * ownership of a's arrays. n_blocks bounds `sub_block`. */
cd_status cd_nb_add_attr(cd_graph *g, int op_index, cd_attr *a, int n_blocks, cd_error *err);
/* Declares a block-0 variable from its decoded fields; kind/data_type are already in the
 * cd_dtype domain or -1. Rejects duplicates. */
cd_status cd_nb_declare(cd_graph *g, const char *name, bool lod_tensor, int dtype, const int64_t *dims, int rank,
                        bool persistable, size_t file_off, cd_error *err);
/* Validates a parameter record and stores it (dtype already mapped; data_len bytes at data). */
cd_status cd_nb_param(cd_graph *g, const char *name, int dtype, const int64_t *dims, int rank, const uint8_t *data,
                      uint64_t data_len, size_t file_off, cd_error *err);
#endif
