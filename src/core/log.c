/* key=value logging (logfmt). One line per event, written with a single
 * fwrite under the stream lock so concurrent threads never interleave. The
 * level and stream are process-wide: tests set and restore them. */
#include <stdatomic.h>
#include <string.h>

#include "loom/core.h"

static _Atomic int log_level = LOOM_LOG_INFO;
static FILE *_Atomic log_stream;

void loom_log_set_level(loom_log_level_t level)
{
    log_level = (int)level;
}
loom_log_level_t loom_log_get_level(void)
{
    return (loom_log_level_t)log_level;
}
void loom_log_set_stream(FILE *stream)
{
    log_stream = stream;
}

int loom_log_parse_level(const char *name, loom_log_level_t *out, loom_err_t *err)
{
    static const char *names[] = {"debug", "info", "warn", "error", "off"};
    for (int i = 0; i < 5; i++) {
        if (strcmp(name, names[i]) == 0) {
            *out = (loom_log_level_t)i;
            return LOOM_OK;
        }
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "log level '%s': expected debug, info, warn, error or off", name);
}

void loom_log(loom_log_level_t level, const char *event, const char *fmt, ...)
{
    static const char *names[] = {"debug", "info", "warn", "error"};
    if ((int)level < log_level || level >= LOOM_LOG_OFF)
        return;
    char ts[32];
    loom_time_format_rfc3339(loom_time_real_ns(), ts);
    loom_buf_t b = LOOM_BUF_INIT;
    loom_buf_appendf(&b, "ts=%s level=%s msg=\"", ts, names[level]);
    for (const char *p = event; *p; p++) {
        if (*p == '"' || *p == '\\')
            loom_buf_append_char(&b, '\\');
        loom_buf_append_char(&b, *p == '\n' ? ' ' : *p);
    }
    loom_buf_append_char(&b, '"');
    if (fmt && *fmt) {
        va_list ap;
        va_start(ap, fmt);
        loom_buf_append_char(&b, ' ');
        loom_buf_vappendf(&b, fmt, ap);
        va_end(ap);
    }
    loom_buf_append_char(&b, '\n');
    if (b.data) {
        FILE *f = log_stream ? log_stream : stderr;
        flockfile(f);
        fwrite(b.data, 1, b.len, f);
        fflush(f);
        funlockfile(f);
    }
    loom_buf_free(&b);
}
