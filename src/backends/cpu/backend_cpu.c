/* The CPU backend: one host cd_value per tensor, parameters borrowed from the plan,
 * op kernels from the registry (engine/ops.h), threads via OpenMP. */
#include "engine/backend.h"
#include "backends/cpu/ops_int8.h"
#include "engine/backend_def.h"
#include "engine/executor.h"
#include <omp.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>

typedef struct {
    const cd_plan *plan;
    cd_value *vals;   /* per tensor id */
    cd_value *expect; /* per tensor id: dtype/shape the kernel must produce (no data) */
    /* Set once a dynamic op (nms...) produced a smaller output than planned: from then on
     * shapes are re-inferred from the runtime values instead of taken from the plan. */
    bool reinfer;
    /* CLDIFF_POISON_OUTPUTS=1 (tests): buffers of CD_OPF_WRITES_ALL ops are filled with 0xff
     * bytes instead of left as they are, so an element the kernel does not write shows. */
    bool poison;
    /* Activation buffers are recycled (pool_*): a released tensor's block goes back to a
     * free list instead of to malloc, and prepare fills the list by replaying the run's
     * allocations and releases on the planned shapes, touching every page. Without it each
     * small op paid for fresh heap pages (page faults and kernel zeroing inside the timed
     * op, ~25% of a 5 MMAC classifier's op time). pool_ptr[id] is the pool block tensor id
     * holds (NULL when its data came from elsewhere). */
    void **pool_ptr;
    size_t *pool_cap;
    void **op_state; /* per op: its prepare hook's result (cd_op_def.prepare) or NULL */
    /* per op, int8 mode: the int8 kernel's prepared state (cd_cpu_int8_prepare), NULL for ops it
     * does not claim or could not prepare (the run then asks cd_cpu_int8_claims itself) */
    void **i8_state;
    void *scratch; /* the int8 kernels' scratch (cd_op_ctx.scratch): the largest need, touched */
    size_t scratch_bytes;
    struct cpu_block {
        void *p;
        size_t cap;
    } * free_blocks;
    int n_free, cap_free;
    /* The pool's planned part (pool_plan): one block, `arena`, in which every activation of the
     * plan has its own offset (ar_off[id], ar_size[id] bytes; ar_size 0: not placed), tensors
     * whose lifetimes overlap at disjoint offsets: the peak of live activations instead of the
     * free list's best-fit blocks, never split (1.1-1.7x that peak on the zoo models: every byte
     * more is a page fault of the cold run). A tensor takes its place only when no live tensor
     * holds an overlapping range (ar_live: the ids holding arena ranges now), so a run in
     * another order (a local pass, re-inferred shapes) stays correct: it then takes a block of
     * the free list. */
    char *arena, *arena_raw;
    size_t arena_bytes;
    size_t *ar_off, *ar_size;
    int *ar_live, n_live;
    int outside; /* allocations of the last run that did not take their planned place */
    /* per op: elapsed_us of its last run (the repeat/timing report of cpu_run reads it) */
    double *op_us;
    /* false: run_op does not read the clock (cpu_run's warm runs without cpu:timing=1, whose
     * per-op times nobody reads); elapsed_us and op_us are then 0 */
    bool clock_ops;
    /* per op, resolved at prepare so that run_op compares no strings (names, op types, the int8
     * claim were ~5% of a small model's warm run): its flags (OPK_*) and the report's kernel
     * name ("<type>:fp32") */
    unsigned char *op_kind;
    char (*op_kernel)[sizeof(((cd_op_report *)0)->kernel)];
    /* per op: us its prepare hook took at the last prepare; and the pool's fill (timing report) */
    double *prep_us, pool_us;
    /* prepare ran for this plan and its state is kept: a repeated execution of the same plan
     * (cpu:repeat=N) reuses the parsed attributes, packed filters and the filled pool */
    bool prepared;
} cpu_impl;

/* Large blocks from the heap, and freed ones kept there (glibc): by default a block of 128 KiB
 * or more is its own mmap, returned to the kernel on free, so every such block written later
 * (a packed filter, a pool block, a kernel's scratch) is fresh pages, each a page fault and a
 * zeroing by the kernel inside the cold run. The model loader reads the .nb into one buffer
 * (3.6 MB for mobilenet_v3_large) and frees it just before the run: kept in the heap, its
 * pages, already faulted in, take the filters and activations of run 1. Set before main(), so
 * the loader's blocks are heap blocks too. Blocks over 32 MiB (glibc's ceiling for the
 * threshold) are still mmaps. docs/cpu-backend.md "Timing". */
/* Under AddressSanitizer the planned pool's ranges are poisoned while no tensor holds them, so a
 * kernel that writes past its output (into a neighbour's range) is still caught, as it was
 * past a block of its own before the pool was planned. */
#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#define ARENA_HIDE(p, n) ASAN_POISON_MEMORY_REGION((p), (n))
#define ARENA_SHOW(p, n) ASAN_UNPOISON_MEMORY_REGION((p), (n))
#else
#define ARENA_HIDE(p, n) ((void)(p), (void)(n))
#define ARENA_SHOW(p, n) ((void)(p), (void)(n))
#endif

#if defined(__GLIBC__)
#include <malloc.h>
__attribute__((constructor)) static void cpu_malloc_keep(void) {
    mallopt(M_MMAP_THRESHOLD, 32 << 20);
    mallopt(M_TRIM_THRESHOLD, 256 << 20);
}
#endif

/* Smallest free block that holds nb bytes (best fit), index into free_blocks, or -1.
 * Measured on the shared models' peak RSS: limiting the fit (at most 2x or 1.25x the size
 * asked) made more blocks, not fewer (pyramidbox 139 -> 142 -> 214 MiB, det_slim 80 -> 90 MiB).
 * Blocks are never split or merged, so the pool holds ~30% more than malloc's peak did
 * (pyramidbox 107 -> 139 MiB, det_slim 64 -> 80 MiB); in exchange no op pays page faults. */
static int pool_find(const cpu_impl *im, size_t nb) {
    int best = -1;
    for (int k = 0; k < im->n_free; k++) {
        size_t c = im->free_blocks[k].cap;
        if (c >= nb && (best < 0 || c < im->free_blocks[best].cap)) best = k;
    }
    return best;
}

static void pool_put(cpu_impl *im, void *p, size_t cap) {
    if (im->n_free == im->cap_free) {
        int nc = im->cap_free ? 2 * im->cap_free : 64;
        struct cpu_block *nb = realloc(im->free_blocks, (size_t)nc * sizeof *nb);
        if (!nb) {
            free(p);
            return;
        } /* the block is simply not recycled */
        im->free_blocks = nb;
        im->cap_free = nc;
    }
    im->free_blocks[im->n_free++] = (struct cpu_block){p, cap};
}

/* A block of at least nb bytes: recycled or new; *cap receives its size. New blocks have
 * their pages brought in before any op is timed. */
