/*
 * elect: leader election (redislock_campaign(3)). A campaign leads once
 * its election is recorded; proclaim changes the leader's value, resign
 * steps down and hands the lock on; observers read every change in
 * order, a GAP where the record lost some, and a lease that ran out as
 * EXPIRED. Kill -9 and SIGSTOP of a leader: a standby leads within the
 * lease, and the stopped leader's write with its term is refused.
 */
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "harness/apploop.h"
#include "harness/fixture.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

/* The record's key of election "el" (keys.h's helper name). */
#define RECORD "el{el}:rl-elect"

/* One look at the next change: observe with no wait. */
static redislock_err look(redislock_lock *l, redislock_leader_info *s)
{
    return redislock_observe(l, s, 0);
}

/* Asserts that the next change is kind with term and value (NULL: any
 * value). */
#define ASSERT_NEXT(l, s, k, t, v)                                             \
    do {                                                                       \
        ASSERT_OK(look(l, s));                                                 \
        ASSERT_EQ_INT((s)->kind, k);                                           \
        ASSERT_EQ_INT((s)->term, t);                                           \
        if ((v) != NULL)                                                       \
            ASSERT_EQ_STR((s)->value, (const char *)(v));                      \
    } while (0)

/* Campaign, proclaim, resign, as the leader and an observer see them,
 * and a waiting standby that takes over at the resignation. */
void test_elect_proclaim_and_resign(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a = th_lock(e.c, "el"), *b = th_lock(e.c, "el");
    redislock_lock *ob = th_lock(e.c, "el");
    redislock_leader_info s, now;
    int64_t ta;

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_leader(ob, &now));
    ASSERT_EQ_INT(now.has_leader, 0);
    ASSERT_EQ_INT(now.n, 0);
    o.owner = "cand-a";
    ASSERT_OK(redislock_campaign(a, "v1", &o));
    ta = redislock_fence(a);
    ASSERT_GT(redislock_valid_ms(a), 0);
    ASSERT_OK(redislock_leader(ob, &now));
    ASSERT_EQ_INT(now.has_leader, 1);
    ASSERT_EQ_STR(now.id, "cand-a");
    ASSERT_EQ_STR(now.value, "v1");
    ASSERT_EQ_INT(now.term, ta);
    ASSERT_GT(now.ttl_ms, 0);
    ASSERT_EQ_INT(now.n, 1);
    /* A second candidate is refused while a leads. */
    o.owner = "cand-b";
    ASSERT_ERR(redislock_campaign(b, "v2", &o), REDISLOCK_EHELD);
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_ELECTED, ta, "v1");
    ASSERT_EQ_STR(s.id, "cand-a");
    ASSERT_EQ_INT(s.n, 1);
    ASSERT_OK(look(ob, &s));
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_NONE);
    ASSERT_OK(redislock_proclaim(a, "v1b"));
    ASSERT_OK(redislock_leader(ob, &now));
    ASSERT_EQ_STR(now.value, "v1b");
    ASSERT_EQ_INT(now.term, ta);
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_PROCLAIMED, ta, "v1b");
    ASSERT_EQ_INT(s.n, 2);
    /* A proclaim with the empty value clears it. */
    ASSERT_OK(redislock_proclaim(a, ""));
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_PROCLAIMED, ta, NULL);
    ASSERT(s.value == NULL);
    ASSERT_OK(redislock_resign(a));
    ASSERT_EQ_INT(redislock_valid_ms(a), 0);
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_RESIGNED, ta, NULL);
    ASSERT_EQ_INT(s.has_leader, 0);
    /* No longer the leader: neither proclaim nor resign again. */
    ASSERT_ERR(redislock_proclaim(a, "x"), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_resign(a), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_campaign(b, "v2", &o));
    ASSERT_GT(redislock_fence(b), ta);
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_ELECTED, redislock_fence(b), "v2");
    ASSERT_EQ_STR(s.id, "cand-b");
    /* The record is kept long past its last change. */
    ASSERT_GT(th_pttl(e.r, RECORD), 86400000LL);
    ASSERT_OK(redislock_resign(b));
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(ob);
    th_env_stop(&e);
}

/* A standby that waits takes over when the leader resigns; the term of a
 * leader whose key went without a resignation ends as EXPIRED; an
 * observer behind a trimmed record hears a GAP with the leader now. */
