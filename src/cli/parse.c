/* The command line: the usage text, the options every command shares (cd_cli_parse) and the
 * helpers the commands share to refuse a bad one or report a failure. Exit codes are
 * documented in README.md. Called by cli.c and the commands; calls nothing of theirs. */
#include "cli/cli.h"
#include "backends/cpu/gemm.h"
#include "util/suggest.h"
#include "backends/registry.h"
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static const char *const USAGE_MAIN =
    "usage: cldiff MODEL.nb [options]            compare CPU and OpenCL layer by layer\n"
    "       cldiff run [--backends cpu|opencl] MODEL.nb [options]   run and dump every layer\n"
    "       cldiff inspect MODEL.nb [--shape NAME=dims]\n"
    "       cldiff doctor [--cl-lib PATH] [--cl-platform P] [--cl-device D]\n"
    "       cldiff ops [--backend NAME] [TYPE ...]     op types cldiff runs, per backend\n"
    "       cldiff export MODEL.nb -o DIR [--dequant]   write a Paddle inference model for opt\n"
    "       cldiff compare A.h5 B.h5 [--force] [options]   runs of one model on one input\n"
    "                            (--force: compare dumps of different models or inputs)\n"
    "       cldiff report DUMP.h5 [--out DIR]\n"
    "       cldiff instrument MODEL.nb [--layers SPEC] -o probed.nb   every probed tensor fetched\n"
    "       cldiff import DIR --manifest probed.manifest.json -o dump.h5   outputs saved by Paddle-Lite\n"
    "\n"
    "model and inputs:\n"
    "  --shape NAME=1,3,48,192   value for dynamic dims of an input (repeatable; default: the\n"
    "                            shape of its --input .npy/.h5 file, when it has one)\n"
    "  --input [NAME=]SPEC       SPEC: random (default, seeded), const:V, file.npy, file.bin,\n"
    "                            file.h5:/dataset, image.png (repeatable, one per input)\n"
    "  --seed N                  seed of random inputs (default 1)\n"
    "  --mean a,b,c --std a,b,c  PNG normalisation after scaling to [0,1]\n"
    "  --channel-order rgb|bgr   PNG channel order (default rgb)   --no-resize\n"
    "probes and dump:\n"
    "  --layers SPEC             all (default) | outputs | names,globs | op:TYPE | #3-17\n"
    "  --dump full|stats         keep whole tensors (default) or statistics only\n"
    "  --out DIR                 output folder (default cldiff-out)\n"
    "  --max-memory SIZE         refuse plans needing more (default 80% of physical memory)\n"
    "  --max-dump SIZE           refuse runs whose --dump full would exceed SIZE (default 8G)\n"
    "  --compress N              dump compression: shuffle + deflate level 1-9 (smaller dump,\n"
    "                            much slower), 0 = none (default)\n"
    "backends:\n"
    "  --backends A[,B]          two of: cpu (alias arm), opencl (default cpu,opencl),\n"
    "                            paddle-lite-arm, paddle-lite-opencl (Paddle-Lite's own ARM and\n"
    "                            OpenCL kernels), paddle-lite (the x86 wheel); `cldiff doctor`\n"
    "                            says which are usable (docs/paddle-lite-engines.md); for a .mnn\n"
    "                            model: mnn-cpu, mnn-opencl, mnn-arm (MNN's own kernels, docs/mnn.md)\n"
    "  --backend-opt NAME:key=value  an option of one backend (repeatable), e.g.\n"
    "                            opencl:platform=NVIDIA, paddle-lite-arm:sdk=DIR; `cldiff doctor`\n"
    "                            lists every backend's options\n"
    "  --fp32 | --fp16           precision of both runs (default fp32)\n"
    "  --fp16-compute            use half arithmetic on OpenCL where cl_khr_fp16 exists\n"
    "  --int8 arm|dequant        int8 models on the CPU: integer arithmetic as Paddle-Lite's\n"
    "                            ARM int8 kernels (default) or dequantized weights in float\n"
    "  --int8-placement arm|gpu  int8 layers in the OpenCL run: on the ARM int8 kernels, where\n"
    "                            Paddle-Lite places them (default), or as float OpenCL kernels\n"
    "  --threads N               CPU threads (default 2)\n"
    "  --cl-lib PATH --cl-platform P --cl-device D (index or name substring)\n"
    "  --kernel-dir DIR          replace embedded kernels/*.cl with files from DIR\n"
    "  --cache-dir DIR --no-cache  OpenCL program cache\n"
    "  --timeout SEC             end a hung OpenCL run (default 600)\n"
    "comparison:\n"
    "  --tolerance FILE          per op type / layer glob tolerances\n"
    "  --atol X --rtol X --min-cos X --max-fail-fraction X\n"
    "  --local all|none          local check: each probed layer of B against the reference on\n"
    "                            the same inputs (fp32: B re-run on A's; fp16: B's own), held to\n"
    "                            its op's error bound (default all; --isolate: alias)\n"
    "  --baseline OLD.h5         regression gate against a stored dump\n"
    "diagnosis (docs/diagnosis.md):\n"
    "  --tolerance auto          per-layer bound from accumulation length and output RMS\n"
    "  --calibrate N             measure the noise floor over N runs, write <out>/tolerance.txt\n"
    "  --calibrate-safety X      factor on the measured errors (default 4)\n"
    "  --repeat N                run B N times; layers that change are nondeterministic\n"
    "  --inputs DIR              run every .png/.npy/.h5 in DIR, aggregate per layer\n"
    "  --repro DIR               repro pack of the first failing layer (default <out>/repro\n"
    "                            on failure; --no-repro turns that off)\n"
    "  --suggest-pins            fp16 OpenCL: find layers to run in float32 on the CPU\n"
    "instrument / import (docs/paddle-lite.md):\n"
    "  --retarget x86            rewrite ARM kernel records (run an ARM model in the x86 wheel)\n"
    "  --host-ops A,B --target-ops C   ops whose records go to Host / stay on the target\n"
    "  --keep-names              no renaming of reused names (shows why it is needed)\n"
    "  --manifest M.json --from npy|profiler --run NAME --model M.nb   (import)\n"
    "other:\n"
    "  --progress                progress lines on stderr even when it is not a terminal\n"
    "                            (default: only on a terminal; never with --quiet)\n"
    "  --quiet  --help  --version\n"
    "\n"
    "exit codes: 0 pass, 1 kernel fault, output drift or nondeterminism, 2 usage,\n"
    "            3 bad model, input or dump (damaged, foreign), 4 backend unavailable,\n"
    "            5 backend crashed or hung, 6 cannot write output, 7 out of memory,\n"
    "            8 unsupported op, 9 internal error, 10 incomplete (not everything probed\n"
    "            was compared: a partial dump, 0 layers), 130 interrupted (reports: incomplete);\n"
    "            a run that failed after run A writes reports with verdict error and exits\n"
    "            with the failure's code\n";

