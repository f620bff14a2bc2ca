/* job.wait and job.logs, the long-poll methods (follow.c). */
#ifndef LOOMD_FOLLOW_H
#define LOOMD_FOLLOW_H

#include "daemon/methods.h"

/* Fair share of waiting: one unprivileged user holds at most `limit`
 * job.wait / job.logs calls that wait (timeout > 0) at once; a call beyond
 * it is refused with -32015 naming the limit. Operators are not counted. */
#define LOOMD_WAITS_PER_USER 8
typedef struct loomd_waits loomd_waits_t;
int loomd_waits_new(unsigned limit, loomd_waits_t **out, loom_err_t *err);
void loomd_waits_free(loomd_waits_t *w);

/* Adds job.wait and job.logs to d; m must outlive d. */
int loomd_follow_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err);

#endif
