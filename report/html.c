/* report.html: one self-contained page (no network, no external assets): verdict card
 * (kernel fault / output drift / pass, docs/verdicts.md), model outputs, free-run and
 * first-divergence card, environment, error-versus-depth chart (inline SVG, log scale,
 * tolerance line, hover titles), sortable per-layer table, and per-channel error charts
 * and error heatmaps (PNG, inlined) for the first failing and the worst layers. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include "report/atomic.h"
#include "report/png_heatmap.h"
#include "report/report.h"

static const char *CSS =
    "body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d2330;background:#fafbfc}"
    "h1{font-size:20px;margin:0 0 12px}h2{font-size:16px;margin:24px 0 8px}"
    ".card{background:#fff;border:1px solid #d8dee4;border-radius:8px;padding:14px 18px;margin:12px 0}"
    ".pass{border-left:6px solid #2da44e}.fail{border-left:6px solid #cf222e}.crash{border-left:6px solid #8250df}"
    ".drift{border-left:6px solid #bf8700}.info{border-left:6px solid #8c959f}.verdict{font-size:15px}"
    "tr.drift td{background:#fff8c5}tr.fault td{background:#ffd8d3;font-weight:600}"
    "table{border-collapse:collapse;background:#fff}td,th{border:1px solid #d8dee4;padding:3px 8px;text-align:right}"
    "td:nth-child(2),td:nth-child(3),th{text-align:left}th{cursor:pointer;background:#f0f3f6;position:sticky;top:0}"
    "tr.bad td{background:#ffebe9}tr.first td{background:#ffd8d3;font-weight:600}"
    ".env td{text-align:left}.mono{font-family:ui-monospace,monospace}svg text{font-size:11px}"
    ".heat img{image-rendering:pixelated;border:1px solid #ccc}";

/* Sorting: numbers (a leading "≤" or "x" ignored, "inf" included) in numeric order before text
 * and empty cells, text in locale order; a second click on the same header reverses, a third
 * sorts ascending again; header rows of tables without <thead> stay first. */
static const char *JS =
    "function sortKey(c){if(!c)return{s:''};var s=(c.dataset.v||c.textContent).trim(),t=s.replace(/^(\\u2264|x)/,''),"
    "n=/^[-+]?inf/i.test(t)?(t[0]=='-'?-1/0:1/0):parseFloat(t);return isNaN(n)?{s:s}:{n:n};}"
    "function sortTable(t,c){var b=t.tBodies[0],r=Array.from(b.rows).filter(function(x){return "
    "!x.querySelector('th')}),"
    "d=t.dataset.col===String(c)&&t.dataset.dir==='1'?-1:1;t.dataset.col=c;t.dataset.dir=d;"
    "r.sort(function(x,y){var a=sortKey(x.cells[c]),z=sortKey(y.cells[c]);"
    "return d*('n' in a?('n' in z?(a.n>z.n)-(a.n<z.n):-1):('n' in z?1:a.s.localeCompare(z.s)));});"
    "r.forEach(function(e){b.appendChild(e)});}"
    "document.querySelectorAll('th').forEach(function(h){h.onclick=function(){sortTable(h.closest('table'),h."
    "cellIndex)}});";

static void h(FILE *f, const char *s) { cd_put_xml(f, s); }

static double clamp_log(double v);

