/* loomd's configuration file (/etc/loom/loomd.conf): `key = value` lines
 * whose keys are loomd's long options. The file becomes command-line
 * arguments placed before the real ones, so that flags override it and
 * parse_args stays the one place where options are checked. */
#ifndef LOOMD_CONFIG_H
#define LOOMD_CONFIG_H

#include <stdbool.h>
#include <stddef.h>

#include "loom/core.h"

#define LOOMD_CONFIG_MAX_BYTES   (64 * 1024) /* a larger file is refused */
#define LOOMD_CONFIG_MAX_ENTRIES 256
#define LOOMD_CONFIG_MAX_VALUE   4096

#ifndef LOOMD_CONFIG_DEFAULT
#define LOOMD_CONFIG_DEFAULT "/etc/loom/loomd.conf"
#endif

typedef struct loomd_conf_entry {
    char key[32];
    char *value; /* NULL for a false boolean; "" never */
    int line;
} loomd_conf_entry_t;

typedef struct loomd_conf {
    loomd_conf_entry_t *entries;
    size_t n;
} loomd_conf_t;

/* Parses len bytes of text (path names it in messages: "PATH:LINE: ...").
 * Unknown keys, a key given twice (but node, which repeats), a value
 * missing, too long, or not a boolean for pack-check are errors. */
int loomd_config_parse(const char *text, size_t len, const char *path, loomd_conf_t *out,
                       loom_err_t *err);
void loomd_config_free(loomd_conf_t *c);
/* Whether key is one of loomd's options the file may set; *is_flag (if
 * given) says whether it is a flag (no value) rather than a valued option. */
bool loomd_config_key_known(const char *key, bool *is_flag);

/* The arguments loomd parses: argv[0], then the configuration's options
 * that the command line does not give itself, then the command line less
 * its --config. The file is --config FILE, else $LOOMD_CONFIG, else
 * LOOMD_CONFIG_DEFAULT if it exists; "none" reads no file. The result lives
 * until loomd_config_release(). */
int loomd_config_args(int argc, char **argv, int *out_argc, char ***out_argv, loom_err_t *err);
void loomd_config_release(void);

#endif
