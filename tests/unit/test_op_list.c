/* The op table (src/engine/op_list.def) and everything that must stay in step with it: the CPU
 * registry, the OpenCL registry, the kernel-kind header generated for the kernels, the kernels'
 * use of K_ names, and the columns' own rules. A table out of step fails here (or, for a type
 * listed twice or a fused-activation kind moved, at build time: engine/op_list.c). */
#include <criterion/criterion.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>
#include "backends/opencl/backend_cl.h"
#include "backends/opencl/cl_ops.h"
#include "engine/op_list.h"
#include "engine/ops.h"

Test(op_list, sorted_and_found_by_type) {
    cr_assert_gt(CD_OPID_COUNT, 100);
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        cr_assert_eq(oi->id, (cd_op_id)i);
        if (i > 0)
            cr_assert_lt(strcmp(cd_op_info_at((cd_op_id)(i - 1))->type, oi->type), 0,
                         "op_list.def: '%s' must come after '%s' (entries sorted by type)",
                         cd_op_info_at((cd_op_id)(i - 1))->type, oi->type);
        cr_assert_eq(cd_op_info_find(oi->type), oi, "%s", oi->type);
        cr_assert_eq(cd_op_id_of(oi->type), (cd_op_id)i);
    }
    cr_assert_null(cd_op_info_find("no_such_op"));
    cr_assert_eq(cd_op_id_of("no_such_op"), CD_OPID_COUNT);
    cr_assert(cd_op_is_placement("io_copy") && cd_op_is_placement("layout_once") && !cd_op_is_placement("feed"));
}

Test(op_list, every_cpu_op_has_an_entry_and_every_entry_a_cpu_op) {
    const cd_op_def *const *defs = NULL;
    int n = cd_op_all(&defs);
    cr_assert_null(cd_op_registry_error());
    for (int i = 0; i < n; i++) {
        const cd_op_info *oi = cd_op_info_find(defs[i]->type);
        cr_assert_not_null(oi, "CPU op '%s' has no entry in src/engine/op_list.def", defs[i]->type);
        cr_assert(!(oi->flags & CD_OPL_NOCPU), "'%s' has a CPU kernel: drop CD_OPL_NOCPU", defs[i]->type);
        if (oi->group == CD_OPL_ACT)
            cr_assert(defs[i]->run == cd_op_find("relu")->run, "ACT op '%s' is not run by the unary kernel", oi->type);
    }
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        if (!(oi->flags & CD_OPL_NOCPU))
            cr_assert_not_null(cd_op_find(oi->type),
                               "'%s' is in op_list.def without CD_OPL_NOCPU but has no CPU kernel", oi->type);
    }
}

Test(op_list, act_ops_have_an_opencl_kernel_and_a_kind) {
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        if (oi->group != CD_OPL_ACT) continue;
        const cd_cl_op_def *d = cd_cl_op_find(oi->type);
        cr_assert_not_null(d, "ACT op '%s' has no OpenCL dispatcher", oi->type);
        cr_assert_str_eq(d->family, "eltwise", "%s", oi->type);
        cr_assert(oi->kind >= 0, "ACT op '%s' has no kind", oi->type);
        /* fused-activation kinds are cd_act_kind; the others start at 20 */
        cr_assert(oi->kind <= CD_ACT_SQRT || oi->kind >= 20, "%s: kind %d", oi->type, oi->kind);
    }
}

Test(op_list, columns_are_consistent) {
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        bool budget = oi->bound == CD_OPB_ELEMENTWISE || oi->bound == CD_OPB_TRANSCENDENTAL ||
            oi->bound == CD_OPB_NORMALIZE || oi->bound == CD_OPB_DETECTION;
        /* a budget only where the family has one (0 is one: a selection such as elementwise_max) */
        cr_assert(budget ? oi->ulps >= 0 : oi->ulps == 0, "%s: ulps %g does not go with its bound family", oi->type,
                  oi->ulps);
        cr_assert(!(oi->flags & CD_OPL_LINEAR) || oi->bound == CD_OPB_ELEMENTWISE, "%s: LINEAR is for ELEMENTWISE",
                  oi->type);
        for (int a = 0; a < CD_OP_MAX_ATTRS; a++) {
            const cd_op_attrdef *d = &oi->attrs[a];
            cr_assert((d->kind == CD_OPA_FLOAT || d->kind == CD_OPA_BOOL) == (d->name != NULL), "%s attr %d", oi->type,
                      a);
            cr_assert(oi->group == CD_OPL_ACT || d->kind == CD_OPA_NONE, "%s: attributes are for ACT ops", oi->type);
        }
    }
}

