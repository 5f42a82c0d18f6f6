/* op_runner: runs ONE op on a backend from a text spec read on stdin; used by the Python
 * oracle tests (tests/oracle/harness.py). Spec lines (one per line, '#' starts a comment):
 *
 *   op <type>                      the op type, e.g. conv2d
 *   prec fp32|fp16                 run precision (default fp32)
 *   backend cpu|opencl             (default cpu)
 *   threads <n>                    CPU threads (default 1)
 *   int8 arm|dequant               int8 layers in integer arithmetic (backends/cpu/ops_int8.h)
 *                                  or dequantized in float (default dequant)
 *   repeat <n>                     run the op n times (one prepare) and print the median of its
 *                                  elapsed times to stderr: "op_us <median> <kernel>" (benchmarks,
 *                                  scripts/bench_int8_ops.py); outputs are those of the last run
 *   in <Slot> <file.npy> [param] [as <name>]
 *                                  one argument of input slot <Slot>; repeated lines for the
 *                                  same slot append arguments in order. `param` makes it a
 *                                  persistable parameter (weights); otherwise it is a model
 *                                  input fed by a feed op. <file> `-` = not connected.
 *                                  `as <name>` sets the variable name (default in_<Slot>_<k>)
 *   out <Slot> <file.npy> [as <name>]
 *                                  one argument of output slot <Slot>; `-` binds it without
 *                                  writing it (default name out_<Slot>_<k>)
 *   attr <name> <kind> <values...> kind: int long bool float float64 string (one value; an
 *                                  empty string is written "") or ints longs bools floats
 *                                  float64s strings (zero or more values)
 *
 * Outputs are written as .npy: float32 for fp32/fp16 runs (half values widened exactly),
 * integer tensors as stored. Exit status: 0, or the cd_status code with a message on stderr. */
#include "engine/executor.h"
#include "util/fp16.h"
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define MAX_ARGS 64
#define MAX_LINE 65536

typedef struct {
    char slot[64];
    char file[1024];
    char name[256];
    bool param, none;
} arg_t;

typedef struct {
    char op[64];
    cd_precision prec;
    bool opencl;
    int threads;
    int repeat;
    bool int8_arm;
    arg_t in[MAX_ARGS], out[MAX_ARGS];
    int n_in, n_out;
} spec_t;

/* ---------------------------------------------------------------- npy (private copy) */

static const char *npy_descr(cd_dtype t) {
    switch (t) {
    case CD_F32: return "<f4";
    case CD_F16: return "<f2";
    case CD_F64: return "<f8";
    case CD_I8: return "|i1";
    case CD_I16: return "<i2";
    case CD_I32: return "<i4";
    case CD_I64: return "<i8";
    case CD_U8: return "|u1";
    case CD_BOOL: return "|b1";
    default: return NULL;
    }
}

static int dtype_from_descr(const char *d) {
    if (d[0] != '<' && d[0] != '|' && d[0] != '=') return -1;
    for (int t = 0; t < CD_DTYPE_COUNT; t++) {
        const char *s = npy_descr((cd_dtype)t);
        if (s && !strcmp(s + 1, d + 1)) return t;
    }
    return -1;
}

