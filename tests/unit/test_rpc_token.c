/* Auth tokens: creation (random, 0600, never overwritten), loading with
 * precise errors, LOOM_TOKEN, and the constant-time comparison. */
#include <stdio.h>

#include "test_util.h"

#include <dirent.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/rpc.h"

static char dir[64];
static char path[128];

static int setup(void **state)
{
    (void)state;
    snprintf(dir, sizeof dir, "/tmp/loom-token-test.XXXXXX");
    assert_non_null(mkdtemp(dir));
    snprintf(path, sizeof path, "%s/token", dir);
    unsetenv("LOOM_TOKEN");
    return 0;
}

static int teardown(void **state)
{
    (void)state;
    unlink(path);
    rmdir(dir);
    return 0;
}

/* Entries in WHERE other than . and .. (what `ls -A | wc -l` counts). */
static int count_entries(const char *where)
{
    DIR *d = opendir(where);
    assert_non_null(d);
    int n = 0;
    for (struct dirent *e; (e = readdir(d)) != NULL;)
        if (strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0)
            n++;
    closedir(d);
    return n;
}

static void write_file(const char *content, int mode)
{
    unlink(path);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(content, f);
    fclose(f);
    chmod(path, (mode_t)mode);
}

static void ensure_creates_once(void **state)
{
    (void)state;
    char a[LOOM_RPC_TOKEN_HEX + 1], b[LOOM_RPC_TOKEN_HEX + 1];
    loom_err_t err;
    assert_int_equal(loom_rpc_token_ensure(dir, a, &err), LOOM_OK);
    assert_int_equal(strlen(a), 64);
    for (int i = 0; i < 64; i++)
        assert_non_null(strchr("0123456789abcdef", a[i]));
    struct stat st;
    assert_int_equal(stat(path, &st), 0);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 65); /* 64 hex + newline */
    /* a second start reads the same token */
    assert_int_equal(loom_rpc_token_ensure(dir, b, &err), LOOM_OK);
    assert_string_equal(a, b);
    /* no staging files are left behind */
    assert_int_equal(count_entries(dir), 1);
    /* a fresh directory gets a different token (256 random bits) */
    unlink(path);
    assert_int_equal(loom_rpc_token_ensure(dir, b, &err), LOOM_OK);
    assert_string_not_equal(a, b);
}

static void ensure_never_overwrites(void **state)
{
    (void)state;
    const char *mine = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n";
    write_file(mine, 0600);
    char t[LOOM_RPC_TOKEN_HEX + 1];
    loom_err_t err;
    assert_int_equal(loom_rpc_token_ensure(dir, t, &err), LOOM_OK);
    assert_int_equal(strncmp(t, mine, 64), 0);
    loom_buf_t b = LOOM_BUF_INIT;
    assert_int_equal(loom_buf_read_file(&b, path, &err), LOOM_OK);
    assert_string_equal(b.data, mine);
    loom_buf_free(&b);
}

/* Many threads racing to create: all end up with one and the same token. */
static void *race(void *arg)
{
    loom_err_t err;
    if (loom_rpc_token_ensure(dir, arg, &err) != LOOM_OK)
        ((char *)arg)[0] = '!';
    return NULL;
}

static void ensure_race(void **state)
{
    (void)state;
    char t[8][LOOM_RPC_TOKEN_HEX + 1];
    pthread_t th[8];
    for (int i = 0; i < 8; i++)
        pthread_create(&th[i], NULL, race, t[i]);
    for (int i = 0; i < 8; i++)
        pthread_join(th[i], NULL);
    for (int i = 1; i < 8; i++)
        assert_string_equal(t[0], t[i]);
}

static void load_errors(void **state)
{
    (void)state;
    char t[LOOM_RPC_TOKEN_HEX + 1];
    loom_err_t err;
    write_file("abc\n", 0600);
    assert_int_equal(loom_rpc_token_load(path, t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, path));
    if (!strstr(err.msg, "found 4 bytes"))
        fail_msg("%s", err.msg);
    write_file("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeFF", 0600);
    assert_int_equal(loom_rpc_token_load(path, t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "byte 63"));
    write_file("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n\n", 0600);
    assert_int_equal(loom_rpc_token_load(path, t, &err), LOOM_EINVAL);
    /* without newline is fine */
    write_file("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0600);
    assert_int_equal(loom_rpc_token_load(path, t, &err), LOOM_OK);
    /* readable by others: the daemon refuses it */
    write_file("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff", 0644);
    assert_int_equal(loom_rpc_token_ensure(dir, t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "0644"));
    unlink(path);
    assert_int_not_equal(loom_rpc_token_load(path, t, &err), LOOM_OK);
    assert_non_null(strstr(err.msg, path));
}

static void resolve(void **state)
{
    (void)state;
    char t[LOOM_RPC_TOKEN_HEX + 1];
    loom_err_t err;
    assert_int_equal(loom_rpc_token_resolve(dir, t, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "LOOM_TOKEN"));
    assert_int_equal(loom_rpc_token_resolve(NULL, t, &err), LOOM_ENOTFOUND);
    write_file("00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff\n", 0600);
    assert_int_equal(loom_rpc_token_resolve(dir, t, &err), LOOM_OK);
    assert_string_equal(t, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff");
    setenv("LOOM_TOKEN", "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100", 1);
    assert_int_equal(loom_rpc_token_resolve(dir, t, &err), LOOM_OK);
    assert_string_equal(t, "ffeeddccbbaa99887766554433221100ffeeddccbbaa99887766554433221100");
    setenv("LOOM_TOKEN", "short", 1);
    assert_int_equal(loom_rpc_token_resolve(dir, t, &err), LOOM_EINVAL);
    assert_non_null(strstr(err.msg, "LOOM_TOKEN"));
    unsetenv("LOOM_TOKEN");
}

static void equal(void **state)
{
    (void)state;
    const char *t = "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff";
    assert_true(loom_rpc_token_equal(t, t));
    assert_false(loom_rpc_token_equal(t, ""));
    assert_false(loom_rpc_token_equal(t, "0011"));
    assert_false(loom_rpc_token_equal(
        t, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff0"));
    assert_false(loom_rpc_token_equal(
        t, "10112233445566778899aabbccddeeff00112233445566778899aabbccddeeff"));
    assert_false(loom_rpc_token_equal(
        t, "00112233445566778899aabbccddeeff00112233445566778899aabbccddeefe"));
    assert_false(loom_rpc_token_equal("", ""));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(ensure_creates_once, setup, teardown),
        cmocka_unit_test_setup_teardown(ensure_never_overwrites, setup, teardown),
        cmocka_unit_test_setup_teardown(ensure_race, setup, teardown),
        cmocka_unit_test_setup_teardown(load_errors, setup, teardown),
        cmocka_unit_test_setup_teardown(resolve, setup, teardown),
        cmocka_unit_test_setup_teardown(equal, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
