/* usage.report (docs/protocol.md): what jobs held, per user and account, as
 * sreport tells it (docs/security.md#accounting). */
#ifndef LOOMD_USAGE_H
#define LOOMD_USAGE_H

#include "loom/rpc.h"
#include "loom/store.h"

/* Adds usage.report; store must outlive d. */
int loomd_usage_add_methods(loom_rpc_dispatcher_t *d, loom_store_t *store, loom_err_t *err);

/* "2026-12-03T13:00:00Z" or with a fraction of a second: ns since the
 * epoch. The error names the text and the expected form. */
int loomd_parse_rfc3339(const char *text, int64_t *ns, loom_err_t *err);

#endif
