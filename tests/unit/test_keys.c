/*
 * keys: hash slots as Redis Cluster computes them, and the names of a
 * lock's helper keys. No server: the slots of the tagged and untagged
 * keys below are the ones CLUSTER KEYSLOT gives (the cluster tests check
 * the same against a live cluster).
 */
#include <stdlib.h>
#include <string.h>

#include "keys.h"
#include "script.h"
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

/* Asserts whether k is a helper key (want 1) or not (0). */
static void assert_is_helper(const char *k, int want)
{
    ASSERT_EQ_INT(rl__is_helper_key(k, strlen(k)), want);
}

/* rl__helper_name(key, suffix) must be want, and be seen as a helper. */
static void assert_helper(const char *key, const char *suffix, const char *want)
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
    assert_is_helper("job", 0);
    assert_is_helper("job:rl-wake", 0);
    assert_is_helper("job{job}:rl-other", 0);
    assert_is_helper("job{job}:rl-void:x", 1);
    assert_is_helper("job{job}:rl-w:", 0);
    assert_is_helper("job{job}:rl-ws", 1);
    assert_is_helper("job{job}:rl-rwake", 1);
    assert_is_helper("job{job}:rl-wsx", 0);
    assert_is_helper("job{job}:rl-void:", 0);
}

/* Asserts that the counter of key is want. */
static void assert_fence_name(const char *key, int cluster, const char *want)
{
    size_t blen, n;
    char *base = rl__helper_name(key, strlen(key), "", &blen);
    char *f = rl__fence_name(key, strlen(key), base, blen, cluster, &n);

    ASSERT(f != NULL);
    ASSERT_EQ_STR(f, want);
    ASSERT_EQ_INT(n, strlen(want));
    ASSERT_EQ_INT(rl__is_helper_key(f, n), 1);
    if (cluster)
        ASSERT_EQ_INT(rl__key_slot(f, n), rl__key_slot(key, strlen(key)));
    free(f);
    free(base);
}

/* The fencing counter that the locks of a namespace (the key up to its
 * last ':') share, and in a cluster those of a namespace and slot, named
 * with a tag of that slot. */
void test_keys_fence_names(void)
{
    char want[64];
    unsigned s;

    assert_fence_name("job", 0, "redislock:rl-fence");
    assert_fence_name("locks:job", 0, "locks:redislock:rl-fence");
    assert_fence_name("a:b:c", 0, "a:b:redislock:rl-fence");
    assert_fence_name("a:", 0, "a:redislock:rl-fence");
    /* Every slot has a tag of its own, of at most 4 characters. */
    for (s = 0; s < RL_CLUSTER_SLOTS; s++) {
        const char *t = rl__slot_tag(s);

        ASSERT(strlen(t) >= 1 && strlen(t) <= 4);
        ASSERT_EQ_INT(rl__key_slot(t, strlen(t)), s);
    }
    snprintf(want, sizeof want, "redislock:rl-fence{%s}",
             rl__slot_tag(rl__key_slot("job", 3)));
    assert_fence_name("job", 1, want);
    snprintf(want, sizeof want, "locks:{u1}:redislock:rl-fence{%s}",
             rl__slot_tag(rl__key_slot("u1", 2)));
    assert_fence_name("locks:{u1}:job", 1, want);
    /* A tag opened before the last ':' and closed after it: the lock's
     * own counter. */
    assert_fence_name("a{b:c}d", 1, "a{b:c}d:rl-fence");
    /* Names that only look like a counter are not one. */
    assert_is_helper("redislock:rl-fencex", 0);
    assert_is_helper("redislock:rl-fence{}", 0);
    assert_is_helper("redislock:rl-fence{a}b", 0);
    assert_is_helper("xredislock:rl-fence", 0);
    assert_is_helper("x:redislock:rl-fence", 1);
    assert_is_helper("edislock:rl-fence", 0);
}

/* Whether a set's keys share one counter (set_take.lua's condition):
 * keys of one namespace do, keys of two or a key with a tag of its own
 * across the last ':' do not; none to compare is trivially so. */
