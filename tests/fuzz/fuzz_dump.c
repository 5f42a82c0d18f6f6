/* Fuzz harness: the HDF5 dump reader used by `compare`, `report` and `--baseline`
 * (cd_dump_open and everything those commands read: root attributes, runs, tensor lists,
 * values, inputs, the /model/ops table, and a comparison of the first two runs).
 * cd_dump_open takes a path: the input is written to a file on tmpfs (/dev/shm). Large declared tensors are skipped (not read) to keep each execution
 * fast; the reader's own size checks are still exercised by listing them.
 *
 * As in cldiff itself (cd_dump_open_untrusted), the file is first read in a forked child:
 * HDF5 1.10 crashes inside itself on some crafted files, which cldiff turns into a message.
 * Only files that child survives are then read here, in-process, by the same function from
 * the same state, where a crash is a finding in cldiff's own code. (The fuzzer sees the
 * coverage of the in-process pass only.) The child also runs cd_dump_walk, the walk the
 * cldiff commands' checking child does. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "compare/dumpcmp.h"
#include "fuzz_common.h"
#include "store/dump.h"

static void check_err(cd_status st, const cd_error *err) {
    if (st != CD_OK && (err->code != st || !err->msg[0])) {
        fprintf(stderr, "fuzz_dump: status %d without a matching message\n", (int)st);
        abort();
    }
}

/* Everything the commands read from a dump, in-process. */
static void read_all(void *arg) {
    const char *path = arg;
    cd_dump_reader *r = NULL;
    cd_error err = {0};
    cd_status st = cd_dump_open(path, &r, &err);
    check_err(st, &err);
    if (st && getenv("CD_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_dump: %s\n", err.msg);
    if (st == CD_OK) {
        char buf[256];
        double f;
        int64_t i64;
        (void)cd_dump_reader_complete(r);
        (void)cd_dump_attr_str(r, "/", "model_path", buf, sizeof buf, &err);
        (void)cd_dump_attr_f64(r, "/", "seed", &f, &err);
        (void)cd_dump_attr_i64(r, "/", "complete", &i64, &err);
        int64_t nrows = 0;
        cd_column cols[3] = {{"index", CD_COL_I64, NULL}, {"name", CD_COL_STR, NULL}, {"type", CD_COL_STR, NULL}};
        cd_error e = {0};
        st = cd_dump_read_table(r, "/model/ops", cols, 3, &nrows, &e);
        check_err(st, &e);
        if (st == CD_OK) cd_dump_table_free(cols, 3, nrows);
        for (int k = 0; k < cd_dump_n_runs(r); k++) {
            const char *run = cd_dump_run_name(r, k);
            cd_dump_tensor_info *t = NULL;
            int n = 0;
            e = (cd_error){0};
            st = cd_dump_list_tensors(r, run, &t, &n, &e);
            check_err(st, &e);
            if (st) continue;
            for (int j = 0; j < n && j < 64; j++) {
                if (t[j].stats_only || t[j].numel > (1 << 16)) continue;
                float *v = NULL;
                int64_t nv = 0;
                e = (cd_error){0};
                st = cd_dump_read_f32(r, run, t[j].dataset, &v, &nv, &e);
                check_err(st, &e);
                free(v);
            }
            free(t);
        }
        cd_value in = {0};
        e = (cd_error){0};
        if (cd_dump_read_input(r, "a", &in, &e) == CD_OK) cd_value_release(&in);
        e = (cd_error){0};
        if (cd_dump_read_input(r, "x", &in, &e) == CD_OK) cd_value_release(&in);
        if (cd_dump_n_runs(r) >= 2) {
            cd_policy pol;
            cd_policy_init(&pol, CD_PREC_FP32);
            cd_cmp_request q = {.ra = r,
                                .rb = r,
                                .run_a = cd_dump_run_name(r, 0),
                                .run_b = cd_dump_run_name(r, 1),
                                .policy = &pol,
                                .by_op_index = true};
            cd_analysis an;
            cd_cmp_unmatched *um = NULL;
            int nu = 0;
            e = (cd_error){0};
            st = cd_compare_runs(&q, &an, &um, &nu, &e);
            check_err(st, &e);
            if (st == CD_OK) cd_analysis_free(&an);
            free(um);
            cd_policy_free(&pol);
        }
        cd_dump_reader_close(r);
    }
    /* the checking child's walk (cd_dump_open_untrusted) is cldiff code too */
    cd_error we = {0};
    check_err(cd_dump_walk(path, &we), &we);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char path[128];
    if (cd_fuzz_shmfile(data, size, ".h5", path, sizeof path) != 0) return 0;
    /* first in a forked child: a crash there is HDF5's (refused, as cldiff refuses the file);
     * then the very same reads here, from the state the child started in */
    cd_error err = {0};
    cd_status st = cd_dump_run_isolated(path, read_all, path, &err);
    check_err(st, &err);
    if (st) {
        if (getenv("CD_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_dump: %s\n", err.msg);
    } else {
        read_all(path);
    }
    unlink(path);
    return 0;
}
