/* Graph IR: ops in execution order, SSA tensors, typed attributes, parameters.
 *
 * Paddle-Lite's memory optimizer reuses variable names, so the IR is in SSA form:
 * every write of a variable name creates a new tensor (same name, new id). An op's
 * inputs refer to the most recent tensor of that name at the op's position. Readers
 * build a graph through the name-based builder below and call cd_graph_finalize(). */
#ifndef CD_GRAPH_H
#define CD_GRAPH_H
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include "util/error.h"
#include "util/value.h"

/* FlatBuffers VarType_.Type (meta 1/2) -> cd_dtype; returns -1 when not an element type. */
int cd_dtype_from_fb(int fb_type);
int cd_dtype_to_fb(cd_dtype t);
/* meta-0 numbering (docs/nb-format.md §1.6) -> cd_dtype; -1 when not an element type. */
int cd_dtype_from_meta0(int t);

/* Attribute kinds: numbering of the FlatBuffers AttrType enum (§3.1). */
typedef enum {
    CD_ATTR_INT = 0,
    CD_ATTR_FLOAT = 1,
    CD_ATTR_STRING = 2,
    CD_ATTR_INTS = 3,
    CD_ATTR_FLOATS = 4,
    CD_ATTR_STRINGS = 5,
    CD_ATTR_BOOL = 6,
    CD_ATTR_BOOLS = 7,
    CD_ATTR_BLOCK = 8,
    CD_ATTR_LONG = 9,
    CD_ATTR_BLOCKS = 10,
    CD_ATTR_LONGS = 11,
    CD_ATTR_FLOAT64S = 12,
    CD_ATTR_VAR = 13,
    CD_ATTR_VARS = 14,
    CD_ATTR_FLOAT64 = 15
} cd_attr_type;

typedef struct cd_attr {
    char *name;
    cd_attr_type type;
    int64_t i;      /* INT, BOOL, BLOCK, LONG */
    double f;       /* FLOAT, FLOAT64 (FLOAT stored exactly as its float value) */
    char *s;        /* STRING */
    int n;          /* element count of the list kinds */
    int64_t *ints;  /* INTS, LONGS, BOOLS, BLOCKS */
    double *floats; /* FLOATS, FLOAT64S */
    char **strings; /* STRINGS */
} cd_attr;

/* One named input/output slot of an op: ordered tensor ids, -1 = not connected. */
typedef struct cd_slot {
    char *name;
    int n;
    int *ids;
} cd_slot;

/* Saved kernel choice (__@kernel_type_attr@__), §5. */
typedef struct cd_kernel_rec {
    bool present;
    char alias[48];
    int target, precision, layout; /* Paddle-Lite enum numbers, -1 when unparsable */
} cd_kernel_rec;
const char *cd_target_name(int t);
const char *cd_precision_name(int p);
const char *cd_layout_name(int l);

typedef struct cd_op {
    char *type; /* op type string, e.g. "conv2d" */
    char *name; /* layer name: "<type>_<k>", k counting ops of that type from 0 */
    int n_in, n_out, n_attr;
    cd_slot *in, *out;
    cd_attr *attrs;
    cd_kernel_rec kernel;
} cd_op;

typedef struct cd_tensor {
    char *name;       /* variable name in the model (not unique across tensors) */
    cd_dtype dtype;   /* declared element type (params: the stored record's type) */
    cd_shape shape;   /* declared shape (may contain -1); params: the record's shape */
    bool persistable; /* a parameter: data holds its bytes */
    void *data;       /* parameter bytes in dtype, row-major; NULL for activations */
    size_t nbytes;
    int producer; /* op index that writes it, -1 for inputs and params */
    int version;  /* how many earlier tensors had this name (SSA version) */
} cd_tensor;

