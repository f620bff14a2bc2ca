/* job.wait and job.logs, the long-poll methods (follow.c). */
#ifndef LOOMD_FOLLOW_H
#define LOOMD_FOLLOW_H

#include "daemon/methods.h"

/* Adds job.wait and job.logs to d; m must outlive d. */
int loomd_follow_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err);

#endif
