/* Model inputs: one host float32 value per model input, in the plan's shapes, built from
 * a spec per input (--input NAME=SPEC, or --input SPEC for single-input models):
 *
 *   random | random:SEED   uniform in [-1, 1), deterministic on every machine (default)
 *   const:VALUE            every element VALUE (nan, inf accepted)
 *   FILE.npy               numpy array ('<f4' '<f2' '<f8' integers, bool), converted to float32
 *   FILE.bin | FILE.raw    raw float32 little-endian, exactly numel*4 bytes
 *   FILE.h5:/DATASET       a dataset of an HDF5 file (any numeric type)
 *   FILE.h5                a cldiff dump: replays its /inputs/<name>
 *   FILE.png               image: grayscale/RGB/RGBA, 8/16-bit; -> [0,1] -> (x-mean)/std, NCHW
 *
 * A file whose shape differs from the model's (other than in size-1 dims) is CD_E_MODEL:
 *   "input 'x' expects [1,3,64,64] (12288 values) but x.npy holds [1,3,32,32] (3072)".
 * A missing file is CD_E_USAGE.
 *
 * Random generator (so numpy users can reproduce it): PCG32 (XSH-RR, multiplier
 * 6364136223846793005) seeded like pcg32_srandom(seed, k) where k is the input's index
 * (feed col); value = (u32 >> 8) * 2^-24 * 2 - 1, exactly representable in float32, no libm:
 * bit-identical everywhere. (Uniform rather than Box-Muller: log/cos differ across libms.) */
#ifndef CD_INPUTS_H
#define CD_INPUTS_H
#include <stdint.h>
#include "model/graph.h"
#include "util/value.h"

typedef struct cd_input_opts {
    uint64_t seed;             /* --seed */
    bool resize;               /* PNG: bilinear resize to the model's H x W (else mismatch error) */
    const char *mean;          /* PNG: "0.485,0.456,0.406" (1 or C values, model channel order); NULL = 0 */
    const char *std;           /* PNG: same form; NULL = 1 */
    const char *channel_order; /* PNG: "rgb" (default) or "bgr": order of the model's channels */
} cd_input_opts;

typedef struct cd_input_set {
    int n;            /* = g->n_inputs */
    cd_value *values; /* float32, owned */
    char **names;     /* tensor names */
    char **sources;   /* where each came from, e.g. "x.npy" or "random uniform[-1,1) seed=1 stream=0" */
} cd_input_set;

/* shapes[k] is the plan shape of model input k (graph->inputs[k]). specs are the raw
 * --input strings; inputs without a spec are random. */
cd_status cd_inputs_build(const cd_graph *g, const cd_shape *shapes, const char *const *specs, int n_specs,
                          const cd_input_opts *o, cd_input_set *out, cd_error *err);
void cd_inputs_free(cd_input_set *s);

/* The shapes of the model inputs before planning (out[k] for graph->inputs[k]): as
 * cd_resolve_input_shapes (engine/plan.h) with the --shape strings, except that an input with
 * dynamic dims and no --shape of its own takes the shape of its --input file when the file
 * has one (FILE.npy, FILE.h5:/DATASET, a cldiff dump; not random, const:, .bin or .png):
 * leading size-1 dims are added or dropped to reach the declared rank, and every fixed dim
 * must match (else CD_E_MODEL naming both shapes). notice gets the usual notes and one line
 * per shape so taken ("input 'x': shape [1,3,48,192] taken from x.npy (declared [-1,3,-1,-1])").
 * A spec naming no model input, or given twice, is CD_E_USAGE as in cd_inputs_build. */
/* Each --shape NAME=dims (shapes) against input NAME's declared rank and fixed dims (resolved:
 * the shapes in use, per input). A different rank is CD_E_USAGE naming the option, the declared
 * shape and the rank. A fixed dim given another size is the user's explicit override (a fully
 * convolutional model takes other sizes, as Paddle-Lite's Resize allows): it is described in
 * override (may be NULL), and cd_inputs_override_failed turns a plan that then fails into a
 * usage error naming the option, so the failure never surfaces as a bare error at op #28. */
cd_status cd_inputs_check_declared(const cd_graph *g, const char *const *shapes, int n_shapes, const cd_shape *resolved,
                                   char *override, size_t override_len, cd_error *err);
/* The plan failed (err) after --shape overrode fixed dims (override, from cd_inputs_check_declared):
 * CD_E_USAGE naming the override and the plan's error. */
cd_status cd_inputs_override_failed(const char *override, cd_error *err);
cd_status cd_inputs_resolve_shapes(const cd_graph *g, const char *const *shapes, int n_shapes, const char *const *specs,
                                   int n_specs, cd_shape *out, char *notice, size_t notice_len, cd_error *err);

/* Builds one input from one spec (no NAME= prefix). index = model input index (random stream). */
cd_status cd_input_from_spec(const char *name, int index, const cd_shape *shape, const char *spec,
                             const cd_input_opts *o, cd_value *out, char *source, size_t source_len, cd_error *err);
/* The random generator documented above. */
void cd_fill_random(float *x, int64_t n, uint64_t seed, uint64_t stream);
/* Parses "a,b,c" (at most max values) for option `opt`; CD_E_USAGE on junk. */
cd_status cd_parse_float_list(const char *opt, const char *s, float *out, int max, int *n, cd_error *err);
#endif