void test_elect_observe_gap(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a = th_lock(e.c, "el"), *ob = th_lock(e.c, "el");
    redislock_leader_info s, late;
    char v[16];
    int i;

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_campaign(a, "v0", &o));
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_ELECTED, redislock_fence(a), "v0");
    late = s;
    for (i = 1; i <= 6; i++) {
        snprintf(v, sizeof v, "v%d", i);
        ASSERT_OK(redislock_proclaim(a, v));
    }
    freeReplyObject(th_cmd(e.r, "XTRIM %s MAXLEN 2", RECORD));
    /* late saw n 1; entries 2 to 5 are gone. */
    ASSERT_OK(look(ob, &late));
    ASSERT_EQ_INT(late.kind, REDISLOCK_CHANGE_GAP);
    ASSERT_EQ_INT(late.has_leader, 1);
    ASSERT_EQ_INT(late.term, redislock_fence(a));
    ASSERT_EQ_STR(late.value, "v6");
    ASSERT_EQ_INT(late.n, 7);
    ASSERT_OK(look(ob, &late));
    ASSERT_EQ_INT(late.kind, REDISLOCK_CHANGE_NONE);
    /* A record deleted and begun again: its n is below the observer's. */
    freeReplyObject(th_cmd(e.r, "DEL %s", RECORD));
    ASSERT_OK(redislock_proclaim(a, "v7"));
    ASSERT_OK(look(ob, &late));
    ASSERT_EQ_INT(late.kind, REDISLOCK_CHANGE_GAP);
    ASSERT_EQ_STR(late.value, "v7");
    ASSERT_EQ_INT(late.n, 1);
    /* The key goes without a resignation: EXPIRED, with its term, within
     * an observe's wait. */
    freeReplyObject(th_cmd(e.r, "PEXPIRE el 1"));
    ASSERT_OK(redislock_observe(ob, &late, 2000));
    ASSERT_EQ_INT(late.kind, REDISLOCK_CHANGE_EXPIRED);
    ASSERT_EQ_INT(late.term, redislock_fence(a));
    ASSERT_EQ_INT(late.has_leader, 0);
    ASSERT_OK(redislock_observe(ob, &late, 50));
    ASSERT_EQ_INT(late.kind, REDISLOCK_CHANGE_NONE);
    /* The expired leader can no longer proclaim. */
    ASSERT_ERR(redislock_proclaim(a, "v8"), REDISLOCK_EEXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(ob);
    th_env_stop(&e);
}

/*
 * A record whose history was replaced under the same n (a failover that
 * lost the record's tail and took later changes in its place, or a record
 * deleted and begun again) is a GAP with the leader now, not a lease run
 * out nor a change after one the observer never saw: the entry at the
 * observer's n is not the one it saw (its term).
 */
void test_elect_observe_history_replaced(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_lock *a = th_lock(e.c, "el"), *b = th_lock(e.c, "el"),
                   *c = th_lock(e.c, "el"), *ob = th_lock(e.c, "el");
    redislock_leader_info s;
    int64_t tc;

    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_campaign(a, "a", &o));
    ASSERT_OK(redislock_leader(ob, &s));
    ASSERT_EQ_INT(s.n, 1);
    /* a's key and record gone, b elected: another entry 1. */
    freeReplyObject(th_cmd(e.r, "DEL el %s", RECORD));
    ASSERT_OK(redislock_campaign(b, "b", &o));
    ASSERT_OK(look(ob, &s));
    test_log("the same n, another history: kind %d", s.kind);
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_GAP);
    ASSERT_EQ_INT(s.has_leader, 1);
    ASSERT_EQ_INT(s.term, redislock_fence(b));
    ASSERT_EQ_STR(s.value, "b");
    ASSERT_EQ_INT(s.n, 1);
    ASSERT_OK(look(ob, &s));
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_NONE);
    /* A longer one: c elected and proclaimed, entries 1 and 2. */
    freeReplyObject(th_cmd(e.r, "DEL el %s", RECORD));
    ASSERT_OK(redislock_campaign(c, "c", &o));
    ASSERT_OK(redislock_proclaim(c, "c2"));
    ASSERT_OK(look(ob, &s));
    test_log("a longer history: kind %d", s.kind);
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_GAP);
    ASSERT_EQ_INT(s.term, redislock_fence(c));
    ASSERT_EQ_STR(s.value, "c2");
    ASSERT_EQ_INT(s.n, 2);
    /* And on from there as before. */
    tc = redislock_fence(c);
    ASSERT_OK(redislock_resign(c));
    ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_RESIGNED, tc, NULL);
    ASSERT_EQ_INT(s.n, 3);
    redislock_lock_free(ob);
    redislock_lock_free(c);
    redislock_lock_free(b);
    redislock_lock_free(a);
    th_env_stop(&e);
}