static cd_status npy_load(const char *path, cd_value *v, cd_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open %s: %s", path, strerror(errno));
    unsigned char pre[12];
    cd_status st = CD_OK;
    char *hdr = NULL;
    if (fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6)) {
        st = cd_err(err, CD_E_MODEL, "%s: not a .npy file (bad magic at byte 0)", path);
        goto out;
    }
    size_t hl;
    if (pre[6] == 1)
        hl = pre[8] | (size_t)pre[9] << 8;
    else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 10, 1, 2, f) != 2) {
            st = cd_err(err, CD_E_MODEL, "%s: truncated header", path);
            goto out;
        }
        hl = pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else {
        st = cd_err(err, CD_E_MODEL, "%s: unsupported .npy version %d", path, pre[6]);
        goto out;
    }
    if (hl > 1 << 20) {
        st = cd_err(err, CD_E_MODEL, "%s: header length %zu too large", path, hl);
        goto out;
    }
    hdr = calloc(hl + 1, 1);
    if (!hdr || fread(hdr, 1, hl, f) != hl) {
        st = cd_err(err, CD_E_MODEL, "%s: truncated header", path);
        goto out;
    }
    char *d = strstr(hdr, "'descr'"), *fo = strstr(hdr, "'fortran_order'"), *sh = strstr(hdr, "'shape'");
    if (!d || !fo || !sh) {
        st = cd_err(err, CD_E_MODEL, "%s: header lacks descr/fortran_order/shape", path);
        goto out;
    }
    char descr[16] = {0};
    char *q = strchr(d + 7, '\'');
    if (!q || sscanf(q + 1, "%15[^']", descr) != 1) {
        st = cd_err(err, CD_E_MODEL, "%s: bad descr", path);
        goto out;
    }
    int dt = dtype_from_descr(descr);
    if (dt < 0) {
        st = cd_err(err, CD_E_MODEL, "%s: unsupported dtype '%s'", path, descr);
        goto out;
    }
    char *fv = strchr(fo + 15, ':');
    while (fv && (*fv == ':' || *fv == ' ')) fv++;
    if (!fv || !strncmp(fv, "True", 4)) {
        st = cd_err(err, CD_E_MODEL, "%s: fortran_order arrays are not supported (use np.ascontiguousarray)", path);
        goto out;
    }
    char *p = strchr(sh, '(');
    if (!p) {
        st = cd_err(err, CD_E_MODEL, "%s: bad shape", path);
        goto out;
    }
    p++;
    memset(v, 0, sizeof *v);
    v->dtype = (cd_dtype)dt;
    for (;;) {
        while (*p == ' ' || *p == ',') p++;
        if (*p == ')') break;
        char *end;
        long long x = strtoll(p, &end, 10);
        if (end == p || x < 0 || v->shape.rank == CD_MAX_RANK) {
            st = cd_err(err, CD_E_MODEL, "%s: bad shape entry", path);
            goto out;
        }
        v->shape.d[v->shape.rank++] = x;
        p = end;
    }
    if ((st = cd_value_alloc(v, err))) goto out;
    if (v->nbytes && fread(v->data, 1, v->nbytes, f) != v->nbytes) {
        cd_value_release(v);
        st = cd_err(err, CD_E_MODEL, "%s: data shorter than its shape says", path);
    }
out:
    free(hdr);
    fclose(f);
    return st;
}

static cd_status npy_save(const char *path, const cd_value *v, cd_error *err) {
    cd_value w = {0};
    const cd_value *src = v;
    cd_status st;
    if (v->dtype == CD_F16) { /* widen exactly */
        w.dtype = CD_F32;
        w.shape = v->shape;
        if ((st = cd_value_alloc(&w, err))) return st;
        int64_t n = cd_value_numel(v);
        for (int64_t i = 0; i < n; i++) ((float *)w.data)[i] = cd_half_to_float(((const uint16_t *)v->data)[i]);
        src = &w;
    }
    char hdr[512];
    int n = snprintf(hdr, sizeof hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", npy_descr(src->dtype));
    for (int i = 0; i < src->shape.rank; i++)
        n += snprintf(hdr + n, sizeof hdr - (size_t)n, "%lld,%s", (long long)src->shape.d[i],
                      i + 1 < src->shape.rank ? " " : "");
    n += snprintf(hdr + n, sizeof hdr - (size_t)n, "), }");
    int total = 10 + n + 1, pad = (64 - total % 64) % 64;
    memset(hdr + n, ' ', (size_t)pad);
    n += pad;
    hdr[n++] = '\n';
    FILE *f = fopen(path, "wb");
    if (!f) {
        cd_value_release(&w);
        return cd_err(err, CD_E_IO, "cannot create %s: %s", path, strerror(errno));
    }
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, (unsigned char)(n & 255), (unsigned char)(n >> 8)};
    bool ok = fwrite(pre, 1, 10, f) == 10 && fwrite(hdr, 1, (size_t)n, f) == (size_t)n &&
        (!src->nbytes || fwrite(src->data, 1, src->nbytes, f) == src->nbytes);
    ok = (fclose(f) == 0) && ok;
    cd_value_release(&w);
    return ok ? CD_OK : cd_err(err, CD_E_IO, "cannot write %s", path);
}

/* ---------------------------------------------------------------- spec parsing */

static int split(char *line, char **tok, int max) {
    int n = 0;
    char *p = line;
    while (*p && n < max) {
        while (*p == ' ' || *p == '\t' || *p == '\r' || *p == '\n') p++;
        if (!*p || *p == '#') break;
        tok[n++] = p;
        while (*p && *p != ' ' && *p != '\t' && *p != '\r' && *p != '\n') p++;
        if (*p) *p++ = 0;
    }
    return n;
}

