/*
 * points_demo [-u URL] [-w WORKERS] [-g GIFTS] [-c COST]: why a redemption
 * service needs a distributed lock.
 *
 * Worker processes, like the replicas of a web service, redeem points for
 * gifts from one shared stock with the classic read-check-write: read the
 * stock and the user's points, check them, do some processing, write both
 * back. Without a lock (round 1) workers act on stale reads, so gifts are
 * oversold and stock updates lost; an atomic INCR counter tells the truth.
 * With a redislock lock around each redemption (round 2) it must be exact,
 * or the exit status is 1. Data goes through hiredis, the lock through the
 * library. URL: -u, else $REDISLOCK_URL, else redis://127.0.0.1:6379.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <hiredis.h>
#include <redislock.h>

#define KEY_STOCK "demo:stock"
#define KEY_REDEEMED "demo:redeemed"
#define KEY_POINTS "demo:points:" /* + user number */
#define KEY_LOCK "demo:lock:stock"

struct config {
    const char *url;
    int workers; /* Worker i redeems for user i, so also the user count. */
    long long gifts, cost, points; /* Stock, price of a gift, each purse. */
};

struct result {
    long long redeemed, stock;
    double seconds;
};

/* Connects for the business data: unix://PATH, redis://HOST[:PORT] or
 * HOST[:PORT]. No password or database: the demo wants a scratch server. */
static redisContext *connect_data(const char *url)
{
    struct timeval tv = {2, 0};
    char host[256] = "";
    int port = 6379;
    redisContext *rc;
    if (strncmp(url, "unix://", 7) == 0) {
        snprintf(host, sizeof host, "%s", url + 7);
        host[strcspn(host, "?")] = '\0'; /* Drop a ?db=N query. */
        rc = redisConnectUnixWithTimeout(host, tv);
    } else {
        const char *hp = strncmp(url, "redis://", 8) == 0 ? url + 8 : url;
        sscanf(hp, "%255[^:/]:%d", host, &port);
        rc = redisConnectWithTimeout(host, port, tv);
    }
    if (rc == NULL || rc->err) {
        fprintf(stderr, "points_demo: cannot connect to %s: %s\n", url,
                rc ? rc->errstr : "out of memory");
        redisFree(rc);
        return NULL;
    }
    return rc;
}

/* Runs a command and fails on an error reply. With out, it reads a number
 * from GET: a missing key is an error too, since set-up wrote them all. */
static int command(redisContext *rc, long long *out, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    redisReply *r = redisvCommand(rc, fmt, ap);
    va_end(ap);
    int ok = r != NULL && r->type != REDIS_REPLY_ERROR &&
             (out == NULL || r->type == REDIS_REPLY_STRING);
    if (ok && out != NULL)
        *out = strtoll(r->str, NULL, 10);
    if (!ok)
        fprintf(stderr, "points_demo: '%s' failed: %s\n", fmt,
                r == NULL                      ? rc->errstr
                : r->type == REDIS_REPLY_ERROR ? r->str
                                               : "no such key");
    freeReplyObject(r);
    return ok ? 0 : -1;
}

/* Stands for what a real service does between its read and its write
 * (payment checks, audit logs): 100-300 us, which widens the race. */
static void processing_pause(void)
{
    struct timespec ts = {0, (100 + rand() % 201) * 1000L};
    nanosleep(&ts, NULL);
}

/* One unprotected read-check-write. Returns 1 after a redemption, 0 when
 * the stock is gone or the user cannot pay, -1 on error. */
static int redeem(redisContext *rc, const struct config *cfg,
                  const char *points_key)
{
    long long stock, points;
    if (command(rc, &stock, "GET %s", KEY_STOCK) ||
        command(rc, &points, "GET %s", points_key))
        return -1;
    if (stock <= 0 || points < cfg->cost)
        return 0;
    processing_pause();
    /* The bug the lock fixes: these values were computed from reads that
     * another worker may have overtaken, and its update is then lost. */
    if (command(rc, NULL, "SET %s %lld", KEY_STOCK, stock - 1) ||
        command(rc, NULL, "SET %s %lld", points_key, points - cfg->cost) ||
        command(rc, NULL, "INCR %s", KEY_REDEEMED))
        return -1;
    return 1;
}

/* Reports a failed library call, with the library's own explanation. */
static int lock_error(const char *what, redislock_err err)
{
    fprintf(stderr, "points_demo: %s: %s (%s)\n", what, redislock_strerror(err),
            redislock_errdetail());
    return -1;
}

/* The same redemption with the lock held around all of it. */
static int redeem_locked(redisContext *rc, const struct config *cfg,
                         const char *points_key, redislock_lock *lock)
{
    /* The lease is far longer than a redemption. Short retries keep the
     * waiting workers close behind the holder (the default is 100 ms). */
    redislock_acquire_options ao = {
        .ttl_ms = 5000, .wait_ms = REDISLOCK_WAIT_FOREVER, .retry_delay_ms = 5};
    redislock_err err = redislock_acquire(lock, &ao);
    if (err != REDISLOCK_OK)
        return lock_error("acquire", err);
    int ret = redeem(rc, cfg, points_key);
    /* Anything but OK means the lease may have run out while we worked, so
     * another worker may have been inside too: the round is untrustworthy. */
    err = redislock_release(lock);
    return err == REDISLOCK_OK ? ret : lock_error("release", err);
}

/* A worker process: redeems for user id until it cannot; returns the exit
 * status. Its connections are its own: two processes must never share one. */
