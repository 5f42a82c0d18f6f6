/* --layers parser: one pass per comma-separated item, union into the mask. */
#include "probes/select.h"
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "util/suggest.h"

bool cd_select_never_probed(const cd_op *op) {
    return op->type && (!strcmp(op->type, "feed") || !strcmp(op->type, "fetch"));
}

static bool has_glob(const char *s) { return strpbrk(s, "*?[") != NULL; }

static bool name_match(const char *pat, const char *name, bool glob) {
    if (!name) return false;
    return glob ? fnmatch(pat, name, 0) == 0 : strcmp(pat, name) == 0;
}

/* True when the op writes a tensor whose name matches. */
static bool out_match(const cd_graph *g, const cd_op *op, const char *pat, bool glob) {
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id >= 0 && id < g->n_tensors && name_match(pat, g->tensors[id].name, glob)) return true;
        }
    return false;
}

/* "; nearest names: a, b, c; `cldiff inspect MODEL` lists all N layers (--layers syntax: ...)":
 * the 5 names (layer and output tensor names, or op types) nearest to item by edit distance. */
static void suggestions(const cd_graph *g, const char *model, const char *item, bool types, char *buf, size_t n) {
    int cap = 0;
    for (int i = 0; i < g->n_ops; i++) cap += 1 + (types ? 0 : g->ops[i].n_out * 4);
    const char **names = malloc(sizeof *names * (size_t)(cap + 1));
    int nn = 0;
    for (int i = 0; names && i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (cd_select_never_probed(op)) continue;
        if (types) {
            names[nn++] = op->type;
            continue;
        }
        names[nn++] = op->name;
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0 || id >= g->n_tensors) continue;
                if (nn == cap) {
                    const char **more = realloc(names, sizeof *names * (size_t)(cap * 2 + 1));
                    if (!more) goto list;
                    names = more;
                    cap = cap * 2 + 1;
                }
                names[nn++] = g->tensors[id].name;
            }
    }
list:;
    int idx[5];
    int nb = names ? cd_nearest_k(item, names, nn, CD_SUGGEST_ANY, idx, 5) : 0;
    size_t o = 0;
    if (nb) o = (size_t)snprintf(buf, n, "; nearest %s: ", types ? "op types" : "names");
    for (int i = 0; i < nb && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", names[idx[i]]);
    free(names);
    if (o < n)
        snprintf(buf + o, n - o,
                 "; `cldiff inspect %s` lists all %d layers (--layers syntax: all, outputs, NAME, "
                 "GLOB*, op:TYPE, #N, #A-B)",
                 model ? model : "MODEL", g->n_ops);
}

/* "#5" or "#3-17" */
static cd_status parse_range(const cd_graph *g, const char *item, int *lo, int *hi, cd_error *err) {
    const char *p = item + 1;
    char *end;
    if (!isdigit((unsigned char)*p)) goto bad;
    long a = strtol(p, &end, 10), b = a;
    if (*end == '-') {
        p = end + 1;
        if (*p == '#') p++;
        if (!isdigit((unsigned char)*p)) goto bad;
        b = strtol(p, &end, 10);
    }
    if (*end) goto bad;
    if (a > b) return cd_err(err, CD_E_USAGE, "--layers: range '%s' is backwards (write #%ld-%ld)", item, b, a);
    if (b >= g->n_ops)
        return cd_err(err, CD_E_USAGE, "--layers: op index %ld in '%s' is out of range: the model has %d ops (#0-%d)",
                      b, item, g->n_ops, g->n_ops - 1);
    *lo = (int)a;
    *hi = (int)b;
    return CD_OK;
bad:
    return cd_err(err, CD_E_USAGE, "--layers: bad op index item '%s' (write #N or #A-B, e.g. #3-17)", item);
}

