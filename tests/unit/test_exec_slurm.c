/* The Slurm executor against a real Slurm (scripts/slurm/cluster.sh starts
 * munged, slurmctld and two slurmd with 4 fake GPUs each). */
#include <pwd.h>
#include <stdio.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/exec.h"
#include "test_util.h"

static char dir[64];
static loom_exec_slurm_t *x;

static int cluster_up(void **state)
{
    snprintf(dir, sizeof dir, "/tmp/loom-exslurm-XXXXXX");
    if (!mkdtemp(dir))
        return -1;
    char cmd[256];
    snprintf(cmd, sizeof cmd, "scripts/slurm/cluster.sh up %s/cluster 2 4", dir);
    FILE *p = popen(cmd, "r");
    char line[512] = "";
    if (!p || !fgets(line, sizeof line, p) || pclose(p) != 0)
        return -1;
    char *eq = strchr(line, '=');
    if (strncmp(line, "export SLURM_CONF=", 18) != 0 || !eq)
        return -1;
    line[strcspn(line, "\n")] = '\0';
    setenv("SLURM_CONF", eq + 1, 1);
    /* A long jobs directory: every sbatch option naming a path in it
     * (--output, --error, --chdir) is over 200 bytes, and a job whose
     * option were cut short would write its output somewhere else. */
    char jobs[320];
    snprintf(jobs, sizeof jobs, "%s/jobs-%0200d", dir, 0);
    loom_exec_slurm_config_t cfg = {.jobs_dir = jobs};
    return loom_exec_slurm_new(&cfg, &x, NULL) == LOOM_OK ? 0 : -1;
}

static int cluster_down(void **state)
{
    char cmd[256];
    snprintf(cmd, sizeof cmd, "scripts/slurm/cluster.sh down %s/cluster", dir);
    loom_exec_slurm_free(x);
    if (system(cmd) != 0)
        return -1;
    return loom_test_rmtree(dir);
}

static void state_mapping(void **state)
{
    loom_exec_outcome_t o;
    assert_int_equal(loom_exec_slurm_map_state("PENDING", "0:0", "Resources", &o), 0);
    assert_int_equal(loom_exec_slurm_map_state("RUNNING", "0:0", "None", &o), 0);
    assert_int_equal(loom_exec_slurm_map_state("COMPLETED", "0:0", "None", &o), 1);
    assert_int_equal(o.end, LOOM_EXEC_COMPLETED);
    assert_int_equal(loom_exec_slurm_map_state("FAILED", "3:0", "NonZeroExitCode", &o), 1);
    assert_int_equal(o.end, LOOM_EXEC_FAILED);
    assert_int_equal(o.exit_code, 3);
    assert_string_equal(o.reason, "exit code 3 (Slurm: FAILED)");
    assert_int_equal(loom_exec_slurm_map_state("FAILED", "0:9", "", &o), 1);
    assert_int_equal(o.signal, 9);
    assert_int_equal(loom_exec_slurm_map_state("TIMEOUT", "0:15", "TimeLimit", &o), 1);
    assert_int_equal(o.end, LOOM_EXEC_TIMEOUT);
    assert_int_equal(loom_exec_slurm_map_state("CANCELLED", "0:15", "None", &o), 1);
    assert_int_equal(o.end, LOOM_EXEC_CANCELLED);
    assert_int_equal(loom_exec_slurm_map_state("NODE_FAIL", "0:0", "NodeDown", &o), 1);
    assert_int_equal(o.end, LOOM_EXEC_FAILED);
    assert_string_equal(o.reason, "Slurm: NODE_FAIL, NodeDown");
    assert_int_equal(loom_exec_slurm_map_state("OUT_OF_MEMORY", "0:125", "None", &o), 1);
    assert_string_equal(o.reason, "Slurm: OUT_OF_MEMORY");
}