void cd_cli_usage(FILE *f, const char *cmd) {
    (void)cmd;
    fputs(USAGE_MAIN, f);
}

int cd_cli_fail(const cd_error *err) {
    int code = err->code == CD_OK ? CD_E_INTERNAL : (int)err->code;
    fprintf(stderr, "cldiff: %s\n", err->msg[0] ? err->msg : cd_status_name(err->code));
    if (code == CD_E_USAGE) fprintf(stderr, "Run 'cldiff --help' for usage.\n");
    fprintf(stderr, "(exit %d: %s)\n", code, cd_status_name((cd_status)code));
    return code;
}

/* One line, never the whole usage text: the message names the option and what it takes. */
int cd_cli_usage_error(const char *cmd, const char *fmt, const char *arg) {
    fprintf(stderr, "cldiff%s%s: ", cmd ? " " : "", cmd ? cmd : "");
    fprintf(stderr, fmt, arg);
    fprintf(stderr, " (cldiff%s%s --help lists every option)\n", cmd ? " " : "", cmd ? cmd : "");
    return CD_E_USAGE;
}

void cd_cli_print_version(void) {
    printf("cldiff %s (CPU GEMM micro-kernels: fp32 %s, fp16 %s)\n", CLDIFF_VERSION, cd_gemm_kernel_name_f32(),
           cd_gemm_kernel_name_f16());
}

