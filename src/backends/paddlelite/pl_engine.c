#include "backends/paddlelite/pl_priv.h"
#include "backends/paddlelite/pl_sdk.h"
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#include "probes/instrument.h"
#include "util/json.h"
#include "util/npy.h"
#include "util/subproc.h"
#include "engine/backend_def.h"

extern char **environ;

static const char *const PL_NAMES[] = {"paddle-lite", "paddle-lite-x86", "paddle-lite-opencl", "paddle-lite-arm"};

bool cd_pl_is_backend(const char *name) {
    for (size_t i = 0; name && i < sizeof PL_NAMES / sizeof *PL_NAMES; i++)
        if (!strcmp(name, PL_NAMES[i])) return true;
    return false;
}

const char *cd_pl_backend_target(const char *name) {
    if (!name || strncmp(name, "paddle-lite-", 12)) return "";
    return name + 12;
}

static double now_ms(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec * 1e3 + (double)t.tv_nsec / 1e6;
}

static bool is_file(const char *p, bool exec) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISREG(st.st_mode) && (!exec || access(p, X_OK) == 0);
}

/* Candidate roots: the executable's folder, its parent, the source tree of this build. */
int cd_pl_roots(char out[3][PATH_MAX]) {
    int n = 0;
    char exe[PATH_MAX];
    ssize_t l = readlink("/proc/self/exe", exe, sizeof exe - 1);
    if (l > 0) {
        exe[l] = 0;
        char *s = strrchr(exe, '/');
        if (s) {
            *s = 0;
            snprintf(out[n++], PATH_MAX, "%s", exe);
            s = strrchr(exe, '/');
            if (s) {
                *s = 0;
                snprintf(out[n++], PATH_MAX, "%s", exe[0] ? exe : "/");
            }
        }
    }
#ifdef CLDIFF_SOURCE_DIR
    snprintf(out[n++], PATH_MAX, "%s", CLDIFF_SOURCE_DIR);
#endif
    return n;
}

cd_status cd_pl_spawn_wait(char *const argv[], char *const envp[], const char *log_path, double timeout_s, int *wstatus,
                           bool *timed_out, volatile int *stop, cd_error *err) {
    /* its own process group: a timeout or Ctrl-C ends Python's children (Opt) as well */
    cd_subproc_opts so = {.timeout_s = timeout_s, .stop = stop, .own_group = true, .log_path = log_path};
    cd_subproc sp;
    int rc = cd_subproc_spawn(&sp, &so, argv, envp);
    if (rc) return cd_err(err, CD_E_BACKEND, "cannot start %s: %s", argv[0], strerror(rc));
    cd_subproc_result r;
    cd_subproc_wait(&sp, NULL, NULL, &r);
    *wstatus = r.wstatus;
    *timed_out = r.timed_out;
    if (r.stopped) return cd_err(err, CD_E_INTERRUPTED, "interrupted while Paddle-Lite ran (%s)", argv[0]);
    return CD_OK;
}

/* The last non-empty lines of the log that are not Paddle-Lite's version warning. */
void cd_pl_log_tail(const char *path, char *buf, size_t n) {
    buf[0] = 0;
    FILE *f = fopen(path, "rb");
    if (!f) return;
    char line[1024], keep[4][1024] = {{0}};
    int k = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = 0;
        if (!line[0] || strstr(line, "version of") || strstr(line, "the version of opt") ||
            strstr(line, "LoadModelFbsFromFile"))
            continue;
        snprintf(keep[k % 4], sizeof keep[0], "%s", line);
        k++;
    }
    fclose(f);
    size_t off = 0;
    for (int i = k > 4 ? k - 4 : 0; i < k && off < n; i++)
        off += (size_t)snprintf(buf + off, n - off, "%s%s", off ? " | " : "", keep[i % 4]);
}

