/* loom-shepherd: the per-job supervisor started by loomd's local executor.
 * All of it lives in libloom (src/exec/shepherd.c). */
#include "loom/exec.h"

int main(int argc, char **argv)
{
    return loom_exec_shepherd_main(argc, argv);
}
