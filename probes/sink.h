/* Probe sink that stores every probed tensor of one run in a dump run group, with its
 * statistics (min, max, mean over finite values; NaN and Inf counts) as attributes.
 * Mode CD_SINK_STATS (--dump stats) stores only the statistics. The sink reads the host
 * value it is handed and never modifies it. */
#ifndef CD_SINK_H
#define CD_SINK_H
#include "engine/executor.h"
#include "store/dump.h"

typedef enum { CD_SINK_FULL = 0, CD_SINK_STATS = 1 } cd_sink_mode;

typedef struct cd_dump_sink cd_dump_sink;

/* Full dumps can be written by a writer thread fed through a ring buffer of this many MiB
 * (environment CLDIFF_DUMP_QUEUE_MB overrides it; 0 writes synchronously). Tensors larger
 * than half the ring are written synchronously. The session uses the thread only when the
 * machine has more cores than compute threads, and caps the ring to the memory budget. */
#define CD_DUMP_SINK_RING_MB 64
size_t cd_dump_sink_ring_bytes(void);
/* Caps the queue of s (before its first hit), e.g. to what the memory budget leaves. */
void cd_dump_sink_set_queue(cd_dump_sink *s, size_t bytes);

/* The run group must already exist (cd_dump_begin_run). g is the graph the plan was built
 * from; d and g must outlive the sink. */
cd_status cd_dump_sink_new(cd_dump *d, const char *run, const cd_graph *g, cd_sink_mode mode, cd_dump_sink **out,
                           cd_error *err);
/* The cd_probe_sink to hand to cd_execute (points into s). */
cd_probe_sink *cd_dump_sink_probe(cd_dump_sink *s);
/* Optional per-op callback forwarded from op_done (progress display). */
void cd_dump_sink_on_op_done(cd_dump_sink *s, void (*fn)(void *user, int op_index, const cd_op_report *rep),
                             void *user);
/* Waits for the writer thread to store everything queued and stops it, then writes the run
 * summary attributes: n_probed, n_nonfinite (tensors with NaN/Inf),
 * first_nonfinite_op (-1 if none) and first_nonfinite_layer (""). */
cd_status cd_dump_sink_finish(cd_dump_sink *s, cd_error *err);
/* Tensors stored so far (final after cd_dump_sink_finish). */
int cd_dump_sink_count(const cd_dump_sink *s);
/* Op index of the first probed tensor holding NaN or Inf, -1 if none so far. */
int cd_dump_sink_first_nonfinite(const cd_dump_sink *s);
/* Stops the writer thread (after it has stored what was queued) and frees the sink. */
void cd_dump_sink_free(cd_dump_sink *s);
#endif
