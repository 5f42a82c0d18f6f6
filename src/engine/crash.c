/* The one-line description of a crashed run (engine/crash.h). */
#include "engine/crash.h"
#include <stdio.h>
#include <string.h>

void cd_crash_describe(const cd_crash_info *c, const cd_plan *plan, char *buf, size_t n) {
    char what[96], where[400], tail[400] = "";
    if (c->timed_out)
        snprintf(what, sizeof what, "timed out after %.0f s (--timeout; the child was killed with SIGKILL)",
                 c->elapsed_s);
    else if (c->signal)
        snprintf(what, sizeof what, "%s", c->signal_name);
    else
        snprintf(what, sizeof what, "OpenCL child exited with status %d without a result", c->exit_status);
    char opdesc[240] = "";
    if (c->op_index >= 0) snprintf(opdesc, sizeof opdesc, "op #%d %s (%s)", c->op_index, c->layer, c->op_type);
    if (!strcmp(c->phase, "build"))
        snprintf(where, sizeof where, "%s in clBuildProgram of kernel %s (%s) for %s", c->timed_out ? " stuck" : "",
                 c->kernel, c->variant, opdesc);
    else if (!strcmp(c->phase, "run"))
        snprintf(where, sizeof where, " while running kernel %s (%s) for %s", c->kernel, c->variant, opdesc);
    else if (!strcmp(c->phase, "read-back"))
        snprintf(where, sizeof where, " while reading back tensor '%s' (%s)%s%s", c->kernel, c->variant,
                 c->op_index >= 0 ? " of " : "", opdesc);
    else if (!strncmp(c->phase, "engine", 6)) /* a whole-model engine (engine/backend_def.h) */
        snprintf(where, sizeof where, " in the engine's %s%s%s%s",
                 !strcmp(c->phase, "engine-load")        ? "model load"
                     : !strcmp(c->phase, "engine-fetch") ? "output fetch"
                                                         : "run",
                 c->op_index >= 0 ? " at " : "", opdesc,
                 c->op_index >= 0 ? " (the first op whose model prefix dies)" : "");
    else if (!strcmp(c->phase, "setup"))
        snprintf(where, sizeof where, " while loading the OpenCL library and opening the device");
    else if (!strcmp(c->phase, "prepare"))
        snprintf(where, sizeof where, " while preparing the run (uploading parameters, %s)", c->variant);
    else if (!strcmp(c->phase, "close"))
        snprintf(where, sizeof where, " while releasing the OpenCL context after the run");
    else
        snprintf(where, sizeof where, " before the OpenCL child reported anything");
    if (c->stderr_tail[0]) {
        /* the last non-empty line is usually the driver's own last words */
        const char *e = c->stderr_tail + strlen(c->stderr_tail);
        while (e > c->stderr_tail && (e[-1] == '\n' || e[-1] == '\r')) e--;
        const char *s = e;
        while (s > c->stderr_tail && s[-1] != '\n') s--;
        snprintf(tail, sizeof tail, "; the driver printed: \"%.*s\"", (int)(e - s > 300 ? 300 : e - s), s);
    }
    (void)plan;
    snprintf(buf, n, "%s%s; %d op(s) completed, %d layer(s) captured before it are kept%s", what, where, c->ops_done,
             c->hits, tail);
}