/* What is refused, each with a detail that names it. */
void test_elect_bad_input(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a = th_lock(e.c, "el"), *s;
    const char *keys[2] = {"el", "el2"};
    redislock_leader_info info;
    char big[REDISLOCK_ELECT_VALUE_MAX + 2];

    memset(&info, 0, sizeof info);
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    ASSERT_ERR(redislock_campaign(a, big, &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "at most 1024") != NULL);
    ASSERT_ERR(redislock_campaign(a, "tab\there", &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "printable") != NULL);
    ASSERT_ERR(redislock_proclaim(a, "x"), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "campaign first") != NULL);
    ASSERT_ERR(redislock_resign(a), REDISLOCK_EINVAL);
    o.reentrant = 1;
    ASSERT_ERR(redislock_campaign(a, "v", &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "reentrant") != NULL);
    o.reentrant = 0;
    ASSERT_ERR(redislock_observe(a, &info, -1), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_observe(a, NULL, 0), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_observe_sized(a, &info, 0, 8), REDISLOCK_EINVAL);
    s = th_lock_set(e.c, keys, 2);
    ASSERT_ERR(redislock_campaign(s, "v", &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "one key") != NULL);
    /* A value at the bound is fine; a proclaim of a bad one changes
     * nothing. */
    big[REDISLOCK_ELECT_VALUE_MAX] = '\0';
    ASSERT_OK(redislock_campaign(a, big, &o));
    ASSERT_ERR(redislock_campaign(a, "again", &o), REDISLOCK_EINVAL);
    ASSERT_ERR(redislock_proclaim(a, "bad\n"), REDISLOCK_EINVAL);
    ASSERT_OK(redislock_leader(a, &info));
    ASSERT_EQ_INT((long long)info.value_len, REDISLOCK_ELECT_VALUE_MAX);
    ASSERT_OK(redislock_resign(a));
    redislock_lock_free(a);
    redislock_lock_free(s);
    th_env_stop(&e);
}

/* A sharded client: each election's record is on its key's server,
 * beside the key. A Redlock client is refused (not yet). */
void test_elect_sharded_and_redlock(void)
{
    th_servers sv = th_servers_start(3);
    redislock_client *c = NULL, *rl = NULL;
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a, *ob, *r;
    redislock_leader_info s;
    char key[16], rec[48];
    int i, j, on;

    ASSERT_OK(redislock_client_new_sharded(&c, sv.urls, 3, NULL));
    for (i = 0; i < 6; i++) {
        snprintf(key, sizeof key, "el%d", i);
        snprintf(rec, sizeof rec, "%s{%s}:rl-elect", key, key);
        a = th_lock(c, key);
        ob = th_lock(c, key);
        memset(&s, 0, sizeof s);
        ASSERT_OK(redislock_campaign(a, key, &o));
        ASSERT_OK(redislock_proclaim(a, "p"));
        ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_ELECTED, redislock_fence(a), key);
        ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_PROCLAIMED, redislock_fence(a),
                    "p");
        for (j = 0, on = -1; j < 3; j++)
            if (th_cmd_int(sv.r[j], "EXISTS %s", key) == 1) {
                ASSERT_EQ_INT(th_cmd_int(sv.r[j], "EXISTS %s", rec), 1);
                on = j;
            } else {
                ASSERT_EQ_INT(th_cmd_int(sv.r[j], "EXISTS %s", rec), 0);
            }
        ASSERT_GE(on, 0);
        ASSERT_OK(redislock_resign(a));
        ASSERT_NEXT(ob, &s, REDISLOCK_CHANGE_RESIGNED, s.term, NULL);
        redislock_lock_free(a);
        redislock_lock_free(ob);
    }
    ASSERT_OK(redislock_client_new_redlock(&rl, sv.urls, 3, NULL));
    r = th_lock(rl, "el");
    ASSERT_ERR(redislock_campaign(r, "v", &o), REDISLOCK_EINVAL);
    ASSERT(strstr(redislock_errdetail(), "Redlock") != NULL);
    ASSERT_ERR(redislock_leader(r, &s), REDISLOCK_EINVAL);
    redislock_lock_free(r);
    redislock_client_free(rl);
    redislock_client_free(c);
    th_servers_stop(&sv);
}

