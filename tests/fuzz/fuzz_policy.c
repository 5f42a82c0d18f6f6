/* Fuzz harness: the tolerance-file parser (cd_policy_parse) and the rule lookup that uses
 * what it parsed (glob matching of layer names). The input is the file text; the first
 * line of the input that parses is also used as a layer name to look up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "compare/policy.h"
#include "fuzz_common.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
    char *text = malloc(size + 1);
    if (!text) return 0;
    memcpy(text, data, size);
    text[size] = 0; /* the parser takes a C string: embedded NULs end it early, as in a file */
    cd_policy p;
    cd_policy_init(&p, (size & 1) ? CD_PREC_FP16 : CD_PREC_FP32);
    cd_error err = {0};
    cd_status st = cd_policy_parse(&p, text, "fuzz.tol", &err);
    if (st == CD_OK) {
        /* look a few names up: the glob matcher runs on every layer rule */
        const char *names[] = {"conv2d_1", "conv2d_12", "", "softmax_0", text};
        for (size_t i = 0; i < sizeof names / sizeof *names; i++) {
            char rule[256];
            cd_tol t = cd_policy_for(&p, "conv2d", names[i], rule, sizeof rule);
            (void)t;
        }
    } else if (err.code != st || !err.msg[0]) {
        fprintf(stderr, "fuzz_policy: status %d without a matching message\n", (int)st);
        abort();
    }
    cd_policy_free(&p);
    free(text);
    return 0;
}
