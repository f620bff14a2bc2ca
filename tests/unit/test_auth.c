/* The auth part: identities from the user database and from a socket's
 * peer, the operator group, the Authorization header (no credential,
 * unknown schemes, the token, MUNGE refused when off; with the machine's
 * munged, when it runs: a credential decodes to us once and is refused as
 * a replay after), who may act on whose job, and opening a file with
 * another user's rights (as root). */
#include "test_util.h"

#include <fcntl.h>
#include <grp.h>
#include <pwd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include "loom/auth.h"

#define TOKEN        "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
#define MUNGE_SOCKET "/run/munge/munge.socket.2"

static loom_auth_t *make(const char *operators, bool munge)
{
    loom_auth_config_t cfg = {.operators_group = operators, .token = TOKEN, .munge = munge};
    loom_auth_t *a = NULL;
    loom_err_t err;
    assert_int_equal(loom_auth_new(&cfg, &a, &err), LOOM_OK);
    return a;
}

static void test_self_is_operator(void **state)
{
    (void)state;
    loom_auth_t *a = make(NULL, false);
    loom_auth_identity_t id;
    loom_err_t err;
    assert_int_equal(loom_auth_user(a, geteuid(), getegid(), LOOM_AUTH_LOCAL, &id, &err), LOOM_OK);
    assert_true(id.is_operator);
    assert_true(loom_auth_in_group(&id, getegid()));
    struct passwd *pw = getpwuid(geteuid());
    assert_non_null(pw);
    assert_string_equal(id.user, pw->pw_name);
    assert_string_equal(loom_auth_scheme_name(id.scheme), "local");
    loom_auth_free(a);
}

/* nobody (65534) is an operator only through the operators group. */
static void test_operators_group(void **state)
{
    (void)state;
    struct passwd *pw = getpwnam("nobody");
    if (!pw || geteuid() == pw->pw_uid)
        skip();
    struct group *gr = getgrgid(pw->pw_gid);
    assert_non_null(gr);
    char gname[64];
    snprintf(gname, sizeof gname, "%s", gr->gr_name);
    loom_auth_identity_t id;
    loom_err_t err;
    loom_auth_t *a = make(NULL, false);
    assert_int_equal(loom_auth_user(a, pw->pw_uid, pw->pw_gid, LOOM_AUTH_PEER, &id, &err), LOOM_OK);
    assert_false(id.is_operator);
    assert_string_equal(id.user, "nobody");
    assert_true(loom_auth_may_act(&id, pw->pw_uid));
    assert_false(loom_auth_may_act(&id, geteuid()));
    loom_auth_free(a);
    a = make(gname, false);
    assert_int_equal(loom_auth_user(a, pw->pw_uid, pw->pw_gid, LOOM_AUTH_PEER, &id, &err), LOOM_OK);
    assert_true(id.is_operator);
    assert_true(loom_auth_may_act(&id, geteuid()));
    loom_auth_free(a);
}

static void test_unknown_group(void **state)
{
    (void)state;
    loom_auth_config_t cfg = {.operators_group = "no-such-group-loom"};
    loom_auth_t *a = NULL;
    loom_err_t err;
    assert_int_equal(loom_auth_new(&cfg, &a, &err), LOOM_ENOTFOUND);
    assert_non_null(strstr(err.msg, "--operators"));
    assert_non_null(strstr(err.msg, "no-such-group-loom"));
    gid_t g;
    assert_int_equal(loom_auth_group_id("0", &g, &err), LOOM_OK);
    assert_int_equal(g, 0);
}

static void test_peer(void **state)
{
    (void)state;
    int sv[2];
    assert_int_equal(socketpair(AF_UNIX, SOCK_STREAM, 0, sv), 0);
    loom_auth_t *a = make(NULL, false);
    loom_auth_identity_t id;
    loom_err_t err;
    assert_int_equal(loom_auth_peer(a, sv[0], &id, &err), LOOM_OK);
    assert_int_equal(id.uid, geteuid());
    assert_int_equal(id.gid, getegid());
    assert_int_equal(id.scheme, LOOM_AUTH_PEER);
    assert_int_not_equal(loom_auth_peer(a, -1, &id, &err), LOOM_OK);
    close(sv[0]);
    close(sv[1]);
    loom_auth_free(a);
}

static void refused(loom_auth_t *a, const char *header, const char *needle)
{
    loom_auth_identity_t id;
    loom_err_t err;
    int rc = loom_auth_header(a, header, &id, NULL, &err);
    assert_int_not_equal(rc, LOOM_OK);
    if (!strstr(err.msg, needle))
        fail_msg("header '%s': message '%s' lacks '%s'", header ? header : "(none)", err.msg,
                 needle);
}

