/*
 * rand: tokens are what proves ownership, so they must be 128 random bits
 * as 32 lowercase hex digits, and never repeat.
 */
#include <stdlib.h>
#include <string.h>

#include "rand.h"
#include "script.h"
#include "test.h"

#define NTOKENS 2000

static void assert_token_format(const char *t)
{
    size_t i;

    ASSERT_EQ_INT(strlen(t), 32);
    ASSERT_EQ_INT(RL_TOKEN_HEXLEN, 32);
    for (i = 0; i < 32; i++)
        if (!((t[i] >= '0' && t[i] <= '9') || (t[i] >= 'a' && t[i] <= 'f')))
            test_fail_(__FILE__, __LINE__, "token \"%s\": byte %zu is not "
                       "lowercase hex", t, i);
}

void test_rand_token_format(void)
{
    char t[RL_TOKEN_HEXLEN + 1];
    int k;

    for (k = 0; k < 100; k++) {
        memset(t, 'X', sizeof t);
        ASSERT_EQ_INT(rl__token(t), 0);
        assert_token_format(t);
    }
}

/* A plain lock's token: the prefix that marks redislock's own locks for
 * waiters (lua/lib.lua rl_wakes tests for it literally), then a token. */
void test_rand_lock_token_format(void)
{
    char t[RL_LOCK_TOKEN_LEN + 1], u[RL_LOCK_TOKEN_LEN + 1];

    memset(t, 'X', sizeof t);
    ASSERT_EQ_INT(rl__lock_token(t), 0);
    ASSERT_EQ_INT(strlen(t), RL_LOCK_TOKEN_LEN);
    ASSERT_EQ_INT(strncmp(t, "rl1-", 4), 0);
    ASSERT_EQ_STR(RL_LOCK_TOKEN_PREFIX, "rl1-");
    /* The scripts tell the library's tokens by the same prefix. */
    ASSERT(strstr(rl__script_inspect.source,
                  "local RL_TOKEN_PREFIX = '" RL_LOCK_TOKEN_PREFIX "'\n") !=
           NULL);
    assert_token_format(t + 4);
    ASSERT_EQ_INT(rl__lock_token(u), 0);
    ASSERT(strcmp(t, u) != 0);
    ASSERT(!rl__token_native(t));
    /* A holder that may release natively: the other prefix, the same
     * length, told apart by the scripts (rl_mark_holder). */
    ASSERT_EQ_INT(rl__lock_token_as(u, 1), 0);
    ASSERT_EQ_INT(strlen(u), RL_LOCK_TOKEN_LEN);
    ASSERT_EQ_INT(strncmp(u, "rl2-", 4), 0);
    ASSERT_EQ_STR(RL_NATIVE_TOKEN_PREFIX, "rl2-");
    ASSERT(strstr(rl__script_inspect.source,
                  "local RL_NATIVE_PREFIX = '" RL_NATIVE_TOKEN_PREFIX
                  "'\n") != NULL);
    assert_token_format(u + 4);
    ASSERT(rl__token_native(u));
    u[RL_LOCK_TOKEN_LEN - 1] = '\0';
    ASSERT(!rl__token_native(u));
}

static int cmp_token(const void *a, const void *b)
{
    return memcmp(a, b, RL_TOKEN_HEXLEN + 1);
}

void test_rand_tokens_differ(void)
{
    char a[RL_TOKEN_HEXLEN + 1], b[RL_TOKEN_HEXLEN + 1];
    char(*all)[RL_TOKEN_HEXLEN + 1] = malloc(NTOKENS * sizeof *all);
    int k;

    ASSERT(all != NULL);
    ASSERT_EQ_INT(rl__token(a), 0);
    ASSERT_EQ_INT(rl__token(b), 0);
    ASSERT(strcmp(a, b) != 0);
    /* No two of many are equal (sorted, neighbours differ). */
    for (k = 0; k < NTOKENS; k++)
        ASSERT_EQ_INT(rl__token(all[k]), 0);
    qsort(all, NTOKENS, sizeof *all, cmp_token);
    for (k = 1; k < NTOKENS; k++)
        if (strcmp(all[k - 1], all[k]) == 0)
            test_fail_(__FILE__, __LINE__, "token %s repeated", all[k]);
    free(all);
}

void test_rand_jitter_varies(void)
{
    uint64_t first = rl__jitter_rand(), x;
    unsigned char bytes[64];
    int k, same = 0, odd = 0;

    /* Not a quality test: only that it moves and uses the low bits that
     * the pause maths reduces modulo the span. */
    for (k = 0; k < 1000; k++) {
        x = rl__jitter_rand();
        same += x == first;
        odd += (int)(x & 1);
    }
    ASSERT_LE(same, 1);
    ASSERT_GT(odd, 350);
    ASSERT_LT(odd, 650);
    memset(bytes, 0, sizeof bytes);
    ASSERT_EQ_INT(rl__random_bytes(bytes, sizeof bytes), 0);
    for (k = 0; k < (int)sizeof bytes && bytes[k] == 0; k++)
        ;
    ASSERT_LT(k, (int)sizeof bytes);
}