static cd_status parse_attr(cd_graph *g, char **tok, int nt, int lineno, cd_error *err) {
    if (nt < 3) return cd_err(err, CD_E_USAGE, "line %d: attr needs <name> <kind> <values>", lineno);
    cd_attr a;
    memset(&a, 0, sizeof a);
    const char *k = tok[2];
    int nv = nt - 3;
    char **vals = tok + 3;
    struct {
        const char *name;
        cd_attr_type t;
        bool list;
    } kinds[] = {{"int", CD_ATTR_INT, 0},       {"long", CD_ATTR_LONG, 0},         {"bool", CD_ATTR_BOOL, 0},
                 {"float", CD_ATTR_FLOAT, 0},   {"float64", CD_ATTR_FLOAT64, 0},   {"string", CD_ATTR_STRING, 0},
                 {"ints", CD_ATTR_INTS, 1},     {"longs", CD_ATTR_LONGS, 1},       {"bools", CD_ATTR_BOOLS, 1},
                 {"floats", CD_ATTR_FLOATS, 1}, {"float64s", CD_ATTR_FLOAT64S, 1}, {"strings", CD_ATTR_STRINGS, 1}};
    int ki = -1;
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; i++)
        if (!strcmp(k, kinds[i].name)) ki = (int)i;
    if (ki < 0) return cd_err(err, CD_E_USAGE, "line %d: unknown attr kind '%s'", lineno, k);
    if (!kinds[ki].list && nv != 1)
        return cd_err(err, CD_E_USAGE, "line %d: attr kind %s takes exactly one value", lineno, k);
    a.type = kinds[ki].t;
    for (int i = 0; i < nv; i++) {
        if (a.type == CD_ATTR_STRING || a.type == CD_ATTR_STRINGS) continue;
        char *end;
        errno = 0;
        if (a.type == CD_ATTR_FLOAT || a.type == CD_ATTR_FLOAT64 || a.type == CD_ATTR_FLOATS ||
            a.type == CD_ATTR_FLOAT64S)
            (void)strtod(vals[i], &end);
        else
            (void)strtoll(vals[i], &end, 10);
        if (end == vals[i] || *end || errno)
            return cd_err(err, CD_E_USAGE, "line %d: attr %s: '%s' is not a valid %s value", lineno, tok[1], vals[i],
                          k);
    }
    a.name = cd_strdup(tok[1]);
    if (!a.name) return cd_err(err, CD_E_NOMEM, "out of memory");
    switch (a.type) {
    case CD_ATTR_INT:
    case CD_ATTR_LONG:
    case CD_ATTR_BOOL: a.i = strtoll(vals[0], NULL, 10); break;
    case CD_ATTR_FLOAT: a.f = (float)strtod(vals[0], NULL); break;
    case CD_ATTR_FLOAT64: a.f = strtod(vals[0], NULL); break;
    case CD_ATTR_STRING: a.s = cd_strdup(strcmp(vals[0], "\"\"") ? vals[0] : ""); break;
    case CD_ATTR_INTS:
    case CD_ATTR_LONGS:
    case CD_ATTR_BOOLS:
        a.n = nv;
        a.ints = calloc((size_t)(nv ? nv : 1), sizeof(int64_t));
        for (int i = 0; a.ints && i < nv; i++) a.ints[i] = strtoll(vals[i], NULL, 10);
        break;
    case CD_ATTR_FLOATS:
    case CD_ATTR_FLOAT64S:
        a.n = nv;
        a.floats = calloc((size_t)(nv ? nv : 1), sizeof(double));
        /* FLOATS hold float32 values exactly as a model file would */
        for (int i = 0; a.floats && i < nv; i++)
            a.floats[i] = a.type == CD_ATTR_FLOATS ? (double)(float)strtod(vals[i], NULL) : strtod(vals[i], NULL);
        break;
    case CD_ATTR_STRINGS:
        a.n = nv;
        a.strings = calloc((size_t)(nv ? nv : 1), sizeof(char *));
        for (int i = 0; a.strings && i < nv; i++) a.strings[i] = cd_strdup(strcmp(vals[i], "\"\"") ? vals[i] : "");
        break;
    default: break;
    }
    return cd_op_add_attr(g, &a, err);
}

