/* The runner helpers every backend may use (engine/backend_def.h). */
#include "engine/backend_def.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

void cd_run_attr_str(cd_runner_result *r, const char *key, const char *fmt, ...) {
    if (r->n_attrs >= CD_RUN_MAX_ATTRS) return;
    cd_run_attr *a = &r->attrs[r->n_attrs++];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(a->str, sizeof a->str, fmt, ap);
    va_end(ap);
}

void cd_run_attr_num(cd_runner_result *r, const char *key, double v) {
    if (r->n_attrs >= CD_RUN_MAX_ATTRS) return;
    cd_run_attr *a = &r->attrs[r->n_attrs++];
    memset(a, 0, sizeof *a);
    snprintf(a->key, sizeof a->key, "%s", key);
    a->is_num = true;
    a->num = v;
}

cd_status cd_runner_inproc(const cd_backend_def *def, const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    cd_backend *b = NULL;
    cd_status st = def->open(q->bo, &b, err);
    if (!st) {
        if (b->vt->describe) b->vt->describe(b, res->device, sizeof res->device, res->driver, sizeof res->driver);
        st = cd_execute(q->plan, b, q->inputs, q->xo, q->sink, err);
    }
    /* an in-process op-by-op backend computes in its plan's precision (the CPU's fp16 path
     * rounds every operation to half) */
    cd_run_attr_str(res, CD_RUN_ATTR_COMPUTE, "%s", q->plan->prec == CD_PREC_FP16 ? "fp16" : "fp32");
    if (b) cd_backend_close(b);
    return st;
}