typedef struct cd_graph {
    int meta_version;
    char opt_version[17];
    int64_t program_version;
    int n_tensors, cap_tensors;
    cd_tensor *tensors;
    int n_ops, cap_ops;
    cd_op *ops;
    int n_inputs, n_outputs;
    int *inputs;  /* tensor ids of model inputs in feed `col` order */
    int *outputs; /* tensor ids of model outputs in fetch `col` order */
    /* builder state (name -> current tensor id), private to graph.c */
    void *priv;
    /* warnings collected while reading (unknown attrs, oddities); one per line */
    char *warnings;
    size_t warnings_len;
} cd_graph;

/* ---- builder (used by readers and tests) ---- */
cd_graph *cd_graph_new(void);
void cd_graph_free(cd_graph *g);
/* Declares a variable of block 0 (dims may hold -1). Later declarations of the same name
 * are ignored. persistable=true marks a parameter that needs data (cd_graph_set_param). */
cd_status cd_graph_declare_var(cd_graph *g, const char *name, cd_dtype dtype, const int64_t *dims, int rank,
                               bool persistable, cd_error *err);
/* Stores parameter data (copied). dtype/shape of the record are authoritative. */
cd_status cd_graph_set_param(cd_graph *g, const char *name, cd_dtype dtype, const int64_t *dims, int rank,
                             const void *data, size_t nbytes, cd_error *err);
/* Appends an op; the returned pointer is valid until the next cd_graph_add_op. */
cd_op *cd_graph_add_op(cd_graph *g, const char *type, cd_error *err);
/* Binds a slot of the last-added op to variable names (empty string = not connected). */
cd_status cd_op_add_input(cd_graph *g, const char *slot, const char *const *names, int n, cd_error *err);
cd_status cd_op_add_output(cd_graph *g, const char *slot, const char *const *names, int n, cd_error *err);
/* Adds an attribute to the last-added op (ownership of a's arrays passes to the graph). */
cd_status cd_op_add_attr(cd_graph *g, cd_attr *a, cd_error *err);
/* Resolves names to SSA tensor ids, names ops, decodes kernel records, finds inputs and
 * outputs from feed/fetch `col`, checks that every persistable var got data and that
 * param sizes match shapes. */
cd_status cd_graph_finalize(cd_graph *g, cd_error *err);
void cd_graph_warn(cd_graph *g, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* An op cldiff has no definition of (an engine's op kept as mnn_<Type>) carries, once the engine
 * reported them, its outputs' types and shapes in this LONGS attribute: per output, in slot order,
 * the cd_dtype, the rank, the dims. The plan takes them as they are (engine/plan.c; the MNN
 * engines' shape pass, src/backends/mnn/mnn_shapes.c). */
#define CD_ENGINE_SHAPES_ATTR "engine_out_shapes"

/* ---- queries ---- */
const cd_attr *cd_op_attr(const cd_op *op, const char *name);
/* Typed getters with defaults; INT and BOOL are interchangeable for flags. */
int64_t cd_attr_int(const cd_op *op, const char *name, int64_t dflt);
bool cd_attr_bool(const cd_op *op, const char *name, bool dflt);
double cd_attr_float(const cd_op *op, const char *name, double dflt);
const char *cd_attr_str(const cd_op *op, const char *name, const char *dflt);
/* List getters: return element count (0 when absent) and point *out at the values. */
int cd_attr_ints(const cd_op *op, const char *name, const int64_t **out);
int cd_attr_floats(const cd_op *op, const char *name, const double **out);

const cd_slot *cd_op_in_slot(const cd_op *op, const char *slot);
const cd_slot *cd_op_out_slot(const cd_op *op, const char *slot);

/* Tensor id bound to slot[idx], or -1 if absent / not connected. */
int cd_op_in(const cd_op *op, const char *slot, int idx);
int cd_op_out(const cd_op *op, const char *slot, int idx);

/* Parameter data converted to float32 (caller frees); int8/int16 weights are returned as
 * their integer values (dequantization is the engine's job, see engine/params.h). */
float *cd_tensor_to_f32(const cd_tensor *t, cd_error *err);

/* Appended by the model layer: true when `name` was declared with cd_graph_declare_var
 * (readers use it to reject duplicate variable declarations, §8.4 rule 26). */
bool cd_graph_has_var(const cd_graph *g, const char *name);
#endif
