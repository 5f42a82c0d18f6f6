/* Reports under the verdict model of docs/verdicts.md: a hand-made analysis with a kernel
 * fault, one with output drift, one that passes with drifting intermediate layers, and one
 * from an old dump (no local check); every format says what is true. */
#include <criterion/criterion.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "compare/analysis.h"
#include "report/report.h"

enum { SC_FAULT, SC_DRIFT, SC_PASS, SC_LEGACY };

static const cd_report_env ENV = {.tool_version = "test",
                                  .command_line = "cldiff m.nb",
                                  .model_path = "m.nb",
                                  .model_sha256 = "00ff",
                                  .model_format = "nb",
                                  .precision = "fp32",
                                  .backend_a = "cpu",
                                  .backend_b = "opencl",
                                  .device_a = "x86",
                                  .driver_a = "-",
                                  .device_b = "pocl",
                                  .driver_b = "6",
                                  .variant_b = "fp32",
                                  .seed = 1,
                                  .input_desc = "x: random",
                                  .tolerance_desc = "fp32 default",
                                  .n_ops = 8,
                                  .created = "2024-01-01T00:00:00Z"};

static cd_layer_cmp L[4];

/* Four layers: conv2d_0 (exact locally), conv2d_1 (the fault in SC_FAULT), relu_2 (drifts in the
 * free run), sigmoid_0 (the model output, not checked locally). */
static void make(cd_analysis *an, int sc) {
    memset(an, 0, sizeof *an);
    memset(L, 0, sizeof L);
    static const char *const names[4] = {"conv2d_0", "conv2d_1", "relu_2", "sigmoid_0"};
    static const char *const types[4] = {"conv2d", "conv2d", "relu", "sigmoid"};
    static const char *const fams[4] = {"accumulate", "accumulate", "exact", "transcendental"};
    static const int ops[4] = {0, 5, 6, 7};
    for (int i = 0; i < 4; i++) {
        cd_layer_cmp *l = &L[i];
        l->op_index = ops[i];
        snprintf(l->layer, sizeof l->layer, "%s", names[i]);
        snprintf(l->op_type, sizeof l->op_type, "%s", types[i]);
        snprintf(l->tensor, sizeof l->tensor, "%s.tmp_0", names[i]);
        snprintf(l->family, sizeof l->family, "%s", fams[i]);
        l->shape = (cd_shape){.rank = 4, .d = {1, 4, 16, 16}};
        l->m =
            (cd_metrics){.n = 1024, .max_abs = 1e-6, .cosine = 1, .snr_db = INFINITY, .worst_index = -1, .pass = true};
        l->tol = (cd_tol){.atol = 1e-4, .rtol = 1e-4, .min_cos = 0.99999};
        l->rel_err = 1e-7;
        l->growth = 1;
        snprintf(l->where_a, sizeof l->where_a, "cpu");
        snprintf(l->where_b, sizeof l->where_b, "opencl");
        if (sc == SC_LEGACY) continue;
        l->has_local = i < 3;
        l->loc = (cd_metrics){.n = 1024, .max_abs = 1e-7, .cosine = 1, .rmse = 2e-8, .ref_rms = 0.5, .pass = true};
        l->loc_pass = true;
        l->loc_ratio = i == 0 ? 0 : 0.25;
        l->loc_worst = -1;
        snprintf(l->loc_note, sizeof l->loc_note, "%s",
                 i < 3 ? "K=36 terms, u=2^-24 <fp32> \"both sides\"" : "model output: not re-run");
    }
    /* conv2d_1 and relu_2 beyond the element tolerance in the free run */
    for (int i = 1; i <= 2; i++) {
        L[i].m.pass = false;
        L[i].m.max_abs = 3e-3;
        L[i].m.fail_fraction = 0.25;
        L[i].drift = sc != SC_LEGACY;
    }
    cd_layer_cmp *o = &L[3];
    o->is_output = true;
    o->has_topk = true;
    o->top1 = 1;
    o->top5 = 0.8;
    an->layers = L;
    an->n_layers = 4;
    an->first_fail = 1;
    an->n_fail = 2;
    an->verdict = CD_VERDICT_FAIL;
    snprintf(an->first_kind, sizeof an->first_kind, "unknown");
    an->nonfinite_origin = -1;
    an->first_nondet = -1;
    an->first_fault = -1;
    if (sc == SC_LEGACY) return; /* kind stays 0 and local_ran false, as an older analysis leaves them */
    an->local_ran = true;
    snprintf(an->local_ref, sizeof an->local_ref, "cpu");
    an->n_local = 3;
    an->n_drift = 2;
    an->n_outputs = 1;
    snprintf(an->out_tol_desc, sizeof an->out_tol_desc, "range error <= 1e-2 of max|ref|");
    snprintf(o->task, sizeof o->task, "classifier");
    snprintf(o->out_rule, sizeof o->out_rule, "output default");
    o->out_range_err = 1e-4;
    o->out_pass = true;
    if (sc == SC_FAULT) {
        cd_layer_cmp *l = &L[1];
        l->loc_pass = false;
        l->loc_err = 1.2e-2;
        l->loc_bound = 3.4e-5;
        l->loc_ratio = 352;
        l->loc_exceed = 40;
        l->loc_worst = 1000; /* [0,3,14,8] in [1,4,16,16] */
        L[2].risk_rank = 1;  /* diagnosis of a passing layer travels in its system-out */
        snprintf(L[2].risk_reason, sizeof L[2].risk_reason, "K=36, golden over 65504");
        an->kind = CD_KIND_FAULT;
        an->first_fault = 1;
        an->n_faults = 1;
    } else if (sc == SC_DRIFT) {
        o->out_pass = false;
        o->out_range_err = 3.1e-2;
        an->n_out_fail = 1;
        an->kind = CD_KIND_DRIFT;
        L[2].growth = 57;
        L[1].growth = 12;
        an->amplifiers[0] = 2;
        an->amplifiers[1] = 1;
        an->n_amplifiers = 2;
        an->contributors[0] = 1;
        an->n_contributors = 1;
    } else {
        an->kind = CD_KIND_PASS;
        an->verdict = CD_VERDICT_PASS;
        an->first_fault = 0; /* an unset index must not be read as a fault */
    }
}

