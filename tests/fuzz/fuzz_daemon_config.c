/* Fuzz loomd's configuration file parser (src/daemon/config.c, linked from
 * loomd_lib): any bytes either parse into settings with known keys and
 * non-empty values, or fail with a message. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "daemon/config.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    loomd_conf_t c;
    loom_err_t err = {0};
    if (loomd_config_parse((const char *)data, size, "fuzz.conf", &c, &err) == LOOM_OK) {
        for (size_t i = 0; i < c.n; i++) {
            const loomd_conf_entry_t *e = &c.entries[i];
            bool flag;
            if (!loomd_config_key_known(e->key, &flag))
                abort();
            if (e->value && !flag && !*e->value)
                abort();
        }
        loomd_config_free(&c);
    } else if (!err.msg[0]) {
        abort();
    }
    return 0;
}
