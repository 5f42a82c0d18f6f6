/* The --layers selection language: which ops get a probe.
 *
 *   all                 every op (default)
 *   outputs             the ops that produce model outputs
 *   conv2d_3            a layer (op name, "<type>_<k>") ...
 *   conv2d_0.tmp_0      ... or an output tensor name (every op that writes that name)
 *   conv2d_*            a glob (fnmatch: * ? [..]) over layer names and output tensor names
 *   op:TYPE             all ops of a type (TYPE may be a glob: op:*pool*)
 *   #5  #3-17           op indices (inclusive range, as `cldiff inspect` numbers them)
 *
 * Items are separated by commas and combine as a union; spaces around items are ignored.
 * feed and fetch ops are never probed (fetch outputs are the producer's data). Every item
 * must select at least one op: a typo is an error, not a silently empty dump. */
#ifndef CD_SELECT_H
#define CD_SELECT_H
#include <stdbool.h>
#include "model/graph.h"

/* Fills mask[0..g->n_ops) (caller allocated) and *n_selected (may be NULL).
 * spec NULL or "" means "all". Errors are CD_E_USAGE naming the item and listing valid
 * names close to it. */
cd_status cd_select_layers(const cd_graph *g, const char *spec, bool *mask, int *n_selected, cd_error *err);
/* The same; model (the .nb path, may be NULL) is named in messages ("no layer 'conv2d_9' in
 * m.nb; nearest names: ...; `cldiff inspect m.nb` lists all 42 layers"). */
cd_status cd_select_layers_in(const cd_graph *g, const char *model, const char *spec, bool *mask, int *n_selected,
                              cd_error *err);
/* True for ops that are never probed (feed, fetch). */
bool cd_select_never_probed(const cd_op *op);
#endif
