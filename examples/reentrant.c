/*
 * reentrant [-u URL] [-k KEY]: a lock that its owner may take again.
 *
 * transfer() takes the lock on an account, then calls debit() and credit(),
 * which take the same lock because they are also called on their own.
 * With a plain lock the inner acquire would wait for the outer one forever;
 * with .reentrant = 1 it adds a hold instead, and each acquire needs its own
 * release: the lock is free only after the outermost release. Meanwhile
 * another owner is refused.
 *
 * The program prints each hold count as the handle and Redis see it, and
 * exits 0 when every step went as described, 1 otherwise. URL: -u, else
 * $REDISLOCK_URL, else redis://127.0.0.1:6379.
 */
#define _POSIX_C_SOURCE 200809L

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <redislock.h>

static redislock_client *client;

/* Prints a failed call with the library's detail and returns -1. */
static int fail(const char *what, redislock_err err)
{
    fprintf(stderr, "reentrant: %s: %s (%s)\n", what, redislock_strerror(err),
            redislock_errdetail());
    return -1;
}

/* Prints one line: the function, what it did, and the hold count of the
 * handle next to the one stored in Redis. */
static void show(redislock_lock *l, int depth, const char *fn, const char *what)
{
    redislock_info info;
    int64_t server = 0;

    /* inspect reads the lock as anyone could; a free lock has no holds. */
    if (redislock_inspect(l, &info) == REDISLOCK_OK && info.held)
        server = info.holds;
    printf("%*s%s: %s, holds %" PRId64 " (in Redis: %" PRId64 ")\n", depth * 2,
           "", fn, what, redislock_holds(l), server);
}

/* Takes one more hold on l. Every function below calls this on entry and
 * release_one() on exit, whether or not its caller holds the lock. */
static int take(redislock_lock *l, int depth, const char *fn)
{
    redislock_acquire_options o = {0};
    redislock_err err;

    o.reentrant = 1;  /* the same owner may take it again */
    o.ttl_ms = 10000; /* each acquire refreshes the lease */
    o.wait_ms = 2000; /* other owners are waited for, 2 s at most */
    err = redislock_acquire(l, &o);
    if (err != REDISLOCK_OK)
        return fail(fn, err);
    show(l, depth, fn, "acquired");
    return 0;
}

static int release_one(redislock_lock *l, int depth, const char *fn)
{
    redislock_err err = redislock_release(l);

    if (err != REDISLOCK_OK)
        return fail(fn, err);
    show(l, depth, fn, "released");
    return 0;
}

/* Another owner (a second handle has an owner id of its own) may not take
 * the lock while any hold is left. */
static int other_owner_refused(redislock_lock *l, int depth)
{
    size_t len;
    const void *key = redislock_key(l, &len);
    redislock_acquire_options o = {0};
    redislock_lock *other;
    redislock_err err;

    if ((err = redislock_lock_new(client, key, len, &other)) != REDISLOCK_OK)
        return fail("lock_new", err);
    o.reentrant = 1;
    err = redislock_acquire(other, &o); /* all-zero wait: try once */
    printf("%*sanother owner tries: %s\n", depth * 2, "",
           redislock_errname(err));
    if (err == REDISLOCK_OK)
        redislock_release(other);
    redislock_lock_free(other);
    return err == REDISLOCK_EHELD ? 0 : -1;
}

static int debit(redislock_lock *l, int depth)
{
    if (take(l, depth, "debit"))
        return -1;
    /* ... read the balance, check it, write it back ... */
    return release_one(l, depth, "debit");
}

static int credit(redislock_lock *l, int depth)
{
    int ret;

    if (take(l, depth, "credit"))
        return -1;
    ret = other_owner_refused(l, depth + 1);
    /* Release even when the check failed: every hold needs its release. */
    if (release_one(l, depth, "credit"))
        return -1;
    return ret;
}

static int transfer(redislock_lock *l)
{
    int ret;

    if (take(l, 0, "transfer"))
        return -1;
    ret = debit(l, 1) || credit(l, 1) ? -1 : 0;
    if (release_one(l, 0, "transfer"))
        return -1;
    return ret;
}

int main(int argc, char **argv)
{
    const char *url = getenv("REDISLOCK_URL");
    const char *key = "example:account:42";
    redislock_lock *l = NULL;
    redislock_info info;
    redislock_err err;
    int opt, ok = 0;

    while ((opt = getopt(argc, argv, "u:k:")) != -1) {
        if (opt == 'u')
            url = optarg;
        else if (opt == 'k')
            key = optarg;
        else {
            fprintf(stderr, "usage: reentrant [-u URL] [-k KEY]\n");
            return 2;
        }
    }
    if (url == NULL || *url == '\0')
        url = "redis://127.0.0.1:6379";
    /* NULL options: the defaults. */
    if ((err = redislock_client_new(&client, url, NULL)) != REDISLOCK_OK) {
        fail(url, err);
        return 1;
    }
    err = redislock_lock_new(client, key, strlen(key), &l);
    if (err != REDISLOCK_OK)
        fail("lock_new", err);
    else if (transfer(l) == 0) {
        /* After the outermost release the key is gone from Redis. */
        err = redislock_inspect(l, &info);
        ok = err == REDISLOCK_OK && !info.held;
        printf("%s\n", ok ? "the lock is free again" : "the lock is held");
    }
    redislock_lock_free(l);
    redislock_client_free(client);
    return ok ? 0 : 1;
}
