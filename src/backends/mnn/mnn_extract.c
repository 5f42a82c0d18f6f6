/* The runner's --extract mode as a call (mnn_extract.h). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include "backends/mnn/mnn_extract.h"
#include "backends/mnn/mnn_sdk.h"
#include "util/fsutil.h"

cd_status cd_mnn_extract_op(const char *sdk_given, const char *model, const char *tensor, const char *const *shapes,
                            int n_shapes, const char *out_path, const char *log_path, cd_error *err) {
    cd_mnn_sdk sdk;
    char exe[4096];
    bool built = false;
    cd_status st = cd_mnn_sdk_find("mnn-cpu", sdk_given, false, &sdk, err);
    if (!st) st = cd_mnn_runner_get(&sdk, exe, sizeof exe, &built, err);
    if (st) return st;
    enum { FIXED = 5 };
    char **argv = calloc((size_t)n_shapes + FIXED + 1, sizeof *argv);
    if (!argv) return cd_err(err, CD_E_NOMEM, "out of memory");
    argv[0] = exe;
    argv[1] = "--extract";
    argv[2] = (char *)model;
    argv[3] = (char *)out_path;
    argv[4] = (char *)tensor;
    for (int i = 0; i < n_shapes; i++) argv[FIXED + i] = (char *)shapes[i];
    int ws = 0;
    bool to = false;
    remove(out_path);
    st = cd_mnn_spawn_wait(argv, log_path, 120, &ws, &to, NULL, err);
    free(argv);
    if (st) return st;
    if (to || !WIFEXITED(ws) || WEXITSTATUS(ws) != 0 || !cd_fs_is_file(out_path)) {
        char tail[1000];
        cd_mnn_log_tail(log_path, 3, tail, sizeof tail);
        return cd_err(err, CD_E_BACKEND, "MNN could not cut out the op writing '%s' of %s (%s): %s; log %s", tensor,
                      model,
                      to                    ? "timed out"
                          : WIFSIGNALED(ws) ? "killed by a signal"
                          : WEXITSTATUS(ws) ? "runner failed"
                                            : "no file written",
                      tail[0] ? tail : "no output", log_path);
    }
    return CD_OK;
}
