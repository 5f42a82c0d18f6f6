/* The shape pass (docs/mnn.md, "Ops cldiff does not map"): a .mnn model whose ops do not all map
 * onto cldiff's op table is planned from MNN's own shapes. The runner creates a session on MNN's
 * CPU with the outputs of those ops as saved tensors, feeds inputs of the run's shapes (zeros:
 * only their shapes matter to MNN's shape computation), runs it once and writes every saved
 * tensor's type and shape; each such op then carries them (CD_ENGINE_SHAPES_ATTR) and the plan
 * takes them as they are. Such ops are compared between engines, never checked locally. */
#define _GNU_SOURCE
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "backends/mnn/mnn_sdk.h"
#include "model/mnn_reader.h"
#include "util/npy.h"

/* MNN's halide type (code, bits) as cldiff's element type; -1 when cldiff has none. */
static int dtype_of(int code, int bits) {
    if (code == 2) return bits == 32 ? CD_F32 : bits == 16 ? CD_F16 : bits == 64 ? CD_F64 : -1;
    if (code == 0) return bits == 32 ? CD_I32 : bits == 8 ? CD_I8 : bits == 16 ? CD_I16 : bits == 64 ? CD_I64 : -1;
    if (code == 1) return bits == 8 ? CD_U8 : -1;
    return -1;
}

/* An op of MNN's model that stays named (not a mapped one, nor the feed and fetch ops cldiff adds). */
static bool from_mnn(const cd_op *op) {
    return strcmp(op->type, "feed") && strcmp(op->type, "fetch") && cd_attr_str(op, "mnn_type", NULL) &&
        !cd_mnn_op_mapped(op);
}

static void rm_dir(const char *dir) {
    static const char *const files[] = {"names.txt", "inputs.txt", "engine.log", "out/shapes.txt", "out/run.txt", NULL};
    char p[PATH_MAX + 64];
    for (int i = 0; files[i]; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        unlink(p);
    }
    for (int k = 0; k < 64; k++) {
        snprintf(p, sizeof p, "%s/input_%d.npy", dir, k);
        unlink(p);
    }
    snprintf(p, sizeof p, "%s/out", dir);
    rmdir(p);
    rmdir(dir);
}

/* Writes names.txt (the outputs of the ops that stay named; *ids: their tensor ids in that
 * order), inputs.txt and the zero inputs. */
static cd_status write_request(const cd_graph *g, const cd_shape *in_shapes, const char *dir, int **ids, int *n_ids,
                               cd_error *err) {
    char p[PATH_MAX + 64];
    *n_ids = 0;
    *ids = malloc(sizeof **ids * (size_t)(g->n_tensors ? g->n_tensors : 1));
    if (!*ids) return cd_err(err, CD_E_NOMEM, "out of memory");
    snprintf(p, sizeof p, "%s/names.txt", dir);
    FILE *f = fopen(p, "w");
    if (!f) return cd_err(err, CD_E_IO, "cannot write %s: %s", p, strerror(errno));
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!from_mnn(op)) continue;
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0 || strchr(g->tensors[id].name, '\n')) continue;
                fprintf(f, "%s\n", g->tensors[id].name);
                (*ids)[(*n_ids)++] = id;
            }
    }
    if (fclose(f) != 0) return cd_err(err, CD_E_IO, "cannot write %s", p);
    snprintf(p, sizeof p, "%s/inputs.txt", dir);
    if (!(f = fopen(p, "w"))) return cd_err(err, CD_E_IO, "cannot write %s: %s", p, strerror(errno));
    for (int k = 0; k < g->n_inputs; k++) fprintf(f, "%s\n", g->tensors[g->inputs[k]].name);
    if (fclose(f) != 0) return cd_err(err, CD_E_IO, "cannot write %s", p);
    for (int k = 0; k < g->n_inputs && k < 64; k++) {
        cd_dtype dt = g->tensors[g->inputs[k]].dtype;
        cd_value v = {.dtype = dt == CD_F16 || dt == CD_F64 ? CD_F32 : dt, .shape = in_shapes[k]};
        cd_status st = cd_value_alloc(&v, err);
        if (st) return st;
        memset(v.data, 0, v.nbytes);
        snprintf(p, sizeof p, "%s/input_%d.npy", dir, k);
        st = cd_npy_write(p, &v, err);
        cd_value_release(&v);
        if (st) return st;
    }
    return CD_OK;
}

/* Reads out/shapes.txt: line j is names.txt's line j. enc: the per-tensor encoding (dtype,
 * rank, dims), at[j] its start in enc, -1 when MNN keeps no such tensor. */