/* Every option cd_cli_parse accepts: the candidates of "did you mean" (e2e_errors checks that
 * each option `cldiff --help` documents is among them). */
static const char *const SHARED_OPTIONS[] = {"--help",
                                             "-h",
                                             "--version",
                                             "--fp32",
                                             "--fp16",
                                             "--fp16-compute",
                                             "--int8",
                                             "--int8-placement",
                                             "--quiet",
                                             "-q",
                                             "--no-cache",
                                             "--no-resize",
                                             "--no-isolate",
                                             "--no-repro",
                                             "--force",
                                             "--suggest-pins",
                                             "--repro",
                                             "--inputs",
                                             "--repeat",
                                             "--calibrate",
                                             "--calibrate-safety",
                                             "--out",
                                             "-o",
                                             "--layers",
                                             "--backends",
                                             "--backend-opt",
                                             "--threads",
                                             "--seed",
                                             "--input",
                                             "--shape",
                                             "--mean",
                                             "--std",
                                             "--channel-order",
                                             "--dump",
                                             "--max-memory",
                                             "--max-dump",
                                             "--progress",
                                             "--compress",
                                             "--timeout",
                                             "--cl-lib",
                                             "--cl-platform",
                                             "--cl-device",
                                             "--kernel-dir",
                                             "--cache-dir",
                                             "--tolerance",
                                             "--baseline",
                                             "--isolate",
                                             "--local",
                                             "--atol",
                                             "--rtol",
                                             "--min-cos",
                                             "--max-fail-fraction"};
/* instrument's own options (cmd_instrument.c takes them out before cd_cli_parse) */
static const char *const INSTRUMENT_OPTIONS[] = {"--retarget", "--host-ops", "--target-ops", "--keep-names"};

int cd_cli_unknown_option(const char *cmd, const char *opt, const char *const *candidates, int n) {
    char word[CD_SUGGEST_MAX_LEN + 1];
    snprintf(word, sizeof word, "%.*s", (int)strcspn(opt, "="), opt); /* --shap=1,3 -> --shap */
    const char *near = cd_suggest(word, candidates, n);
    fprintf(stderr, "cldiff%s%s: unknown option '%s'%s%s%s (cldiff%s%s --help lists every option)\n", cmd ? " " : "",
            cmd ? cmd : "", opt, near ? "; did you mean " : "", near ? near : "", near ? "?" : "", cmd ? " " : "",
            cmd ? cmd : "");
    return CD_E_USAGE;
}

int cd_cli_bad_value(const char *cmd, const char *opt, const char *value, const char *const *values, int n) {
    char list[256];
    size_t o = 0;
    list[0] = 0;
    for (int i = 0; i < n && o < sizeof list; i++)
        o += (size_t)snprintf(list + o, sizeof list - o, "%s%s", i == 0 ? "" : i == n - 1 ? " or " : ", ", values[i]);
    const char *near = cd_suggest(value, values, n);
    fprintf(stderr, "cldiff%s%s: %s expects %s, got '%s'%s%s%s (cldiff%s%s --help lists every option)\n",
            cmd ? " " : "", cmd ? cmd : "", opt, list, value, near ? "; did you mean " : "", near ? near : "",
            near ? "?" : "", cmd ? " " : "", cmd ? cmd : "");
    return CD_E_USAGE;
}

/* --dump fulll: the one-line refusal naming the nearest value */
#define BAD_VALUE(opt, ...)                                                                                            \
    do {                                                                                                               \
        static const char *const vals_[] = {__VA_ARGS__};                                                              \
        return cd_cli_bad_value(cmd, opt, v, vals_, (int)(sizeof vals_ / sizeof vals_[0]));                            \
    } while (0)

/* A finite number (strtod also takes "nan" and "inf": refused). */
static bool parse_double(const char *s, double *out) {
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (errno || end == s || *end || !isfinite(v)) return false;
    *out = v;
    return true;
}

static bool parse_int(const char *s, long lo, long hi, long *out) {
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno || end == s || *end || v < lo || v > hi) return false;
    *out = v;
    return true;
}

