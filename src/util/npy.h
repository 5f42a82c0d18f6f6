/* NumPy .npy files (format versions 1.0, 2.0, 3.0), little-endian C-order arrays only.
 * dtypes: '<f4' '<f2' '<f8' '<i2' '<i4' '<i8' '|u1' '|i1' '|b1' ('<u1'/'<i1'/'<b1' and '='
 * spellings are accepted too). Files are untrusted: every length is checked before use and
 * a malformed header is CD_E_MODEL with the byte offset and what to do. */
#ifndef CD_NPY_H
#define CD_NPY_H
#include "util/value.h"

/* Parses a whole .npy image held in memory. On success out holds a freshly malloc'ed copy
 * of the data (out->owned = true; release with cd_value_release). `what` names the source
 * in messages (usually the path). */
cd_status cd_npy_parse(const void *buf, size_t len, const char *what, cd_value *out, cd_error *err);
/* Reads a .npy file. Missing/unreadable file -> CD_E_USAGE; bad contents -> CD_E_MODEL. */
cd_status cd_npy_read(const char *path, cd_value *out, cd_error *err);
/* Writes v as .npy version 1.0 (a rank <= 8 header always fits its 16-bit length).
 * Failures (cannot create, disk full) -> CD_E_IO. */
cd_status cd_npy_write(const char *path, const cd_value *v, cd_error *err);
/* The numpy descr string for a dtype ("<f4"); NULL for none. */
const char *cd_npy_descr(cd_dtype t);
#endif