static void test_header(void **state)
{
    (void)state;
    loom_auth_t *a = make(NULL, false);
    refused(a, NULL, "no credential");
    refused(a, "Basic dXNlcjpwYXNz", "unknown Authorization scheme");
    refused(a, "Bearer 0123", "wrong bearer token");
    refused(a, "Bearer " TOKEN "0", "wrong bearer token");
    refused(a, "Munge MUNGE:whatever:", "not accepted here");
    char *big = malloc(LOOM_AUTH_HEADER_MAX + 16);
    memset(big, 'x', LOOM_AUTH_HEADER_MAX + 15);
    big[LOOM_AUTH_HEADER_MAX + 15] = '\0';
    refused(a, big, "longer than");
    free(big);
    loom_auth_identity_t id;
    int64_t exp = 0;
    loom_err_t err;
    assert_int_equal(loom_auth_header(a, "  bearer  " TOKEN, &id, &exp, &err), LOOM_OK);
    assert_true(id.is_operator);
    assert_int_equal(id.scheme, LOOM_AUTH_TOKEN);
    assert_int_equal(id.uid, geteuid());
    assert_true(exp == INT64_MAX);
    loom_auth_free(a);
    /* no token configured: Bearer never passes */
    loom_auth_config_t cfg = {0};
    assert_int_equal(loom_auth_new(&cfg, &a, &err), LOOM_OK);
    refused(a, "Bearer " TOKEN, "wrong bearer token");
    loom_auth_free(a);
}

static void test_munge(void **state)
{
    (void)state;
    if (access(MUNGE_SOCKET, W_OK) != 0)
        skip(); /* no munged here; integration.multiuser starts one */
    char *cred = NULL;
    loom_err_t err;
    assert_int_equal(loom_auth_munge_encode(NULL, &cred, &err), LOOM_OK);
    char header[LOOM_AUTH_HEADER_MAX];
    snprintf(header, sizeof header, "Munge %s", cred);
    loom_auth_t *a = make(NULL, true);
    loom_auth_identity_t id;
    int64_t exp = 0;
    assert_int_equal(loom_auth_header(a, header, &id, &exp, &err), LOOM_OK);
    assert_int_equal(id.uid, geteuid());
    assert_int_equal(id.scheme, LOOM_AUTH_MUNGE);
    assert_true(exp > loom_time_real_ns());
    refused(a, header, "replayed");
    header[strlen(header) / 2] ^= 1;
    refused(a, header, "MUNGE credential");
    free(cred);
    loom_auth_free(a);
}

static void test_open_as(void **state)
{
    (void)state;
    struct passwd *pw = getpwnam("nobody");
    if (geteuid() != 0 || !pw)
        skip(); /* taking another user's rights needs root */
    char dir[] = "/tmp/loom-auth-test.XXXXXX";
    assert_non_null(mkdtemp(dir));
    chmod(dir, 0755);
    char mine[128], open_file[128];
    snprintf(mine, sizeof mine, "%s/root-only", dir);
    snprintf(open_file, sizeof open_file, "%s/everyone", dir);
    int fd = open(mine, O_CREAT | O_WRONLY, 0600);
    assert_true(fd >= 0);
    close(fd);
    fd = open(open_file, O_CREAT | O_WRONLY, 0644);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, "hi", 2), 2);
    close(fd);
    loom_auth_identity_t id;
    loom_err_t err;
    assert_int_equal(loom_auth_user(NULL, pw->pw_uid, pw->pw_gid, LOOM_AUTH_PEER, &id, &err),
                     LOOM_OK);
    assert_int_equal(loom_auth_open_as(&id, mine, O_RDONLY, &fd, &err), LOOM_EIO);
    assert_non_null(strstr(err.msg, "Permission denied"));
    assert_non_null(strstr(err.msg, "nobody"));
    assert_int_equal(loom_auth_open_as(&id, open_file, O_RDONLY, &fd, &err), LOOM_OK);
    char buf[4] = "";
    assert_int_equal(read(fd, buf, sizeof buf), 2);
    assert_memory_equal(buf, "hi", 2);
    assert_true(fcntl(fd, F_GETFD) & FD_CLOEXEC);
    close(fd);
    snprintf(mine, sizeof mine, "%s/missing", dir);
    assert_int_equal(loom_auth_open_as(&id, mine, O_RDONLY, &fd, &err), LOOM_ENOTFOUND);
    snprintf(mine, sizeof mine, "%s/root-only", dir);
    unlink(mine);
    unlink(open_file);
    rmdir(dir);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_self_is_operator), cmocka_unit_test(test_operators_group),
        cmocka_unit_test(test_unknown_group),    cmocka_unit_test(test_peer),
        cmocka_unit_test(test_header),           cmocka_unit_test(test_munge),
        cmocka_unit_test(test_open_as),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