void test_keys_one_fence(void)
{
    static const char *const keys[] = {"a:x", "a:y", "b:x", "a{b:c}d"};
    rl__lockname n[4];
    char *fence[4];
    int i;

    for (i = 0; i < 4; i++) {
        n[i].key = keys[i];
        n[i].keylen = strlen(keys[i]);
        n[i].fence = fence[i] = rl__fence_name(keys[i], n[i].keylen, keys[i],
                                               n[i].keylen, 0, &n[i].fencelen);
        ASSERT(fence[i] != NULL);
    }
    ASSERT_EQ_INT(rl__lockname_fence_is(n, 2, fence[0], n[0].fencelen), 1);
    ASSERT_EQ_INT(rl__lockname_fence_is(n, 3, fence[0], n[0].fencelen), 0);
    ASSERT_EQ_INT(rl__lockname_fence_is(n + 2, 1, fence[0], n[0].fencelen), 0);
    ASSERT_EQ_INT(rl__lockname_fence_is(&n[3], 1, fence[0], n[0].fencelen), 0);
    ASSERT_EQ_INT(rl__lockname_fence_is(n, 0, fence[0], n[0].fencelen), 1);
    for (i = 0; i < 4; i++)
        free(fence[i]);
    /* No key counts on the counter of a key whose helper it is named as
     * (set_take.lua names each of KEYS once on that ground). */
    for (i = 0; i < 8; i++) {
        static const char *const k[4] = {"a", "a:b", "{t}x", "n:{t}x"};
        const char *key = k[i % 4];
        int cluster = i / 4;
        size_t kl = strlen(key), bl, hl, hbl, fl, gl;
        char *base = rl__helper_name(key, kl, "", &bl);
        char *h = rl__helper_name(key, kl, "waiting", &hl);
        char *hb = rl__helper_name(h, hl, "", &hbl);
        char *f = rl__fence_name(key, kl, base, bl, cluster, &fl);
        char *g = rl__fence_name(h, hl, hb, hbl, cluster, &gl);

        ASSERT(base != NULL && h != NULL && hb != NULL && f != NULL &&
               g != NULL);
        ASSERT(fl != gl || memcmp(f, g, fl) != 0);
        free(base);
        free(h);
        free(hb);
        free(f);
        free(g);
    }
}

/* Asserts that ks holds the n names of want, in order. */
static void assert_keyset(const rl__keyset *ks, const char *const *want, int n)
{
    int i;

    ASSERT_EQ_INT(ks->n, n);
    for (i = 0; i < n; i++) {
        ASSERT_EQ_INT(ks->len[i], strlen(want[i]));
        ASSERT(memcmp(ks->k[i], want[i], ks->len[i]) == 0);
    }
}

