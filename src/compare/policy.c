#include "compare/policy.h"
#include <ctype.h>
#include <errno.h>
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void cd_policy_init(cd_policy *p, cd_precision prec) {
    memset(p, 0, sizeof *p);
    if (prec == CD_PREC_FP16) {
        /* Half storage rounds every activation to 11 significant bits (u = 4.9e-4), and a
         * side computing in half (the CPU's _Float16, cl_khr_fp16) rounds every partial
         * sum: an output that cancels down from large terms carries an error of a few half
         * ulps of the terms, i.e. of the tensor's range, not of itself. Hence rtol 1e-2 plus
         * range_atol 4e-3 (8 half ulps at max|ref|; the field's range-normalised 1e-2 rule,
         * tightened) and a 0.1% allowance for rounding ties. */
        p->base = (cd_tol){.atol = 1e-3, .rtol = 1e-2, .max_fail_fraction = 1e-3, .min_cos = 0.999, .range_atol = 4e-3};
        snprintf(p->base_source, sizeof p->base_source, "fp16 default");
        /* the field's fp16 output rule (range-normalised 1e-2, cosine 0.999): half storage
         * moves an output by u16 = 4.9e-4 of its range per rounding, tens of layers of it
         * stay well inside (docs/verdicts.md) */
        p->out_range = 1e-2;
        p->out_min_cos = 0.999;
    } else {
        /* ~1000 float32 ulps: GPU reductions reorder sums; cosine 0.99999 catches pattern
         * errors that stay under the element bound. */
        p->base = (cd_tol){.atol = 1e-4, .rtol = 1e-4, .max_fail_fraction = 0, .min_cos = 0.99999};
        snprintf(p->base_source, sizeof p->base_source, "fp32 default");
        /* float32 outputs of float models stay near 1e-6 of their range (measured: <= 3.7e-6
         * on every shared model); 1e-4 of the range is the field's fp32 rule (Polygraphy,
         * TFLite GPU). Quantised models get the quanta allowance in cd_decide_verdict. */
        p->out_range = 1e-4;
        p->out_min_cos = 0.9999;
    }
}

void cd_policy_override(cd_policy *p, double atol, double rtol, double min_cos, double mff) {
    bool any = false;
    if (atol >= 0) {
        p->base.atol = atol;
        any = true;
    }
    if (rtol >= 0) {
        p->base.rtol = rtol;
        any = true;
    }
    if (min_cos >= 0) {
        p->base.min_cos = min_cos;
        any = true;
    }
    if (mff >= 0) {
        p->base.max_fail_fraction = mff;
        any = true;
    }
    if (any) snprintf(p->base_source, sizeof p->base_source, "command line");
    if (any) p->user = true;
}

static char *trim(char *s) {
    while (isspace((unsigned char)*s)) s++;
    char *e = s + strlen(s);
    while (e > s && isspace((unsigned char)e[-1])) *--e = 0;
    return s;
}

cd_status cd_policy_parse(cd_policy *p, const char *text, const char *name, cd_error *err) {
    char *copy = cd_strdup(text);
    if (!copy) return cd_err(err, CD_E_NOMEM, "out of memory reading %s", name);
    snprintf(p->file, sizeof p->file, "%s", name);
    int line = 0;
    cd_status st = CD_OK;
    for (char *ln = copy, *next; ln; ln = next) {
        next = strchr(ln, '\n');
        if (next) *next++ = 0;
        line++;
        char *hash = strchr(ln, '#');
        if (hash) *hash = 0;
        char *s = trim(ln);
        if (!*s) continue;
        cd_tol_rule r = {
            .atol = -1, .rtol = -1, .min_cos = -1, .max_fail_fraction = -1, .range_atol = -1, .line = line};
        char *sp = s;
        while (*sp && !isspace((unsigned char)*sp)) sp++;
        char head[256];
        size_t hl = (size_t)(sp - s);
        if (hl >= sizeof head) {
            st = cd_err(err, CD_E_USAGE, "%s:%d: selector too long", name, line);
            break;
        }
        memcpy(head, s, hl);
        head[hl] = 0;
        if (!strcmp(head, "default"))
            r.kind = 0;
        else if (!strncmp(head, "op:", 3) && head[3]) {
            r.kind = 1;
            snprintf(r.pattern, sizeof r.pattern, "%s", head + 3);
        } else if (!strncmp(head, "layer:", 6) && head[6]) {
            r.kind = 2;
            snprintf(r.pattern, sizeof r.pattern, "%s", head + 6);
        } else {
            st = cd_err(err, CD_E_USAGE, "%s:%d: unknown selector '%s' (expected default, op:TYPE or layer:GLOB)", name,
                        line, head);
            break;
        }
        char *rest = sp, *save2 = NULL;
        int nkeys = 0;
        for (char *kv = strtok_r(rest, " \t", &save2); kv; kv = strtok_r(NULL, " \t", &save2)) {
            char *eq = strchr(kv, '=');
            if (!eq) {
                st = cd_err(err, CD_E_USAGE, "%s:%d: expected KEY=VALUE, got '%s'", name, line, kv);
                break;
            }
            *eq = 0;
            char *end;
            errno = 0;
            double v = strtod(eq + 1, &end);
            if (errno || end == eq + 1 || *end || v < 0) {
                st = cd_err(err, CD_E_USAGE, "%s:%d: value of %s must be a number >= 0, got '%s'", name, line, kv,
                            eq + 1);
                break;
            }
            if (!strcmp(kv, "atol"))
                r.atol = v;
            else if (!strcmp(kv, "rtol"))
                r.rtol = v;
            else if (!strcmp(kv, "range_atol"))
                r.range_atol = v;
            else if (!strcmp(kv, "min_cos")) {
                if (v > 1) {
                    st = cd_err(err, CD_E_USAGE, "%s:%d: min_cos must be <= 1, got %g", name, line, v);
                    break;
                }
                r.min_cos = v;
            } else if (!strcmp(kv, "max_fail_fraction")) {
                if (v > 1) {
                    st = cd_err(err, CD_E_USAGE, "%s:%d: max_fail_fraction must be <= 1, got %g", name, line, v);
                    break;
                }
                r.max_fail_fraction = v;
            } else {
                st = cd_err(err, CD_E_USAGE,
                            "%s:%d: unknown key '%s' (known: atol, rtol, range_atol, min_cos, max_fail_fraction)", name,
                            line, kv);
                break;
            }
            nkeys++;
        }
        if (st) break;
        if (!nkeys) {
            st = cd_err(err, CD_E_USAGE, "%s:%d: rule sets nothing (give atol=, rtol=, min_cos= or max_fail_fraction=)",
                        name, line);
            break;
        }
        cd_tol_rule *nr = realloc(p->rules, (size_t)(p->n_rules + 1) * sizeof *nr);
        if (!nr) {
            st = cd_err(err, CD_E_NOMEM, "out of memory");
            break;
        }
        p->rules = nr;
        p->rules[p->n_rules++] = r;
        p->user = true;
    }
    free(copy);
    return st;
}