static cd_status select_item(const cd_graph *g, const char *model, const char *item, bool *mask, cd_error *err) {
    int hits = 0, raw_hits = 0; /* raw_hits counts feed/fetch too, to explain empty picks */
    char sug[768];
    if (!strcmp(item, "all")) {
        for (int i = 0; i < g->n_ops; i++)
            if (!cd_select_never_probed(&g->ops[i])) mask[i] = true, hits++;
        if (!hits) return cd_err(err, CD_E_USAGE, "--layers all: the model has no ops besides feed/fetch");
        return CD_OK;
    }
    if (!strcmp(item, "outputs")) {
        for (int k = 0; k < g->n_outputs; k++) {
            int id = g->outputs[k];
            int p = id >= 0 && id < g->n_tensors ? g->tensors[id].producer : -1;
            if (p >= 0 && p < g->n_ops && !cd_select_never_probed(&g->ops[p])) mask[p] = true, hits++;
        }
        if (!hits)
            return cd_err(err, CD_E_USAGE, "--layers outputs: no op produces a model output (outputs are fed inputs)");
        return CD_OK;
    }
    if (item[0] == '#') {
        int lo = 0, hi = -1;
        cd_status st = parse_range(g, item, &lo, &hi, err);
        if (st) return st;
        for (int i = lo; i <= hi; i++)
            if (!cd_select_never_probed(&g->ops[i])) mask[i] = true, hits++;
        if (!hits)
            return cd_err(err, CD_E_USAGE, "--layers: '%s' selects only feed/fetch ops, which are never probed", item);
        return CD_OK;
    }
    if (!strncmp(item, "op:", 3)) {
        const char *t = item + 3;
        if (!*t) return cd_err(err, CD_E_USAGE, "--layers: 'op:' needs an op type, e.g. op:conv2d");
        bool glob = has_glob(t);
        for (int i = 0; i < g->n_ops; i++) {
            if (!name_match(t, g->ops[i].type, glob)) continue;
            raw_hits++;
            if (!cd_select_never_probed(&g->ops[i])) mask[i] = true, hits++;
        }
        if (hits) return CD_OK;
        if (raw_hits) return cd_err(err, CD_E_USAGE, "--layers: feed/fetch ops ('%s') are never probed", item);
        suggestions(g, model, t, true, sug, sizeof sug);
        return cd_err(err, CD_E_USAGE, "--layers: no op of type '%s' in %s%s", t, model ? model : "the model", sug);
    }
    bool glob = has_glob(item);
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!name_match(item, op->name, glob) && !out_match(g, op, item, glob)) continue;
        raw_hits++;
        if (!cd_select_never_probed(op)) mask[i] = true, hits++;
    }
    if (hits) return CD_OK;
    if (raw_hits)
        return cd_err(err, CD_E_USAGE, "--layers: '%s' names only feed/fetch ops, which are never probed", item);
    suggestions(g, model, item, false, sug, sizeof sug);
    if (glob)
        return cd_err(err, CD_E_USAGE, "--layers: pattern '%s' matches no layer or tensor in %s%s", item,
                      model ? model : "the model", sug);
    return cd_err(err, CD_E_USAGE, "--layers: no layer or tensor '%s' in %s%s", item, model ? model : "the model", sug);
}

cd_status cd_select_layers(const cd_graph *g, const char *spec, bool *mask, int *n_selected, cd_error *err) {
    return cd_select_layers_in(g, NULL, spec, mask, n_selected, err);
}

cd_status cd_select_layers_in(const cd_graph *g, const char *model, const char *spec, bool *mask, int *n_selected,
                              cd_error *err) {
    for (int i = 0; i < g->n_ops; i++) mask[i] = false;
    if (n_selected) *n_selected = 0;
    if (!spec) spec = "";
    const char *p = spec;
    while (*p == ' ' || *p == '\t') p++;
    if (!*p) spec = "all";
    char *copy = cd_strdup(spec);
    if (!copy) return cd_err(err, CD_E_NOMEM, "out of memory parsing --layers");
    cd_status st = CD_OK;
    /* strtok_r would skip empty items; walk by hand so "a,,b" is reported */
    char *s = copy;
    for (;;) {
        char *comma = strchr(s, ',');
        if (comma) *comma = 0;
        char *b = s, *e = s + strlen(s);
        while (*b == ' ' || *b == '\t') b++;
        while (e > b && (e[-1] == ' ' || e[-1] == '\t')) *--e = 0;
        if (!*b) {
            st = cd_err(err, CD_E_USAGE, "--layers '%s': empty item (stray comma?)", spec);
            break;
        }
        st = select_item(g, model, b, mask, err);
        if (st) break;
        if (!comma) break;
        s = comma + 1;
    }
    free(copy);
    if (st) {
        for (int i = 0; i < g->n_ops; i++) mask[i] = false;
        return st;
    }
    int n = 0;
    for (int i = 0; i < g->n_ops; i++) n += mask[i];
    if (n_selected) *n_selected = n;
    return CD_OK;
}
