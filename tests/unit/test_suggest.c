/* "Did you mean": edit distance and nearest-word picks (util/suggest.h). */
#include <criterion/criterion.h>
#include <string.h>
#include "util/suggest.h"

Test(suggest, edit_distance) {
    cr_assert_eq(cd_edit_distance("", ""), 0);
    cr_assert_eq(cd_edit_distance("abc", ""), 3);
    cr_assert_eq(cd_edit_distance("", "abcd"), 4);
    cr_assert_eq(cd_edit_distance("kitten", "sitting"), 3);
    cr_assert_eq(cd_edit_distance("--version", "--version"), 0);
    /* a swap of two neighbours is one edit (plain Levenshtein would say 2) */
    cr_assert_eq(cd_edit_distance("--versoin", "--version"), 1);
    cr_assert_eq(cd_edit_distance("ab", "ba"), 1);
    cr_assert_eq(cd_edit_distance("fulll", "full"), 1);
    cr_assert_eq(cd_edit_distance("dequnt", "dequant"), 1);
    cr_assert_eq(cd_edit_distance("conv2d_9", "conv2d_19"), 1);
    /* optimal string alignment: "ca" -> "abc" is 3 (no edit of a swapped pair) */
    cr_assert_eq(cd_edit_distance("ca", "abc"), 3);
    cr_assert_eq(cd_edit_distance("Version", "version"), 1); /* case counts */
    /* symmetric */
    cr_assert_eq(cd_edit_distance("--thread", "--threads"), cd_edit_distance("--threads", "--thread"));
}

Test(suggest, long_strings_are_capped) {
    char a[400], b[400];
    memset(a, 'x', sizeof a - 1);
    a[sizeof a - 1] = 0;
    memcpy(b, a, sizeof b);
    b[300] = 'y'; /* past the compared prefix */
    cr_assert_eq(cd_edit_distance(a, b), 0);
    b[3] = 'y';
    cr_assert_eq(cd_edit_distance(a, b), 1);
}

Test(suggest, max_dist_by_length) {
    cr_assert_eq(cd_suggest_max_dist("-z"), 0);
    cr_assert_eq(cd_suggest_max_dist("--ab"), 0);
    cr_assert_eq(cd_suggest_max_dist("--abc"), 1);
    cr_assert_eq(cd_suggest_max_dist("full"), 1);
    cr_assert_eq(cd_suggest_max_dist("fulll"), 2);
    cr_assert_eq(cd_suggest_max_dist("--versoin"), 2);
    cr_assert_eq(cd_suggest_max_dist("--frobnicate"), 3);
}

static const char *const OPTS[] = {"--help",         "--version", "--fp32",      "--fp16",
                                   "--fp16-compute", "--threads", "--calibrate", "--calibrate-safety",
                                   "--input",        "--inputs",  "--out",       "-o"};
#define NOPTS ((int)(sizeof OPTS / sizeof *OPTS))

Test(suggest, nearest) {
    cr_assert_eq(cd_nearest("--versoin", OPTS, NOPTS, -1), 1);
    cr_assert_eq(cd_nearest("--version", OPTS, NOPTS, -1), 1); /* exact */
    cr_assert_eq(cd_nearest("--fp61", OPTS, NOPTS, -1), 3);    /* swap -> fp16, not fp32 (2) */
    cr_assert_eq(cd_nearest("--thread", OPTS, NOPTS, -1), 5);
    cr_assert_eq(cd_nearest("--inptu", OPTS, NOPTS, -1), 8); /* --input (1) before --inputs (2) */
    cr_assert_eq(cd_nearest("--frobnicate", OPTS, NOPTS, -1), -1);
    cr_assert_eq(cd_nearest("--xyz", OPTS, NOPTS, -1), -1);
    cr_assert_eq(cd_nearest("-z", OPTS, NOPTS, -1), -1); /* too short to guess */
    /* explicit limits */
    cr_assert_eq(cd_nearest("--versn", OPTS, NOPTS, 1), -1);
    cr_assert_eq(cd_nearest("--versn", OPTS, NOPTS, 2), 1);
    cr_assert_eq(cd_nearest("--calibrate-saf", OPTS, NOPTS, -1), 7); /* 3 edits; --calibrate is 4 */
    /* a unique prefix counts when nothing is within the limit: --fp16-com is 4 edits from both
     * --fp16 and --fp16-compute but begins only the latter; --calib begins two options */
    cr_assert_eq(cd_nearest("--fp16-com", OPTS, NOPTS, -1), 4);
    cr_assert_eq(cd_nearest("--calib", OPTS, NOPTS, -1), -1);
    /* ties go to the earlier candidate */
    static const char *const tie[] = {"conv2d_8", "conv2d_19", "conv2d_90"};
    cr_assert_eq(cd_nearest("conv2d_9", tie, 3, -1), 0);
    /* NULL candidates and an empty list */
    static const char *const holes[] = {NULL, "stats", NULL, "full"};
    cr_assert_eq(cd_nearest("fulll", holes, 4, -1), 3);
    cr_assert_eq(cd_nearest("fulll", holes, 0, -1), -1);
    cr_assert_eq(cd_nearest(NULL, holes, 4, -1), -1);
    cr_assert_str_eq(cd_suggest("dequnt", (const char *const[]){"arm", "dequant"}, 2), "dequant");
    cr_assert_null(cd_suggest("vulkan", (const char *const[]){"arm", "gpu"}, 2));
}

Test(suggest, nearest_k_sorted_unique) {
    static const char *const names[] = {"conv2d_0",  "conv2d_8",       "relu_3", "conv2d_19", "conv2d_8", "pool2d_0",
                                        "conv2d_99", "conv2d_9.tmp_0", NULL,     "",          "conv2d_90"};
    int idx[5];
    int n = cd_nearest_k("conv2d_9", names, 11, CD_SUGGEST_ANY, idx, 5);
    cr_assert_eq(n, 5);
    /* distance 1: conv2d_0, conv2d_8, conv2d_19, conv2d_99, conv2d_90 in list order; the
     * second conv2d_8 is not repeated */
    const char *want[5] = {"conv2d_0", "conv2d_8", "conv2d_19", "conv2d_99", "conv2d_90"};
    for (int i = 0; i < 5; i++) cr_assert_str_eq(names[idx[i]], want[i], "rank %d", i);
    /* fewer than k, and a limit */
    n = cd_nearest_k("relu_4", names, 11, 1, idx, 5);
    cr_assert_eq(n, 1);
    cr_assert_str_eq(names[idx[0]], "relu_3");
    n = cd_nearest_k("relu_4", names, 11, CD_SUGGEST_ANY, idx, 3);
    cr_assert_eq(n, 3);
    cr_assert_str_eq(names[idx[0]], "relu_3");
    cr_assert_eq(cd_nearest_k("x", names, 11, CD_SUGGEST_ANY, idx, 0), 0);
}