/* Horizontal bar chart (inline SVG) of one value per listed layer, log-scaled. */
static void bar_chart(FILE *f, const char *label, const char *const *names, const double *vals, const char *const *tips,
                      int n, double ref_line, const char *ref_label) {
    if (n <= 0) return;
    const int W = 700, row = 18, L = 180, H = n * row + 30;
    double hi = ref_line > 0 ? ref_line : 0;
    for (int i = 0; i < n; i++)
        if (isfinite(vals[i]) && vals[i] > hi) hi = vals[i];
    double lo = hi > 0 ? hi * 1e-6 : 1e-12;
    if (!(hi > 0)) hi = 1;
#define BX(v) (L + (W - L - 20) * (clamp_log(v > lo ? v : lo) - log10(lo)) / (log10(hi) - log10(lo) + 1e-12))
    fprintf(f, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"", W, H);
    h(f, label);
    fputs("\">\n", f);
    for (int i = 0; i < n; i++) {
        double v = isfinite(vals[i]) ? vals[i] : hi;
        fprintf(f, "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">", L - 6, 14 + i * row);
        h(f, names[i]);
        fprintf(f, "</text><rect x=\"%d\" y=\"%d\" width=\"%.1f\" height=\"%d\" fill=\"#bf8700\"><title>", L,
                4 + i * row, BX(v) - L, row - 5);
        h(f, tips[i]);
        fputs("</title></rect>\n", f);
    }
    if (ref_line > 0)
        fprintf(f,
                "<line x1=\"%.1f\" x2=\"%.1f\" y1=\"0\" y2=\"%d\" stroke=\"#cf222e\" stroke-dasharray=\"5 3\"/>"
                "<text x=\"%.1f\" y=\"%d\" fill=\"#cf222e\">%s</text>\n",
                BX(ref_line), BX(ref_line), H - 14, BX(ref_line) - 40, H - 2, ref_label);
#undef BX
    fputs("</svg>\n", f);
}

/* Diagnosis cards: NaN/Inf origin, FP16 hazards (ranked, chart of max |golden| against the
 * half range), nondeterminism, many inputs, repro pack, pins. */
static void diag_cards(FILE *f, const cd_report_input *in) {
    const cd_analysis *an = in->an;
    const char *nm[24], *tip[24];
    double val[24];
    char tips[24][200];
    if (an->nonfinite_origin >= 0) {
        const cd_layer_cmp *l = &an->layers[an->nonfinite_origin];
        fputs("<div class=\"card fail\" id=\"nonfinite\"><b>NaN/Inf origin</b>: <b>", f);
        h(f, l->layer);
        fprintf(f,
                "</b> (op #%d, %s) produced NaN/Inf where the reference is finite (A: %lld, B: %lld values); "
                "%d layer(s) hold such values — later layers may absorb them.</div>\n",
                l->op_index, l->op_type, (long long)l->nf_new_a, (long long)l->nf_new_b, an->n_nonfinite_hard);
    }
    if (an->n_at_risk) {
        fprintf(f,
                "<div class=\"card fail\" id=\"fp16-hazards\"><b>FP16 hazards</b> (from the float32 golden run): %d "
                "layer(s) at risk"
                "<ol>",
                an->n_at_risk);
        int n = 0;
        for (int rank = 1; rank <= an->n_at_risk; rank++)
            for (int i = 0; i < an->n_layers; i++) {
                const cd_layer_cmp *l = &an->layers[i];
                if (l->risk_rank != rank) continue;
                fputs("<li><b>", f);
                h(f, l->layer);
                fprintf(f, "</b> (%s, K=%lld): ", l->op_type, (long long)l->acc_k);
                h(f, l->risk_reason);
                fprintf(f, "; %lld above 65504, %lld below 2^-14%s</li>", (long long)l->g_over, (long long)l->g_under,
                        l->m.pass ? "" : " — <b>failed</b>");
                if (n < 24) {
                    nm[n] = l->layer;
                    val[n] = l->g_absmax;
                    snprintf(tips[n], sizeof tips[n], "%s: max |golden| %.4g, K %lld", l->layer, l->g_absmax,
                             (long long)l->acc_k);
                    tip[n] = tips[n];
                    n++;
                }
            }
        fputs("</ol>", f);
        bar_chart(f, "largest |value| of the golden run against the half range", nm, val, tip, n, 65504, "65504");
        fputs("</div>\n", f);
    }
    if (an->repeat_n > 1) {
        fprintf(f, "<div class=\"card %s\" id=\"nondeterminism\"><b>Nondeterminism</b> over %d runs of %s: ",
                an->n_nondet ? "fail" : "pass", an->repeat_n, in->env->backend_b);
        if (!an->n_nondet)
            fputs("every layer bit-identical.</div>\n", f);
        else {
            fprintf(f, "%d layer(s) changed between runs (race or uninitialised read); first: <b>", an->n_nondet);
            h(f, an->layers[an->first_nondet].layer);
            fputs("</b>", f);
            int n = 0;
            for (int i = 0; i < an->n_layers && n < 24; i++) {
                const cd_layer_cmp *l = &an->layers[i];
                if (!l->nondet) continue;
                nm[n] = l->layer;
                val[n] = l->spread;
                snprintf(tips[n], sizeof tips[n], "%s: spread %.4g, %lld elements changed", l->layer, l->spread,
                         (long long)l->spread_count);
                tip[n] = tips[n];
                n++;
            }
            bar_chart(f, "max spread between repeats", nm, val, tip, n, 0, "");
            fputs("</div>\n", f);
        }
    }
    if (an->n_inputs_run) {
        fprintf(f, "<div class=\"card\" id=\"inputs\"><b>%d inputs</b> from ", an->n_inputs_run);
        h(f, an->inputs_dir);
        fputs("; worst input <b>", f);
        h(f, an->worst_input);
        fputs("</b> (tensors kept for it).<table><tr><th>layer</th><th>failed on</th><th>worst input</th><th>worst rel "
              "err</th>"
              "<th>mean rel err</th><th>p99 rel err</th></tr>",
              f);
        for (int i = 0; i < an->n_layers; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->n_agg_fail) continue;
            fputs("<tr><td>", f);
            h(f, l->layer);
            fprintf(f, "</td><td>%d/%d</td><td>", l->n_agg_fail, l->n_agg);
            h(f, l->worst_input);
            fprintf(f, "</td><td>%.3g</td><td>%.3g</td><td>%.3g</td></tr>", l->agg_worst[CD_AGG_REL_ERR],
                    l->agg_mean[CD_AGG_REL_ERR], l->agg_p99[CD_AGG_REL_ERR]);
        }
        fputs("</table></div>\n", f);
    }
    if (an->repro_dir[0]) {
        fputs("<div class=\"card\" id=\"repro\"><b>Repro pack</b>: <span class=\"mono\">", f);
        h(f, an->repro_dir);
        fputs("</span><br><span class=\"mono\">", f);
        h(f, an->repro_cmd);
        fputs("</span></div>\n", f);
    }
    if (an->n_pins || an->pins_note[0]) {
        fputs("<div class=\"card\" id=\"pins\"><b>What to pin to float32</b>: ", f);
        h(f, an->pins_note);
        fputs("<table><tr><th>pinned layers</th><th>outputs</th><th>max |d|</th><th>cosine</th></tr>", f);
        for (int i = 0; i < an->n_pins; i++) {
            const cd_pin_result *p = &an->pins[i];
            fputs("<tr><td>", f);
            h(f, p->layers);
            fprintf(f, "</td><td>%s", p->pass ? "within tolerance" : "out of tolerance");
            if (p->error[0]) {
                fputs(": ", f);
                h(f, p->error);
            }
            fprintf(f, "</td><td>%.4g</td><td>%.8f</td></tr>", p->out_max_abs, p->out_cosine);
        }
        fputs("</table></div>\n", f);
    }
}