static int worker(const struct config *cfg, int id, int locked)
{
    redislock_client *client = NULL;
    redislock_lock *lock = NULL;
    char points_key[64];
    int ret = -1;
    snprintf(points_key, sizeof points_key, KEY_POINTS "%d", id);
    srand((unsigned)getpid());
    redisContext *rc = connect_data(cfg->url);
    if (rc == NULL)
        return 1;
    if (locked) {
        redislock_err err = redislock_client_new(&client, cfg->url, NULL);
        if (err == REDISLOCK_OK)
            err = redislock_lock_new(client, KEY_LOCK, strlen(KEY_LOCK), &lock);
        if (err != REDISLOCK_OK) {
            lock_error("lock set-up", err);
            goto out;
        }
    }
    do
        ret = locked ? redeem_locked(rc, cfg, points_key, lock)
                     : redeem(rc, cfg, points_key);
    while (ret == 1);
out:
    redislock_lock_free(lock);
    redislock_client_free(client);
    redisFree(rc);
    return ret == 0 ? 0 : 1;
}

/* Writes the starting state (full stock, nothing redeemed, every user paid
 * up, no stale lock), or with fill 0 deletes every key the demo uses. */
static int reset_keys(redisContext *rc, const struct config *cfg, int fill)
{
    if (command(rc, NULL, "DEL %s %s %s", KEY_STOCK, KEY_REDEEMED, KEY_LOCK))
        return -1;
    if (fill && (command(rc, NULL, "SET %s %lld", KEY_STOCK, cfg->gifts) ||
                 command(rc, NULL, "SET %s 0", KEY_REDEEMED)))
        return -1;
    for (int i = 0; i < cfg->workers; i++)
        if (command(rc, NULL, "DEL " KEY_POINTS "%d", i) ||
            (fill &&
             command(rc, NULL, "SET " KEY_POINTS "%d %lld", i, cfg->points)))
            return -1;
    return 0;
}

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Forks the workers, waits for all of them, and reads the outcome. */
static int run_round(redisContext *rc, const struct config *cfg, int locked,
                     struct result *res)
{
    int failed = 0, status;
    if (reset_keys(rc, cfg, 1))
        return -1;
    fflush(NULL); /* Or each child would print our buffered output again. */
    double start = now();
    for (int i = 0; i < cfg->workers && !failed; i++) {
        pid_t pid = fork();
        if (pid == 0)
            _exit(worker(cfg, i, locked));
        if (pid < 0) {
            perror("points_demo: fork");
            failed = 1; /* Still reap the workers already started. */
        }
    }
    while (wait(&status) > 0)
        failed |= !WIFEXITED(status) || WEXITSTATUS(status) != 0;
    res->seconds = now() - start;
    if (failed)
        fprintf(stderr, "points_demo: a worker failed\n");
    if (failed || command(rc, &res->stock, "GET %s", KEY_STOCK) ||
        command(rc, &res->redeemed, "GET %s", KEY_REDEEMED))
        return -1;
    return 0;
}

/* Prints one row of the table; returns whether the round was exact. */
static int report(const char *mode, const struct config *cfg,
                  const struct result *res)
{
    long long oversold = res->redeemed - cfg->gifts;
    /* Each redemption should have taken one gift off the stock; those that
     * did not were overwritten by a concurrent worker. */
    long long lost = res->redeemed - (cfg->gifts - res->stock);
    int exact = res->redeemed == cfg->gifts && res->stock == 0;
    const char *verdict = exact            ? "exact"
                          : res->stock < 0 ? "NEGATIVE STOCK"
                          : oversold > 0   ? "OVERSOLD"
                          : lost != 0      ? "LOST UPDATES"
                                           : "INCOMPLETE";
    printf("%-9s | %8lld | %10lld | %8lld | %12lld | %8.3f | %s\n", mode,
           res->redeemed, res->stock, oversold > 0 ? oversold : 0, lost,
           res->seconds, verdict);
    return exact;
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
    int opt;
    while ((opt = getopt(argc, argv, "u:w:g:c:")) != -1) {
        if (opt == 'u')
            cfg->url = optarg;
        else if (opt == 'w')
            cfg->workers = atoi(optarg);
        else if (opt == 'g')
            cfg->gifts = atoll(optarg);
        else if (opt == 'c')
            cfg->cost = atoll(optarg);
        else
            return -1;
    }
    cfg->points = cfg->gifts * cfg->cost;
    if (optind != argc || cfg->workers < 1 || cfg->workers > 256 ||
        cfg->gifts < 1 || cfg->cost < 1)
        return -1;
    return 0;
}

int main(int argc, char **argv)
{
    const char *env = getenv("REDISLOCK_URL");
    struct config cfg = {env ? env : "redis://127.0.0.1:6379", 8, 200, 10, 0};
    struct result unlocked, locked;
    if (parse_args(argc, argv, &cfg)) {
        fprintf(stderr, "usage: points_demo [-u URL] [-w WORKERS] "
                        "[-g GIFTS] [-c COST]\n");
        return 2;
    }
    redisContext *rc = connect_data(cfg.url);
    if (rc == NULL)
        return 1;
    printf("%s: %d workers, %lld gifts at %lld points\n\n", cfg.url,
           cfg.workers, cfg.gifts, cfg.cost);
    int ok = run_round(rc, &cfg, 0, &unlocked) == 0 &&
             run_round(rc, &cfg, 1, &locked) == 0;
    if (ok) {
        printf("mode      | redeemed | stock left | oversold | "
               "lost updates | time (s) | verdict\n");
        report("no lock", &cfg, &unlocked);
        ok = report("redislock", &cfg, &locked);
    }
    ok &= reset_keys(rc, &cfg, 0) == 0;
    redisFree(rc);
    return ok ? 0 : 1;
}
