/* Client files (src/core/file.c, auth's loom_auth_file_open): a path a
 * client names is opened without blocking, only a regular file is kept,
 * its size is checked against the limit before a byte is read, and it is
 * read into a private copy that its owner's truncation cannot turn into a
 * SIGBUS. A missing and an unreadable file give the same error, naming the
 * path as given (issue 30, findings 1, 3, 4, 5). Real files, a FIFO,
 * /dev/zero, and (as root) a child dropped to the user "nobody". */
#include <errno.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "test_util.h"

#include "loom/auth.h"
#include "loom/core.h"

typedef struct fixture {
    char dir[64];
    char path[256];
} fixture_t;

static int setup(void **state)
{
    fixture_t *f = calloc(1, sizeof *f);
    snprintf(f->dir, sizeof f->dir, "/tmp/loom-file-XXXXXX");
    assert_non_null(mkdtemp(f->dir));
    assert_int_equal(chmod(f->dir, 0755), 0);
    *state = f;
    return 0;
}

static int teardown(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(loom_test_rmtree(f->dir), 0);
    free(f);
    return 0;
}

static const char *at(fixture_t *f, const char *name)
{
    snprintf(f->path, sizeof f->path, "%s/%s", f->dir, name);
    return f->path;
}

static void write_bytes(const char *path, size_t n, int mode)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, mode);
    assert_true(fd >= 0);
    char block[4096];
    memset(block, 'x', sizeof block);
    for (size_t done = 0; done < n;) {
        size_t k = n - done < sizeof block ? n - done : sizeof block;
        assert_int_equal(write(fd, block, k), (ssize_t)k);
        done += k;
    }
    close(fd);
    assert_int_equal(chmod(path, mode), 0);
}

/* The error of opening path (flags, max) with loom_file_open: its code. */
static int open_error(const char *path, unsigned flags, size_t max, loom_err_t *err)
{
    loom_file_t lf;
    int rc = loom_file_open(&lf, path, flags, max, err);
    loom_file_close(&lf);
    return rc;
}

static void reads_a_regular_file_whole(void **state)
{
    fixture_t *f = *state;
    write_bytes(at(f, "m.onnx"), 10000, 0644);
    loom_file_t lf;
    loom_err_t err;
    if (loom_file_open(&lf, f->path, 0, 10000, &err))
        fail_msg("%s", err.msg);
    assert_string_equal(lf.name, f->path);
    assert_int_equal(lf.size, 10000);
    loom_buf_t b;
    loom_buf_init(&b);
    assert_int_equal(loom_file_read(&lf, &b, &err), LOOM_OK);
    assert_int_equal(b.len, 10000);
    assert_int_equal(b.data[9999], 'x');
    assert_true(loom_file_unchanged(&lf));
    loom_file_close(&lf);
    assert_int_equal(lf.fd, -1);
    loom_buf_free(&b);
}

/* A FIFO with no writer: refused at once (a blocking open would wait for a
 * writer for ever, holding the request and, in the zoo, its mutex). */
static void refuses_a_fifo_without_blocking(void **state)
{
    fixture_t *f = *state;
    assert_int_equal(mkfifo(at(f, "fifo"), 0666), 0);
    loom_err_t err;
    assert_int_equal(open_error(f->path, 0, 1 << 20, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, f->path));
    assert_non_null(strstr(err.msg, "not a regular file"));
    loom_file_t lf;
    assert_int_equal(loom_auth_file_open(NULL, f->path, 0, 1 << 20, &lf, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "not a regular file"));
}

static void refuses_a_directory_and_devices(void **state)
{
    fixture_t *f = *state;
    loom_err_t err;
    assert_int_equal(open_error(f->dir, 0, 1 << 20, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, f->dir));
    /* /dev/zero never ends: refused before a byte is read */
    assert_int_equal(open_error("/dev/zero", 0, (size_t)2 << 30, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "'/dev/zero': not a regular file"));
    assert_int_equal(open_error("/dev/null", 0, 1 << 20, &err), LOOM_EINVAL);
}

