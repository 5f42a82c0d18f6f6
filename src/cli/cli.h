/* Command-line front end (docs/design.md §1): cli.c dispatches to the command files (cmd_*.c,
 * diff_*.c), which run the lower modules and print; parse.c parses the options they share and
 * holds the helpers they share. Nothing under src/ outside cli/ includes this. */
#ifndef CD_CLI_H
#define CD_CLI_H
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include "engine/backend.h"

#define CD_CLI_MAX_LIST 64

typedef struct cd_cli_opts {
    const char *model;
    const char *out_dir;     /* --out DIR (default cldiff-out); during a run its staging folder */
    const char *out_final;   /* --out as the user named it, for messages and reports (NULL: out_dir) */
    const char *layers;      /* --layers SPEC (default all) */
    cd_precision prec;       /* --fp32 (default) / --fp16 */
    const char *backends[2]; /* --backends A,B */
    int n_backends;
    int threads;                         /* --threads N (default 2) */
    uint64_t seed;                       /* --seed N (default 1) */
    const char *inputs[CD_CLI_MAX_LIST]; /* --input [NAME=]SPEC */
    int n_inputs;
    const char *shapes[CD_CLI_MAX_LIST]; /* --shape NAME=dims */
    int n_shapes;
    const char *mean, *std, *channel_order; /* PNG preprocessing */
    bool no_resize;
    const char *dump_mode; /* --dump full|stats */
    int64_t max_memory;    /* --max-memory SIZE in bytes (0: 80% of physical memory) */
    int64_t max_dump;      /* --max-dump SIZE in bytes (0: 8 GiB) */
    bool progress;         /* --progress: progress lines on stderr even when it is not a terminal */
    int deflate;           /* --compress N: 0 none (default), 1-9 deflate level */
    double timeout_s;      /* --timeout SEC (OpenCL child) */
    bool quiet;
    bool fp16_compute;          /* --fp16-compute: allow half arithmetic on OpenCL */
    const char *int8_mode;      /* --int8 arm|dequant (default arm: docs/int8.md) */
    const char *int8_placement; /* --int8-placement arm|gpu (default arm: docs/int8.md) */
    const char *cl_lib, *cl_platform, *cl_device, *kernel_dir, *cache_dir;
    bool no_cache;
    bool isolate_child;                      /* --no-isolate turns it off (debugging) */
    const char *backend_kv[CD_CLI_MAX_LIST]; /* --backend-opt NAME:key=value (NAME canonical) */
    int n_backend_kv;
    /* comparison */
    const char *tolerance_file;                    /* --tolerance FILE */
    double atol, rtol, min_cos, max_fail_fraction; /* <0: precision default */
    const char *isolate_mode;                      /* --isolate first|all|none */
    const char *baseline;                          /* --baseline OLD.h5 */
    const char *command_line;                      /* joined argv for the dump */
    /* diagnosis (docs/diagnosis.md) */
    int repeat;              /* --repeat N: run B N times (default 1) */
    int calibrate;           /* --calibrate N: measure the noise floor over N runs (0 off) */
    double calibrate_safety; /* --calibrate-safety X (default 4) */
    const char *repro_dir;   /* --repro DIR (default <out>/repro on failure) */
    bool no_repro;           /* --no-repro */
    bool force;              /* --force: compare dumps of different models or inputs */
    const char *inputs_dir;  /* --inputs DIR */
    bool suggest_pins;       /* --suggest-pins */
    const char *positional[4];
    int n_positional;
} cd_cli_opts;

int cd_cli_main(int argc, char **argv);
/* Parses options from argv[first..]; returns 0 or the exit code (2) after printing usage. */
int cd_cli_parse(int argc, char **argv, int first, cd_cli_opts *o, const char *cmd);
void cd_cli_usage(FILE *f, const char *cmd);
/* One line on stderr, no usage text, and CD_E_USAGE: "cldiff[ CMD]: unknown option '--versoin';
 * did you mean --version? (cldiff[ CMD] --help lists every option)"; the suggestion is the
 * nearest of candidates (util/suggest.h), left out when none is close. */
int cd_cli_unknown_option(const char *cmd, const char *opt, const char *const *candidates, int n);
/* The same for a value outside a fixed set: "cldiff: --dump expects full or stats, got 'fulll';
 * did you mean full? (...)". */
int cd_cli_bad_value(const char *cmd, const char *opt, const char *value, const char *const *values, int n);
/* Prints "cldiff: <message>" with the exit code's meaning and returns the exit code. */
int cd_cli_fail(const cd_error *err);
/* "cldiff: <fmt with arg>", the usage text, and CD_E_USAGE. */
int cd_cli_usage_error(const char *cmd, const char *fmt, const char *arg);
void cd_cli_print_version(void);

int cd_cmd_inspect(int argc, char **argv);
int cd_cmd_doctor(int argc, char **argv);
/* `cldiff ops [--backend NAME] [TYPE ...]`: op types per backend (cmd_ops.c). */
int cd_cmd_ops(int argc, char **argv);
int cd_cmd_export(int argc, char **argv);
int cd_cmd_run(const cd_cli_opts *o);
int cd_cmd_compare(const cd_cli_opts *o);
int cd_cmd_report(const cd_cli_opts *o);
/* Paddle-Lite's own runtime (docs/paddle-lite.md): instrument a model, import its outputs. */
int cd_cmd_instrument(int argc, char **argv);
int cd_cmd_import(int argc, char **argv);
#endif