/* "#define K_<TYPE> <kind>" lines of the generated header, checked against the table both ways. */
Test(op_list, generated_kernel_kinds_match_the_table) {
    int seen[CD_OPID_COUNT] = {0}, lines = 0;
    const char *p = cd_cl_op_kinds;
    bool none = false;
    while ((p = strstr(p, "#define K_"))) {
        char name[128];
        int kind = -2;
        cr_assert_eq(sscanf(p, "#define K_%127s %d", name, &kind), 2, "malformed line: %.60s", p);
        p += 10;
        lines++;
        if (!strcmp(name, "NONE")) {
            cr_assert_eq(kind, 0);
            none = true;
            continue;
        }
        char lower[128];
        for (size_t i = 0; i <= strlen(name); i++) lower[i] = (char)tolower((unsigned char)name[i]);
        const cd_op_info *oi = cd_op_info_find(lower);
        cr_assert_not_null(oi, "K_%s has no op_list.def entry (rebuild: the header is generated)", name);
        cr_assert_eq(kind, oi->kind, "K_%s is %d, op_list.def says %d", name, kind, oi->kind);
        seen[oi->id]++;
    }
    cr_assert(none, "K_NONE missing");
    int with_kind = 0;
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        if (oi->kind >= 0) with_kind++;
        cr_assert_eq(seen[i], oi->kind >= 0 ? 1 : 0, "%s: %d K_ lines for kind %d", oi->type, seen[i], oi->kind);
    }
    cr_assert_eq(lines, with_kind + 1);
}

/* Every K_ name a kernel uses is in the generated header (the kernels define none themselves). */
Test(op_list, kernels_use_only_generated_kinds) {
    int uses = 0;
    for (int k = 0; cd_embedded_kernels[k].name; k++) {
        const char *src = cd_embedded_kernels[k].source;
        for (const char *p = src; (p = strstr(p, "K_")); p += 2) {
            if (p > src && (isalnum((unsigned char)p[-1]) || p[-1] == '_')) continue;
            char name[128];
            size_t l = 0;
            while (l < sizeof name - 1 && (isupper((unsigned char)p[l]) || isdigit((unsigned char)p[l]) || p[l] == '_'))
                name[l] = p[l], l++;
            name[l] = 0;
            if (l <= 2 || name[l - 1] == '_') continue; /* "K_<TYPE>", "K_ELEMENTWISE_<OP>" in comments */
            char def[160];
            snprintf(def, sizeof def, "#define %s ", name);
            cr_assert_not_null(strstr(cd_cl_op_kinds, def), "kernels/%s uses %s, which the op table does not define",
                               cd_embedded_kernels[k].name, name);
            char own[160];
            snprintf(own, sizeof own, "#define %s", name);
            cr_assert_null(strstr(src, own), "kernels/%s defines %s itself: it comes from op_list.def",
                           cd_embedded_kernels[k].name, name);
            uses++;
        }
    }
    cr_assert_gt(uses, 40);
}

/* The schema's defaults are what both backends read for an op without attributes. */
Test(op_list, params_parse_defaults_and_attributes) {
    const cd_op_info *sp = cd_op_info_find("softplus");
    cr_assert_not_null(sp);
    cd_error err = {0};
    cd_graph *g = cd_graph_new();
    cd_op *op = cd_graph_add_op(g, "softplus", &err);
    cr_assert_not_null(op, "%s", err.msg);
    cd_op_params p;
    cd_op_params_parse(op, sp, &p);
    cr_assert(p.v[0] == 1.0f && p.v[1] == 20.0f && p.v[2] == 0.0f);
    cd_op_params_parse(NULL, cd_op_info_find("relu_clipped"), &p);
    cr_assert(p.v[0] == 0.0f && p.v[1] == 6.0f);
    cd_op_params_parse(NULL, cd_op_info_find("gelu"), &p);
    cr_assert(p.v[0] == 0.0f);
    cd_graph_free(g);
}

/* The fused activations (conv's act_type, fc's activation_type, ...) are the CD_OPL_FUSED_ACT
 * entries: one per cd_act_kind 1..CD_ACT_SQRT, named by cd_act_name. */
Test(op_list, fused_activations_are_the_cd_act_kinds) {
    int seen[CD_ACT_SQRT + 1] = {0};
    for (int i = 0; i < CD_OPID_COUNT; i++) {
        const cd_op_info *oi = cd_op_info_at((cd_op_id)i);
        if (!(oi->flags & CD_OPL_FUSED_ACT)) continue;
        cr_assert(oi->kind >= 1 && oi->kind <= CD_ACT_SQRT, "%s: kind %d is not a cd_act_kind", oi->type, oi->kind);
        seen[oi->kind]++;
        cr_assert_str_eq(cd_act_name((cd_act_kind)oi->kind), oi->type);
    }
    for (int k = 1; k <= CD_ACT_SQRT; k++) cr_assert_eq(seen[k], 1, "cd_act_kind %d: %d FUSED_ACT entries", k, seen[k]);
    cr_assert(!(cd_op_info_find("silu")->flags & CD_OPL_FUSED_ACT), "silu is no fused activation name");
}