/* The random model: N candidates on one server, STEPS random steps. */
#define N 5
#define STEPS 10000

/* A change the model expects the observer to read. */
typedef struct hist {
    int kind;
    int64_t term;
    char value[16];
} hist;

typedef struct model {
    th_env *e;
    redislock_lock *c[N];
    int leads[N]; /* campaigned with OK, not resigned or lost */
    hist *h;
    int nh;               /* changes recorded */
    int seen;             /* changes the observer has matched */
    int64_t expired_term; /* a term that ended by expiry, for EXPIRED */
    int64_t last_term;
    redislock_lock *ob;
    redislock_leader_info s;
    int counts[6];
} model;

/* The candidates that believe they lead and whose lease is valid: at
 * most one, at every step. */
static void check_one_leader(model *m)
{
    int i, n = 0;

    for (i = 0; i < N; i++) {
        if (m->leads[i] && redislock_valid_ms(m->c[i]) == 0) {
            /* Its lease ended (expiry, or a renewal that failed): it
             * stops believing, and gives the handle back. */
            m->leads[i] = 0;
            (void)redislock_release(m->c[i]);
        }
        n += m->leads[i];
    }
    ASSERT_LE(n, 1);
}

static void record(model *m, int kind, int64_t term, const char *v)
{
    hist *h = &m->h[m->nh++];

    h->kind = kind;
    h->term = term;
    snprintf(h->value, sizeof h->value, "%s", v);
}

/* The observer reads every change there is and matches each with the
 * model's record, in order. */
static void observe_all(model *m)
{
    for (;;) {
        ASSERT_OK(look(m->ob, &m->s));
        if (m->s.kind == REDISLOCK_CHANGE_NONE)
            return;
        m->counts[m->s.kind]++;
        if (m->s.kind == REDISLOCK_CHANGE_EXPIRED) {
            ASSERT(m->s.term == m->last_term);
            continue;
        }
        ASSERT_NE_INT(m->s.kind, REDISLOCK_CHANGE_GAP);
        ASSERT_LT(m->seen, m->nh);
        ASSERT_EQ_INT(m->s.n, m->seen + 1);
        ASSERT_EQ_INT(m->s.kind, m->h[m->seen].kind);
        ASSERT_EQ_INT(m->s.term, m->h[m->seen].term);
        ASSERT_EQ_STR(m->s.value != NULL ? m->s.value : "",
                      m->h[m->seen].value);
        if (m->s.kind == REDISLOCK_CHANGE_ELECTED)
            ASSERT_GT(m->s.term, m->last_term);
        m->last_term = m->s.term;
        m->seen++;
    }
}

static int leader_of(const model *m)
{
    int i;

    for (i = 0; i < N; i++)
        if (m->leads[i])
            return i;
    return -1;
}

/* Ends the leader's lease on the server and waits for its watchdog to
 * report the loss (its lost fd), after which it no longer believes. */
static void expire(model *m, int i)
{
    struct pollfd p = {redislock_lost_fd(m->c[i]), POLLIN, 0};

    freeReplyObject(th_cmd(m->e->r, "PEXPIRE el 1"));
    ASSERT(p.fd >= 0);
    ASSERT_EQ_INT(poll(&p, 1, 3000), 1);
    ASSERT_EQ_INT(redislock_valid_ms(m->c[i]), 0);
    ASSERT(redislock_check(m->c[i]) != REDISLOCK_OK);
    m->leads[i] = 0;
    (void)redislock_release(m->c[i]);
}

static void step(model *m, unsigned *seed)
{
    int r = rand_r(seed) % 100, i = rand_r(seed) % N, who = leader_of(m);
    redislock_acquire_options o = th_aopts(600, 0, 0);
    redislock_err err;
    char v[16];

    snprintf(v, sizeof v, "v%d", rand_r(seed) % 1000);
    if (r < 40) {
        if (m->leads[i])
            return;
        err = redislock_campaign(m->c[i], v, &o);
        if (who >= 0) {
            ASSERT_ERR(err, REDISLOCK_EHELD);
            return;
        }
        if (err == REDISLOCK_EHELD)
            return; /* an expired leader's key not yet gone */
        ASSERT_OK(err);
        m->leads[i] = 1;
        record(m, REDISLOCK_CHANGE_ELECTED, redislock_fence(m->c[i]), v);
    } else if (r < 75) {
        if (!m->leads[i]) {
            ASSERT(redislock_proclaim(m->c[i], v) != REDISLOCK_OK);
            return;
        }
        ASSERT_OK(redislock_proclaim(m->c[i], v));
        record(m, REDISLOCK_CHANGE_PROCLAIMED, redislock_fence(m->c[i]), v);
    } else if (r < 98) {
        if (who < 0)
            return;
        int64_t term = redislock_fence(m->c[who]);

        m->leads[who] = 0;
        ASSERT_OK(redislock_resign(m->c[who]));
        record(m, REDISLOCK_CHANGE_RESIGNED, term, "");
    } else if (who >= 0) {
        expire(m, who);
    }
}