static void *pool_take(cpu_impl *im, size_t nb, size_t *cap) {
    int k = pool_find(im, nb);
    if (k >= 0) {
        void *p = im->free_blocks[k].p;
        *cap = im->free_blocks[k].cap;
        im->free_blocks[k] = im->free_blocks[--im->n_free];
        return p;
    }
    size_t c = nb ? nb : 1;
    char *p = malloc(c);
    /* one write per page brings its pages in (a fresh page is zeroed by the kernel anyway; a
     * block's contents are never read before a kernel or pool_alloc writes them) */
    if (p) {
        for (size_t o = 0; o < c; o += 4096) ((volatile char *)p)[o] = 0;
        ((volatile char *)p)[c - 1] = 0;
    }
    *cap = c;
    return p;
}

/* Tensor id's value back to the pool (or freed, when its data did not come from it). */
static void pool_release(cpu_impl *im, int id) {
    cd_value *v = &im->vals[id];
    if (im->pool_ptr && v->owned && v->data && v->data == im->pool_ptr[id] && im->pool_cap[id] == SIZE_MAX) {
        for (int k = 0; k < im->n_live; k++) /* its planned range is free again */
            if (im->ar_live[k] == id) {
                im->ar_live[k] = im->ar_live[--im->n_live];
                break;
            }
        ARENA_HIDE(v->data, im->ar_size[id]);
        v->data = NULL;
        v->nbytes = 0;
        v->owned = false;
    } else if (im->pool_ptr && v->owned && v->data && v->data == im->pool_ptr[id]) {
        pool_put(im, v->data, im->pool_cap[id]);
        v->data = NULL;
        v->nbytes = 0;
        v->owned = false;
    } else {
        cd_value_release(v);
    }
    if (im->pool_ptr) im->pool_ptr[id] = NULL;
}

/* cd_value_alloc from the pool: nbytes for v's dtype and shape, zeroed unless the kernel
 * writes every element (CD_OPF_WRITES_ALL). */
static cd_status pool_alloc(cpu_impl *im, int id, bool zero, cd_error *err) {
    cd_value *v = &im->vals[id];
    int64_t n = cd_value_numel(v);
    size_t es = cd_dtype_size(v->dtype);
    if (n < 0 || es == 0 || (uint64_t)n > (uint64_t)SIZE_MAX / es) return cd_value_alloc(v, err);
    size_t nb = (size_t)n * es, cap = 0;
    void *p = NULL;
    if (im->arena && nb > 0 && nb <= im->ar_size[id]) { /* its planned place, when free */
        const size_t lo = im->ar_off[id], hi = lo + im->ar_size[id];
        bool busy = false;
        for (int k = 0; k < im->n_live && !busy; k++) {
            const int o = im->ar_live[k];
            busy = im->ar_off[o] < hi && lo < im->ar_off[o] + im->ar_size[o];
        }
        if (!busy) {
            p = im->arena + lo;
            ARENA_SHOW(p, nb);
            cap = SIZE_MAX; /* marks an arena range for pool_release */
            im->ar_live[im->n_live++] = id;
        }
    }
    if (!p) {
        if (im->arena && nb > 0) im->outside++; /* (empty tensors: XShape) */
        p = pool_take(im, nb, &cap);
    }
    if (!p) return cd_err(err, CD_E_NOMEM, "out of memory for a %zu-byte tensor", nb);
    /* zeroed like calloc: a kernel that writes only part of its output (nms padding)
     * leaves zeros, never bytes of an earlier tensor */
    if (zero)
        memset(p, 0, nb);
    else if (im->poison)
        memset(p, 0xff, nb); /* NaN / -1 in every element a kernel forgets */
    if (v->owned) free(v->data);
    v->data = p;
    v->nbytes = nb;
    v->owned = true;
    im->pool_ptr[id] = p;
    im->pool_cap[id] = cap;
    return CD_OK;
}

static void pool_free_all(cpu_impl *im) {
    for (int k = 0; k < im->n_free; k++) free(im->free_blocks[k].p);
    im->n_free = 0;
    if (im->arena) ARENA_SHOW(im->arena, im->arena_bytes);
    free(im->arena_raw);
    free(im->ar_off);
    free(im->ar_size);
    free(im->ar_live);
    im->arena = im->arena_raw = NULL;
    im->arena_bytes = 0;
    im->ar_off = im->ar_size = NULL;
    im->ar_live = NULL;
    im->n_live = 0;
}

/* Fill the pool the way the run will use it: each op's outputs taken at their planned
 * sizes, then released after their last reader, in cd_execute's order. Only a warm-up:
 * a run that asks for something else (re-inferred shapes) still gets fresh blocks. */
static void pool_rehearse(cpu_impl *im) {
    const cd_plan *plan = im->plan;
    const cd_graph *g = plan->g;
    void **held = calloc((size_t)g->n_tensors, sizeof *held);
    size_t *cap = calloc((size_t)g->n_tensors, sizeof *cap);
    if (!held || !cap) {
        free(held);
        free(cap);
        return;
    }
    for (int i = 0; i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        /* feed ops too: cpu_set_input takes the model inputs from the pool */
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0 || held[id] || g->tensors[id].persistable) continue;
                int64_t n = cd_value_numel(&plan->meta[id]);
                size_t es = cd_dtype_size(plan->meta[id].dtype);
                if (n < 0 || es == 0 || (uint64_t)n > (uint64_t)SIZE_MAX / es) continue;
                held[id] = pool_take(im, (size_t)n * es, &cap[id]);
            }
        for (int s = 0; s < op->n_in + op->n_out; s++) {
            const bool in = s < op->n_in;
            const cd_slot *sl = in ? &op->in[s] : &op->out[s - op->n_in];
            for (int k = 0; k < sl->n; k++) {
                int id = sl->ids[k];
                if (id < 0 || !held[id] || plan->last_use[id] != (in ? i : -1)) continue;
                pool_put(im, held[id], cap[id]);
                held[id] = NULL;
            }
        }
    }
    for (int t = 0; t < g->n_tensors; t++)
        if (held[t]) pool_put(im, held[t], cap[t]);
    free(held);
    free(cap);
}

/* The pages of [p, p + n) brought in before any op is timed. Where the block reuses heap pages
 * that are there already (the model loader's freed buffer: mallopt above) nothing is to be done;
 * the runs of pages not there (mincore) are brought in by one system call each where the
 * kernel has MADV_POPULATE_WRITE (5.14), without a trap per page (a 256 KiB block: 75 against
 * 90-130 us touched page by page on this VM, docs/benchmarks.md "Fourth round: cold runs"),
 * else by one write per page (as before, and always for the partial pages at both ends). A
 * fresh page is zeroed by the kernel anyway; the contents are never read before a kernel or
 * pool_alloc writes them. */
static void pages_in(char *p, size_t n) {
    if (!n) return;
    ((volatile char *)p)[0] = 0;
    ((volatile char *)p)[n - 1] = 0;
    const uintptr_t pg = 4096, lo = ((uintptr_t)p + pg - 1) & ~(pg - 1), hi = ((uintptr_t)p + n) & ~(pg - 1);
    if (hi <= lo) return;
    const size_t np = (hi - lo) / pg;
    unsigned char *in = malloc(np); /* per page: bit 0 set where it is there (mincore) */
    if (in && mincore((void *)lo, hi - lo, in) != 0) memset(in, 0, np);
    for (size_t k = 0; k < np;) {
        if (in && (in[k] & 1)) {
            k++;
            continue;
        }
        size_t e = k + 1;
        while (e < np && !(in && (in[e] & 1))) e++;
        char *a = (char *)lo + k * pg;
        bool done = false;
#if defined(MADV_POPULATE_WRITE)
        done = e - k > 1 && madvise(a, (e - k) * pg, MADV_POPULATE_WRITE) == 0;
#endif
        for (size_t o = 0; !done && o < (e - k) * pg; o += pg) ((volatile char *)a)[o] = 0;
        k = e;
    }
    free(in);
}