static char *slurp(const char *dir, const char *name) {
    char p[600];
    snprintf(p, sizeof p, "%s/%s", dir, name);
    FILE *f = fopen(p, "rb");
    cr_assert_not_null(f, "%s written", p);
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    char *s = malloc((size_t)n + 1);
    cr_assert_eq(fread(s, 1, (size_t)n, f), (size_t)n);
    s[n] = 0;
    fclose(f);
    return s;
}

static int count(const char *s, const char *needle) {
    int n = 0;
    for (const char *p = strstr(s, needle); p; p = strstr(p + 1, needle)) n++;
    return n;
}

/* Writes every report of scenario sc into a fresh folder (returned in dir). */
static void write_all(int sc, cd_analysis *an, char *dir) {
    make(an, sc);
    strcpy(dir, "/tmp/cd_report_verdict_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cd_report_input in = {.env = &ENV, .an = an};
    cd_error err = {0};
    cr_assert_eq(cd_report_all(&in, dir, &err), CD_OK, "%s", err.msg);
}

/* The parsers of the consumers: JSON and XML must stay well formed whatever the strings hold. */
static void parses(const char *dir) {
    char cmd[900];
    snprintf(cmd, sizeof cmd,
             "python3 -c 'import json,sys,xml.etree.ElementTree as E; json.load(open(sys.argv[1]+\"/summary.json\"));"
             " E.parse(sys.argv[1]+\"/junit.xml\")' %s 2>&1",
             dir);
    int rc = system(cmd);
    if (WIFEXITED(rc) && WEXITSTATUS(rc) == 127) return; /* no python3 here: the e2e tests parse them */
    cr_assert_eq(rc, 0, "summary.json and junit.xml parse");
}

static void cleanup(const char *dir) {
    static const char *const files[] = {"layers.csv", "summary.json", "junit.xml", "summary.md", "report.html"};
    char p[600];
    for (size_t i = 0; i < sizeof files / sizeof *files; i++) {
        snprintf(p, sizeof p, "%s/%s", dir, files[i]);
        remove(p);
    }
    rmdir(dir);
}

static char *terminal(const cd_analysis *an) {
    char *buf = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&buf, &n);
    cd_report_input in = {.env = &ENV, .an = an};
    cd_report_terminal(&in, f, false);
    fclose(f);
    return buf;
}

