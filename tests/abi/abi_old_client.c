/*
 * rl-abi-0.1: a program built against the 0.1 header (redislock-0.1.h,
 * kept verbatim) and linked to the current libredislock.so, as a program
 * compiled before the structs grew would be. tests/cli/abi.sh runs it:
 *
 *   rl-abi-0.1 URL URL2 URL3
 *
 * URL is a server with nothing in it; URL2 and URL3 make a Redlock quorum
 * with it. It calls every function that takes or fills one of the
 * caller-allocated structs, with each struct placed so that the library
 * cannot go past 0.1's size unnoticed: right before a page that may not
 * be touched (any read or write past it is a SIGSEGV), or with guard
 * bytes after it that must stay as they were. It leaves the lock
 * "abi:kept" held for the script to look at, and prints "abi: ok".
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "redislock-0.1.h"

#ifdef REDISLOCK_OPTIONS_SIZE
#error "built against a newer header than 0.1's"
#endif

#define GUARD_BYTE 0xA5
#define GUARD_LEN 64

#define FAIL(...)                                                              \
    do {                                                                       \
        fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                        \
        fprintf(stderr, __VA_ARGS__);                                          \
        fputc('\n', stderr);                                                   \
        exit(1);                                                               \
    } while (0)

#define EXPECT_INT(got, want)                                                  \
    do {                                                                       \
        long long g_ = (long long)(got), w_ = (long long)(want);               \
        if (g_ != w_)                                                          \
            FAIL("%s is %lld, want %s (%lld)", #got, g_, #want, w_);           \
    } while (0)

#define EXPECT_RANGE(got, lo, hi)                                              \
    do {                                                                       \
        long long g_ = (long long)(got);                                       \
        if (g_ < (long long)(lo) || g_ > (long long)(hi))                      \
            FAIL("%s is %lld, want %lld..%lld", #got, g_, (long long)(lo),     \
                 (long long)(hi));                                             \
    } while (0)

#define EXPECT_OK(call)                                                        \
    do {                                                                       \
        redislock_err e_ = (call);                                             \
        if (e_ != REDISLOCK_OK)                                                \
            FAIL("%s: %s (%s)", #call, redislock_errname(e_),                  \
                 redislock_errdetail());                                       \
    } while (0)

/* Compares a string field and its length with want. */
#define EXPECT_STR(s, len, want)                                               \
    do {                                                                       \
        if ((s) == NULL || (len) != strlen(want) ||                            \
            memcmp((s), (want), strlen(want)) != 0)                            \
            FAIL("%s is \"%.*s\" (%zu bytes), want \"%s\"", #s,                \
                 (s) ? (int)(len) : 6, (s) ? (s) : "(null)", (size_t)(len),    \
                 want);                                                        \
    } while (0)