/* One activation for pool_plan: tensor id, live from op b to op d (both inclusive), sz bytes */
typedef struct {
    int id, b, d;
    size_t sz;
} ar_item;

/* a goes before b: larger first, then the earlier born, then the lower id */
static bool ar_before(const ar_item *a, const ar_item *b) {
    if (a->sz != b->sz) return a->sz > b->sz;
    return a->b != b->b ? a->b < b->b : a->id < b->id;
}

/* A placed tensor for pool_plan: its byte range [lo, hi) and lifetime, ops b..d */
typedef struct {
    size_t lo, hi;
    int b, d;
} ar_range;

/* The pool's planned part (cpu_impl.arena): each activation's lifetime in cd_execute's order
 * (taken when its op runs, the model inputs before op 0; released after its last reader, one
 * nobody reads right after its op, the model outputs never), then offsets greedily, the largest
 * tensor first, each at the lowest offset clear of the tensors placed so far whose lifetimes
 * meet its own; one block of the resulting size, every page written once (its pages exist
 * before any op is timed). false when it could not (then pool_rehearse fills the free list). */
static bool pool_plan(cpu_impl *im) {
    const cd_plan *plan = im->plan;
    const cd_graph *g = plan->g;
    const int nt = g->n_tensors;
    ar_item *it = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *it);
    int *born = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *born);
    ar_range *near = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *near);
    im->ar_off = calloc((size_t)(nt > 0 ? nt : 1), sizeof *im->ar_off);
    im->ar_size = calloc((size_t)(nt > 0 ? nt : 1), sizeof *im->ar_size);
    im->ar_live = malloc((size_t)(nt > 0 ? nt : 1) * sizeof *im->ar_live);
    bool ok = it && born && near && im->ar_off && im->ar_size && im->ar_live;
    int n = 0;
    for (int t = 0; ok && t < nt; t++) born[t] = -1;
    for (int i = 0; ok && i < g->n_ops; i++) {
        const cd_op *op = &g->ops[i];
        const bool feed = !strcmp(op->type, "feed");
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id < 0 || born[id] >= 0 || g->tensors[id].persistable) continue;
                int64_t ne = cd_value_numel(&plan->meta[id]);
                size_t es = cd_dtype_size(plan->meta[id].dtype);
                if (ne <= 0 || es == 0 || (uint64_t)ne > ((uint64_t)SIZE_MAX >> 2) / es) continue;
                born[id] = feed ? 0 : i;
                const int lu = plan->last_use[id];
                it[n++] = (ar_item){
                    .id = id, .b = born[id], .d = lu >= i ? lu : i, .sz = ((size_t)ne * es + 63) & ~(size_t)63};
            }
    }
    size_t total = 0;
    for (int k = 1; ok && k < n; k++) { /* insertion sort: no allocation (glibc's qsort takes one) */
        const ar_item x = it[k];
        int j = k;
        for (; j > 0 && ar_before(&x, &it[j - 1]); j--) it[j] = it[j - 1];
        it[j] = x;
    }
    /* placed: the tensors placed so far in order of offset (an insertion each) */
    ar_range *placed = near;
    for (int k = 0; ok && k < n; k++) {
        size_t off = 0;
        int at = 0;
        for (int j = 0; j < k; j++) {
            const ar_range *r = &placed[j];
            if (r->b > it[k].d || it[k].b > r->d) continue; /* never live at the same time */
            if (off + it[k].sz <= r->lo) break;
            if (r->hi > off) off = r->hi;
        }
        while (at < k && placed[at].lo <= off) at++;
        memmove(placed + at + 1, placed + at, (size_t)(k - at) * sizeof *placed);
        placed[at] = (ar_range){.lo = off, .hi = off + it[k].sz, .b = it[k].b, .d = it[k].d};
        im->ar_off[it[k].id] = off;
        im->ar_size[it[k].id] = it[k].sz;
        if (off + it[k].sz > total) total = off + it[k].sz;
    }
    free(it);
    free(born);
    free(near);
    if (ok && total > 0 && (im->arena_raw = malloc(total + 64))) {
        im->arena = (char *)(((uintptr_t)im->arena_raw + 63) & ~(uintptr_t)63);
        im->arena_bytes = total;
        pages_in(im->arena, total);
        ARENA_HIDE(im->arena, total);
        im->n_live = 0;
        return true;
    }
    free(im->ar_off);
    free(im->ar_size);
    free(im->ar_live);
    im->ar_off = im->ar_size = NULL;
    im->ar_live = NULL;
    return false;
}

static long minflt(void) {
    struct rusage u;
    return getrusage(RUSAGE_SELF, &u) ? 0 : u.ru_minflt;
}

/* CPU time of the whole process (all threads), us: on a loaded machine the cold run's wall time
 * includes waits for a core, its CPU time does not */
static double cpu_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

static double now_us(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec * 1e6 + (double)ts.tv_nsec / 1e3;
}

enum {
    OPK_FEED = 1, /* a feed op: its output is the model input set_input placed */
    OPK_INT8 = 2, /* int8 mode and the int8 kernel claims the op (cd_cpu_int8_claims on the plan) */
    OPK_HOST = 4, /* CD_OPF_HOST: the report says "host" */
};

static void free_op_state(cpu_impl *im) {
    if (im->plan)
        for (int i = 0; i < im->plan->g->n_ops; i++) {
            if (im->op_state) free(im->op_state[i]);
            if (im->i8_state) free(im->i8_state[i]);
        }
    free(im->op_state);
    free(im->i8_state);
    free(im->scratch);
    free(im->op_kind);
    free(im->op_kernel);
    im->op_kind = NULL;
    im->op_kernel = NULL;
    im->op_state = NULL;
    im->i8_state = NULL;
    im->scratch = NULL;
    im->scratch_bytes = 0;
}

/* The context op i of the plan runs (or prepares) in, on `threads` threads. */
static cd_op_ctx plan_op_ctx(const cd_plan *plan, int i, int threads, cd_error *e) {
    return (cd_op_ctx){.g = plan->g,
                       .op = &plan->g->ops[i],
                       .op_index = i,
                       .vals = plan->meta,
                       .prec = plan->prec,
                       .threads = threads,
                       .err = e};
}

/* Op i's prepare hook (cd_op_def.prepare): its state, or none when it fails (the run then
 * parses again and reports the failure there). */
static void prepare_op(cpu_impl *im, int i, int threads) {
    const cd_plan *plan = im->plan;
    cd_error e = {0};
    cd_op_ctx c = plan_op_ctx(plan, i, threads, &e);
    void *st = NULL;
    const double t0 = now_us();
    if (plan->defs[i]->prepare(&c, &st) == CD_OK)
        im->op_state[i] = st;
    else
        free(st);
    im->prep_us[i] = now_us() - t0;
}

