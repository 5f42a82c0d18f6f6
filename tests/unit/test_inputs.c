/* Model inputs: random determinism, const, npy/bin/h5/png sources, spec assignment, errors. */
#include <criterion/criterion.h>
#include <hdf5.h>
#include <math.h>
#include <png.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include "cli/inputs.h"
#include "store/dump.h"
#include "util/npy.h"

static char dir[256];
static void setup(void) {
    snprintf(dir, sizeof dir, "/tmp/cd_test_inputs_XXXXXX");
    cr_assert_not_null(mkdtemp(dir));
}
static void teardown(void) {
    char cmd[600];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    if (system(cmd) != 0) fprintf(stderr, "cleanup failed\n");
}
TestSuite(inputs, .init = setup, .fini = teardown);

static cd_shape shp(int rank, int64_t a, int64_t b, int64_t c, int64_t d) {
    cd_shape s = {rank, {a, b, c, d}};
    return s;
}

/* A graph with just model inputs, enough for cd_inputs_build. */
typedef struct {
    cd_graph g;
    cd_tensor t[3];
    int in[3];
} fake;
static void fake_graph(fake *f, int n, const char *const *names) {
    memset(f, 0, sizeof *f);
    for (int i = 0; i < n; i++) {
        f->t[i].name = (char *)names[i];
        f->in[i] = i;
    }
    f->g.tensors = f->t;
    f->g.n_tensors = n;
    f->g.inputs = f->in;
    f->g.n_inputs = n;
}

Test(inputs, random_is_fixed_pcg32) {
    /* expected values from an independent Python PCG32 (pcg32_srandom(1, 0) / (42, 0)),
     * whose generator prints 0xa15c02b7 for the reference demo seed (42, 54) */
    float x[4];
    cd_fill_random(x, 4, 1, 0);
    cr_assert_eq(x[0], 0x1.88e4c0p-1f);
    cr_assert_eq(x[1], -0x1.fbbb44p-1f);
    cr_assert_eq(x[2], 0x1.4d4274p-1f);
    cr_assert_eq(x[3], -0x1.d1b344p-1f);
    cd_fill_random(x, 2, 1, 1);
    cr_assert_eq(x[0], 0x1.260a3cp-1f);
    cd_fill_random(x, 2, 42, 0);
    cr_assert_eq(x[0], -0x1.7922a8p-1f);
    cr_assert_eq(x[1], 0x1.057bdcp-1f);
    /* range */
    float *y = malloc(sizeof(float) * 100000);
    cd_fill_random(y, 100000, 7, 3);
    double sum = 0;
    for (int i = 0; i < 100000; i++) {
        cr_assert(y[i] >= -1.0f && y[i] < 1.0f);
        sum += y[i];
    }
    cr_assert_lt(fabs(sum / 100000), 0.01);
    free(y);
}

