#include "report/atomic.h"
#include <errno.h>
#include <math.h>
#include <string.h>
#include <unistd.h>

cd_status cd_afile_open(cd_afile *a, const char *dir, const char *name, cd_error *err) {
    snprintf(a->path, sizeof a->path, "%s/%s", dir, name);
    snprintf(a->tmp, sizeof a->tmp, "%s.tmp-%d", a->path, (int)getpid());
    a->f = fopen(a->tmp, "wb");
    if (!a->f)
        return cd_err(err, CD_E_IO, "cannot write '%s': %s (choose a writable --out DIR)", a->tmp, strerror(errno));
    return CD_OK;
}

cd_status cd_afile_commit(cd_afile *a, cd_error *err) {
    int bad = ferror(a->f);
    int e = errno;
    if (fclose(a->f) != 0 && !bad) {
        bad = 1;
        e = errno;
    }
    a->f = NULL;
    if (bad) {
        unlink(a->tmp);
        return cd_err(err, CD_E_IO, "writing '%s' failed: %s (disk full?)", a->path, strerror(e));
    }
    if (rename(a->tmp, a->path) != 0) {
        e = errno;
        unlink(a->tmp);
        return cd_err(err, CD_E_IO, "cannot rename '%s' to '%s': %s", a->tmp, a->path, strerror(e));
    }
    return CD_OK;
}

void cd_afile_abort(cd_afile *a) {
    if (a->f) fclose(a->f);
    a->f = NULL;
    unlink(a->tmp);
}

void cd_put_json_str(FILE *f, const char *s) {
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        if (*p == '"' || *p == '\\') {
            fputc('\\', f);
            fputc(*p, f);
        } else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

void cd_put_xml(FILE *f, const char *s) {
    for (const unsigned char *p = (const unsigned char *)(s ? s : ""); *p; p++) {
        switch (*p) {
        case '<': fputs("&lt;", f); break;
        case '>': fputs("&gt;", f); break;
        case '&': fputs("&amp;", f); break;
        case '"': fputs("&quot;", f); break;
        case '\'': fputs("&#39;", f); break;
        default:
            if (*p < 0x20 && *p != '\n' && *p != '\t')
                fprintf(f, "&#x%x;", ' ');
            else
                fputc(*p, f);
        }
    }
}

void cd_put_csv(FILE *f, const char *s) {
    s = s ? s : "";
    if (!strpbrk(s, ",\"\n")) {
        fputs(s, f);
        return;
    }
    fputc('"', f);
    for (; *s; s++) {
        if (*s == '"') fputc('"', f);
        fputc(*s, f);
    }
    fputc('"', f);
}

void cd_put_json_num(FILE *f, double v) {
    if (isnan(v))
        fputs("null", f);
    else if (isinf(v))
        fputs(v > 0 ? "1e308" : "-1e308", f);
    else
        fprintf(f, "%.9g", v);
}
