#include "engine/backend.h"
#include <string.h>

const char *cd_backend_opt(const cd_backend_opts *bo, const char *backend, const char *key) {
    const char *found = NULL;
    size_t bl = strlen(backend), kl = strlen(key);
    for (int i = 0; bo && i < bo->n_kv; i++) {
        const char *e = bo->kv[i];
        if (!strncmp(e, backend, bl) && e[bl] == ':' && !strncmp(e + bl + 1, key, kl) && e[bl + 1 + kl] == '=')
            found = e + bl + 2 + kl;
    }
    return found;
}
