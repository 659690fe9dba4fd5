/*
 * Shared (read-write) locks (redislock_acquire_options.shared): any number
 * of shares at once, each with its own lease, token and fencing token,
 * excluding an exclusive holder and excluded by it; writer preference (a
 * waiting exclusive request stops new shares until it gets the key or its
 * wait ends); waiters woken in a chain and silent while blocked; expired,
 * adopted and renewed shares; bad input refused with nothing written;
 * processes reading and writing under the lock; a killed or stopped
 * holder; and sharded keys. The model-based run is test_shared_model.c.
 */
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define KEY "shr:key"
/* KEY as a set of one, for the harness's holders. */
static const char *const one_key[1] = {KEY};
/* The members of a shared key's set that are not shares. */
#define MARK "redislock:shared"
#define WRITER "redislock:writer"
/* The server counts whole milliseconds, and its clock and ours differ by
 * a little: how early a lease may look ended. */
#define SERVER_MS_SLACK 3

static redislock_acquire_options share(int64_t ttl, int64_t wait)
{
    redislock_acquire_options o = th_aopts(ttl, wait, 0);

    o.shared = 1;
    return o;
}

/* Whether the sorted set at key has member m. */
static int has_member(redisContext *r, const char *key, const char *m)
{
    redisReply *rep = th_cmd(r, "ZSCORE %s %s", key, m);
    int yes = rep->type == REDIS_REPLY_STRING;

    freeReplyObject(rep);
    return yes;
}

/* The shares in KEY's set: its members but the kind marker and a waiting
 * writer's record. KEY must be a sorted set or absent. */
static long long shares(redisContext *r)
{
    long long n = th_cmd_int(r, "ZCARD %s", KEY);

    if (n == 0)
        return 0;
    return n - has_member(r, KEY, MARK) - has_member(r, KEY, WRITER);
}

/* Polls until a waiting writer's record is in KEY's set; fails after ms.
 * Returns how long it took. */
static int64_t wait_writer_recorded(redisContext *r, int64_t ms)
{
    int64_t t0 = th_now_ms();

    while (!has_member(r, KEY, WRITER)) {
        if (th_now_ms() - t0 > ms)
            test_fail_(__FILE__, __LINE__, "no %s member in %s after %lld ms",
                       WRITER, KEY, (long long)ms);
        th_sleep_ms(2);
    }
    return th_now_ms() - t0;
}