/* STEPS random campaign, proclaim, resign and expiry steps over N
 * candidates: never two leaders believing with a valid lease, and the
 * observer reads every recorded change, in order, terms rising. */
void test_elect_model_random_steps(void)
{
    th_env e = th_env_start();
    model m;
    unsigned seed = (unsigned)th_now_ms();
    int i, k;
    int64_t t0 = th_now_ms();

    memset(&m, 0, sizeof m);
    m.e = &e;
    m.h = calloc(STEPS + 1, sizeof *m.h);
    ASSERT(m.h != NULL);
    test_log("seed %u", seed);
    for (i = 0; i < N; i++)
        m.c[i] = th_lock(e.c, "el");
    m.ob = th_lock(e.c, "el");
    for (k = 0; k < STEPS; k++) {
        step(&m, &seed);
        check_one_leader(&m);
        observe_all(&m);
    }
    ASSERT_EQ_INT(m.seen, m.nh);
    test_log("%d changes in %lld ms: %d elected, %d proclaimed, %d "
             "resigned, %d expired",
             m.nh, (long long)(th_now_ms() - t0), m.counts[1], m.counts[2],
             m.counts[3], m.counts[4]);
    ASSERT_GT(m.counts[REDISLOCK_CHANGE_EXPIRED], 0);
    for (i = 0; i < N; i++) {
        if (m.leads[i])
            ASSERT_OK(redislock_resign(m.c[i]));
        redislock_lock_free(m.c[i]);
    }
    redislock_lock_free(m.ob);
    free(m.h);
    th_env_stop(&e);
}

/* A candidate in a child process: campaigns on url's "el" with o, says
 * so on fd (its term), then waits for a signal; with stop, stops itself
 * instead and, once resumed, writes with its term to resource res:
 * exits 1 when refused (REDISLOCK_ESTALE) and it no longer believes
 * (valid_ms 0), else 2. */
static void child_leader(const char *url, const redislock_acquire_options *o,
                         int fd, int stop, const char *res)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    int64_t term;
    redislock_err err;

    if (redislock_client_new(&c, url, NULL) != REDISLOCK_OK ||
        redislock_lock_new(c, "el", 2, &l) != REDISLOCK_OK ||
        redislock_campaign(l, "child", o) != REDISLOCK_OK)
        _exit(3);
    term = redislock_fence(l);
    if (write(fd, &term, sizeof term) != (ssize_t)sizeof term)
        _exit(3);
    if (!stop) {
        pause();
        _exit(0);
    }
    raise(SIGSTOP);
    err = redislock_fenced_set(c, res, strlen(res), "stale", 5, term);
    _exit(err == REDISLOCK_ESTALE && redislock_valid_ms(l) == 0 ? 1 : 2);
}

static int fork_leader(th_env *e, const redislock_acquire_options *o, int stop,
                       int64_t *term)
{
    int fds[2], st;
    pid_t pid;

    ASSERT_EQ_INT(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        child_leader(e->s->unix_url, o, fds[1], stop, "res");
    }
    close(fds[1]);
    ASSERT_EQ_INT(read(fds[0], term, sizeof *term), (long long)sizeof *term);
    close(fds[0]);
    if (stop) {
        ASSERT_EQ_INT(waitpid(pid, &st, WUNTRACED), pid);
        ASSERT(WIFSTOPPED(st));
    }
    return (int)pid;
}

/* A standby's campaign, on a thread of its own. */
typedef struct standby {
    redislock_lock *l;
    redislock_acquire_options o;
    redislock_err err;
    int64_t led_ms; /* th_now_ms() when it returned */
} standby;

static void *campaign_thread(void *arg)
{
    standby *sb = arg;

    sb->err = redislock_campaign(sb->l, "standby", &sb->o);
    sb->led_ms = th_now_ms();
    return NULL;
}

