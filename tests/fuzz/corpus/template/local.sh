#!/bin/sh
{{! loom: plain local script for one catalog job. Render with --escape shell. }}
# loom job {{name}}: {{&resources.cpus}} cpus, {{&resources.memory_mib}} MiB, {{&resources.gpus}} gpus
set -eu
{{#submit_id}}
export LOOM_SUBMIT_ID={{submit_id}}
{{/submit_id}}
export LOOM_JOB_NAME={{name}}
{{#env}}
export {{&name}}={{value}}
{{/env}}
exec {{executable}}{{#arguments}} {{.}}{{/arguments}}
