/* The JSON form of jobs, as docs/protocol.md specifies it: parsing the
 * job.submit parameters into a spec, and writing the job object. It lives
 * with the store because it is the job's schema, not the transport: loomd
 * reads it and the loom CLI and tools write it. */
#include <stdlib.h>
#include <string.h>

#include "loom/store.h"

static int type_error(loom_err_t *err, const char *name, const char *want, const json_t *v)
{
    return loom_err_set(err, LOOM_EINVAL, "%s: expected %s, found %s", name, want,
                        loom_json_type_name(v));
}

static int get_string(const json_t *v, const char *name, const char **out, loom_err_t *err)
{
    if (!json_is_string(v))
        return type_error(err, name, "a string", v);
    *out = json_string_value(v);
    if (strlen(*out) != json_string_length(v))
        return loom_err_set(err, LOOM_EINVAL, "%s: contains a NUL character", name);
    return LOOM_OK;
}

static int get_int(const json_t *v, const char *name, int64_t *out, loom_err_t *err)
{
    if (!json_is_integer(v))
        return type_error(err, name, "an integer", v);
    *out = json_integer_value(v);
    return LOOM_OK;
}

/* An integer number of bytes, or a size string. */
static int get_size(const json_t *v, const char *name, uint64_t *out, loom_err_t *err)
{
    if (json_is_integer(v)) {
        if (json_integer_value(v) < 0)
            return loom_err_set(err, LOOM_EINVAL, "%s: expected a size >= 0, found %lld", name,
                                (long long)json_integer_value(v));
        *out = (uint64_t)json_integer_value(v);
        return LOOM_OK;
    }
    if (!json_is_string(v))
        return type_error(err, name, "an integer (bytes) or a size string like \"16GiB\"", v);
    if (loom_parse_size(json_string_value(v), out, err))
        return loom_err_prefix(err, "%s", name);
    return LOOM_OK;
}

/* Integer seconds, or a duration string; rounded up to whole seconds. */
static int get_seconds(const json_t *v, const char *name, int64_t *out, loom_err_t *err)
{
    if (json_is_integer(v)) {
        *out = json_integer_value(v);
        return LOOM_OK;
    }
    if (!json_is_string(v))
        return type_error(err, name, "an integer (seconds) or a duration string like \"1h30m\"", v);
    int64_t ns;
    if (loom_parse_duration(json_string_value(v), &ns, err))
        return loom_err_prefix(err, "%s", name);
    if (ns < 0)
        return loom_err_set(err, LOOM_EINVAL, "%s: expected a duration >= 0", name);
    *out = ns / LOOM_NS_PER_S + (ns % LOOM_NS_PER_S ? 1 : 0);
    return LOOM_OK;
}

static int parse_resources(const json_t *r, loom_job_spec_t *s, loom_err_t *err)
{
    if (!json_is_object(r))
        return type_error(err, "resources", "an object", r);
    const char *k;
    json_t *v;
    int rc = LOOM_OK;
    json_object_foreach((json_t *)r, k, v)
    {
        if (strcmp(k, "cpus") == 0)
            rc = get_int(v, "resources.cpus", &s->cpus, err);
        else if (strcmp(k, "memory") == 0)
            rc = get_size(v, "resources.memory", &s->memory_bytes, err);
        else if (strcmp(k, "gpus") == 0)
            rc = get_int(v, "resources.gpus", &s->gpus, err);
        else if (strcmp(k, "gpu_share") == 0)
            rc = get_int(v, "resources.gpu_share", &s->gpu_share_milli, err);
        else if (strcmp(k, "gpu_memory") == 0)
            rc = get_size(v, "resources.gpu_memory", &s->gpu_memory_bytes, err);
        else if (strcmp(k, "gpu_type") == 0)
            rc = json_is_null(v) ? LOOM_OK : get_string(v, "resources.gpu_type", &s->gpu_type, err);
        else
            rc = loom_err_set(err, LOOM_EINVAL,
                              "resources: unknown member '%.64s' (expected cpus, memory, gpus, "
                              "gpu_share, gpu_memory, gpu_type)",
                              k);
        if (rc)
            return rc;
    }
    return LOOM_OK;
}

