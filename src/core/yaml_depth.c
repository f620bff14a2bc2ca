/* A YAML text's nesting depth, checked before any document is built.
 *
 * libyaml's scanner does work proportional to the flow nesting depth for
 * every token, so "a: [[[[..." costs time quadratic in its length (100k
 * levels: half a minute in the executor, 43 s in `loom submit`). A pass
 * over the events that stops at the first level past the limit bounds that
 * work; below the limit parsing is linear. */
#include <stdbool.h>
#include <yaml.h>

#include "core/yaml_depth.h"

int loom_text_yaml_depth(const char *text, size_t len, size_t max, size_t *line, size_t *column,
                         const char **problem)
{
    yaml_parser_t parser;
    if (!yaml_parser_initialize(&parser))
        return -1;
    yaml_parser_set_input_string(&parser, (const unsigned char *)text, len);
    int rc = 0;
    size_t depth = 0;
    for (bool end = false; !end && rc == 0;) {
        yaml_event_t ev;
        if (!yaml_parser_parse(&parser, &ev)) {
            *line = parser.problem_mark.line + 1;
            *column = parser.problem_mark.column + 1;
            *problem = parser.problem ? parser.problem : "invalid YAML";
            rc = parser.error == YAML_MEMORY_ERROR ? -1 : 2;
            break;
        }
        if (ev.type == YAML_SEQUENCE_START_EVENT || ev.type == YAML_MAPPING_START_EVENT) {
            if (++depth > max) {
                *line = ev.start_mark.line + 1;
                *column = ev.start_mark.column + 1;
                rc = 1;
            }
        } else if (ev.type == YAML_SEQUENCE_END_EVENT || ev.type == YAML_MAPPING_END_EVENT) {
            depth--;
        }
        end = ev.type == YAML_STREAM_END_EVENT;
        yaml_event_delete(&ev);
    }
    yaml_parser_delete(&parser);
    return rc;
}