/* The CSV field of `column` in the row of `layer`. */
static void csv_field(const char *csv, const char *column, const char *layer, char *out, size_t n) {
    const char *hdr_end = strchr(csv, '\n');
    int col = -1, k = 0;
    for (const char *p = csv; p < hdr_end; k++) {
        const char *e = strpbrk(p, ",\n");
        if ((size_t)(e - p) == strlen(column) && !strncmp(p, column, (size_t)(e - p))) col = k;
        p = e + 1;
        if (*e == '\n') break;
    }
    cr_assert_geq(col, 0, "column %s in layers.csv", column);
    char key[160];
    snprintf(key, sizeof key, ",%s,", layer);
    const char *row = strstr(hdr_end, key);
    cr_assert_not_null(row, "row of %s", layer);
    while (row > csv && row[-1] != '\n') row--;
    /* fields before the asked column hold no quoted commas in these rows but the note */
    const char *p = row;
    for (int i = 0; i < col; i++) {
        if (*p == '"') {
            p++;
            while (!(p[0] == '"' && p[1] != '"')) p += p[0] == '"' ? 2 : 1;
            p++;
        } else
            p = strpbrk(p, ",\n");
        cr_assert(*p == ',');
        p++;
    }
    size_t len = strcspn(p, ",\n");
    snprintf(out, n, "%.*s", (int)len, p);
}

