/* Dump probe sink: statistics + HDF5 dataset per hit.
 *
 * Full dumps are written by a writer thread so that the HDF5 work (dataset creation, the copy
 * into the page cache, attributes) and the statistics overlap the computation of the next
 * layers. The executor's tensor is lent only until the next op, so a hit copies it into a ring
 * buffer (one memcpy) and queues it; the writer thread takes queued tensors in FIFO order, so
 * the file is laid out exactly as a synchronous writer would lay it out (determinism holds).
 *
 * Rules that keep HDF5 (a library that is not thread safe) correct:
 *   - while the writer thread exists it is the only thread that calls HDF5 for this dump;
 *   - the thread starts at the first hit (so a fork made before it, e.g. the OpenCL child of
 *     an isolated run, never inherits a half-finished HDF5 call) and is joined by
 *     cd_dump_sink_finish / cd_dump_sink_free before the caller touches the dump again;
 *   - a tensor larger than half the ring is written synchronously by the caller's thread after
 *     the queue has drained (the writer is then idle and waiting on the condition variable).
 * A write error stops the queue: later hits return it at once, so the run stops promptly.
 * --dump stats keeps the synchronous path: it writes only attributes, there is nothing to overlap. */
#include "probes/sink.h"
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define QCAP 256 /* queued items (each one a probed tensor) */

typedef struct item {
    int op_index, tensor_id;
    bool has_rep;
    cd_op_report rep;
    cd_value v;  /* data points into the ring */
    size_t off, len; /* ring span (len includes alignment padding and a skipped tail) */
} item;

struct cd_dump_sink {
    cd_probe_sink probe;
    cd_dump *d;
    const cd_graph *g;
    char run[128];
    cd_sink_mode mode;
    int n_probed, n_nonfinite, first_nonfinite;
    void (*progress)(void *, int, const cd_op_report *);
    void *progress_user;

    /* asynchronous writer */
    size_t ring_cap;
    unsigned char *ring;
    size_t head, used;          /* producer position, bytes in flight */
    item q[QCAP];
    int q_first, q_n;
    bool busy;                  /* the writer is processing q[q_first] */
    bool started, quit;
    cd_status wst;              /* first writer error (sticky) */
    cd_error werr;
    pthread_t th;
    pthread_mutex_t mu;
    pthread_cond_t cv_work, cv_space;
};

/* Statistics + dataset + attributes of one tensor (caller holds the HDF5 "lock": either the
 * writer thread, or the caller's thread while the writer is idle). */
static cd_status store_one(cd_dump_sink *s, int op_index, int tensor_id, const cd_value *host,
                           const cd_op_report *rep, bool overlap, cd_error *err) {
    const cd_graph *g = s->g;
    const cd_op *op = &g->ops[op_index];
    cd_tensor_stats st;
    cd_tensor_rec rec = {
        .op_index = op_index,
        .op_type = op->type,
        .layer = op->name,
        .tensor = g->tensors[tensor_id].name,
        .elapsed_us = rep ? rep->elapsed_us : 0,
        .kernel_us = rep ? rep->kernel_us : -1,
        .where = rep ? rep->where : "",
        .kernel = rep ? rep->kernel : "",
        .note = rep ? rep->note : "",
        .compute_stats = &st,
        .overlap = overlap,
    };
    cd_status r = cd_dump_write_tensor(s->d, s->run, &rec, host, s->mode == CD_SINK_STATS, err);
    if (r) return cd_err_prefix(err, "while storing op %d (%s) output '%s': ", op_index, op->name ? op->name : "?",
                                rec.tensor ? rec.tensor : "?");
    if ((st.nan_count || st.inf_count)) {
        s->n_nonfinite++;
        if (s->first_nonfinite < 0 || op_index < s->first_nonfinite) s->first_nonfinite = op_index;
    }
    s->n_probed++;
    return CD_OK;
}

