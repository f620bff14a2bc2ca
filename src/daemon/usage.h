/* usage.report (docs/protocol.md): what jobs held, per user and account, as
 * sreport tells it (docs/security.md#accounting). */
#ifndef LOOMD_USAGE_H
#define LOOMD_USAGE_H

#include "loom/rpc.h"
#include "loom/store.h"

/* Adds usage.report; store must outlive d. */
int loomd_usage_add_methods(loom_rpc_dispatcher_t *d, loom_store_t *store, loom_err_t *err);

#endif
