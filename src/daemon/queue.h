/* job.hold, job.release, job.requeue and job.update: changes to queued
 * jobs (queue.c). */
#ifndef LOOMD_QUEUE_H
#define LOOMD_QUEUE_H

#include "daemon/methods.h"

/* Adds the four methods to d; m must outlive d. */
int loomd_queue_add(loom_rpc_dispatcher_t *d, loomd_methods_t *m, loom_err_t *err);

/* job.submit's options.begin and options.dependency in sbatch's forms
 * (LOOM_EINVAL naming the member). */
int loomd_queue_check_options(const char *options_json, loom_err_t *err);

/* job.submit with options.array: every task created in one transaction
 * (loom_store_submit_array) and the call answered; false when the
 * submission is no array (nothing done). */
bool loomd_queue_submit_array(loomd_methods_t *m, loom_rpc_call_t *call,
                              const loom_job_spec_t *spec);

#endif
