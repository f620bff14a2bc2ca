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

/* The options object (docs/protocol.md, job.submit "options"). */
static const struct {
    const char *name;
    json_type type;
    size_t max; /* bytes of a string, or the magnitude of an integer */
} option_members[] = {
    {"workdir", JSON_STRING, 1024},
    {"output", JSON_STRING, 1024},
    {"error", JSON_STRING, 1024},
    {"env", JSON_ARRAY, 256},
    {"export", JSON_STRING, 8},
    {"array", JSON_STRING, 1024},
    {"dependency", JSON_STRING, 1024},
    {"begin", JSON_STRING, 64},
    {"account", JSON_STRING, 256},
    {"comment", JSON_STRING, 1024},
    {"hold", JSON_TRUE, 0},
    {"nice", JSON_INTEGER, 2147483645},
    {"retries", JSON_INTEGER, 100},
    {"ntasks", JSON_INTEGER, 4096},
    {"cpus_per_task", JSON_INTEGER, 4096},
};

static int option_member(const char *k, const json_t *v, size_t i, loom_err_t *err)
{
    size_t max = option_members[i].max;
    switch (option_members[i].type) {
    case JSON_STRING:
        if (!json_is_string(v) || json_string_length(v) == 0 || json_string_length(v) > max ||
            strlen(json_string_value(v)) != json_string_length(v))
            return loom_err_set(err, LOOM_EINVAL,
                                "options.%s: expected a string of 1 to %zu bytes without NUL", k,
                                max);
        return LOOM_OK;
    case JSON_INTEGER:
        if (!json_is_integer(v) || json_integer_value(v) < -(json_int_t)max ||
            json_integer_value(v) > (json_int_t)max)
            return loom_err_set(err, LOOM_EINVAL, "options.%s: expected an integer within +-%zu", k,
                                max);
        return LOOM_OK;
    case JSON_TRUE:
        if (!json_is_boolean(v))
            return type_error(err, "options.hold", "a boolean", v);
        return LOOM_OK;
    default: break;
    }
    if (!json_is_array(v) || json_array_size(v) > max)
        return loom_err_set(err, LOOM_EINVAL,
                            "options.env: expected an array of at most %zu "
                            "\"NAME=VALUE\" strings",
                            max);
    size_t j;
    json_t *e;
    json_array_foreach(v, j, e)
    {
        const char *t = json_string_value(e);
        if (!t || !strchr(t, '=') || t[0] == '=' || strlen(t) != json_string_length(e) ||
            json_string_length(e) > 8192)
            return loom_err_set(err, LOOM_EINVAL,
                                "options.env[%zu]: expected a \"NAME=VALUE\" string", j);
    }
    return LOOM_OK;
}

int loom_job_options_validate(const json_t *options, loom_err_t *err)
{
    if (!json_is_object(options))
        return type_error(err, "options", "an object", options);
    const char *k;
    json_t *v;
    json_object_foreach((json_t *)options, k, v)
    {
        size_t i, n = sizeof option_members / sizeof option_members[0];
        for (i = 0; i < n; i++)
            if (strcmp(option_members[i].name, k) == 0)
                break;
        if (i == n)
            return loom_err_set(err, LOOM_EINVAL,
                                "options: unknown member '%.64s' (expected workdir, output, error, "
                                "env, export, array, dependency, begin, account, comment, hold, "
                                "nice, retries, ntasks, cpus_per_task)",
                                k);
        if (option_member(k, v, i, err))
            return LOOM_EINVAL;
    }
    return LOOM_OK;
}

/* labels and options as JSON text in one allocation (*texts), "L\0O\0". */
static int spec_texts(const json_t *labels, const json_t *options, loom_job_spec_t *s, char **texts,
                      loom_err_t *err)
{
    char *l = labels ? json_dumps(labels, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    char *o = options ? json_dumps(options, JSON_COMPACT | JSON_SORT_KEYS) : NULL;
    size_t ll = l ? strlen(l) : 0, ol = o ? strlen(o) : 0;
    *texts = ((labels && !l) || (options && !o)) ? NULL : malloc(ll + ol + 2);
    if (*texts) {
        memcpy(*texts, l ? l : "", ll + 1);
        memcpy(*texts + ll + 1, o ? o : "", ol + 1);
        s->labels_json = l ? *texts : NULL;
        s->options_json = o ? *texts + ll + 1 : NULL;
    }
    free(l);
    free(o);
    return *texts ? LOOM_OK : loom_err_set(err, LOOM_ENOMEM, "out of memory");
}

int loom_job_spec_from_json(const json_t *obj, loom_job_spec_t *s, char **labels_text,
                            loom_err_t *err)
{
    const json_t *labels = NULL, *options = NULL;
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
            if (!(rc = loom_job_labels_validate(v, err)))
                labels = v;
        } else if (strcmp(k, "options") == 0) {
            if (!json_is_null(v) && !(rc = loom_job_options_validate(v, err)))
                options = v;
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
                              "options, reconfig)",
                              k);
        if (rc)
            goto fail;
    }
    if ((labels || options) && (rc = spec_texts(labels, options, s, labels_text, err)))
        goto fail;
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
    if (o)
        json_object_set_new(
            o, "owner",
            j->uid < 0
                ? json_null()
                : json_pack("{s:I, s:I, s:o, s:o, s:o}", "uid", (json_int_t)j->uid, "gid",
                            (json_int_t)j->gid, "user", string_or_null(j->user), "group",
                            string_or_null(j->group), "account", string_or_null(j->account)));
    json_t *run = j->run_json ? json_loads(j->run_json, 0, NULL) : NULL;
    if (o)
        json_object_set_new(o, "run", run ? run : json_null());
    json_t *est = j->estimate_json ? json_loads(j->estimate_json, 0, NULL) : NULL;
    if (o)
        json_object_set_new(o, "estimate", est ? est : json_null());
    json_t *opts = j->options_json ? json_loads(j->options_json, 0, NULL) : NULL;
    if (o)
        json_object_set_new(o, "options", opts ? opts : json_object());
    json_t *rcf = j->reconfig_json ? json_loads(j->reconfig_json, 0, NULL) : NULL;
    if (o)
        json_object_set_new(o, "reconfig", rcf ? rcf : json_null());
    return o;
}

json_t *loom_job_event_to_json(const loom_job_event_t *e)
{
    return json_pack("{s:o, s:o, s:s, s:o}", "time", time_or_null(e->time_ns), "from",
                     e->has_from ? json_string(loom_job_state_name(e->from)) : json_null(), "to",
                     loom_job_state_name(e->to), "reason", string_or_null(e->reason));
}