void test_shared_readers_together_writer_alone(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(10000, 0);
    redislock_acquire_options x = th_aopts(10000, 0, 0);
    redislock_lock *l[4], *w = th_lock(e.c, KEY);
    redislock_info info;
    redisReply *rep;
    int64_t last = 0;
    int i;

    for (i = 0; i < 4; i++) {
        l[i] = th_lock(e.c, KEY);
        ASSERT_OK(redislock_acquire(l[i], &o));
        ASSERT_GT(redislock_fence(l[i]), last);
        last = redislock_fence(l[i]);
        ASSERT_GT(redislock_valid_ms(l[i]), 9000);
        ASSERT_EQ_INT(has_member(e.r, KEY, redislock_token(l[i])), 1);
    }
    ASSERT_ERR(redislock_acquire(w, &x), REDISLOCK_EHELD);
    ASSERT_EQ_INT(shares(e.r), 4);
    ASSERT_EQ_INT(has_member(e.r, KEY, MARK), 1);
    /* A fail-fast writer records no wait. */
    ASSERT_EQ_INT(has_member(e.r, KEY, WRITER), 0);
    ASSERT_OK(redislock_inspect(w, &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SHARED);
    ASSERT_EQ_INT(info.holds, 4);
    ASSERT_EQ_INT(info.limit, 0);
    ASSERT(info.owner == NULL);
    ASSERT_EQ_INT(info.fence, 0); /* the shares' tokens are theirs */
    ASSERT_GT(info.ttl_ms, 9000);
    /* Held for other libraries too. */
    rep = th_cmd(e.r, "SET %s x NX PX 1000", KEY);
    ASSERT_EQ_INT(rep->type, REDIS_REPLY_NIL);
    freeReplyObject(rep);
    ASSERT_GT(th_pttl(e.r, KEY), 9000);
    for (i = 0; i < 4; i++)
        ASSERT_OK(redislock_release(l[i]));
    /* The last share released takes the key with it. */
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    /* Released twice: the handle holds nothing. */
    ASSERT_ERR(redislock_release(l[0]), REDISLOCK_EINVAL);
    /* An exclusive holder (a plain SET NX key) keeps shares out ... */
    ASSERT_OK(redislock_acquire(w, &x));
    ASSERT_GT(redislock_fence(w), last);
    last = redislock_fence(w);
    ASSERT_KEY(e.r, KEY, redislock_token(w));
    ASSERT_ERR(redislock_acquire(l[0], &o), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(w));
    /* ... and a share, whose token outranks the writer's, keeps it out. */
    ASSERT_OK(redislock_acquire(l[0], &o));
    ASSERT_GT(redislock_fence(l[0]), last);
    ASSERT_ERR(redislock_acquire(w, &x), REDISLOCK_EHELD);
    ASSERT_OK(redislock_release(l[0]));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    for (i = 0; i < 4; i++)
        redislock_lock_free(l[i]);
    redislock_lock_free(w);
    th_env_stop(&e);
}

/* Readers hold; a writer waits, and its record turns new readers away
 * although only readers hold; the last reader's release wakes it. */
static void writer_preferred(th_env *e)
{
    redislock_acquire_options o = share(10000, 0);
    redislock_acquire_options x = th_aopts(10000, 5000, 0);
    redislock_acquire_options ow = share(10000, 5000);
    redislock_lock *r1 = th_lock(e->c, KEY), *r2 = th_lock(e->c, KEY),
                   *late = th_lock(e->c, KEY);
    redislock_info info;
    th_waiter w, rw;
    int64_t t0, rel;

    ASSERT_OK(redislock_acquire(r1, &o));
    ASSERT_OK(redislock_acquire(r2, &o));
    th_waiter_start(&w, e->c, KEY, &x);
    test_log("writer's wait recorded after %lld ms",
             (long long)wait_writer_recorded(e->r, 2000));
    ASSERT_ERR(redislock_acquire(late, &o), REDISLOCK_EHELD);
    /* Readers already in keep their shares, and may extend them. */
    ASSERT_OK(redislock_extend(r1, 10000));
    ASSERT_OK(redislock_inspect(late, &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SHARED);
    ASSERT_EQ_INT(info.holds, 2);
    ASSERT_OK(redislock_release(r1));
    ASSERT_ERR(redislock_acquire(late, &o), REDISLOCK_EHELD);
    rel = th_now_us();
    ASSERT_OK(redislock_release(r2));
    th_waiter_join_ok(&w, 3000);
    test_log("last reader's release to the writer's return: %lld us",
             (long long)(w.done_us - rel));
    /* Woken: the readers' leases had 9 s left, and the writer's pauses
     * are bounded by them. */
    ASSERT_LT(w.done_us - rel, 500 * 1000);
    ASSERT_KEY(e->r, KEY, w.token);
    /* The reader turned away gets in once the writer releases. */
    th_waiter_start(&rw, e->c, KEY, &ow);
    th_wait_blocked(e->r, 1, 2000);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(w.l));
    th_waiter_join_ok(&rw, 3000);
    test_log("writer's release to the waiting reader's return: %lld us",
             (long long)(rw.done_us - t0));
    ASSERT_LT(rw.done_us - t0, 1000 * 1000);
    ASSERT_GT(redislock_fence(rw.l), redislock_fence(w.l));
    ASSERT_OK(redislock_release(rw.l));
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", KEY), 0);
    redislock_lock_free(w.l);
    redislock_lock_free(rw.l);
    redislock_lock_free(r1);
    redislock_lock_free(r2);
    redislock_lock_free(late);
}

/* A writer that waits 2 s turns new readers away for all of its wait
 * (the readers' leases are far longer), and stops within its wait and a
 * second: its record in the set lasts no longer than its wait. The wait
 * is long enough for the writer to spend it in one blocked pause behind
 * the readers' 10 s leases. */
#define GAVE_UP_WAIT_MS 2000

void test_shared_writer_record_ends_with_wait(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(10000, 0);
    redislock_acquire_options x = th_aopts(10000, GAVE_UP_WAIT_MS, 0);
    redislock_lock *r1 = th_lock(e.c, KEY), *late = th_lock(e.c, KEY);
    th_waiter w;
    int64_t t0, in = -1;

    ASSERT_OK(redislock_acquire(r1, &o));
    t0 = th_now_ms();
    th_waiter_start(&w, e.c, KEY, &x);
    wait_writer_recorded(e.r, 2000);
    ASSERT_ERR(redislock_acquire(late, &o), REDISLOCK_EHELD);
    /* No event tells of a record that ran out: poll with fail-fast tries. */
    while (th_now_ms() - t0 < 2 * GAVE_UP_WAIT_MS + 1000) {
        if (redislock_acquire(late, &o) == REDISLOCK_OK) {
            in = th_now_ms() - t0;
            break;
        }
        th_sleep_ms(10);
    }
    th_join_within(w.t, 3000);
    test_log("writer waiting %d ms: %s; a reader got in %lld ms after it "
             "began",
             GAVE_UP_WAIT_MS, redislock_errname(w.err), (long long)in);
    ASSERT_ERR(w.err, REDISLOCK_EHELD);
    ASSERT_GE(in, GAVE_UP_WAIT_MS - 20);
    ASSERT_LE(in, GAVE_UP_WAIT_MS + 1000);
    ASSERT_OK(redislock_release(late));
    ASSERT_OK(redislock_release(r1));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    redislock_lock_free(w.l);
    redislock_lock_free(r1);
    redislock_lock_free(late);
    th_env_stop(&e);
}

/* A writer's record outlives the last share's lease, up to a second past
 * it, though no script runs when that lease ends: the set lives as long
 * as the record (the 2026-11-29 flake hunt's starved writer: the set
 * expired with its last share, the record with it, and readers who came
 * before the writer's next attempt got in). A share whose holder died
 * ends at 1.5 s; writer W, a process of its own, records its wait (its
 * record lasts to 2.5 s) and is stopped, as a loaded box may hold it up;
 * a reader trying at 1.6 s must be turned away, and W, resumed, gets the
 * key. */
void test_shared_writer_record_outlives_shares(void)
{
    th_env e = th_env_start();
    redislock_acquire_options ro = share(10000, 0);
    redislock_lock *late = th_lock(e.c, KEY);
    redisReply *t = th_cmd(e.r, "TIME");
    long long now = strtoll(t->element[0]->str, NULL, 10) * 1000 +
                    strtoll(t->element[1]->str, NULL, 10) / 1000;
    int64_t t0 = th_now_ms();
    redislock_err err;
    int pid, st;

    freeReplyObject(t);
    ASSERT_EQ_INT(th_cmd_int(e.r, "ZADD " KEY " inf redislock:shared %lld "
                                  "ghost",
                             now + 1500),
                  2);
    ASSERT_EQ_INT(th_cmd_int(e.r, "PEXPIRE " KEY " 1500"), 1);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        redislock_client *c = th_client(e.s);
        redislock_lock *w = th_lock(c, KEY);
        redislock_acquire_options x = th_aopts(10000, 5000, 0);

        err = redislock_acquire(w, &x);
        if (err == REDISLOCK_OK)
            err = redislock_release(w);
        _exit(err == REDISLOCK_OK ? 0 : 10 + (int)err);
    }
    wait_writer_recorded(e.r, 2000);
    ASSERT_EQ_INT(kill(pid, SIGSTOP), 0);
    /* Else W may have taken the key with its first attempt. */
    ASSERT_LT(th_now_ms() - t0, 1500);
    /* The share's lease ends at 1.5 s; nothing marks it. */
    th_sleep_ms(1600 - (th_now_ms() - t0));
    err = redislock_acquire(late, &ro);
    ASSERT_EQ_INT(kill(pid, SIGCONT), 0);
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    test_log("reader at %lld ms: %s; writer exit %d",
             (long long)(th_now_ms() - t0), redislock_errname(err),
             WIFEXITED(st) ? WEXITSTATUS(st) : -1);
    ASSERT_ERR(err, REDISLOCK_EHELD);
    ASSERT(WIFEXITED(st));
    ASSERT_EQ_INT(WEXITSTATUS(st), 0);
    redislock_lock_free(late);
    th_env_stop(&e);
}

