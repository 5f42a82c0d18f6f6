/* `cldiff ops`: the op types cldiff runs, per backend, from the op table
 * (src/engine/op_list.def) and the CPU and OpenCL registries; the hint of exit 8 ("unsupported
 * op") points here.
 *
 *   cldiff ops [--backend NAME] [TYPE ...]
 *
 * Without TYPE: every op type of the table with its bound family and where each op-by-op
 * backend runs it (cpu: its kernel; opencl: its kernel, or the CPU's for that op). With TYPEs:
 * those rows only, and exit 8 when one of them cannot run on the chosen backend (default: the
 * CPU, which every differential run uses as its reference). Whole-model engines run Paddle-Lite's
 * own kernels: `cldiff inspect MODEL --backends NAME` says where each op of a model runs. */
#include <stdio.h>
#include <string.h>
#include "cli/cli.h"
#include "backends/opencl/cl_ops.h"
#include "backends/registry.h"
#include "engine/op_list.h"
#include "engine/ops.h"
#include "util/suggest.h"

static const char *bound_name(cd_opl_bound b) {
    static const char *const n[] = {"generic",   "exact",     "elementwise", "transcendental", "accumulate",
                                    "normalize", "recurrent", "norm",        "detection",      "special"};
    return (int)b >= 0 && (size_t)b < sizeof n / sizeof *n ? n[b] : "?";
}

/* "kernel", "cpu-fallback" or "-" for type on an op-by-op backend. */
static const char *where(const cd_backend_def *d, const char *type) {
    bool cpu = cd_op_find(type) != NULL;
    if (d->opencl) return cd_cl_op_find(type) ? "kernel" : cpu ? "cpu-fallback" : "-";
    return cpu ? "kernel" : "-";
}

int cd_cmd_ops(int argc, char **argv) {
    const char *backend = NULL;
    const char *types[64];
    int nt = 0;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            printf("usage: cldiff ops [--backend NAME] [TYPE ...]   op types cldiff runs, per backend\n");
            return 0;
        } else if (!strcmp(a, "--backend") || !strcmp(a, "--backends")) {
            if (i + 1 >= argc) {
                fprintf(stderr, "cldiff ops: %s needs a backend name (cldiff ops --help)\n", a);
                return CD_E_USAGE;
            }
            backend = argv[++i];
        } else if (a[0] == '-') {
            static const char *const opts[] = {"--backend", "--help"};
            return cd_cli_unknown_option("ops", a, opts, 2);
        } else if (nt < 64)
            types[nt++] = a;
    }
    const cd_backend_def *only = NULL;
    if (backend && !(only = cd_backend_lookup(backend))) {
        char list[512];
        cd_backend_names(list, sizeof list);
        fprintf(stderr, "cldiff ops: --backend: unknown backend '%s' (known: %s)\n", backend, list);
        return CD_E_USAGE;
    }
    if (only && !only->op_by_op) {
        printf("%s is a whole-model engine: it runs Paddle-Lite's own kernels, and which exist depends on the "
               "Paddle-Lite build; `cldiff inspect MODEL --backends %s` says where each op of a model runs "
               "(docs/paddle-lite-engines.md)\n",
               only->name, only->name);
        return 0;
    }
    const cd_backend_def *cols[8];
    int nc = 0;
    for (int i = 0; i < cd_backend_count() && nc < 8; i++) {
        const cd_backend_def *d = cd_backend_at(i);
        if (d->op_by_op && (!only || d == only)) cols[nc++] = d;
    }
    const char *names[CD_OPID_COUNT];
    for (int i = 0; i < CD_OPID_COUNT; i++) names[i] = cd_op_info_at((cd_op_id)i)->type;
    int missing = 0;
    printf("%-32s %-15s", "type", "bound");
    for (int c = 0; c < nc; c++) printf(c + 1 < nc ? " %-13s" : " %s", cols[c]->name);
    printf("\n");
    int shown = 0;
    for (int i = 0; i < (nt ? nt : CD_OPID_COUNT); i++) {
        const char *type = nt ? types[i] : names[i];
        const cd_op_info *inf = cd_op_info_find(type);
        if (!inf && !cd_op_find(type)) {
            const char *near = cd_suggest(type, names, CD_OPID_COUNT);
            printf("%-32s not an op type cldiff knows%s%s%s\n", type, near ? " (did you mean " : "", near ? near : "",
                   near ? "?)" : "");
            missing++;
            continue;
        }
        bool any = false;
        for (int c = 0; c < nc; c++) any |= strcmp(where(cols[c], type), "-") != 0;
        if (!any && !nt && only) continue; /* --backend: what it runs */
        printf("%-32s %-15s", type, inf ? bound_name(inf->bound) : "?");
        for (int c = 0; c < nc; c++) printf(c + 1 < nc ? " %-13s" : " %s", where(cols[c], type));
        printf("\n");
        shown++;
        if (nt && !strcmp(where(only ? only : cols[0], type), "-")) missing++;
    }
    if (!nt)
        printf("\n%d op types%s (src/engine/op_list.def). cpu-fallback: the OpenCL run computes that op on the CPU "
               "(marked in the report). Whole-model engines (paddle-lite*) run Paddle-Lite's own kernels: `cldiff "
               "inspect MODEL --backends NAME`.\n",
               shown, only ? " on this backend" : "");
    if (missing)
        fprintf(stderr,
                "cldiff ops: %d of the op types given cannot run on %s (exit 8); the table lists those it runs\n",
                missing, only ? only->name : "cpu, cldiff's reference");
    return missing ? CD_E_UNSUPPORTED : 0;
}