static cd_status read_shapes(const cd_graph *g, const char *dir, const int *ids, int n_ids, int64_t *enc, int *at,
                             cd_error *err) {
    char p[PATH_MAX + 64], line[4096];
    snprintf(p, sizeof p, "%s/out/shapes.txt", dir);
    FILE *f = fopen(p, "rb");
    if (!f) return cd_err(err, CD_E_BACKEND, "the MNN runner's shape pass left no %s", p);
    int j = 0, pos = 0;
    cd_status st = CD_OK;
    while (!st && j < n_ids && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        const char *name = g->tensors[ids[j]].name;
        at[j] = -1;
        if (line[0] == '-') {
            j++;
            continue;
        }
        char *q = line, *e;
        long code = strtol(q, &e, 10), bits = strtol(e, &q, 10), rank = strtol(q, &e, 10);
        int dt = dtype_of((int)code, (int)bits);
        if (rank < 0 || rank > CD_MAX_RANK) {
            st = cd_err(err, CD_E_BACKEND, "the MNN runner's shape pass: tensor '%s' has rank %ld", name, rank);
            break;
        }
        enc[pos] = dt;
        enc[pos + 1] = rank;
        q = e;
        for (long d = 0; d < rank; d++) {
            long long v = strtoll(q, &e, 10);
            if (e == q || v < 0) {
                st = cd_err(err, CD_E_BACKEND, "the MNN runner's shape pass: tensor '%s': bad dimension in '%s'", name,
                            line);
                break;
            }
            enc[pos + 2 + d] = v;
            q = e;
        }
        while (*q == ' ') q++;
        if (!st && strcmp(q, name))
            st = cd_err(err, CD_E_BACKEND, "the MNN runner's shape pass answered '%s' where '%s' was asked", q, name);
        at[j++] = pos;
        pos += 2 + (int)rank;
    }
    fclose(f);
    if (!st && j < n_ids)
        st = cd_err(err, CD_E_BACKEND, "the MNN runner's shape pass gave %d of %d shapes (%s)", j, n_ids, p);
    return st;
}

/* Every op that stays named gets its outputs' encoding. */
static cd_status attach(cd_graph *g, const int *ids, int n_ids, const int64_t *enc, const int *at, cd_error *err) {
    int j = 0;
    int64_t buf[(CD_MAX_RANK + 2) * 64];
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!from_mnn(op)) continue;
        int n = 0;
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0 || strchr(g->tensors[id].name, '\n')) continue;
                if (j >= n_ids || ids[j] != id)
                    return cd_err(err, CD_E_INTERNAL, "shape pass: outputs of op #%d out of order", i);
                const char *tn = g->tensors[id].name;
                if (at[j] < 0)
                    return cd_err(err, CD_E_UNSUPPORTED,
                                  "op #%d '%s' (MNN %s): MNN keeps no tensor '%s' once its session is resized, so "
                                  "cldiff cannot plan this op (it maps onto nothing of cldiff's op table); "
                                  "`cldiff inspect` lists what maps (docs/mnn.md)",
                                  i, cd_attr_str(op, "mnn_name", "?"), cd_attr_str(op, "mnn_type", "?"), tn);
                const int64_t *e = enc + at[j];
                if (e[0] < 0)
                    return cd_err(err, CD_E_UNSUPPORTED,
                                  "op #%d '%s' (MNN %s): its output '%s' has an element type cldiff does not hold "
                                  "(MNN's shape pass)",
                                  i, cd_attr_str(op, "mnn_name", "?"), cd_attr_str(op, "mnn_type", "?"), tn);
                int len = 2 + (int)e[1];
                if (n + len > (int)(sizeof buf / sizeof buf[0]))
                    return cd_err(err, CD_E_UNSUPPORTED, "op #%d: too many outputs for the shape pass", i);
                memcpy(buf + n, e, sizeof *e * (size_t)len);
                n += len;
                j++;
            }
        cd_status st = cd_mnn_set_engine_shapes(g, i, buf, n, err);
        if (st) return st;
    }
    return CD_OK;
}

int cd_mnn_unmapped_ops(const cd_graph *g) {
    int n = 0;
    for (int i = 0; cd_mnn_graph(g) && i < g->n_ops; i++) n += !cd_mnn_op_mapped(&g->ops[i]);
    return n;
}

