/* Job vocabulary of the store: state and format names, the submission spec
 * with its defaults and validation, and owning copies of jobs. Validation
 * lives here, once, so every way into the store (RPC, tests, a future
 * importer) gets the same checks and the same messages; messages name the
 * field as the protocol spells it ("resources.cpus"). */
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <stdio.h>

#include "loom/store.h"
#include "store/store_int.h"

const char *loom_job_format_name(loom_job_format_t format)
{
    return format == LOOM_JOB_FORMAT_YAML ? "yaml" : "batch";
}

int loom_job_format_parse(const char *text, loom_job_format_t *out, loom_err_t *err)
{
    if (text && strcmp(text, "batch") == 0) {
        *out = LOOM_JOB_FORMAT_BATCH;
        return LOOM_OK;
    }
    if (text && strcmp(text, "yaml") == 0) {
        *out = LOOM_JOB_FORMAT_YAML;
        return LOOM_OK;
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "unknown job format '%s' (expected \"batch\" or \"yaml\")",
                        text ? text : "");
}

const char *loom_durability_name(loom_durability_t d)
{
    return d == LOOM_DURABILITY_FULL ? "full" : "normal";
}

int loom_durability_parse(const char *text, loom_durability_t *out, loom_err_t *err)
{
    if (text && strcmp(text, "normal") == 0) {
        *out = LOOM_DURABILITY_NORMAL;
        return LOOM_OK;
    }
    if (text && strcmp(text, "full") == 0) {
        *out = LOOM_DURABILITY_FULL;
        return LOOM_OK;
    }
    return loom_err_set(err, LOOM_EINVAL,
                        "unknown durability '%s' (expected \"normal\" or \"full\")",
                        text ? text : "");
}

void loom_job_spec_init(loom_job_spec_t *spec)
{
    memset(spec, 0, sizeof *spec);
    spec->cpus = 1;
    spec->format = LOOM_JOB_FORMAT_BATCH;
}

int loom_store_check_text(const char *field, const char *s, loom_err_t *err)
{
    size_t len = strlen(s), at = loom_text_unsafe_at(s, len);
    if (at == len)
        return LOOM_OK;
    unsigned char c = (unsigned char)s[at];
    return loom_err_set(err, LOOM_EINVAL,
                        "%s: %s at byte %zu (0x%02x...) is not allowed: text shown on terminals "
                        "may hold no control, C1 or bidirectional-override characters",
                        field, c < 0x80 ? "control character" : "character", at, c);
}

static int check_text(const char *field, const char *s, size_t min, size_t max, bool printable,
                      loom_err_t *err)
{
    size_t len = strlen(s);
    if (len < min || len > max)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected %zu to %zu bytes, found %zu", field,
                            min, max, len);
    if (!loom_utf8_valid(s, len))
        return loom_err_set(err, LOOM_EINVAL, "%s: not valid UTF-8", field);
    return printable ? loom_store_check_text(field, s, err) : LOOM_OK;
}

static int check_range(const char *field, int64_t v, int64_t min, int64_t max, loom_err_t *err)
{
    if (v < min || v > max)
        return loom_err_set(err, LOOM_EINVAL,
                            "%s: expected an integer from %lld to %lld, found %lld", field,
                            (long long)min, (long long)max, (long long)v);
    return LOOM_OK;
}

static bool label_key_ok(const char *k)
{
    size_t n = strlen(k);
    if (n == 0 || n > LOOM_STORE_LABEL_KEY_MAX)
        return false;
    for (size_t i = 0; i < n; i++) {
        char c = k[i];
        bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '.' || c == '_' || c == '-' || c == '/';
        if (!ok)
            return false;
    }
    return true;
}

int loom_job_labels_validate(const json_t *labels, loom_err_t *err)
{
    if (!json_is_object(labels))
        return loom_err_set(err, LOOM_EINVAL, "labels: expected an object, found %s",
                            loom_json_type_name(labels));
    if (json_object_size(labels) > LOOM_STORE_LABELS_MAX)
        return loom_err_set(err, LOOM_EINVAL, "labels: at most %d labels, found %zu",
                            LOOM_STORE_LABELS_MAX, json_object_size(labels));
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)labels, k, v)
    {
        if (!label_key_ok(k))
            return loom_err_set(
                err, LOOM_EINVAL,
                "labels: key '%.80s' must be 1 to %d characters of A-Z a-z 0-9 . _ - /", k,
                LOOM_STORE_LABEL_KEY_MAX);
        if (!json_is_string(v))
            return loom_err_set(err, LOOM_EINVAL, "labels/%s: expected a string, found %s", k,
                                loom_json_type_name(v));
        char field[128];
        snprintf(field, sizeof field, "labels/%s", k);
        if (check_text(field, json_string_value(v), 0, LOOM_STORE_LABEL_VALUE_MAX, true, err))
            return err ? err->code : LOOM_EINVAL;
    }
    return LOOM_OK;
}