cd_status cd_policy_load(cd_policy *p, const char *path, cd_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return cd_err(err, CD_E_USAGE, "cannot open tolerance file '%s': %s", path, strerror(errno));
    char *buf = NULL;
    size_t len = 0, cap = 0;
    for (;;) {
        if (len + 4096 + 1 > cap) {
            cap = cap ? cap * 2 : 8192;
            if (cap > (1u << 24)) {
                free(buf);
                fclose(f);
                return cd_err(err, CD_E_USAGE, "tolerance file '%s' is larger than 16 MiB", path);
            }
            char *nb = realloc(buf, cap);
            if (!nb) {
                free(buf);
                fclose(f);
                return cd_err(err, CD_E_NOMEM, "out of memory");
            }
            buf = nb;
        }
        size_t got = fread(buf + len, 1, 4096, f);
        len += got;
        if (got < 4096) break;
    }
    fclose(f);
    if (memchr(buf, 0, len)) {
        free(buf);
        return cd_err(err, CD_E_USAGE, "tolerance file '%s' contains NUL bytes (not a text file)", path);
    }
    buf[len] = 0;
    cd_status st = cd_policy_parse(p, buf, path, err);
    free(buf);
    return st;
}

static void apply(cd_tol *t, const cd_tol_rule *r) {
    if (r->atol >= 0) t->atol = r->atol;
    if (r->rtol >= 0) t->rtol = r->rtol;
    if (r->range_atol >= 0) t->range_atol = r->range_atol;
    if (r->min_cos >= 0) t->min_cos = r->min_cos;
    if (r->max_fail_fraction >= 0) t->max_fail_fraction = r->max_fail_fraction;
}

cd_tol cd_policy_for(const cd_policy *p, const char *op_type, const char *layer, char *rule_out, size_t n) {
    cd_tol t = p->base;
    const cd_tol_rule *last = NULL;
    for (int kind = 0; kind <= 2; kind++) {
        for (int i = 0; i < p->n_rules; i++) {
            const cd_tol_rule *r = &p->rules[i];
            if (r->kind != kind) continue;
            bool hit = kind == 0 || (kind == 1 && !strcmp(r->pattern, op_type)) ||
                (kind == 2 && fnmatch(r->pattern, layer, 0) == 0);
            if (hit) {
                apply(&t, r);
                last = r;
            }
        }
    }
    if (rule_out && n) {
        if (last)
            snprintf(rule_out, n, "%s:%d %s%s", p->file, last->line,
                     last->kind == 0       ? "default"
                         : last->kind == 1 ? "op:"
                                           : "layer:",
                     last->pattern);
        else
            snprintf(rule_out, n, "%s", p->base_source);
    }
    return t;
}

void cd_policy_free(cd_policy *p) {
    free(p->rules);
    p->rules = NULL;
    p->n_rules = 0;
}

bool cd_policy_output_pass(const cd_policy *p, const cd_metrics *m) {
    if (m->nonfinite_mismatch) return false;
    if (p->user) return m->pass;
    double re = m->ref_absmax > 0 ? m->max_abs / m->ref_absmax : (m->max_abs > 0 ? INFINITY : 0);
    return re <= p->out_range && m->cosine >= p->out_min_cos;
}