/* kill -9 of the leader: a waiting standby leads once the lease the dead
 * leader left has run out, within 100 ms of it, never before. */
void test_elect_kill_standby_leads(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(1000, 0, 0);
    standby sb;
    pthread_t t;
    int64_t term, killed, pttl;
    int pid, st;

    memset(&sb, 0, sizeof sb);
    pid = fork_leader(&e, &o, 0, &term);
    sb.l = th_lock(e.c, "el");
    sb.o = th_aopts(1000, 10000, 0);
    sb.o.fair = 1;
    ASSERT_EQ_INT(pthread_create(&t, NULL, campaign_thread, &sb), 0);
    /* The standby waits in the queue (its channel is listened on). */
    WAIT_FOR(th_listening(e.r, "el{el}:rl-c:*") > 0, 5000);
    pttl = th_pttl(e.r, "el");
    ASSERT_EQ_INT(kill(pid, SIGKILL), 0);
    killed = th_now_ms();
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    ASSERT_EQ_INT(pthread_join(t, NULL), 0);
    ASSERT_OK(sb.err);
    test_log("lease left at the kill %lld ms, led %lld ms after it",
             (long long)pttl, (long long)(sb.led_ms - killed));
    ASSERT_LE(sb.led_ms - killed, pttl + 100);
    ASSERT_GT(redislock_fence(sb.l), term);
    ASSERT_OK(redislock_resign(sb.l));
    redislock_lock_free(sb.l);
    th_env_stop(&e);
}

/* A leader stopped past its lease: a standby leads and writes with its
 * term; resumed, the old leader no longer believes and its write with
 * the old term is refused. */
void test_elect_stopped_leader_stale_write(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(300, 0, 0);
    redislock_lock *b = th_lock(e.c, "el");
    int64_t term;
    int pid, st;

    pid = fork_leader(&e, &o, 1, &term);
    o.wait_ms = 5000;
    ASSERT_OK(redislock_campaign(b, "standby", &o));
    ASSERT_GT(redislock_fence(b), term);
    ASSERT_OK(
        redislock_fenced_set(e.c, "res", 3, "new", 3, redislock_fence(b)));
    ASSERT_EQ_INT(kill(pid, SIGCONT), 0);
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    ASSERT(WIFEXITED(st));
    ASSERT_EQ_INT(WEXITSTATUS(st), 1);
    ASSERT_OK(redislock_resign(b));
    redislock_lock_free(b);
    th_env_stop(&e);
}