static cd_status parse_arg(arg_t *a, char **tok, int nt, bool input, int lineno, cd_error *err) {
    if (nt < 3) return cd_err(err, CD_E_USAGE, "line %d: %s needs <Slot> <file.npy>", lineno, tok[0]);
    memset(a, 0, sizeof *a);
    snprintf(a->slot, sizeof a->slot, "%s", tok[1]);
    snprintf(a->file, sizeof a->file, "%s", tok[2]);
    a->none = !strcmp(tok[2], "-");
    for (int i = 3; i < nt; i++) {
        if (input && !strcmp(tok[i], "param"))
            a->param = true;
        else if (!strcmp(tok[i], "as") && i + 1 < nt)
            snprintf(a->name, sizeof a->name, "%s", tok[++i]);
        else
            return cd_err(err, CD_E_USAGE, "line %d: unexpected '%s'", lineno, tok[i]);
    }
    return CD_OK;
}

/* Fills default names: <in|out>_<Slot>_<k>, k counting arguments of that slot. */
static void default_names(arg_t *a, int n, const char *pre) {
    for (int i = 0; i < n; i++) {
        if (a[i].name[0]) continue;
        int k = 0;
        for (int j = 0; j < i; j++) k += !strcmp(a[j].slot, a[i].slot);
        snprintf(a[i].name, sizeof a[i].name, "%s_%s_%d", pre, a[i].slot, k);
    }
}

/* Adds the op's slots: arguments grouped by slot in first-appearance order. */
static cd_status add_slots(cd_graph *g, arg_t *a, int n, bool out, cd_error *err) {
    for (int i = 0; i < n; i++) {
        bool seen = false;
        for (int j = 0; j < i; j++) seen |= !strcmp(a[j].slot, a[i].slot);
        if (seen) continue;
        const char *names[MAX_ARGS];
        int m = 0;
        for (int j = i; j < n; j++)
            if (!strcmp(a[j].slot, a[i].slot)) names[m++] = a[j].none && !out ? "" : a[j].name;
        cd_status st =
            out ? cd_op_add_output(g, a[i].slot, names, m, err) : cd_op_add_input(g, a[i].slot, names, m, err);
        if (st) return st;
    }
    return CD_OK;
}

static cd_status add_int_attr(cd_graph *g, const char *name, int64_t v, cd_error *err) {
    cd_attr a;
    memset(&a, 0, sizeof a);
    a.name = cd_strdup(name);
    a.type = CD_ATTR_INT;
    a.i = v;
    return cd_op_add_attr(g, &a, err);
}

/* repeat: the op's elapsed times over n runs of the one-op plan (feed/fetch excluded) */
typedef struct {
    double *us;
    int n;
    char kernel[64];
} timing;
static void timing_done(void *user, int op_index, const cd_op_report *rep) {
    (void)op_index;
    timing *t = user;
    if (!strncmp(rep->kernel, "feed", 4) || !strncmp(rep->kernel, "fetch", 5) || !rep->kernel[0]) return;
    t->us[t->n++] = rep->elapsed_us;
    snprintf(t->kernel, sizeof t->kernel, "%s", rep->kernel);
}
static int cmp_double(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}
static cd_status timed_runs(const cd_plan *plan, cd_backend *b, const cd_value *inputs, int n, cd_error *err) {
    timing t = {calloc((size_t)n, sizeof(double)), 0, ""};
    if (!t.us) return cd_err(err, CD_E_NOMEM, "out of memory");
    cd_probe_sink sink = {.user = &t, .op_done = timing_done};
    cd_status st = CD_OK;
    for (int r = 0; r < n && !st; r++) {
        int before = t.n;
        st = cd_execute(plan, b, inputs, NULL, &sink, err);
        if (t.n > before + 1) t.n = before + 1; /* one timed op per run */
    }
    if (!st && t.n) {
        qsort(t.us, (size_t)t.n, sizeof(double), cmp_double);
        fprintf(stderr, "op_us %.3f %s\n", t.us[t.n / 2], t.kernel);
    }
    free(t.us);
    return st;
}