int loom_job_spec_from_json(const json_t *obj, loom_job_spec_t *s, char **labels_text,
                            loom_err_t *err)
{
    *labels_text = NULL;
    loom_job_spec_init(s);
    if (!json_is_object(obj))
        return type_error(err, "params", "an object", obj);
    const char *k;
    json_t *v;
    int rc = LOOM_OK;
    json_object_foreach((json_t *)obj, k, v)
    {
        if (strcmp(k, "name") == 0)
            rc = get_string(v, "name", &s->name, err);
        else if (strcmp(k, "script") == 0)
            rc = get_string(v, "script", &s->script, err);
        else if (strcmp(k, "format") == 0) {
            const char *f;
            if (!(rc = get_string(v, "format", &f, err)) &&
                loom_job_format_parse(f, &s->format, err))
                rc = loom_err_prefix(err, "format");
        } else if (strcmp(k, "resources") == 0)
            rc = parse_resources(v, s, err);
        else if (strcmp(k, "time_limit") == 0)
            rc = get_seconds(v, "time_limit", &s->time_limit_s, err);
        else if (strcmp(k, "priority") == 0)
            rc = get_int(v, "priority", &s->priority, err);
        else if (strcmp(k, "submit_id") == 0)
            rc = json_is_null(v) ? LOOM_OK : get_string(v, "submit_id", &s->submit_id, err);
        else if (strcmp(k, "labels") == 0) {
            if (!(rc = loom_job_labels_validate(v, err))) {
                *labels_text = json_dumps(v, JSON_COMPACT | JSON_SORT_KEYS);
                if (!*labels_text)
                    rc = loom_err_set(err, LOOM_ENOMEM, "out of memory");
                s->labels_json = *labels_text;
            }
        } else if (strcmp(k, "model") == 0) {
            /* Interpreted by loomd (the estimator), not by the store. */
            if (json_is_object(v))
                s->model = v;
            else if (!json_is_null(v))
                rc = type_error(err, "model",
                                "an object such as {\"path\": \"/abs/model.onnx\", \"batch\": 32}",
                                v);
        } else if (strcmp(k, "reconfig") == 0) {
            /* Checked by loomd (docs/scheduling.md, Rubick), not by the store. */
        } else
            rc = loom_err_set(err, LOOM_EINVAL,
                              "unknown parameter '%.64s' (expected name, script, format, "
                              "resources, time_limit, priority, labels, submit_id, model, "
                              "reconfig)",
                              k);
        if (rc)
            goto fail;
    }
    if ((rc = loom_job_spec_validate(s, err)))
        goto fail;
    return LOOM_OK;
fail:
    free(*labels_text);
    *labels_text = NULL;
    return rc;
}

static json_t *time_or_null(int64_t ns)
{
    if (ns == 0)
        return json_null();
    char buf[32];
    loom_time_format_rfc3339(ns, buf);
    return json_string(buf);
}

static json_t *string_or_null(const char *s)
{
    return s ? json_string(s) : json_null();
}

json_t *loom_job_to_json(const loom_job_t *j, bool with_script)
{
    json_t *labels = NULL;
    if (j->labels_json)
        labels = json_loads(j->labels_json, 0, NULL);
    if (!labels)
        labels = json_object();
    json_t *res =
        json_pack("{s:I, s:I, s:I, s:I, s:I, s:o}", "cpus", (json_int_t)j->cpus, "memory",
                  (json_int_t)j->memory_bytes, "gpus", (json_int_t)j->gpus, "gpu_share",
                  (json_int_t)j->gpu_share_milli, "gpu_memory", (json_int_t)j->gpu_memory_bytes,
                  "gpu_type", string_or_null(j->gpu_type));
    json_t *o = json_pack(
        "{s:I, s:o, s:s, s:s, s:s, s:o, s:o, s:I, s:I, s:o, s:o, s:o, s:o, s:o}", "id",
        (json_int_t)j->id, "submit_id", string_or_null(j->submit_id), "name",
        j->name ? j->name : "", "format", loom_job_format_name(j->format), "state",
        loom_job_state_name(j->state), "reason", string_or_null(j->reason), "resources", res,
        "time_limit", (json_int_t)j->time_limit_s, "priority", (json_int_t)j->priority, "labels",
        labels, "submit_time", time_or_null(j->submit_time_ns), "start_time",
        time_or_null(j->start_time_ns), "end_time", time_or_null(j->end_time_ns), "update_time",
        time_or_null(j->update_time_ns));
    if (o && with_script)
        json_object_set_new(o, "script", json_string(j->script ? j->script : ""));
    json_t *run = j->run_json ? json_loads(j->run_json, 0, NULL) : NULL;
    if (o)
        json_object_set_new(o, "run", run ? run : json_null());
    json_t *est = j->estimate_json ? json_loads(j->estimate_json, 0, NULL) : NULL;
    if (o)
        json_object_set_new(o, "estimate", est ? est : json_null());
    return o;
}

json_t *loom_job_event_to_json(const loom_job_event_t *e)
{
    return json_pack("{s:o, s:o, s:s, s:o}", "time", time_or_null(e->time_ns), "from",
                     e->has_from ? json_string(loom_job_state_name(e->from)) : json_null(), "to",
                     loom_job_state_name(e->to), "reason", string_or_null(e->reason));
}