cd_status cd_mnn_shape_pass(cd_graph *g, const char *model_path, const cd_shape *in_shapes, const char *sdk_given,
                            double timeout_s, bool quiet, cd_error *err) {
    int n_unmapped = cd_mnn_unmapped_ops(g);
    if (!n_unmapped) return CD_OK;
    for (int i = 0; i < g->n_ops; i++) {
        const char *t = cd_attr_str(&g->ops[i], "mnn_type", "");
        if (!strcmp(t, "While") || !strcmp(t, "If"))
            return cd_err(err, CD_E_UNSUPPORTED,
                          "op #%d '%s' is MNN control flow (%s, with subgraphs: an RNN loop as paddle2onnx and "
                          "mnnconvert write it); MNN's session API, which cldiff's MNN runner uses, does not run "
                          "control flow (MNN says \"Can't run session because not resized\"), only its Module "
                          "API does, which cldiff does not drive yet (docs/mnn.md, \"Zoo models\")",
                          i, cd_attr_str(&g->ops[i], "mnn_name", "?"), t);
    }
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    cd_mnn_sdk sdk;
    char exe[PATH_MAX];
    bool built = false;
    cd_status st = cd_mnn_sdk_find("mnn-cpu", sdk_given, false, &sdk, err);
    if (!st) st = cd_mnn_runner_get(&sdk, exe, sizeof exe, &built, err);
    if (st) return cd_err_prefix(err, "planning the MNN ops cldiff does not map (shape pass): ");
    const char *tmp = getenv("TMPDIR");
    char dir[PATH_MAX], od[PATH_MAX + 8], logp[PATH_MAX + 16], names[PATH_MAX + 16];
    snprintf(dir, sizeof dir, "%s/cldiff-mnn-shapes-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) return cd_err(err, CD_E_IO, "cannot create a work folder %s: %s", dir, strerror(errno));
    snprintf(od, sizeof od, "%s/out", dir);
    snprintf(logp, sizeof logp, "%s/engine.log", dir);
    snprintf(names, sizeof names, "%s/names.txt", dir);
    int *ids = NULL, n_ids = 0, *at = NULL;
    int64_t *enc = NULL;
    st = write_request(g, in_shapes, dir, &ids, &n_ids, err);
    if (!st && mkdir(od, 0777) != 0) st = cd_err(err, CD_E_IO, "cannot create '%s': %s", od, strerror(errno));
    int ws = 0;
    bool to = false;
    if (!st) {
        char *argv[] = {exe, (char *)model_path, dir, od, "--forward", "cpu", "--shapes", names, NULL};
        st = cd_mnn_spawn_wait(argv, logp, timeout_s > 0 ? timeout_s : 300, &ws, &to, NULL, err);
    }
    if (!st && (to || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0)) {
        char tail[900];
        cd_mnn_log_tail(logp, 3, tail, sizeof tail);
        st = cd_err(err, to || WIFSIGNALED(ws) ? CD_E_CRASH : CD_E_BACKEND,
                    "MNN's shape pass (the shapes of the %d ops cldiff does not map, from a session on MNN's CPU) "
                    "failed (%s): %s",
                    n_unmapped,
                    to                    ? "timed out"
                        : WIFSIGNALED(ws) ? "killed by a signal"
                                          : "runner exit status",
                    tail[0] ? tail : "no message");
    }
    if (!st) {
        enc = malloc(sizeof *enc * (size_t)(n_ids ? n_ids : 1) * (CD_MAX_RANK + 2));
        at = malloc(sizeof *at * (size_t)(n_ids ? n_ids : 1));
        if (!enc || !at) st = cd_err(err, CD_E_NOMEM, "out of memory");
    }
    if (!st) st = read_shapes(g, dir, ids, n_ids, enc, at, err);
    if (!st) st = attach(g, ids, n_ids, enc, at, err);
    int rebound = st ? 0 : cd_mnn_bind_reshapes(g, err);
    if (rebound < 0) st = err->code;
    free(ids);
    free(enc);
    free(at);
    rm_dir(dir);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (!st && !quiet)
        fprintf(stderr,
                "cldiff: note: %d MNN op%s of this model map%s onto nothing of cldiff's op table: planned from "
                "MNN's own shapes (a session on MNN's CPU, %.0f ms), compared between the engines and named "
                "unchecked (`cldiff inspect` lists them); %d reshape%s to a shape computed at run time checked "
                "as reshape2 to MNN's shape\n",
                n_unmapped - rebound, n_unmapped - rebound == 1 ? "" : "s", n_unmapped - rebound == 1 ? "s" : "",
                (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6, rebound,
                rebound == 1 ? "" : "s");
    return st;
}