static double clamp_log(double v) {
    if (!(v > 1e-12)) v = 1e-12;
    if (isinf(v) || v > 1e6) v = 1e6;
    return log10(v);
}

static void depth_chart(FILE *f, const cd_analysis *an) {
    int n = an->n_layers;
    if (n == 0) return;
    const int W = 900, H = 300, L = 60, R = 20, T = 15, B = 40;
    double lo = 1e9, hi = -1e9, tol = 0;
    for (int i = 0; i < n; i++) {
        double y = clamp_log(an->layers[i].rel_err);
        if (y < lo) lo = y;
        if (y > hi) hi = y;
        tol += an->layers[i].tol.rtol;
    }
    tol /= n;
    double ty = clamp_log(tol);
    if (ty < lo) lo = ty;
    if (ty > hi) hi = ty;
    lo = floor(lo);
    hi = ceil(hi);
    if (hi <= lo) hi = lo + 1;
#define X(i) (L + (n > 1 ? (double)(i) * (W - L - R) / (n - 1) : (W - L - R) / 2.0))
#define Y(v) (T + (hi - (v)) * (H - T - B) / (hi - lo))
    fprintf(f,
            "<svg width=\"%d\" height=\"%d\" viewBox=\"0 0 %d %d\" role=\"img\" aria-label=\"relative error versus "
            "depth\">\n",
            W, H, W, H);
    for (double d = lo; d <= hi + 1e-9; d += 1) {
        fprintf(f, "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e7eb\"/>", L, W - R, Y(d), Y(d));
        fprintf(f, "<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">1e%d</text>\n", L - 6, Y(d) + 4, (int)d);
    }
    fprintf(f,
            "<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#cf222e\" stroke-dasharray=\"6 4\"/>"
            "<text x=\"%d\" y=\"%.1f\" fill=\"#cf222e\" text-anchor=\"end\">rtol %.0e</text>\n",
            L, W - R, Y(ty), Y(ty), W - R, Y(ty) - 4, tol);
    fputs("<polyline fill=\"none\" stroke=\"#0969da\" stroke-width=\"1.5\" points=\"", f);
    for (int i = 0; i < n; i++) fprintf(f, "%.1f,%.1f ", X(i), Y(clamp_log(an->layers[i].rel_err)));
    fputs("\"/>\n", f);
    for (int i = 0; i < n; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        const char *c = !l->m.pass ? "#cf222e" : l->jump ? "#bf8700" : "#0969da";
        fprintf(f, "<circle cx=\"%.1f\" cy=\"%.1f\" r=\"%d\" fill=\"%s\"><title>#%d ", X(i), Y(clamp_log(l->rel_err)),
                i == an->first_fail ? 6 : 3, c, l->op_index);
        h(f, l->layer);
        fprintf(f, " (%s)\nrel err %.3g, growth x%.3g\nmax abs %.4g, cosine %.8f%s</title></circle>\n", l->op_type,
                l->rel_err, l->growth, l->m.max_abs, l->m.cosine, l->m.pass ? "" : "\nOUT OF TOLERANCE");
    }
    fprintf(
        f,
        "<text x=\"%d\" y=\"%d\" text-anchor=\"middle\">layer (execution order)</text>"
        "<text x=\"14\" y=\"%d\" transform=\"rotate(-90 14 %d)\" text-anchor=\"middle\">RMSE / RMS(ref)</text></svg>\n",
        (L + W - R) / 2, H - 8, H / 2, H / 2);
#undef X
#undef Y
}

/* Per-channel max |a-b| as a bar chart; channel = dim 1 (dim 0 for rank 1). */
static void channel_chart(FILE *f, const cd_layer_cmp *l, const float *a, const float *b) {
    const cd_shape *s = &l->shape;
    int64_t n = cd_shape_numel(s);
    int64_t C = s->rank >= 2 ? s->d[1] : 1, inner = 1, outer = s->rank >= 1 ? s->d[0] : 1;
    for (int k = 2; k < s->rank; k++) inner *= s->d[k];
    if (s->rank < 2) {
        C = 1;
        inner = n;
        outer = 1;
    }
    if (C <= 0 || C > 4096) return;
    double *mx = calloc((size_t)C, sizeof *mx);
    if (!mx) return;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t c = 0; c < C; c++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t idx = (o * C + c) * inner + i;
                double d = fabs((double)a[idx] - (double)b[idx]);
                if (!(d == d)) d = INFINITY;
                if (d > mx[c]) mx[c] = d;
            }
    double top = 0;
    for (int64_t c = 0; c < C; c++)
        if (isfinite(mx[c]) && mx[c] > top) top = mx[c];
    if (top <= 0) top = 1;
    const int W = 600, H = 160;
    double bw = (double)(W - 50) / (double)C;
    fprintf(f, "<svg width=\"%d\" height=\"%d\" role=\"img\" aria-label=\"per-channel max error\">", W, H);
    fprintf(f, "<text x=\"0\" y=\"12\">max |a-b| per channel (top %.3g)</text>", top);
    for (int64_t c = 0; c < C; c++) {
        double v = isfinite(mx[c]) ? mx[c] / top : 1;
        double bh = v * (H - 40);
        fprintf(f,
                "<rect x=\"%.2f\" y=\"%.1f\" width=\"%.2f\" height=\"%.1f\" fill=\"%s\"><title>channel %lld: "
                "%.4g</title></rect>",
                40 + c * bw, H - 20 - bh, bw > 1.5 ? bw - 0.5 : bw, bh, isfinite(mx[c]) ? "#0969da" : "#cf222e",
                (long long)c, mx[c]);
    }
    fprintf(f, "<text x=\"40\" y=\"%d\">0</text><text x=\"%d\" y=\"%d\" text-anchor=\"end\">%lld</text></svg>\n", H - 5,
            W - 10, H - 5, (long long)C - 1);
    free(mx);
}

