/*
 * keys: hash slots as Redis Cluster computes them, and the names of a
 * lock's helper keys. No server: the slots of the tagged and untagged
 * keys below are the ones CLUSTER KEYSLOT gives (the cluster tests check
 * the same against a live cluster).
 */
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "test.h"

void test_keys_slots(void)
{
    size_t off = 99, len = 99;

    /* The specification's check value, and its examples of tags. */
    ASSERT_EQ_INT(rl__key_slot("123456789", 9), 0x31C3);
    ASSERT_EQ_INT(rl__key_slot("{user1000}.following", 20),
                  rl__key_slot("{user1000}.followers", 20));
    ASSERT_EQ_INT(rl__key_slot("{user1000}.following", 20),
                  rl__key_slot("user1000", 8));
    /* Only the first '{' and the first '}' after it count. */
    ASSERT_EQ_INT(rl__key_slot("foo{{bar}}zap", 13), rl__key_slot("{bar", 4));
    ASSERT_EQ_INT(rl__key_slot("foo{bar}{zap}", 13), rl__key_slot("bar", 3));
    /* Known slots (CLUSTER KEYSLOT foo is 12182, the docs say). */
    ASSERT_EQ_INT(rl__key_slot("foo", 3), 12182);
    ASSERT_EQ_INT(rl__key_slot("bar", 3), 5061);
    /* An empty tag, or none closed, hashes the whole key. */
    ASSERT_EQ_INT(rl__key_slot("foo{}{bar}", 10), 8363);
    ASSERT_EQ_INT(rl__hash_tag("foo{}{bar}", 10, &off, &len), 0);
    ASSERT_EQ_INT(rl__hash_tag("x{y", 3, &off, &len), 0);
    ASSERT_EQ_INT(rl__hash_tag("a{b}c", 5, &off, &len), 1);
    ASSERT_EQ_INT(off, 2);
    ASSERT_EQ_INT(len, 1);
    /* Binary keys: a NUL byte is a byte like any other. */
    ASSERT_EQ_INT(rl__key_slot("a\0b", 3), 8383);
    ASSERT_EQ_INT(rl__key_slot("a", 1), 15495);
}

/* rl__helper_name(key, suffix) must be want, and be seen as a helper. */
static void assert_helper(const char *key, const char *suffix,
                          const char *want)
{
    size_t n;
    char *h = rl__helper_name(key, strlen(key), suffix, &n);

    ASSERT(h != NULL);
    ASSERT_EQ_INT(n, strlen(want));
    ASSERT(memcmp(h, want, n) == 0);
    /* Same slot as the key, whatever braces the key has. */
    ASSERT_EQ_INT(rl__key_slot(h, n), rl__key_slot(key, strlen(key)));
    if (suffix[0] != '\0')
        ASSERT_EQ_INT(rl__is_helper_key(h, n), 1);
    free(h);
}

void test_keys_helper_names(void)
{
    size_t n;
    char *j;

    assert_helper("job", "wake", "job{job}:rl-wake");
    assert_helper("job", "", "job{job}:rl-");
    assert_helper("{t}job", "fence", "{t}job:rl-fence");
    assert_helper("a:rl-wake", "q", "a:rl-wake{a:rl-wake}:rl-q");
    j = rl__helper_join("job{job}:rl-", 12, "h:", "tok", &n);
    ASSERT(j != NULL);
    ASSERT_EQ_STR(j, "job{job}:rl-h:tok");
    ASSERT_EQ_INT(n, 17);
    free(j);
    j = rl__helper_join("job{job}:rl-", 12, "wake", NULL, &n);
    ASSERT_EQ_STR(j, "job{job}:rl-wake");
    free(j);
    /* Lock keys are not helpers, even ones that look a little like it. */
    ASSERT_EQ_INT(rl__is_helper_key("job", 3), 0);
    ASSERT_EQ_INT(rl__is_helper_key("job:rl-wake", 11), 0);
    ASSERT_EQ_INT(rl__is_helper_key("job{job}:rl-other", 17), 0);
    ASSERT_EQ_INT(rl__is_helper_key("job{job}:rl-void:x", 18), 1);
    ASSERT_EQ_INT(rl__is_helper_key("job{job}:rl-w:", 14), 0);
}
