/* Whether some node of the cluster could ever hold a job (feasible.c). */
#ifndef LOOMD_FEASIBLE_H
#define LOOMD_FEASIBLE_H

#include "loom/store.h"

/* nodes: node.list's array. LOOM_OK if some node could hold spec when
 * empty (or there are no nodes: nothing is known); else LOOM_ELIMIT, err
 * naming the resource, the request and the largest node's capacity, and
 * *data (owned by the caller) {"resource", "requested", "largest", "node"}. */
int loomd_feasible(const json_t *nodes, const loom_job_spec_t *spec, loom_err_t *err,
                   json_t **data);

#endif