/* Heatmap of |a-b| over H x W of the channel holding the worst element (NCHW), or the
 * tensor folded to 2-D. */
static void heatmap(FILE *f, const cd_layer_cmp *l, const float *a, const float *b) {
    const cd_shape *s = &l->shape;
    int64_t hh, ww, base = 0;
    if (s->rank >= 4) {
        hh = s->d[s->rank - 2];
        ww = s->d[s->rank - 1];
        int64_t plane = hh * ww;
        base = plane > 0 && l->m.worst_index >= 0 ? (l->m.worst_index / plane) * plane : 0;
    } else if (s->rank >= 2) {
        hh = s->d[s->rank - 2];
        ww = s->d[s->rank - 1];
        int64_t plane = hh * ww;
        base = plane > 0 && l->m.worst_index >= 0 ? (l->m.worst_index / plane) * plane : 0;
    } else {
        hh = 1;
        ww = s->rank ? s->d[0] : 1;
    }
    if (hh <= 0 || ww <= 0) return;
    int64_t sh = hh > 512 ? (hh + 511) / 512 : 1, sw = ww > 512 ? (ww + 511) / 512 : 1;
    int H = (int)((hh + sh - 1) / sh), W = (int)((ww + sw - 1) / sw);
    float *v = calloc((size_t)H * (size_t)W, sizeof *v);
    if (!v) return;
    for (int64_t y = 0; y < hh; y++)
        for (int64_t x = 0; x < ww; x++) {
            int64_t idx = base + y * ww + x;
            float d = fabsf(a[idx] - b[idx]);
            if (d != d) d = INFINITY;
            float *cell = &v[(y / sh) * W + x / sw];
            if (d > *cell) *cell = isfinite(d) ? d : 3.4e38f;
        }
    int scale = 1;
    while (scale < 8 && W * scale * 2 <= 512 && H * scale * 2 <= 512) scale *= 2;
    uint8_t *png = NULL;
    size_t len = 0;
    cd_error e = {0};
    if (cd_heatmap_png(v, W, H, scale, &png, &len, &e) == CD_OK) {
        char *b64 = cd_base64(png, len);
        if (b64) {
            fprintf(f,
                    "<div class=\"heat\"><div>|a-b| over the %lldx%lld plane holding the worst element (offset "
                    "%lld)%s</div>"
                    "<img alt=\"error heatmap\" src=\"data:image/png;base64,%s\"></div>\n",
                    (long long)hh, (long long)ww, (long long)base, sh > 1 || sw > 1 ? ", max-pooled" : "", b64);
            free(b64);
        }
        free(png);
    }
    free(v);
}

static void hnum(FILE *f, const char *fmt, double v) {
    char b[64];
    snprintf(b, sizeof b, fmt, v);
    h(f, b);
}