void test_shared_writer_preference(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(10000, 0);
    redislock_acquire_options x = th_aopts(10000, 0, 0);
    redislock_lock *r1 = th_lock(e.c, KEY), *r2 = th_lock(e.c, KEY),
                   *w = th_lock(e.c, KEY);

    writer_preferred(&e);
    /* A fail-fast writer records nothing and turns nobody away. */
    ASSERT_OK(redislock_acquire(r1, &o));
    ASSERT_ERR(redislock_acquire(w, &x), REDISLOCK_EHELD);
    ASSERT_EQ_INT(has_member(e.r, KEY, WRITER), 0);
    ASSERT_OK(redislock_acquire(r2, &o));
    ASSERT_OK(redislock_release(r1));
    ASSERT_OK(redislock_release(r2));
    redislock_lock_free(r1);
    redislock_lock_free(r2);
    redislock_lock_free(w);
    th_env_stop(&e);
}

/* A writer holds; three readers wait, blocked and silent; its one release
 * lets all three in, each woken by the one before it. */
#define WOKEN_READERS 3

void test_shared_waiters_woken_and_silent(void)
{
    th_env e = th_env_start();
    redislock_acquire_options x = th_aopts(30000, 0, 0);
    redislock_acquire_options ow = share(30000, 10000);
    redislock_lock *w = th_lock(e.c, KEY), *q = th_lock(e.c, KEY);
    th_waiter rw[WOKEN_READERS];
    redislock_info info;
    int64_t t0, worst = 0;
    int i;

    ASSERT_OK(redislock_acquire(w, &x));
    for (i = 0; i < WOKEN_READERS; i++)
        th_waiter_start(&rw[i], e.c, KEY, &ow);
    th_wait_blocked(e.r, WOKEN_READERS, 3000);
    th_assert_silent(e.r, 1000);
    t0 = th_now_us();
    ASSERT_OK(redislock_release(w));
    for (i = 0; i < WOKEN_READERS; i++) {
        th_waiter_join_ok(&rw[i], 5000);
        test_log("reader %d in %lld us after the release", i,
                 (long long)(rw[i].done_us - t0));
        if (rw[i].done_us - t0 > worst)
            worst = rw[i].done_us - t0;
    }
    /* Woken, not timed out: the writer's lease had 29 s left. */
    ASSERT_LT(worst, 1000 * 1000);
    ASSERT_OK(redislock_inspect(q, &info));
    ASSERT_EQ_INT(info.reserved, REDISLOCK_KIND_SHARED);
    ASSERT_EQ_INT(info.holds, WOKEN_READERS);
    for (i = 0; i < WOKEN_READERS; i++) {
        ASSERT_OK(redislock_release(rw[i].l));
        redislock_lock_free(rw[i].l);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    redislock_lock_free(w);
    redislock_lock_free(q);
    th_env_stop(&e);
}

/* A writer's release takes the lock itself only once another writer
 * waited for it (rl__lock_copy_wake): a writer that takes KEY behind
 * holder, waiting with o. */
static void writer_behind(th_env *e, redislock_lock *holder,
                          const redislock_acquire_options *o, th_waiter *w)
{
    ASSERT_OK(redislock_acquire(holder, o));
    th_waiter_start(w, e->c, KEY, o);
    th_wait_blocked(e->r, 1, 3000);
    ASSERT_OK(redislock_release(holder));
    th_waiter_join_ok(w, 5000);
}

/* Scripts the server has run (FCALL, EVALSHA, EVAL). */
static long long scripts_run(redisContext *r)
{
    th_cmdstats *st = malloc(sizeof *st);
    long long n;

    ASSERT(st != NULL);
    th_cmdstats_read(r, st);
    n = th_cmdstats_scripts(st);
    free(st);
    return n;
}

/* How soon a release must wake a blocked waiter, against its 10 s wait:
 * round trips and wake-ups on a loaded 2-core box under ASan. */
#define WAKE_MAX_US (1000 * 1000)

void test_shared_writer_release_leaves_readers_asleep(void)
{
    th_env e = th_env_start();
    redislock_acquire_options x = th_aopts(30000, 10000, 0);
    redislock_acquire_options ow = share(30000, 10000);
    redislock_lock *a = th_lock(e.c, KEY);
    th_waiter h, w, r;
    long long s0, s1;
    int64_t t0;

    /* A release by a holder that waited carries COPY behind it, and the
     * first one on the node only learns that COPY runs there: this one,
     * with nobody waiting. */
    writer_behind(&e, a, &x, &h);
    ASSERT_OK(redislock_release(h.l));
    redislock_lock_free(h.l);
    /* h holds after a wait; a reader and a writer block behind it. */
    writer_behind(&e, a, &x, &h);
    th_waiter_start(&r, e.c, KEY, &ow);
    th_wait_blocked(e.r, 1, 3000);
    th_waiter_start(&w, e.c, KEY, &x);
    th_wait_blocked(e.r, 2, 3000);
    s0 = scripts_run(e.r);
    ASSERT_OK(redislock_release(h.l));
    th_waiter_join_ok(&w, 5000);
    /* The writer's attempt ran behind its BLPOP, in the pass of the
     * server's loop that served it: a woken reader's would have run in
     * the same pass, before the writer heard. h's release and w's
     * attempt, then; not the reader's, refused. */
    s1 = scripts_run(e.r);
    test_log("scripts run from the release to the writer's grant: %lld",
             s1 - s0);
    ASSERT_EQ_INT(s1 - s0, 2);
    ASSERT_EQ_INT(th_blocked_clients(e.r), 1);
    /* With no writer waiting, a writer's release wakes the reader at once
     * (the COPY gives it the wake nobody took), not at the end of its
     * 10 s wait. */
    t0 = th_now_us();
    ASSERT_OK(redislock_release(w.l));
    th_waiter_join_ok(&r, 5000);
    test_log("reader in %lld us after the writer's release",
             (long long)(r.done_us - t0));
    ASSERT_LT(r.done_us - t0, WAKE_MAX_US);
    ASSERT_OK(redislock_release(r.l));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    redislock_lock_free(r.l);
    redislock_lock_free(w.l);
    redislock_lock_free(h.l);
    redislock_lock_free(a);
    th_env_stop(&e);
}

/* A set's waiter may take the wake of a key a reader also waits for,
 * and then be refused by another of its keys: the release must not leave
 * that key's readers to the COPY, which finds the wake taken. Here a set
 * of KEY and KEY2 waits behind KEY's holder (a writer that waited, whose
 * release would leave the readers to the COPY), KEY2 is taken
 * meanwhile; KEY's release wakes the set, which is refused by KEY2, and
 * the reader behind KEY gets in at once all the same. */
void test_shared_set_waiter_refused_reader_woken(void)
{
    th_env e = th_env_start();
    redislock_acquire_options x = th_aopts(30000, 10000, 0);
    redislock_acquire_options ow = share(30000, 10000);
    const char *keys[2] = {KEY, KEY "2"};
    size_t lens[2] = {strlen(KEY), strlen(KEY "2")};
    redislock_lock *a = th_lock(e.c, KEY), *k2 = th_lock(e.c, KEY "2"), *set;
    th_waiter h, sw, r;
    int64_t t0;

    ASSERT_OK(redislock_lock_new_multi(e.c, (const void *const *)keys, lens,
                                       2, &set));
    /* The node's COPY memo, as in the test above; then h holds KEY after
     * a wait. */
    writer_behind(&e, a, &x, &h);
    ASSERT_OK(redislock_release(h.l));
    redislock_lock_free(h.l);
    writer_behind(&e, a, &x, &h);
    th_waiter_start_lock(&sw, set, &x);
    th_wait_blocked(e.r, 1, 3000);
    th_waiter_start(&r, e.c, KEY, &ow);
    th_wait_blocked(e.r, 2, 3000);
    ASSERT_OK(redislock_acquire(k2, &x));
    t0 = th_now_us();
    ASSERT_OK(redislock_release(h.l));
    th_waiter_join_ok(&r, 5000);
    test_log("reader in %lld us after the release", (long long)(r.done_us - t0));
    ASSERT_LT(r.done_us - t0, WAKE_MAX_US);
    /* The set waits on, now behind KEY2 (its BLPOP a round trip after
     * its refusal). */
    th_wait_blocked(e.r, 1, 3000);
    ASSERT_OK(redislock_release(r.l));
    ASSERT_OK(redislock_release(k2));
    th_waiter_join_ok(&sw, 5000);
    ASSERT_OK(redislock_release(set));
    redislock_lock_free(r.l);
    redislock_lock_free(h.l);
    redislock_lock_free(set);
    redislock_lock_free(k2);
    redislock_lock_free(a);
    th_env_stop(&e);
}

void test_shared_expired_share_not_released(void)
{
    th_env e = th_env_start();
    redislock_acquire_options shortl = share(60, 0);
    redislock_acquire_options longl = share(10000, 0);
    redislock_acquire_options x = th_aopts(1000, 0, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    redislock_err err;

    th_share_expiry(&e, KEY, &shortl, &longl);
    /* The only share ran out: the key went with it, and a writer may
     * take it at once. */
    ASSERT_OK(redislock_acquire(a, &shortl));
    th_sleep_ms(120);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    ASSERT_OK(redislock_acquire(b, &x));
    /* The ended share's release leaves the writer's key alone. */
    err = redislock_release(a);
    ASSERT(err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST);
    ASSERT_KEY(e.r, KEY, redislock_token(b));
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

/* A share's token adopted by another handle (as the CLI's release and
 * extend do): it extends and releases that share only, refuses
 * hold-after, and an adopted token of a share that ran out is expired. */
void test_shared_adopted_share(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(5000, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY),
                   *other = th_lock(e.c, KEY);
    char tok[300];
    redisReply *rep;
    char *before;

    ASSERT_OK(redislock_acquire(other, &o));
    rep = th_cmd(e.r, "ZSCORE %s %s", KEY, redislock_token(other));
    ASSERT(rep->type == REDIS_REPLY_STRING);
    before = strdup(rep->str);
    freeReplyObject(rep);
    ASSERT_OK(redislock_acquire(a, &o));
    snprintf(tok, sizeof tok, "%s", redislock_token(a));
    ASSERT_OK(redislock_adopt(b, tok));
    ASSERT_OK(redislock_extend(b, 20000));
    ASSERT_GT(th_pttl(e.r, KEY), 15000);
    /* The other share's lease did not move. */
    rep = th_cmd(e.r, "ZSCORE %s %s", KEY, redislock_token(other));
    ASSERT(rep->type == REDIS_REPLY_STRING);
    ASSERT_EQ_STR(rep->str, before);
    freeReplyObject(rep);
    free(before);
    ASSERT_ERR(redislock_release_hold(b, 1000), REDISLOCK_EINVAL);
    test_log("%s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), "share") != NULL);
    ASSERT_EQ_INT(shares(e.r), 2);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(shares(e.r), 1);
    ASSERT_EQ_INT(has_member(e.r, KEY, tok), 0);
    ASSERT_EQ_INT(has_member(e.r, KEY, redislock_token(other)), 1);
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_release(other));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    o.ttl_ms = 50;
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_adopt(b, redislock_token(a)));
    th_sleep_ms(100);
    ASSERT_ERR(redislock_release(b), REDISLOCK_EEXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(other);
    th_env_stop(&e);
}

/* The score (lease end, server ms) of member m of KEY's set, or -1. */
static long long score(redisContext *r, const char *m)
{
    redisReply *rep = th_cmd(r, "ZSCORE %s %s", KEY, m);
    long long v = rep->type == REDIS_REPLY_STRING ? atoll(rep->str) : -1;

    freeReplyObject(rep);
    return v;
}

/* Writers refused one after another by the same reader each bound the
 * record by the reader's lease and a second, not by the key's life, which
 * the writer before lengthened: on 6c4ce36 each of them added a second
 * (four writers: 4 s past the lease), so that a writer that died while
 * readers held kept new readers out for up to its whole wait. The writers
 * are then cancelled: their records end by the readers' lease and a
 * second, and the reader's release leaves nothing. */
#define RATCHET_WRITERS 4

void test_shared_writer_records_bounded_by_shares(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(10000, 0);
    redislock_acquire_options x = th_aopts(10000, 30000, 0);
    redislock_lock *r1 = th_lock(e.c, KEY);
    th_waiter w[RATCHET_WRITERS];
    long long lease, rec, pttl;
    int i;

    ASSERT_OK(redislock_acquire(r1, &o));
    lease = score(e.r, redislock_token(r1));
    ASSERT_GT(lease, 0);
    for (i = 0; i < RATCHET_WRITERS; i++) {
        th_waiter_start(&w[i], e.c, KEY, &x);
        /* One at a time, so that each attempt meets the record of the
         * one before. */
        th_wait_blocked(e.r, i + 1, 2500);
    }
    rec = score(e.r, WRITER);
    pttl = th_pttl(e.r, KEY);
    test_log("%d writers: record %lld ms past the reader's lease end, key "
             "PTTL %lld ms",
             RATCHET_WRITERS, rec - lease, pttl);
    ASSERT_GT(rec, lease);
    ASSERT_LE(rec, lease + 1000);
    ASSERT_LE(pttl, 11000);
    for (i = 0; i < RATCHET_WRITERS; i++) {
        redislock_cancel(w[i].l);
        th_join_within(w[i].t, 3000);
        ASSERT_ERR(w[i].err, REDISLOCK_ECANCELED);
        redislock_lock_free(w[i].l);
    }
    ASSERT_OK(redislock_release(r1));
    /* The record, shortened to RL_WRITER_GRACE (500 ms) once no share
     * is left, takes the key with it; no writer's lock was left. */
    ASSERT_LE(th_pttl(e.r, KEY), 500);
    redislock_lock_free(r1);
    th_env_stop(&e);
}

void test_shared_watchdog_renews_own_share(void)
{
    th_env e = th_env_start();
    redislock_acquire_options wd = share(200, 0);
    redislock_acquire_options shortl = share(200, 0);
    redislock_acquire_options longl = share(5000, 0);
    redislock_acquire_options x = th_aopts(1000, 0, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY),
                   *c = th_lock(e.c, KEY), *w = th_lock(e.c, KEY);
    long long a0, b0, a1;

    wd.watchdog = 1;
    ASSERT_OK(redislock_acquire(a, &wd));
    ASSERT_OK(redislock_acquire(b, &longl));
    ASSERT_OK(redislock_acquire(c, &shortl));
    a0 = score(e.r, redislock_token(a));
    b0 = score(e.r, redislock_token(b));
    ASSERT_GT(a0, 0);
    ASSERT_GT(b0, 0);
    /* Five of a's TTLs. */
    th_sleep_ms(1000);
    ASSERT_OK(redislock_check(a));
    ASSERT_GT(redislock_valid_ms(a), 0);
    a1 = score(e.r, redislock_token(a));
    test_log("a's lease end moved by %lld ms in 1000 ms", a1 - a0);
    ASSERT_GT(a1 - a0, 600);
    /* Renewals moved a's own lease only. */
    ASSERT_EQ_INT(score(e.r, redislock_token(b)), b0);
    ASSERT_ERR(redislock_release(c), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_release(b));
    /* a's renewed share alone keeps the writer out. */
    th_sleep_ms(300);
    ASSERT_OK(redislock_check(a));
    ASSERT_ERR(redislock_acquire(w, &x), REDISLOCK_EHELD);
    ASSERT_EQ_INT(shares(e.r), 1);
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    ASSERT_OK(redislock_acquire(w, &x));
    ASSERT_OK(redislock_release(w));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(c);
    redislock_lock_free(w);
    th_env_stop(&e);
}

/* The sorted set at key, members and scores, as one string. */
static char *zset_dump(redisContext *r, const char *key)
{
    redisReply *rep = th_cmd(r, "ZRANGE %s 0 -1 WITHSCORES", key);
    size_t i, len = 1;
    char *s;

    for (i = 0; i < rep->elements; i++)
        len += rep->element[i]->len + 1;
    s = calloc(1, len);
    ASSERT(s != NULL);
    for (i = 0; i < rep->elements; i++) {
        strcat(s, rep->element[i]->str);
        strcat(s, " ");
    }
    freeReplyObject(rep);
    return s;
}

/* With the key held as held (a semaphore's permit, a share), an acquire
 * as asked (the other kind) is refused with the reason (its detail holds
 * word), at once even with a wait, and leaves the key as it was. */
static void other_kind_refused(th_env *e, const redislock_acquire_options *held,
                               const redislock_acquire_options *asked,
                               const char *word)
{
    redislock_lock *a = th_lock(e->c, KEY), *b = th_lock(e->c, KEY);
    long long keys;
    int64_t t0;
    char *s0, *s1;

    ASSERT_OK(redislock_acquire(a, held));
    s0 = zset_dump(e->r, KEY);
    keys = th_cmd_int(e->r, "DBSIZE");
    t0 = th_now_ms();
    ASSERT_ERR(redislock_acquire(b, asked), REDISLOCK_EINVAL);
    test_log("refused: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), word) != NULL);
    ASSERT_LT(th_now_ms() - t0, 1000);
    s1 = zset_dump(e->r, KEY);
    ASSERT_EQ_STR(s1, s0);
    ASSERT_EQ_INT(th_cmd_int(e->r, "DBSIZE"), keys);
    free(s0);
    free(s1);
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", KEY), 0);
    redislock_lock_free(a);
    redislock_lock_free(b);
}

/* A share of a semaphore's key, and a permit of a key held shared. */
static void kinds_kept_apart(th_env *e)
{
    redislock_acquire_options o = share(5000, 2000);
    redislock_acquire_options p = th_aopts(5000, 2000, 0);

    p.limit = 2;
    other_kind_refused(e, &p, &o,
                       "in use as a semaphore of limit 2 and this call "
                       "asked for a shared lock");
    other_kind_refused(e, &o, &p,
                       "in use as a shared lock and this call asked for a "
                       "semaphore of limit 2");
}

void test_shared_bad_input_leaves_nothing(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, KEY);
    redislock_acquire_options o;
    static const char *const what[] = {"limit", "reentrant", "owner",
                                       "metadata"};
    int i;

    for (i = 0; i < 4; i++) {
        o = share(1000, 1000);
        o.limit = i == 0 ? 2 : 0;
        o.reentrant = i == 1;
        o.owner = i == 2 ? "me" : NULL;
        o.metadata = i == 3 ? "job" : NULL;
        ASSERT_ERR(redislock_acquire(a, &o), REDISLOCK_EINVAL);
        test_log("shared with %s: %s", what[i], redislock_errdetail());
        ASSERT(strstr(redislock_errdetail(), what[i]) != NULL);
    }
    ASSERT_EQ_INT(th_cmd_int(e.r, "DBSIZE"), 0);
    /* A share has no hold-after: refused, and still held. */
    o = share(5000, 0);
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_ERR(redislock_release_hold(a, 1000), REDISLOCK_EINVAL);
    ASSERT_GT(redislock_valid_ms(a), 0);
    ASSERT_EQ_INT(shares(e.r), 1);
    ASSERT_EQ_INT(has_member(e.r, KEY, redislock_token(a)), 1);
    ASSERT_OK(redislock_release(a));
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    kinds_kept_apart(&e);
    /* Redlock: refused with the reason, nothing sent. */
    th_redlock_refuses(&o, "shared is not built for Redlock");
    redislock_lock_free(a);
    th_env_stop(&e);
}

/*
 * Processes reading and writing under one key: writers (a third of the
 * sections) do a deliberately non-atomic increment of a counter (GET, a
 * pause, SET) with a "writer in" count raised; readers raise an occupancy
 * count. Each raise and lower is one script that also checks the other
 * side in the same step: a reader sees no writer in, a writer sees no
 * reader and no other writer. Any overlap is counted in shr:bad.
 */
#define PROCS 8
#define ROUNDS 200
#define SECTION_KEYS "6 shr:occ shr:win shr:bad shr:max shr:rsec shr:wsec"

#define SEEN_BAD(cond) "if " cond " then redis.call('INCR', KEYS[3]) end "
#define NUM(k) "tonumber(redis.call('GET', KEYS[" k "]) or '0')"
#define READER_IN                                                              \
    "local n = redis.call('INCR', KEYS[1]) " SEEN_BAD(                         \
        NUM("2") " ~= 0") "if n > " NUM("4") " then redis.call('SET', "        \
                                             "KEYS[4], n) end "                \
                                             "redis.call('INCR', KEYS[5]) "    \
                                             "return n"
#define READER_OUT                                                             \
    SEEN_BAD(NUM("2") " ~= 0") "return redis.call('DECR', KEYS[1])"
#define WRITER_IN                                                              \
    "local w = redis.call('INCR', KEYS[2]) " SEEN_BAD(                         \
        "w ~= 1 or " NUM("1") " ~= 0") "redis.call('INCR', KEYS[6]) return w"
#define WRITER_OUT                                                             \
    SEEN_BAD(NUM("1") " ~= 0 or " NUM("2") " ~= 1")                            \
    "return redis.call('DECR', KEYS[2])"

/* Runs a command for a worker process; exits it with status 4 on an
 * error. */
static long long worker_cmd(redisContext *r, const char *fmt, const char *a)
{
    redisReply *rep = redisCommand(r, fmt, a);
    long long v;

    if (rep == NULL || rep->type == REDIS_REPLY_ERROR) {
        fprintf(stderr, "worker %d: %s\n", (int)getpid(),
                rep ? rep->str : r->errstr);
        _exit(4);
    }
    v = rep->type == REDIS_REPLY_INTEGER  ? rep->integer
        : rep->type == REDIS_REPLY_STRING ? atoll(rep->str)
                                          : 0;
    freeReplyObject(rep);
    return v;
}

static void section_worker(const th_server *s, unsigned seed)
{
    redislock_client *c = th_client(s);
    redislock_lock *l = th_lock(c, KEY);
    redisContext *r = th_server_redis(s);
    redislock_acquire_options ro = share(10000, 30000);
    redislock_acquire_options wo = th_aopts(10000, 30000, 0);
    char n[32];
    int i, writer;

    for (i = 0; i < ROUNDS; i++) {
        writer = rand_r(&seed) % 3 == 0;
        if (redislock_acquire(l, writer ? &wo : &ro) != REDISLOCK_OK) {
            fprintf(stderr, "worker %d: %s\n", (int)getpid(),
                    redislock_errdetail());
            _exit(2);
        }
        if (writer) {
            worker_cmd(r, "EVAL %s " SECTION_KEYS, WRITER_IN);
            snprintf(n, sizeof n, "%lld",
                     worker_cmd(r, "GET %s", "shr:counter") + 1);
            usleep((useconds_t)(rand_r(&seed) % 300));
            worker_cmd(r, "SET shr:counter %s", n);
            worker_cmd(r, "EVAL %s " SECTION_KEYS, WRITER_OUT);
        } else {
            worker_cmd(r, "EVAL %s " SECTION_KEYS, READER_IN);
            usleep((useconds_t)(rand_r(&seed) % 300));
            worker_cmd(r, "EVAL %s " SECTION_KEYS, READER_OUT);
        }
        if (redislock_release(l) != REDISLOCK_OK)
            _exit(3);
    }
    _exit(0);
}

void test_shared_processes_exclusion(void)
{
    th_env e = th_env_start();
    long long wsec, rsec, counter, bad, max;
    int64_t t0 = th_now_ms();

    th_run_workers(&e, PROCS, section_worker);
    wsec = th_get_num(e.r, "shr:wsec");
    rsec = th_get_num(e.r, "shr:rsec");
    counter = th_get_num(e.r, "shr:counter");
    bad = th_get_num(e.r, "shr:bad");
    max = th_get_num(e.r, "shr:max");
    test_log("%lld writer and %lld reader sections in %lld ms; counter "
             "%lld; overlaps seen %lld; highest reader occupancy %lld",
             wsec, rsec, (long long)(th_now_ms() - t0), counter, bad, max);
    ASSERT_EQ_INT(wsec + rsec, PROCS * ROUNDS);
    ASSERT_GT(wsec, 0);
    ASSERT_EQ_INT(bad, 0);
    ASSERT_EQ_INT(counter, wsec);
    /* Readers did share the key. */
    ASSERT_GT(max, 1);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS %s", KEY), 0);
    th_env_stop(&e);
}

/* kill -9 of a reader: a writer waiting meanwhile gets the key when the
 * share's lease ends, not before, and within a poll after. */
void test_shared_killed_reader_freed_within_ttl(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(300, 0);
    redislock_acquire_options x = th_aopts(5000, 3000, 0);
    int64_t t[2], got;
    th_waiter w;
    int st, pid = th_start_holder(&e, one_key, 1, &o, t);

    th_waiter_start(&w, e.c, KEY, &x);
    ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    th_waiter_join_ok(&w, 3000);
    got = w.done_us / 1000;
    test_log("the writer got the key %lld ms after the share was taken "
             "(lease 300 ms, acquire took %lld ms)",
             (long long)(got - t[1]), (long long)(t[1] - t[0]));
    ASSERT_GE(got, t[0] + 300 - SERVER_MS_SLACK);
    ASSERT_LE(got - t[1], 300 + 100);
    ASSERT_OK(redislock_release(w.l));
    redislock_lock_free(w.l);
    th_env_stop(&e);
}

/*
 * A holder stopped (SIGSTOP) past its 200 ms lease while a holder of the
 * other kind takes the key and writes the resource with its fencing
 * token; resumed, the stopped one knows it lost the key, and its write
 * with its own older token is refused. A share's fencing token is greater
 * than every writer's before it and smaller than every writer's after it.
 * So it protects two things: what a reader writes under its share (a
 * cache it fills, a report of what it read) is refused once a later
 * writer has written; and a reader that stores what it read with its
 * token (a fenced read) keeps an earlier writer, stopped past its lease,
 * from changing it afterwards (th_start_stopped_holder is the child).
 */
void test_shared_stopped_reader_write_refused(void)
{
    th_env e = th_env_start();
    redislock_acquire_options x = th_aopts(5000, 3000, 0);
    redislock_acquire_options brief = share(200, 0);
    redislock_lock *w = th_lock(e.c, KEY);
    int pid = th_start_stopped_holder(&e, one_key, 1, &brief, "shr:res");

    /* The writer gets the key once the stopped reader's lease ends. */
    ASSERT_OK(redislock_acquire(w, &x));
    ASSERT_OK(redislock_fenced_set(e.c, "shr:res", 7, "fresh", 5,
                                   redislock_fence(w)));
    th_resume_refused(pid);
    ASSERT_KEY(e.r, "shr:res", "fresh");
    ASSERT_OK(redislock_release(w));
    redislock_lock_free(w);
    th_env_stop(&e);
}

void test_shared_stopped_writer_write_refused(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = share(5000, 3000);
    redislock_acquire_options brief = th_aopts(200, 0, 0);
    redislock_lock *a = th_lock(e.c, KEY), *b = th_lock(e.c, KEY);
    char *seen;
    int pid;

    ASSERT_OK(redislock_fenced_set(e.c, "shr:res", 7, "v0", 2, 1));
    pid = th_start_stopped_holder(&e, one_key, 1, &brief, "shr:res");
    /* Readers get in once the stopped writer's lease ends; one stores
     * what it read with its token. */
    ASSERT_OK(redislock_acquire(a, &o));
    ASSERT_OK(redislock_acquire(b, &o));
    seen = th_cmd_str(e.r, NULL, "GET shr:res");
    ASSERT_EQ_STR(seen, "v0");
    ASSERT_OK(redislock_fenced_set(e.c, "shr:res", 7, seen, strlen(seen),
                                   redislock_fence(a)));
    th_resume_refused(pid);
    ASSERT_KEY(e.r, "shr:res", seen);
    free(seen);
    ASSERT_OK(redislock_release(a));
    ASSERT_OK(redislock_release(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    th_env_stop(&e);
}

/* On a sharded client each key's shares live on the key's server: keys
 * spread over three servers, each set whole on one of them. */
void test_shared_sharded_keys(void)
{
    redislock_acquire_options o = share(10000, 0);
    redislock_acquire_options x = th_aopts(10000, 0, 0);

    th_sharded_shares(12, &o, &x, MARK);
    /* The same fair: each key's queue lives beside it. */
    o.fair = x.fair = 1;
    th_sharded_shares(12, &o, &x, MARK);
}
