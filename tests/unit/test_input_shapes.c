/* Input shapes before planning (cd_inputs_resolve_shapes): an --input file with a shape of its
 * own (.npy, HDF5 dataset) fills the model's dynamic dims when no --shape is given. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "cli/inputs.h"
#include "util/npy.h"

static char dir[256];
static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/cd_test_input_shapes_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}
TestSuite(input_shapes, .init = setup, .fini = teardown);

/* A graph with just model inputs and their declared shapes. */
typedef struct {
    cd_graph g;
    cd_tensor t[2];
    int in[2];
} fake;
static void fake_graph(fake *f, int n, const char *const *names, const cd_shape *declared) {
    memset(f, 0, sizeof *f);
    for (int i = 0; i < n; i++) {
        f->t[i].name = (char *)names[i];
        f->t[i].shape = declared[i];
        f->t[i].producer = -1;
        f->in[i] = i;
    }
    f->g.tensors = f->t;
    f->g.n_tensors = n;
    f->g.inputs = f->in;
    f->g.n_inputs = n;
}

static const char *npy_file(const char *name, int rank, const int64_t *dims) {
    static char path[4][400];
    static int k;
    char *p = path[k++ % 4];
    snprintf(p, 400, "%s/%s", dir, name);
    cd_value v = {.dtype = CD_F32, .shape = {.rank = rank}};
    for (int i = 0; i < rank; i++) v.shape.d[i] = dims[i];
    cd_error e = {0};
    cr_assert_eq(cd_value_alloc(&v, &e), CD_OK, "%s", e.msg);
    memset(v.data, 0, v.nbytes);
    cr_assert_eq(cd_npy_write(p, &v, &e), CD_OK, "%s", e.msg);
    cd_value_release(&v);
    return p;
}

static const cd_shape DYN = {4, {-1, 3, -1, -1}};

static void assert_shape(const cd_shape *s, int rank, int64_t a, int64_t b, int64_t c, int64_t d) {
    const int64_t want[4] = {a, b, c, d};
    cr_assert_eq(s->rank, rank);
    for (int i = 0; i < rank; i++)
        cr_assert_eq(s->d[i], want[i], "dim %d: %lld, want %lld", i, (long long)s->d[i], (long long)want[i]);
}

Test(input_shapes, npy_fills_dynamic_dims) {
    fake f;
    const char *names[] = {"x"};
    fake_graph(&f, 1, names, &DYN);
    char spec[500], notice[1024];
    snprintf(spec, sizeof spec, "x=%s", npy_file("a.npy", 4, (int64_t[]){1, 3, 48, 192}));
    const char *specs[] = {spec};
    cd_shape out[1];
    cd_error e = {0};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 1, out, notice, sizeof notice, &e), CD_OK, "%s", e.msg);
    assert_shape(&out[0], 4, 1, 3, 48, 192);
    char want[600];
    snprintf(want, sizeof want, "input 'x': shape [1,3,48,192] taken from %s (declared [-1,3,-1,-1])", spec + 2);
    cr_assert_str_eq(notice, want);

    /* the batch may come from the file too; an unnamed spec serves the only input */
    specs[0] = npy_file("b.npy", 4, (int64_t[]){2, 3, 32, 100});
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 1, out, notice, sizeof notice, &e), CD_OK, "%s", e.msg);
    assert_shape(&out[0], 4, 2, 3, 32, 100);
    /* rank 3: a leading 1 added; rank 5 with a leading 1: dropped */
    specs[0] = npy_file("c.npy", 3, (int64_t[]){3, 48, 96});
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 1, out, notice, sizeof notice, &e), CD_OK, "%s", e.msg);
    assert_shape(&out[0], 4, 1, 3, 48, 96);
    specs[0] = npy_file("d.npy", 5, (int64_t[]){1, 1, 3, 8, 8});
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 1, out, notice, sizeof notice, &e), CD_OK, "%s", e.msg);
    assert_shape(&out[0], 4, 1, 3, 8, 8);
}

Test(input_shapes, fixed_dims_must_match) {
    fake f;
    const char *names[] = {"x"};
    fake_graph(&f, 1, names, &DYN);
    const char *specs[] = {npy_file("a.npy", 4, (int64_t[]){1, 4, 48, 192})};
    cd_shape out[1];
    char notice[256];
    cd_error e = {0};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 1, out, notice, sizeof notice, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "declared [-1,3,-1,-1] but ") &&
                  strstr(e.msg,
                         "holds [1,4,48,192]: dim 1 is 4 where the "
                         "model fixes 3"),
              "%s", e.msg);
    specs[0] = npy_file("b.npy", 5, (int64_t[]){2, 1, 3, 8, 8});
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 1, out, notice, sizeof notice, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "rank 5 where the model has 4"), "%s", e.msg);
}