Test(report_verdict, kernel_fault) {
    cd_analysis an;
    char dir[64];
    write_all(SC_FAULT, &an, dir);
    parses(dir);
    char *js = slurp(dir, "summary.json");
    cr_assert(strstr(js, "\"schema\": \"cldiff-summary/1\""));
    cr_assert(strstr(js, "\"verdict\": \"fail\""));
    cr_assert(strstr(js, "\"verdict_kind\": \"kernel_fault\""), "%s", js);
    cr_assert(
        strstr(
            js,
            "\"first_fault\": {\"op_index\": 5, \"layer\": \"conv2d_1\", \"op_type\": \"conv2d\", "
            "\"tensor\": \"conv2d_1.tmp_0\", \"family\": \"accumulate\", \"error\": 0.012, \"bound\": 3.4e-05, "
            "\"ratio\": 352, \"exceed\": 40, \"elements\": 1024, \"worst_index\": 1000, \"worst_coord\": [0,3,14,8]"),
        "%s", js);
    cr_assert(
        strstr(js, "\"local_check\": {\"ran\": true, \"reference\": \"cpu\", \"layers_checked\": 3, \"faults\": 1}"));
    cr_assert(strstr(js, "\"layers_drifted\": 2"));
    cr_assert(strstr(js,
                     "\"outputs\": [{\"layer\": \"sigmoid_0\", \"tensor\": \"sigmoid_0.tmp_0\", \"op_index\": 7, "
                     "\"range_err\": 0.0001"));
    cr_assert(strstr(js, "\"top1\": 1, \"top5\": 0.8"));
    /* per layer: the local check, its absence with the reason, drift and output flags */
    cr_assert(strstr(js,
                     "\"local\": {\"family\": \"accumulate\", \"error\": 0.012, \"bound\": 3.4e-05, \"ratio\": 352, "
                     "\"ratio_upper\": false, \"exceed\": 40, \"pass\": false"));
    cr_assert(strstr(
        js, "\"local\": null, \"local_note\": \"model output: not re-run\", \"drift\": false, \"is_output\": true"));
    cr_assert_eq(count(js, "\"drift\": true"), 2);
    cr_assert(strstr(js, "\\\"both sides\\\""), "notes are JSON-escaped");
    free(js);

    char *csv = slurp(dir, "layers.csv");
    cr_assert(
        strstr(csv,
               ",p1_cosine,local_family,local_err,local_bound,local_ratio,local_exceed,local_pass,local_note,drift,"
               "is_output,out_range_err,out_pass\n"));
    char v[64];
    csv_field(csv, "local_ratio", "conv2d_1", v, sizeof v);
    cr_assert_str_eq(v, "352");
    csv_field(csv, "local_pass", "conv2d_1", v, sizeof v);
    cr_assert_str_eq(v, "0");
    csv_field(csv, "local_pass", "conv2d_0", v, sizeof v);
    cr_assert_str_eq(v, "1");
    csv_field(csv, "local_ratio", "sigmoid_0", v, sizeof v);
    cr_assert_str_eq(v, "", "no ratio for a layer not checked");
    csv_field(csv, "drift", "relu_2", v, sizeof v);
    cr_assert_str_eq(v, "1");
    csv_field(csv, "out_pass", "sigmoid_0", v, sizeof v);
    cr_assert_str_eq(v, "1");
    free(csv);

    /* junit: only the kernel fault fails; relu_2's drift is system-out; one output testcase */
    char *ju = slurp(dir, "junit.xml");
    cr_assert(strstr(ju, "vs opencl\" tests=\"4\" failures=\"1\""), "layer suite: %s", ju);
    cr_assert(strstr(ju, "m.nb outputs\" tests=\"1\" failures=\"0\""), "output suite: %s", ju);
    cr_assert_eq(count(ju, "<testcase "), 5);
    cr_assert_eq(count(ju, "<failure "), 1);
    const char *fail = strstr(ju, "<failure ");
    const char *c1 = strstr(ju, "name=\"0005 conv2d_1\"");
    cr_assert(c1 && fail > c1 && fail < strstr(ju, "name=\"0006 relu_2\""), "the failure is conv2d_1's");
    cr_assert(strstr(
        fail,
        "kernel fault: local error 0.012 &gt; bound 3.4e-05 (ratio 352, 40 of 1024 elements, family accumulate)"));
    cr_assert(strstr(ju, "<system-out>free-run drift beyond the element tolerance (information)"));
    cr_assert(strstr(ju, " fp16-risk-rank=1 K=36, golden over 65504</system-out>"), "%s", ju);
    cr_assert(strstr(ju, "<testcase classname=\"cldiff.output\" name=\"output sigmoid_0.tmp_0\"/>"));
    cr_assert_eq(count(ju, "<testsuite "), 2);
    free(ju);

    char *t = terminal(&an);
    cr_assert(strstr(t,
                     "verdict: KERNEL FAULT at conv2d_1 (conv2d, op #5): local error 1.2e-02 > bound 3.4e-05 "
                     "(ratio 352, 40 of 1024 elements)\n"),
              "%s", t);
    cr_assert(strstr(t, "First layer out of tolerance: conv2d_1"), "%s", t);
    cr_assert(strstr(t, " FAULT"));
    free(t);
    char *md = slurp(dir, "summary.md");
    cr_assert(strstr(md, "**verdict: KERNEL FAULT** at `conv2d_1`"), "%s", md);
    free(md);
    char *html = slurp(dir, "report.html");
    cr_assert(strstr(html, "id=\"verdict\" data-kind=\"kernel_fault\""));
    cr_assert(strstr(html, "<b>KERNEL FAULT</b> at <b>#5 conv2d_1</b>"));
    cr_assert(strstr(html, "<th>local ratio</th>"));
    cr_assert(strstr(html, "id=\"outputs\""));
    cr_assert(strstr(html, "&lt;fp32&gt; &quot;both sides&quot;"), "notes are HTML-escaped");
    free(html);
    cleanup(dir);
}

