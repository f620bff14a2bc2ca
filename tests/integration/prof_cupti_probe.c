/* Loads libloom_cupti.so and calls InitializeInjection() the way the CUDA
 * driver does for CUDA_INJECTION64_PATH, then exits (running the tracer's
 * exit handler). Prints "InitializeInjection=<result>" on stdout. Used by
 * tests/integration/test_prof_cupti.sh to check the graceful failure where
 * no GPU driver is present, and on a GPU machine that tracing starts. */
#include <dlfcn.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: prof_cupti_probe LIBRARY\n");
        return 2;
    }
    void *h = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        fprintf(stderr, "prof_cupti_probe: %s\n", dlerror());
        return 1;
    }
    int (*init)(void) = (int (*)(void))dlsym(h, "InitializeInjection");
    if (!init) {
        fprintf(stderr, "prof_cupti_probe: no InitializeInjection in %s\n", argv[1]);
        return 1;
    }
    printf("InitializeInjection=%d\n", init());
    return 0; /* the library stays loaded so its atexit handler runs */
}
