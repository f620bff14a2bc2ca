/* loomd's holds, begin times and dependencies (deps.c). Private to loomd. */
#ifndef LOOMD_DEPS_H
#define LOOMD_DEPS_H

#include <stdint.h>

#include "loom/core.h"

/* sbatch's --begin: now[+N[seconds|minutes|hours|days|weeks]],
 * YYYY-MM-DD[THH:MM[:SS]] or HH:MM[:SS] (local time; a time of day alone is
 * the next such moment after submit_ns). Out: wall-clock nanoseconds. */
int loomd_parse_begin(const char *text, int64_t submit_ns, int64_t *out_ns, loom_err_t *err);

#endif
