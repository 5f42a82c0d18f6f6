/* cldiff's entry: the command named on the command line, its options parsed (parse.c), and the
 * command file that runs it. Nothing below calls back into this file. */
#include "cli/cli.h"
#include "cli/diff_priv.h"
#include "backends/registry.h"
#include "cli/outdir.h"
#include "util/suggest.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static char *join_argv(int argc, char **argv) {
    size_t n = 1;
    for (int i = 0; i < argc; i++) n += strlen(argv[i]) + 3;
    char *s = malloc(n), *p = s;
    if (!s) return NULL;
    for (int i = 0; i < argc; i++) {
        bool q = strpbrk(argv[i], " \t'\"") != NULL;
        p += sprintf(p, i ? (q ? " '%s'" : " %s") : (q ? "'%s'" : "%s"), argv[i]);
    }
    return s;
}

/* A command that writes a run into --out, staged (cli/outdir.h): the run's files replace
 * --out's only when it reached a verdict (exit 0, 1 or 5: a crash is a finding with its
 * reports); otherwise --out stays as it was. */
static int staged(cd_cli_opts *o, int (*cmd)(const cd_cli_opts *)) {
    cd_outdir od;
    cd_error err = {0};
    if (cd_outdir_begin(&od, o->out_dir, &err)) return cd_cli_fail(&err);
    o->out_final = o->out_dir;
    o->out_dir = od.stage;
    int rc = cmd(o);
    o->out_dir = o->out_final;
    if (rc == 0 || rc == CD_E_TOLERANCE || rc == CD_E_CRASH) {
        if (cd_outdir_commit(&od, &err)) return cd_cli_fail(&err);
    } else
        cd_outdir_abandon(&od, rc, o->quiet);
    return rc;
}

/* The differential command: --calibrate and --inputs run it once per seed or input file. */
static int cmd_diff(const cd_cli_opts *o) {
    if (o->calibrate > 0) return cd_diff_calibrate(o);
    if (o->inputs_dir) {
        if (o->n_inputs) {
            cd_error err = {0};
            cd_err(&err, CD_E_USAGE, "--inputs DIR and --input cannot be combined (each file of DIR is the input)");
            return cd_cli_fail(&err);
        }
        return cd_diff_inputs(o);
    }
    diff_ctx ctx = {0};
    return cd_diff_core(o, &ctx);
}

int cd_cli_main(int argc, char **argv) {
    if (argc < 2) {
        cd_cli_usage(stderr, NULL);
        return CD_E_USAGE;
    }
    const char *cmd = argv[1];
    if (!strcmp(cmd, "--version")) {
        cd_cli_print_version();
        return 0;
    }
    if (!strcmp(cmd, "--help") || !strcmp(cmd, "-h") || !strcmp(cmd, "help")) {
        cd_cli_usage(stdout, NULL);
        return 0;
    }
    if (!strcmp(cmd, "inspect")) return cd_cmd_inspect(argc - 1, argv + 1);
    if (!strcmp(cmd, "doctor")) return cd_cmd_doctor(argc - 1, argv + 1);
    if (!strcmp(cmd, "ops")) return cd_cmd_ops(argc - 1, argv + 1);
    if (!strcmp(cmd, "instrument")) return cd_cmd_instrument(argc - 1, argv + 1);
    if (!strcmp(cmd, "import")) return cd_cmd_import(argc - 1, argv + 1);
    if (!strcmp(cmd, "export")) return cd_cmd_export(argc - 1, argv + 1);
    bool sub = !strcmp(cmd, "run") || !strcmp(cmd, "compare") || !strcmp(cmd, "report");
    if (!sub && cmd[0] != '-' && !strpbrk(cmd, "./") && access(cmd, F_OK) != 0) {
        /* "cldiff inspcet m.nb": a mistyped command, not a model file */
        static const char *const cmds[] = {"run",        "inspect", "doctor", "compare", "report",
                                           "instrument", "import",  "export", "help",    "ops"};
        const char *near = cd_suggest(cmd, cmds, (int)(sizeof cmds / sizeof *cmds));
        if (near) {
            fprintf(stderr, "cldiff: unknown command '%s'; did you mean %s? (cldiff --help lists the commands)\n", cmd,
                    near);
            return CD_E_USAGE;
        }
    }
    cd_cli_opts o;
    int rc = cd_cli_parse(argc, argv, sub ? 2 : 1, &o, sub ? cmd : NULL);
    if (rc) return rc;
    char *line = join_argv(argc, argv);
    o.command_line = line ? line : "";
    if (!strcmp(cmd, "run")) {
        if (o.n_positional != 1) {
            free(line);
            return cd_cli_usage_error(cmd, "run expects exactly one model file%s", "");
        }
        o.model = o.positional[0];
        if (!o.n_backends) {
            o.backends[0] = cd_backend_reference()->name; /* the registry's reference role */
            o.n_backends = 1;
        }
        rc = staged(&o, cd_cmd_run);
    } else if (!strcmp(cmd, "compare")) {
        if (o.n_positional != 2) {
            free(line);
            return cd_cli_usage_error(cmd, "compare expects two dump files%s", "");
        }
        rc = cd_cmd_compare(&o);
    } else if (!strcmp(cmd, "report")) {
        if (o.n_positional != 1) {
            free(line);
            return cd_cli_usage_error(cmd, "report expects one dump file%s", "");
        }
        rc = cd_cmd_report(&o);
    } else {
        if (o.n_positional != 1) {
            free(line);
            return cd_cli_usage_error(
                NULL, "expected one model file (or a command: run, inspect, doctor, compare, report)%s", "");
        }
        o.model = o.positional[0];
        if (!o.n_backends) {
            o.backends[0] = cd_backend_reference()->name; /* the registry's reference role */
            o.backends[1] = "opencl";
            o.n_backends = 2;
        }
        if (o.n_backends != 2) {
            free(line);
            return cd_cli_usage_error(NULL, "the comparison needs two backends (--backends A,B), got one: '%s'",
                                      o.backends[0]);
        }
        rc = o.calibrate > 0 ? cmd_diff(&o) : staged(&o, cmd_diff); /* --calibrate writes tolerance.txt only */
    }
    free(line);
    return rc;
}
