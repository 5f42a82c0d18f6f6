/* The local check of int8 layers when the reference run computed them in integer arithmetic
 * (--int8 arm, docs/int8.md §4, its int8 bound): such a layer is held to the int8 bound family
 * (compare/bounds.h CD_FAM_INT8) instead of the float accumulation bound. */
#ifndef CD_LOCAL_INT8_H
#define CD_LOCAL_INT8_H
#include <stdbool.h>
#include <stddef.h>
#include "compare/bounds.h"
#include "model/graph.h"
#include "store/dump.h"

/* Whether run `run` of the dump ran int8 layers in integer arithmetic (attribute int8_mode = arm). */
bool cd_local_run_int8_arm(const cd_dump_reader *r, const char *run);
/* When op i is an int8 conv2d/depthwise_conv2d/fc (ARM int8 kernel record, INT8 weights), turns
 * spec (from cd_local_spec: K, fused activation) into CD_FAM_INT8, rewrites desc and returns true.
 * r/run_a (may be NULL): the dump and A's run, for the range of an input off the int8 grid. */
bool cd_local_spec_int8(const cd_graph *g, int op_index, const cd_dump_reader *r, const char *run_a,
                        cd_bound_spec *spec, char *desc, size_t n);
#endif