cd_status cd_pl_find(cd_pl_env *env, cd_error *err) {
    memset(env, 0, sizeof *env);
    const char *py = getenv("CLDIFF_PL_PYTHON"), *br = getenv("CLDIFF_PL_BRIDGE");
    char r[3][PATH_MAX];
    int nr = cd_pl_roots(r);
    if (py && *py) snprintf(env->python, sizeof env->python, "%s", py);
    for (int i = 0; i < nr && !env->python[0]; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/.venv-pl/bin/python", r[i]);
        if (is_file(p, true)) snprintf(env->python, sizeof env->python, "%s", p);
    }
    if (br && *br) snprintf(env->bridge, sizeof env->bridge, "%s", br);
    for (int i = 0; i < nr && !env->bridge[0]; i++) {
        char p[PATH_MAX + 32];
        snprintf(p, sizeof p, "%s/scripts/pl_bridge.py", r[i]);
        if (is_file(p, false)) snprintf(env->bridge, sizeof env->bridge, "%s", p);
    }
    /* an installed cldiff keeps its helpers in <prefix>/share/cldiff (pl_sdk.h) */
    if (!env->bridge[0]) cd_pl_find_helper("scripts/pl_bridge.py", env->bridge, sizeof env->bridge);
    if (!env->bridge[0])
        return cd_err(err, CD_E_BACKEND,
                      "backend paddle-lite unavailable: scripts/pl_bridge.py not found next to cldiff "
                      "or in its source tree (set CLDIFF_PL_BRIDGE=/path/to/pl_bridge.py)");
    if (!env->python[0] || !is_file(env->python, true))
        return cd_err(err, CD_E_BACKEND,
                      "backend paddle-lite unavailable: no Python with the paddlelite wheel (looked for "
                      "$CLDIFF_PL_PYTHON and .venv-pl/bin/python); install it with scripts/setup.sh (it makes .venv-pl "
                      "with a Python 3.7-3.10 from pyenv or Debian and pip installs paddlelite==2.13rc0 'numpy<2'), "
                      "or set CLDIFF_PL_PYTHON");
    char tmpl[] = "/tmp/cldiff-pl-probe-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return cd_err(err, CD_E_IO, "cannot create a temporary file: %s", strerror(errno));
    close(fd);
    char *argv[] = {env->python, env->bridge, "--probe", NULL};
    int ws = 0;
    bool to = false;
    cd_status st = cd_pl_spawn_wait(argv, NULL, tmpl, 60, &ws, &to, NULL, err);
    char tail[1024];
    cd_pl_log_tail(tmpl, tail, sizeof tail);
    if (!st && (to || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0))
        st = cd_err(err, CD_E_BACKEND,
                    "backend paddle-lite unavailable: %s %s --probe failed (%s); run scripts/setup.sh "
                    "to (re)make .venv-pl with paddlelite==2.13rc0",
                    env->python, env->bridge, tail[0] ? tail : "no output");
    if (!st) {
        FILE *f = fopen(tmpl, "rb");
        char line[4096] = "";
        char *got = NULL;
        while (f && fgets(line, sizeof line, f))
            if (line[0] == '{') {
                got = line;
                break;
            }
        if (f) fclose(f);
        cd_json j;
        cd_error je = {0};
        if (got && cd_json_parse(got, strlen(got), "pl_bridge --probe", &j, &je) == CD_OK) {
            const cd_json *v = cd_json_get(&j, "paddlelite"), *p = cd_json_get(&j, "python");
            if (v && v->kind == CD_JSON_STR) snprintf(env->version, sizeof env->version, "%s", v->str);
            if (p && p->kind == CD_JSON_STR) snprintf(env->python_version, sizeof env->python_version, "%s", p->str);
            cd_json_free(&j);
        }
    }
    remove(tmpl);
    return st;
}

/* Comma lists of the model's op types that this build has on Host but not on `place`, and on
 * `place` but not on Host (pl_bridge.py --kernels PLACE); malloc'ed, "" when none. */
