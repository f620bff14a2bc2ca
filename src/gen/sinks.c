/* Local sinks: where generated jobs go when they do not go to loomd.
 *
 * - dry run: the job was generated and rendered by the sender thread;
 *   nothing more happens (what the rate benchmark measures);
 * - stream: every job's text to a FILE, in index order (one sender);
 * - directory: one script per job, written atomically (temporary file,
 *   fsync, rename), and a manifest line per job appended in one write to
 *   manifest.jsonl.partial, renamed to manifest.jsonl when the run ends,
 *   so manifest.jsonl exists only for a finished run and every line in
 *   either file is whole;
 * - Slurm: `sbatch --parsable` with the script on standard input.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <spawn.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "loom/gen.h"

extern char **environ;

/* --------------------------------------------------------------- dry run */

static int dry_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    uint64_t *bytes = ctx;
    uint64_t sum = 0;
    for (size_t i = 0; i < n; i++) {
        sum += jobs[i]->text.len;
        jobs[i]->rc = LOOM_OK;
    }
    __atomic_fetch_add(bytes, sum, __ATOMIC_RELAXED);
    return LOOM_OK;
}

int loom_gen_sink_dry_run(loom_gen_sink_t *out, loom_err_t *err)
{
    uint64_t *bytes = calloc(1, sizeof *bytes);
    if (!bytes)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    *out = (loom_gen_sink_t){.name = "dry-run", .send = dry_send, .destroy = free, .ctx = bytes};
    return LOOM_OK;
}

/* ---------------------------------------------------------------- stream */

static int stream_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    FILE *f = ctx;
    for (size_t i = 0; i < n; i++) {
        loom_gen_job_t *j = jobs[i];
        fprintf(f, "# loom-gen job %llu submit_id=%s\n", (unsigned long long)j->index,
                j->submit_id);
        if (j->text.len)
            fwrite(j->text.data, 1, j->text.len, f);
        if (j->text.len == 0 || j->text.data[j->text.len - 1] != '\n')
            fputc('\n', f);
        j->rc = LOOM_OK;
    }
    if (ferror(f))
        return loom_err_errno(err, LOOM_EIO, errno, "cannot write the jobs to the output stream");
    return LOOM_OK;
}

static int stream_finish(void *ctx, loom_err_t *err)
{
    if (fflush((FILE *)ctx) != 0 || ferror((FILE *)ctx))
        return loom_err_errno(err, LOOM_EIO, errno, "cannot write the jobs to the output stream");
    return LOOM_OK;
}

int loom_gen_sink_stream(loom_gen_sink_t *out, FILE *f, loom_err_t *err)
{
    *out = (loom_gen_sink_t){
        .name = "stdout", .send = stream_send, .finish = stream_finish, .ctx = f, .max_workers = 1};
    return LOOM_OK;
}

/* ------------------------------------------------------------- directory */

typedef struct dir_sink {
    char *dir, *ext;
    int fd; /* manifest.jsonl.partial, O_APPEND */
    pthread_mutex_t mu;
} dir_sink_t;

static int write_all(int fd, const char *p, size_t len)
{
    while (len > 0) {
        ssize_t n = write(fd, p, len);
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            return -1;
        p += n;
        len -= (size_t)n;
    }
    return 0;
}

static int dir_one(dir_sink_t *d, loom_gen_job_t *j, loom_buf_t *line, loom_err_t *err)
{
    char file[64], path[PATH_MAX];
    snprintf(file, sizeof file, "job-%08llu.%s", (unsigned long long)j->index, d->ext);
    if (snprintf(path, sizeof path, "%s/%s", d->dir, file) >= (int)sizeof path)
        return loom_err_set(err, LOOM_EINVAL, "path too long: '%s/%s'", d->dir, file);
    int rc = loom_write_file_atomic(path, j->text.data ? j->text.data : "", j->text.len, 0644, err);
    if (rc != LOOM_OK)
        return rc;
    json_t *o = json_object();
    json_object_set_new(o, "index", json_integer((json_int_t)j->index));
    json_object_set_new(o, "due_s", json_real((double)j->due_ns / 1e9));
    json_object_set_new(o, "send_s", json_real((double)j->send_ns / 1e9));
    json_object_set_new(o, "job", j->name ? json_string(j->name) : json_null());
    json_t *res = j->spec ? json_object_get(j->spec, "resources") : NULL;
    json_object_set(o, "resources", res ? res : json_null());
    json_t *model = j->spec ? json_object_get(j->spec, "model") : NULL;
    if (model)
        json_object_set(o, "model", model);
    json_object_set_new(o, "submit_id", json_string(j->submit_id));
    json_object_set_new(o, "file", json_string(file));
    loom_buf_reset(line);
    rc = loom_json_dump(line, o);
    json_decref(o);
    if (rc != LOOM_OK || loom_buf_append_char(line, '\n') != LOOM_OK)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    /* One write per line: with O_APPEND, lines never interleave. */
    pthread_mutex_lock(&d->mu);
    int w = write_all(d->fd, line->data, line->len);
    pthread_mutex_unlock(&d->mu);
    if (w != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "cannot append to '%s/manifest.jsonl.partial'",
                              d->dir);
    return LOOM_OK;
}

