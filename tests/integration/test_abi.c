/*
 * abi: the _sized entry points behind the header's macros (see "ABI" in
 * redislock.h) as a program built against a newer header would call them:
 * with structs larger than the library's, whose extra fields the library
 * ignores on the way in and zeroes on the way out, and with sizes no
 * version ever had. The 0.1 entry points are tested by tests/cli/abi.sh.
 */
#include <stdint.h>
#include <string.h>

#include "harness/fixture.h"
#include "harness/util.h"
#include "test.h"

#define EXTRA 24

/* A struct of a later header: ours, then fields this library lacks. */
typedef struct newer_acquire {
    redislock_acquire_options o;
    unsigned char extra[EXTRA];
} newer_acquire;

/* An info struct of a later header: ours through its last field, then
 * fields this library lacks, which may begin in our padding. */
typedef union newer_info {
    redislock_info info;
    unsigned char bytes[REDISLOCK_INFO_SIZE + EXTRA];
} newer_info;

#define NEWER_EXTRA(ni) ((ni)->bytes + REDISLOCK_INFO_SIZE)

static void assert_zero(const unsigned char *p, size_t n)
{
    size_t i;

    for (i = 0; i < n; i++)
        ASSERT_EQ_INT(p[i], 0);
}

void test_abi_sized_newer_caller(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "abi");
    newer_acquire a;
    newer_info ni;
    int64_t ttl;

    /* Fields the library does not know are ignored, whatever they hold. */
    memset(&a, 0, sizeof a);
    memset(a.extra, 0x5A, sizeof a.extra);
    a.o.ttl_ms = 9000;
    a.o.owner = "newer";
    ASSERT_OK(redislock_acquire_sized(
        l, &a.o, REDISLOCK_ACQUIRE_OPTIONS_SIZE + sizeof a.extra));
    ASSERT_OK(redislock_ttl(l, &ttl));
    ASSERT_GT(ttl, 4000);
    ASSERT_LE(ttl, 9000);
    /* The caller's newer fields come back zero: "unknown". */
    memset(&ni, 0x5A, sizeof ni);
    ASSERT_OK(
        redislock_inspect_sized(l, &ni.info, REDISLOCK_INFO_SIZE + EXTRA));
    ASSERT_EQ_INT(ni.info.held, 1);
    ASSERT_EQ_INT(ni.info.owner_len, 5);
    ASSERT_EQ_MEM(ni.info.owner, "newer", 5);
    ASSERT_EQ_INT(ni.info.keylen, 3);
    assert_zero(NEWER_EXTRA(&ni), EXTRA);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}

/* A caller built before the fair waiters were appended (its struct ends
 * at nshare_ttls) gets its fields, and not a byte past them, from a key
 * with waiters to list. */
void test_abi_sized_older_caller(void)
{
    const size_t old = REDISLOCK_SIZE_THROUGH_(redislock_info, nshare_ttls);
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "abi");
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    newer_info ni;
    th_waiter w;
    int64_t t0;
    size_t i;

    o.fair = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    o.wait_ms = 20000;
    o.owner = "older";
    th_waiter_start(&w, e.c, "abi", &o);
    for (t0 = th_now_ms(); th_cmd_int(e.r, "ZCARD abi{abi}:rl-q") == 0;
         th_sleep_ms(2))
        ASSERT_LT(th_now_ms() - t0, 5000);
    /* This header's caller sees the waiter; the older one, the same key
     * read, gets nothing past its struct. */
    memset(&ni, 0x5A, sizeof ni);
    ASSERT_OK(redislock_inspect(l, &ni.info));
    ASSERT_EQ_INT(ni.info.nwaiters, 1);
    ASSERT_EQ_STR(ni.info.waiters[0].owner, "older");
    memset(&ni, 0x5A, sizeof ni);
    ASSERT_OK(redislock_inspect_sized(l, &ni.info, old));
    ASSERT_EQ_INT(ni.info.held, 1);
    ASSERT_EQ_INT(ni.info.holds, 1);
    ASSERT_EQ_INT(ni.info.keylen, 3);
    ASSERT(ni.info.share_ttls == NULL);
    for (i = old; i < sizeof ni.bytes; i++)
        ASSERT_EQ_INT(ni.bytes[i], 0x5A);
    ASSERT_OK(redislock_release(l));
    th_waiter_join_ok(&w, 5000);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    redislock_lock_free(l);
    th_env_stop(&e);
}

typedef struct listed {
    int calls;
} listed;

/* The callback of a newer caller reads past the library's struct. */
static int on_newer(const redislock_info *info, void *arg)
{
    const newer_info *ni = (const newer_info *)info;
    listed *s = arg;

    s->calls++;
    ASSERT_EQ_INT(ni->info.keylen, 3);
    ASSERT_EQ_MEM(ni->info.key, "abi", 3);
    assert_zero(NEWER_EXTRA(ni), EXTRA);
    return 0;
}

void test_abi_sized_newer_list(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "abi");
    listed s = {0};

    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_list_sized(e.c, NULL, 0, on_newer, &s,
                                   REDISLOCK_INFO_SIZE + EXTRA));
    ASSERT_EQ_INT(s.calls, 1);
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}

static int on_any(const redislock_info *info, void *arg)
{
    (void)info;
    (void)arg;
    return 0;
}

/* Sizes below 0.1's (a struct no header had) are refused, and nothing is
 * done; NULL options need no size. */
void test_abi_sized_bad_sizes(void)
{
    th_env e = th_env_start();
    redislock_lock *l = th_lock(e.c, "abi");
    redislock_acquire_options o = {0};
    redislock_options co = {0};
    redislock_info info;
    /* Not NULL, to see a failed constructor set it to NULL. */
    redislock_client *c = (redislock_client *)&co;

    ASSERT_ERR(redislock_acquire_sized(l, &o, 8), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "redislock_acquire_options") != NULL);
    ASSERT_ERR(redislock_acquire_sized(l, &o, 1 << 20), REDISLOCK_EINVAL);
    ASSERT_EQ_INT(th_lock_keys(e.r), 0);
    ASSERT_ERR(redislock_inspect_sized(l, &info, 0), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_list_sized(e.c, NULL, 0, on_any, NULL, 4),
               REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_client_new_sized(&c, e.s->unix_url, &co, 1),
               REDISLOCK_EINVAL);
    ASSERT(c == NULL);
    ASSERT_OK(redislock_client_new_sized(&c, e.s->unix_url, NULL, 0));
    redislock_client_free(c);
    ASSERT_OK(redislock_acquire_sized(l, NULL, 0));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    th_env_stop(&e);
}