void test_keys_script_keysets(void)
{
    static const unsigned char all[] = {
        RL_KEY_LOCK,  RL_KEY_FENCE, RL_KEY_WAITING, RL_KEY_WAKE,
        RL_KEY_RWAKE, RL_KEY_WS,    RL_KEY_SEQ,     RL_KEY_VOID};
    static const char *const names[] = {"job",
                                        "redislock:rl-fence",
                                        "job{job}:rl-waiting",
                                        "job{job}:rl-wake",
                                        "job{job}:rl-rwake",
                                        "job{job}:rl-ws",
                                        "job{job}:rl-seq",
                                        "job{job}:rl-void:r1"};
    static const unsigned char two[] = {RL_KEY_LOCK, RL_KEY_FENCE};
    static const unsigned char bad[] = {RL_KEY_LOCK, RL_KEY_ROLES};
    unsigned char nine[RL_KEYS_LAYOUT_MAX + 1] = {0};
    rl__lockname k = {"job", 3, "job{job}:rl-", 12, "redislock:rl-fence", 18};
    rl__keyset ks;

    ASSERT_EQ_INT(rl__keyset_make(&ks, all, 8, &k, "r1"), 0);
    assert_keyset(&ks, names, 8);
    rl__keyset_free(&ks);
    ASSERT_EQ_INT(ks.n, 0);
    ASSERT_EQ_INT(rl__keyset_make(&ks, two, 2, &k, NULL), 0);
    assert_keyset(&ks, names, 2);
    rl__keyset_free(&ks);
    /* The lock's key alone takes no storage. */
    ASSERT_EQ_INT(rl__keyset_make(&ks, two, 1, &k, NULL), 0);
    ASSERT(ks.buf == NULL && ks.k[0] == k.key);
    rl__keyset_free(&ks);
    /* A void key without a request, a role that is none, too many. */
    ASSERT_EQ_INT(rl__keyset_make(&ks, all, 8, &k, NULL), -1);
    ASSERT_EQ_INT(rl__keyset_make(&ks, bad, 2, &k, NULL), -1);
    /* A counter is named by the caller: none given, none made up. */
    k.fence = NULL;
    ASSERT_EQ_INT(rl__keyset_make(&ks, two, 2, &k, NULL), -1);
    k.fence = "redislock:rl-fence";
    ASSERT_EQ_INT(rl__keyset_make(&ks, nine, RL_KEYS_LAYOUT_MAX + 1, &k, NULL),
                  -1);
    /* Every embedded script's layout starts with the lock and is whole. */
    {
        const rl__script *const *s = rl__scripts;
        size_t i, n = 0;

        for (i = 0; s[i] != NULL; i++) {
            if (s[i] == &rl__script_fenced_set || s[i] == &rl__script_renew)
                continue; /* its caller names its keys; renew's: each lock */
            n++;
            ASSERT(s[i]->keys != NULL);
            ASSERT_EQ_INT(s[i]->keys[0], RL_KEY_LOCK);
            ASSERT_EQ_INT(
                rl__keyset_make(&ks, s[i]->keys, s[i]->nkeys, &k, "r1"), 0);
            rl__keyset_free(&ks);
        }
        ASSERT(rl__script_fenced_set.keys == NULL);
        /* renew.lua's KEYS: each lock's own key, and nothing before. */
        ASSERT(rl__script_renew.keys == NULL);
        ASSERT_EQ_INT(rl__script_renew.neach, 1);
        ASSERT_EQ_INT(rl__script_renew.each[0], RL_KEY_LOCK);
        ASSERT_GE(n, 8);
    }
}

/* A set's keys: the first lock's layout (with the request's void key),
 * then each other lock's roles in turn, void keys refused there; no more
 * than RL_KEYS_MAX in all. */
void test_keys_set_keysets(void)
{
    static const unsigned char first[] = {RL_KEY_LOCK, RL_KEY_FENCE,
                                          RL_KEY_VOID};
    static const unsigned char each[] = {RL_KEY_LOCK, RL_KEY_WAKE};
    static const unsigned char each_void[] = {RL_KEY_LOCK, RL_KEY_VOID};
    static const char *const names[] = {
        "a{t}",         "F{t}", "a{t}:rl-void:r9", "b{t}",
        "b{t}:rl-wake", "c{t}", "c{t}:rl-wake"};
    rl__lockname k = {"a{t}", 4, "a{t}:rl-", 8, "F{t}", 4};
    rl__lockname more[2] = {{"b{t}", 4, "b{t}:rl-", 8, NULL, 0},
                            {"c{t}", 4, "c{t}:rl-", 8, NULL, 0}};
    rl__lockname many[RL_KEYS_MAX];
    rl__keyset ks;
    int i;

    ASSERT_EQ_INT(
        rl__keyset_make_set(&ks, first, 3, each, 2, &k, more, 2, "r9"), 0);
    assert_keyset(&ks, names, 7);
    rl__keyset_free(&ks);
    ASSERT_EQ_INT(
        rl__keyset_make_set(&ks, first, 3, each_void, 2, &k, more, 2, "r9"),
        -1);
    for (i = 0; i < RL_KEYS_MAX; i++)
        many[i] = more[0];
    /* 3 + 2 x 30 fits, 3 + 2 x 31 does not. */
    ASSERT_EQ_INT(rl__keyset_make_set(&ks, first, 3, each, 2, &k, many,
                                      (RL_KEYS_MAX - 3) / 2, "r9"),
                  0);
    ASSERT_EQ_INT(ks.n, 3 + 2 * ((RL_KEYS_MAX - 3) / 2));
    rl__keyset_free(&ks);
    ASSERT_EQ_INT(rl__keyset_make_set(&ks, first, 3, each, 2, &k, many,
                                      (RL_KEYS_MAX - 3) / 2 + 1, "r9"),
                  -1);
}