static cd_status cpu_prepare(cd_backend *b, const cd_plan *plan, cd_error *err) {
    cpu_impl *im = b->impl;
    im->outside = 0;
    if (im->prepared && im->plan == plan && !im->reinfer) {
        /* the same plan again (a warm repeat): activations back to the pool, state kept */
        for (int t = 0; t < plan->g->n_tensors; t++)
            if (!plan->g->tensors[t].persistable) pool_release(im, t);
        return CD_OK;
    }
    im->prepared = false;
    if (im->vals) {
        for (int t = 0; t < im->plan->g->n_tensors; t++) pool_release(im, t);
        free(im->vals);
        im->vals = NULL;
    }
    pool_free_all(im);
    free_op_state(im);
    free(im->expect);
    free(im->pool_ptr);
    free(im->pool_cap);
    free(im->op_us);
    free(im->prep_us);
    im->plan = plan;
    im->reinfer = false;
    im->vals = cd_calloc((size_t)plan->g->n_tensors, sizeof *im->vals, err);
    im->expect = cd_calloc((size_t)plan->g->n_tensors, sizeof *im->expect, err);
    im->pool_ptr = cd_calloc((size_t)plan->g->n_tensors, sizeof *im->pool_ptr, err);
    im->pool_cap = cd_calloc((size_t)plan->g->n_tensors, sizeof *im->pool_cap, err);
    im->op_state = cd_calloc((size_t)plan->g->n_ops > 0 ? (size_t)plan->g->n_ops : 1, sizeof *im->op_state, err);
    im->i8_state = cd_calloc((size_t)plan->g->n_ops > 0 ? (size_t)plan->g->n_ops : 1, sizeof *im->i8_state, err);
    im->op_us = cd_calloc((size_t)plan->g->n_ops > 0 ? (size_t)plan->g->n_ops : 1, sizeof *im->op_us, err);
    im->prep_us = cd_calloc((size_t)plan->g->n_ops > 0 ? (size_t)plan->g->n_ops : 1, sizeof *im->prep_us, err);
    im->op_kind = cd_calloc((size_t)plan->g->n_ops > 0 ? (size_t)plan->g->n_ops : 1, sizeof *im->op_kind, err);
    im->op_kernel = cd_calloc((size_t)plan->g->n_ops > 0 ? (size_t)plan->g->n_ops : 1, sizeof *im->op_kernel, err);
    if (!im->vals || !im->expect || !im->pool_ptr || !im->pool_cap || !im->op_state || !im->i8_state || !im->op_us ||
        !im->prep_us || !im->op_kind || !im->op_kernel)
        return CD_E_NOMEM;
    im->clock_ops = true;
    /* Attribute parsing and validation of the ops that can do it ahead, outside their timed
     * run, and their filters packed. A failure leaves no state: the run parses again and
     * reports it there. The int8 kernels' states first, one by one (they size the shared
     * scratch); then the prepare hooks, one by one after the pool's fill, or with
     * cpu:prepare_threads=N on N threads while the master fills the pool (each hook writes
     * only its own op's state: a hook must not touch anything shared). */
    const int nth = b->opts.threads > 0 ? b->opts.threads : 1;
    const char *pt = cd_backend_opt(&b->opts, "cpu", "prepare_threads"); /* checked in cpu_apply_opts */
    /* Default 1 (one by one): an interleaved A/B at 2 threads (docs/benchmarks.md "Fourth round:
     * cold runs") was faster one by one on every model measured; a second thread's packs also
     * come from its own glibc arena, in fresh pages, where the master's heap holds the loader's
     * freed buffer (mobilenet_v3_large: 644 page faults in prepare against 177). */
    const int pth = pt && atoi(pt) > 0 ? (atoi(pt) < nth ? atoi(pt) : nth) : 1;
    int *todo = malloc((size_t)(plan->g->n_ops > 0 ? plan->g->n_ops : 1) * sizeof *todo), n_todo = 0;
    for (int i = 0; i < plan->g->n_ops; i++) {
        const cd_op_def *def = plan->defs[i];
        cd_error e = {0};
        cd_op_ctx c = plan_op_ctx(plan, i, nth, &e);
        const cd_op *op = &plan->g->ops[i];
        snprintf(im->op_kernel[i], sizeof im->op_kernel[i], "%s:%s", op->type,
                 plan->prec == CD_PREC_FP16 ? "fp16" : "fp32");
        im->op_kind[i] = (unsigned char)((!strcmp(op->type, "feed") ? OPK_FEED : 0) |
                                         (def && (def->flags & CD_OPF_HOST) ? OPK_HOST : 0));
        if (def && b->opts.int8_arm && cd_cpu_int8_claims(&c)) { /* the int8 kernel's own state */
            im->op_kind[i] |= OPK_INT8;
            void *st = NULL;
            if (cd_cpu_int8_prepare(&c, &st) == CD_OK) im->i8_state[i] = st;
            size_t need = cd_cpu_int8_scratch(st);
            if (need > im->scratch_bytes) {
                free(im->scratch);
                im->scratch_bytes = 0;
                if ((im->scratch = malloc(need))) {
                    memset(im->scratch, 0, need); /* its pages exist before any op is timed */
                    im->scratch_bytes = need;
                }
            }
            continue;
        }
        if (def && def->prepare) {
            if (todo)
                todo[n_todo++] = i;
            else
                prepare_op(im, i, nth);
        }
    }
    if (pth > 1 && n_todo > 1) {
#pragma omp parallel num_threads(pth)
        {
#pragma omp master
            {
                const double t0 = now_us();
                if (!pool_plan(im)) pool_rehearse(im);
                im->pool_us = now_us() - t0;
            }
#pragma omp for schedule(dynamic, 1) nowait
            for (int k = 0; k < n_todo; k++) prepare_op(im, todo[k], nth);
        }
    } else {
        const double t0 = now_us();
        if (!pool_plan(im)) pool_rehearse(im);
        im->pool_us = now_us() - t0;
        for (int k = 0; k < n_todo; k++) prepare_op(im, todo[k], nth);
    }
    free(todo);
    for (int t = 0; t < plan->g->n_tensors; t++) {
        if (!plan->g->tensors[t].persistable) continue;
        im->vals[t] = plan->meta[t];
        im->vals[t].owned = false; /* the plan owns parameter memory */
    }
    im->prepared = true;
    return CD_OK;
}

static cd_status cpu_set_input(cd_backend *b, int id, const cd_value *host, cd_error *err) {
    cpu_impl *im = b->impl;
    if (!im->plan) return cd_err(err, CD_E_INTERNAL, "cpu backend: set_input before prepare");
    const cd_value *m = &im->plan->meta[id];
    char a[160], c[160];
    if (host->dtype != m->dtype || !cd_shape_eq(&host->shape, &m->shape))
        return cd_err(err, CD_E_INTERNAL, "cpu backend: input '%s' given as %s %s but the plan expects %s %s",
                      im->plan->g->tensors[id].name, cd_dtype_name(host->dtype),
                      cd_shape_str(&host->shape, a, sizeof a), cd_dtype_name(m->dtype),
                      cd_shape_str(&m->shape, c, sizeof c));
    cd_value *v = &im->vals[id];
    pool_release(im, id);
    v->dtype = m->dtype;
    v->shape = m->shape;
    /* a pool block (prepare's rehearsal took one for it, its pages already there), every byte
     * written by the copy */
    cd_status st = im->pool_ptr ? pool_alloc(im, id, false, err) : cd_value_alloc(v, err);
    if (st) return st;
    if (v->nbytes) memcpy(v->data, host->data, v->nbytes);
    return CD_OK;
}

