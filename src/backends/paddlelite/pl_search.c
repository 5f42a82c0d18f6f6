/* The crash search over model prefixes (pl_search.h). */
#include "backends/paddlelite/pl_search.h"
#include <string.h>

void cd_pl_search_init(cd_pl_search *s, int n_ops, int hint) {
    memset(s, 0, sizeof *s);
    s->hi = s->n = n_ops;
    s->hint = hint;
    s->mode = s->start = hint >= 0 && hint < n_ops ? CD_PL_SEARCH_HINT : CD_PL_SEARCH_THIRDS;
    s->gap = 1;
}

static int search_add(const cd_pl_search *s, int *p, int np, int k) {
    if (k <= s->lo || k >= s->hi) return np;
    for (int i = 0; i < np; i++)
        if (p[i] == k) return np;
    p[np++] = k;
    return np;
}

int cd_pl_search_probes(cd_pl_search *s, int p[2]) {
    while (s->hi - s->lo > 1 && s->mode != CD_PL_SEARCH_NONE) {
        int np = 0, d = s->hi - s->lo;
        if (s->mode == CD_PL_SEARCH_HINT) {
            if (s->round == 0) {
                np = search_add(s, p, np, s->hint);
                np = search_add(s, p, np, s->hint + 1);
            } else if (s->dir < 0) {
                np = search_add(s, p, np, s->hi - s->gap);
                np = search_add(s, p, np, s->hi - 2 * s->gap);
            } else if (s->dir > 0) {
                np = search_add(s, p, np, s->lo + s->gap);
                np = search_add(s, p, np, s->lo + 2 * s->gap);
            }
            if (!np) {
                s->mode = CD_PL_SEARCH_THIRDS;
                continue;
            }
        } else if (s->mode == CD_PL_SEARCH_THIRDS) {
            np = search_add(s, p, np, s->lo + (d + 1) / 3);
            np = search_add(s, p, np, s->lo + (2 * d + 1) / 3);
        } else
            np = search_add(s, p, np, s->lo + d / 2);
        if (np == 2 && p[0] > p[1]) {
            int t = p[0];
            p[0] = p[1];
            p[1] = t;
        }
        return np;
    }
    return 0;
}

void cd_pl_search_update(cd_pl_search *s, const int *p, const bool *runs, int np) {
    bool any_ran = false, any_died = false;
    for (int i = 0; i < np; i++)
        if (!runs[i] && p[i] < s->hi) s->hi = p[i];
    for (int i = 0; i < np; i++) {
        any_ran |= runs[i];
        any_died |= !runs[i];
        /* a prefix that runs above one that dies (not monotonic): the lower death counts */
        if (runs[i] && p[i] > s->lo && p[i] < s->hi) s->lo = p[i];
    }
    if (s->mode == CD_PL_SEARCH_HINT) {
        if (s->round == 0)
            s->dir = s->hi <= s->hint ? -1 : s->lo > s->hint ? 1 : 0;
        else if ((s->dir < 0 && any_ran) || (s->dir > 0 && any_died))
            s->mode = CD_PL_SEARCH_THIRDS; /* bracketed: split what is left */
        else
            s->gap *= 4;
    }
    s->round++;
}

void cd_pl_search_restart(cd_pl_search *s, int mode) {
    cd_pl_search_init(s, s->n, s->hint);
    s->mode = s->start = mode;
}

bool cd_pl_search_fallback(cd_pl_search *s) {
    cd_pl_search_restart(s, s->start + 1);
    return s->mode != CD_PL_SEARCH_NONE;
}

void cd_pl_search_mark(int n_ops, int mode, int c, char *want) {
    cd_pl_search s;
    cd_pl_search_init(&s, n_ops, mode == CD_PL_SEARCH_HINT ? c : -1);
    cd_pl_search_restart(&s, mode);
    int p[2];
    bool runs[2];
    for (int np; (np = cd_pl_search_probes(&s, p)) > 0;) {
        for (int i = 0; i < np; i++) {
            want[p[i]] = 1;
            runs[i] = p[i] <= c;
        }
        cd_pl_search_update(&s, p, runs, np);
    }
}