static void *writer_main(void *arg) {
    cd_dump_sink *s = arg;
    pthread_mutex_lock(&s->mu);
    for (;;) {
        while (s->q_n == 0 && !s->quit) pthread_cond_wait(&s->cv_work, &s->mu);
        if (s->q_n == 0) break; /* quit and drained */
        item *it = &s->q[s->q_first];
        s->busy = true;
        bool skip = s->wst != CD_OK;
        pthread_mutex_unlock(&s->mu);
        cd_error e;
        cd_err_clear(&e);
        cd_status r = skip ? CD_OK : store_one(s, it->op_index, it->tensor_id, &it->v, it->has_rep ? &it->rep : NULL, false, &e);
        pthread_mutex_lock(&s->mu);
        if (r && s->wst == CD_OK) {
            s->wst = r;
            s->werr = e;
        }
        s->used -= it->len;
        s->q_first = (s->q_first + 1) % QCAP;
        s->q_n--;
        s->busy = false;
        pthread_cond_broadcast(&s->cv_space);
    }
    pthread_mutex_unlock(&s->mu);
    return NULL;
}

/* Waits until the writer has nothing queued and is idle. Caller holds s->mu. */
static void wait_idle_locked(cd_dump_sink *s) {
    while (s->q_n > 0 || s->busy) pthread_cond_wait(&s->cv_space, &s->mu);
}