/* The verdict card: what is true about the run (docs/verdicts.md). */
static void verdict_card(FILE *f, const cd_report_input *in) {
    const cd_analysis *an = in->an;
    const cd_report_env *e = in->env;
    cd_verdict_kind kind;
    if (!cd_report_kind(in, &kind)) {
        fprintf(
            f,
            "<div class=\"card fail verdict\" id=\"verdict\"><b>FAIL</b> (not classified): %d of %d layers beyond the "
            "element tolerance in the free run; no local-check verdict.</div>\n",
            an->n_fail, an->n_layers);
        return;
    }
    static const char *const cls[] = {"pass", "fail", "drift", "crash", "fail", "crash", "crash", "fail"};
    fprintf(f, "<div class=\"card %s verdict\" id=\"verdict\" data-kind=\"%s\">", cls[kind], cd_report_kind_name(kind));
    switch (kind) {
    case CD_KIND_FAULT: {
        const cd_layer_cmp *l = cd_report_first_fault(an);
        if (!l) {
            fprintf(f, "<b>KERNEL FAULT</b>: %d layer(s) over their local error bound.", an->n_faults);
            break;
        }
        fprintf(f, "<b>KERNEL FAULT</b> at <b>#%d ", l->op_index);
        h(f, l->layer);
        fputs("</b> (", f);
        h(f, l->op_type);
        fputs(") tensor <span class=\"mono\">", f);
        h(f, l->tensor);
        if (an->local_inputs[0] && !strcmp(an->local_inputs, e->backend_b)) {
            fputs("</span>: ", f);
            h(f, e->backend_b);
            fputs("'s output of the layer differs from the reference run on ", f);
            h(f, e->backend_b);
            fputs("'s own inputs to it by more than the bound of its arithmetic.<table>", f);
        } else {
            fputs("</span>: run by ", f);
            h(f, e->backend_b);
            fputs(" on ", f);
            h(f, an->local_inputs[0] ? an->local_inputs : e->backend_a);
            fputs("'s exact inputs, the layer's error exceeds the bound of its arithmetic.<table>", f);
        }
        fputs("<tr><td>family</td><td>", f);
        h(f, l->family);
        fputs("</td></tr>", f);
        fprintf(f,
                "<tr><td>local "
                "error</td><td>%.4g</td></tr><tr><td>bound</td><td>%.4g</td></tr><tr><td>ratio</td><td>%.4g</td></tr>"
                "<tr><td>elements over the bound</td><td>%lld of %lld</td></tr><tr><td>worst "
                "element</td><td>%lld</td></tr>",
                l->loc_err, l->loc_bound, l->loc_ratio, (long long)l->loc_exceed, (long long)l->loc.n,
                (long long)l->loc_worst);
        fprintf(f, "<tr><td>max |a-b|, cosine</td><td>%.4g, %.8f</td></tr><tr><td>reference</td><td>", l->loc.max_abs,
                l->loc.cosine);
        h(f, an->local_ref[0] ? an->local_ref : e->backend_a);
        fputs("</td></tr><tr><td>bound made from</td><td>", f);
        h(f, l->loc_note);
        fputs("</td></tr></table>", f);
        if (an->n_faults > 1) {
            fprintf(f, "%d layers fail their local check:", an->n_faults);
            for (int i = 0, k = 0; i < an->n_layers && k < 12; i++) {
                const cd_layer_cmp *x = &an->layers[i];
                if (!x->has_local || x->loc_pass) continue;
                fputs(k++ ? ", " : " ", f);
                h(f, x->layer);
                hnum(f, " (ratio %.3g)", x->loc_ratio);
            }
            fputc('.', f);
        }
        break;
    }
    case CD_KIND_DRIFT: {
        fputs("<b>OUTPUT DRIFT</b>: ", f);
        if (an->n_out_fail)
            fprintf(f, "%d of %d model output(s) beyond the output tolerance", an->n_out_fail, an->n_outputs);
        else
            fputs("model output(s) beyond the output tolerance", f);
        if (!an->local_ran)
            fputs("; no local check ran.", f);
        else if (an->n_local < an->n_layers)
            fprintf(f, "; no checked layer (%d of %d) is wrong on its own inputs.", an->n_local, an->n_layers);
        else
            fputs("; no layer is wrong on its own inputs.", f);
        fputs(" The error grows through the model; no layer is blamed.", f);
        if (an->out_tol_desc[0]) {
            fputs("<br>Output tolerance: ", f);
            h(f, an->out_tol_desc);
        }
        fputs("<table><thead><tr><th>output</th><th>layer</th><th>range "
              "error</th><th>cosine</th><th>rule</th></tr></thead><tbody>",
              f);
        for (int i = 0; i < an->n_layers; i++) {
            const cd_layer_cmp *l = &an->layers[i];
            if (!l->is_output || l->out_pass) continue;
            fputs("<tr class=\"bad\"><td class=\"mono\">", f);
            h(f, l->tensor);
            fputs("</td><td>", f);
            h(f, l->layer);
            fprintf(f, "</td><td>%.4g</td><td>%.8f</td><td class=\"mono\">", l->out_range_err, l->m.cosine);
            h(f, l->out_rule);
            fputs("</td></tr>", f);
        }
        fputs("</tbody></table>", f);
        if (an->n_amplifiers) {
            fputs("<b>Where the error is amplified</b> (free run; each layer within its local bound):"
                  "<table><thead><tr><th>op</th><th>layer</th><th>type</th><th>growth</th><th>rel "
                  "err</th></tr></thead><tbody>",
                  f);
            for (int j = 0; j < an->n_amplifiers && j < 8; j++) {
                const cd_layer_cmp *l = cd_report_layer(an, an->amplifiers[j]);
                if (!l) continue;
                fprintf(f, "<tr><td>%d</td><td>", l->op_index);
                h(f, l->layer);
                fputs("</td><td>", f);
                h(f, l->op_type);
                fprintf(f, "</td><td>x%.3g</td><td>%.3g</td></tr>", l->growth, l->rel_err);
            }
            fputs("</tbody></table>", f);
        }
        if (an->n_contributors) {
            fputs("<b>Largest local errors</b> (each within its bound):"
                  "<table><thead><tr><th>op</th><th>layer</th><th>type</th><th>ratio to bound</th><th>local rel "
                  "err</th></tr></thead><tbody>",
                  f);
            for (int j = 0; j < an->n_contributors && j < 8; j++) {
                const cd_layer_cmp *l = cd_report_layer(an, an->contributors[j]);
                if (!l) continue;
                fprintf(f, "<tr><td>%d</td><td>", l->op_index);
                h(f, l->layer);
                fputs("</td><td>", f);
                h(f, l->op_type);
                fprintf(f, "</td><td>%.3g</td><td>%.3g</td></tr>", l->loc_ratio, cd_report_rel_local(l));
            }
            fputs("</tbody></table>", f);
        }
        break;
    }
    case CD_KIND_PASS:
        fputs("<b>PASS</b>: ", f);
        {
            char basis[160];
            cd_report_pass_basis(an, basis, sizeof basis);
            fputs(basis, f);
        }
        if (cd_report_outputs_judged(an)) fprintf(f, "; %d output(s) within the output tolerance", an->n_outputs);
        if (an->n_drift)
            fprintf(f,
                    "; %d intermediate layer(s) drifted beyond the element tolerance in the free run (information, not "
                    "a failure)",
                    an->n_drift);
        fputc('.', f);
        break;
    case CD_KIND_CRASH:
        fputs("<b>CRASH</b>: ", f);
        h(f, e->backend_b);
        fputs(" did not finish", f);
        if (e->crash) {
            fputs(" (", f);
            h(f, e->crash);
            fputc(')', f);
        }
        fputs("; layers before the crash are compared below.", f);
        break;
    case CD_KIND_INCOMPLETE:
        fprintf(f, "<b>INCOMPLETE</b>%s: ", an->interrupted ? " (interrupted)" : "");
        h(f, an->incomplete);
        fprintf(f, ". Nothing is passed that was not checked: %d layer(s) compared, %d probed tensor(s) not compared.",
                an->n_layers, an->n_unchecked);
        break;
    case CD_KIND_ERROR:
        fprintf(f, "<b>ERROR</b> (exit %d): ", an->error_code);
        h(f, an->error);
        fprintf(f, ". No verdict: %d layer(s) were compared before the failure.", an->n_layers);
        break;
    case CD_KIND_NONDET: {
        const cd_layer_cmp *l = cd_report_layer(an, an->first_nondet);
        fprintf(f, "<b>NONDETERMINISTIC</b>: %d layer(s) changed between %d runs of ", an->n_nondet, an->repeat_n);
        h(f, e->backend_b);
        fputs(" (race or uninitialised read)", f);
        if (l) {
            fputs("; first <b>", f);
            h(f, l->layer);
            fputs("</b>", f);
        }
        fputc('.', f);
        break;
    }
    case CD_KIND_DEFECT:
        fputs("<b>MODEL DEFECT</b>: the model feeds Paddle-Lite's int8 kernels a tensor they cannot read; no kernel "
              "is wrong on its own inputs.",
              f);
        break;
    }
    {
        /* a model defect is named under every verdict kind (a finding) */
        char dl[1400];
        cd_report_defect_line(an, dl, sizeof dl);
        if (dl[0]) {
            fputs("<p class=\"finding\" id=\"model-defect\">", f);
            h(f, dl);
            fputs("</p>", f);
        }
    }
    fputs("</div>\n", f);
}