static int dir_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    dir_sink_t *d = ctx;
    loom_buf_t line = LOOM_BUF_INIT;
    int rc = LOOM_OK;
    for (size_t i = 0; i < n && rc == LOOM_OK; i++) {
        rc = dir_one(d, jobs[i], &line, err);
        jobs[i]->rc = rc;
    }
    loom_buf_free(&line);
    return rc; /* a directory that cannot be written is a broken sink */
}

static int dir_finish(void *ctx, loom_err_t *err)
{
    dir_sink_t *d = ctx;
    char from[PATH_MAX], to[PATH_MAX];
    snprintf(from, sizeof from, "%s/manifest.jsonl.partial", d->dir);
    snprintf(to, sizeof to, "%s/manifest.jsonl", d->dir);
    if (fsync(d->fd) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "cannot fsync '%s'", from);
    if (rename(from, to) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "cannot rename '%s' to '%s'", from, to);
    int dfd = open(d->dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
        fsync(dfd);
        close(dfd);
    }
    return LOOM_OK;
}

static void dir_destroy(void *ctx)
{
    dir_sink_t *d = ctx;
    if (d->fd >= 0)
        close(d->fd);
    pthread_mutex_destroy(&d->mu);
    free(d->dir);
    free(d->ext);
    free(d);
}

int loom_gen_sink_dir(loom_gen_sink_t *out, const char *dir, const char *ext, loom_err_t *err)
{
    if (!dir || !*dir)
        return loom_err_set(err, LOOM_EINVAL, "--out: no directory given");
    if (!ext || !*ext || strchr(ext, '/'))
        return loom_err_set(err, LOOM_EINVAL, "--out: bad file extension '%s'", ext ? ext : "");
    if (mkdir(dir, 0755) != 0 && errno != EEXIST)
        return loom_err_errno(err, LOOM_EIO, errno, "cannot create directory '%s'", dir);
    char path[PATH_MAX];
    struct stat st;
    if (snprintf(path, sizeof path, "%s/manifest.jsonl", dir) >= (int)sizeof path)
        return loom_err_set(err, LOOM_EINVAL, "path too long: '%s'", dir);
    if (stat(path, &st) == 0)
        return loom_err_set(err, LOOM_EEXIST,
                            "'%s' exists: the directory holds another run (use an empty one)",
                            path);
    snprintf(path, sizeof path, "%s/manifest.jsonl.partial", dir);
    dir_sink_t *d = calloc(1, sizeof *d);
    if (!d)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    d->fd = open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (d->fd < 0) {
        int e = errno;
        free(d);
        return loom_err_errno(err, LOOM_EIO, e, "cannot create '%s'%s", path,
                              e == EEXIST ? " (an unfinished run left it; remove it or use an "
                                            "empty directory)"
                                          : "");
    }
    pthread_mutex_init(&d->mu, NULL);
    d->dir = strdup(dir);
    d->ext = strdup(ext);
    if (!d->dir || !d->ext) {
        dir_destroy(d);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    *out = (loom_gen_sink_t){
        .name = "out", .send = dir_send, .finish = dir_finish, .destroy = dir_destroy, .ctx = d};
    return LOOM_OK;
}

/* ----------------------------------------------------------------- Slurm */

typedef struct slurm_sink {
    char *sbatch;
    char **argv; /* sbatch --parsable EXTRA... NULL */
} slurm_sink_t;

/* Runs sbatch --parsable with text on stdin; returns its stdout. */
static int run_sbatch(const char *sbatch, char **argv, const loom_buf_t *text, loom_buf_t *outb,
                      loom_err_t *err)
{
    int in[2], outp[2];
    if (pipe2(in, O_CLOEXEC) != 0)
        return loom_err_errno(err, LOOM_EIO, errno, "pipe");
    if (pipe2(outp, O_CLOEXEC) != 0) {
        int e = errno;
        close(in[0]);
        close(in[1]);
        return loom_err_errno(err, LOOM_EIO, e, "pipe");
    }
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, in[0], 0);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 1);
    posix_spawn_file_actions_adddup2(&fa, outp[1], 2);
    pid_t pid;
    int src = posix_spawnp(&pid, sbatch, &fa, NULL, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    close(in[0]);
    close(outp[1]);
    if (src != 0) {
        close(in[1]);
        close(outp[0]);
        return loom_err_errno(err, LOOM_EUNAVAIL, src, "cannot run '%s'", sbatch);
    }
    /* Scripts are small (a few KiB, below the pipe buffer), so writing all
     * before reading cannot deadlock against sbatch's short output. */
    int wrc = write_all(in[1], text->data ? text->data : "", text->len);
    int werr = errno;
    close(in[1]);
    char chunk[4096];
    ssize_t n;
    while ((n = read(outp[0], chunk, sizeof chunk)) != 0) {
        if (n < 0 && errno == EINTR)
            continue;
        if (n < 0)
            break;
        loom_buf_append(outb, chunk, (size_t)n);
    }
    close(outp[0]);
    int status;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    while (outb->len && (outb->data[outb->len - 1] == '\n' || outb->data[outb->len - 1] == ' '))
        outb->data[--outb->len] = '\0';
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return loom_err_set(err, LOOM_EIO, "sbatch failed (status %d): %s",
                            WIFEXITED(status) ? WEXITSTATUS(status) : -1,
                            outb->data ? outb->data : "");
    if (wrc != 0)
        return loom_err_errno(err, LOOM_EIO, werr, "cannot write the script to sbatch");
    return LOOM_OK;
}

