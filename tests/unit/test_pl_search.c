/* The crash search over model prefixes (backends/paddlelite/pl_search.h) against made-up engines:
 * one that dies from op c on (prefix k runs iff k <= c), for every c of models up to 80 ops and
 * samples of 243 / 642 / 700 ops, with no trace, a trace that names c, and traces that miss by
 * a few ops; the fallbacks of a machine whose Opt cache holds only the prefixes
 * CLDIFF_PL_OPT_PREFIXES marked; the old halving search's prefixes; an engine that is not
 * monotonic (random deaths) must still end, on a boundary it saw. */
#include <criterion/criterion.h>
#include <stdlib.h>
#include <string.h>
#include "backends/paddlelite/pl_search.h"

typedef struct outcome {
    int lo, hi, rounds, runs, mode;
} outcome;

/* Runs the search against an engine dying from op c on; have[k] == 0: prefix k cannot be made
 * (NULL: every prefix can). */
static outcome search(int n, int c, int hint, const char *have) {
    cd_pl_search s;
    cd_pl_search_init(&s, n, hint);
    outcome o = {0};
    int p[2];
    for (int np; (np = cd_pl_search_probes(&s, p)) > 0;) {
        cr_assert(o.rounds < 4 * n + 8, "n=%d c=%d hint=%d: the search does not end", n, c, hint);
        bool made = true, runs[2];
        for (int i = 0; i < np; i++) {
            cr_assert(p[i] > s.lo && p[i] < s.hi, "probe %d outside (%d, %d)", p[i], s.lo, s.hi);
            made &= !have || have[p[i]];
            runs[i] = p[i] <= c;
        }
        if (np == 2) cr_assert_lt(p[0], p[1]);
        if (!made) {
            if (!cd_pl_search_fallback(&s)) break;
            continue;
        }
        o.rounds++;
        o.runs += np;
        cd_pl_search_update(&s, p, runs, np);
    }
    o.lo = s.lo;
    o.hi = s.hi;
    o.mode = s.mode;
    return o;
}

static int ceil_log(int n, int b) {
    int r = 0;
    for (long v = 1; v < n; v *= b) r++;
    return r;
}

static void check_model(int n, int c) {
    /* no trace: thirds, two prefixes a round */
    outcome o = search(n, c, -1, NULL);
    cr_assert(o.lo == c && o.hi == c + 1, "n=%d c=%d no trace: found (%d, %d)", n, c, o.lo, o.hi);
    cr_assert_leq(o.rounds, ceil_log(n, 3) + 1, "n=%d c=%d: %d rounds without a trace", n, c, o.rounds);
    /* a trace that names the op: one round, at most two prefixes */
    o = search(n, c, c, NULL);
    cr_assert(o.lo == c && o.hi == c + 1, "n=%d c=%d exact trace: found (%d, %d)", n, c, o.lo, o.hi);
    cr_assert_eq(o.rounds, n > 1, "n=%d c=%d: %d rounds with the trace naming the op", n, c, o.rounds);
    cr_assert_leq(o.runs, 2);
    /* traces that miss: still found, in a few rounds more than the distance's log */
    const int miss[] = {-1, 1, -2, 2, -3, 5, -9, 17, -40, 100};
    for (size_t i = 0; i < sizeof miss / sizeof *miss; i++) {
        int h = c + miss[i];
        if (h < 0 || h >= n) continue;
        o = search(n, c, h, NULL);
        cr_assert(o.lo == c && o.hi == c + 1, "n=%d c=%d trace %d: found (%d, %d)", n, c, h, o.lo, o.hi);
        int d = abs(miss[i]) + 1;
        cr_assert_leq(o.rounds, 2 + ceil_log(d, 2) + ceil_log(4 * d, 3) + 1, "n=%d c=%d trace %d: %d rounds", n, c, h,
                      o.rounds);
    }
}

Test(pl_search, every_crash_point_small_models) {
    for (int n = 1; n <= 80; n++)
        for (int c = 0; c < n; c++) check_model(n, c);
}

