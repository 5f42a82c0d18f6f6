#include "backends/registry.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "util/suggest.h"

/* Every backend, defined in its own module. Adding a backend: its module defines a
 * cd_backend_def, and one line here lists it (docs/design.md, "Adding a backend"). */
extern const cd_backend_def cd_backend_def_cpu;
extern const cd_backend_def cd_backend_def_opencl;
extern const cd_backend_def cd_backend_def_paddle_lite;
extern const cd_backend_def cd_backend_def_paddle_lite_x86;
extern const cd_backend_def cd_backend_def_paddle_lite_arm;
extern const cd_backend_def cd_backend_def_paddle_lite_opencl;
extern const cd_backend_def cd_backend_def_mnn_cpu, cd_backend_def_mnn_opencl, cd_backend_def_mnn_arm;
extern const cd_backend_def cd_backend_def_paddle_lite_phone;

static const cd_backend_def *const REGISTRY[] = {
    &cd_backend_def_cpu,
    &cd_backend_def_opencl,
    &cd_backend_def_paddle_lite_arm,
    &cd_backend_def_paddle_lite_opencl,
    &cd_backend_def_paddle_lite_phone,
    &cd_backend_def_paddle_lite,
    &cd_backend_def_paddle_lite_x86,
    &cd_backend_def_mnn_cpu,
    &cd_backend_def_mnn_opencl,
    &cd_backend_def_mnn_arm,
};
#define N_REGISTRY ((int)(sizeof REGISTRY / sizeof REGISTRY[0]))

int cd_backend_count(void) { return N_REGISTRY; }

const cd_backend_def *cd_backend_at(int i) { return i >= 0 && i < N_REGISTRY ? REGISTRY[i] : NULL; }

const cd_backend_def *cd_backend_lookup(const char *name) {
    for (int i = 0; name && i < N_REGISTRY; i++) {
        if (!strcmp(REGISTRY[i]->name, name)) return REGISTRY[i];
        for (int k = 0; k < 3 && REGISTRY[i]->aliases[k]; k++)
            if (!strcmp(REGISTRY[i]->aliases[k], name)) return REGISTRY[i];
    }
    return NULL;
}

const cd_backend_def *cd_backend_reference(void) {
    for (int i = 0; i < N_REGISTRY; i++)
        if (REGISTRY[i]->reference) return REGISTRY[i];
    return REGISTRY[0];
}

void cd_backend_names(char *buf, size_t n) {
    size_t off = 0;
    buf[0] = 0;
    for (int i = 0; i < N_REGISTRY && off < n; i++) {
        const cd_backend_def *d = REGISTRY[i];
        off += (size_t)snprintf(buf + off, n - off, "%s%s", i ? ", " : "", d->name);
        for (int k = 0; k < 3 && d->aliases[k] && off < n; k++)
            off += (size_t)snprintf(buf + off, n - off, "%s%s%s", k ? "/" : " (alias ", d->aliases[k],
                                    k + 1 < 3 && d->aliases[k + 1] ? "" : ")");
    }
}

/* All names and aliases, for the nearest-name suggestion. */
static int all_names(const char **out, int cap) {
    int n = 0;
    for (int i = 0; i < N_REGISTRY && n < cap; i++) {
        out[n++] = REGISTRY[i]->name;
        for (int k = 0; k < 3 && REGISTRY[i]->aliases[k] && n < cap; k++) out[n++] = REGISTRY[i]->aliases[k];
    }
    return n;
}

cd_status cd_backend_opt_check(const char *entry, cd_error *err) {
    const char *colon = strchr(entry, ':'), *eq = colon ? strchr(colon, '=') : NULL;
    if (!colon || !eq || colon == entry || eq == colon + 1)
        return cd_err(err, CD_E_USAGE, "--backend-opt '%s': expected NAME:key=value (e.g. opencl:platform=NVIDIA)",
                      entry);
    char name[64], key[64];
    snprintf(name, sizeof name, "%.*s", (int)(colon - entry), entry);
    snprintf(key, sizeof key, "%.*s", (int)(eq - colon - 1), colon + 1);
    const cd_backend_def *d = cd_backend_lookup(name);
    if (!d) {
        const char *names[32];
        int nn = all_names(names, 32);
        const char *near = cd_suggest(name, names, nn);
        char list[512];
        cd_backend_names(list, sizeof list);
        return cd_err(err, CD_E_USAGE, "--backend-opt '%s': unknown backend '%s'%s%s%s (backends: %s)", entry, name,
                      near ? "; did you mean " : "", near ? near : "", near ? "?" : "", list);
    }
    const char *keys[32];
    int nk = 0;
    char klist[512] = "";
    size_t off = 0;
    for (const cd_backend_optdef *o = d->opts; o && o->key && nk < 32; o++) {
        if (!strcmp(o->key, key)) return CD_OK;
        keys[nk++] = o->key;
        off += (size_t)snprintf(klist + off, off < sizeof klist ? sizeof klist - off : 0, "%s%s=%s", off ? ", " : "",
                                o->key, o->value);
    }
    const char *near = cd_suggest(key, keys, nk);
    return cd_err(err, CD_E_USAGE, "--backend-opt '%s': backend %s has no option '%s'%s%s%s (%s%s)", entry, d->name,
                  key, near ? "; did you mean " : "", near ? near : "", near ? "?" : "",
                  nk ? "its options: " : "it takes no options", klist);
}

cd_status cd_backend_apply_opts(cd_backend_opts *bo, cd_error *err) {
    for (int i = 0; i < N_REGISTRY; i++)
        if (REGISTRY[i]->apply_opts) {
            cd_status st = REGISTRY[i]->apply_opts(bo, err);
            if (st) return st;
        }
    return CD_OK;
}

cd_status cd_backend_available(const cd_backend_def *def, const cd_runner_req *q, cd_error *err) {
    return def && def->available ? def->available(q, err) : CD_OK;
}