/* The event-loop forms: campaign, proclaim, leader, observe, resign. */
void test_elect_loop(void)
{
    th_env e = th_env_start();
    redislock_acquire_options o = th_aopts(5000, 0, 0);
    redislock_lock *a = th_lock(e.c, "el"), *ob = th_lock(e.c, "el");
    redislock_loop *lp = NULL;
    redislock_leader_info s, now;
    app ap;
    app_heard h[6];
    int i;

    memset(&ap, 0, sizeof ap);
    memset(h, 0, sizeof h);
    memset(&s, 0, sizeof s);
    ASSERT_OK(redislock_loop_new(&lp, e.c, app_watch, app_timer, &ap));
    app_drive(&ap, lp);
    /* An observer waiting on the loop's timer hears the election. */
    ASSERT_OK(redislock_loop_observe(lp, ob, &s, 3000, app_heard_cb, &h[0]));
    ASSERT_OK(redislock_loop_campaign(lp, a, "v1", &o, app_heard_cb, &h[1]));
    app_until_heard(&ap, &h[1]);
    ASSERT_ERR(h[1].err, REDISLOCK_OK);
    app_until_heard(&ap, &h[0]);
    ASSERT_ERR(h[0].err, REDISLOCK_OK);
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_ELECTED);
    ASSERT_EQ_INT(s.term, redislock_fence(a));
    ASSERT_OK(redislock_loop_proclaim(lp, a, "v2", app_heard_cb, &h[2]));
    app_until_heard(&ap, &h[2]);
    ASSERT_ERR(h[2].err, REDISLOCK_OK);
    ASSERT_OK(redislock_loop_leader(lp, ob, &now, app_heard_cb, &h[3]));
    app_until_heard(&ap, &h[3]);
    ASSERT_ERR(h[3].err, REDISLOCK_OK);
    ASSERT_EQ_STR(now.value, "v2");
    ASSERT_OK(redislock_loop_resign(lp, a, app_heard_cb, &h[4]));
    app_until_heard(&ap, &h[4]);
    ASSERT_ERR(h[4].err, REDISLOCK_OK);
    ASSERT_EQ_INT(th_cmd_int(e.r, "EXISTS el"), 0);
    ASSERT_OK(redislock_loop_observe(lp, ob, &s, 1000, app_heard_cb, &h[5]));
    app_until_heard(&ap, &h[5]);
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_PROCLAIMED);
    ASSERT_OK(redislock_observe(ob, &s, 0));
    ASSERT_EQ_INT(s.kind, REDISLOCK_CHANGE_RESIGNED);
    /* An observer waiting between reads when the loop is freed: its
     * callback comes, cancelled. Its first read goes out at once; the
     * turn that reads the answer, with nothing new, leaves it paused on
     * the loop's timer for 20 ms. */
    memset(&h[5], 0, sizeof h[5]);
    ASSERT_OK(redislock_loop_observe(lp, ob, &s, 5000, app_heard_cb, &h[5]));
    app_turn(&ap);
    ASSERT_EQ_INT(h[5].calls, 0);
    redislock_loop_free(lp);
    ASSERT_EQ_INT(h[5].calls, 1);
    ASSERT_ERR(h[5].err, REDISLOCK_ECANCELED);
    /* The same once its read is tracked and it waits for the server's
     * notice: the loop's end ends that wait too, and its connections. */
    ASSERT_OK(redislock_loop_new(&lp, e.c, app_watch, app_timer, &ap));
    app_drive(&ap, lp);
    memset(&h[5], 0, sizeof h[5]);
    ASSERT_OK(redislock_loop_observe(lp, ob, &s, 20000, app_heard_cb, &h[5]));
    for (i = 0; i < 500 && th_tracked_scripts(e.r) == 0; i++)
        app_turn(&ap);
    ASSERT_GT(th_tracked_scripts(e.r), 0);
    app_turn(&ap);
    ASSERT_EQ_INT(h[5].calls, 0);
    redislock_loop_free(lp);
    ASSERT_EQ_INT(h[5].calls, 1);
    ASSERT_ERR(h[5].err, REDISLOCK_ECANCELED);
    WAIT_FOR(th_tracked_scripts(e.r) == 0, 5000);
    redislock_lock_free(a);
    redislock_lock_free(ob);
    th_env_stop(&e);
}

/* An observer's wait in a thread of its own. */
typedef struct watcher {
    redislock_lock *l;
    redislock_leader_info s;
    int64_t timeout_ms;
    redislock_err err;
    int64_t done_ms; /* th_now_ms() when it returned */
} watcher;

static void *observe_thread(void *arg)
{
    watcher *w = arg;

    w->err = redislock_observe(w->l, &w->s, w->timeout_ms);
    w->done_ms = th_now_ms();
    return NULL;
}

/* How soon a change must reach a waiting observer: a notice, a read, a
 * thread's wake-up, on a loaded 2-core box under ASan. */
#define REACH_MS 300

/* The next change as w's waiting observer hears it, started at t0 (ms):
 * within REACH_MS. */
static void heard(watcher *w, pthread_t t, int64_t t0, int kind)
{
    ASSERT_EQ_INT(pthread_join(t, NULL), 0);
    ASSERT_OK(w->err);
    ASSERT_EQ_INT(w->s.kind, kind);
    test_log("change %d heard %lld ms after it was made", kind,
             (long long)(w->done_ms - t0));
    ASSERT_LE(w->done_ms - t0, REACH_MS);
}

/* a elected (value v1, a 30 s lease), and w (its handle wl) waiting up
 * to timeout_ms, in thread t, for the change after that election. */
static void watch_after_election(redislock_lock *a, watcher *w,
                                 redislock_lock *wl, int64_t timeout_ms,
                                 pthread_t *t)
{
    /* Long: the leader's watchdog renews no sooner than 10 s on. */
    redislock_acquire_options o = th_aopts(30000, 0, 0);

    memset(w, 0, sizeof *w);
    w->l = wl;
    w->timeout_ms = timeout_ms;
    ASSERT_OK(redislock_campaign(a, "v1", &o));
    ASSERT_NEXT(w->l, &w->s, REDISLOCK_CHANGE_ELECTED, redislock_fence(a),
                "v1");
    ASSERT_EQ_INT(pthread_create(t, NULL, observe_thread, w), 0);
}

