/* Nearest valid word to a mistyped one (see suggest.h). */
#include "util/suggest.h"
#include <string.h>

int cd_edit_distance(const char *a, const char *b) {
    int la = (int)strlen(a), lb = (int)strlen(b);
    if (la > CD_SUGGEST_MAX_LEN) la = CD_SUGGEST_MAX_LEN;
    if (lb > CD_SUGGEST_MAX_LEN) lb = CD_SUGGEST_MAX_LEN;
    /* three rows: i-2 (for the swap), i-1, i */
    int r0[CD_SUGGEST_MAX_LEN + 1], r1[CD_SUGGEST_MAX_LEN + 1], r2[CD_SUGGEST_MAX_LEN + 1];
    int *pp = r0, *prev = r1, *cur = r2;
    for (int j = 0; j <= lb; j++) prev[j] = j;
    for (int i = 1; i <= la; i++) {
        cur[0] = i;
        for (int j = 1; j <= lb; j++) {
            int best = prev[j - 1] + (a[i - 1] != b[j - 1]);
            if (prev[j] + 1 < best) best = prev[j] + 1;
            if (cur[j - 1] + 1 < best) best = cur[j - 1] + 1;
            if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1] && pp[j - 2] + 1 < best)
                best = pp[j - 2] + 1;
            cur[j] = best;
        }
        int *t = pp;
        pp = prev;
        prev = cur;
        cur = t;
    }
    return prev[lb];
}

static const char *undashed(const char *w) {
    while (*w == '-') w++;
    return w;
}

int cd_suggest_max_dist(const char *word) {
    size_t l = strlen(undashed(word));
    return l <= 2 ? 0 : l <= 4 ? 1 : l <= 8 ? 2 : 3;
}

int cd_nearest(const char *word, const char *const *candidates, int n, int max_dist) {
    if (!word) return -1;
    if (max_dist < 0) max_dist = cd_suggest_max_dist(word);
    int best = -1, best_d = max_dist + 1;
    for (int i = 0; i < n; i++) {
        if (!candidates[i]) continue;
        int d = cd_edit_distance(word, candidates[i]);
        if (d < best_d) best = i, best_d = d;
    }
    if (best >= 0 || strlen(undashed(word)) < 3) return best;
    size_t wl = strlen(word);
    int prefix_of = -1;
    for (int i = 0; i < n; i++) {
        if (!candidates[i] || strncmp(candidates[i], word, wl)) continue;
        if (prefix_of >= 0 && strcmp(candidates[prefix_of], candidates[i])) return -1; /* ambiguous */
        prefix_of = i;
    }
    return prefix_of;
}

int cd_nearest_k(const char *word, const char *const *candidates, int n, int max_dist, int *idx, int k) {
    if (!word || k <= 0) return 0;
    if (max_dist < 0) max_dist = cd_suggest_max_dist(word);
    int got = 0, dist[64];
    if (k > 64) k = 64;
    for (int i = 0; i < n; i++) {
        const char *c = candidates[i];
        if (!c || !*c) continue;
        int dup = 0;
        for (int j = 0; j < got && !dup; j++) dup = !strcmp(candidates[idx[j]], c);
        if (dup) continue;
        int d = cd_edit_distance(word, c);
        if (d > max_dist) continue;
        int pos = got;
        while (pos > 0 && dist[pos - 1] > d) pos--;
        if (pos >= k) continue;
        int last = got < k ? got : k - 1;
        for (int j = last; j > pos; j--) idx[j] = idx[j - 1], dist[j] = dist[j - 1];
        idx[pos] = i;
        dist[pos] = d;
        if (got < k) got++;
    }
    return got;
}

const char *cd_suggest(const char *word, const char *const *candidates, int n) {
    int i = cd_nearest(word, candidates, n, -1);
    return i < 0 ? NULL : candidates[i];
}
