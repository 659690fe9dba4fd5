/*
 * error: every code has its message and name from REDISLOCK_ERR_MAP, and
 * unknown values still get a static string, since callers print whatever
 * they were handed.
 */
#include <stdio.h>
#include <string.h>

#include "test.h"

static const struct {
    redislock_err err;
    const char *name;
    const char *msg;
} codes[] = {
#define XX(name, value, msg) {REDISLOCK_##name, "REDISLOCK_" #name, msg},
    REDISLOCK_ERR_MAP(XX)
#undef XX
};

#define NCODES (sizeof codes / sizeof codes[0])

void test_error_strerror_every_code(void)
{
    size_t i, j;

    ASSERT_EQ_INT(NCODES, REDISLOCK_ERR_COUNT_);
    for (i = 0; i < NCODES; i++) {
        ASSERT_EQ_INT(codes[i].err, (int)i);
        ASSERT_EQ_STR(redislock_strerror(codes[i].err), codes[i].msg);
        /* Static: the same pointer every time. */
        ASSERT(redislock_strerror(codes[i].err) ==
               redislock_strerror(codes[i].err));
        for (j = 0; j < i; j++)
            ASSERT(strcmp(codes[i].msg, codes[j].msg) != 0);
    }
    ASSERT_EQ_STR(redislock_strerror(REDISLOCK_OK), "success");
    ASSERT_EQ_STR(redislock_strerror(REDISLOCK_EHELD),
                  "lock is held by another owner");
}

void test_error_errname_every_code(void)
{
    size_t i;

    for (i = 0; i < NCODES; i++)
        ASSERT_EQ_STR(redislock_errname(codes[i].err), codes[i].name);
    ASSERT_EQ_STR(redislock_errname(REDISLOCK_ELOST), "REDISLOCK_ELOST");
    ASSERT_EQ_STR(redislock_errname(REDISLOCK_ERANDOM), "REDISLOCK_ERANDOM");
}

void test_error_unknown_codes(void)
{
    static const int unknown[] = {999, -1, REDISLOCK_ERR_COUNT_, 1000000, -999};
    size_t i;
    const char *s;

    for (i = 0; i < sizeof unknown / sizeof unknown[0]; i++) {
        s = redislock_strerror((redislock_err)unknown[i]);
        ASSERT(s != NULL);
        ASSERT_GT(strlen(s), 0);
        ASSERT_EQ_STR(redislock_errname((redislock_err)unknown[i]),
                      "REDISLOCK_UNKNOWN");
    }
}

void test_error_errdetail_never_null(void)
{
    redislock_client *c = NULL;
    const char *d;

    /* Before any call. */
    d = redislock_errdetail();
    ASSERT(d != NULL);
    /* After a failed call, it names something. */
    ASSERT_ERR(redislock_client_new(&c, "http://x", NULL), REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    d = redislock_errdetail();
    ASSERT(d != NULL);
    ASSERT_GT(strlen(d), 0);
}

void test_version_matches_macros(void)
{
    char want[64];

    snprintf(want, sizeof want, "%d.%d.%d", REDISLOCK_VERSION_MAJOR,
             REDISLOCK_VERSION_MINOR, REDISLOCK_VERSION_PATCH);
    ASSERT_EQ_STR(redislock_version(), want);
    ASSERT_EQ_INT(REDISLOCK_VERSION_NUM, (REDISLOCK_VERSION_MAJOR << 16) |
                                             (REDISLOCK_VERSION_MINOR << 8) |
                                             REDISLOCK_VERSION_PATCH);
}
