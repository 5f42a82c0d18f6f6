/* `cldiff doctor`: the MNN engines (inspect_mnn.h, docs/mnn.md). */
#include <stdio.h>
#include "backends/mnn/mnn_sdk.h"
#include "cli/inspect_mnn.h"

void cd_doctor_mnn(void) {
    printf("\nMNN engines (docs/mnn.md):\n");
    static const char *const eng[] = {"mnn-cpu", "mnn-opencl", "mnn-arm"};
    for (int k = 0; k < 3; k++) {
        printf("%s:\n", eng[k]);
        fflush(stdout);
        char rep[8192];
        cd_mnn_engine_check(eng[k], k == 1, rep, sizeof rep);
        fputs(rep, stdout);
    }
    fflush(stdout);
}
