/*
 * watchdog [-u URL] [-k KEY] [-t TTL_MS] [-n STEPS] [-s STEP_MS] [-x STEP]:
 * a job that outlasts its lease, kept safe by the watchdog.
 *
 * The job takes a lock with a short TTL (default 1000 ms) and .watchdog = 1,
 * then works for STEPS steps of STEP_MS each (default 10 of 300 ms: three
 * TTLs). The client's watchdog thread renews the lease every TTL/3 while the
 * job runs, so the lock is never free under it, and a crashed job would
 * free it within one TTL.
 *
 * If the lock is lost anyway (someone deleted or overwrote the key, or
 * Redis could not be reached for too long), the watchdog reports it three
 * ways: redislock_check() stops returning REDISLOCK_OK, the descriptor of
 * redislock_lost_fd() becomes readable, and the on_lost callback runs. The
 * job polls that descriptor as it works, stops at once, and exits 3.
 *
 * -x STEP simulates the loss: after that step, a second connection (plain
 * hiredis, standing for another process that ignores the lock) overwrites
 * the key. Exit status: 0 when the job finished, 3 when the lock was lost,
 * 1 on other errors, 2 on bad usage. URL: -u, else $REDISLOCK_URL, else
 * redis://127.0.0.1:6379.
 */
#define _POSIX_C_SOURCE 200809L

#include <poll.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis.h>
#include <redislock.h>

struct config {
    const char *url, *key;
    long ttl_ms, steps, step_ms, intrude_after;
};

/* Written by the watchdog thread, read by the main thread. */
static atomic_int lost_why = -1;

/* The on_lost callback runs on the watchdog thread, which renews every lock
 * of the client: it records the reason and returns, and must not call
 * functions on the handle. */
static void on_lost(redislock_lock *l, redislock_err why, void *arg)
{
    (void)l;
    (void)arg;
    atomic_store(&lost_why, (int)why);
}

/* The simulated intruder: overwrites key through its own connection, as a
 * process that does not use the lock would. Understands unix://PATH and
 * redis://HOST[:PORT] only; this is not how to use the library. */
static int intrude(const char *url, const char *key)
{
    struct timeval tv = {2, 0};
    char host[256] = "";
    int port = 6379, ok;
    redisContext *rc;
    redisReply *r;

    if (strncmp(url, "unix://", 7) == 0) {
        snprintf(host, sizeof host, "%s", url + 7);
        host[strcspn(host, "?")] = '\0';
        rc = redisConnectUnixWithTimeout(host, tv);
    } else {
        sscanf(url + (strncmp(url, "redis://", 8) ? 0 : 8), "%255[^:/]:%d",
               host, &port);
        rc = redisConnectWithTimeout(host, port, tv);
    }
    if (rc == NULL || rc->err) {
        redisFree(rc);
        return -1;
    }
    r = redisCommand(rc, "SET %s %s PX 60000", key, "intruder");
    ok = r != NULL && r->type == REDIS_REPLY_STATUS;
    freeReplyObject(r);
    redisFree(rc);
    if (ok)
        printf("intruder: overwrote %s from another connection\n", key);
    return ok ? 0 : -1;
}

/* One step of work: here, waiting STEP_MS on the loss descriptor. A real
 * job would poll it along with its own descriptors, or call
 * redislock_check() before each write that needs the lock. Returns 1 when
 * the lock is lost. */
static int work_step(redislock_lock *l, long step_ms)
{
    struct pollfd p = {.fd = redislock_lost_fd(l), .events = POLLIN};

    return poll(&p, 1, (int)step_ms) > 0 || redislock_check(l) != REDISLOCK_OK;
}

/* Runs the job under the lock; returns the exit status. */
static int job(redislock_lock *l, const struct config *cfg)
{
    redislock_acquire_options o = {0};
    redislock_err err;
    long i;

    o.ttl_ms = cfg->ttl_ms;
    o.watchdog = 1; /* renew every ttl_ms/3 until release */
    o.on_lost = on_lost;
    if ((err = redislock_acquire(l, &o)) != REDISLOCK_OK) {
        fprintf(stderr, "watchdog: acquire %s: %s\n", cfg->key,
                redislock_strerror(err));
        return 1;
    }
    printf("acquired %s: ttl %ld ms, renewed by the watchdog\n", cfg->key,
           cfg->ttl_ms);
    for (i = 1; i <= cfg->steps; i++) {
        if (work_step(l, cfg->step_ms)) {
            printf("lost fd readable during step %ld/%ld: stopping\n", i,
                   cfg->steps);
            printf("check: %s\n", redislock_errname(redislock_check(l)));
            break;
        }
        printf("step %ld/%ld done\n", i, cfg->steps);
        if (i == cfg->intrude_after && intrude(cfg->url, cfg->key))
            fprintf(stderr, "watchdog: the intruder failed\n");
    }
    /* Release whatever happened: after a loss the answer says who holds
     * the key now, and the handle stops holding it. */
    err = redislock_release(l);
    printf("release: %s\n", redislock_errname(err));
    if (i > cfg->steps && err == REDISLOCK_OK) {
        printf("job done: %ld ms of work under a %ld ms lease\n",
               cfg->steps * cfg->step_ms, cfg->ttl_ms);
        return 0;
    }
    return i > cfg->steps ? 1 : 3;
}

static int parse_args(int argc, char **argv, struct config *cfg)
{
    int opt;

    while ((opt = getopt(argc, argv, "u:k:t:n:s:x:")) != -1) {
        switch (opt) {
        case 'u':
            cfg->url = optarg;
            break;
        case 'k':
            cfg->key = optarg;
            break;
        case 't':
            cfg->ttl_ms = atol(optarg);
            break;
        case 'n':
            cfg->steps = atol(optarg);
            break;
        case 's':
            cfg->step_ms = atol(optarg);
            break;
        case 'x':
            cfg->intrude_after = atol(optarg);
            break;
        default:
            return -1;
        }
    }
    if (optind != argc || cfg->ttl_ms <= 0 || cfg->steps <= 0)
        return -1;
    return cfg->step_ms > 0 ? 0 : -1;
}

int main(int argc, char **argv)
{
    struct config cfg = {.url = getenv("REDISLOCK_URL"),
                         .key = "example:watchdog",
                         .ttl_ms = 1000,
                         .steps = 10,
                         .step_ms = 300};
    redislock_client *c;
    redislock_lock *l = NULL;
    redislock_err err;
    int status, why;

    if (parse_args(argc, argv, &cfg)) {
        fprintf(stderr, "usage: watchdog [-u URL] [-k KEY] [-t TTL_MS] "
                        "[-n STEPS] [-s STEP_MS] [-x STEP]\n");
        return 2;
    }
    if (cfg.url == NULL || *cfg.url == '\0')
        cfg.url = "redis://127.0.0.1:6379";
    if ((err = redislock_client_new(&c, cfg.url, NULL)) != REDISLOCK_OK) {
        fprintf(stderr, "watchdog: %s: %s\n", cfg.url, redislock_errdetail());
        return 1;
    }
    err = redislock_lock_new(c, cfg.key, strlen(cfg.key), &l);
    status = err == REDISLOCK_OK ? job(l, &cfg) : 1;
    redislock_lock_free(l);
    /* Freeing the client stops its watchdog thread, so from here on the
     * callback has either run or never will. */
    redislock_client_free(c);
    why = atomic_load(&lost_why);
    if (why >= 0)
        printf("on_lost was called: %s\n", redislock_errname(why));
    return status;
}