/* Model outputs: range error, cosine, SNR, top-1/top-5, detections matched. */
static void outputs_card(FILE *f, const cd_analysis *an) {
    int n = 0;
    for (int i = 0; i < an->n_layers; i++) n += an->layers[i].is_output;
    if (!n) return;
    bool judged = cd_report_outputs_judged(an);
    fputs("<div class=\"card\" id=\"outputs\"><b>Outputs</b>", f);
    if (an->out_tol_desc[0]) {
        fputs(" — output tolerance: ", f);
        h(f, an->out_tol_desc);
    }
    fputs(
        "<table><thead><tr><th>output</th><th>layer</th><th>task</th><th>range error</th><th>cosine</th><th>SNR dB</th>"
        "<th>max abs</th><th>top-1</th><th>top-5</th><th>detections matched</th><th>within "
        "tolerance</th><th>rule</th></tr>"
        "</thead><tbody>",
        f);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        if (!l->is_output) continue;
        fprintf(f, "<tr class=\"%s\"><td class=\"mono\">", judged && !l->out_pass ? "bad" : "");
        h(f, l->tensor);
        fputs("</td><td>", f);
        h(f, l->layer);
        fputs("</td><td>", f);
        h(f, l->task);
        fputs("</td><td>", f);
        if (judged) fprintf(f, "%.4g", l->out_range_err);
        fprintf(f, "</td><td>%.8f</td><td>%.1f</td><td>%.4g</td><td>", l->m.cosine, l->m.snr_db, l->m.max_abs);
        if (l->has_topk)
            fprintf(f, "%.4f</td><td>%.4f", l->top1, l->top5);
        else
            fputs("</td><td>", f);
        fputs("</td><td>", f);
        if (!strcmp(l->task, "detection"))
            fprintf(f, "%lld of %lld (B: %lld)", (long long)l->det_matched, (long long)l->det_ref,
                    (long long)l->det_val);
        fprintf(f, "</td><td>%s</td><td class=\"mono\">", !judged ? "" : l->out_pass ? "yes" : "<b>no</b>");
        h(f, l->out_rule);
        fputs("</td></tr>", f);
    }
    fputs("</tbody></table></div>\n", f);
}

static void env_row(FILE *f, const char *k, const char *v) {
    fprintf(f, "<tr><td>%s</td><td class=\"mono\">", k);
    h(f, v ? v : "");
    fputs("</td></tr>\n", f);
}

