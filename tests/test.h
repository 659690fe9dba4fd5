/*
 * Assertions for rl-tests. Every test runs in its own process, so a failed
 * assertion prints what it compared, with file:line, and exits the process
 * with status 1; the runner reports it and kills whatever the test left
 * running (a redis-server, forked workers).
 */
#ifndef RL_TEST_H
#define RL_TEST_H

#include <stddef.h>
#include <string.h>

#include <redislock.h>

/* Declare every test function, so that each definition has a prototype. */
#define TEST_ENTRY(name, timeout_s) void test_##name(void);
#include "test-list.h"
#undef TEST_ENTRY

#if defined(__GNUC__)
#define TEST_PRINTF_(f, a) __attribute__((format(printf, f, a)))
#else
#define TEST_PRINTF_(f, a)
#endif

/* Prints "file:line: message" and exits with status 1. */
_Noreturn void test_fail_(const char *file, int line, const char *fmt, ...)
    TEST_PRINTF_(3, 4);

/* Prints a "# "-prefixed note to stderr; kept with the test's output. */
void test_log(const char *fmt, ...) TEST_PRINTF_(1, 2);

/*
 * Writes p (n bytes) into buf as a C-like literal, escaping control bytes,
 * so that binary keys print readably. Returns buf.
 */
const char *test_escape_(const void *p, size_t n, char *buf, size_t size);

#define ASSERT(cond)                                                          \
    do {                                                                      \
        if (!(cond))                                                          \
            test_fail_(__FILE__, __LINE__, "ASSERT(%s) failed", #cond);       \
    } while (0)

/* Integer comparison; both operands are printed on failure. */
#define ASSERT_CMP_INT_(a, op, b)                                             \
    do {                                                                      \
        long long test_a_ = (long long)(a);                                   \
        long long test_b_ = (long long)(b);                                   \
        if (!(test_a_ op test_b_))                                            \
            test_fail_(__FILE__, __LINE__,                                    \
                       "ASSERT(%s %s %s) failed: %lld %s %lld is false", #a,  \
                       #op, #b, test_a_, #op, test_b_);                       \
    } while (0)

#define ASSERT_EQ_INT(a, b) ASSERT_CMP_INT_(a, ==, b)
#define ASSERT_NE_INT(a, b) ASSERT_CMP_INT_(a, !=, b)
#define ASSERT_LE(a, b) ASSERT_CMP_INT_(a, <=, b)
#define ASSERT_LT(a, b) ASSERT_CMP_INT_(a, <, b)
#define ASSERT_GE(a, b) ASSERT_CMP_INT_(a, >=, b)
#define ASSERT_GT(a, b) ASSERT_CMP_INT_(a, >, b)

/* String equality; NULL equals only NULL. Printed escaped. */
#define ASSERT_EQ_STR(a, b)                                                   \
    do {                                                                      \
        const char *test_a_ = (a);                                            \
        const char *test_b_ = (b);                                            \
        char test_ba_[512], test_bb_[512];                                    \
        if (test_a_ == NULL || test_b_ == NULL ? test_a_ != test_b_           \
                                               : strcmp(test_a_, test_b_))    \
            test_fail_(                                                       \
                __FILE__, __LINE__, "ASSERT_EQ_STR(%s, %s) failed: %s != %s", \
                #a, #b,                                                       \
                test_escape_(test_a_, test_a_ ? strlen(test_a_) : 0,          \
                             test_ba_, sizeof test_ba_),                      \
                test_escape_(test_b_, test_b_ ? strlen(test_b_) : 0,          \
                             test_bb_, sizeof test_bb_));                     \
    } while (0)

/* Byte-wise equality of two buffers of n bytes, printed escaped. */
#define ASSERT_EQ_MEM(a, b, n)                                                \
    do {                                                                      \
        const void *test_a_ = (a);                                            \
        const void *test_b_ = (b);                                            \
        size_t test_n_ = (n);                                                 \
        char test_ba_[256], test_bb_[256];                                    \
        if (test_a_ == NULL || test_b_ == NULL ||                             \
            memcmp(test_a_, test_b_, test_n_) != 0)                           \
            test_fail_(__FILE__, __LINE__,                                    \
                       "ASSERT_EQ_MEM(%s, %s, %zu) failed: %s != %s", #a, #b, \
                       test_n_,                                               \
                       test_escape_(test_a_, test_n_, test_ba_, 256),         \
                       test_escape_(test_b_, test_n_, test_bb_, 256));        \
    } while (0)

/*
 * A redislock call returns the expected code. The detail is read at once,
 * because it is only valid until the thread's next library call.
 */
#define ASSERT_ERR(expr, want)                                                \
    do {                                                                      \
        redislock_err test_got_ = (expr);                                     \
        redislock_err test_want_ = (want);                                    \
        if (test_got_ != test_want_)                                          \
            test_fail_(__FILE__, __LINE__,                                    \
                       "%s returned %s (%d), want %s (%d); detail: %s",       \
                       #expr, redislock_errname(test_got_), (int)test_got_,   \
                       redislock_errname(test_want_), (int)test_want_,        \
                       redislock_errdetail());                                \
    } while (0)

#define ASSERT_OK(expr) ASSERT_ERR(expr, REDISLOCK_OK)

#endif /* RL_TEST_H */
