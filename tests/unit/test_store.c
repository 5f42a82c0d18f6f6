/* HDF5 dump store: write/read round trips, completeness flag, error paths, determinism. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "probes/sink.h"
#include "store/dump.h"
#include "util/fp16.h"

static char tmpdir[256];

static void setup(void) {
    snprintf(tmpdir, sizeof tmpdir, "/tmp/cd_test_store_XXXXXX");
    cr_assert_not_null(mkdtemp(tmpdir));
}

static void teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "chmod -R u+w %s; rm -rf %s", tmpdir, tmpdir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup of %s failed\n", tmpdir);
}

TestSuite(store, .init = setup, .fini = teardown);

static cd_value mk(cd_dtype dt, int rank, const int64_t *dims, void *data) {
    cd_value v = {.dtype = dt};
    v.shape.rank = rank;
    for (int i = 0; i < rank; i++) v.shape.d[i] = dims[i];
    v.data = data;
    v.nbytes = (size_t)cd_shape_numel(&v.shape) * cd_dtype_size(dt);
    return v;
}

/* deflate 0: the default (uncompressed, contiguous); 1..9: chunked + compressed */
static cd_dump *create_z(const char *name, char *path, int deflate) {
    sprintf(path, "%s/%s", tmpdir, name);
    cd_dump_meta m = {"cldiff run m.nb", "m.nb", "ab12", "paddle-lite nb meta 2, opt v2.10", "fp16", 42, deflate};
    cd_dump *d = NULL;
    cd_error e = {0};
    cr_assert_eq(cd_dump_create(path, &m, &d, &e), CD_OK, "%s", e.msg);
    return d;
}
static cd_dump *create(const char *name, char *path) { return create_z(name, path, 1); }

static cd_tensor_rec rec_for(int op, const char *name) {
    return (cd_tensor_rec){.op_index = op,
                           .op_type = "conv2d",
                           .layer = "conv2d_0",
                           .tensor = name,
                           .elapsed_us = 12.5,
                           .kernel_us = -1,
                           .where = "cpu",
                           .kernel = "k",
                           .note = ""};
}

Test(store, escape_round_trip) {
    char e[64], u[64];
    cr_assert(cd_dump_escape("a/b c%d.tmp_0", e, sizeof e));
    cr_assert_str_eq(e, "a%2Fb%20c%25d.tmp_0");
    cd_dump_unescape(e, u, sizeof u);
    cr_assert_str_eq(u, "a/b c%d.tmp_0");
    cr_assert_not(cd_dump_escape("////", e, 8)); /* needs 13 bytes */
}