cd_status cd_report_html(const cd_report_input *in, const char *dir, cd_error *err) {
    cd_afile af;
    cd_status st = cd_afile_open(&af, dir, "report.html", err);
    if (st) return st;
    FILE *f = af.f;
    const cd_analysis *an = in->an;
    const cd_report_env *e = in->env;
    const char *v = an->verdict == CD_VERDICT_PASS ? "pass" : an->verdict == CD_VERDICT_FAIL ? "fail" : "crash";
    static const char *const vword[] = {"PASS", "FAIL", "CRASH", "INCOMPLETE", "ERROR"};
    fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>cldiff: ", f);
    h(f, e->model_path);
    fprintf(f, "</title><style>%s</style></head><body>\n<h1>cldiff — ", CSS);
    h(f, e->model_path);
    fprintf(f, " (%s vs %s, %s)</h1>\n", e->backend_a, e->backend_b, e->precision);
    cd_verdict_kind kind;
    bool classified = cd_report_kind(in, &kind), fault = classified && kind == CD_KIND_FAULT;
    verdict_card(f, in);
    if (an->incomplete[0] && an->kind != CD_KIND_INCOMPLETE) {
        fputs("<div class=\"card crash\" id=\"incomplete\"><b>Incomplete</b>: ", f);
        h(f, an->incomplete);
        fputs("</div>\n", f);
    }
    char col[1400];
    cd_report_compared_only_line(an, col, sizeof col);
    if (col[0]) {
        fputs("<div class=\"card info\" id=\"compared-only\">", f);
        h(f, col);
        fputs("</div>\n", f);
    }
    outputs_card(f, an);
    if (an->local_ran)
        fprintf(f,
                "<div class=\"card %s\" id=\"free-run\"><b>Free run</b> — %d of %d layers beyond the element tolerance "
                "(information unless a kernel fault is named above).<br>\n",
                an->n_fail ? "info" : "pass", an->n_fail, an->n_layers);
    else
        fprintf(f, "<div class=\"card %s\"><b>%s</b> — %d of %d layers out of tolerance.<br>\n", v,
                (unsigned)an->verdict <= CD_VERDICT_ERROR ? vword[an->verdict] : "ERROR", an->n_fail, an->n_layers);
    if (e->crash) {
        fputs("Backend B crashed: ", f);
        h(f, e->crash);
        fputs("<br>\n", f);
    }
    if (an->first_fail >= 0) {
        const cd_layer_cmp *l = &an->layers[an->first_fail];
        fprintf(f, "First divergence%s: <b>#%d ", classified && !fault ? " (information)" : "", l->op_index);
        h(f, l->layer);
        fprintf(f, "</b> (%s) tensor <span class=\"mono\">", l->op_type);
        h(f, l->tensor);
        fprintf(f, "</span>: max |a-b| %.4g, cosine %.8f, SNR %.1f dB, %.3g%% of elements out of tolerance (rule: ",
                l->m.max_abs, l->m.cosine, l->m.snr_db, 100 * l->m.fail_fraction);
        h(f, l->rule);
        fputs(").<br>\n", f);
        if (an->local_ran && l->has_local)
            fprintf(f,
                    "<b>Local check</b>: on %s's inputs its error is %.4g against a bound of %.4g (ratio %.3g): %s.\n",
                    an->local_inputs[0] ? an->local_inputs : e->backend_a, l->loc_err, l->loc_bound, l->loc_ratio,
                    l->loc_pass ? "within its bound, so the divergence is accumulated error, not a fault of this layer"
                                : "over its bound, a kernel fault");
        else if (an->local_ran) {
            fputs("Not checked locally", f);
            if (l->loc_note[0]) {
                fputs(": ", f);
                h(f, l->loc_note);
            }
            fputs(".\n", f);
        } else if (l->isolated)
            fprintf(
                f,
                "<b>%s error</b>: re-run on %s's inputs gives max |a-b| %.4g (%s tolerance) vs %.4g in the full run.\n",
                !strcmp(an->first_kind, "local") ? "Local" : "Inherited", e->backend_a, l->iso.max_abs,
                l->iso.pass ? "within" : "out of", l->m.max_abs);
        else
            fputs("Not isolated: local vs inherited unknown.\n", f);
    }
    if (an->nonfinite_origin >= 0) {
        fputs("<br>NaN/Inf first appears in ", f);
        h(f, an->layers[an->nonfinite_origin].layer);
        fputs(".\n", f);
    }
    if (an->n_jumps) {
        fputs("<br>Error growth jumps: ", f);
        for (int j = 0; j < an->n_jumps; j++) {
            h(f, an->layers[an->jumps[j]].layer);
            fprintf(f, " (x%.3g)%s", an->layers[an->jumps[j]].growth, j + 1 < an->n_jumps ? ", " : "");
        }
    }
    fputs("</div>\n", f);
    diag_cards(f, in);
    fputs("<h2>Environment</h2><table class=\"env\">\n", f);
    char buf[1200];
    env_row(f, "model", e->model_path);
    env_row(f, "format", e->model_format);
    env_row(f, "sha256", e->model_sha256);
    snprintf(buf, sizeof buf, "%s — %s %s", e->backend_a, e->device_a ? e->device_a : "",
             e->driver_a ? e->driver_a : "");
    env_row(f, "backend A", buf);
    snprintf(buf, sizeof buf, "%s — %s %s (%s)", e->backend_b, e->device_b ? e->device_b : "",
             e->driver_b ? e->driver_b : "", e->variant_b ? e->variant_b : "");
    env_row(f, "backend B", buf);
    env_row(f, "precision", e->precision);
    env_row(f, "inputs", e->input_desc);
    env_row(f, "tolerance", e->tolerance_desc);
    env_row(f, "command", e->command_line);
    snprintf(buf, sizeof buf, "A %.1f ms, B %.1f ms, total %.1f ms", e->wall_ms_a, e->wall_ms_b, e->wall_ms_total);
    env_row(f, "timings", buf);
    snprintf(buf, sizeof buf, "cldiff %s, %s", e->tool_version, e->created ? e->created : "");
    env_row(f, "generated by", buf);
    fputs("</table>\n<h2>Error versus depth</h2>\n", f);
    depth_chart(f, an);
    for (int d = 0; d < in->n_details; d++) {
        const cd_layer_cmp *l = &an->layers[in->details[d].layer];
        const cd_layer_cmp *ff = cd_report_first_fault(an);
        const char *what = ff == l ? "Kernel fault"
            : in->details[d].layer == an->first_fail
            ? (classified && !fault ? "First divergence" : "First failing layer")
            : "Worst layer";
        fprintf(f, "<h2>%s #%d ", what, l->op_index);
        h(f, l->layer);
        fprintf(f, " (%s)</h2>\n", l->op_type);
        channel_chart(f, l, in->details[d].ref, in->details[d].val);
        heatmap(f, l, in->details[d].ref, in->details[d].val);
    }
    fputs(
        "<h2>Layers</h2><p>Click a header to sort.</p><table "
        "id=\"layers\"><thead><tr><th>op</th><th>layer</th><th>type</th>"
        "<th>shape</th><th>max abs</th><th>mean abs</th><th>max rel</th><th>cosine</th><th>SNR dB</th><th>max ULP</th>"
        "<th>fail %</th><th>rel err</th><th>growth</th><th>NaN/Inf</th><th>B ran on</th><th>B µs</th>"
        "<th>K</th><th>rule</th><th>fp16 risk</th><th>repeat spread</th><th>inputs failed</th>"
        "<th>family</th><th>local err</th><th>bound</th><th>local ratio</th><th>local pass</th>",
        f);
    bool golden = an->n_layers && an->layers[0].has_golden;
    if (golden) fputs("<th>A vs fp32</th><th>B vs fp32</th>", f);
    fputs("</tr></thead><tbody>\n", f);
    for (int i = 0; i < an->n_layers; i++) {
        const cd_layer_cmp *l = &an->layers[i];
        char sh[128];
        const char *rc = an->local_ran ? (l->has_local && !l->loc_pass ? "fault"
                                              : l->m.pass              ? ""
                                                                       : "drift")
            : i == an->first_fail      ? "first"
            : l->m.pass                ? ""
                                       : "bad";
        fprintf(f, "<tr class=\"%s\"><td>%d</td><td>", rc, l->op_index);
        h(f, l->layer);
        fprintf(
            f,
            "</td><td>%s</td><td>%s</td><td>%.4g</td><td>%.4g</td><td>%.4g</td><td>%.8f</td><td>%.1f</td><td>%.0f</td>"
            "<td>%.3g</td><td>%.3g</td><td>%.3g</td><td>%lld/%lld</td><td>%s</td><td>%.1f</td>",
            l->op_type, cd_shape_str(&l->shape, sh, sizeof sh), l->m.max_abs, l->m.mean_abs, l->m.max_rel, l->m.cosine,
            l->m.snr_db, l->m.max_ulp, 100 * l->m.fail_fraction, l->rel_err, l->growth,
            (long long)(l->m.nan_ref + l->m.inf_ref), (long long)(l->m.nan_val + l->m.inf_val), l->where_b,
            l->kernel_us_b >= 0 ? l->kernel_us_b : l->us_b);
        fprintf(f, "<td>%lld</td><td class=\"mono\">", (long long)l->acc_k);
        h(f, l->rule);
        fputs("</td><td>", f);
        if (l->risk_rank) {
            fprintf(f, "#%d ", l->risk_rank);
            h(f, l->risk_reason);
        }
        fputs("</td><td>", f);
        if (l->has_repeat) fprintf(f, "%s%.3g", l->nondet ? "NONDET " : "", l->spread);
        fputs("</td><td>", f);
        if (l->n_agg) {
            fprintf(f, "%d/%d ", l->n_agg_fail, l->n_agg);
            if (l->n_agg_fail) {
                fputs("worst ", f);
                h(f, l->worst_input);
            }
        }
        fputs("</td><td>", f);
        h(f, l->family);
        if (l->has_local)
            fprintf(f, "</td><td>%.3g</td><td>%.3g</td><td>%s%.3g</td><td>%s</td>", l->loc_err, l->loc_bound,
                    strstr(l->loc_note, "ratio: an upper bound") ? "&le;" : "", l->loc_ratio,
                    l->loc_pass ? "yes" : "<b>FAULT</b>");
        else {
            fputs("</td><td></td><td></td><td></td><td title=\"", f);
            h(f, l->loc_note);
            fputs(l->loc_note[0] ? "\">not checked</td>" : "\"></td>", f);
        }
        if (golden)
            fprintf(f, "<td>%.3g</td><td>%.3g</td>", l->ga.ref_rms > 0 ? l->ga.rmse / l->ga.ref_rms : l->ga.rmse,
                    l->gb.ref_rms > 0 ? l->gb.rmse / l->gb.ref_rms : l->gb.rmse);
        fputs("</tr>\n", f);
    }
    fprintf(f, "</tbody></table>\n<script>%s</script>\n</body></html>\n", JS);
    return cd_afile_commit(&af, err);
}
