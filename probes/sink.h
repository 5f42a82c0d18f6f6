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

/* The run group must already exist (cd_dump_begin_run). g is the graph the plan was built
 * from; d and g must outlive the sink. */
cd_status cd_dump_sink_new(cd_dump *d, const char *run, const cd_graph *g, cd_sink_mode mode, cd_dump_sink **out,
                           cd_error *err);
/* The cd_probe_sink to hand to cd_execute (points into s). */
cd_probe_sink *cd_dump_sink_probe(cd_dump_sink *s);
/* Optional per-op callback forwarded from op_done (progress display). */
void cd_dump_sink_on_op_done(cd_dump_sink *s, void (*fn)(void *user, int op_index, const cd_op_report *rep),
                             void *user);
/* Writes the run summary attributes: n_probed, n_nonfinite (tensors with NaN/Inf),
 * first_nonfinite_op (-1 if none) and first_nonfinite_layer (""). */
cd_status cd_dump_sink_finish(cd_dump_sink *s, cd_error *err);
/* Tensors stored so far. */
int cd_dump_sink_count(const cd_dump_sink *s);
/* Op index of the first probed tensor holding NaN or Inf, -1 if none so far. */
int cd_dump_sink_first_nonfinite(const cd_dump_sink *s);
void cd_dump_sink_free(cd_dump_sink *s);
#endif