Test(store, round_trip_f32_f16_i64) {
    char path[512];
    cd_dump *d = create("rt.h5", path);
    cd_error e = {0};
    cd_run_info ri = {"cpu", "fp16", "host cpu", "", "", "", 4};
    cr_assert_eq(cd_dump_begin_run(d, "cpu", &ri, &e), CD_OK, "%s", e.msg);

    float f[24];
    for (int i = 0; i < 24; i++) f[i] = (float)i * 0.37f - 3.0f;
    f[5] = NAN;
    f[6] = -INFINITY;
    f[7] = 1e-42f; /* subnormal */
    int64_t d32[] = {2, 3, 4};
    cd_value vf = mk(CD_F32, 3, d32, f);
    uint16_t h[6] = {0x3c00, 0x0001 /* smallest subnormal */, 0x7c00, 0xfe00 /* nan */, 0x8000, 0x7bff};
    int64_t d16[] = {6};
    cd_value vh = mk(CD_F16, 1, d16, h);
    int64_t iv[3] = {-5, (int64_t)1 << 40, 7};
    int64_t di[] = {3};
    cd_value vi = mk(CD_I64, 1, di, iv);
    /* a larger tensor goes through the chunked + deflate path */
    int64_t dbig[] = {1, 8, 40, 40};
    float *big = malloc(sizeof(float) * 12800);
    for (int i = 0; i < 12800; i++) big[i] = sinf((float)i * 0.01f);
    cd_value vb = mk(CD_F32, 4, dbig, big);

    cd_tensor_rec r1 = rec_for(3, "conv2d_0.tmp_0/odd name");
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r1, &vf, false, &e), CD_OK, "%s", e.msg);
    cd_tensor_rec r0 = rec_for(1, "x%half");
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r0, &vh, false, &e), CD_OK, "%s", e.msg);
    cd_tensor_rec r2 = rec_for(12, "ids");
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r2, &vi, false, &e), CD_OK, "%s", e.msg);
    cd_tensor_rec r3 = rec_for(12, "ids"); /* same name again: gets a suffix */
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r3, &vi, false, &e), CD_OK, "%s", e.msg);
    cd_tensor_rec r4 = rec_for(10000, "big");
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r4, &vb, false, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_write_input(d, "image/x", &vf, "random uniform[-1,1) seed=42", &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_end_run(d, "cpu", 12.5, true, &e), CD_OK, "%s", e.msg);
    /* nothing under the final name before close */
    cr_assert_neq(access(path, F_OK), 0);
    cr_assert_eq(access(cd_dump_tmp_path(d), F_OK), 0);
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(access(path, F_OK), 0);

    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert(cd_dump_reader_complete(r));
    cr_assert_eq(cd_dump_reader_format_version(r), 2);
    cr_assert_eq(cd_dump_n_runs(r), 1);
    cr_assert_str_eq(cd_dump_run_name(r, 0), "cpu");
    char s[256];
    cr_assert_eq(cd_dump_attr_str(r, "/", "model_format", s, sizeof s, &e), CD_OK, "%s", e.msg);
    cr_assert_str_eq(s, "paddle-lite nb meta 2, opt v2.10");
    int64_t seed = 0;
    cr_assert_eq(cd_dump_attr_i64(r, "/", "seed", &seed, &e), CD_OK);
    cr_assert_eq(seed, 42);
    double wall = 0;
    cr_assert_eq(cd_dump_attr_f64(r, "/runs/cpu", "wall_ms", &wall, &e), CD_OK);
    cr_assert_eq(wall, 12.5);
    cr_assert_eq(cd_dump_attr_str(r, "/runs/cpu", "device", s, sizeof s, &e), CD_OK);
    cr_assert_str_eq(s, "host cpu");

    cd_dump_tensor_info *ti = NULL;
    int n = 0;
    cr_assert_eq(cd_dump_list_tensors(r, "cpu", &ti, &n, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(n, 5);
    cr_assert_eq(ti[0].op_index, 1);
    cr_assert_str_eq(ti[0].dataset, "0001_x%25half");
    cr_assert_str_eq(ti[0].tensor, "x%half");
    cr_assert_eq(ti[0].dtype, CD_F16);
    cr_assert_eq(ti[1].op_index, 3);
    cr_assert_str_eq(ti[1].dataset, "0003_conv2d_0.tmp_0%2Fodd%20name");
    cr_assert_str_eq(ti[1].tensor, "conv2d_0.tmp_0/odd name");
    cr_assert_eq(ti[1].shape.rank, 3);
    cr_assert_eq(ti[1].shape.d[2], 4);
    cr_assert_eq(ti[1].elapsed_us, 12.5);
    cr_assert_str_eq(ti[1].where, "cpu");
    cr_assert_str_eq(ti[2].dataset, "0012_ids");
    cr_assert_str_eq(ti[3].dataset, "0012_ids~2");
    cr_assert_eq(ti[3].dtype, CD_I64);
    cr_assert_eq(ti[4].op_index, 10000);
    cr_assert_str_eq(ti[4].dataset, "10000_big");

    float *out = NULL;
    int64_t numel = 0;
    cr_assert_eq(cd_dump_read_f32(r, "cpu", ti[1].dataset, &out, &numel, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(numel, 24);
    cr_assert_eq(memcmp(out, f, sizeof f), 0, "float32 values must come back bit-exact");
    free(out);
    cr_assert_eq(cd_dump_read_f32(r, "cpu", ti[0].dataset, &out, &numel, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(numel, 6);
    for (int i = 0; i < 6; i++) {
        float want = cd_half_to_float(h[i]);
        cr_assert_eq(memcmp(&out[i], &want, 4), 0, "half %d: got %a want %a", i, out[i], want);
    }
    free(out);
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0012_ids", &out, &numel, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(out[0], -5.0f);
    cr_assert_eq(out[1], 1099511627776.0f);
    cr_assert_eq(out[2], 7.0f);
    free(out);
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "10000_big", &out, &numel, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(numel, 12800);
    cr_assert_eq(memcmp(out, big, 12800 * 4), 0);
    free(out);
    free(ti);

    cd_value in = {0};
    cr_assert_eq(cd_dump_read_input(r, "image/x", &in, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(in.shape.rank, 3);
    cr_assert_eq(memcmp(in.data, f, sizeof f), 0);
    free(in.data);
    cr_assert_eq(cd_dump_list_tensors(r, "gpu", &ti, &n, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "runs: cpu"), "%s", e.msg);
    cd_dump_reader_close(r);

    /* the raw HDF5 types as other tools see them */
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(file, "/runs/cpu/0001_x%25half", H5P_DEFAULT);
    hid_t t = H5Dget_type(ds);
    cr_assert_eq(H5Tget_class(t), H5T_FLOAT);
    cr_assert_eq(H5Tget_size(t), 2);
    uint16_t back[6];
    cr_assert_geq(H5Dread(ds, t, H5S_ALL, H5S_ALL, H5P_DEFAULT, back), 0);
    cr_assert_eq(memcmp(back, h, sizeof h), 0, "half bits must be stored unchanged");
    H5Tclose(t);
    H5Dclose(ds);
    ds = H5Dopen2(file, "/runs/cpu/0012_ids", H5P_DEFAULT);
    t = H5Dget_type(ds);
    cr_assert(H5Tequal(t, H5T_STD_I64LE) > 0);
    H5Tclose(t);
    H5Dclose(ds);
    ds = H5Dopen2(file, "/runs/cpu/10000_big", H5P_DEFAULT);
    hid_t pl = H5Dget_create_plist(ds);
    cr_assert_eq(H5Pget_layout(pl), H5D_CHUNKED);
    cr_assert_lt(H5Dget_storage_size(ds), 12800 * 4, "big tensor should be compressed");
    H5Pclose(pl);
    H5Dclose(ds);
    H5Fclose(file);
    free(big);
}

Test(store, incomplete_close_is_marked_and_renamed) {
    char path[512];
    cd_dump *d = create("inc.h5", path);
    cd_error e = {0};
    cr_assert_eq(cd_dump_begin_run(d, "opencl", NULL, &e), CD_OK, "%s", e.msg);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s", cd_dump_tmp_path(d));
    cr_assert_eq(cd_dump_close(d, false, &e), CD_OK, "%s", e.msg);
    cr_assert_neq(access(tmp, F_OK), 0, "temporary file must be gone");
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert_not(cd_dump_reader_complete(r));
    int64_t c = 7;
    cr_assert_eq(cd_dump_attr_i64(r, "/runs/opencl", "complete", &c, &e), CD_OK);
    cr_assert_eq(c, 0);
    cd_dump_reader_close(r);
}

Test(store, discard_leaves_nothing) {
    char path[512];
    cd_dump *d = create("disc.h5", path);
    char tmp[600];
    snprintf(tmp, sizeof tmp, "%s", cd_dump_tmp_path(d));
    cd_dump_discard(d);
    cr_assert_neq(access(tmp, F_OK), 0);
    cr_assert_neq(access(path, F_OK), 0);
}

Test(store, unwritable_location_is_io_error) {
    char path[512];
    if (geteuid() != 0) {
        char dir[400];
        snprintf(dir, sizeof dir, "%s/ro", tmpdir);
        cr_assert_eq(mkdir(dir, 0555), 0);
        snprintf(path, sizeof path, "%s/x.h5", dir);
    } else {
        /* root ignores mode bits; sysfs refuses new files even for root */
        snprintf(path, sizeof path, "/sys/cldiff_test_dump.h5");
    }
    cd_dump *d = NULL;
    cd_error e = {0};
    cr_assert_eq(cd_dump_create(path, NULL, &d, &e), CD_E_IO);
    cr_assert_null(d);
    cr_assert(strstr(e.msg, "cannot create dump"), "%s", e.msg);
    cr_assert(strstr(e.msg, "Permission denied") || strstr(e.msg, "Read-only"), "%s", e.msg);
    snprintf(path, sizeof path, "%s/no/such/dir/x.h5", tmpdir);
    cr_assert_eq(cd_dump_create(path, NULL, &d, &e), CD_E_IO);
    cr_assert(strstr(e.msg, "No such file"), "%s", e.msg);
}

Test(store, bad_files_are_model_errors) {
    char path[512];
    cd_dump_reader *r = NULL;
    cd_error e = {0};
    snprintf(path, sizeof path, "%s/missing.h5", tmpdir);
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_E_USAGE);
    snprintf(path, sizeof path, "%s/text.h5", tmpdir);
    FILE *f = fopen(path, "w");
    fputs("not hdf5 at all\n", f);
    fclose(f);
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "not an HDF5 file"), "%s", e.msg);
    /* an HDF5 file that is not a dump */
    snprintf(path, sizeof path, "%s/other.h5", tmpdir);
    hid_t h = H5Fcreate(path, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    H5Fclose(h);
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "not a cldiff dump"), "%s", e.msg);
    /* a truncated dump */
    char good[512];
    cd_dump *d = create("trunc.h5", good);
    cd_dump_begin_run(d, "cpu", NULL, &e);
    float x[4096];
    for (int i = 0; i < 4096; i++) x[i] = (float)i;
    int64_t dims[] = {4096};
    cd_value v = mk(CD_F32, 1, dims, x);
    cd_tensor_rec rc = rec_for(1, "t");
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &rc, &v, false, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    struct stat st;
    stat(good, &st);
    cr_assert_eq(truncate(good, st.st_size / 2), 0);
    cd_status s = cd_dump_open(good, &r, &e);
    if (s == CD_OK) { /* superblock survived: reading the data must fail cleanly */
        float *out = NULL;
        int64_t n;
        s = cd_dump_read_f32(r, "cpu", "0001_t", &out, &n, &e);
        cd_dump_reader_close(r);
    }
    cr_assert_eq(s, CD_E_MODEL, "%s", e.msg);
}

Test(store, table_round_trip_and_append) {
    char path[512];
    cd_dump *d = create("tab.h5", path);
    cd_error e = {0};
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_open_append(path, &d, &e), CD_OK, "%s", e.msg);
    int64_t idx[3] = {0, 5, 9};
    double err[3] = {0.0, 1.5e-3, INFINITY};
    const char *names[3] = {"conv2d_0", NULL, "a much longer layer name"};
    cd_column cols[3] = {{"op_index", CD_COL_I64, idx}, {"max_abs", CD_COL_F64, err}, {"layer", CD_COL_STR, names}};
    cr_assert_eq(cd_dump_write_table(d, "/compare/cpu__opencl/table", cols, 3, 3, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_set_attr_str(d, "/compare/cpu__opencl", "verdict", "fail", &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_set_attr_i64(d, "/compare/cpu__opencl", "first_divergence", 5, &e), CD_OK);
    cr_assert_eq(cd_dump_set_attr_f64(d, "/compare/cpu__opencl", "rtol", 1e-3, &e), CD_OK);
    cr_assert_eq(cd_dump_set_attr_i64(d, "/compare/cpu__opencl", "first_divergence", 6, &e), CD_OK); /* replace */
    cr_assert_eq(cd_dump_set_attr_str(d, "/nope", "x", "y", &e), CD_E_INTERNAL);
    cr_assert_eq(cd_dump_close(d, false, &e), CD_OK, "%s", e.msg);

    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert(cd_dump_reader_complete(r), "append mode must not touch `complete`");
    int64_t fd = 0;
    cr_assert_eq(cd_dump_attr_i64(r, "/compare/cpu__opencl", "first_divergence", &fd, &e), CD_OK);
    cr_assert_eq(fd, 6);
    cd_column rc[3] = {{"layer", CD_COL_STR, NULL}, {"max_abs", CD_COL_F64, NULL}, {"op_index", CD_COL_I64, NULL}};
    int64_t nr = 0;
    cr_assert_eq(cd_dump_read_table(r, "/compare/cpu__opencl/table", rc, 3, &nr, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(nr, 3);
    const char *const *ln = rc[0].data;
    cr_assert_str_eq(ln[0], "conv2d_0");
    cr_assert_str_eq(ln[1], "");
    cr_assert_str_eq(ln[2], "a much longer layer name");
    cr_assert_eq(((const double *)rc[1].data)[1], 1.5e-3);
    cr_assert(isinf(((const double *)rc[1].data)[2]));
    cr_assert_eq(((const int64_t *)rc[2].data)[2], 9);
    cd_dump_table_free(rc, 3, nr);
    cd_column bad = {"nope", CD_COL_I64, NULL};
    cr_assert_eq(cd_dump_read_table(r, "/compare/cpu__opencl/table", &bad, 1, &nr, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "no column 'nope'"), "%s", e.msg);
    cd_dump_reader_close(r);
}

/* Two identical runs must store identical dataset bytes (compressed chunks included). */
Test(store, identical_runs_identical_bytes) {
    char p1[512], p2[512];
    int64_t dims[] = {4, 64, 64};
    float *x = malloc(sizeof(float) * 16384);
    for (int i = 0; i < 16384; i++) x[i] = cosf((float)i);
    cd_value v = mk(CD_F32, 3, dims, x);
    cd_error e = {0};
    for (int k = 0; k < 2; k++) {
        cd_dump *d = create(k ? "b.h5" : "a.h5", k ? p2 : p1);
        cd_dump_begin_run(d, "cpu", NULL, &e);
        cd_tensor_rec rc = rec_for(2, "y");
        rc.elapsed_us = k ? 99.0 : 1.0; /* timings differ, data must not */
        cr_assert_eq(cd_dump_write_tensor(d, "cpu", &rc, &v, false, &e), CD_OK, "%s", e.msg);
        cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    }
    unsigned char *raw[2];
    hsize_t sz[2];
    for (int k = 0; k < 2; k++) {
        hid_t f = H5Fopen(k ? p2 : p1, H5F_ACC_RDONLY, H5P_DEFAULT);
        hid_t ds = H5Dopen2(f, "/runs/cpu/0002_y", H5P_DEFAULT);
        hsize_t off[3] = {0, 0, 0};
        cr_assert_geq(H5Dget_chunk_storage_size(ds, off, &sz[k]), 0);
        raw[k] = malloc(sz[k]);
        uint32_t filt = 0;
        cr_assert_geq(H5Dread_chunk(ds, H5P_DEFAULT, off, &filt, raw[k]), 0);
        H5Dclose(ds);
        H5Fclose(f);
    }
    cr_assert_eq(sz[0], sz[1]);
    cr_assert_eq(memcmp(raw[0], raw[1], sz[0]), 0);
    free(raw[0]);
    free(raw[1]);
    free(x);
}

/* The sink: statistics attributes, stats-only mode, probes leave data untouched. */
Test(store, sink_full_and_stats) {
    char path[512];
    cd_dump *d = create("sink.h5", path);
    cd_error e = {0};
    cd_graph g = {0};
    cd_tensor tens[2] = {{.name = "t/0"}, {.name = "t1"}};
    cd_op ops[2] = {{.type = "relu", .name = "relu_0"}, {.type = "sigmoid", .name = "sigmoid_0"}};
    g.tensors = tens;
    g.n_tensors = 2;
    g.ops = ops;
    g.n_ops = 2;
    float a[5] = {1, -2, NAN, INFINITY, 4};
    float copy[5];
    memcpy(copy, a, sizeof a);
    int64_t dims[] = {5};
    cd_value v = mk(CD_F32, 1, dims, a);
    cd_op_report rep = {.elapsed_us = 3, .kernel_us = 2, .where = "opencl", .kernel = "relu:fp32", .note = ""};
    const char *runs[2] = {"full", "stats"};
    for (int m = 0; m < 2; m++) {
        cr_assert_eq(cd_dump_begin_run(d, runs[m], NULL, &e), CD_OK, "%s", e.msg);
        cd_dump_sink *s = NULL;
        cr_assert_eq(cd_dump_sink_new(d, runs[m], &g, m ? CD_SINK_STATS : CD_SINK_FULL, &s, &e), CD_OK);
        cd_probe_sink *p = cd_dump_sink_probe(s);
        cr_assert_eq(p->hit(p->user, 0, 0, &v, &rep, &e), CD_OK, "%s", e.msg);
        cr_assert_eq(p->hit(p->user, 1, 1, &v, NULL, &e), CD_OK, "%s", e.msg);
        cr_assert_eq(p->hit(p->user, 5, 1, &v, NULL, &e), CD_E_INTERNAL);
        cr_assert_eq(cd_dump_sink_finish(s, &e), CD_OK, "%s", e.msg);
        cr_assert_eq(cd_dump_sink_count(s), 2);
        cr_assert_eq(cd_dump_sink_first_nonfinite(s), 0);
        cd_dump_sink_free(s);
    }
    cr_assert_eq(memcmp(a, copy, sizeof a), 0, "probes must not alter data");
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);

    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_n_runs(r), 2);
    for (int m = 0; m < 2; m++) {
        cd_dump_tensor_info *ti;
        int n;
        cr_assert_eq(cd_dump_list_tensors(r, runs[m], &ti, &n, &e), CD_OK, "%s", e.msg);
        cr_assert_eq(n, 2);
        cr_assert_str_eq(ti[0].dataset, "0000_t%2F0");
        cr_assert_str_eq(ti[0].kernel, "relu:fp32");
        cr_assert_str_eq(ti[0].where, "opencl");
        cr_assert_eq(ti[0].kernel_us, 2.0);
        cr_assert(ti[0].has_stats);
        cr_assert_eq(ti[0].stats.min, -2.0);
        cr_assert_eq(ti[0].stats.max, 4.0);
        cr_assert_eq(ti[0].stats.mean, 1.0);
        cr_assert_eq(ti[0].stats.nan_count, 1);
        cr_assert_eq(ti[0].stats.inf_count, 1);
        cr_assert_eq(ti[0].stats_only, m == 1);
        cr_assert_eq(ti[1].shape.d[0], 5);
        float *out = NULL;
        int64_t cnt;
        cd_status st = cd_dump_read_f32(r, runs[m], ti[1].dataset, &out, &cnt, &e);
        if (m == 0) {
            cr_assert_eq(st, CD_OK, "%s", e.msg);
            cr_assert_eq(memcmp(out, a, sizeof a), 0);
            free(out);
        } else {
            cr_assert_eq(st, CD_E_USAGE);
            cr_assert(strstr(e.msg, "statistics only"), "%s", e.msg);
        }
        char path2[64];
        snprintf(path2, sizeof path2, "/runs/%s", runs[m]);
        int64_t fn = 0;
        cr_assert_eq(cd_dump_attr_i64(r, path2, "first_nonfinite_op", &fn, &e), CD_OK);
        cr_assert_eq(fn, 0);
        free(ti);
    }
    cd_dump_reader_close(r);
}

Test(store, stats_compute_half_and_empty) {
    uint16_t h[4] = {0x3c00, 0xc000, 0x7e00, 0x3800}; /* 1, -2, nan, 0.5 */
    int64_t dims[] = {4};
    cd_value v = mk(CD_F16, 1, dims, h);
    cd_tensor_stats s;
    cd_tensor_stats_compute(&v, &s);
    cr_assert_eq(s.count, 4);
    cr_assert_eq(s.nan_count, 1);
    cr_assert_eq(s.min, -2.0);
    cr_assert_eq(s.max, 1.0);
    cr_assert_eq(s.mean, -0.5 / 3.0);
    int64_t z[] = {0};
    cd_value ve = mk(CD_F32, 1, z, NULL);
    cd_tensor_stats_compute(&ve, &s);
    cr_assert_eq(s.count, 0);
    cr_assert(isnan(s.min));
}

/* The sink over many tensors of different sizes, the caller's buffer reused after every hit
 * as the executor does: large ones (>= 256 KiB) take the path where the statistics run on a
 * second OpenMP thread while the data is written; everything is stored in order with the
 * right bytes and statistics, in the default layout (contiguous, uncompressed). */
Test(store, sink_many_tensors) {
    char path[512];
    cd_dump *d = create_z("many.h5", path, 0);
    cd_error e = {0};
    enum { N = 40 };
    cd_tensor tens[N];
    cd_op ops[N];
    char names[N][16];
    for (int i = 0; i < N; i++) {
        snprintf(names[i], sizeof names[i], "t%d", i);
        tens[i] = (cd_tensor){.name = names[i]};
        ops[i] = (cd_op){.type = "relu", .name = names[i]};
    }
    cd_graph g = {.tensors = tens, .n_tensors = N, .ops = ops, .n_ops = N};
    cr_assert_eq(cd_dump_begin_run(d, "cpu", NULL, &e), CD_OK, "%s", e.msg);
    cd_dump_sink *s = NULL;
    cr_assert_eq(cd_dump_sink_new(d, "cpu", &g, CD_SINK_FULL, &s, &e), CD_OK);
    cd_probe_sink *p = cd_dump_sink_probe(s);
    float *buf = malloc(200000 * sizeof(float));
    cr_assert_not_null(buf);
    for (int i = 0; i < N; i++) {
        /* sizes 37 K .. 145 K floats; op 17 holds 200 K floats */
        int64_t n = i == 17 ? 200000 : 37000 + (i * 7919) % 108000;
        for (int64_t k = 0; k < n; k++) buf[k] = (float)(i * 1000003 + k);
        cd_value v = mk(CD_F32, 1, &n, buf);
        cr_assert_eq(p->hit(p->user, i, i, &v, NULL, &e), CD_OK, "%s", e.msg);
        memset(buf, 0xff, (size_t)n * sizeof(float)); /* the executor reuses its buffer */
    }
    cr_assert_eq(cd_dump_sink_finish(s, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_sink_count(s), N);
    cr_assert_eq(cd_dump_sink_first_nonfinite(s), -1);
    cd_dump_sink_free(s);
    free(buf);
    cr_assert_eq(cd_dump_end_run(d, "cpu", 1.0, true, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);

    /* the default layout: contiguous, not compressed */
    hid_t file = H5Fopen(path, H5F_ACC_RDONLY, H5P_DEFAULT);
    hid_t ds = H5Dopen2(file, "/runs/cpu/0003_t3", H5P_DEFAULT);
    hid_t pl = H5Dget_create_plist(ds);
    cr_assert_eq(H5Pget_layout(pl), H5D_CONTIGUOUS);
    cr_assert_eq(H5Pget_nfilters(pl), 0);
    H5Pclose(pl);
    H5Dclose(ds);
    H5Fclose(file);

    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cd_dump_tensor_info *ti;
    int n;
    cr_assert_eq(cd_dump_list_tensors(r, "cpu", &ti, &n, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(n, N);
    for (int i = 0; i < N; i++) {
        float *out = NULL;
        int64_t cnt;
        cr_assert_eq(cd_dump_read_f32(r, "cpu", ti[i].dataset, &out, &cnt, &e), CD_OK, "%s", e.msg);
        int64_t want = i == 17 ? 200000 : 37000 + (i * 7919) % 108000;
        cr_assert_eq(cnt, want, "tensor %d", i);
        cr_assert_eq(ti[i].op_index, i);
        for (int64_t k = 0; k < cnt; k++)
            if (out[k] != (float)(i * 1000003 + k))
                cr_assert_fail("tensor %d element %lld: %g", i, (long long)k, (double)out[k]);
        cr_assert_eq(ti[i].stats.max, (double)(float)(i * 1000003 + cnt - 1));
        free(out);
    }
    free(ti);
    cd_dump_reader_close(r);
}

/* The vectorised statistics (64-float blocks, AVX2 where present) against a plain reference
 * with the documented summation order (8 lanes, lane j = elements j mod 8): bit-identical,
 * with NaN/Inf inside blocks, in the tail, and none at all. */
Test(store, stats_blocks_match_reference) {
    enum { N = 64 * 37 + 13 };
    float *x = malloc(sizeof(float) * N);
    cr_assert_not_null(x);
    for (int variant = 0; variant < 3; variant++) {
        uint32_t r = 12345u + (uint32_t)variant;
        for (int i = 0; i < N; i++) {
            r = r * 1664525u + 1013904223u;
            x[i] = ((float)(r >> 8) / 16777216.0f - 0.4f) * 1000.0f;
        }
        if (variant >= 1) {
            x[70] = NAN;
            x[640] = INFINITY;
            x[641] = -INFINITY;
            x[N - 3] = NAN;
        }
        if (variant == 2)
            for (int i = 128; i < 192; i++) x[i] = NAN; /* a whole block */
        double lane[8] = {0}, mn = INFINITY, mx = -INFINITY;
        int64_t fin = 0, nan = 0, inf = 0;
        for (int i = 0; i < N; i++) {
            if (isnan(x[i])) {
                nan++;
                continue;
            }
            if (isinf(x[i])) {
                inf++;
                continue;
            }
            lane[i % 8] += x[i];
            if (x[i] < mn) mn = x[i];
            if (x[i] > mx) mx = x[i];
            fin++;
        }
        double sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        int64_t dims[] = {N};
        cd_value v = mk(CD_F32, 1, dims, x);
        cd_tensor_stats s;
        cd_tensor_stats_compute(&v, &s);
        cr_assert_eq(s.count, N);
        cr_assert_eq(s.nan_count, nan, "variant %d", variant);
        cr_assert_eq(s.inf_count, inf, "variant %d", variant);
        cr_assert_eq(s.min, mn, "variant %d", variant);
        cr_assert_eq(s.max, mx, "variant %d", variant);
        cr_assert_eq(s.mean, sum / (double)fin, "variant %d: %.17g vs %.17g", variant, s.mean, sum / (double)fin);
    }
    free(x);
}

/* A dataset whose declared extent the file does not hold (a damaged or hostile dump: here
 * a 2^30-element dataset that was never written) is refused before anything is allocated
 * for it, with a message that names the dataset. */
Test(store, read_refuses_extent_the_file_does_not_hold) {
    char path[512];
    cd_dump *d = create_z("extent.h5", path, 0);
    cd_error e = {0};
    int64_t dims[] = {4};
    float x[4] = {1, 2, 3, 4};
    cd_value v = mk(CD_F32, 1, dims, x);
    cd_tensor_rec r1 = rec_for(0, "ok");
    cr_assert_eq(cd_dump_begin_run(d, "cpu", NULL, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r1, &v, false, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_end_run(d, "cpu", 1.0, true, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    hid_t f = H5Fopen(path, H5F_ACC_RDWR, H5P_DEFAULT);
    hsize_t big = (hsize_t)1 << 30;
    hid_t sp = H5Screate_simple(1, &big, NULL);
    hid_t ds = H5Dcreate2(f, "/runs/cpu/0001_huge", H5T_IEEE_F32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert_geq(ds, 0);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f);
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    float *out = NULL;
    int64_t n = 0;
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0001_huge", &out, &n, &e), CD_E_MODEL);
    cr_assert_null(out);
    cr_assert(strstr(e.msg, "0001_huge") && strstr(e.msg, "declares 1073741824 elements"), "%s", e.msg);
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0000_ok", &out, &n, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(n, 4);
    free(out);
    cd_dump_reader_close(r);
}

/* A dump written by cldiff before format 2 (per-dataset attributes; tests/data/README.md):
 * still listed, read and compared, and it passes the isolated check. */
Test(store, reads_format1_dump) {
    const char *path = CD_SOURCE_DIR "/tests/data/dump_format1.h5";
    cd_error e = {0};
    cr_assert_eq(cd_dump_check_isolated(path, &e), CD_OK, "%s", e.msg);
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_reader_format_version(r), 1);
    cr_assert_eq(cd_dump_n_runs(r), 2);
    cd_dump_tensor_info *ti = NULL;
    int n = 0;
    cr_assert_eq(cd_dump_list_tensors(r, "cpu", &ti, &n, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(n, 14);
    cr_assert_str_eq(ti[0].dataset, "0001_conv1.tmp");
    cr_assert_eq(ti[0].op_index, 1);
    cr_assert_str_eq(ti[0].op_type, "conv2d");
    cr_assert_str_eq(ti[0].layer, "conv2d_0");
    cr_assert_str_eq(ti[0].tensor, "conv1.tmp");
    cr_assert_eq(ti[0].shape.rank, 4);
    cr_assert_eq(ti[0].shape.d[1], 16);
    cr_assert(ti[0].has_stats);
    cr_assert_eq(ti[0].stats.count, 16384);
    cr_assert_eq(ti[0].stats.max, 1.4116376638412476);
    float *v = NULL;
    int64_t nv = 0;
    cr_assert_eq(cd_dump_read_f32(r, "cpu", ti[0].dataset, &v, &nv, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(nv, 16384);
    float mx = -INFINITY;
    for (int64_t i = 0; i < nv; i++) mx = v[i] > mx ? v[i] : mx;
    cr_assert_eq((double)mx, ti[0].stats.max);
    free(v);
    free(ti);
    cd_dump_reader_close(r);
}

/* Format 2 keeps a run's tensor metadata in /tensors/<run>; a damaged row is refused with a
 * message naming the row, and an interrupted (not ended) run still gets its table at close. */
Test(store, tensors_table_written_at_close_and_checked) {
    char path[512];
    cd_dump *d = create("tab.h5", path);
    cd_error e = {0};
    cd_run_info ri = {"cpu", "fp32", "host cpu", "", "", "", 1};
    cr_assert_eq(cd_dump_begin_run(d, "cpu", &ri, &e), CD_OK, "%s", e.msg);
    float f[6] = {1, 2, 3, 4, 5, 6};
    int64_t dims[] = {2, 3};
    cd_value vf = mk(CD_F32, 2, dims, f);
    cd_tensor_stats st;
    cd_tensor_rec r1 = rec_for(4, "t");
    r1.stats = &st;
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &r1, &vf, false, &e), CD_OK, "%s", e.msg);
    /* no cd_dump_end_run: as after an interrupt */
    cr_assert_eq(cd_dump_close(d, false, &e), CD_OK, "%s", e.msg);
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert_not(cd_dump_reader_complete(r));
    cr_assert(cd_dump_has(r, "/tensors/cpu"));
    cr_assert_not(cd_dump_has(r, "/runs/cpu/tensors"));
    cd_dump_tensor_info *ti = NULL;
    int n = 0;
    cr_assert_eq(cd_dump_list_tensors(r, "cpu", &ti, &n, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(ti[0].dataset, "0004_t");
    cr_assert_eq(ti[0].shape.rank, 2);
    cr_assert_eq(ti[0].shape.d[0], 2);
    cr_assert_eq(ti[0].shape.d[1], 3);
    cr_assert(ti[0].has_stats);
    cr_assert_eq(ti[0].stats.count, 6);
    cr_assert_eq(ti[0].stats.mean, 3.5);
    free(ti);
    cd_dump_reader_close(r);

    /* a row whose shape text is not a list of dims */
    cd_dump *a = NULL;
    cr_assert_eq(cd_dump_open_append(path, &a, &e), CD_OK, "%s", e.msg);
    const char *ds[] = {"0004_t"}, *ot[] = {"relu"}, *sh[] = {"2,x"}, *dt[] = {"float32"};
    int64_t oi[] = {4}, cnt[] = {-1};
    double zero[] = {0};
    cd_column cols[] = {
        {"dataset", CD_COL_STR, ds},     {"op_index", CD_COL_I64, oi},     {"op_type", CD_COL_STR, ot},
        {"layer", CD_COL_STR, ot},       {"tensor", CD_COL_STR, ds},       {"dtype", CD_COL_STR, dt},
        {"shape", CD_COL_STR, sh},       {"elapsed_us", CD_COL_F64, zero}, {"kernel_us", CD_COL_F64, zero},
        {"where", CD_COL_STR, ot},       {"kernel", CD_COL_STR, ot},       {"note", CD_COL_STR, ot},
        {"stats_only", CD_COL_I64, cnt}, {"count", CD_COL_I64, cnt},       {"min", CD_COL_F64, zero},
        {"max", CD_COL_F64, zero},       {"mean", CD_COL_F64, zero},       {"nan_count", CD_COL_I64, oi},
        {"inf_count", CD_COL_I64, oi}};
    cr_assert_eq(cd_dump_write_table(a, "/tensors/cpu", cols, 19, 1, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_close(a, false, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_list_tensors(r, "cpu", &ti, &n, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "bad shape '2,x'") && strstr(e.msg, "0004_t"), "%s", e.msg);
    cd_dump_reader_close(r);
}

/* A tensor handed back (cd_dump_keep_f32) is what the next read of its dataset gets, without the
 * file: the same buffer, its values and shape; once only (the read after reads the file again),
 * and not a tensor handed back under another name or with another count. */
Test(store, kept_tensor_is_the_next_read) {
    char path[512];
    cd_dump *d = create_z("keep.h5", path, 0);
    cd_error e = {0};
    cr_assert_eq(cd_dump_begin_run(d, "cpu", NULL, &e), CD_OK, "%s", e.msg);
    float x[24], y[5] = {1, 2, 3, 4, 5};
    for (int i = 0; i < 24; i++) x[i] = (float)i * 0.5f - 3;
    int64_t dx[] = {2, 3, 4}, dy[] = {5};
    cd_value vx = mk(CD_F32, 3, dx, x), vy = mk(CD_F32, 1, dy, y);
    cd_tensor_rec rx = rec_for(1, "x"), ry = rec_for(2, "y");
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &rx, &vx, false, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_write_tensor(d, "cpu", &ry, &vy, false, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_end_run(d, "cpu", 1, true, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    cd_dump_reader *r = NULL;
    cr_assert_eq(cd_dump_open(path, &r, &e), CD_OK, "%s", e.msg);
    float *a = NULL, *b = NULL, *c = NULL, *t = NULL;
    int64_t n = 0;
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0001_x", &a, &n, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(n, 24);
    a[0] = 99; /* a marker only the kept buffer carries */
    cd_dump_keep_f32(r, "cpu", "0001_x", a, n);
    cd_shape s = {0};
    cr_assert_eq(cd_dump_read_path_f32(r, "/runs/cpu/0001_x", &b, &s, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(b, a, "the kept buffer itself");
    cr_expect_eq(b[0], 99);
    cr_expect_eq(b[23], 8.5f);
    cr_expect(s.rank == 3 && s.d[0] == 2 && s.d[1] == 3 && s.d[2] == 4, "shape kept: rank %d", s.rank);
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0001_x", &c, &n, &e), CD_OK, "%s", e.msg);
    cr_expect_eq(c[0], -3, "taken once: the file's value again");
    /* handed back under a name it was not read as, or with a wrong count: freed, not kept */
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0002_y", &t, &n, &e), CD_OK, "%s", e.msg);
    t[0] = 77;
    cd_dump_keep_f32(r, "cpu", "0001_x", t, n);
    float *u = NULL;
    cr_assert_eq(cd_dump_read_f32(r, "cpu", "0001_x", &u, &n, &e), CD_OK, "%s", e.msg);
    cr_expect_eq(u[0], -3);
    cr_expect_eq(n, 24);
    free(b);
    free(c);
    free(u);
    cd_dump_reader_close(r);
}
