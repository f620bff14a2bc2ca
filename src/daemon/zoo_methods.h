/* loomd's zoo.* methods (docs/protocol.md, "zoo.*"): the model repository
 * of warm starts, kept in STATE/zoo (libloom's zoo part). */
#ifndef LOOMD_ZOO_METHODS_H
#define LOOMD_ZOO_METHODS_H

#include "daemon/identity.h"
#include "loom/rpc.h"
#include "loom/store.h"

/* Application error codes (docs/protocol.md). */
enum {
    LOOMD_ERR_ZOO_NOT_FOUND = -32020, /* no such entry, or no parent for a warm start */
    LOOMD_ERR_ZOO = -32021            /* the repository could not be read or written */
};

typedef struct loomd_zoo loomd_zoo_t;

/* Opens STATE/zoo (ident: who calls; NULL single-user); with a store, starts the thread that
 * registers jobs declaring a model output (labels zoo.output and zoo.task) once they have
 * COMPLETED. */
int loomd_zoo_open(const char *state_dir, loom_store_t *store, const loomd_identity_t *ident,
                   loomd_zoo_t **out, loom_err_t *err);
void loomd_zoo_close(loomd_zoo_t *z);
int loomd_zoo_add_methods(loom_rpc_dispatcher_t *d, loomd_zoo_t *z, loom_err_t *err);

#endif