/* Identity op without a kernel: the output is a copy of the first connected input. */
static cd_status copy_identity(cd_op_ctx *c, const cd_op *op) {
    cd_value *src = NULL, *dst = NULL;
    for (int s = 0; s < op->n_in && !src; s++)
        for (int k = 0; k < op->in[s].n && !src; k++)
            if (op->in[s].ids[k] >= 0) src = &c->vals[op->in[s].ids[k]];
    for (int s = 0; s < op->n_out && !dst; s++)
        for (int k = 0; k < op->out[s].n && !dst; k++)
            if (op->out[s].ids[k] >= 0) dst = &c->vals[op->out[s].ids[k]];
    if (!src || !dst) return CD_OK;
    int64_t n = cd_value_numel(dst);
    if (cd_value_numel(src) != n)
        return cd_op_fail(c, CD_E_INTERNAL, "identity op: input has %lld elements, output %lld",
                          (long long)cd_value_numel(src), (long long)n);
    if (src->dtype == dst->dtype)
        memcpy(dst->data, src->data, dst->nbytes);
    else
        for (int64_t i = 0; i < n; i++) cd_value_set(dst, i, cd_value_get(src, i));
    return CD_OK;
}

static cd_status cpu_run_op(cd_backend *b, int i, cd_op_report *rep, cd_error *err) {
    cpu_impl *im = b->impl;
    const cd_plan *plan = im->plan;
    const cd_graph *g = plan->g;
    const cd_op *op = &g->ops[i];
    const cd_op_def *def = plan->defs[i];
    cd_op_ctx c = {.g = g,
                   .op = op,
                   .op_index = i,
                   .vals = im->vals,
                   .prec = plan->prec,
                   .threads = b->opts.threads > 0 ? b->opts.threads : 1,
                   .err = err,
                   .state = im->reinfer || !im->op_state ? NULL : im->op_state[i],
                   .no_quant = b->opts.no_quant,
                   .scratch = im->scratch,
                   .scratch_bytes = im->scratch_bytes};
    const unsigned kind = im->op_kind[i];
    /* each field set, not a memset of the whole report (its 344 bytes were a `rep stos`, a quarter
     * of this function's own time on transformer_pre_ln); the callers zero it before anyway */
    rep->elapsed_us = 0;
    rep->kernel_us = -1;
    memset(rep->where, 0, sizeof rep->where);
    memcpy(rep->where, kind & OPK_HOST ? "host" : "cpu", kind & OPK_HOST ? 5 : 4);
    rep->note[0] = 0;
    memcpy(rep->kernel, im->op_kernel[i], sizeof rep->kernel);
    const bool clk = im->clock_ops;
    double t0 = clk ? now_us() : 0;
    if (kind & OPK_FEED) {
        /* the executor already placed the model input in the feed's output */
        for (int s = 0; s < op->n_out; s++)
            for (int k = 0; k < op->out[s].n; k++) {
                int id = op->out[s].ids[k];
                if (id >= 0 && !im->vals[id].data)
                    return cd_op_fail(&c, CD_E_INTERNAL, "model input '%s' was not set before the run",
                                      g->tensors[id].name);
            }
        rep->elapsed_us = clk ? now_us() - t0 : 0;
        return CD_OK;
    }
    if (!def) return cd_op_fail(&c, CD_E_UNSUPPORTED, "no CPU kernel for op type '%s'", op->type);
    for (int s = 0; s < op->n_in; s++)
        for (int k = 0; k < op->in[s].n; k++) {
            int id = op->in[s].ids[k];
            if (id >= 0 && !im->vals[id].data)
                return cd_op_fail(&c, CD_E_INTERNAL,
                                  "input %s[%d] '%s' has no data (released too early or "
                                  "never produced)",
                                  op->in[s].name, k, g->tensors[id].name);
        }
    cd_status st;
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value *v = &im->vals[id];
            pool_release(im, id);
            v->dtype = plan->meta[id].dtype;
            v->shape = plan->meta[id].shape;
            if (im->reinfer) v->shape.rank = -1;
        }
    if (im->reinfer && (st = def->infer(&c))) {
        if (err && !strstr(err->msg, "op #")) cd_err_prefix(err, "op #%d %s (%s): ", i, op->name, op->type);
        return st;
    }
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value *v = &im->vals[id];
            if (v->shape.rank < 0)
                return cd_op_fail(&c, CD_E_INTERNAL, "shape rule gave output '%s' no shape", g->tensors[id].name);
            im->expect[id].dtype = v->dtype;
            im->expect[id].shape = v->shape;
            if ((st = pool_alloc(im, id, !(def->flags & CD_OPF_WRITES_ALL), err)))
                return cd_err_prefix(err, "op #%d %s (%s): ", i, op->name, op->type);
        }
    /* the claim as prepare resolved it on the planned dtypes and shapes, which are the run's
     * until a dynamic op changes them (then asked again on the runtime values) */
    const void *i8 = im->reinfer ? NULL : im->i8_state[i];
    if (i8 || (im->reinfer ? b->opts.int8_arm && cd_cpu_int8_claims(&c) : (kind & OPK_INT8) != 0))
        st = cd_cpu_int8_run(&c, i8, rep->kernel, sizeof rep->kernel, rep->note, sizeof rep->note);
    else if (def->run)
        st = def->run(&c);
    else if (def->flags & CD_OPF_IDENTITY)
        st = copy_identity(&c, op);
    else
        st = cd_op_fail(&c, CD_E_INTERNAL, "op definition has no CPU kernel");
    rep->elapsed_us = clk ? now_us() - t0 : 0;
    if (im->op_us) im->op_us[i] = rep->elapsed_us;
    if (st) {
        if (err && !strstr(err->msg, "op #")) cd_err_prefix(err, "op #%d %s (%s): ", i, op->name, op->type);
        return st;
    }
    /* A kernel must leave outputs as planned; dynamic ops (nms) may only shrink them. */
    for (int s = 0; s < op->n_out; s++)
        for (int k = 0; k < op->out[s].n; k++) {
            int id = op->out[s].ids[k];
            if (id < 0) continue;
            cd_value *v = &im->vals[id];
            const cd_value *m = &im->expect[id];
            char a[160], bb[160];
            if (v->dtype != m->dtype)
                return cd_op_fail(&c, CD_E_INTERNAL, "kernel wrote output '%s' as %s, planned %s", g->tensors[id].name,
                                  cd_dtype_name(v->dtype), cd_dtype_name(m->dtype));
            if (cd_shape_eq(&v->shape, &m->shape)) continue;
            int64_t n = cd_value_numel(v);
            if (!(def->flags & CD_OPF_DYNAMIC) || n < 0 || (size_t)n * cd_dtype_size(v->dtype) > v->nbytes)
                return cd_op_fail(&c, CD_E_INTERNAL, "kernel changed output '%s' from planned %s to %s",
                                  g->tensors[id].name, cd_shape_str(&m->shape, a, sizeof a),
                                  cd_shape_str(&v->shape, bb, sizeof bb));
            v->nbytes = (size_t)n * cd_dtype_size(v->dtype);
            im->reinfer = true;
        }
    return CD_OK;
}

