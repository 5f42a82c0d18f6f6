/* --layers parser: one pass per comma-separated item, union into the mask. */
#include "probes/select.h"
#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

/* Edit distance, capped inputs (names are short; a long one only needs a rough score). */
static int edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > 64) la = 64;
    if (lb > 64) lb = 64;
    int prev[65], cur[65];
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int sub = prev[j - 1] + (a[i - 1] != b[j - 1]);
            int del = prev[j] + 1, ins = cur[j - 1] + 1;
            cur[j] = sub < del ? (sub < ins ? sub : ins) : (del < ins ? del : ins);
        }
        memcpy(prev, cur, sizeof(int) * (size_t)(lb + 1));
    }
    return prev[lb];
}

typedef struct { const char *name; int d; } cand;

static void consider(cand *best, int *nb, const char *name, const char *item) {
    if (!name || !*name) return;
    for (int i = 0; i < *nb; i++)
        if (!strcmp(best[i].name, name)) return;
    int d = edit_distance(item, name);
    int pos = *nb;
    while (pos > 0 && best[pos - 1].d > d) pos--;
    if (pos >= 5) return;
    int last = *nb < 5 ? *nb : 4;
    for (int i = last; i > pos; i--) best[i] = best[i - 1];
    best[pos] = (cand){name, d};
    if (*nb < 5) (*nb)++;
}

/* " (closest: a, b, c; `cldiff info MODEL` lists all N layers)" */
static void suggestions(const cd_graph *g, const char *item, bool types, char *buf, size_t n) {
    cand best[5];
    int nb = 0;
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (cd_select_never_probed(op)) continue;
        if (types) { consider(best, &nb, op->type, item); continue; }
        consider(best, &nb, op->name, item);
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id >= 0 && id < g->n_tensors) consider(best, &nb, g->tensors[id].name, item);
            }
    }
    size_t o = (size_t)snprintf(buf, n, " (closest %s: ", types ? "op types" : "names");
    for (int i = 0; i < nb && o < n; i++) o += (size_t)snprintf(buf + o, n - o, "%s%s", i ? ", " : "", best[i].name);
    if (o < n)
        snprintf(buf + o, n - o, "; `cldiff info MODEL` lists all %d layers; syntax: all, outputs, NAME, GLOB*, "
                 "op:TYPE, #N, #A-B)", g->n_ops);
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
    if (a > b)
        return cd_err(err, CD_E_USAGE, "--layers: range '%s' is backwards (write #%ld-%ld)", item, b, a);
    if (b >= g->n_ops)
        return cd_err(err, CD_E_USAGE, "--layers: op index %ld in '%s' is out of range: the model has %d ops (#0-%d)",
                      b, item, g->n_ops, g->n_ops - 1);
    *lo = (int)a;
    *hi = (int)b;
    return CD_OK;
bad:
    return cd_err(err, CD_E_USAGE, "--layers: bad op index item '%s' (write #N or #A-B, e.g. #3-17)", item);
}

static cd_status select_item(const cd_graph *g, const char *item, bool *mask, cd_error *err) {
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
        if (!hits) return cd_err(err, CD_E_USAGE, "--layers outputs: no op produces a model output (outputs are fed inputs)");
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
        suggestions(g, t, true, sug, sizeof sug);
        return cd_err(err, CD_E_USAGE, "--layers: no op of type '%s' in the model%s", t, sug);
    }
    bool glob = has_glob(item);
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        if (!name_match(item, op->name, glob) && !out_match(g, op, item, glob)) continue;
        raw_hits++;
        if (!cd_select_never_probed(op)) mask[i] = true, hits++;
    }
    if (hits) return CD_OK;
    if (raw_hits) return cd_err(err, CD_E_USAGE, "--layers: '%s' names only feed/fetch ops, which are never probed", item);
    suggestions(g, item, false, sug, sizeof sug);
    return cd_err(err, CD_E_USAGE, "--layers: %s '%s' matches no layer or tensor name%s", glob ? "pattern" : "name",
                  item, sug);
}

cd_status cd_select_layers(const cd_graph *g, const char *spec, bool *mask, int *n_selected, cd_error *err) {
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
        st = select_item(g, b, mask, err);
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
