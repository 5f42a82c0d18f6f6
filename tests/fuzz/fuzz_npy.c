/* Fuzz harness: the .npy reader (cd_npy_parse), the whole file image as input. On success
 * every element is read back (catches a data size that disagrees with dtype x shape). */
#include <stdio.h>
#include <stdlib.h>
#include "fuzz_common.h"
#include "util/npy.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cd_value v = {0};
    cd_error err = {0};
    cd_status st = cd_npy_parse(data, size, "fuzz.npy", &v, &err);
    if (st == CD_OK) {
        int64_t n = cd_value_numel(&v);
        double acc = 0;
        for (int64_t i = 0; i < n; i++) acc += cd_value_get(&v, i);
        (void)acc;
        cd_value_release(&v);
    } else if (err.code != st || !err.msg[0]) {
        fprintf(stderr, "fuzz_npy: status %d without a matching message\n", (int)st);
        abort();
    }
    return 0;
}
