#include "engine/forcing.h"
#include <errno.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "util/fp16.h"

typedef struct entry {
    bool kept;
    cd_dtype dtype;
    cd_shape shape;
    void *mem;   /* in memory (a forked child reads it without a copy) ... */
    int64_t off; /* ... or at this offset of the scratch file */
    size_t nbytes;
} entry;

struct cd_forcing {
    int fd; /* -1 until the first value that does not fit the memory budget */
    char dir[1024];
    int n;
    entry *e;
    int64_t end; /* file bytes */
    int64_t mem_used, mem_budget;
    /* cd_forcing_new_shared: this struct, e[] and the values live in one shared mapping of
     * map_bytes (values from arena on), so a child forked before the values were put sees them */
    char *arena;
    size_t map_bytes;
};

/* Values stay in memory up to CLDIFF_SCRATCH_MEM bytes (default a quarter of physical memory,
 * at most 4 GiB); beyond it they go to the unlinked scratch file. */
static int64_t mem_budget(void) {
    const char *v = getenv("CLDIFF_SCRATCH_MEM");
    if (v && *v) {
        char *end;
        long long b = strtoll(v, &end, 10);
        return b >= 0 && !*end ? (int64_t)b : -1; /* -1: not a byte count */
    }
    long pages = sysconf(_SC_PHYS_PAGES), psz = sysconf(_SC_PAGESIZE);
    int64_t q = pages > 0 && psz > 0 ? (int64_t)pages * psz / 4 : 0;
    return q < ((int64_t)4 << 30) ? q : ((int64_t)4 << 30);
}

static cd_status open_file(cd_forcing *f, cd_error *err) {
    char path[1100];
    snprintf(path, sizeof path, "%s/.cldiff-forcing-XXXXXX", f->dir);
    f->fd = mkstemp(path);
    if (f->fd < 0)
        return cd_err(err, CD_E_IO,
                      "cannot create the local-check scratch file in '%s': %s (choose a writable "
                      "--out DIR or CLDIFF_SCRATCH_DIR, or --local none)",
                      f->dir, strerror(errno));
    unlink(path);
    return CD_OK;
}

cd_status cd_forcing_new(const char *dir, int n_tensors, cd_forcing **out, cd_error *err) {
    *out = NULL;
    cd_forcing *f = calloc(1, sizeof *f);
    if (!f) return cd_err(err, CD_E_NOMEM, "out of memory");
    f->e = calloc((size_t)(n_tensors > 0 ? n_tensors : 1), sizeof *f->e);
    if (!f->e) {
        free(f);
        return cd_err(err, CD_E_NOMEM, "out of memory");
    }
    f->n = n_tensors;
    f->fd = -1;
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    f->mem_budget = mem_budget();
    if (f->mem_budget < 0) {
        free(f->e);
        free(f);
        return cd_err(err, CD_E_USAGE,
                      "CLDIFF_SCRATCH_MEM='%s' is not a number of bytes (0 keeps the local check's "
                      "record in the scratch file)",
                      getenv("CLDIFF_SCRATCH_MEM"));
    }
    /* no memory budget: the file from the start, so that its folder is checked up front */
    if (f->mem_budget <= 0) {
        cd_status st = open_file(f, err);
        if (st) {
            free(f->e);
            free(f);
            return st;
        }
    }
    *out = f;
    return CD_OK;
}

static size_t align64(size_t n) { return (n + 63) & ~(size_t)63; }