Test(report_verdict, output_drift) {
    cd_analysis an;
    char dir[64];
    write_all(SC_DRIFT, &an, dir);
    parses(dir);
    char *js = slurp(dir, "summary.json");
    cr_assert(strstr(js, "\"verdict_kind\": \"output_drift\""));
    cr_assert(strstr(js, "\"first_fault\": null"));
    cr_assert(strstr(js,
                     "\"range_err\": 0.031, \"cosine\": 1, \"snr_db\": 1e308, \"max_abs\": 1e-06, \"pass\": false, "
                     "\"rule\": \"output default\", \"task\": \"classifier\""),
              "%s", js);
    cr_assert(
        strstr(js,
               "\"amplifiers\": [{\"layer\": \"relu_2\", \"op_type\": \"relu\", \"growth\": 57, \"rel_err\": 1e-07}, "
               "{\"layer\": \"conv2d_1\""));
    cr_assert(strstr(js,
                     "\"contributors\": [{\"layer\": \"conv2d_1\", \"op_type\": \"conv2d\", \"ratio\": 0.25, "
                     "\"rel_local\": 4e-08}]"));
    free(js);
    char *ju = slurp(dir, "junit.xml");
    cr_assert(strstr(ju, "vs opencl\" tests=\"4\" failures=\"0\""), "layer suite: %s", ju);
    cr_assert(strstr(ju, "m.nb outputs\" tests=\"1\" failures=\"1\""), "output suite: %s", ju);
    cr_assert_eq(count(ju, "<failure "), 1);
    cr_assert(
        strstr(ju,
               "name=\"output sigmoid_0.tmp_0\">\n      <failure message=\"output drift: range error 0.031 beyond the "
               "output tolerance (output default)\""),
        "%s", ju);
    free(ju);
    char *t = terminal(&an);
    cr_assert(
        strstr(
            t,
            "verdict: OUTPUT DRIFT: output sigmoid_0.tmp_0 range error 3.1e-02 > tolerance; no checked layer (3 of 4) "
            "is wrong on its own inputs; error amplified at relu_2 (x57), conv2d_1 (x12)\n"),
        "%s", t);
    cr_assert(strstr(t, "First divergence (information): conv2d_1"), "%s", t);
    cr_assert(!strstr(t, "First layer out of tolerance"));
    free(t);
    char *md = slurp(dir, "summary.md");
    cr_assert(strstr(md, "**verdict: OUTPUT DRIFT**: output `sigmoid_0.tmp_0`"), "%s", md);
    cr_assert(strstr(md, "| 6 | `relu_2` | relu | x57 |"), "%s", md);
    free(md);
    char *html = slurp(dir, "report.html");
    cr_assert(strstr(html, "data-kind=\"output_drift\""));
    cr_assert(strstr(html, "Where the error is amplified"));
    cr_assert(strstr(html, "First divergence (information)"));
    free(html);
    cleanup(dir);
}

