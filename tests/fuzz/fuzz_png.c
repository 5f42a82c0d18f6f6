/* Fuzz harness: the PNG input path of --input (cd_input_from_spec with FILE.png): libpng
 * decoding, bit depth / colour type handling, resize to the model's H x W, mean/std and
 * channel order. The reader dispatches on the file extension, so the input is written to a
 * .png file on tmpfs. The first input byte picks the model shape and options so that the
 * resize and no-resize paths are both reached. */
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>
#include "cli/inputs.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    if (size < 1) return 0;
    uint8_t sel = data[0];
    char path[512];
    if (cd_fuzz_shmfile(data + 1, size - 1, ".png", path, sizeof path) != 0) return 0;
    static const int64_t hw[4][2] = {{8, 8}, {16, 5}, {1, 1}, {3, 33}};
    const int64_t chans[4] = {3, 1, 4, 3};
    cd_shape shape = {.rank = 4, .d = {1, chans[(sel >> 2) & 3], hw[sel & 3][0], hw[sel & 3][1]}};
    cd_input_opts o = {.seed = 1,
                       .resize = !(sel & 0x10),
                       .mean = (sel & 0x20) ? "0.485,0.456,0.406" : NULL,
                       .std = (sel & 0x20) ? "0.229,0.224,0.225" : NULL,
                       .channel_order = (sel & 0x40) ? "bgr" : "rgb"};
    cd_value v = {0};
    cd_error err = {0};
    char source[256];
    cd_status st = cd_input_from_spec("image", 0, &shape, path, &o, &v, source, sizeof source, &err);
    unlink(path);
    if (getenv("CD_FUZZ_VERBOSE")) fprintf(stderr, "fuzz_png: %s\n", st ? err.msg : source);
    if (st == CD_OK) {
        int64_t n = cd_value_numel(&v);
        if (n != cd_shape_numel(&shape)) {
            fprintf(stderr, "fuzz_png: %lld values for %lld\n", (long long)n, (long long)cd_shape_numel(&shape));
            abort();
        }
        cd_value_release(&v);
    } else if (err.code != st || !err.msg[0]) {
        fprintf(stderr, "fuzz_png: status %d without a matching message\n", (int)st);
        abort();
    }
    return 0;
}