static cd_status cpu_read(cd_backend *b, int id, cd_value *host, cd_error *err) {
    cpu_impl *im = b->impl;
    const cd_value *v = &im->vals[id];
    if (!v->data)
        return cd_err(err, CD_E_INTERNAL, "cpu backend: tensor '%s' (id %d) has no data to read",
                      im->plan->g->tensors[id].name, id);
    /* A borrowed view, no copy: the value lives until the tensor is released, after its
     * last reader, and every caller uses it before the next op runs (backend.h). */
    *host = *v;
    host->owned = false;
    return CD_OK;
}

static void cpu_release(cd_backend *b, int id) {
    cpu_impl *im = b->impl;
    if (im->plan && !im->plan->g->tensors[id].persistable) pool_release(im, id);
}

static void cpu_close(cd_backend *b) {
    if (!b) return;
    cpu_impl *im = b->impl;
    if (im) {
        if (im->vals)
            for (int t = 0; t < im->plan->g->n_tensors; t++) pool_release(im, t);
        pool_free_all(im);
        free_op_state(im);
        free(im->free_blocks);
        free(im->vals);
        free(im->expect);
        free(im->pool_ptr);
        free(im->pool_cap);
        free(im->op_us);
        free(im->prep_us);
        free(im);
    }
    free(b);
}

static void cpu_describe(cd_backend *b, char *device, size_t dn, char *driver, size_t drn) {
    char model[256] = "unknown CPU";
    FILE *f = fopen("/proc/cpuinfo", "r");
    if (f) {
        char line[512];
        while (fgets(line, sizeof line, f)) {
            char *colon = strchr(line, ':');
            if (colon && (!strncmp(line, "model name", 10) || !strncmp(line, "Hardware", 8))) {
                snprintf(model, sizeof model, "%s", colon + 2);
                model[strcspn(model, "\n")] = 0;
                break;
            }
        }
        fclose(f);
    }
    if (device) snprintf(device, dn, "%s (%d threads)", model, b->opts.threads > 0 ? b->opts.threads : 1);
    if (driver) snprintf(driver, drn, "cldiff cpu backend %s, OpenMP %d", CLDIFF_VERSION, _OPENMP);
}

static const cd_backend_vt k_cpu_vt = {
    .name = "cpu",
    .prepare = cpu_prepare,
    .set_input = cpu_set_input,
    .run_op = cpu_run_op,
    .read = cpu_read,
    .release = cpu_release,
    .close = cpu_close,
    .describe = cpu_describe,
};

cd_status cd_cpu_backend_open(const cd_backend_opts *opts, cd_backend **out, cd_error *err) {
    *out = NULL;
    cd_backend *b = cd_calloc(1, sizeof *b, err);
    if (!b) return CD_E_NOMEM;
    b->impl = cd_calloc(1, sizeof(cpu_impl), err);
    if (!b->impl) {
        free(b);
        return CD_E_NOMEM;
    }
    b->vt = &k_cpu_vt;
    const char *poison = getenv("CLDIFF_POISON_OUTPUTS");
    ((cpu_impl *)b->impl)->poison = poison && poison[0] == '1';
    b->opts = *opts;
    if (b->opts.threads <= 0) b->opts.threads = 1;
    omp_set_num_threads(b->opts.threads);
    /* Start the OpenMP team now: creating its threads (~0.1-0.3 ms) would otherwise be
     * charged to the first layer's elapsed_us. */
#pragma omp parallel
    { (void)0; }
    *out = b;
    return CD_OK;
}

/* ---------------------------------------------------------------- registration */

extern const cd_backend_def cd_backend_def_cpu;

/* ---------------------------------------------------------------- timing (cpu:repeat, cpu:timing)
 * `--backend-opt cpu:repeat=N` runs the model N times in this process on one backend
 * instance: run 1 is the captured run (cold: backend opened, attributes parsed, filters
 * packed, activation pool filled), runs 2..N execute the same prepared plan on the same
 * inputs with nothing probed (warm). `cpu:timing=1` prints the times on stderr, per run and
 * per op type; with repeat > 1 the dump's run gets the attributes cold_ms, warm_ms (median of
 * the warm runs) and warm_runs. docs/cpu-backend.md "Timing". */
static int cpu_opt_int(const cd_backend_opts *bo, const char *key, int dflt) {
    const char *v = cd_backend_opt(bo, "cpu", key);
    return v ? atoi(v) : dflt;
}

static cd_status cpu_apply_opts(cd_backend_opts *bo, cd_error *err) {
    static const char *const keys[] = {"repeat", "timing", "prepare_threads"};
    static const int lo[] = {1, 0, 1}, hi[] = {100000, 1, 4096};
    for (int k = 0; k < 3; k++) {
        const char *v = cd_backend_opt(bo, "cpu", keys[k]);
        if (!v) continue;
        char *end;
        long n = strtol(v, &end, 10);
        if (!*v || *end || n < lo[k] || n > hi[k])
            return cd_err(err, CD_E_USAGE, "--backend-opt cpu:%s=%s: expected an integer in [%d, %d]", keys[k], v,
                          lo[k], hi[k]);
    }
    return CD_OK;
}