static cd_status run(FILE *in, cd_error *err) {
    static spec_t sp;
    memset(&sp, 0, sizeof sp);
    sp.threads = 1;
    cd_graph *g = cd_graph_new();
    if (!g) return cd_err(err, CD_E_NOMEM, "out of memory");
    cd_value vals_in[MAX_ARGS];
    memset(vals_in, 0, sizeof vals_in);
    cd_status st = CD_OK;
    cd_backend *b = NULL;
    cd_plan plan;
    bool planned = false;
    memset(&plan, 0, sizeof plan);
    char *line = malloc(MAX_LINE);
    char **attr_lines = calloc(4096, sizeof(char *));
    int n_attr = 0, lineno = 0;
    int *attr_lineno = calloc(4096, sizeof(int));
    if (!line || !attr_lines || !attr_lineno) {
        st = cd_err(err, CD_E_NOMEM, "out of memory");
        goto done;
    }
    /* Pass 1: read the spec (attrs are replayed after the op is created). */
    while (fgets(line, MAX_LINE, in)) {
        lineno++;
        char *copy = cd_strdup(line); /* attrs are split again after the op exists */
        if (!copy) {
            st = cd_err(err, CD_E_NOMEM, "out of memory");
            goto done;
        }
        char *tok[512];
        int nt = split(line, tok, 512);
        if (nt == 0 || strcmp(tok[0], "attr")) free(copy);
        if (nt == 0) continue;
        if (!strcmp(tok[0], "op") && nt == 2)
            snprintf(sp.op, sizeof sp.op, "%s", tok[1]);
        else if (!strcmp(tok[0], "prec") && nt == 2 && (!strcmp(tok[1], "fp32") || !strcmp(tok[1], "fp16")))
            sp.prec = !strcmp(tok[1], "fp16") ? CD_PREC_FP16 : CD_PREC_FP32;
        else if (!strcmp(tok[0], "backend") && nt == 2 && (!strcmp(tok[1], "cpu") || !strcmp(tok[1], "opencl")))
            sp.opencl = !strcmp(tok[1], "opencl");
        else if (!strcmp(tok[0], "threads") && nt == 2 && atoi(tok[1]) > 0)
            sp.threads = atoi(tok[1]);
        else if (!strcmp(tok[0], "repeat") && nt == 2 && atoi(tok[1]) > 0)
            sp.repeat = atoi(tok[1]);
        else if (!strcmp(tok[0], "int8") && nt == 2 && (!strcmp(tok[1], "arm") || !strcmp(tok[1], "dequant")))
            sp.int8_arm = !strcmp(tok[1], "arm");
        else if (!strcmp(tok[0], "in") || !strcmp(tok[0], "out")) {
            bool isin = tok[0][0] == 'i';
            int *cnt = isin ? &sp.n_in : &sp.n_out;
            if (*cnt == MAX_ARGS) {
                st = cd_err(err, CD_E_USAGE, "line %d: too many arguments", lineno);
                goto done;
            }
            if ((st = parse_arg(isin ? &sp.in[*cnt] : &sp.out[*cnt], tok, nt, isin, lineno, err))) goto done;
            (*cnt)++;
        } else if (!strcmp(tok[0], "attr")) {
            if (n_attr == 4096) {
                free(copy);
                st = cd_err(err, CD_E_USAGE, "line %d: too many attrs", lineno);
                goto done;
            }
            attr_lineno[n_attr] = lineno;
            attr_lines[n_attr++] = copy;
        } else {
            st = cd_err(err, CD_E_USAGE, "line %d: cannot parse '%s' (see the usage comment in op_runner.c)", lineno,
                        tok[0]);
            goto done;
        }
    }
    if (!sp.op[0]) {
        st = cd_err(err, CD_E_USAGE, "the spec has no 'op <type>' line");
        goto done;
    }
    default_names(sp.in, sp.n_in, "in");
    default_names(sp.out, sp.n_out, "out");
    /* Pass 2: variables. */
    int64_t none[1] = {0};
    if ((st = cd_graph_declare_var(g, "feed", CD_F32, none, 0, false, err))) goto done;
    if ((st = cd_graph_declare_var(g, "fetch", CD_F32, none, 0, false, err))) goto done;
    for (int i = 0; i < sp.n_in; i++) {
        arg_t *a = &sp.in[i];
        if (a->none) continue;
        if ((st = npy_load(a->file, &vals_in[i], err))) goto done;
        cd_value *v = &vals_in[i];
        if ((st = cd_graph_declare_var(g, a->name, v->dtype, v->shape.d, v->shape.rank, a->param, err))) goto done;
        if (a->param &&
            (st = cd_graph_set_param(g, a->name, v->dtype, v->shape.d, v->shape.rank, v->data, v->nbytes, err)))
            goto done;
    }
    for (int i = 0; i < sp.n_out; i++)
        if ((st = cd_graph_declare_var(g, sp.out[i].name, CD_F32, none, 0, false, err))) goto done;
    /* Pass 3: feed ops, the op, fetch ops. */
    int col = 0;
    for (int i = 0; i < sp.n_in; i++) {
        if (sp.in[i].none || sp.in[i].param) continue;
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= !strcmp(sp.in[j].name, sp.in[i].name);
        if (dup) continue;
        const char *x = "feed", *o = sp.in[i].name;
        if (!cd_graph_add_op(g, "feed", err)) {
            st = err->code;
            goto done;
        }
        if ((st = cd_op_add_input(g, "X", &x, 1, err)) || (st = cd_op_add_output(g, "Out", &o, 1, err)) ||
            (st = add_int_attr(g, "col", col++, err)))
            goto done;
    }
    if (!cd_graph_add_op(g, sp.op, err)) {
        st = err->code;
        goto done;
    }
    if ((st = add_slots(g, sp.in, sp.n_in, false, err)) || (st = add_slots(g, sp.out, sp.n_out, true, err))) goto done;
    for (int i = 0; i < n_attr; i++) {
        char *tok[4096];
        int nt = split(attr_lines[i], tok, 4096);
        if ((st = parse_attr(g, tok, nt, attr_lineno[i], err))) goto done;
    }
    col = 0;
    for (int i = 0; i < sp.n_out; i++) {
        const char *x = sp.out[i].name, *o = "fetch";
        if (!cd_graph_add_op(g, "fetch", err)) {
            st = err->code;
            goto done;
        }
        if ((st = cd_op_add_input(g, "X", &x, 1, err)) || (st = cd_op_add_output(g, "Out", &o, 1, err)) ||
            (st = add_int_attr(g, "col", col++, err)))
            goto done;
    }
    if ((st = cd_graph_finalize(g, err))) goto done;
    /* Plan with the fed inputs' shapes, in feed col order. */
    cd_shape shapes[MAX_ARGS];
    cd_value inputs[MAX_ARGS];
    int k = 0;
    for (int i = 0; i < sp.n_in; i++) {
        if (sp.in[i].none || sp.in[i].param) continue;
        bool dup = false;
        for (int j = 0; j < i; j++) dup |= !strcmp(sp.in[j].name, sp.in[i].name);
        if (dup) continue;
        shapes[k] = vals_in[i].shape;
        inputs[k++] = vals_in[i];
    }
    if ((st = cd_plan_build(g, shapes, sp.prec, &plan, err))) goto done;
    planned = true;
    cd_backend_opts bo;
    memset(&bo, 0, sizeof bo);
    bo.prec = sp.prec;
    bo.threads = sp.threads;
    bo.int8_arm = sp.int8_arm;
    if (sp.opencl) {
        st = cd_opencl_backend_open(&bo, &b, err);
    } else {
        st = cd_cpu_backend_open(&bo, &b, err);
    }
    if (st) goto done;
    if (sp.repeat > 0) {
        if ((st = timed_runs(&plan, b, inputs, sp.repeat, err))) goto done;
    } else if ((st = cd_execute(&plan, b, inputs, NULL, NULL, err))) {
        goto done;
    }
    for (int i = 0; i < sp.n_out; i++) {
        if (sp.out[i].none) continue;
        cd_value host;
        if ((st = b->vt->read(b, g->outputs[i], &host, err))) goto done;
        st = npy_save(sp.out[i].file, &host, err);
        cd_value_release(&host);
        if (st) goto done;
    }
done:
    if (b) cd_backend_close(b);
    if (planned) cd_plan_free(&plan);
    for (int i = 0; i < MAX_ARGS; i++) cd_value_release(&vals_in[i]);
    if (g && g->warnings && g->warnings_len && getenv("CD_OP_RUNNER_WARNINGS"))
        fprintf(stderr, "op_runner warnings:\n%s\n", g->warnings);
    cd_graph_free(g);
    for (int i = 0; i < n_attr; i++) free(attr_lines[i]);
    free(attr_lines);
    free(attr_lineno);
    free(line);
    return st;
}

int main(int argc, char **argv) {
    FILE *in = stdin;
    if (argc > 2 || (argc == 2 && (!strcmp(argv[1], "-h") || !strcmp(argv[1], "--help")))) {
        fprintf(stderr, "usage: op_runner [spec-file]   (spec on stdin by default; format in op_runner.c)\n");
        return CD_E_USAGE;
    }
    if (argc == 2 && !(in = fopen(argv[1], "r"))) {
        fprintf(stderr, "op_runner: cannot open %s: %s\n", argv[1], strerror(errno));
        return CD_E_USAGE;
    }
    cd_error err = {0};
    cd_status st = run(in, &err);
    if (in != stdin) fclose(in);
    if (st) {
        fprintf(stderr, "op_runner: %s: %s\n", cd_status_name(st), err.msg);
        return (int)st;
    }
    return 0;
}
