/* "Did you mean ...?": the nearest of a list of valid words to a mistyped one, shared by every
 * command-line parser (options, option values, subcommands) and by --layers (layer names).
 *
 * Distance: optimal string alignment (Damerau-Levenshtein without repeated edits of one
 * substring): inserting, deleting or replacing one character, or swapping two adjacent ones,
 * costs 1, so "--versoin" is 1 from "--version". Case counts. Only the first
 * CD_SUGGEST_MAX_LEN characters of each string are compared (names are short; a long one only
 * needs a rough score). */
#ifndef CD_SUGGEST_H
#define CD_SUGGEST_H

#define CD_SUGGEST_MAX_LEN 128
/* max_dist for "no limit" (cd_nearest_k over layer names). */
#define CD_SUGGEST_ANY 1000000

int cd_edit_distance(const char *a, const char *b);

/* The default closeness limit for a word, counted without its leading dashes: 0 for 1-2
 * characters (too short to guess from), 1 for 3-4, 2 for 5-8, 3 beyond. */
int cd_suggest_max_dist(const char *word);

/* Index of the candidate nearest to word, or -1 when none is within max_dist (max_dist < 0:
 * cd_suggest_max_dist(word)). Ties go to the earlier candidate; NULL candidates are skipped.
 * When nothing is within the limit, a word of 3 or more characters (dashes not counted) that
 * begins exactly one candidate picks it ("--calib" -> "--calibrate"). */
int cd_nearest(const char *word, const char *const *candidates, int n, int max_dist);

/* Up to k candidate indices nearest to word, within max_dist (< 0: cd_suggest_max_dist), into
 * idx[] sorted by distance, ties in candidate order; a string listed twice counts once.
 * Returns how many were written. */
int cd_nearest_k(const char *word, const char *const *candidates, int n, int max_dist, int *idx, int k);

/* cd_nearest's pick itself, or NULL. */
const char *cd_suggest(const char *word, const char *const *candidates, int n);
#endif
