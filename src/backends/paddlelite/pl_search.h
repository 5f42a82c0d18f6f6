/* The search for the op a whole-model engine dies at, over prefixes of the model
 * (docs/paddle-lite-engines.md "An engine that dies"): prefix k is ops [0, k) run alone; prefix lo
 * runs, prefix hi dies, and the search narrows (lo, hi) until hi = lo + 1: op lo is the first one
 * whose prefix dies. Each round names one or two prefixes, which the engine runs side by side
 * (two Opts and two engine runs at once on two cores). Only the arithmetic lives here: no
 * process is started, so it is unit-tested with made-up crashes (tests/unit/test_pl_search.c).
 *
 * Modes, each the fallback of the one before when a prefix it names cannot be made on a machine
 * without Opt, whose Opt cache was filled for other prefixes (a fallback starts from (0, n);
 * where Opt itself fails on a prefix the engine starts HALVES, which gives up at such a prefix,
 * as cldiff always did):
 *   HINT: the runner's trace named the instruction the whole run died in, which belongs to
 *     original op h: prefixes h and h + 1 first (h runs and h + 1 dies: found in one round);
 *     else prefixes galloping away from h (1 and 2 ops, then 4 and 8, ...) until the boundary
 *     is bracketed, then THIRDS;
 *   THIRDS: the prefixes at a third and two thirds of (lo, hi): log3(n) rounds;
 *   HALVES: one prefix at the middle, the search of cldiff before 2026-11-28 (log2(n) rounds;
 *     kept for Opt caches filled for it). */
#ifndef CD_BACKENDS_PADDLELITE_PL_SEARCH_H
#define CD_BACKENDS_PADDLELITE_PL_SEARCH_H
#include <stdbool.h>

typedef enum {
    CD_PL_SEARCH_HINT,
    CD_PL_SEARCH_THIRDS,
    CD_PL_SEARCH_HALVES,
    CD_PL_SEARCH_NONE /* every mode fell back: the op stays unknown */
} cd_pl_search_mode;

typedef struct cd_pl_search {
    int lo, hi; /* prefix lo runs, prefix hi dies */
    int n;      /* the model's op count */
    int mode;   /* cd_pl_search_mode */
    int start;  /* the mode this pass began in (a fallback takes the next one) */
    int hint;   /* the op the trace named (-1: none) */
    int round;  /* rounds done in this mode */
    int gap;    /* HINT: the next gallop's first distance */
    int dir;    /* HINT: -1 galloping down from h, +1 up, 0 not yet known */
} cd_pl_search;

/* A search over a model of n_ops ops whose whole run died; hint: the op the runner's trace
 * named, or -1 (the search starts in THIRDS). */
void cd_pl_search_init(cd_pl_search *s, int n_ops, int hint);
/* The prefixes (op counts, in (lo, hi), ascending) of the next round: 1 or 2; 0 when the search
 * is over (hi == lo + 1, or mode NONE). */
int cd_pl_search_probes(cd_pl_search *s, int p[2]);
/* What the round found: runs[i] true when prefix p[i] ran, false when it died. A prefix that
 * runs above one that dies (the engine not monotonic) is not taken. */
void cd_pl_search_update(cd_pl_search *s, const int *p, const bool *runs, int np);
/* A prefix of this mode could not be made: the next mode, from (0, n). false: none left. */
bool cd_pl_search_fallback(cd_pl_search *s);
/* Starts again from (0, n) in `mode`. */
void cd_pl_search_restart(cd_pl_search *s, int mode);
/* Marks in want[0..n_ops) every prefix a search in `mode` (HINT with the hint at c) runs when
 * the engine dies at op c (prefix c runs, c + 1 dies): what CLDIFF_PL_OPT_PREFIXES puts into the
 * Opt cache for another machine. */
void cd_pl_search_mark(int n_ops, int mode, int c, char *want);
#endif
