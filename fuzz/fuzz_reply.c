/*
 * libFuzzer target for everything the library does with a server's
 * replies: the public API, run against a "server" whose every byte comes
 * from the fuzzer.
 *
 * The library's own connection code (src/wire/conn.c) runs unchanged; only
 * a few calls are swapped out at link time (-Wl,--wrap): connect returns
 * a real hiredis context on a socketpair nobody writes to,
 * redisBufferWrite drops the formatted request, redisBufferRead feeds the
 * context's real reply parser from the input one byte at a time, and
 * poll() always finds the input ready. When the input runs out the
 * "server" has closed the connection. So every reply the library reads, for the
 * handshake (PING, AUTH, SELECT), SET, the Lua scripts, their NOSCRIPT
 * fallback, PTTL, SCAN and BLPOP, is fuzzed, in the order the library
 * asks for them, across reconnects.
 *
 * Input: byte 0 picks the call, byte 1 its options, the rest is the byte
 * stream the server sends.
 *
 * RL_FUZZ_SKIP (a list of words) leaves out what crashes on a bug already
 * reported, so that the rest can be fuzzed meanwhile: "list" the listing,
 * "failfast" the fail-fast option, "hugearray" streams with an array
 * count of 7 digits or more. By default everything is fuzzed.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis.h>
#include <sds.h>

#include "fake.h"
#include "redislock.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port,
                                             const struct timeval tv);
redisContext *__wrap_redisConnectUnixWithTimeout(const char *path,
                                                 const struct timeval tv);
int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout);

redisContext *__wrap_redisConnectWithTimeout(const char *ip, int port,
                                             const struct timeval tv)
{
    (void)ip;
    (void)port;
    (void)tv;
    return fake_connect();
}

redisContext *__wrap_redisConnectUnixWithTimeout(const char *path,
                                                 const struct timeval tv)
{
    (void)path;
    (void)tv;
    return fake_connect();
}

/* Waiting for the socket: the input is always "ready". */
int __wrap_poll(struct pollfd *fds, nfds_t n, int timeout)
{
    nfds_t i;

    (void)timeout;
    for (i = 0; i < n; i++)
        fds[i].revents = fds[i].events & POLLIN;
    return (int)n;
}

/* A waiter's strategy that never sleeps: 0 ms (try again at once), or
 * 300 ms, which blocks in BLPOP, whose answer is in the stream too. */
static int64_t no_sleep(void *arg, int attempt, int64_t holder_ttl)
{
    (void)attempt;
    (void)holder_ttl;
    return *(const int *)arg ? 300 : 0;
}

static int count(const redislock_info *info, void *arg)
{
    (void)info;
    return ++*(int *)arg > 3;
}

/* Whether RL_FUZZ_SKIP names word. */
static int skipped(const char *word)
{
    const char *skip = getenv("RL_FUZZ_SKIP");

    return skip != NULL && strstr(skip, word) != NULL;
}

/* Whether the stream holds an array count of 7 digits or more. */
static int huge_array(const uint8_t *p, size_t n)
{
    size_t i, d;

    for (i = 0; i < n; i++) {
        if (p[i] != '*')
            continue;
        for (d = 0; i + 1 + d < n && p[i + 1 + d] >= '0' && p[i + 1 + d] <= '9';
             d++)
            ;
        if (d >= 7)
            return 1;
    }
    return 0;
}

/* The call byte 0 picks, on handle l of client c. */
static redislock_err call(redislock_client *c, redislock_lock *l, int op,
                          int flags)
{
    redislock_acquire_options o = {0};
    redislock_info info;
    int64_t ttl;
    int block = flags & 8, n = 0;

    o.ttl_ms = 10000;
    o.fail_fast = (flags & 4) && !skipped("failfast");
    switch (op) {
    case 0:
        return REDISLOCK_OK; /* the handshake alone */
    case 1:
    case 2:
    case 3:
        o.reentrant = op == 2;
        o.metadata = op == 3 ? "meta" : NULL;
        /* A plain acquire is a share of a shared lock on flag 128, a
         * semaphore's permit on flag 64; both make the handle a set of
         * keys (see LLVMFuzzerTestOneInput), taken as a plain lock. */
        o.shared = op == 1 && (flags & 192) == 128;
        o.limit = op == 1 && (flags & 192) == 64 ? 3 : 0;
        if (flags & 16) {
            o.wait_ms = 10000;
            o.retry_fn = no_sleep;
            o.retry_arg = &block;
            o.max_attempts = 3;
        }
        return redislock_acquire(l, &o);
    case 4:
    case 5:
    case 6:
        redislock_adopt(l, "0123456789abcdef0123456789abcdef");
        return op == 4   ? redislock_release(l)
               : op == 5 ? redislock_extend(l, 5000)
                         : redislock_release_hold(l, 1000);
    case 7:
        return redislock_ttl(l, &ttl);
    case 8:
        return redislock_inspect(l, &info);
    default:
        return redislock_list(c, (flags & 16) ? "a*" : NULL, count, &n);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const urls[] = {
        "unix:///fuzz.sock", "unix:///fuzz.sock?db=3",
        "redis://user:secret@fuzz:6379", "redis://:secret@fuzz/2",
    };
    redislock_options opts = {0};
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    redislock_err err;
    int op, flags;

    if (size < 2)
        return 0;
    op = data[0] % 10;
    if ((op == 9 && skipped("list")) ||
        (skipped("hugearray") && huge_array(data + 2, size - 2)))
        return 0;
    flags = data[1];
    stream = data + 2;
    stream_len = size - 2;
    stream_pos = 0;
    opts.prefix = (flags & 32) ? "p:" : NULL;
    /* Waits never happen here (poll is always ready), but freeing the
     * client lets the watchdog give back an acquire whose reply the input
     * cut short, for up to a connect and a command timeout: short ones
     * keep that from costing seconds per input. */
    opts.connect_timeout_ms = 50;
    opts.command_timeout_ms = 50;
    err = redislock_client_new(&c, urls[flags & 3], &opts);
    if ((unsigned)err >= REDISLOCK_ERR_COUNT_ || redislock_errdetail() == NULL)
        abort();
    if (err != REDISLOCK_OK) {
        if (c != NULL)
            abort(); /* *out is NULL on failure */
        return 0;
    }
    if ((flags & 192) == 192) {
        /* Every call on a set of two keys (its own scripts). */
        static const void *const keys[2] = {"key", "key2"};
        static const size_t lens[2] = {3, 4};

        if (redislock_lock_new_multi(c, keys, lens, 2, &l) != REDISLOCK_OK)
            abort();
    } else if (redislock_lock_new(c, "key", 3, &l) != REDISLOCK_OK) {
        abort();
    }
    err = call(c, l, op, flags);
    if ((unsigned)err >= REDISLOCK_ERR_COUNT_)
        abort();
    /* A second call on the same client: reuse or reconnect. */
    if (flags & 64)
        redislock_ttl(l, &(int64_t){0});
    redislock_lock_free(l);
    redislock_client_free(c);
    return 0;
}
