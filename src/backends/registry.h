/* The backend registry: every backend cldiff can run a model on, by name, behind one runner
 * interface (docs/design.md, "Backends").
 *
 * A backend is one cd_backend_def, defined in its own module and listed once in registry.c.
 * Three kinds share the interface:
 *   - op by op, in this process (cpu): the executor drives the cd_backend vtable;
 *   - op by op, in an isolated child (opencl): a crash or hang becomes a finding;
 *   - whole-model engines (paddle-lite, paddle-lite-arm, paddle-lite-opencl): an external
 *     runtime runs the instrumented model once; its fetched tensors become probe hits.
 * Each backend declares the options it takes (--backend-opt NAME:key=value) and can say,
 * before any run, where each op of a model will run (cldiff inspect --backends). */
#ifndef CD_BACKENDS_REGISTRY_H
#define CD_BACKENDS_REGISTRY_H
#include <stdbool.h>
#include "engine/backend_def.h"

/* By name or alias; NULL when unknown. */
const cd_backend_def *cd_backend_lookup(const char *name);
int cd_backend_count(void);
const cd_backend_def *cd_backend_at(int i);
/* The backend with the reference role (cd_backend_def.reference): run A by default and the
 * backend of the differential run's own reference runs. */
const cd_backend_def *cd_backend_reference(void);
/* "cpu (arm), opencl, paddle-lite, ..." for messages. */
void cd_backend_names(char *buf, size_t n);

/* Checks one --backend-opt entry "NAME:key=value": the backend and the key exist. CD_E_USAGE
 * naming the nearest valid backend or key otherwise. */
cd_status cd_backend_opt_check(const char *entry, cd_error *err);
/* def->available(q) where the backend has one (design.md §8.1): can it start here? */
cd_status cd_backend_available(const cd_backend_def *def, const cd_runner_req *q, cd_error *err);
/* Applies every registered backend's options to bo (bo->kv set by the caller). */
cd_status cd_backend_apply_opts(cd_backend_opts *bo, cd_error *err);

#endif