/* Stops and joins the writer after it has written everything queued. */
static void writer_stop(cd_dump_sink *s) {
    if (!s->started) return;
    pthread_mutex_lock(&s->mu);
    s->quit = true;
    pthread_cond_broadcast(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    pthread_join(s->th, NULL);
    s->started = false;
}

/* Reserves len bytes of the ring at s->head (wrapping to 0 when the tail is too short);
 * returns the offset and the span to free later. Caller holds s->mu; len <= ring_cap / 2. */
static size_t ring_reserve_locked(cd_dump_sink *s, size_t len, size_t *span) {
    for (;;) {
        if (s->wst) return SIZE_MAX;
        size_t tail = s->ring_cap - s->head;
        size_t need = len <= tail ? len : tail + len; /* skip the short tail, start again at 0 */
        if (s->used + need <= s->ring_cap && s->q_n < QCAP) {
            size_t off = len <= tail ? s->head : 0;
            s->head = off + len;
            if (s->head == s->ring_cap) s->head = 0;
            s->used += need;
            *span = need;
            return off;
        }
        pthread_cond_wait(&s->cv_space, &s->mu);
    }
}

static cd_status sink_hit(void *user, int op_index, int tensor_id, const cd_value *host, const cd_op_report *rep,
                          cd_error *err) {
    cd_dump_sink *s = user;
    const cd_graph *g = s->g;
    if (op_index < 0 || op_index >= g->n_ops || tensor_id < 0 || tensor_id >= g->n_tensors || !host)
        return cd_err(err, CD_E_INTERNAL, "probe hit for op %d / tensor %d outside the graph (%d ops, %d tensors)",
                      op_index, tensor_id, g->n_ops, g->n_tensors);
    size_t nb = host->data ? host->nbytes : 0;
    if (s->mode == CD_SINK_STATS || s->ring_cap == 0 || nb > s->ring_cap / 2) {
        /* synchronous: wait for the writer to be idle, then write from the caller's thread */
        if (s->started) {
            pthread_mutex_lock(&s->mu);
            wait_idle_locked(s);
            cd_status w = s->wst;
            if (w) *err = s->werr;
            pthread_mutex_unlock(&s->mu);
            if (w) return w;
        }
        return store_one(s, op_index, tensor_id, host, rep, true, err);
    }
    if (!s->ring) {
        s->ring = malloc(s->ring_cap);
        if (!s->ring) { /* no ring: write synchronously from now on */
            s->ring_cap = 0;
            return store_one(s, op_index, tensor_id, host, rep, true, err);
        }
    }
    if (!s->started) {
        if (pthread_create(&s->th, NULL, writer_main, s) != 0) {
            free(s->ring);
            s->ring = NULL;
            s->ring_cap = 0;
            return store_one(s, op_index, tensor_id, host, rep, true, err);
        }
        s->started = true;
    }
    size_t len = (nb + 63) & ~(size_t)63, span = 0;
    pthread_mutex_lock(&s->mu);
    size_t off = ring_reserve_locked(s, len ? len : 64, &span);
    if (off == SIZE_MAX) {
        cd_status w = s->wst;
        *err = s->werr;
        pthread_mutex_unlock(&s->mu);
        return w;
    }
    pthread_mutex_unlock(&s->mu);
    /* the writer never touches this span until the item is queued below */
    if (nb) memcpy(s->ring + off, host->data, nb);
    pthread_mutex_lock(&s->mu);
    item *it = &s->q[(s->q_first + s->q_n) % QCAP];
    it->op_index = op_index;
    it->tensor_id = tensor_id;
    it->has_rep = rep != NULL;
    if (rep) it->rep = *rep;
    it->v = *host;
    it->v.data = nb ? s->ring + off : NULL;
    it->v.owned = false;
    it->off = off;
    it->len = span;
    s->q_n++;
    pthread_cond_signal(&s->cv_work);
    pthread_mutex_unlock(&s->mu);
    return CD_OK;
}

static void sink_op_done(void *user, int op_index, const cd_op_report *rep) {
    cd_dump_sink *s = user;
    if (s->progress) s->progress(s->progress_user, op_index, rep);
}

cd_status cd_dump_sink_new(cd_dump *d, const char *run, const cd_graph *g, cd_sink_mode mode, cd_dump_sink **out,
                           cd_error *err) {
    *out = NULL;
    if (!d || !g || !run) return cd_err(err, CD_E_INTERNAL, "cd_dump_sink_new: missing dump, graph or run");
    if (strlen(run) >= sizeof ((cd_dump_sink *)0)->run) return cd_err(err, CD_E_INTERNAL, "run name too long");
    cd_dump_sink *s = cd_calloc(1, sizeof *s, err);
    if (!s) return CD_E_NOMEM;
    s->d = d;
    s->g = g;
    snprintf(s->run, sizeof s->run, "%s", run);
    s->mode = mode;
    s->first_nonfinite = -1;
    s->probe.user = s;
    s->probe.hit = sink_hit;
    s->probe.op_done = sink_op_done;
    s->ring_cap = cd_dump_sink_ring_bytes();
    pthread_mutex_init(&s->mu, NULL);
    pthread_cond_init(&s->cv_work, NULL);
    pthread_cond_init(&s->cv_space, NULL);
    *out = s;
    return CD_OK;
}

size_t cd_dump_sink_ring_bytes(void) {
    const char *e = getenv("CLDIFF_DUMP_QUEUE_MB"); /* 0 = synchronous writes (for comparisons) */
    if (e && *e) {
        char *end;
        long v = strtol(e, &end, 10);
        if (*end == 0 && v >= 0 && v <= 4096) return (size_t)v << 20;
    }
    return (size_t)CD_DUMP_SINK_RING_MB << 20;
}

void cd_dump_sink_set_queue(cd_dump_sink *s, size_t bytes) {
    if (!s->ring && bytes < s->ring_cap) s->ring_cap = bytes < (1u << 20) ? 0 : bytes;
}

cd_probe_sink *cd_dump_sink_probe(cd_dump_sink *s) { return &s->probe; }

void cd_dump_sink_on_op_done(cd_dump_sink *s, void (*fn)(void *, int, const cd_op_report *), void *user) {
    s->progress = fn;
    s->progress_user = user;
}

cd_status cd_dump_sink_finish(cd_dump_sink *s, cd_error *err) {
    writer_stop(s);
    if (s->wst) {
        *err = s->werr;
        return s->wst;
    }
    char path[160];
    snprintf(path, sizeof path, "/runs/%s", s->run);
    const char *layer = "";
    if (s->first_nonfinite >= 0 && s->g->ops[s->first_nonfinite].name) layer = s->g->ops[s->first_nonfinite].name;
    cd_status st;
    if ((st = cd_dump_set_attr_i64(s->d, path, "n_probed", s->n_probed, err))) return st;
    if ((st = cd_dump_set_attr_i64(s->d, path, "n_nonfinite", s->n_nonfinite, err))) return st;
    if ((st = cd_dump_set_attr_i64(s->d, path, "first_nonfinite_op", s->first_nonfinite, err))) return st;
    if ((st = cd_dump_set_attr_str(s->d, path, "first_nonfinite_layer", layer, err))) return st;
    return cd_dump_set_attr_str(s->d, path, "dump_mode", s->mode == CD_SINK_STATS ? "stats" : "full", err);
}

int cd_dump_sink_count(const cd_dump_sink *s) { return s->n_probed; }
int cd_dump_sink_first_nonfinite(const cd_dump_sink *s) { return s->first_nonfinite; }
void cd_dump_sink_free(cd_dump_sink *s) {
    if (!s) return;
    writer_stop(s);
    pthread_mutex_destroy(&s->mu);
    pthread_cond_destroy(&s->cv_work);
    pthread_cond_destroy(&s->cv_space);
    free(s->ring);
    free(s);
}
