/* --out holds one consistent run (issue 27 point 3): a run writes into a temporary folder beside
 * --out (OUT.tmp-<pid>) and its files replace --out's only when it reached a verdict; a run that
 * fails or is interrupted leaves --out as it was and its partial output as OUT.partial-<time>.
 * Used by cli.c around the differential command and `cldiff run`. */
#ifndef CD_CLI_OUTDIR_H
#define CD_CLI_OUTDIR_H
#include <stdbool.h>
#include "util/error.h"

typedef struct cd_outdir {
    char final[1024]; /* --out as given (trailing slashes dropped) */
    char stage[1100]; /* where the run writes */
    bool inside;      /* the stage is inside --out (its parent is not writable) */
} cd_outdir;

/* Checks --out (a writable folder, or a name that can be created) and makes the stage.
 * CD_E_IO naming the folder and --out otherwise. */
cd_status cd_outdir_begin(cd_outdir *d, const char *out, cd_error *err);
/* The run reached a verdict: its files replace those of the previous run in --out (the reports,
 * dump.h5, repro/; other files in --out are left alone) and the stage goes. */
cd_status cd_outdir_commit(cd_outdir *d, cd_error *err);
/* The run failed (exit_code) or was interrupted: --out is untouched; what the run wrote is kept
 * as OUT.partial-<time> (nothing is kept when it wrote nothing); one note on stderr unless
 * quiet. */
void cd_outdir_abandon(cd_outdir *d, int exit_code, bool quiet);
#endif
