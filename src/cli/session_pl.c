#include "cli/session_pl.h"
#include <stdio.h>
#include <string.h>
#include "backends/paddlelite/pl_engine.h"

cd_status cd_session_run_pl(cd_session *s, const cd_run_req *q, const cd_plan *plan, cd_probe_sink *sink,
                            cd_run_result *res, cd_error *err) {
    const cd_cli_opts *o = s->o;
    const char *prec = q->prec == CD_PREC_FP16 ? "fp16" : "fp32";
    cd_pl_req pq = {.plan = plan, .mask = s->mask, .inputs = s->inputs.values, .model_path = o->model,
                    .model_sha256 = s->sha256, .backend = q->backend, .precision = prec, .work_dir = o->out_dir,
                    .threads = o->threads, .timeout_s = o->timeout_s, .sink = q->local_only ? NULL : sink,
                    .record = q->record, .stop = &cd_stop_flag};
    cd_pl_result pr;
    cd_status st = cd_pl_run(&pq, &pr, err);
    snprintf(res->device, sizeof res->device, "%s", pr.device[0] ? pr.device : "Paddle-Lite");
    snprintf(res->driver, sizeof res->driver, "paddlelite wheel %s via %s", pr.env.version, pr.env.python);
    res->crash.crashed = pr.crashed;
    cd_error e2 = {0};
    char path[256];
    if (q->run && !q->local_only) {
        snprintf(path, sizeof path, "/runs/%s", q->run);
        cd_dump_set_attr_str(s->dump, path, "engine", "paddle-lite", &e2);
        cd_dump_set_attr_str(s->dump, path, "engine_version", pr.env.version, &e2);
        cd_dump_set_attr_str(s->dump, path, "target", pr.target, &e2);
        /* what Paddle-Lite computes in comes from the model's kernel records, not from --fp16 */
        bool half = false;
        for (int i = 0; i < s->g->n_ops; i++) half |= s->g->ops[i].kernel.present && s->g->ops[i].kernel.precision == 5;
        cd_dump_set_attr_str(s->dump, path, "engine_precision",
                             !strcmp(pr.target, "opencl") ? "opencl (runtime choice)" : half ? "fp16" : "fp32", &e2);
        if (q->prec == CD_PREC_FP16 && !half && strcmp(pr.target, "opencl") && !o->quiet)
            fprintf(stderr, "cldiff: note: %s computes in float32 (the model's kernels); --fp16 applies to cldiff's "
                            "backends only\n", q->backend);
        cd_dump_set_attr_str(s->dump, path, "bridge_python", pr.env.python, &e2);
        cd_dump_set_attr_i64(s->dump, path, "renamed_activations", pr.renamed, &e2);
        cd_dump_set_attr_i64(s->dump, path, "fetched_tensors", pr.n_fetch, &e2);
        cd_dump_set_attr_f64(s->dump, path, "engine_run_ms", pr.run_ms, &e2);
        if (pr.note[0]) cd_dump_set_attr_str(s->dump, path, "engine_note", pr.note, &e2);
        cd_dump_set_attr_i64(s->dump, path, "shape_differs_from_plan", pr.n_shape_mismatch, &e2);
        cd_dump_set_attr_i64(s->dump, path, "int8_dequantized", pr.n_dequantized, &e2);
    }
    if (!q->local_only && o->n_backends == 2 && q->backend == o->backends[1] && strcmp(o->isolate_mode, "none") &&
        !o->quiet && q->run && !strstr(q->run, "_rep"))
        fprintf(stderr, "cldiff: note: no local check for %s: a whole-model engine cannot run one layer on the other "
                        "run's inputs; use --backends %s,cpu to run cldiff's CPU kernels on Paddle-Lite's exact layer "
                        "inputs\n", q->backend, q->backend);
    if (q->force && q->local_run) {
        snprintf(path, sizeof path, "/runs/%s", q->local_run);
        cd_dump_set_attr_str(s->dump, path, "unavailable",
                             "local check unavailable for the paddle-lite backend: Paddle-Lite runs the whole model "
                             "and cannot run one layer on given inputs; put paddle-lite first (--backends "
                             "paddle-lite,cpu) to check cldiff's kernels on Paddle-Lite's exact inputs", &e2);
    }
    res->n_hits = pr.n_hits;
    return st;
}