cd_status cd_forcing_new_shared(const char *dir, int n_tensors, cd_forcing **out, cd_error *err) {
    *out = NULL;
    int64_t budget = mem_budget();
    if (budget < 0) return cd_forcing_new(dir, n_tensors, out, err); /* its message */
    size_t head = align64(sizeof(cd_forcing)) + align64((size_t)(n_tensors > 0 ? n_tensors : 1) * sizeof(entry));
    size_t bytes = head + (size_t)budget;
    /* reserved, not committed: pages are taken as values are put (MAP_NORESERVE) */
    void *m = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
    if (m == MAP_FAILED) return cd_err(err, CD_E_NOMEM, "cannot map %zu bytes for the local check's record", bytes);
    cd_forcing *f = m; /* zero-filled */
    f->e = (entry *)((char *)m + align64(sizeof(cd_forcing)));
    f->n = n_tensors;
    f->fd = -1;
    snprintf(f->dir, sizeof f->dir, "%s", dir);
    f->mem_budget = budget;
    f->arena = (char *)m + head;
    f->map_bytes = bytes;
    /* the scratch file now, so that a child forked later holds it too */
    cd_status st = open_file(f, err);
    if (st) {
        munmap(m, bytes);
        return st;
    }
    *out = f;
    return CD_OK;
}

bool cd_forcing_is_shared(const cd_forcing *f) { return f && f->arena; }

cd_status cd_forcing_put(cd_forcing *f, int id, const cd_value *v, cd_error *err) {
    if (id < 0 || id >= f->n) return cd_err(err, CD_E_INTERNAL, "forcing record: tensor id %d out of range", id);
    entry *e = &f->e[id];
    if (!f->arena) free(e->mem); /* in the arena a replaced value's bytes stay unused */
    e->mem = NULL;
    size_t take = f->arena ? align64(v->nbytes ? v->nbytes : 1) : v->nbytes;
    if (f->mem_used + (int64_t)take <= f->mem_budget &&
        (e->mem = f->arena ? f->arena + f->mem_used : malloc(v->nbytes ? v->nbytes : 1))) {
        if (v->nbytes) memcpy(e->mem, v->data, v->nbytes);
        f->mem_used += (int64_t)take;
        e->kept = true;
        e->dtype = v->dtype;
        e->shape = v->shape;
        e->nbytes = v->nbytes;
        return CD_OK;
    }
    if (f->fd < 0) {
        cd_status st = open_file(f, err);
        if (st) return st;
    }
    const char *p = v->data;
    size_t left = v->nbytes;
    int64_t off = f->end;
    while (left) {
        ssize_t w = pwrite(f->fd, p, left, (off_t)off);
        if (w < 0) {
            if (errno == EINTR) continue;
            return cd_err(err, CD_E_IO,
                          "cannot write the local-check scratch file: %s (disk full? free space in "
                          "the --out folder, or run with --local none)",
                          strerror(errno));
        }
        p += w;
        off += w;
        left -= (size_t)w;
    }
    e->kept = true;
    e->dtype = v->dtype;
    e->shape = v->shape;
    e->off = f->end;
    e->nbytes = v->nbytes;
    f->end = off;
    return CD_OK;
}

bool cd_forcing_has(const cd_forcing *f, int id) { return f && id >= 0 && id < f->n && f->e[id].kept; }

const cd_shape *cd_forcing_shape(const cd_forcing *f, int id) { return cd_forcing_has(f, id) ? &f->e[id].shape : NULL; }

int64_t cd_forcing_bytes(const cd_forcing *f) { return f ? f->end + f->mem_used : 0; }

const void *cd_forcing_peek(const cd_forcing *f, int id, cd_dtype dtype) {
    return cd_forcing_has(f, id) && f->e[id].mem && f->e[id].dtype == dtype ? f->e[id].mem : NULL;
}

/* Every half value as float (cd_half_to_float's bits), built once: the fp16 local check widens
 * B's recorded activations per layer. */
static float half_table[65536];
static pthread_once_t half_once = PTHREAD_ONCE_INIT;
static void half_table_init(void) {
    for (uint32_t h = 0; h < 65536; h++) half_table[h] = cd_half_to_float((uint16_t)h);
}

