/* zoo/sha256.c against the known answers of FIPS 180-2 (appendix B: "abc",
 * the 448-bit two-block message, a million 'a'), the empty message, and
 * every split of a message into two updates (the block boundary inside and
 * across the 56-byte padding limit). */
#include "test_util.h"
#include "zoo/zoo_int.h"

static void hex_of(const void *data, size_t len, char out[65])
{
    zoo_sha256_t c;
    zoo_sha256_init(&c);
    zoo_sha256_update(&c, data, len);
    zoo_sha256_hex(&c, out);
}

static void known_answers(void **state)
{
    char h[65];
    hex_of("abc", 3, h);
    assert_string_equal(h, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    hex_of("", 0, h);
    assert_string_equal(h, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *two = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    hex_of(two, strlen(two), h);
    assert_string_equal(h, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    zoo_sha256_t c;
    zoo_sha256_init(&c);
    char a[1000];
    memset(a, 'a', sizeof a);
    for (int i = 0; i < 1000; i++)
        zoo_sha256_update(&c, a, sizeof a);
    zoo_sha256_hex(&c, h);
    assert_string_equal(h, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void splits_agree(void **state)
{
    unsigned char msg[200];
    for (size_t i = 0; i < sizeof msg; i++)
        msg[i] = (unsigned char)(i * 31 + 7);
    for (size_t len = 0; len <= sizeof msg; len += 1) {
        char whole[65];
        hex_of(msg, len, whole);
        for (size_t cut = 0; cut <= len; cut += 13) {
            zoo_sha256_t c;
            zoo_sha256_init(&c);
            zoo_sha256_update(&c, msg, cut);
            zoo_sha256_update(&c, msg + cut, len - cut);
            char h[65];
            zoo_sha256_hex(&c, h);
            assert_string_equal(h, whole);
        }
    }
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(known_answers),
        cmocka_unit_test(splits_agree),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