static void follows_a_symlink_unless_told_not_to(void **state)
{
    fixture_t *f = *state;
    char target[256];
    snprintf(target, sizeof target, "%s/real.log", f->dir);
    write_bytes(target, 100, 0644);
    assert_int_equal(symlink(target, at(f, "link.log")), 0);
    loom_err_t err;
    assert_int_equal(open_error(f->path, 0, 1 << 20, &err), LOOM_OK);
    assert_int_equal(open_error(f->path, LOOM_FILE_NOFOLLOW, 1 << 20, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "symbolic link"));
    assert_non_null(strstr(err.msg, f->path));
    loom_file_t lf;
    assert_int_equal(loom_auth_file_open(NULL, f->path, LOOM_FILE_NOFOLLOW, 1 << 20, &lf, &err),
                     LOOM_EINVAL);
}

/* Over the limit: refused from its size, before reading; one that grows
 * past the limit after the open is refused while reading. */
static void bounds_the_size_before_and_while_reading(void **state)
{
    fixture_t *f = *state;
    write_bytes(at(f, "big.w"), 4097, 0644);
    loom_err_t err;
    assert_int_equal(open_error(f->path, 0, 4096, &err), LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, "4097 bytes, more than the limit of 4096"));
    assert_int_equal(open_error(f->path, 0, 4097, &err), LOOM_OK);

    write_bytes(at(f, "grows.w"), 1000, 0644);
    loom_file_t lf;
    assert_int_equal(loom_file_open(&lf, f->path, 0, 4096, &err), LOOM_OK);
    write_bytes(f->path, 100000, 0644); /* the same inode, rewritten larger */
    assert_false(loom_file_unchanged(&lf));
    loom_buf_t b;
    loom_buf_init(&b);
    assert_int_equal(loom_file_read(&lf, &b, &err), LOOM_ELIMIT);
    assert_non_null(strstr(err.msg, "grew past the limit of 4096"));
    assert_int_equal(b.len, 4097); /* read one byte past the limit, no more */
    loom_file_close(&lf);
    loom_buf_free(&b);
}

/* Truncated between the open and the read (what its owner does to crash a
 * reader that maps it): read as it is now, no signal. */
static void reads_a_file_truncated_under_it(void **state)
{
    fixture_t *f = *state;
    write_bytes(at(f, "t.onnx"), 1 << 20, 0644);
    loom_file_t lf;
    loom_err_t err;
    assert_int_equal(loom_file_open(&lf, f->path, 0, 1 << 20, &err), LOOM_OK);
    assert_int_equal(truncate(f->path, 100), 0);
    assert_false(loom_file_unchanged(&lf));
    loom_buf_t b;
    loom_buf_init(&b);
    assert_int_equal(loom_file_read(&lf, &b, &err), LOOM_OK);
    assert_int_equal(b.len, 100);
    char win[64];
    assert_int_equal(loom_file_read_at(&lf, win, sizeof win, 90), 10);
    assert_int_equal(lf.size, 100);
    assert_int_equal(loom_file_read_at(&lf, win, sizeof win, 5000), 0);
    loom_file_close(&lf);
    loom_buf_free(&b);
}

/* The error with path replaced by "P", to compare two errors' wording. */
static void masked(const char *msg, const char *path, char *out, size_t n)
{
    const char *p = strstr(msg, path);
    assert_non_null(p);
    snprintf(out, n, "%.*sP%s", (int)(p - msg), msg, p + strlen(path));
}

/* Missing and unreadable read the same (no existence oracle), and name the
 * path as given, never /proc/self/fd/N. As root the unreadable case is a
 * root-only file opened by a child dropped to "nobody"; otherwise a file
 * of mode 000 opened with the process's own rights. */
