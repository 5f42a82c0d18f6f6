/* Fuzz harness: the MNN model reader (cd_mnn_load_mem, docs/mnn.md). The input is
 * the whole file image. A malformed model must give CD_E_MODEL (or CD_E_NOMEM / CD_E_
 * UNSUPPORTED) with a message, never a crash, leak or undefined behaviour. */
#include <stdio.h>
#include <stdlib.h>
#include "fuzz_common.h"
#include "model/mnn_reader.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    cd_graph *g = NULL;
    cd_error err = {0};
    cd_status st = cd_mnn_load_mem(data, size, &g, &err);
    if (st == CD_OK) {
        if (!g) {
            fprintf(stderr, "fuzz_mnn: CD_OK without a graph\n");
            abort();
        }
        cd_graph_free(g);
    } else {
        /* every failure must explain itself */
        if (err.code != st || !err.msg[0]) {
            fprintf(stderr, "fuzz_mnn: status %d without a matching message (code %d)\n", (int)st, (int)err.code);
            abort();
        }
        if (g) cd_graph_free(g);
    }
    return 0;
}