Test(pl_search, large_models) {
    const int ns[] = {243, 642, 700};
    for (size_t i = 0; i < 3; i++)
        for (int c = 0; c < ns[i]; c += (c < 20 || c > ns[i] - 20) ? 1 : 7) check_model(ns[i], c);
    /* picodet's crash (243 ops, op #131): the trace names it, one round; without, 5 rounds of two
     * prefixes instead of 8 runs one after another */
    outcome o = search(243, 131, 131, NULL);
    cr_assert(o.rounds == 1 && o.runs == 2 && o.lo == 131);
    o = search(243, 131, -1, NULL);
    cr_assert(o.lo == 131 && o.rounds <= 6, "%d rounds", o.rounds);
}

/* The old search: one prefix at the middle of (lo, hi). */
static int halves_path(int n, int c, char *want) {
    int k = 0;
    for (int lo = 0, hi = n; hi - lo > 1; k++) {
        int mid = lo + (hi - lo) / 2;
        want[mid] = 1;
        if (mid <= c)
            lo = mid;
        else
            hi = mid;
    }
    return k;
}

Test(pl_search, cache_filled_for_another_machine) {
    /* a machine without Opt has only the prefixes CLDIFF_PL_OPT_PREFIXES put into the cache
     * (HINT at c, THIRDS): a trace that names another op falls back to THIRDS and finds c */
    for (int n = 2; n <= 120; n++)
        for (int c = 0; c < n; c++) {
            char *have = calloc((size_t)n + 1, 1);
            cd_pl_search_mark(n, CD_PL_SEARCH_HINT, c, have);
            cd_pl_search_mark(n, CD_PL_SEARCH_THIRDS, c, have);
            const int hints[] = {-1, c, c - 1, c + 1, c + 6, 0, n - 1};
            for (size_t i = 0; i < sizeof hints / sizeof *hints; i++) {
                if (hints[i] < -1 || hints[i] >= n) continue;
                outcome o = search(n, c, hints[i], have);
                cr_assert(o.lo == c && o.hi == c + 1 && o.mode != CD_PL_SEARCH_NONE,
                          "n=%d c=%d hint %d with the marked cache: (%d, %d)", n, c, hints[i], o.lo, o.hi);
            }
            /* a cache filled by the old cldiff (halves only): found by the last fallback */
            memset(have, 0, (size_t)n + 1);
            halves_path(n, c, have);
            outcome o = search(n, c, c + (c + 1 < n), have);
            cr_assert(o.lo == c && o.hi == c + 1, "n=%d c=%d old cache: (%d, %d)", n, c, o.lo, o.hi);
            free(have);
        }
}

Test(pl_search, halves_is_the_old_search) {
    for (int n = 2; n <= 300; n += 7)
        for (int c = 0; c < n; c++) {
            char *a = calloc((size_t)n + 1, 1), *b = calloc((size_t)n + 1, 1);
            int k = halves_path(n, c, a);
            cd_pl_search_mark(n, CD_PL_SEARCH_HALVES, c, b);
            cr_assert(memcmp(a, b, (size_t)n) == 0, "n=%d c=%d: halves differ from the old bisection", n, c);
            cr_assert_leq(k, ceil_log(n, 2));
            free(a);
            free(b);
        }
}

Test(pl_search, engine_not_monotonic) {
    srand(29);
    for (int t = 0; t < 20000; t++) {
        int n = 2 + rand() % 300, hint = rand() % (n + 1) - 1;
        cd_pl_search s;
        cd_pl_search_init(&s, n, hint);
        char *seen = calloc((size_t)n + 1, 1); /* 1 ran, 2 died */
        seen[0] = 1;
        seen[n] = 2;
        int p[2], rounds = 0;
        for (int np; (np = cd_pl_search_probes(&s, p)) > 0; rounds++) {
            cr_assert_lt(rounds, n + 2, "n=%d: the search does not end", n);
            bool runs[2];
            for (int i = 0; i < np; i++) {
                runs[i] = rand() % 2;
                seen[p[i]] = runs[i] ? 1 : 2;
            }
            cd_pl_search_update(&s, p, runs, np);
        }
        cr_assert(s.hi == s.lo + 1 && seen[s.lo] == 1 && seen[s.hi] == 2, "n=%d: ended on (%d, %d), seen %d/%d", n,
                  s.lo, s.hi, seen[s.lo], seen[s.hi]);
        free(seen);
    }
}
