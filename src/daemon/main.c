/* loomd — placeholder main until the daemon lands (issue: Foundation). It
 * only answers --help and --version so that the build has its target. */
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--version") == 0) {
        printf("loomd %s\n", LOOM_VERSION);
        return 0;
    }
    fprintf(argc > 1 && strcmp(argv[1], "--help") == 0 ? stdout : stderr,
            "usage: loomd [--help] [--version]\n(the daemon is not built yet)\n");
    return argc > 1 && strcmp(argv[1], "--help") == 0 ? 0 : 2;
}