int loom_job_name_check(const char *name, loom_err_t *err)
{
    int rc = check_text("name", name, 1, LOOM_STORE_NAME_MAX, true, err);
    if (rc == LOOM_OK && (strchr(name, '/') || strstr(name, "..")))
        rc = loom_err_set(err, LOOM_EINVAL,
                          "name: '%.64s' holds '%s', which is not allowed: the name becomes part "
                          "of output paths (%%x); expected a name without '/' or '..'",
                          name, strchr(name, '/') ? "/" : "..");
    return rc;
}

int loom_job_spec_validate(const loom_job_spec_t *s, loom_err_t *err)
{
    int rc;
    if (!s->name)
        return loom_err_set(err, LOOM_EINVAL, "name: required");
    if ((rc = loom_job_name_check(s->name, err)))
        return rc;
    if (!s->script)
        return loom_err_set(err, LOOM_EINVAL, "script: required");
    if ((rc = check_text("script", s->script, 0, LOOM_STORE_SCRIPT_MAX, false, err)))
        return rc;
    if (s->submit_id &&
        (rc = check_text("submit_id", s->submit_id, 1, LOOM_STORE_SUBMIT_ID_MAX, true, err)))
        return rc;
    if (s->format != LOOM_JOB_FORMAT_BATCH && s->format != LOOM_JOB_FORMAT_YAML)
        return loom_err_set(err, LOOM_EINVAL, "format: expected \"batch\" or \"yaml\"");
    if ((rc = check_range("resources.cpus", s->cpus, 1, LOOM_STORE_CPUS_MAX, err)))
        return rc;
    if (s->memory_bytes > (uint64_t)INT64_MAX)
        return loom_err_set(err, LOOM_EINVAL, "resources.memory: at most %lld bytes",
                            (long long)INT64_MAX);
    if (s->gpu_memory_bytes > (uint64_t)INT64_MAX)
        return loom_err_set(err, LOOM_EINVAL, "resources.gpu_memory: at most %lld bytes",
                            (long long)INT64_MAX);
    if ((rc = check_range("resources.gpus", s->gpus, 0, LOOM_STORE_GPUS_MAX, err)))
        return rc;
    if ((rc = check_range("resources.gpu_share", s->gpu_share_milli, 0, 1000, err)))
        return rc;
    if (s->gpus > 0 && s->gpu_share_milli > 0)
        return loom_err_set(err, LOOM_EINVAL,
                            "resources: give either gpus (whole GPUs) or gpu_share (a share of one "
                            "GPU), not both");
    if (s->gpu_type && (rc = check_text("resources.gpu_type", s->gpu_type, 1, 64, true, err)))
        return rc;
    if ((rc = check_range("time_limit", s->time_limit_s, 0, LOOM_STORE_TIME_LIMIT_MAX, err)))
        return rc;
    if ((rc = check_range("priority", s->priority, LOOM_STORE_PRIORITY_MIN, LOOM_STORE_PRIORITY_MAX,
                          err)))
        return rc;
    if (s->estimate_json) {
        json_t *est = NULL;
        loom_err_t perr;
        if (loom_json_parse(s->estimate_json, strlen(s->estimate_json), "estimate", 16, &est,
                            &perr))
            return loom_err_set(err, perr.code, "%s", perr.msg); /* EINVAL, or ENOMEM */
        bool obj = json_is_object(est);
        json_decref(est);
        if (!obj)
            return loom_err_set(err, LOOM_EINVAL, "estimate: expected a JSON object");
    }
    if (s->reconfig_json) {
        json_t *rcf = NULL;
        loom_err_t perr;
        if (loom_json_parse(s->reconfig_json, strlen(s->reconfig_json), "reconfig", 8, &rcf, &perr))
            return loom_err_set(err, perr.code, "%s", perr.msg); /* EINVAL, or ENOMEM */
        bool obj = json_is_object(rcf);
        json_decref(rcf);
        if (!obj)
            return loom_err_set(err, LOOM_EINVAL, "reconfig: expected a JSON object");
    }
    if (s->options_json) {
        json_t *opts = NULL;
        loom_err_t perr;
        if (loom_json_parse(s->options_json, strlen(s->options_json), "options", 4, &opts, &perr))
            return loom_err_set(err, perr.code, "%s", perr.msg); /* EINVAL, or ENOMEM */
        rc = loom_job_options_validate(opts, err);
        json_decref(opts);
        if (rc)
            return rc;
    }
    if (s->labels_json) {
        json_t *labels = NULL;
        loom_err_t perr;
        if (loom_json_parse(s->labels_json, strlen(s->labels_json), "labels", 4, &labels, &perr))
            return loom_err_set(err, perr.code, "%s", perr.msg); /* EINVAL, or ENOMEM */
        rc = loom_job_labels_validate(labels, err);
        json_decref(labels);
        if (rc)
            return rc;
    }
    return LOOM_OK;
}