/* An observer waiting for a change sends nothing: the server's notice of
 * the key's change (CLIENT TRACKING) ends its wait, for a proclaim and
 * for a lease that runs out; it read the record 50 times a second
 * before. */
void test_elect_observer_waits_silently(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "el");
    watcher w;
    pthread_t t;
    int64_t t0;

    watch_after_election(a, &w, th_lock(e.c, "el"), 10000, &t);
    WAIT_FOR(th_tracked_scripts(e.r) > 0, 5000);
    th_assert_silent(e.r, 1000);
    t0 = th_now_ms();
    ASSERT_OK(redislock_proclaim(a, "v2"));
    heard(&w, t, t0, REDISLOCK_CHANGE_PROCLAIMED);
    ASSERT_EQ_STR(w.s.value, "v2");
    /* The lease runs out: the key's expiry is a notice too. */
    ASSERT_EQ_INT(pthread_create(&t, NULL, observe_thread, &w), 0);
    WAIT_FOR(th_tracked_scripts(e.r) > 0, 5000);
    freeReplyObject(th_cmd(e.r, "PEXPIRE el 1"));
    t0 = th_now_ms();
    /* The server notices an expired key in its expiry cycle (10 times a
     * second by default) or when it is next read. */
    heard(&w, t, t0, REDISLOCK_CHANGE_EXPIRED);
    ASSERT_EQ_INT(w.s.has_leader, 0);
    /* Nothing left behind: the tracking connections closed with the
     * last wait. */
    WAIT_FOR(th_tracked_scripts(e.r) == 0, 5000);
    redislock_lock_free(a);
    redislock_lock_free(w.l);
    th_env_stop(&e);
}

/* A user without CLIENT cannot be told of changes: its observer reads
 * the record again until the change comes, and hears it as soon. */
void test_elect_observer_untracked_polls(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "el");
    redislock_client *c;
    watcher w;
    pthread_t t;
    char url[256];
    int64_t t0;

    freeReplyObject(th_cmd(e.r, "ACL SETUSER obs on >pw ~* &* +@all -client"));
    ASSERT_GT(e.s->port, 0);
    snprintf(url, sizeof url, "redis://obs:pw@127.0.0.1:%d", e.s->port);
    c = th_client_url(url, NULL);
    watch_after_election(a, &w, th_lock(c, "el"), 10000, &t);
    th_sleep_ms(300);
    ASSERT_EQ_INT(th_tracked_scripts(e.r), 0);
    t0 = th_now_ms();
    ASSERT_OK(redislock_proclaim(a, "v2"));
    heard(&w, t, t0, REDISLOCK_CHANGE_PROCLAIMED);
    ASSERT_EQ_STR(w.s.value, "v2");
    ASSERT_OK(redislock_resign(a));
    redislock_lock_free(a);
    redislock_lock_free(w.l);
    redislock_client_free(c);
    th_env_stop(&e);
}

/* The server loses its scripts (FUNCTION FLUSH, SCRIPT FLUSH; a server
 * that restarted keeping its data) while an observer waits: the read that
 * loads them again is sent after the request that asked for its tracking,
 * so it is not tracked, and the observer must not wait as if it were. A
 * renewal (the key alone changes) makes it read and load; the lease then
 * runs out, which only the key's notice tells: heard at once. */
void test_elect_observer_scripts_flushed(void)
{
    th_env e = th_env_start();
    redislock_lock *a = th_lock(e.c, "el");
    watcher w;
    pthread_t t;
    long long loads;
    int64_t t0;

    watch_after_election(a, &w, th_lock(e.c, "el"), 5000, &t);
    WAIT_FOR(th_tracked_scripts(e.r) > 0, 5000);
    loads = th_script_loads(e.r);
    freeReplyObject(th_cmd(e.r, "FUNCTION FLUSH"));
    freeReplyObject(th_cmd(e.r, "SCRIPT FLUSH"));
    ASSERT_EQ_INT(th_cmd_int(e.r, "PEXPIRE el 30000"), 1);
    WAIT_FOR(th_script_loads(e.r) > loads, 5000);
    /* Its read has run (nothing new) and it pauses. */
    th_sleep_ms(100);
    ASSERT_EQ_INT(th_cmd_int(e.r, "PEXPIRE el 1"), 1);
    t0 = th_now_ms();
    heard(&w, t, t0, REDISLOCK_CHANGE_EXPIRED);
    redislock_lock_free(a);
    redislock_lock_free(w.l);
    th_env_stop(&e);
}