Test(report_verdict, pass_with_drift) {
    cd_analysis an;
    char dir[64];
    write_all(SC_PASS, &an, dir);
    parses(dir);
    char *js = slurp(dir, "summary.json");
    cr_assert(strstr(js, "\"verdict\": \"pass\""));
    cr_assert(strstr(js, "\"verdict_kind\": \"pass\""));
    cr_assert(strstr(js, "\"first_fault\": null"), "first_fault 0 with kind pass is not a fault");
    free(js);
    char *ju = slurp(dir, "junit.xml");
    cr_assert(strstr(ju, "vs opencl\" tests=\"4\" failures=\"0\""), "%s", ju);
    cr_assert(strstr(ju, "m.nb outputs\" tests=\"1\" failures=\"0\""), "%s", ju);
    cr_assert_eq(count(ju, "<failure "), 0);
    cr_assert_eq(count(ju, "<system-out>"), 3, "two drifting layers and the unchecked output");
    free(ju);
    char *t = terminal(&an);
    cr_assert(strstr(t,
                     "verdict: PASS (3 layers checked locally, all within their bounds; 1 output(s) within the output "
                     "tolerance; "
                     "2 intermediate layer(s) drifted beyond the element tolerance: information)\n"),
              "%s", t);
    free(t);
    char *md = slurp(dir, "summary.md");
    cr_assert(strstr(md, "### cldiff: m.nb — pass"));
    free(md);
    cleanup(dir);
}

/* An analysis without a local check (old dumps, `cldiff compare`): junit keeps the free-run
 * meaning and the reports claim no verdict kind the analysis did not give. */
Test(report_verdict, legacy_without_local_check) {
    cd_analysis an;
    char dir[64];
    write_all(SC_LEGACY, &an, dir);
    parses(dir);
    char *js = slurp(dir, "summary.json");
    cr_assert(strstr(js, "\"verdict_kind\": null"));
    cr_assert(strstr(js, "\"local_check\": {\"ran\": false"));
    cr_assert(strstr(js, "\"range_err\": null"), "no output tolerance was applied");
    free(js);
    char *ju = slurp(dir, "junit.xml");
    cr_assert(strstr(ju, "vs opencl\" tests=\"4\" failures=\"2\""), "%s", ju);
    cr_assert(!strstr(ju, "outputs\""), "no output suite without a local check");
    cr_assert_eq(count(ju, "<testcase "), 4);
    cr_assert_eq(count(ju, "<failure message=\"max_abs="), 2);
    free(ju);
    char *t = terminal(&an);
    cr_assert(strstr(t, "verdict: FAIL (not classified"), "%s", t);
    cr_assert(strstr(t, "First layer out of tolerance: conv2d_1"), "%s", t);
    free(t);
    cleanup(dir);
}

/* Verdicts that cannot lie (docs/verdicts.md "Incomplete"): an interrupted run whose checked
 * layers all passed, and a run whose B failed, are no pass in any format. */
static void make_no_verdict(cd_analysis *an, bool error) {
    make(an, SC_PASS);
    if (error) {
        an->kind = CD_KIND_ERROR;
        an->verdict = CD_VERDICT_ERROR;
        snprintf(an->error, sizeof an->error, "cannot load the OpenCL library 'x.so' <missing>");
        an->error_code = 4;
    } else {
        an->kind = CD_KIND_INCOMPLETE;
        an->verdict = CD_VERDICT_INCOMPLETE;
        an->interrupted = true;
        an->n_unchecked = 2;
        snprintf(an->incomplete, sizeof an->incomplete,
                 "interrupted during run B; 2 probed tensor(s) in one run only, not compared: 4 layer(s) compared");
    }
}

