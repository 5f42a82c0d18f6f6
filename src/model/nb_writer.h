/* Writer for Paddle-Lite .nb models, meta_version 2, laid out the way Paddle-Lite's own
 * writer does (docs/nb-format.md §1.3, §2.10): defaults omitted, empty strings/vectors present,
 * op inputs/outputs/attributes sorted by key, parameter records sorted by name. Used by
 * the test-data generator and by round-trip tests. */
#ifndef CD_NB_WRITER_H
#define CD_NB_WRITER_H
#include <stddef.h>
#include <stdint.h>
#include "model/graph.h"

cd_status cd_nb_write(const cd_graph *g, const char *path, cd_error *err);
/* *out is malloc'ed (caller frees). */
cd_status cd_nb_write_mem(const cd_graph *g, uint8_t **out, size_t *len, cd_error *err);
/* Same, in meta_version 1 (one CombinedParamsDesc FlatBuffer for all parameters, what
 * opt v2.7 wrote) or 2. No meta-1 file exists in the wild any more; the tests use this to
 * exercise the reader's meta-1 path. */
cd_status cd_nb_write_mem_meta(const cd_graph *g, int meta_version, uint8_t **out, size_t *len, cd_error *err);
#endif