Test(input_shapes, shape_option_and_shapeless_specs) {
    fake f;
    const char *names[] = {"x"};
    fake_graph(&f, 1, names, &DYN);
    cd_shape out[1];
    char notice[256];
    cd_error e = {0};
    /* --shape wins: the file is not read here (cd_inputs_build holds it to the shape later) */
    const char *specs[] = {npy_file("a.npy", 4, (int64_t[]){1, 3, 48, 192})};
    const char *shapes[] = {"x=1,3,16,16"};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, shapes, 1, specs, 1, out, notice, sizeof notice, &e), CD_OK, "%s",
                 e.msg);
    assert_shape(&out[0], 4, 1, 3, 16, 16);
    cr_assert_null(strstr(notice, "taken from"), "%s", notice);
    /* no shape in const:, random, raw .bin, .png: dynamic dims still need --shape */
    const char *shapeless[] = {"x=const:1", "random", "x=img.bin", "x=img.png"};
    for (int i = 0; i < 4; i++) {
        cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, &shapeless[i], 1, out, notice, sizeof notice, &e),
                     CD_E_USAGE, "%s", shapeless[i]);
        cr_assert(strstr(e.msg, "dims 0,2,3 are dynamic") || strstr(e.msg, "dims 2,3 are dynamic"), "%s", e.msg);
    }
    /* a missing file is named */
    char missing[400];
    snprintf(missing, sizeof missing, "x=%s/none.npy", dir);
    const char *m[] = {missing};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, m, 1, out, notice, sizeof notice, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "none.npy"), "%s", e.msg);
}

Test(input_shapes, hdf5_dataset_and_undeclared_and_two_inputs) {
    char h5[400];
    snprintf(h5, sizeof h5, "%s/in.h5", dir);
    hid_t f5 = H5Fcreate(h5, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[4] = {1, 3, 32, 64};
    hid_t sp = H5Screate_simple(4, dims, NULL);
    hid_t ds = H5Dcreate2(f5, "/img", H5T_NATIVE_FLOAT, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    cr_assert(ds >= 0);
    H5Dclose(ds);
    H5Sclose(sp);
    H5Fclose(f5);

    fake f;
    const char *names[] = {"a", "b"};
    const cd_shape declared[2] = {DYN, {0, {0}}}; /* b: no declared shape (meta_version 0) */
    fake_graph(&f, 2, names, declared);
    char sa[500], sb[500], notice[1024];
    snprintf(sa, sizeof sa, "a=%s:/img", h5);
    snprintf(sb, sizeof sb, "b=%s", npy_file("b.npy", 2, (int64_t[]){4, 7}));
    const char *specs[] = {sb, sa};
    cd_shape out[2];
    cd_error e = {0};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, specs, 2, out, notice, sizeof notice, &e), CD_OK, "%s", e.msg);
    assert_shape(&out[0], 4, 1, 3, 32, 64);
    assert_shape(&out[1], 2, 4, 7, 0, 0);
    cr_assert(strstr(notice, "input 'a': shape [1,3,32,64] taken from ") && strstr(notice, "in.h5:/img"), "%s", notice);
    cr_assert(strstr(notice, "\ninput 'b': shape [4,7] taken from ") && strstr(notice, "b.npy (no declared shape)"),
              "%s", notice);
    /* --shape for one input, the file for the other */
    const char *shapes[] = {"a=1,3,8,8"};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, shapes, 1, specs, 2, out, notice, sizeof notice, &e), CD_OK, "%s",
                 e.msg);
    assert_shape(&out[0], 4, 1, 3, 8, 8);
    assert_shape(&out[1], 2, 4, 7, 0, 0);
    /* a spec that names no input is the usual usage error */
    const char *bad[] = {"c=const:1"};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, NULL, 0, bad, 1, out, notice, sizeof notice, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "no input 'c'") && strstr(e.msg, "inputs: a, b"), "%s", e.msg);
    /* a dataset that is not there is named */
    snprintf(sa, sizeof sa, "a=%s:/nope", h5);
    const char *nope[] = {sa};
    cr_assert_eq(cd_inputs_resolve_shapes(&f.g, shapes, 0, nope, 1, out, notice, sizeof notice, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "no dataset '/nope'"), "%s", e.msg);
}