static char *dup_or_null(const char *s, bool *fail)
{
    if (!s)
        return NULL;
    char *d = strdup(s);
    if (!d)
        *fail = true;
    return d;
}

void loom_job_free(loom_job_t *job)
{
    if (!job)
        return;
    free(job->submit_id);
    free(job->name);
    free(job->script);
    free(job->gpu_type);
    free(job->labels_json);
    free(job->reason);
    free(job->run_json);
    free(job->estimate_json);
    free(job->options_json);
    free(job->reconfig_json);
    free(job->user);
    free(job->group);
    free(job->account);
    memset(job, 0, sizeof *job);
}

int loom_job_copy(loom_job_t *dst, const loom_job_t *src)
{
    bool fail = false;
    *dst = *src;
    dst->submit_id = dup_or_null(src->submit_id, &fail);
    dst->name = dup_or_null(src->name, &fail);
    dst->script = dup_or_null(src->script, &fail);
    dst->gpu_type = dup_or_null(src->gpu_type, &fail);
    dst->labels_json = dup_or_null(src->labels_json, &fail);
    dst->reason = dup_or_null(src->reason, &fail);
    dst->run_json = dup_or_null(src->run_json, &fail);
    dst->estimate_json = dup_or_null(src->estimate_json, &fail);
    dst->options_json = dup_or_null(src->options_json, &fail);
    dst->reconfig_json = dup_or_null(src->reconfig_json, &fail);
    dst->user = dup_or_null(src->user, &fail);
    dst->group = dup_or_null(src->group, &fail);
    dst->account = dup_or_null(src->account, &fail);
    if (fail) {
        loom_job_free(dst);
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

int loom_store_job_from_spec(loom_job_t *job, const loom_job_spec_t *s)
{
    bool fail = false;
    memset(job, 0, sizeof *job);
    job->submit_id = dup_or_null(s->submit_id, &fail);
    job->name = dup_or_null(s->name, &fail);
    job->script = dup_or_null(s->script, &fail);
    job->gpu_type = dup_or_null(s->gpu_type, &fail);
    job->labels_json = dup_or_null(s->labels_json ? s->labels_json : "{}", &fail);
    job->estimate_json = dup_or_null(s->estimate_json, &fail);
    job->options_json = dup_or_null(s->options_json, &fail);
    job->reconfig_json = dup_or_null(s->reconfig_json, &fail);
    job->uid = s->has_owner ? s->uid : -1;
    job->gid = s->has_owner ? s->gid : -1;
    if (s->has_owner) {
        job->user = dup_or_null(s->user, &fail);
        job->group = dup_or_null(s->group, &fail);
        job->account = dup_or_null(s->account ? s->account : s->group, &fail);
    }
    job->format = s->format;
    job->cpus = s->cpus;
    job->memory_bytes = s->memory_bytes;
    job->gpus = s->gpus;
    job->gpu_share_milli = s->gpu_share_milli;
    job->gpu_memory_bytes = s->gpu_memory_bytes;
    job->time_limit_s = s->time_limit_s;
    job->priority = s->priority;
    job->state = LOOM_JOB_PENDING;
    if (fail) {
        loom_job_free(job);
        return LOOM_ENOMEM;
    }
    return LOOM_OK;
}

void loom_job_list_free(loom_job_list_t *list)
{
    if (!list)
        return;
    for (size_t i = 0; i < list->n; i++)
        loom_job_free(&list->jobs[i]);
    free(list->jobs);
    memset(list, 0, sizeof *list);
}

void loom_store_events_free(loom_job_event_t *events, size_t n)
{
    for (size_t i = 0; i < n; i++)
        free(events[i].reason);
    free(events);
}