/* size bytes, zeroed, ending where an inaccessible page begins. */
static void *fenced(size_t size)
{
    long page = sysconf(_SC_PAGESIZE);
    size_t span = ((size + (size_t)page - 1) / (size_t)page + 1) * page;
    char *p = mmap(NULL, span, PROT_READ | PROT_WRITE,
                   MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

    if (p == MAP_FAILED)
        FAIL("mmap of %zu bytes failed", span);
    if (mprotect(p + span - page, (size_t)page, PROT_NONE) != 0)
        FAIL("mprotect failed");
    p += span - page - size;
    memset(p, 0, size);
    return p;
}

static void check_guard(const unsigned char *g, const char *what)
{
    int i;

    for (i = 0; i < GUARD_LEN; i++)
        if (g[i] != GUARD_BYTE)
            FAIL("%s: guard byte %d after the struct is 0x%02x, want 0x%02x",
                 what, i, g[i], GUARD_BYTE);
}

/* An info with guard bytes after it; the sizeof is 0.1's. */
typedef struct guarded_info {
    redislock_info info;
    unsigned char guard[GUARD_LEN];
} guarded_info;

/* The fields inspect and list report for "kept", acquired with the options
 * below, for a caller with prefix "abi:". */
static void check_kept(const redislock_info *info, int64_t ttl_max)
{
    EXPECT_INT(info->held, 1);
    EXPECT_RANGE(info->ttl_ms, ttl_max - 5000, ttl_max);
    EXPECT_INT(info->holds, 1);
    EXPECT_STR(info->owner, info->owner_len, "abi-owner");
    EXPECT_STR(info->metadata, info->metadata_len, "abi-meta");
    EXPECT_STR((const char *)info->key, info->keylen, "kept");
    EXPECT_INT(info->reserved, REDISLOCK_KIND_LOCK);
}

typedef struct seen {
    int calls, kept;
} seen;

static int on_lock(const redislock_info *info, void *arg)
{
    seen *s = arg;

    s->calls++;
    if (info->keylen == 4 && memcmp(info->key, "kept", 4) == 0) {
        check_kept(info, 45000);
        s->kept++;
    } else {
        /* "plain": a token lock, no owner or metadata. */
        EXPECT_STR((const char *)info->key, info->keylen, "plain");
        EXPECT_INT(info->held, 1);
        EXPECT_RANGE(info->ttl_ms, 25000, 30000);
        EXPECT_INT(info->owner == NULL, 1);
        EXPECT_INT(info->metadata == NULL, 1);
        EXPECT_INT(info->reserved, REDISLOCK_KIND_LOCK);
    }
    return 0;
}

/* One server: options, acquire with and without options, inspect, list
 * and list_flags. */
static void one_server(const char *url)
{
    redislock_options *o = fenced(sizeof *o);
    redislock_acquire_options *ao = fenced(sizeof *ao);
    redislock_info *info = fenced(sizeof *info);
    guarded_info gi;
    redislock_client *c;
    redislock_lock *kept, *plain;
    int64_t ttl;
    seen s = {0, 0};

    o->prefix = "abi:";
    o->command_timeout_ms = 3000;
    o->max_connections = 2;
    EXPECT_OK(redislock_client_new(&c, url, o));
    EXPECT_OK(redislock_lock_new(c, "kept", 4, &kept));
    ao->ttl_ms = 45000;
    ao->owner = "abi-owner";
    ao->metadata = "abi-meta";
    EXPECT_OK(redislock_acquire(kept, ao));
    EXPECT_OK(redislock_ttl(kept, &ttl));
    EXPECT_RANGE(ttl, 40000, 45000);

    /* No options: the default TTL. */
    EXPECT_OK(redislock_lock_new(c, "plain", 5, &plain));
    EXPECT_OK(redislock_acquire(plain, NULL));
    EXPECT_OK(redislock_ttl(plain, &ttl));
    EXPECT_RANGE(ttl, 25000, REDISLOCK_DEFAULT_TTL_MS);

    EXPECT_OK(redislock_inspect(kept, info));
    check_kept(info, 45000);
    memset(&gi, 0, sizeof gi.info);
    memset(gi.guard, GUARD_BYTE, sizeof gi.guard);
    EXPECT_OK(redislock_inspect(kept, &gi.info));
    check_guard(gi.guard, "redislock_inspect");
    check_kept(&gi.info, 45000);

    EXPECT_OK(redislock_list(c, NULL, on_lock, &s));
    EXPECT_INT(s.calls, 2);
    EXPECT_INT(s.kept, 1);
    s.calls = s.kept = 0;
    EXPECT_OK(redislock_list_flags(c, "k*", REDISLOCK_LIST_ALL, on_lock, &s));
    EXPECT_INT(s.calls, 1);
    EXPECT_INT(s.kept, 1);

    EXPECT_OK(redislock_release(plain));
    redislock_lock_free(plain);
    /* Freed without release: the script finds "abi:kept" still held. */
    redislock_lock_free(kept);
    redislock_client_free(c);
}

/* On client c (then freed): key acquired for ttl_ms with fenced options,
 * read back with a fenced info, released. */
static void lock_once(redislock_client *c, const char *key, int64_t ttl_ms)
{
    redislock_acquire_options *ao = fenced(sizeof *ao);
    redislock_info *info = fenced(sizeof *info);
    redislock_lock *l;

    EXPECT_OK(redislock_lock_new(c, key, strlen(key), &l));
    ao->ttl_ms = ttl_ms;
    EXPECT_OK(redislock_acquire(l, ao));
    EXPECT_OK(redislock_inspect(l, info));
    EXPECT_INT(info->held, 1);
    EXPECT_RANGE(info->ttl_ms, ttl_ms - 5000, ttl_ms);
    EXPECT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
}

/* The other constructors, each with options that must be read. */
static void other_clients(const char *const urls[3])
{
    redislock_options *o = fenced(sizeof *o);
    redislock_client *c;
    redislock_err err;

    /* Sharded over one server: the prefix applies. */
    o->prefix = "abi-shard:";
    EXPECT_OK(redislock_client_new_sharded(&c, urls, 1, o));
    lock_once(c, "s", 20000);

    /* Redlock over three: an option only Redlock refuses is refused, so
     * the options are read; then a lock on all three. */
    o->prefix = NULL;
    o->wait_replicas = 1;
    EXPECT_INT(redislock_client_new_redlock(&c, urls, 3, o), REDISLOCK_EINVAL);
    EXPECT_INT(c == NULL, 1);
    o->wait_replicas = 0;
    o->server_timeout_ms = 500;
    EXPECT_OK(redislock_client_new_redlock(&c, urls, 3, o));
    lock_once(c, "r", 10000);

    /* Cluster: a negative timeout in the options is refused before any
     * server is asked; a plain server is no cluster. */
    o->server_timeout_ms = 0;
    o->command_timeout_ms = -1;
    EXPECT_INT(redislock_client_new_cluster(&c, urls, 1, o), REDISLOCK_EINVAL);
    o->command_timeout_ms = 0;
    err = redislock_client_new_cluster(&c, urls, 1, o);
    if (err == REDISLOCK_OK || c != NULL)
        FAIL("a cluster client over a plain server: %s",
             redislock_errname(err));
}

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: rl-abi-0.1 URL URL2 URL3\n");
        return 2;
    }
    one_server(argv[1]);
    other_clients((const char *const *)argv + 1);
    printf("abi: ok\n");
    return 0;
}