static cd_status host_only_ops(const cd_pl_env *env, const char *place, const cd_graph *g, char **out, char **out2,
                               cd_error *err) {
    *out = *out2 = NULL;
    char tmpl[] = "/tmp/cldiff-pl-kernels-XXXXXX";
    int fd = mkstemp(tmpl);
    if (fd < 0) return cd_err(err, CD_E_IO, "cannot create a temporary file: %s", strerror(errno));
    close(fd);
    char *argv[] = {(char *)env->python, (char *)env->bridge, "--kernels", (char *)place, NULL};
    int ws = 0;
    bool to = false;
    cd_status st = cd_pl_spawn_wait(argv, NULL, tmpl, 120, &ws, &to, NULL, err);
    if (!st && (to || !WIFEXITED(ws) || WEXITSTATUS(ws)))
        st = cd_err(err, CD_E_BACKEND, "pl_bridge.py --kernels %s failed", place);
    char *buf = NULL;
    size_t len = 0;
    if (!st) {
        FILE *f = fopen(tmpl, "rb");
        if (f) {
            fseek(f, 0, SEEK_END);
            long n = ftell(f);
            fseek(f, 0, SEEK_SET);
            buf = n > 0 ? malloc((size_t)n + 1) : NULL;
            if (buf) len = fread(buf, 1, (size_t)n, f);
            fclose(f);
        }
    }
    remove(tmpl);
    char *js = buf ? memchr(buf, '{', len) : NULL;
    cd_json j;
    memset(&j, 0, sizeof j);
    if (!st && (!js || cd_json_parse(js, len - (size_t)(js - buf), "pl_bridge --kernels", &j, err)))
        st = st ? st : cd_err(err, CD_E_BACKEND, "pl_bridge.py --kernels %s printed no table", place);
    free(buf);
    if (st) return st;
    const cd_json *ops = cd_json_get(&j, "ops");
    size_t cap = 1, n = 0;
    for (int i = 0; i < g->n_ops; i++) cap += strlen(g->ops[i].type) + 1;
    char *list = calloc(cap, 1), *list2 = calloc(cap, 1);
    size_t n2 = 0;
    if (!list || !list2) {
        free(list);
        free(list2);
        cd_json_free(&j);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    for (int i = 0; i < g->n_ops; i++) {
        const char *t = g->ops[i].type;
        const cd_json *ts = cd_json_get(ops, t);
        bool has_place = false, has_host = false;
        for (int k = 0; ts && ts->kind == CD_JSON_ARR && k < ts->n; k++)
            if (ts->items[k].kind == CD_JSON_STR) {
                has_place |= !strcmp(ts->items[k].str, place);
                has_host |= !strcmp(ts->items[k].str, "host");
            }
        bool dup = false;
        for (int q = 0; q < i; q++) dup |= !strcmp(g->ops[q].type, t);
        if (dup || has_place == has_host) continue;
        if (has_host)
            n += (size_t)snprintf(list + n, cap - n, "%s%s", n ? "," : "", t);
        else
            n2 += (size_t)snprintf(list2 + n2, cap - n2, "%s%s", n2 ? "," : "", t);
    }
    cd_json_free(&j);
    *out = list;
    *out2 = list2;
    return CD_OK;
}

/* The model's compute target: the most common non-host kernel target. */
const char *cd_pl_model_target(const cd_graph *g) {
    int count[32] = {0};
    for (int i = 0; i < g->n_ops; i++) {
        int t = g->ops[i].kernel.present ? g->ops[i].kernel.target : -1;
        if (t > 1 && t < 32) count[t]++;
    }
    int best = 0;
    for (int t = 2; t < 32; t++)
        if (count[t] > count[best]) best = t;
    return best ? cd_target_name(best) : "host";
}

void cd_pl_rm_tree(const char *dir) {
    DIR *d = opendir(dir);
    if (!d) return;
    struct dirent *e;
    char p[PATH_MAX + 300];
    while ((e = readdir(d))) {
        if (!strcmp(e->d_name, ".") || !strcmp(e->d_name, "..")) continue;
        snprintf(p, sizeof p, "%s/%s", dir, e->d_name);
        remove(p);
    }
    closedir(d);
    rmdir(dir);
}

cd_status cd_pl_bridge_run(const cd_pl_env *env, const cd_pl_bridge_req *b, double *wall_ms, bool *crashed,
                           cd_error *err) {
    char logp[PATH_MAX + 32], threads[16];
    snprintf(logp, sizeof logp, "%s/bridge.log", b->dir);
    snprintf(threads, sizeof threads, "%d", b->threads > 0 ? b->threads : 1);
    const char *backend = b->backend ? b->backend : "paddle-lite", *what = b->what ? b->what : b->model;
    const char *target = b->target && *b->target ? b->target : "x86";
    char *argv[] = {(char *)env->python,
                    (char *)env->bridge,
                    "--model",
                    (char *)b->model,
                    "--inputs",
                    (char *)b->dir,
                    "--out",
                    (char *)b->dir,
                    "--target",
                    (char *)target,
                    "--precision",
                    (char *)(b->precision ? b->precision : "fp32"),
                    "--threads",
                    threads,
                    NULL};
    int ws = 0;
    bool to = false;
    double t0 = now_ms();
    if (crashed) *crashed = false;
    cd_status st = cd_pl_spawn_wait(argv, NULL, logp, b->timeout_s, &ws, &to, b->stop, err);
    if (wall_ms) *wall_ms = now_ms() - t0;
    char tail[1024];
    cd_pl_log_tail(logp, tail, sizeof tail);
    if (!st && to) {
        if (crashed) *crashed = true;
        st = cd_err(err, CD_E_CRASH, "Paddle-Lite (%s) timed out after %.0f s (--timeout) running %s", backend,
                    b->timeout_s, what);
    } else if (!st && WIFSIGNALED(ws)) {
        if (crashed) *crashed = true;
        const char *sn = cd_signal_name(WTERMSIG(ws));
        st = cd_err(err, CD_E_CRASH, "Paddle-Lite (%s, %s kernels) crashed with %s running the instrumented %s: %s%s",
                    backend, target, sn ? sn : "a signal", what, tail[0] ? tail : "(no message)",
                    b->arm_hint ? " (the paddlelite wheel on this machine has no ARM kernels: run the model on an ARM "
                                  "device with the probes/paddle-lite runner and `cldiff import` its outputs, "
                                  "docs/paddle-lite.md)"
                                : "");
    } else if (!st && WEXITSTATUS(ws) != 0) {
        int x = WEXITSTATUS(ws);
        st = cd_err(err,
                    x == 3       ? CD_E_MODEL
                        : x == 2 ? CD_E_USAGE
                                 : CD_E_BACKEND,
                    "Paddle-Lite (%s) failed (bridge exit %d): %s", backend, x, tail[0] ? tail : "(no message)");
    }
    return st;
}

void cd_pl_kernel_str(const cd_kernel_rec *k, char *buf, size_t n) {
    snprintf(buf, n, "%s/%s/%s/%s", k->alias, cd_target_name(k->target), cd_precision_name(k->precision),
             cd_layout_name(k->layout));
}

void cd_pl_place_by_record(const cd_op *op, cd_op_place *o) {
    o->supported = true;
    if (op->kernel.present) {
        snprintf(o->where, sizeof o->where, "%s", cd_target_name(op->kernel.target));
        cd_pl_kernel_str(&op->kernel, o->kernel, sizeof o->kernel);
        snprintf(o->why, sizeof o->why, "the model's kernel record");
    } else {
        snprintf(o->where, sizeof o->where, "?");
        snprintf(o->why, sizeof o->why, "no kernel record: Paddle-Lite picks at load time");
    }
}

cd_status cd_pl_collect(cd_pl_collect_req *cq, int *n_hits, int *n_shape_mismatch, int *n_dequantized, cd_error *err) {
    const cd_plan *plan = cq->plan;
    const cd_graph *g = plan->g;
    cd_status st = CD_OK;
    char p[PATH_MAX + 64];
    /* the inputs go into the record too: the first layers read them */
    for (int k = 0; k < g->n_inputs && !st && cq->record; k++)
        st = cd_forcing_put(cq->record, g->inputs[k], &cq->inputs[k], err);
    for (int k = 0; k < cq->n_fetch && !st; k++) {
        const cd_probe_fetch *f = &cq->fetch[k];
        if (!f->probed && !cq->record) continue;
        snprintf(p, sizeof p, "%s/out_%d.npy", cq->dir, f->col);
        if (cq->partial && access(p, F_OK) != 0) {
            cq->n_missing++;
            continue;
        }
        cd_value v = {0};
        st = cd_npy_read(p, &v, err);
        if (st) {
            st = cd_err_prefix(err, "reading Paddle-Lite's output %d (tensor '%s' of op #%d): ", f->col,
                               g->tensors[f->tensor_id].name, f->op_index);
            break;
        }
        if (v.dtype == CD_I8 && plan->meta[f->tensor_id].dtype == CD_F32 && f->op_index >= 0) {
            /* Paddle-Lite hands int8 activations over as their integers; cldiff keeps them as the
             * values they stand for, q * scale (calib's `scale`, an int8_out conv's
             * Output0_scale, fc's Out0_scale) */
            const cd_op *op = &g->ops[f->op_index];
            const double *sv = NULL;
            double sc = cd_attr_float(op, "scale", 0);
            if (strcmp(op->type, "calib") && cd_attr_floats(op, "Output0_scale", &sv) < 1 &&
                cd_attr_floats(op, "Out0_scale", &sv) < 1)
                sv = NULL;
            if (sv) sc = sv[0];
            if (sc > 0) {
                cd_value fv = {.dtype = CD_F32, .shape = v.shape};
                if ((st = cd_value_alloc(&fv, err))) {
                    cd_value_release(&v);
                    break;
                }
                const int8_t *q8 = v.data;
                float *o = fv.data, fs = (float)sc;
                for (int64_t e = 0; e < cd_value_numel(&v); e++) o[e] = (float)q8[e] * fs;
                cd_value_release(&v);
                v = fv;
                (*n_dequantized)++;
            }
        }
        /* a 0-d tensor (Paddle 2.5+ `fill_constant` with shape []) is one value, as the plan's
         * [1]: kept in the plan's shape so that the two runs' tensors match */
        if (v.shape.rank == 0 && cd_shape_numel(&plan->meta[f->tensor_id].shape) == 1)
            v.shape = plan->meta[f->tensor_id].shape;
        /* dynamic outputs (nms) come back smaller than the plan's upper bound: counted only */
        if (!cd_shape_eq(&v.shape, &plan->meta[f->tensor_id].shape)) (*n_shape_mismatch)++;
        if (cq->record && cd_exec_is_activation(plan, f->tensor_id))
            st = cd_forcing_put(cq->record, f->tensor_id, &v, err);
        if (!st && f->probed && f->op_index >= 0 && cq->sink && cq->sink->hit) {
            const cd_op *op = &g->ops[f->op_index];
            cd_op_report rep;
            memset(&rep, 0, sizeof rep);
            rep.kernel_us = -1;
            snprintf(rep.where, sizeof rep.where, "paddle-lite");
            if (cq->kernel_of && cq->kernel_of[f->op_index])
                snprintf(rep.kernel, sizeof rep.kernel, "%s", cq->kernel_of[f->op_index]);
            else if (op->kernel.present)
                cd_pl_kernel_str(&op->kernel, rep.kernel, sizeof rep.kernel);
            if (cq->model_kernels) cd_pl_model_defect(g, f->op_index, rep.note, sizeof rep.note);
            st = cq->sink->hit(cq->sink->user, f->op_index, f->tensor_id, &v, &rep, err);
            if (!st) (*n_hits)++;
        }
        cd_value_release(&v);
    }
    return st;
}

cd_status cd_pl_run(const cd_pl_req *q, cd_pl_result *res, cd_error *err) {
    memset(res, 0, sizeof *res);
    const cd_plan *plan = q->plan;
    const cd_graph *g = plan->g;
    cd_status st = cd_pl_find(&res->env, err);
    if (st) return st;
    const char *want = cd_pl_backend_target(q->backend);
    const char *have = cd_pl_model_target(g);
    snprintf(res->target, sizeof res->target, "%s", want[0] ? want : have);
    int n_ocl = 0;
    for (int i = 0; i < g->n_ops; i++) n_ocl += g->ops[i].kernel.present && g->ops[i].kernel.target == 5;
    if (n_ocl && strcmp(res->target, "opencl"))
        return cd_err(err, CD_E_BACKEND,
                      "backend %s: %d ops of this model have OpenCL kernels, which a %s run cannot "
                      "execute (builds without OpenCL hold placeholders that compute nothing); run it with an OpenCL "
                      "build of Paddle-Lite on the device (probes/paddle-lite runner, docs/paddle-lite.md)",
                      q->backend, n_ocl, res->target);
    cd_retarget rt = {.target = -1, .host_ops = NULL, .target_ops = NULL};
    char *host_ops = NULL, *target_ops = NULL;
    if (want[0] && strcmp(want, have)) {
        if (!strcmp(want, "x86") && !strcmp(have, "arm")) {
            /* experimental: the x86 wheel cannot load ARM kernel records (docs/paddle-lite.md);
             * each ARM record goes to x86, or to Host where this build has the op only there */
            if ((st = host_only_ops(&res->env, "x86", g, &host_ops, &target_ops, err))) return st;
            rt.target = 2;
            rt.host_ops = host_ops;
            rt.target_ops = target_ops;
            snprintf(res->note, sizeof res->note, "kernel records retargeted arm -> x86 (experimental)%s%s",
                     host_ops[0] ? "; host for " : "", host_ops);
        } else {
            return cd_err(err, CD_E_BACKEND,
                          "backend %s: the model's kernels target %s, not %s; a .nb runs only on the "
                          "target it was optimized for (use --backends paddle-lite, or optimize the model for %s)",
                          q->backend, have, want, want);
        }
    }
    char dir[PATH_MAX];
    snprintf(dir, sizeof dir, "%s/.pl-XXXXXX", q->work_dir && *q->work_dir ? q->work_dir : "/tmp");
    if (!mkdtemp(dir))
        return free(host_ops), free(target_ops),
               cd_err(err, CD_E_IO, "cannot create a temporary folder %s: %s", dir, strerror(errno));
    char nb[PATH_MAX + 32], mpath[PATH_MAX + 64], p[PATH_MAX + 64];
    snprintf(nb, sizeof nb, "%s/probed.nb", dir);
    cd_shape *shapes = calloc((size_t)g->n_inputs + 1, sizeof *shapes);
    if (!shapes) {
        cd_pl_rm_tree(dir);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    for (int k = 0; k < g->n_inputs; k++) shapes[k] = plan->meta[g->inputs[k]].shape;
    cd_instrumented in;
    memset(&in, 0, sizeof in);
    st = cd_write_instrumented(g, q->mask, plan->meta, &rt, q->model_path, q->model_sha256, shapes, nb, mpath,
                               sizeof mpath, &in, err);
    free(shapes);
    free(host_ops);
    free(target_ops);
    res->renamed = in.n_renamed;
    res->n_fetch = in.n_fetch;
    for (int k = 0; k < g->n_inputs && !st; k++) {
        snprintf(p, sizeof p, "%s/input_%d.npy", dir, k);
        st = cd_npy_write(p, &q->inputs[k], err);
    }
    if (!st) {
        cd_pl_bridge_req br = {.model = nb,
                               .dir = dir,
                               .target = res->target,
                               .precision = q->precision,
                               .threads = q->threads,
                               .timeout_s = q->timeout_s,
                               .what = q->model_path,
                               .backend = q->backend,
                               .arm_hint = !strcmp(res->target, "arm") && rt.target < 0,
                               .stop = q->stop};
        st = cd_pl_bridge_run(&res->env, &br, &res->run_ms, &res->crashed, err);
    }
    if (!st) {
        snprintf(p, sizeof p, "%s/run.json", dir);
        FILE *f = fopen(p, "rb");
        if (f) {
            char buf[1 << 16];
            size_t n = fread(buf, 1, sizeof buf - 1, f);
            fclose(f);
            cd_json j;
            cd_error je = {0};
            if (cd_json_parse(buf, n, p, &j, &je) == CD_OK) {
                const cd_json *v = cd_json_get(&j, "run_ms"), *l = cd_json_get(&j, "load_ms");
                if (v && v->kind == CD_JSON_NUM) res->run_ms = v->num;
                if (l && l->kind == CD_JSON_NUM) res->load_ms = l->num;
                cd_json_free(&j);
            }
        }
        snprintf(res->device, sizeof res->device, "Paddle-Lite %s, %s kernels (paddlelite wheel, Python %s)",
                 res->env.version[0] ? res->env.version : "?", res->target,
                 res->env.python_version[0] ? res->env.python_version : "?");
    }
    if (!st) {
        cd_pl_collect_req cq = {.plan = plan,
                                .fetch = in.fetch,
                                .n_fetch = in.n_fetch,
                                .dir = dir,
                                .inputs = q->inputs,
                                .record = q->record,
                                .sink = q->sink};
        st = cd_pl_collect(&cq, &res->n_hits, &res->n_shape_mismatch, &res->n_dequantized, err);
    }
    cd_instrumented_free(&in);
    const char *keep = getenv("CLDIFF_PL_KEEP");
    if (keep && *keep && strcmp(keep, "0"))
        fprintf(stderr, "cldiff: paddle-lite work folder kept: %s\n", dir);
    else
        cd_pl_rm_tree(dir);
    return st;
}

/* ---------------------------------------------------------------- registration (the wheel) */

static const cd_backend_optdef WHEEL_OPTS[] = {
    {"python", "PATH", "the Python of a venv with the paddlelite wheel (default .venv-pl; env CLDIFF_PL_PYTHON)"},
    {NULL, NULL, NULL},
};

static cd_status wheel_apply_opts(cd_backend_opts *bo, cd_error *err) {
    (void)err;
    const char *py = cd_backend_opt(bo, "paddle-lite", "python");
    if (!py) py = cd_backend_opt(bo, "paddle-lite-x86", "python");
    if (py) setenv("CLDIFF_PL_PYTHON", py, 1); /* read by cd_pl_find; the wheel engines share one venv */
    return CD_OK;
}

static cd_status wheel_run(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    if (q->xo->local_only) return CD_OK; /* a whole-model engine has no local pass */
    const char *prec = q->plan->prec == CD_PREC_FP16 ? "fp16" : "fp32";
    cd_pl_req pq = {.plan = q->plan,
                    .mask = q->xo->probe_mask,
                    .inputs = q->inputs,
                    .model_path = q->model_path,
                    .model_sha256 = q->model_sha256,
                    .backend = q->backend,
                    .precision = prec,
                    .work_dir = q->work_dir,
                    .threads = q->bo->threads,
                    .timeout_s = q->timeout_s,
                    .sink = q->sink,
                    .record = q->xo->record,
                    .stop = q->xo->stop_flag};
    cd_pl_result *pr = calloc(1, sizeof *pr);
    if (!pr) return cd_err(err, CD_E_NOMEM, "out of memory");
    cd_status st = cd_pl_run(&pq, pr, err);
    snprintf(res->device, sizeof res->device, "%s", pr->device[0] ? pr->device : "Paddle-Lite");
    snprintf(res->driver, sizeof res->driver, "paddlelite wheel %s via %s", pr->env.version, pr->env.python);
    res->crash.crashed = pr->crashed;
    res->n_hits = pr->n_hits;
    res->has_hits = true;
    const cd_graph *g = q->plan->g;
    bool half = false;
    for (int i = 0; i < g->n_ops; i++) half |= g->ops[i].kernel.present && g->ops[i].kernel.precision == 5;
    cd_run_attr_str(res, "engine", "paddle-lite");
    cd_run_attr_str(res, "engine_version", "%s", pr->env.version);
    cd_run_attr_str(res, "target", "%s", pr->target);
    /* what Paddle-Lite computes in comes from the model's kernel records, not from --fp16 */
    cd_run_attr_str(res, "engine_precision", "%s",
                    !strcmp(pr->target, "opencl") ? "opencl (runtime choice)"
                        : half                    ? "fp16"
                                                  : "fp32");
    if (q->plan->prec == CD_PREC_FP16 && !half && strcmp(pr->target, "opencl") && !q->quiet)
        fprintf(stderr,
                "cldiff: note: %s computes in float32 (the model's kernels); --fp16 applies to cldiff's "
                "backends only\n",
                q->backend);
    cd_run_attr_str(res, "bridge_python", "%s", pr->env.python);
    cd_run_attr_num(res, "renamed_activations", pr->renamed);
    cd_run_attr_num(res, "fetched_tensors", pr->n_fetch);
    cd_run_attr_num(res, "engine_run_ms", pr->run_ms);
    if (pr->note[0]) cd_run_attr_str(res, "engine_note", "%s", pr->note);
    cd_run_attr_num(res, "shape_differs_from_plan", pr->n_shape_mismatch);
    cd_run_attr_num(res, "int8_dequantized", pr->n_dequantized);
    free(pr);
    return st;
}

static cd_status wheel_placement(const cd_runner_req *q, cd_op_place *out, char *note, size_t nn, cd_error *err) {
    (void)err;
    const cd_graph *g = q->plan->g;
    for (int i = 0; i < g->n_ops; i++) {
        memset(&out[i], 0, sizeof out[i]);
        cd_pl_place_by_record(&g->ops[i], &out[i]);
    }
    snprintf(note, nn,
             "Paddle-Lite's x86 wheel (paddlelite on PyPI) runs the kernels the .nb records; a wheel holds "
             "no ARM or OpenCL kernels (docs/paddle-lite.md)");
    return CD_OK;
}

/* The wheel's Python answers pl_bridge.py --probe (the same lookup a run starts with). */
static cd_status wheel_available(const cd_runner_req *q, cd_error *err) {
    (void)q;
    cd_pl_env env;
    return cd_pl_find(&env, err);
}

const cd_backend_def cd_backend_def_paddle_lite = {
    .name = "paddle-lite",
    .summary = "Paddle-Lite's x86 runtime from the paddlelite wheel (Python), the model's own kernel records",
    .opts = WHEEL_OPTS,
    .apply_opts = wheel_apply_opts,
    .run = wheel_run,
    .placement = wheel_placement,
    .available = wheel_available,
};

const cd_backend_def cd_backend_def_paddle_lite_x86 = {
    .name = "paddle-lite-x86",
    .summary = "the paddlelite wheel with ARM kernel records retargeted to x86 (experimental)",
    .opts = WHEEL_OPTS,
    .apply_opts = wheel_apply_opts,
    .run = wheel_run,
    .placement = wheel_placement,
    .available = wheel_available,
};