static int cmp_dbl(const void *a, const void *b) {
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median(double *v, int n) {
    if (n <= 0) return 0;
    qsort(v, (size_t)n, sizeof *v, cmp_dbl);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/* The cold run's parts, ms: backend open (the OpenMP team), prepare, probes (the sink). */
typedef struct {
    double open_ms, prepare_ms, probe_ms;
    double pool_ms;                      /* the pool's fill, part of prepare */
    double pool_kb, peak_kb;             /* the planned pool (0: none, the free list) and the plan's live peak */
    int outside;                         /* run 1's activations that did not take their planned place */
    const double *prep_us;               /* per op: its prepare hook (n_ops; on several threads at once) */
    long flt_prepare, flt_run, flt_warm; /* minor page faults: prepare, run 1, runs 2..N */
    double cpu_ms;                       /* process CPU time of the cold run (all threads) */
} cold_parts;

/* The stderr report: run times, then one row per op type (ops, cold ms, warm median ms,
 * share of the warm run), heaviest first. op_us: runs x n_ops, run 0 cold. */
static void timing_report(const cd_plan *plan, int threads, int runs, double open_ms, const cold_parts *cp,
                          const double *run_ms, const double *op_us) {
    const cd_graph *g = plan->g;
    const int n = g->n_ops, warm = runs - 1;
    double *wr = malloc((size_t)(warm > 0 ? warm : 1) * sizeof *wr);
    const char **types = calloc((size_t)(n > 0 ? n : 1), sizeof *types);
    int *cnt = calloc((size_t)(n > 0 ? n : 1), sizeof *cnt), nt = 0;
    double *cold = calloc((size_t)(n > 0 ? n : 1), sizeof *cold), *wmed = calloc((size_t)(n > 0 ? n : 1), sizeof *wmed);
    double *prep = calloc((size_t)(n > 0 ? n : 1), sizeof *prep);
    if (!wr || !types || !cnt || !cold || !wmed || !prep) goto out;
    for (int r = 0; r < warm; r++) wr[r] = run_ms[r + 1];
    double wm = median(wr, warm);
    fprintf(stderr,
            "cldiff: cpu timing, %d threads: cold %.2f ms (open + prepare %.2f ms; dump writes %.2f ms left out)",
            threads, run_ms[0], open_ms, cp->probe_ms);
    if (warm > 0)
        fprintf(stderr, "; warm median %.2f ms over %d runs (min %.2f, max %.2f)\n", wm, warm, wr[0], wr[warm - 1]);
    else
        fprintf(stderr, "; no warm runs (cpu:repeat=N, N > 1)\n");
    double ops_cold = 0, ops_warm = 0;
    for (int i = 0; i < n; i++) ops_cold += op_us[i] / 1e3;
    for (int r = 0; r < warm; r++) {
        double sum = 0;
        for (int i = 0; i < n; i++) sum += op_us[(size_t)(r + 1) * n + i] / 1e3;
        wr[r] = sum;
    }
    if (warm > 0) ops_warm = median(wr, warm);
    /* where the cold run's time went: the parts that only run 1 has, then its ops */
    fprintf(stderr,
            "  cold = open %.3f (thread team) + prepare %.3f (attributes, filters, pool) + ops %.3f + executor %.3f "
            "ms",
            cp->open_ms, cp->prepare_ms, ops_cold, run_ms[0] - cp->open_ms - cp->prepare_ms - ops_cold);
    if (warm > 0) fprintf(stderr, "; warm ops %.3f + executor %.3f ms (medians)", ops_warm, wm - ops_warm);
    double prep_sum = 0;
    for (int i = 0; cp->prep_us && i < n; i++) prep_sum += cp->prep_us[i] / 1e3;
    fprintf(stderr,
            "\n  prepare: pool %.3f ms (%.0f KB planned for a live peak of %.0f KB; run 1: %d outside it), op hooks "
            "(attributes, packed filters) %.3f ms%s",
            cp->pool_ms, cp->pool_kb, cp->peak_kb, cp->outside, prep_sum,
            threads > 1 ? " summed over the threads" : "");
    fprintf(stderr,
            "\n  cold CPU time %.3f ms (all threads, less the dump writes); page faults: open + prepare %ld, run 1 "
            "%ld, runs 2..%d %ld\n",
            cp->cpu_ms, cp->flt_prepare, cp->flt_run, runs, cp->flt_warm);
    for (int i = 0; i < n; i++) {
        int t = 0;
        while (t < nt && strcmp(types[t], g->ops[i].type)) t++;
        if (t == nt) types[nt++] = g->ops[i].type;
        cnt[t]++;
        cold[t] += op_us[i] / 1e3;
        if (cp->prep_us) prep[t] += cp->prep_us[i] / 1e3;
    }
    double wtot = 0;
    for (int t = 0; t < nt; t++) {
        for (int r = 0; r < warm; r++) {
            double sum = 0;
            for (int i = 0; i < n; i++)
                if (!strcmp(g->ops[i].type, types[t])) sum += op_us[(size_t)(r + 1) * n + i] / 1e3;
            wr[r] = sum;
        }
        wmed[t] = warm > 0 ? median(wr, warm) : cold[t];
        wtot += wmed[t];
    }
    for (int a = 0; a < nt; a++) /* heaviest first (selection sort: a few dozen types) */
        for (int b2 = a + 1; b2 < nt; b2++)
            if (wmed[b2] > wmed[a]) {
                double d = wmed[a];
                wmed[a] = wmed[b2];
                wmed[b2] = d;
                d = cold[a];
                cold[a] = cold[b2];
                cold[b2] = d;
                d = prep[a];
                prep[a] = prep[b2];
                prep[b2] = d;
                int c = cnt[a];
                cnt[a] = cnt[b2];
                cnt[b2] = c;
                const char *s = types[a];
                types[a] = types[b2];
                types[b2] = s;
            }
    /* prepare ms: the op type's prepare hooks (attributes, packed filters), before run 1 */
    fprintf(stderr, "  %-32s %5s %10s %10s %10s %7s\n", "op type", "ops", "prepare ms", "cold ms",
            warm > 0 ? "warm ms" : "ms", "share");
    for (int t = 0; t < nt; t++)
        fprintf(stderr, "  %-32s %5d %10.3f %10.3f %10.3f %6.1f%%\n", types[t], cnt[t], prep[t], cold[t], wmed[t],
                wtot > 0 ? 100.0 * wmed[t] / wtot : 0.0);
    /* the heaviest single ops (warm median; cold where there is no warm run) */
    double *om = calloc((size_t)(n > 0 ? n : 1), sizeof *om);
    int *ord = calloc((size_t)(n > 0 ? n : 1), sizeof *ord);
    if (om && ord) {
        for (int i = 0; i < n; i++) {
            for (int r = 0; r < warm; r++) wr[r] = op_us[(size_t)(r + 1) * n + i] / 1e3;
            om[i] = warm > 0 ? median(wr, warm) : op_us[i] / 1e3;
            ord[i] = i;
        }
        const int top = n < 15 ? n : 15;
        for (int a = 0; a < top; a++)
            for (int b2 = a + 1; b2 < n; b2++)
                if (om[ord[b2]] > om[ord[a]]) {
                    int x = ord[a];
                    ord[a] = ord[b2];
                    ord[b2] = x;
                }
        fprintf(stderr, "  %-5s %-32s %-24s %10s %10s\n", "op #", "layer", "type", "cold ms",
                warm > 0 ? "warm ms" : "ms");
        for (int a = 0; a < top; a++) {
            const cd_op *op = &g->ops[ord[a]];
            fprintf(stderr, "  %-5d %-32.32s %-24.24s %10.3f %10.3f\n", ord[a], op->name, op->type, op_us[ord[a]] / 1e3,
                    om[ord[a]]);
        }
    }
    free(om);
    free(ord);
out:
    free(prep);
    free(wr);
    free(types);
    free(cnt);
    free(cold);
    free(wmed);
}

/* A probe sink that forwards to another and adds up the time spent in it. */
typedef struct {
    cd_probe_sink *inner;
    double us;
} probe_clock;

static cd_status clocked_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                             cd_error *err) {
    probe_clock *pc = user;
    double t = now_us();
    cd_status st = pc->inner->hit(pc->inner->user, op_index, tensor_id, host, rep, err);
    pc->us += now_us() - t;
    return st;
}

static void clocked_done(void *user, int op_index, const cd_op_report *rep) {
    probe_clock *pc = user;
    double t = now_us();
    pc->inner->op_done(pc->inner->user, op_index, rep);
    pc->us += now_us() - t;
}

static cd_status cpu_run(const cd_runner_req *q, cd_runner_result *res, cd_error *err) {
    const int repeat = cpu_opt_int(q->bo, "repeat", 1), timing = cpu_opt_int(q->bo, "timing", 0);
    /* a local pass (the verdict's re-run of layers) is not repeated or timed */
    const bool plain = q->xo && !q->xo->force && !q->xo->local_only;
    if (!plain || (repeat <= 1 && !timing)) {
        cd_status st = cd_runner_inproc(&cd_backend_def_cpu, q, res, err);
        snprintf(res->device, sizeof res->device, "host CPU, %d threads", q->bo->threads);
        return st;
    }
    const int n = q->plan->g->n_ops > 0 ? q->plan->g->n_ops : 1;
    double *run_ms = calloc((size_t)repeat, sizeof *run_ms);
    double *op_us = calloc((size_t)repeat * (size_t)n, sizeof *op_us);
    if (!run_ms || !op_us) {
        free(run_ms);
        free(op_us);
        return cd_err(err, CD_E_NOMEM, "out of memory for the timing table");
    }
    cd_backend *b = NULL;
    /* the captured run's probes go through a sink that clocks them (stored in the dump, not
     * part of any op: the breakdown shows them apart) */
    probe_clock pc = {.inner = q->sink};
    cd_probe_sink csink = {.user = &pc,
                           .hit = q->sink && q->sink->hit ? clocked_hit : NULL,
                           .op_done = q->sink && q->sink->op_done ? clocked_done : NULL};
    cold_parts cp = {0};
    double *prep = NULL;
    long f0 = minflt();
    double c0 = cpu_us();
    double t0 = now_us();
    cd_status st = cd_cpu_backend_open(q->bo, &b, err);
    double t1 = now_us(), open_ms = 0;
    cp.open_ms = (t1 - t0) / 1e3;
    if (!st) {
        st = b->vt->prepare(b, q->plan, err); /* cd_execute's own prepare then finds it done */
        double t2 = now_us();
        cp.prepare_ms = (t2 - t1) / 1e3;
        if (!st) {
            cpu_impl *im = b->impl;
            cp.pool_ms = im->pool_us / 1e3;
            cp.pool_kb = (double)im->arena_bytes / 1024;
            cp.peak_kb = (double)q->plan->act_bytes_peak / 1024;
            if ((prep = malloc((size_t)n * sizeof *prep)))
                memcpy(prep, im->prep_us, (size_t)q->plan->g->n_ops * sizeof *prep);
            cp.prep_us = prep;
        }
        open_ms = (t2 - t0) / 1e3;
        long f1 = minflt();
        cp.flt_prepare = f1 - f0;
        if (!st) st = cd_execute(q->plan, b, q->inputs, q->xo, q->sink ? &csink : NULL, err);
        run_ms[0] = (now_us() - t0) / 1e3;
        cp.flt_run = minflt() - f1;
        if (b) cp.outside = ((cpu_impl *)b->impl)->outside;
        cp.cpu_ms = (cpu_us() - c0) / 1e3 - cp.probe_ms;
        cp.probe_ms = pc.us / 1e3;
        if (!st) memcpy(op_us, ((cpu_impl *)b->impl)->op_us, (size_t)q->plan->g->n_ops * sizeof *op_us);
    }
    /* warm runs: the same plan and inputs, nothing probed or recorded */
    const cd_exec_opts wxo = {.stop_flag = q->xo->stop_flag};
    int runs = st ? 0 : 1;
    long fw = minflt();
    if (b && !st) ((cpu_impl *)b->impl)->clock_ops = timing != 0; /* per-op times: the table only */
    for (int r = 1; !st && r < repeat; r++) {
        double tr = now_us();
        st = cd_execute(q->plan, b, q->inputs, &wxo, NULL, err);
        run_ms[r] = (now_us() - tr) / 1e3;
        if (!st) {
            memcpy(op_us + (size_t)r * n, ((cpu_impl *)b->impl)->op_us, (size_t)q->plan->g->n_ops * sizeof *op_us);
            runs++;
        }
    }
    cp.flt_warm = minflt() - fw;
    /* the device description for the dump (a read of /proc/cpuinfo), after the timed runs */
    if (b) b->vt->describe(b, res->device, sizeof res->device, res->driver, sizeof res->driver);
    if (b) cd_backend_close(b);
    snprintf(res->device, sizeof res->device, "host CPU, %d threads", q->bo->threads);
    if (runs > 0) {
        /* cold_ms leaves out the dump writes of the captured outputs (cold_probes_ms): storing
         * them is not part of running the model, and Paddle-Lite's first-run time leaves out
         * the fetch of its outputs too (docs/cpu-backend.md "Timing") */
        run_ms[0] -= cp.probe_ms;
        cd_run_attr_num(res, "cold_ms", run_ms[0]);
        cd_run_attr_num(res, "cold_probes_ms", cp.probe_ms);
        if (runs > 1) {
            double *w = malloc((size_t)(runs - 1) * sizeof *w);
            if (w) {
                memcpy(w, run_ms + 1, (size_t)(runs - 1) * sizeof *w);
                cd_run_attr_num(res, "warm_ms", median(w, runs - 1));
                free(w);
            }
            cd_run_attr_num(res, "warm_runs", runs - 1);
        }
        if (timing) timing_report(q->plan, q->bo->threads, runs, open_ms, &cp, run_ms, op_us);
    }
    free(run_ms);
    free(op_us);
    free(prep);
    return st;
}

static cd_status cpu_placement(const cd_runner_req *q, cd_op_place *out, char *note, size_t nn, cd_error *err) {
    (void)err;
    const cd_plan *p = q->plan;
    for (int i = 0; i < p->g->n_ops; i++) {
        const cd_op *op = &p->g->ops[i];
        cd_op_place *o = &out[i];
        memset(o, 0, sizeof *o);
        o->supported = p->defs[i] != NULL;
        bool i8 = q->bo->int8_arm &&
            cd_cpu_int8_claims(&(cd_op_ctx){.g = p->g, .op = op, .op_index = i, .vals = p->meta, .prec = p->prec});
        snprintf(o->where, sizeof o->where, "%s", o->supported ? "cpu" : "-");
        snprintf(o->kernel, sizeof o->kernel, "%s%s", op->type, i8 ? " (int8, as Paddle-Lite ARM)" : "");
        if (!o->supported) snprintf(o->why, sizeof o->why, "no CPU kernel for %s", op->type);
    }
    snprintf(note, nn, "cldiff's CPU kernels (C11, OpenMP), %s", p->prec == CD_PREC_FP16 ? "fp16" : "fp32");
    return CD_OK;
}

const cd_backend_def cd_backend_def_cpu = {
    .name = "cpu",
    .aliases = {"arm", NULL},
    .reference = true,
    .summary = "cldiff's CPU kernels: the reference (float32, _Float16 for --fp16, int8 as Paddle-Lite ARM)",
    .op_by_op = true,
    .opts = (const cd_backend_optdef[]){{"repeat", "N",
                                         "run the model N times in one process: run 1 captured (cold), runs 2..N "
                                         "warm; the dump's run gets cold_ms and warm_ms (median)"},
                                        {"timing", "0|1", "print run times and a per-op-type table on stderr"},
                                        {"prepare_threads", "N",
                                         "threads that pack the filters at prepare (default 1: one by one; "
                                         "at most --threads)"},
                                        {NULL, NULL, NULL}},
    .apply_opts = cpu_apply_opts,
    .run = cpu_run,
    .open = cd_cpu_backend_open,
    .placement = cpu_placement,
};
