/* Small file-system helpers the engines share (docs/design.md §2, util): what a path is, the
 * running executable's folder, a program on $PATH, cldiff's cache folder, a folder chain. */
#ifndef CD_UTIL_FSUTIL_H
#define CD_UTIL_FSUTIL_H
#include <stdbool.h>
#include <stddef.h>

bool cd_fs_is_file(const char *p); /* a regular file (following links) */
bool cd_fs_is_dir(const char *p);
bool cd_fs_is_exec(const char *p); /* a regular file this process may execute */
/* The folder of the running executable ("" when /proc is not there). */
void cd_fs_exe_dir(char *out, size_t n);
/* The parent folder, in place; false at "/" (or a name without a slash). */
bool cd_fs_up(char *p);
/* A program by name on $PATH (or a path with a slash, as is): its path in out. */
bool cd_fs_which(const char *name, char *out, size_t n);
/* cldiff's cache folder: $CLDIFF_CACHE_DIR, else $XDG_CACHE_HOME/cldiff, else ~/.cache/cldiff,
 * else /tmp/cldiff-cache-<uid>. */
void cd_fs_cache_root(char *out, size_t n);
/* mkdir -p with the given mode; true when the folder exists afterwards. */
bool cd_fs_mkdirs(const char *path, unsigned mode);
/* This machine's architecture as the SDKs name it (uname's machine, arm64 as aarch64). */
const char *cd_fs_host_arch(void);
/* Appends printf-style text to the NUL-terminated buf of n bytes (truncated, never overrun):
 * the doctor reports the engines build line by line. */
void cd_appendf(char *buf, size_t n, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
#endif
