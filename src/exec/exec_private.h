/* Private to src/exec. */
#ifndef LOOM_EXEC_PRIVATE_H
#define LOOM_EXEC_PRIVATE_H

#include <stdio.h>

#include "loom/exec.h"

/* Finds the cgroup v2 mount point from /proc/self/mountinfo. */
int loom_exec__cgroup2_mount(char *out, size_t outlen);

#endif