static int split_backends(cd_cli_opts *o, const char *cmd, const char *arg) {
    static char buf[256];
    if (strlen(arg) >= sizeof buf) return cd_cli_usage_error(cmd, "--backends: value too long: '%s'", arg);
    strcpy(buf, arg);
    o->n_backends = 0;
    for (char *tok = strtok(buf, ","); tok; tok = strtok(NULL, ",")) {
        const cd_backend_def *d = cd_backend_lookup(tok);
        if (!d) {
            char list[512], msg[800];
            cd_backend_names(list, sizeof list);
            const char *names[32];
            int nn = 0;
            for (int i = 0; i < cd_backend_count() && nn < 28; i++) {
                const cd_backend_def *bd = cd_backend_at(i);
                names[nn++] = bd->name;
                for (int k = 0; k < 3 && bd->aliases[k]; k++) names[nn++] = bd->aliases[k];
            }
            const char *near = cd_suggest(tok, names, nn);
            snprintf(msg, sizeof msg,
                     "--backends: unknown backend '%s'%s%s%s (known: %s; `cldiff doctor` says which "
                     "are usable here)",
                     tok, near ? "; did you mean " : "", near ? near : "", near ? "?" : "", list);
            return cd_cli_usage_error(cmd, "%s", msg);
        }
        if (o->n_backends == 2) return cd_cli_usage_error(cmd, "--backends takes at most two backends: '%s'", arg);
        o->backends[o->n_backends++] = d->name;
    }
    if (o->n_backends == 0) return cd_cli_usage_error(cmd, "--backends needs a value: '%s'", arg);
    return 0;
}

/* --backend-opt NAME:key=value: checked against the backend's declared options; kept with the
 * backend's canonical name (aliases resolved). */
static int add_backend_opt(cd_cli_opts *o, const char *cmd, const char *v) {
    cd_error e = {0};
    if (cd_backend_opt_check(v, &e)) return cd_cli_usage_error(cmd, "%s", e.msg);
    if (o->n_backend_kv >= CD_CLI_MAX_LIST)
        return cd_cli_usage_error(cmd, "too many --backend-opt options (at most %s)", "64");
    const char *colon = strchr(v, ':');
    char name[64];
    snprintf(name, sizeof name, "%.*s", (int)(colon - v), v);
    const char *canon = cd_backend_lookup(name)->name;
    if (!strcmp(canon, name)) {
        o->backend_kv[o->n_backend_kv++] = v;
    } else {
        size_t n = strlen(canon) + strlen(colon) + 1;
        char *c = malloc(n); /* lives as long as the process, like argv */
        if (!c) return cd_cli_usage_error(cmd, "%s", "out of memory");
        snprintf(c, n, "%s%s", canon, colon);
        o->backend_kv[o->n_backend_kv++] = c;
    }
    /* the value itself (a 0|1 flag that is neither): checked now, not ignored at run time */
    cd_backend_opts bo = {.kv = o->backend_kv, .n_kv = o->n_backend_kv};
    if (cd_backend_apply_opts(&bo, &e)) return cd_cli_usage_error(cmd, "%s", e.msg);
    return 0;
}

/* --shape NAME=d0,d1,...: the form and every dim a positive integer, checked here; the
 * model's declared rank and fixed dims are checked when the model is read (inputs.c). */
static int check_shape_value(const char *cmd, const char *v) {
    const char *eq = strchr(v, '=');
    if (!eq || eq == v)
        return cd_cli_usage_error(cmd, "--shape expects NAME=d0,d1,... (e.g. x=1,3,224,224), got '%s'", v);
    const char *p = eq + 1;
    int rank = 0;
    for (;;) {
        char *end;
        errno = 0;
        long long d = isdigit((unsigned char)*p) ? strtoll(p, &end, 10) : -1;
        if (d <= 0 || errno || d > (1LL << 31))
            return cd_cli_usage_error(cmd, "--shape expects dims that are integers in 1..2^31, got '%s'", v);
        if (++rank > CD_MAX_RANK) return cd_cli_usage_error(cmd, "--shape: more than 8 dims in '%s'", v);
        p = end;
        if (!*p) break;
        if (*p != ',' && *p != 'x')
            return cd_cli_usage_error(cmd, "--shape expects dims separated by commas (NAME=1,3,224,224), got '%s'", v);
        p++;
    }
    return 0;
}

