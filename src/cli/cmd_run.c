/* `cldiff run`: run one or more backends and dump every probed layer. */
#include <stdio.h>
#include <string.h>
#include "cli/session.h"

int cd_cmd_run(const cd_cli_opts *o) {
    cd_install_signal_handlers();
    cd_session s;
    cd_error err = {0};
    cd_status st = cd_session_open(&s, o, &err);
    if (st) {
        cd_session_free(&s);
        return cd_cli_fail(&err);
    }
    if (!o->quiet)
        printf("cldiff %s: %s (%s), %d ops, %d probed, %s\n", CLDIFF_VERSION, o->model, s.model_format, s.g->n_ops,
               s.n_probed, o->prec == CD_PREC_FP16 ? "fp16" : "fp32");
    bool all_ok = true;
    cd_status first_err = CD_OK;
    cd_error ferr = {0};
    for (int i = 0; i < o->n_backends; i++) {
        cd_run_result r;
        cd_error e = {0};
        st = cd_session_run(&s, o->backends[i], o->backends[i], o->prec, &r, &e);
        if (!o->quiet)
            printf("  run %-7s %s: %d tensors captured in %.1f ms%s%s\n", o->backends[i], r.variant, r.n_hits,
                   r.wall_ms, r.device[0] ? " on " : "", r.device);
        if (st) {
            all_ok = false;
            if (!first_err) {
                first_err = st;
                ferr = e;
            }
            if (st == CD_E_INTERRUPTED || st == CD_E_IO || st == CD_E_NOMEM) break;
        }
    }
    cd_error cerr = {0};
    cd_status cst = cd_session_close(&s, all_ok, &cerr);
    /* where the dump will be: --out, not the folder the run writes into (cli/outdir.h) */
    if (!o->quiet && !cst)
        printf("  dump: %s%s%s\n", o->out_final ? o->out_final : s.dump_path, o->out_final ? "/dump.h5" : "",
               all_ok ? "" : " (marked incomplete)");
    cd_session_free(&s);
    if (first_err) return cd_cli_fail(&ferr);
    if (cst) return cd_cli_fail(&cerr);
    return 0;
}
