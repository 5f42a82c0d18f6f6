/* Report files are written to "<path>.tmp" and renamed when complete. */
#ifndef CD_ATOMIC_H
#define CD_ATOMIC_H
#include <stdio.h>
#include "util/error.h"

typedef struct cd_afile {
    FILE *f;
    char path[1024], tmp[1100];
} cd_afile;

cd_status cd_afile_open(cd_afile *a, const char *dir, const char *name, cd_error *err);
/* Flushes, checks for write errors (disk full), renames; removes the temp file on error. */
cd_status cd_afile_commit(cd_afile *a, cd_error *err);
void cd_afile_abort(cd_afile *a);
/* Writes s escaped for JSON / XML / CSV. */
void cd_put_json_str(FILE *f, const char *s);
void cd_put_xml(FILE *f, const char *s);
void cd_put_csv(FILE *f, const char *s);
/* Numbers that are valid JSON (null for NaN, +-1e308 clamps for infinities). */
void cd_put_json_num(FILE *f, double v);
#endif