/* --mean/--std a[,b,c]: one to three finite numbers; --std none of them 0. */
static int check_float_list(const char *cmd, const char *opt, const char *v) {
    char m[160];
    bool is_std = !strcmp(opt, "--std");
    snprintf(m, sizeof m, "%s expects one or three numbers separated by commas%s, got '%%s'", opt,
             is_std ? ", none of them 0" : "");
    const char *p = v;
    int n = 0;
    for (;;) {
        char *end;
        errno = 0;
        double x = strtod(p, &end);
        if (end == p || errno || !isfinite(x) || (is_std && x == 0) || ++n > 3) return cd_cli_usage_error(cmd, m, v);
        p = end;
        if (!*p) break;
        if (*p != ',') return cd_cli_usage_error(cmd, m, v);
        p++;
    }
    return n == 2 ? cd_cli_usage_error(cmd, m, v) : 0;
}

int cd_cli_parse(int argc, char **argv, int first, cd_cli_opts *o, const char *cmd) {
    memset(o, 0, sizeof *o);
    o->out_dir = "cldiff-out";
    o->layers = "all";
    o->prec = CD_PREC_FP32;
    o->n_backends = 0; /* each command picks its default */
    o->threads = 2;
    o->seed = 1;
    o->dump_mode = "full";
    o->timeout_s = 600;
    o->isolate_child = true;
    o->atol = o->rtol = o->min_cos = o->max_fail_fraction = -1;
    o->isolate_mode = "all";
    o->channel_order = "rgb";
    o->repeat = 1;
    o->calibrate_safety = 4;
    for (int i = first; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
#define NEEDV()                                                                                                        \
    do {                                                                                                               \
        if (!v) return cd_cli_usage_error(cmd, "option %s needs a value", a);                                          \
        i++;                                                                                                           \
    } while (0)
        if (!strcmp(a, "--help") || !strcmp(a, "-h")) {
            cd_cli_usage(stdout, cmd);
            exit(0);
        } else if (!strcmp(a, "--version")) {
            cd_cli_print_version();
            exit(0);
        } else if (!strcmp(a, "--fp32"))
            o->prec = CD_PREC_FP32;
        else if (!strcmp(a, "--fp16"))
            o->prec = CD_PREC_FP16;
        else if (!strcmp(a, "--fp16-compute"))
            o->fp16_compute = true;
        else if (!strcmp(a, "--int8")) {
            NEEDV();
            if (strcmp(v, "arm") && strcmp(v, "dequant")) BAD_VALUE("--int8", "arm", "dequant");
            o->int8_mode = v;
        } else if (!strcmp(a, "--int8-placement")) {
            NEEDV();
            if (strcmp(v, "arm") && strcmp(v, "gpu")) BAD_VALUE("--int8-placement", "arm", "gpu");
            o->int8_placement = v;
        } else if (!strcmp(a, "--quiet") || !strcmp(a, "-q"))
            o->quiet = true;
        else if (!strcmp(a, "--no-cache"))
            o->no_cache = true;
        else if (!strcmp(a, "--no-resize"))
            o->no_resize = true;
        else if (!strcmp(a, "--no-isolate"))
            o->isolate_child = false;
        else if (!strcmp(a, "--no-repro"))
            o->no_repro = true;
        else if (!strcmp(a, "--force"))
            o->force = true;
        else if (!strcmp(a, "--suggest-pins"))
            o->suggest_pins = true;
        else if (!strcmp(a, "--repro")) {
            NEEDV();
            o->repro_dir = v;
        } else if (!strcmp(a, "--inputs")) {
            NEEDV();
            o->inputs_dir = v;
        } else if (!strcmp(a, "--repeat") || !strcmp(a, "--calibrate")) {
            NEEDV();
            long n;
            if (!parse_int(v, 1, 64, &n)) {
                char m[96];
                snprintf(m, sizeof m, "%s expects a count 1..64, got '%%s'", a);
                return cd_cli_usage_error(cmd, m, v);
            }
            if (!strcmp(a, "--repeat"))
                o->repeat = (int)n;
            else
                o->calibrate = (int)n;
        } else if (!strcmp(a, "--calibrate-safety")) {
            NEEDV();
            if (!parse_double(v, &o->calibrate_safety) || !(o->calibrate_safety >= 1))
                return cd_cli_usage_error(cmd, "--calibrate-safety expects a number >= 1, got '%s'", v);
        } else if (!strcmp(a, "--out") || !strcmp(a, "-o")) {
            NEEDV();
            if (!*v) return cd_cli_usage_error(cmd, "--out expects a folder name, got '%s'", v);
            o->out_dir = v;
        } else if (!strcmp(a, "--layers")) {
            NEEDV();
            o->layers = v;
        } else if (!strcmp(a, "--backends")) {
            NEEDV();
            int r = split_backends(o, cmd, v);
            if (r) return r;
        } else if (!strcmp(a, "--backend-opt")) {
            NEEDV();
            int r = add_backend_opt(o, cmd, v);
            if (r) return r;
        } else if (!strcmp(a, "--threads")) {
            NEEDV();
            long n;
            if (!parse_int(v, 1, 256, &n)) return cd_cli_usage_error(cmd, "--threads expects 1..256, got '%s'", v);
            o->threads = (int)n;
        } else if (!strcmp(a, "--seed")) {
            NEEDV();
            char *end;
            errno = 0;
            unsigned long long s = strtoull(v, &end, 10);
            if (errno || end == v || *end || !isdigit((unsigned char)v[0])) /* strtoull takes "-1" */
                return cd_cli_usage_error(cmd, "--seed expects a non-negative integer, got '%s'", v);
            o->seed = s;
        } else if (!strcmp(a, "--input")) {
            NEEDV();
            if (o->n_inputs == CD_CLI_MAX_LIST) return cd_cli_usage_error(cmd, "too many --input options (%s)", v);
            o->inputs[o->n_inputs++] = v;
        } else if (!strcmp(a, "--shape")) {
            NEEDV();
            if (o->n_shapes == CD_CLI_MAX_LIST) return cd_cli_usage_error(cmd, "too many --shape options (%s)", v);
            int r = check_shape_value(cmd, v);
            if (r) return r;
            o->shapes[o->n_shapes++] = v;
        } else if (!strcmp(a, "--mean") || !strcmp(a, "--std")) {
            NEEDV();
            int r = check_float_list(cmd, a, v);
            if (r) return r;
            if (!strcmp(a, "--mean"))
                o->mean = v;
            else
                o->std = v;
        } else if (!strcmp(a, "--channel-order")) {
            NEEDV();
            if (strcmp(v, "rgb") && strcmp(v, "bgr")) BAD_VALUE("--channel-order", "rgb", "bgr");
            o->channel_order = v;
        } else if (!strcmp(a, "--dump")) {
            NEEDV();
            if (strcmp(v, "full") && strcmp(v, "stats")) BAD_VALUE("--dump", "full", "stats");
            o->dump_mode = v;
        } else if (!strcmp(a, "--progress"))
            o->progress = true;
        else if (!strcmp(a, "--max-memory") || !strcmp(a, "--max-dump")) {
            NEEDV();
            char *end;
            errno = 0;
            double x = strtod(v, &end);
            double mul = 1;
            if (*end == 'k' || *end == 'K')
                mul = 1024.0, end++;
            else if (*end == 'm' || *end == 'M')
                mul = 1024.0 * 1024, end++;
            else if (*end == 'g' || *end == 'G')
                mul = 1024.0 * 1024 * 1024, end++;
            else if (*end == 't' || *end == 'T')
                mul = 1024.0 * 1024 * 1024 * 1024, end++;
            if (*end == 'i' || *end == 'B') end++;
            if (*end == 'B') end++;
            if (errno || end == v || *end || !(x > 0) || x * mul > 9e18)
                return cd_cli_usage_error(cmd,
                                          !strcmp(a, "--max-dump")
                                              ? "--max-dump expects a size such as 512M or 20G, got '%s'"
                                              : "--max-memory expects a size such as 512M or 8G, got '%s'",
                                          v);
            if (!strcmp(a, "--max-dump"))
                o->max_dump = (int64_t)(x * mul);
            else
                o->max_memory = (int64_t)(x * mul);
        } else if (!strcmp(a, "--compress")) {
            NEEDV();
            long n;
            if (!parse_int(v, 0, 9, &n))
                return cd_cli_usage_error(cmd, "--compress expects a level 0..9 (0 = none), got '%s'", v);
            o->deflate = n == 0 ? -1 : (int)n;
        } else if (!strcmp(a, "--timeout")) {
            NEEDV();
            if (!parse_double(v, &o->timeout_s) || o->timeout_s <= 0 || o->timeout_s > 1e6)
                return cd_cli_usage_error(cmd, "--timeout expects seconds in (0, 1000000], got '%s'", v);
        } else if (!strcmp(a, "--cl-lib")) {
            NEEDV();
            o->cl_lib = v;
        } else if (!strcmp(a, "--cl-platform")) {
            NEEDV();
            o->cl_platform = v;
        } else if (!strcmp(a, "--cl-device")) {
            NEEDV();
            o->cl_device = v;
        } else if (!strcmp(a, "--kernel-dir")) {
            NEEDV();
            struct stat kst;
            if (stat(v, &kst) != 0 || !S_ISDIR(kst.st_mode))
                return cd_cli_usage_error(
                    cmd, "--kernel-dir expects a folder of kernels/*.cl files, got '%s' (no such folder)", v);
            o->kernel_dir = v;
        } else if (!strcmp(a, "--cache-dir")) {
            NEEDV();
            o->cache_dir = v;
        } else if (!strcmp(a, "--tolerance")) {
            NEEDV();
            o->tolerance_file = v;
        } else if (!strcmp(a, "--baseline")) {
            NEEDV();
            o->baseline = v;
        } else if (!strcmp(a, "--isolate") || !strcmp(a, "--local")) {
            NEEDV();
            if (strcmp(v, "first") && strcmp(v, "all") && strcmp(v, "none")) BAD_VALUE(a, "all", "none", "first");
            o->isolate_mode = v;
        } else if (!strcmp(a, "--atol") || !strcmp(a, "--rtol") || !strcmp(a, "--min-cos") ||
                   !strcmp(a, "--max-fail-fraction")) {
            NEEDV();
            double d;
            /* a cosine and a fraction live in [0, 1]: --min-cos 2 would fail every output */
            bool unit = !strcmp(a, "--min-cos") || !strcmp(a, "--max-fail-fraction");
            if (!parse_double(v, &d) || d < 0 || (unit && d > 1)) {
                char m[128];
                snprintf(m, sizeof m, "%s expects %s, got '%%s'", a,
                         unit ? "a number in [0, 1]" : "a finite number >= 0");
                return cd_cli_usage_error(cmd, m, v);
            }
            if (!strcmp(a, "--atol"))
                o->atol = d;
            else if (!strcmp(a, "--rtol"))
                o->rtol = d;
            else if (!strcmp(a, "--min-cos"))
                o->min_cos = d;
            else
                o->max_fail_fraction = d;
        } else if (a[0] == '-' && a[1]) {
            if (cmd && !strcmp(cmd, "instrument")) {
                const char *c[sizeof SHARED_OPTIONS / sizeof *SHARED_OPTIONS + 4];
                int n = 0;
                for (size_t k = 0; k < sizeof SHARED_OPTIONS / sizeof *SHARED_OPTIONS; k++) c[n++] = SHARED_OPTIONS[k];
                for (int k = 0; k < 4; k++) c[n++] = INSTRUMENT_OPTIONS[k];
                return cd_cli_unknown_option(cmd, a, c, n);
            }
            return cd_cli_unknown_option(cmd, a, SHARED_OPTIONS, (int)(sizeof SHARED_OPTIONS / sizeof *SHARED_OPTIONS));
        } else {
            if (o->n_positional == 4) return cd_cli_usage_error(cmd, "too many arguments ('%s')", a);
            o->positional[o->n_positional++] = a;
        }
#undef NEEDV
    }
    return 0;
}