static void no_verdict_reports(bool error) {
    cd_analysis an;
    make_no_verdict(&an, error);
    char dir[64];
    strcpy(dir, "/tmp/cd_report_verdict_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
    cd_cmp_unmatched um[2] = {{.op_index = 9, .side = 'a'}, {.op_index = 10, .side = 'a'}};
    snprintf(um[0].layer, sizeof um[0].layer, "pool2d_0");
    snprintf(um[0].tensor, sizeof um[0].tensor, "pool.tmp");
    snprintf(um[1].layer, sizeof um[1].layer, "fc_0");
    snprintf(um[1].tensor, sizeof um[1].tensor, "fc.tmp");
    cd_report_input in = {.env = &ENV, .an = &an, .unchecked = um, .n_unchecked = error ? 0 : 2};
    cd_error err = {0};
    cr_assert_eq(cd_report_all(&in, dir, &err), CD_OK, "%s", err.msg);
    parses(dir);
    const char *word = error ? "error" : "incomplete";
    char *js = slurp(dir, "summary.json");
    char want[160];
    snprintf(want, sizeof want, "\"verdict\": \"%s\"", word);
    cr_assert(strstr(js, want), "%s", js);
    snprintf(want, sizeof want, "\"verdict_kind\": \"%s\"", word);
    cr_assert(strstr(js, want), "%s", js);
    if (error)
        cr_assert(strstr(js,
                         "\"error\": {\"message\": \"cannot load the OpenCL library 'x.so' <missing>\", "
                         "\"exit_code\": 4}"),
                  "%s", js);
    else
        cr_assert(strstr(js, "\"interrupted\": true") && strstr(js, "\"layers_not_compared\": 2") &&
                      strstr(js, "\"incomplete\": \"interrupted during run B;"),
                  "%s", js);
    free(js);
    char *ju = slurp(dir, "junit.xml");
    snprintf(want, sizeof want, "<error type=\"%s\" message=\"%s: ", word, word);
    cr_assert(strstr(ju, want), "%s", ju);
    cr_assert(strstr(ju, "tests=\"5\" failures=\"0\" errors=\"1\""), "one error testcase more: %s", ju);
    if (error) cr_assert(strstr(ju, "&lt;missing&gt;"), "the message is escaped: %s", ju);
    free(ju);
    char *md = slurp(dir, "summary.md");
    snprintf(want, sizeof want, "### cldiff: m.nb — %s", word);
    cr_assert(strstr(md, want), "%s", md);
    cr_assert(strstr(md, error ? "**verdict: ERROR** (exit 4)" : "**verdict: INCOMPLETE** (interrupted)"), "%s", md);
    cr_assert_null(strstr(md, "PASS"), "%s", md);
    free(md);
    char *h = slurp(dir, "report.html");
    snprintf(want, sizeof want, "data-kind=\"%s\"", word);
    cr_assert(strstr(h, want));
    cr_assert(strstr(h, error ? "<b>ERROR</b> (exit 4)" : "<b>INCOMPLETE</b> (interrupted)"));
    cr_assert_null(strstr(h, "<b>PASS</b>"));
    free(h);
    char *csv = slurp(dir, "layers.csv");
    cr_assert_eq(count(csv, ",not_compared,"), error ? 0 : 2, "%s", csv);
    free(csv);
    char *t = terminal(&an);
    cr_assert(strstr(t, error ? "verdict: ERROR (exit 4): cannot load" : "verdict: INCOMPLETE (interrupted): "), "%s",
              t);
    cr_assert_null(strstr(t, "verdict: PASS"), "%s", t);
    free(t);
    cleanup(dir);
}

Test(report_verdict, incomplete_is_no_pass_in_any_format) { no_verdict_reports(false); }
Test(report_verdict, error_is_no_pass_in_any_format) { no_verdict_reports(true); }

/* A PASS whose local check had nothing to check (an engine route that hands over the outputs
 * only) says so, instead of "0 layers checked locally, all within their bounds". */
Test(report_verdict, pass_basis_without_local_layers) {
    cd_analysis an;
    memset(&an, 0, sizeof an);
    char b[160];
    an.local_ran = true;
    an.n_local = 0;
    an.n_layers = 2;
    cd_report_pass_basis(&an, b, sizeof b);
    cr_assert_str_eq(b, "no layer checked locally (2 compared)");
    an.n_local = 2;
    cd_report_pass_basis(&an, b, sizeof b);
    cr_assert_str_eq(b, "2 layers checked locally, all within their bounds");
    an.local_ran = false;
    cd_report_pass_basis(&an, b, sizeof b);
    cr_assert_str_eq(b, "2 layers compared, no local check");
}