Test(inputs, build_assigns_specs) {
    fake f;
    const char *names[] = {"x", "im_shape"};
    fake_graph(&f, 2, names);
    cd_shape shapes[2] = {shp(4, 1, 3, 2, 2), shp(2, 1, 2, 0, 0)};
    cd_input_opts o = {.seed = 1};
    cd_input_set s;
    cd_error e = {0};
    const char *specs[] = {"im_shape=const:640"};
    cr_assert_eq(cd_inputs_build(&f.g, shapes, specs, 1, &o, &s, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(s.n, 2);
    float r[12];
    cd_fill_random(r, 12, 1, 0);
    cr_assert_eq(memcmp(s.values[0].data, r, sizeof r), 0, "unspecified input is random stream 0");
    cr_assert_eq(((float *)s.values[1].data)[1], 640.0f);
    cr_assert_str_eq(s.names[1], "im_shape");
    cr_assert(strstr(s.sources[0], "seed=1"), "%s", s.sources[0]);
    cd_inputs_free(&s);

    const char *bad1[] = {"y=const:1"};
    cr_assert_eq(cd_inputs_build(&f.g, shapes, bad1, 1, &o, &s, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "no input 'y' (inputs: x, im_shape)"), "%s", e.msg);
    const char *bad2[] = {"const:1"};
    cr_assert_eq(cd_inputs_build(&f.g, shapes, bad2, 1, &o, &s, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "write --input NAME=SPEC"), "%s", e.msg);
    const char *bad3[] = {"x=const:1", "x=random"};
    cr_assert_eq(cd_inputs_build(&f.g, shapes, bad3, 2, &o, &s, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "given twice"), "%s", e.msg);
    const char *bad4[] = {"x=const:abc"};
    cr_assert_eq(cd_inputs_build(&f.g, shapes, bad4, 1, &o, &s, &e), CD_E_USAGE);
    const char *bad5[] = {"x=weird.txt"};
    cr_assert_eq(cd_inputs_build(&f.g, shapes, bad5, 1, &o, &s, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "unknown input spec"), "%s", e.msg);

    /* single-input model: bare spec, and random:SEED */
    fake f1;
    fake_graph(&f1, 1, names);
    const char *sp[] = {"random:42"};
    cr_assert_eq(cd_inputs_build(&f1.g, shapes, sp, 1, &o, &s, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(((float *)s.values[0].data)[0], -0x1.7922a8p-1f);
    cd_inputs_free(&s);
}

Test(inputs, npy_and_bin_files) {
    cd_shape want = shp(4, 1, 3, 4, 4);
    char p[400];
    snprintf(p, sizeof p, "%s/x.npy", dir);
    /* float64 [3,4,4] -> accepted (size-1 dims ignored), converted */
    double dv[48];
    for (int i = 0; i < 48; i++) dv[i] = i * 0.5;
    cd_value v = {.dtype = CD_F64, .shape = shp(3, 3, 4, 4, 0), .data = dv, .nbytes = sizeof dv};
    cd_error e = {0};
    cr_assert_eq(cd_npy_write(p, &v, &e), CD_OK, "%s", e.msg);
    cd_value out;
    char src[256];
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(((float *)out.data)[47], 23.5f);
    cd_value_release(&out);
    /* wrong shape */
    cd_shape other = shp(4, 1, 3, 2, 8);
    cr_assert_eq(cd_input_from_spec("x", 0, &other, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    char msg[600];
    snprintf(msg, sizeof msg, "input 'x' expects [1,3,2,8] (48 values) but %s holds [3,4,4] (48)", p);
    cr_assert_str_eq(e.msg, msg);
    cd_shape big = shp(4, 1, 3, 64, 64);
    cr_assert_eq(cd_input_from_spec("x", 0, &big, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    snprintf(msg, sizeof msg, "input 'x' expects [1,3,64,64] (12288 values) but %s holds [3,4,4] (48)", p);
    cr_assert_str_eq(e.msg, msg);
    /* missing */
    cr_assert_eq(cd_input_from_spec("x", 0, &want, "/nonexistent/a.npy", NULL, &out, src, sizeof src, &e), CD_E_USAGE);
    cr_assert(strstr(e.msg, "/nonexistent/a.npy"), "%s", e.msg);

    /* raw float32 */
    snprintf(p, sizeof p, "%s/x.bin", dir);
    float fv[48];
    for (int i = 0; i < 48; i++) fv[i] = -1.0f * i;
    FILE *f = fopen(p, "wb");
    fwrite(fv, 4, 48, f);
    fclose(f);
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(memcmp(out.data, fv, sizeof fv), 0);
    cd_value_release(&out);
    cr_assert_eq(cd_input_from_spec("x", 0, &big, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "expects [1,3,64,64] (12288 values = 49152 bytes of float32)"), "%s", e.msg);
    cr_assert(strstr(e.msg, "holds 192 bytes"), "%s", e.msg);
}

Test(inputs, hdf5_dataset_and_dump_replay) {
    char p[400], spec[500];
    snprintf(p, sizeof p, "%s/in.h5", dir);
    hid_t f = H5Fcreate(p, H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
    hsize_t dims[2] = {2, 3};
    hid_t sp = H5Screate_simple(2, dims, NULL);
    hid_t grp = H5Gcreate2(f, "/g", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    hid_t ds = H5Dcreate2(f, "/g/data", H5T_STD_I32LE, sp, H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT);
    int iv[6] = {1, 2, 3, 4, 5, -6};
    H5Dwrite(ds, H5T_NATIVE_INT, H5S_ALL, H5S_ALL, H5P_DEFAULT, iv);
    H5Dclose(ds);
    H5Gclose(grp);
    H5Sclose(sp);
    H5Fclose(f);
    cd_shape want = shp(2, 2, 3, 0, 0);
    cd_value out;
    cd_error e = {0};
    char src[256];
    snprintf(spec, sizeof spec, "%s:/g/data", p);
    cr_assert_eq(cd_input_from_spec("x", 0, &want, spec, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(((float *)out.data)[5], -6.0f);
    cd_value_release(&out);
    snprintf(spec, sizeof spec, "%s:/g/missing", p);
    cr_assert_eq(cd_input_from_spec("x", 0, &want, spec, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "no dataset '/g/missing'"), "%s", e.msg);
    cd_shape wrong = shp(2, 3, 3, 0, 0);
    snprintf(spec, sizeof spec, "%s:/g/data", p);
    cr_assert_eq(cd_input_from_spec("x", 0, &wrong, spec, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "expects [3,3] (9 values) but"), "%s", e.msg);

    /* replay the inputs of a dump */
    snprintf(p, sizeof p, "%s/d.h5", dir);
    cd_dump *d;
    cr_assert_eq(cd_dump_create(p, NULL, &d, &e), CD_OK, "%s", e.msg);
    float fv[6] = {0.5f, 1, 2, 3, 4, 5};
    cd_value v = {.dtype = CD_F32, .shape = want, .data = fv, .nbytes = sizeof fv};
    cr_assert_eq(cd_dump_write_input(d, "img/0", &v, "test", &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_dump_close(d, true, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(cd_input_from_spec("img/0", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    cr_assert_eq(memcmp(out.data, fv, sizeof fv), 0);
    cd_value_release(&out);
    cr_assert_eq(cd_input_from_spec("other", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
}

/* Writes a PNG with libpng's simplified API. */
static void write_png(const char *path, int w, int h, png_uint_32 format, const void *px) {
    png_image img;
    memset(&img, 0, sizeof img);
    img.version = PNG_IMAGE_VERSION;
    img.width = (png_uint_32)w;
    img.height = (png_uint_32)h;
    img.format = format;
    cr_assert(png_image_write_to_file(&img, path, 0, px, 0, NULL), "%s", img.message);
}

Test(inputs, png_rgb_normalised_nchw) {
    char p[400];
    snprintf(p, sizeof p, "%s/a.png", dir);
    /* 2x1 RGB: (255,0,51) (0,255,102) */
    unsigned char px[6] = {255, 0, 51, 0, 255, 102};
    write_png(p, 2, 1, PNG_FORMAT_RGB, px);
    cd_shape want = shp(4, 1, 3, 1, 2);
    cd_input_opts o = {.mean = "0.5", .std = "0.5,0.25,1"};
    cd_value out;
    cd_error e = {0};
    char src[256];
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, &o, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    float *x = out.data;
    /* channel plane layout: R0 R1 G0 G1 B0 B1 */
    cr_assert_float_eq(x[0], (1.0f - 0.5f) / 0.5f, 1e-6);
    cr_assert_float_eq(x[1], (0.0f - 0.5f) / 0.5f, 1e-6);
    cr_assert_float_eq(x[2], (0.0f - 0.5f) / 0.25f, 1e-6);
    cr_assert_float_eq(x[3], (1.0f - 0.5f) / 0.25f, 1e-6);
    cr_assert_float_eq(x[4], 51.0f / 255.0f - 0.5f, 1e-6);
    cr_assert_float_eq(x[5], 102.0f / 255.0f - 0.5f, 1e-6);
    cd_value_release(&out);
    /* bgr: model channel 0 takes blue */
    cd_input_opts ob = {.channel_order = "bgr"};
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, &ob, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    x = out.data;
    cr_assert_float_eq(x[0], 51.0f / 255.0f, 1e-7);
    cr_assert_float_eq(x[4], 1.0f, 1e-7);
    cd_value_release(&out);
    /* wrong size without resize */
    cd_shape big = shp(4, 1, 3, 4, 4);
    cr_assert_eq(cd_input_from_spec("x", 0, &big, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "expects 4x4 images"), "%s", e.msg);
    cr_assert(strstr(e.msg, "is 2x1"), "%s", e.msg);
    cd_input_opts bad = {.channel_order = "rbg"};
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, &bad, &out, src, sizeof src, &e), CD_E_USAGE);
    cd_input_opts bad2 = {.mean = "1,2"};
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, &bad2, &out, src, sizeof src, &e), CD_E_USAGE);
}

Test(inputs, png_gray16_rgba_and_resize) {
    char p[400];
    snprintf(p, sizeof p, "%s/g.png", dir);
    /* 16-bit linear gray written -> read back as 8-bit: black and white survive exactly */
    uint16_t g16[4] = {0, 65535, 65535, 0};
    write_png(p, 2, 2, PNG_FORMAT_LINEAR_Y, g16);
    cd_shape want = shp(4, 1, 3, 2, 2);
    cd_value out;
    cd_error e = {0};
    char src[256];
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    float *x = out.data;
    for (int c = 0; c < 3; c++) {
        cr_assert_eq(x[c * 4 + 0], 0.0f);
        cr_assert_eq(x[c * 4 + 1], 1.0f);
    }
    cd_value_release(&out);
    /* RGBA with opaque pixels -> RGB; grayscale model input */
    snprintf(p, sizeof p, "%s/a.png", dir);
    unsigned char rgba[16] = {255, 255, 255, 255, 0, 0, 0, 255, 10, 20, 30, 255, 255, 0, 0, 255};
    write_png(p, 2, 2, PNG_FORMAT_RGBA, rgba);
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    x = out.data;
    cr_assert_float_eq(x[2], 10.0f / 255.0f, 1e-7);
    cr_assert_float_eq(x[4 + 2], 20.0f / 255.0f, 1e-7);
    cr_assert_float_eq(x[8 + 3], 0.0f, 1e-7);
    cd_value_release(&out);
    cd_shape gray = shp(4, 2, 1, 2, 2); /* batch of 2, one channel */
    cr_assert_eq(cd_input_from_spec("x", 0, &gray, p, NULL, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    x = out.data;
    cr_assert_float_eq(x[0], 1.0f, 1e-7);
    cr_assert_float_eq(x[1], 0.0f, 1e-7);
    cr_assert_eq(memcmp(x, x + 4, 16), 0, "batch copies");
    cd_value_release(&out);

    /* resize 2x1 -> 4x1 (bilinear, half-pixel centres): 0,255 -> 0, .25, .75, 1 */
    snprintf(p, sizeof p, "%s/r.png", dir);
    unsigned char g8[2] = {0, 255};
    write_png(p, 2, 1, PNG_FORMAT_GRAY, g8);
    cd_shape w4 = shp(4, 1, 1, 1, 4);
    cd_input_opts o = {.resize = true};
    cr_assert_eq(cd_input_from_spec("x", 0, &w4, p, &o, &out, src, sizeof src, &e), CD_OK, "%s", e.msg);
    x = out.data;
    cr_assert_float_eq(x[0], 0.0f, 1e-7);
    cr_assert_float_eq(x[1], 0.25f, 1e-7);
    cr_assert_float_eq(x[2], 0.75f, 1e-7);
    cr_assert_float_eq(x[3], 1.0f, 1e-7);
    cd_value_release(&out);
    /* not a PNG */
    snprintf(p, sizeof p, "%s/bad.png", dir);
    FILE *f = fopen(p, "w");
    fputs("GIF89a", f);
    fclose(f);
    cr_assert_eq(cd_input_from_spec("x", 0, &want, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "cannot read PNG"), "%s", e.msg);
    cd_shape five = shp(4, 1, 5, 2, 2);
    cr_assert_eq(cd_input_from_spec("x", 0, &five, p, NULL, &out, src, sizeof src, &e), CD_E_MODEL);
    cr_assert(strstr(e.msg, "5 channels"), "%s", e.msg);
}

Test(inputs, float_list_parser) {
    float v[4];
    int n;
    cd_error e;
    cr_assert_eq(cd_parse_float_list("--mean", "0.485, 0.456,0.406", v, 4, &n, &e), CD_OK);
    cr_assert_eq(n, 3);
    cr_assert_eq(v[1], 0.456f);
    cr_assert_eq(cd_parse_float_list("--mean", "1,x", v, 4, &n, &e), CD_E_USAGE);
    cr_assert_eq(cd_parse_float_list("--mean", "1,2,3,4,5", v, 4, &n, &e), CD_E_USAGE);
    cr_assert_eq(cd_parse_float_list("--mean", "", v, 4, &n, &e), CD_E_USAGE);
}