static void missing_and_unreadable_read_the_same(void **state)
{
    fixture_t *f = *state;
    char secret[256], missing[256], a[512], b[512];
    snprintf(secret, sizeof secret, "%s/token", f->dir);
    snprintf(missing, sizeof missing, "%s/absent", f->dir);
    loom_err_t err;
    loom_file_t lf;
    if (geteuid() == 0) {
        struct passwd *pw = getpwnam("nobody");
        if (!pw)
            skip();
        write_bytes(secret, 64, 0600);
        loom_auth_identity_t id = {.uid = pw->pw_uid, .gid = pw->pw_gid, .ngroups = 1};
        id.groups[0] = pw->pw_gid;
        snprintf(id.user, sizeof id.user, "nobody");
        assert_int_equal(loom_auth_file_open(&id, secret, 0, 1 << 20, &lf, &err), LOOM_ENOTFOUND);
        masked(err.msg, secret, a, sizeof a);
        assert_int_equal(loom_auth_file_open(&id, missing, 0, 1 << 20, &lf, &err), LOOM_ENOTFOUND);
        masked(err.msg, missing, b, sizeof b);
        assert_non_null(strstr(a, "user nobody"));
        /* a FIFO as "nobody": the child opens without blocking too */
        char fifo[256];
        snprintf(fifo, sizeof fifo, "%s/fifo", f->dir);
        assert_int_equal(mkfifo(fifo, 0666), 0);
        assert_int_equal(chmod(fifo, 0666), 0);
        assert_int_equal(loom_auth_file_open(&id, fifo, 0, 1 << 20, &lf, &err), LOOM_EINVAL);
        assert_non_null(strstr(err.msg, "not a regular file"));
    } else {
        write_bytes(secret, 64, 0000);
        assert_int_equal(open_error(secret, 0, 1 << 20, &err), LOOM_ENOTFOUND);
        masked(err.msg, secret, a, sizeof a);
        assert_int_equal(open_error(missing, 0, 1 << 20, &err), LOOM_ENOTFOUND);
        masked(err.msg, missing, b, sizeof b);
    }
    assert_string_equal(a, b);
    assert_null(strstr(a, "/proc/self/fd"));
}

/* The set behind the zoo's duplicate-name check: 65,536 names sharing a
 * long prefix, each found in a bounded number of comparisons (a pairwise
 * check makes N^2/2 of them), the duplicate found. */
static void strset_is_linear_whatever_the_prefix(void **state)
{
    (void)state;
    enum { N = 65536 };
    char **names = calloc(N, sizeof *names);
    loom_strset_t s = {0};
    for (size_t i = 0; i < N; i++) {
        assert_true(asprintf(&names[i], "%0200d.layer.%zu", 0, i) > 0);
        assert_int_equal(loom_strset_add(&s, names[i]), 1);
    }
    assert_int_equal(s.n, N);
    char dup[256];
    snprintf(dup, sizeof dup, "%0200d.layer.%d", 0, N - 1);
    assert_int_equal(loom_strset_add(&s, dup), 0);
    assert_true(s.compares < (size_t)8 * N); /* pairwise: ~2.1e9 */
    loom_strset_free(&s);
    for (size_t i = 0; i < N; i++)
        free(names[i]);
    free(names);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(reads_a_regular_file_whole, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_a_fifo_without_blocking, setup, teardown),
        cmocka_unit_test_setup_teardown(refuses_a_directory_and_devices, setup, teardown),
        cmocka_unit_test_setup_teardown(follows_a_symlink_unless_told_not_to, setup, teardown),
        cmocka_unit_test_setup_teardown(bounds_the_size_before_and_while_reading, setup, teardown),
        cmocka_unit_test_setup_teardown(reads_a_file_truncated_under_it, setup, teardown),
        cmocka_unit_test_setup_teardown(missing_and_unreadable_read_the_same, setup, teardown),
        cmocka_unit_test(strset_is_linear_whatever_the_prefix),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
