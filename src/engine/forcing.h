/* The forcing record: one run's op outputs, kept so that another backend can run each layer
 * on exactly these inputs (the local check, docs/verdicts.md). Values live in memory up to a
 * budget (CLDIFF_SCRATCH_MEM bytes; default a quarter of physical memory, at most 4 GiB: a
 * forked OpenCL child reads them in place), the rest in an unlinked temporary file in the
 * output folder (or CLDIFF_SCRATCH_DIR), so nothing is left behind and memory stays bounded. */
#ifndef CD_FORCING_H
#define CD_FORCING_H
#include "model/graph.h"
#include "util/value.h"

typedef struct cd_forcing cd_forcing;

/* dir: where the temporary file is made (removed from the folder at once). */
cd_status cd_forcing_new(const char *dir, int n_tensors, cd_forcing **out, cd_error *err);
/* The same, in one shared mapping (reserved up to the memory budget, pages taken as values
 * come) with the scratch file opened at once: a child forked now reads every value the parent
 * puts later, once the parent tells it (a pipe) that they are there. CD_E_NOMEM when the
 * mapping cannot be made (the caller can use cd_forcing_new). */
cd_status cd_forcing_new_shared(const char *dir, int n_tensors, cd_forcing **out, cd_error *err);
bool cd_forcing_is_shared(const cd_forcing *f);
/* Keeps tensor id's value (its bytes, dtype and shape); a second put replaces the first. */
cd_status cd_forcing_put(cd_forcing *f, int id, const cd_value *v, cd_error *err);
bool cd_forcing_has(const cd_forcing *f, int id);
/* Shape of a kept tensor (NULL when not kept). */
const cd_shape *cd_forcing_shape(const cd_forcing *f, int id);
/* Reads tensor id into out (allocated, owned) as dtype want: float data converts between
 * F32 and F16 (half rounding to nearest even), integer data converts exactly; absval makes
 * every value its absolute value (the magnitude run). */
cd_status cd_forcing_get(const cd_forcing *f, int id, cd_dtype want, bool absval, cd_value *out, cd_error *err);
/* The kept value in place when it is in memory with this dtype (NULL otherwise). */
const void *cd_forcing_peek(const cd_forcing *f, int id, cd_dtype dtype);
/* Bytes kept so far. */
int64_t cd_forcing_bytes(const cd_forcing *f);
void cd_forcing_free(cd_forcing *f);
#endif