static void mirrors_nodes(void **state)
{
    json_t *nodes = NULL;
    loom_err_t err;
    if (loom_exec_slurm_nodes(x, &nodes, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(json_array_size(nodes), 2);
    json_t *n = json_array_get(nodes, 1);
    assert_string_equal(json_string_value(json_object_get(n, "name")), "loom2");
    assert_int_equal(json_integer_value(json_object_get(n, "gpus")), 4);
    assert_int_equal(json_integer_value(json_object_get(n, "cpus")), sysconf(_SC_NPROCESSORS_ONLN));
    assert_true(json_is_true(json_object_get(n, "available")));
    json_decref(nodes);
}

static loom_exec_outcome_t wait_end(loom_exec_handle_t *h)
{
    loom_exec_outcome_t out;
    loom_err_t err;
    int rc;
    while ((rc = loom_exec_slurm_poll(x, h, &out, &err)) == 0)
        usleep(100000);
    if (rc != 1)
        fail_msg("poll: %s", err.msg);
    return out;
}

static void runs_on_the_chosen_node(void **state)
{
    const int gpus[] = {0, 1};
    const char *env[] = {"MY_VAR=42", NULL};
    loom_exec_job_t job = {.id = 1,
                           .name = "pinned",
                           .node = "loom2",
                           .tag = "loom:1",
                           .gpus = gpus,
                           .n_gpus = 2,
                           .env = env,
                           .cpus_milli = 1000,
                           .memory_bytes = 64 << 20,
                           .time_limit_ns = 60 * LOOM_NS_PER_S,
                           .script = "echo $SLURMD_NODENAME $CUDA_VISIBLE_DEVICES $LOOM_JOB_ID "
                                     "$MY_VAR\n"};
    loom_exec_handle_t h;
    loom_err_t err;
    if (loom_exec_slurm_start(x, &job, &h, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    assert_true(atoi(h.ext_id) > 0);
    loom_exec_outcome_t o = wait_end(&h);
    assert_int_equal(o.end, LOOM_EXEC_COMPLETED);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, h.stdout_path, &err), LOOM_OK);
    assert_string_equal(b.data, "loom2 0,1 1 42\n");
    loom_buf_free(&b);

    job.id = 2;
    job.tag = "loom:2";
    job.script = "exit 3\n";
    assert_int_equal(loom_exec_slurm_start(x, &job, &h, &err), LOOM_OK);
    o = wait_end(&h);
    assert_int_equal(o.end, LOOM_EXEC_FAILED);
    assert_int_equal(o.exit_code, 3);
}

static void refusal_names_slurms_reason(void **state)
{
    const int gpus[5] = {0};
    loom_exec_job_t job = {
        .id = 3, .name = "big", .tag = "loom:3", .gpus = gpus, .n_gpus = 5, .script = "true\n"};
    loom_exec_handle_t h;
    loom_err_t err;
    assert_int_equal(loom_exec_slurm_start(x, &job, &h, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "job 3: Slurm refused it: "));
    assert_non_null(strstr(err.msg, "Requested node configuration is not available"));
}

static void cancel_and_adopt_by_tag(void **state)
{
    loom_exec_job_t job = {.id = 4, .name = "long", .tag = "loom:4", .script = "sleep 300\n"};
    loom_exec_handle_t h;
    loom_err_t err;
    assert_int_equal(loom_exec_slurm_start(x, &job, &h, &err), LOOM_OK);
    /* loomd crashed before recording the Slurm id: find it by the tag. */
    loom_exec_handle_t again = {.job_id = 4};
    assert_int_equal(loom_exec_slurm_ops.adopt(x, &again, &err), LOOM_OK);
    assert_string_equal(again.ext_id, h.ext_id);
    loom_exec_handle_t none = {.job_id = 999};
    assert_int_equal(loom_exec_slurm_ops.adopt(x, &none, &err), LOOM_ENOTFOUND);
    loom_exec_outcome_t o;
    while (loom_exec_slurm_poll(x, &again, &o, &err) == 0 && strcmp(again.ext_state, "RUNNING"))
        usleep(100000);
    assert_int_equal(loom_exec_slurm_cancel(x, &again, &err), LOOM_OK);
    o = wait_end(&again);
    assert_int_equal(o.end, LOOM_EXEC_CANCELLED);
}

static void yaml_job_on_slurm(void **state)
{
    loom_exec_job_t job = {.id = 5,
                           .name = "y",
                           .tag = "loom:5",
                           .format = LOOM_EXEC_YAML,
                           .script = "apiVersion: batch/v1\nkind: Job\nspec:\n  template:\n"
                                     "    spec:\n      containers:\n      - name: m\n"
                                     "        command: [sh, -c, 'echo \"$A it''s\"']\n"
                                     "        env: [{name: A, value: \"x y\"}]\n"};
    loom_exec_handle_t h;
    loom_err_t err;
    if (loom_exec_slurm_start(x, &job, &h, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_exec_outcome_t o = wait_end(&h);
    assert_int_equal(o.end, LOOM_EXEC_COMPLETED);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, h.stdout_path, &err), LOOM_OK);
    assert_string_equal(b.data, "x y it's\n");
    loom_buf_free(&b);
}

/* One squeue per step: poll answers waiting and running jobs from the
 * snapshot, and still finds the end (and exit code) of a job that ended. */
static void sync_snapshot(void **state)
{
    loom_exec_job_t job = {.id = 6, .name = "snap", .tag = "loom:6", .script = "sleep 300\n"};
    loom_exec_handle_t h;
    loom_err_t err;
    assert_int_equal(loom_exec_slurm_start(x, &job, &h, &err), LOOM_OK);
    loom_exec_outcome_t o;
    if (loom_exec_slurm_sync(x, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    assert_int_equal(loom_exec_slurm_poll(x, &h, &o, &err), 0);
    assert_true(strcmp(h.ext_state, "PENDING") == 0 || strcmp(h.ext_state, "RUNNING") == 0);
    assert_int_equal(loom_exec_slurm_cancel(x, &h, &err), LOOM_OK);
    int rc;
    do {
        usleep(100000);
        assert_int_equal(loom_exec_slurm_sync(x, &err), LOOM_OK);
    } while ((rc = loom_exec_slurm_poll(x, &h, &o, &err)) == 0);
    assert_int_equal(rc, 1);
    assert_int_equal(o.end, LOOM_EXEC_CANCELLED);
    /* A Slurm id nobody knows: not in the snapshot, scontrol and sacct do
     * not know it either. */
    loom_exec_handle_t ghost = {.job_id = 7};
    snprintf(ghost.ext_id, sizeof ghost.ext_id, "987654");
    assert_int_equal(loom_exec_slurm_poll(x, &ghost, &o, &err), 1);
    assert_int_equal(o.end, LOOM_EXEC_FAILED);
    assert_non_null(strstr(o.reason, "lost: Slurm no longer knows job 987654"));
}

static bool node_available(const char *name)
{
    json_t *nodes = NULL;
    loom_err_t err;
    if (loom_exec_slurm_nodes(x, &nodes, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    bool avail = false;
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n)
    {
        if (strcmp(json_string_value(json_object_get(n, "name")), name) == 0)
            avail = json_is_true(json_object_get(n, "available"));
    }
    json_decref(nodes);
    return avail;
}

/* What loomd's model follows: a drained node is unavailable, and available
 * again once resumed. */
static void node_states(void **state)
{
    assert_true(node_available("loom1"));
    assert_int_equal(system("scontrol update nodename=loom1 state=drain reason=unit-test"), 0);
    assert_false(node_available("loom1"));
    assert_int_equal(system("scontrol update nodename=loom1 state=resume"), 0);
    assert_true(node_available("loom1"));
    /* DOWN is covered by tests/integration/test_slurm_loomd.py: this
     * cluster (ReturnToService=2) returns a DOWN node to service as soon as
     * its slurmd answers. */
}

/* A job of another user (multi-user loomd): sbatch runs as that user, so
 * Slurm runs the job as that user and its output file is that user's.
 * Needs root; the user is nobody (no account to create). */
static void runs_as_its_owner(void **state)
{
    struct passwd *pw = getpwnam("nobody");
    if (geteuid() != 0 || !pw)
        skip();
    char wd[128], opts[256], out[160];
    snprintf(wd, sizeof wd, "%s/nobody", dir);
    assert_int_equal(chmod(dir, 0755), 0);
    assert_int_equal(mkdir(wd, 0700), 0);
    assert_int_equal(chown(wd, pw->pw_uid, pw->pw_gid), 0);
    snprintf(opts, sizeof opts, "{\"workdir\": \"%s\"}", wd);
    loom_exec_job_t job = {.id = 9,
                           .name = "owner",
                           .script = "echo $(id -u) $(id -g) $(pwd) $USER\n",
                           .options_json = opts,
                           .run_as_owner = true,
                           .uid = pw->pw_uid,
                           .gid = pw->pw_gid};
    loom_exec_handle_t h;
    loom_err_t err;
    if (loom_exec_slurm_start(x, &job, &h, &err) != LOOM_OK)
        fail_msg("%s", err.msg);
    loom_exec_outcome_t o = wait_end(&h);
    assert_int_equal(o.end, LOOM_EXEC_COMPLETED);
    snprintf(out, sizeof out, "%s/loom-9.out", wd);
    assert_string_equal(h.stdout_path, out);
    struct stat st;
    assert_int_equal(stat(out, &st), 0);
    assert_int_equal(st.st_uid, pw->pw_uid);
    char want[256];
    loom_buf_t got = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&got, out, NULL), LOOM_OK);
    loom_buf_append_char(&got, '\0');
    snprintf(want, sizeof want, "%u %u %s nobody\n", (unsigned)pw->pw_uid, (unsigned)pw->pw_gid,
             wd);
    assert_string_equal(got.data, want);
    loom_buf_free(&got);

    /* Without a working directory: refused, the job directory is not the
     * owner's. */
    job.options_json = NULL;
    assert_int_equal(loom_exec_slurm_start(x, &job, &h, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "a job run as its owner needs a working directory"));

    /* sbatch the owner may not run, a working directory the owner may not
     * enter: the error names the step, the uid and the directory. */
    char closed[128], msg[256];
    snprintf(closed, sizeof closed, "%s/closed-bin", dir);
    assert_int_equal(mkdir(closed, 0700), 0);
    loom_exec_slurm_config_t cfg = {.jobs_dir = h.dir, .bin_dir = closed};
    loom_exec_slurm_t *y = NULL;
    assert_int_equal(loom_exec_slurm_new(&cfg, &y, NULL), LOOM_OK);
    job.options_json = opts;
    assert_int_equal(loom_exec_slurm_start(y, &job, &h, &err), LOOM_EUNAVAIL);
    snprintf(msg, sizeof msg,
             "closed-bin/sbatch' as uid %u in '%s': cannot execute: ", (unsigned)pw->pw_uid, wd);
    assert_non_null(strstr(err.msg, msg));
    snprintf(opts, sizeof opts, "{\"workdir\": \"%s\"}", closed);
    assert_int_equal(loom_exec_slurm_start(x, &job, &h, &err), LOOM_EIO);
    snprintf(msg, sizeof msg,
             "as uid %u in '%s': cannot change to the working directory: ", (unsigned)pw->pw_uid,
             closed);
    assert_non_null(strstr(err.msg, msg));
    loom_exec_slurm_free(y);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(state_mapping),           cmocka_unit_test(mirrors_nodes),
        cmocka_unit_test(runs_on_the_chosen_node), cmocka_unit_test(refusal_names_slurms_reason),
        cmocka_unit_test(cancel_and_adopt_by_tag), cmocka_unit_test(yaml_job_on_slurm),
        cmocka_unit_test(sync_snapshot),           cmocka_unit_test(node_states),
        cmocka_unit_test(runs_as_its_owner),
    };
    return cmocka_run_group_tests(tests, cluster_up, cluster_down);
}