static int slurm_send(void *ctx, loom_gen_job_t **jobs, size_t n, loom_err_t *err)
{
    slurm_sink_t *s = ctx;
    for (size_t i = 0; i < n; i++) {
        loom_buf_t outb = LOOM_BUF_INIT;
        loom_err_t e = {0};
        int rc = run_sbatch(s->sbatch, s->argv, &jobs[i]->text, &outb, &e);
        if (rc == LOOM_EUNAVAIL) {
            loom_buf_free(&outb);
            *err = e;
            return rc; /* no sbatch at all: the sink is broken */
        }
        if (rc != LOOM_OK) {
            loom_gen_job_fail(jobs[i], &e);
        } else {
            /* --parsable prints "JOBID" or "JOBID;CLUSTER". */
            char *semi = outb.data ? strchr(outb.data, ';') : NULL;
            if (semi)
                *semi = '\0';
            jobs[i]->remote_id = loom_buf_detach(&outb);
            jobs[i]->rc = LOOM_OK;
        }
        loom_buf_free(&outb);
    }
    return LOOM_OK;
}

static void slurm_destroy(void *ctx)
{
    slurm_sink_t *s = ctx;
    if (s->argv)
        for (char **a = s->argv; *a; a++)
            free(*a);
    free(s->argv);
    free(s->sbatch);
    free(s);
}

int loom_gen_sink_slurm(loom_gen_sink_t *out, const char *sbatch, const char *const *extra_args,
                        loom_err_t *err)
{
    size_t nextra = 0;
    while (extra_args && extra_args[nextra])
        nextra++;
    slurm_sink_t *s = calloc(1, sizeof *s);
    if (!s)
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    s->sbatch = strdup(sbatch ? sbatch : "sbatch");
    s->argv = calloc(nextra + 3, sizeof *s->argv);
    bool fail = !s->sbatch || !s->argv;
    if (!fail) {
        s->argv[0] = strdup(s->sbatch);
        s->argv[1] = strdup("--parsable");
        fail = !s->argv[0] || !s->argv[1];
        for (size_t i = 0; i < nextra && !fail; i++)
            fail = !(s->argv[2 + i] = strdup(extra_args[i]));
    }
    if (fail) {
        slurm_destroy(s);
        return loom_err_set(err, LOOM_ENOMEM, "out of memory");
    }
    *out = (loom_gen_sink_t){
        .name = "slurm", .send = slurm_send, .destroy = slurm_destroy, .ctx = s, .max_workers = 4};
    return LOOM_OK;
}