cd_status cd_forcing_get(const cd_forcing *f, int id, cd_dtype want, bool absval, cd_value *out, cd_error *err) {
    memset(out, 0, sizeof *out);
    if (!cd_forcing_has(f, id)) return cd_err(err, CD_E_INTERNAL, "forcing record holds no tensor %d", id);
    const entry *e = &f->e[id];
    if (e->mem && e->dtype == CD_F16 && want == CD_F32) { /* widened straight from memory */
        pthread_once(&half_once, half_table_init);
        cd_value cv = {.dtype = CD_F32, .shape = e->shape};
        cd_status st = cd_value_alloc(&cv, err);
        if (st) return st;
        if (cv.nbytes != 2 * e->nbytes) {
            cd_value_release(&cv);
            return cd_err(err, CD_E_INTERNAL, "forcing record: tensor %d holds %zu bytes, its shape needs %zu", id,
                          e->nbytes, cv.nbytes / 2);
        }
        const uint16_t *h = e->mem;
        float *x = cv.data;
        int64_t n = cd_value_numel(&cv);
        for (int64_t i = 0; i < n; i++) x[i] = absval ? fabsf(half_table[h[i]]) : half_table[h[i]];
        *out = cv;
        return CD_OK;
    }
    cd_value raw = {.dtype = e->dtype, .shape = e->shape};
    cd_status st = cd_value_alloc(&raw, err);
    if (st) return st;
    if (raw.nbytes != e->nbytes) {
        cd_value_release(&raw);
        return cd_err(err, CD_E_INTERNAL, "forcing record: tensor %d holds %zu bytes, its shape needs %zu", id,
                      e->nbytes, raw.nbytes);
    }
    char *p = raw.data;
    size_t left = e->nbytes;
    int64_t off = e->off;
    if (e->mem) {
        if (left) memcpy(p, e->mem, left);
        left = 0;
    }
    while (left) {
        ssize_t r = pread(f->fd, p, left, (off_t)off);
        if (r <= 0) {
            if (r < 0 && errno == EINTR) continue;
            cd_value_release(&raw);
            return cd_err(err, CD_E_IO, "cannot read the local-check scratch file: %s",
                          r < 0 ? strerror(errno) : "short read");
        }
        p += r;
        off += r;
        left -= (size_t)r;
    }
    int64_t n = cd_value_numel(&raw);
    if (want == raw.dtype && !absval) {
        *out = raw;
        return CD_OK;
    }
    if (want == raw.dtype && raw.dtype == CD_F32) {
        float *x = raw.data;
        for (int64_t i = 0; i < n; i++) x[i] = fabsf(x[i]);
        *out = raw;
        return CD_OK;
    }
    cd_value cv = {.dtype = want, .shape = raw.shape};
    if ((st = cd_value_alloc(&cv, err))) {
        cd_value_release(&raw);
        return st;
    }
    if (raw.dtype == CD_F16 && want == CD_F32) {
        const uint16_t *h = raw.data;
        float *x = cv.data;
        for (int64_t i = 0; i < n; i++) {
            float v = cd_half_to_float(h[i]);
            x[i] = absval ? fabsf(v) : v;
        }
    } else if (raw.dtype == CD_F32 && want == CD_F16) {
        const float *x = raw.data;
        uint16_t *h = cv.data;
        for (int64_t i = 0; i < n; i++) h[i] = cd_float_to_half(absval ? fabsf(x[i]) : x[i]);
    } else {
        for (int64_t i = 0; i < n; i++) {
            double v = cd_value_get(&raw, i);
            cd_value_set(&cv, i, absval ? fabs(v) : v);
        }
    }
    cd_value_release(&raw);
    *out = cv;
    return CD_OK;
}

void cd_forcing_free(cd_forcing *f) {
    if (!f) return;
    if (f->fd >= 0) close(f->fd);
    if (f->arena) {
        munmap(f, f->map_bytes);
        return;
    }
    for (int i = 0; f->e && i < f->n; i++) free(f->e[i].mem);
    free(f->e);
    free(f);
}
