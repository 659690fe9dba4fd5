/*
 * shard: a client over several independent servers routes each key to one
 * of them by consistent hashing. Where a key went is read back from the
 * servers themselves (EXISTS on each), never from the library, so these
 * tests check the placement a second client or process would see.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/adapters.h"
#include "harness/fixture.h"
#include "harness/proxy.h"
#include "harness/server.h"
#include "harness/util.h"
#include "test.h"

#define NKEYS 300
#define SLACK_MS 300

static redislock_client *sharded(const char *const *urls, int n)
{
    redislock_client *c = NULL;

    ASSERT_OK(redislock_client_new_sharded(&c, urls, (size_t)n, NULL));
    ASSERT(c != NULL);
    return c;
}

/* The index of the one server among the first n that has key; fails the
 * test when none or several have it. */
static int where(const th_servers *e, int n, const char *key)
{
    int i, at = -1;

    for (i = 0; i < n; i++)
        if (th_cmd_int(e->r[i], "EXISTS %s", key) != 0) {
            if (at >= 0)
                test_fail_(__FILE__, __LINE__, "%s is on servers %d and %d",
                           key, at, i);
            at = i;
        }
    if (at < 0)
        test_fail_(__FILE__, __LINE__, "%s is on no server", key);
    return at;
}

static void key_name(int i, char *buf, size_t size)
{
    snprintf(buf, size, "sk:%d", i);
}

/* Acquires every key with c, records its server in at[], releases it. */
static void place_all(const th_servers *e, int n, redislock_client *c, int *at)
{
    redislock_acquire_options o = th_aopts(30000, 0, 0);
    redislock_lock *l;
    char key[32];
    int i;

    for (i = 0; i < NKEYS; i++) {
        key_name(i, key, sizeof key);
        l = th_lock(c, key);
        ASSERT_OK(redislock_acquire(l, &o));
        at[i] = where(e, n, key);
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
    }
}

static int count_listed(const redislock_info *info, void *arg)
{
    int *n = arg;

    ASSERT_EQ_INT(info->held, 1);
    (*n)++;
    return 0;
}

void test_shard_spread_one_server_each(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = sharded(e.urls, 3);
    redislock_lock *l[NKEYS];
    int count[3] = {0, 0, 0};
    char key[32];
    int i, listed;

    for (i = 0; i < NKEYS; i++) {
        key_name(i, key, sizeof key);
        l[i] = th_lock(c, key);
        ASSERT_OK(redislock_acquire(l[i], NULL));
    }
    /* All held at once: each on exactly one server. */
    for (i = 0; i < NKEYS; i++) {
        key_name(i, key, sizeof key);
        count[where(&e, 3, key)]++;
    }
    test_log("%d keys over 3 servers: %d %d %d", NKEYS, count[0], count[1],
             count[2]);
    for (i = 0; i < 3; i++) {
        ASSERT_GE(count[i] * 100, 15 * NKEYS);
        ASSERT_LE(count[i] * 100, 55 * NKEYS);
        ASSERT_EQ_INT(th_lock_keys(e.r[i]), count[i]);
    }
    /* A listing covers every server. */
    listed = 0;
    ASSERT_OK(redislock_list(c, "sk:*", count_listed, &listed));
    ASSERT_EQ_INT(listed, NKEYS);
    for (i = 0; i < NKEYS; i++) {
        ASSERT_OK(redislock_release(l[i]));
        redislock_lock_free(l[i]);
    }
    for (i = 0; i < 3; i++)
        ASSERT_EQ_INT(th_lock_keys(e.r[i]), 0);
    redislock_client_free(c);
    th_servers_stop(&e);
}

void test_shard_order_independent(void)
{
    th_servers e = th_servers_start(3);
    const char *reordered[3];
    redislock_client *a, *b;
    redislock_lock *la[NKEYS], *lb;
    int at[NKEYS];
    char key[32];
    int i;

    reordered[0] = e.urls[2];
    reordered[1] = e.urls[0];
    reordered[2] = e.urls[1];
    a = sharded(e.urls, 3);
    b = sharded(reordered, 3);
    for (i = 0; i < NKEYS; i++) {
        key_name(i, key, sizeof key);
        la[i] = th_lock(a, key);
        ASSERT_OK(redislock_acquire(la[i], NULL));
        at[i] = where(&e, 3, key);
    }
    /* b looks on the same server for every key, so it finds each held
     * (routed elsewhere, it would have taken a second copy). */
    for (i = 0; i < NKEYS; i++) {
        key_name(i, key, sizeof key);
        lb = th_lock(b, key);
        ASSERT_ERR(redislock_acquire(lb, NULL), REDISLOCK_EHELD);
        redislock_lock_free(lb);
        ASSERT_OK(redislock_release(la[i]));
        redislock_lock_free(la[i]);
    }
    /* And what b takes lands where a put it. */
    for (i = 0; i < NKEYS; i++) {
        key_name(i, key, sizeof key);
        lb = th_lock(b, key);
        ASSERT_OK(redislock_acquire(lb, NULL));
        ASSERT_EQ_INT(where(&e, 3, key), at[i]);
        ASSERT_OK(redislock_release(lb));
        redislock_lock_free(lb);
    }
    redislock_client_free(a);
    redislock_client_free(b);
    th_servers_stop(&e);
}

/*
 * Two databases of one server are two shards (the client accepts them as
 * distinct), so their order in the list must not matter either: clients
 * listing them differently must still agree on every key.
 */
void test_shard_order_independent_same_server_dbs(void)
{
    th_servers e = th_servers_start(1);
    char db0[256], db1[256];
    const char *ab[2], *ba[2];
    redislock_client *a, *b;
    redislock_lock *la, *lb;
    char key[32];
    int i, both = 0;

    snprintf(db0, sizeof db0, "%s?db=0", e.urls[0]);
    snprintf(db1, sizeof db1, "%s?db=1", e.urls[0]);
    ab[0] = ba[1] = db0;
    ab[1] = ba[0] = db1;
    a = sharded(ab, 2);
    b = sharded(ba, 2);
    for (i = 0; i < 100; i++) {
        key_name(i, key, sizeof key);
        la = th_lock(a, key);
        lb = th_lock(b, key);
        ASSERT_OK(redislock_acquire(la, NULL));
        both += redislock_acquire(lb, NULL) == REDISLOCK_OK;
        redislock_lock_free(la);
        redislock_lock_free(lb);
    }
    if (both != 0)
        test_fail_(__FILE__, __LINE__,
                   "%d of 100 keys were taken by both clients", both);
    redislock_client_free(a);
    redislock_client_free(b);
    th_servers_stop(&e);
}

void test_shard_added_server_moves_few(void)
{
    th_servers e = th_servers_start(4);
    redislock_client *c3 = sharded(e.urls, 3);
    redislock_client *c4 = sharded(e.urls, 4);
    int before[NKEYS], after[NKEYS];
    int moved = 0, i;

    place_all(&e, 3, c3, before);
    place_all(&e, 4, c4, after);
    for (i = 0; i < NKEYS; i++) {
        if (after[i] == before[i])
            continue;
        moved++;
        /* Keys only move to the newcomer, never between old servers. */
        if (after[i] != 3)
            test_fail_(__FILE__, __LINE__,
                       "sk:%d moved from server %d to old server %d", i,
                       before[i], after[i]);
    }
    test_log("adding a 4th server moved %d of %d keys (%.1f%%, ideal 25%%)",
             moved, NKEYS, 100.0 * moved / NKEYS);
    ASSERT_GE(moved * 10, NKEYS * 1);
    ASSERT_LE(moved * 10, NKEYS * 4);
    redislock_client_free(c3);
    redislock_client_free(c4);
    th_servers_stop(&e);
}

/* client_new_sharded(urls) fails with want, *out NULL, and a detail that
 * contains needle. */
static void assert_refused(const char *const *urls, size_t n,
                           redislock_err want, const char *needle)
{
    /* Not NULL beforehand, so that the check below means something. */
    redislock_client *c = (redislock_client *)&c;
    const char *detail;

    ASSERT_ERR(redislock_client_new_sharded(&c, urls, n, NULL), want);
    detail = redislock_errdetail();
    ASSERT(c == NULL);
    if (strstr(detail, needle) == NULL)
        test_fail_(__FILE__, __LINE__, "detail \"%s\" does not name %s", detail,
                   needle);
}

void test_shard_duplicate_server_einval(void)
{
    th_servers e = th_servers_start(2);
    char db0[256], tcp[64];
    const char *urls[3];
    redislock_client *c = NULL;

    urls[0] = e.urls[0];
    urls[1] = e.urls[1];
    urls[2] = e.urls[0];
    assert_refused(urls, 3, REDISLOCK_EINVAL, e.s[0]->sock);

    /* The same socket, spelt differently: still the same database. */
    snprintf(db0, sizeof db0, "%s?db=0", e.urls[1]);
    urls[2] = db0;
    assert_refused(urls, 3, REDISLOCK_EINVAL, e.s[1]->sock);

    /* The same TCP address twice. */
    snprintf(tcp, sizeof tcp, "127.0.0.1:%d", e.s[0]->port);
    urls[0] = e.s[0]->tcp_url;
    urls[2] = e.s[0]->tcp_url;
    assert_refused(urls, 3, REDISLOCK_EINVAL, tcp);

    /* The same list without the repeat is fine. */
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 2, NULL));
    redislock_client_free(c);
    th_servers_stop(&e);
}

void test_shard_dead_server_econnect(void)
{
    th_servers e = th_servers_start(3);
    th_server *gone = th_server_start(NULL);
    char dead_tcp[64], dead_unix[256], where_tcp[64];
    const char *urls[3];
    int port = th_free_port();

    ASSERT_GT(port, 0);
    snprintf(dead_tcp, sizeof dead_tcp, "redis://127.0.0.1:%d", port);
    snprintf(where_tcp, sizeof where_tcp, "127.0.0.1:%d", port);
    urls[0] = e.urls[0];
    urls[1] = dead_tcp;
    urls[2] = e.urls[2];
    assert_refused(urls, 3, REDISLOCK_ECONNECT, where_tcp);

    /* A socket whose server has gone. */
    snprintf(dead_unix, sizeof dead_unix, "%s", gone->unix_url);
    th_server_stop(gone);
    urls[1] = e.urls[1];
    urls[2] = dead_unix;
    assert_refused(urls, 3, REDISLOCK_ECONNECT, dead_unix + strlen("unix://"));
    th_servers_stop(&e);
}

/* A key that c routes to server want, found by trying names. */
static void key_on(const th_servers *e, redislock_client *c, int want,
                   char *key, size_t size)
{
    redislock_lock *l;
    int i, at;

    for (i = 0; i < 1000; i++) {
        snprintf(key, size, "pick:%d", i);
        l = th_lock(c, key);
        ASSERT_OK(redislock_acquire(l, NULL));
        at = where(e, e->n, key);
        ASSERT_OK(redislock_release(l));
        redislock_lock_free(l);
        if (at == want)
            return;
    }
    test_fail_(__FILE__, __LINE__, "no key of 1000 routes to server %d", want);
}

void test_shard_release_extend_watchdog(void)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = sharded(e.urls, 3);
    redislock_acquire_options o = th_aopts(2000, 0, 0);
    redislock_lock *l;
    char key[32];
    int i;

    key_on(&e, c, 1, key, sizeof key);
    l = th_lock(c, key);
    ASSERT_OK(redislock_acquire(l, &o));
    ASSERT_KEY(e.r[1], key, redislock_token(l));
    ASSERT_OK(redislock_extend(l, 10000));
    ASSERT_GT(th_pttl(e.r[1], key), 10000 - SLACK_MS);
    ASSERT_OK(redislock_release(l));
    for (i = 0; i < 3; i++)
        ASSERT_EQ_INT(th_cmd_int(e.r[i], "EXISTS %s", key), 0);

    /* The watchdog renews on the key's own server: after several lease
     * lengths the lock is still there and still ours. */
    o = th_aopts(600, 0, 0);
    o.watchdog = 1;
    ASSERT_OK(redislock_acquire(l, &o));
    th_sleep_ms(1800);
    ASSERT_OK(redislock_check(l));
    ASSERT_KEY(e.r[1], key, redislock_token(l));
    ASSERT_GT(th_pttl(e.r[1], key), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS %s", key), 0);
    ASSERT_EQ_INT(th_cmd_int(e.r[2], "EXISTS %s", key), 0);
    ASSERT_OK(redislock_release(l));
    for (i = 0; i < 3; i++)
        ASSERT_EQ_INT(th_cmd_int(e.r[i], "EXISTS %s", key), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* A server that stops answering costs the locks on the others nothing:
 * with a lock on server 0 whose renewal (due at 1 s) hangs there for the
 * 2 s command timeout, a lock of a third the lease on server 1 is still
 * renewed every 300 ms, and is held throughout. (Before 2026-11-30 one
 * thread sent the renewals one at a time, each waiting for its reply:
 * the second lock's renewals waited behind the first's and it was
 * reported lost at about 1.8 s.) */
void test_shard_stalled_server_spares_other_renewals(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = sharded(e.urls, 2);
    redislock_acquire_options slow = th_aopts(3000, 0, 0),
                              fast = th_aopts(900, 0, 0);
    redislock_lock *a, *b;
    char ka[32], kb[32];
    int64_t until;

    key_on(&e, c, 0, ka, sizeof ka);
    key_on(&e, c, 1, kb, sizeof kb);
    a = th_lock(c, ka);
    b = th_lock(c, kb);
    slow.watchdog = fast.watchdog = 1;
    ASSERT_OK(redislock_acquire(a, &slow));
    ASSERT_OK(redislock_acquire(b, &fast));
    th_server_pause(e.s[0]);
    /* a's renewal goes at 1 s and waits until 3 s; b's lease (900 ms)
     * would run out at 1.8 s if its renewals waited behind it. */
    until = th_now_ms() + 2500;
    while (th_now_ms() < until) {
        ASSERT_OK(redislock_check(b));
        th_sleep_ms(50);
    }
    ASSERT_KEY(e.r[1], kb, redislock_token(b));
    ASSERT_GT(th_pttl(e.r[1], kb), 0);
    th_server_resume(e.s[0]);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(th_cmd_int(e.r[1], "EXISTS %s", kb), 0);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* ---- One server, spelt differently --------------------------------- */

#define NSPELT 200

/*
 * Clients a and b, given the same servers spelt differently, take each
 * of NSPELT keys in turn: a takes it and b tries, then the other way
 * round. Returns how many keys both held at once (0 when they route
 * every key alike).
 */
static int both_held(redislock_client *a, redislock_client *b)
{
    redislock_client *first, *second;
    redislock_lock *l1, *l2;
    char key[32];
    int i, both = 0;

    for (i = 0; i < 2 * NSPELT; i++) {
        first = i % 2 ? b : a;
        second = i % 2 ? a : b;
        snprintf(key, sizeof key, "spelt:%d", i / 2);
        l1 = th_lock(first, key);
        l2 = th_lock(second, key);
        ASSERT_OK(redislock_acquire(l1, NULL));
        if (redislock_acquire(l2, NULL) == REDISLOCK_OK) {
            both++;
            ASSERT_OK(redislock_release(l2));
        }
        ASSERT_OK(redislock_release(l1));
        redislock_lock_free(l1);
        redislock_lock_free(l2);
    }
    return both;
}

/* Two clients over e's servers, one listing them as a, the other as b,
 * must never both hold a key. */
static void assert_agree(const th_servers *e, const char *const *a,
                         const char *const *b, const char *what)
{
    redislock_client *ca = sharded(a, e->n), *cb = sharded(b, e->n);
    int both = both_held(ca, cb);

    test_log("%s: %d of %d keys held by both", what, both, NSPELT * 2);
    if (both != 0)
        test_fail_(__FILE__, __LINE__, "%s: %d of %d keys held by both", what,
                   both, NSPELT * 2);
    redislock_client_free(ca);
    redislock_client_free(cb);
}

/* urls[i] = fmt with server i's TCP port, into buf. */
static void tcp_urls(const th_servers *e, const char *fmt, char (*buf)[96],
                     const char **urls)
{
    int i;

    for (i = 0; i < e->n; i++) {
        snprintf(buf[i], sizeof buf[i], fmt, e->s[i]->port);
        urls[i] = buf[i];
    }
}

void test_shard_localhost_and_ip_agree(void)
{
    th_servers e = th_servers_start(3);
    char ba[3][96], bb[3][96];
    const char *a[3], *b[3];

    tcp_urls(&e, "redis://127.0.0.1:%d", ba, a);
    tcp_urls(&e, "redis://localhost:%d", bb, b);
    assert_agree(&e, a, b, "127.0.0.1 and localhost");
    tcp_urls(&e, "redis://LocalHost:%d/0", bb, b);
    assert_agree(&e, a, b, "127.0.0.1 and LocalHost/0");
    th_servers_stop(&e);
}

void test_shard_unix_and_tcp_agree(void)
{
    th_servers e = th_servers_start(3);
    char bb[3][96];
    const char *b[3];

    tcp_urls(&e, "redis://127.0.0.1:%d", bb, b);
    assert_agree(&e, e.urls, b, "unix socket and 127.0.0.1");
    tcp_urls(&e, "redis://localhost:%d", bb, b);
    assert_agree(&e, e.urls, b, "unix socket and localhost");
    th_servers_stop(&e);
}

/* Database 0 written or not, and numeric forms the resolver reads alike
 * ("127.1" is 127.0.0.1). */
void test_shard_db0_and_numeric_forms_agree(void)
{
    th_servers e = th_servers_start(3);
    char ba[3][96], bb[3][96], sa[3][256];
    const char *a[3], *b[3];
    int i;

    tcp_urls(&e, "redis://127.0.0.1:%d", ba, a);
    tcp_urls(&e, "redis://127.0.0.1:%d/0", bb, b);
    assert_agree(&e, a, b, "no database and /0");
    for (i = 0; i < 3; i++) {
        snprintf(sa[i], sizeof sa[i], "%s?db=0", e.urls[i]);
        b[i] = sa[i];
    }
    assert_agree(&e, e.urls, b, "unix socket without and with ?db=0");
    tcp_urls(&e, "redis://127.1:%d", bb, b);
    assert_agree(&e, a, b, "127.0.0.1 and 127.1");
    th_servers_stop(&e);
}

/* One server listed twice, spelt so that only its canonical name (the
 * loopback host, the TCP port behind a socket) or only its run_id (a
 * proxy's port) tells. */
void test_shard_same_server_spelt_twice_einval(void)
{
    th_servers e = th_servers_start(2);
    th_proxy *p = th_proxy_start(e.s[0]->port);
    char ip[64], local[64], proxied[64], ip_at[64], local_at[64], px_at[64];
    const char *urls[3];
    redislock_client *c = NULL;

    snprintf(ip, sizeof ip, "redis://127.0.0.1:%d", e.s[0]->port);
    snprintf(local, sizeof local, "redis://localhost:%d/0", e.s[0]->port);
    snprintf(proxied, sizeof proxied, "redis://127.0.0.1:%d", th_proxy_port(p));
    snprintf(ip_at, sizeof ip_at, "127.0.0.1:%d/0", e.s[0]->port);
    snprintf(local_at, sizeof local_at, "localhost:%d/0", e.s[0]->port);
    snprintf(px_at, sizeof px_at, "127.0.0.1:%d/0", th_proxy_port(p));
    urls[0] = ip;
    urls[1] = e.urls[1];
    urls[2] = local;
    assert_refused(urls, 3, REDISLOCK_EINVAL, local_at);
    test_log("%s", redislock_errdetail());
    assert_refused(urls, 3, REDISLOCK_EINVAL, ip_at);
    /* The socket and the TCP port of one server. */
    urls[2] = e.urls[0];
    assert_refused(urls, 3, REDISLOCK_EINVAL, e.s[0]->sock);
    test_log("%s", redislock_errdetail());
    assert_refused(urls, 3, REDISLOCK_EINVAL, ip_at);
    /* Another port in front of it: only the server can tell. */
    urls[2] = proxied;
    assert_refused(urls, 3, REDISLOCK_EINVAL, px_at);
    assert_refused(urls, 3, REDISLOCK_EINVAL, "run_id");
    test_log("%s", redislock_errdetail());
    /* Two databases of one server are two shards. */
    snprintf(local, sizeof local, "redis://localhost:%d/1", e.s[0]->port);
    urls[2] = local;
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 3, NULL));
    redislock_client_free(c);
    th_proxy_stop(p);
    th_servers_stop(&e);
}

/* Client b names server 0 by a port in front of it, which no canonical
 * name can see through; a names it by its own. */
static void proxied_lists(const th_servers *e, const th_proxy *p, char *buf,
                          size_t size, const char **a, const char **b)
{
    snprintf(buf, size, "redis://127.0.0.1:%d", th_proxy_port(p));
    a[0] = e->urls[0];
    a[1] = e->urls[1];
    b[0] = buf;
    b[1] = e->urls[1];
}

/* Client c's list must be refused, naming how the other clients name
 * server 0 (their) and how c does (mine). */
static void assert_misnamed(const char *const *urls, const char *mine,
                            const char *their)
{
    assert_refused(urls, 2, REDISLOCK_EINVAL, mine);
    test_log("%s", redislock_errdetail());
    assert_refused(urls, 2, REDISLOCK_EINVAL, their);
    assert_refused(urls, 2, REDISLOCK_EINVAL, "rl-server");
}

/*
 * A client that names a server otherwise than the clients before it
 * would route keys elsewhere: the server's registry key refuses it,
 * whichever came first; after a restart without persistence the first
 * connection back writes the name again.
 */
void test_shard_other_clients_name_einval(void)
{
    th_servers e = th_servers_start(2);
    th_proxy *p = th_proxy_start(e.s[0]->port);
    char buf[64], direct[64], proxied[64], key[32];
    const char *a[2], *b[2];
    redislock_client *ca, *cb;

    proxied_lists(&e, p, buf, sizeof buf, a, b);
    snprintf(direct, sizeof direct, "127.0.0.1:%d/0", e.s[0]->port);
    snprintf(proxied, sizeof proxied, "127.0.0.1:%d/0", th_proxy_port(p));
    ca = sharded(a, 2);
    assert_misnamed(b, proxied, direct);
    /* Once every client names it the new way, the key goes. */
    redislock_client_free(ca);
    freeReplyObject(th_cmd(e.r[0], "DEL redislock:rl-server"));
    cb = sharded(b, 2);
    assert_misnamed(a, direct, proxied);
    redislock_client_free(cb);

    /* The registry lost (as in a restart without persistence): a's next
     * connection writes the name again, and b is refused as before. */
    freeReplyObject(th_cmd(e.r[0], "DEL redislock:rl-server"));
    ca = sharded(a, 2);
    freeReplyObject(th_cmd(e.r[0], "FLUSHALL"));
    freeReplyObject(th_cmd(e.r[0], "CLIENT KILL TYPE normal SKIPME yes"));
    /* Long enough idle for the pool to see the close. */
    th_sleep_ms(200);
    key_on(&e, ca, 0, key, sizeof key);
    ASSERT_KEY(e.r[0], "redislock:rl-server", direct);
    assert_misnamed(b, proxied, direct);
    redislock_client_free(ca);
    th_proxy_stop(p);
    th_servers_stop(&e);
}

/* A user that may not run INFO, or write the registry key, still gets a
 * working client (with only the names compared); one that may gets the
 * key under its prefix. Redlock too. */
void test_shard_acl_without_info_works(void)
{
    th_servers e = th_servers_start(3);
    char url[3][96];
    const char *urls[3];
    redislock_options o = {0};
    redislock_client *c = NULL;
    redislock_lock *l;
    char *v;
    int i;

    for (i = 0; i < 3; i++) {
        freeReplyObject(th_cmd(e.r[i], "ACL SETUSER locker on >pw resetkeys "
                                       "~locks:* +@all -info"));
        snprintf(url[i], sizeof url[i], "redis://locker:pw@127.0.0.1:%d",
                 e.s[i]->port);
        urls[i] = url[i];
    }
    c = sharded(urls, 2);
    l = th_lock(c, "locks:job");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);
    ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS redislock:rl-server"), 0);
    ASSERT_OK(redislock_client_new_redlock(&c, urls, 3, NULL));
    l = th_lock(c, "locks:job");
    ASSERT_OK(redislock_acquire(l, NULL));
    ASSERT_OK(redislock_release(l));
    redislock_lock_free(l);
    redislock_client_free(c);

    /* With +info and the prefix inside the pattern: every check. */
    for (i = 0; i < 2; i++)
        freeReplyObject(th_cmd(e.r[i], "ACL SETUSER locker +info"));
    o.prefix = "locks:";
    ASSERT_OK(redislock_client_new_sharded(&c, urls, 2, &o));
    for (i = 0; i < 2; i++) {
        v = th_cmd_str(e.r[i], NULL, "GET locks:redislock:rl-server");
        ASSERT(v != NULL && strncmp(v, "127.0.0.1:", 10) == 0);
        free(v);
    }
    redislock_client_free(c);
    th_servers_stop(&e);
}

/* One lock operation on a new event loop of c's: its callback's outcome
 * (the detail in d). */
static redislock_err loop_op(redislock_client *c, redislock_lock *l,
                             int release, ad_done *d)
{
    redislock_loop *lp;
    void *drv = adapter_poll.open(c, &lp);

    memset(d, 0, sizeof *d);
    if (release)
        ASSERT_OK(redislock_loop_release(lp, l, 0, ad_record, d));
    else
        ASSERT_OK(redislock_loop_acquire(lp, l, NULL, ad_record, d));
    ad_run_until(&adapter_poll, drv, &d->calls, 1, 5000);
    adapter_poll.close(drv);
    return d->err;
}

/*
 * A sharded client's event-loop connections are admitted as its blocking
 * ones are, before their first request: a new one writes the server
 * registry key back (lost here with FLUSHALL, as in a restart without
 * persistence), and one whose server names itself otherwise is refused
 * with nothing written. Until 2026-11-29 the loop's connections were not
 * checked at all.
 */
void test_shard_loop_connections_admitted(void)
{
    th_servers e = th_servers_start(2);
    redislock_client *c = sharded(e.urls, 2);
    redislock_lock *l;
    ad_done d;
    char key[32], name[64];

    snprintf(name, sizeof name, "127.0.0.1:%d/0", e.s[0]->port);
    key_on(&e, c, 0, key, sizeof key);
    l = th_lock(c, key);
    freeReplyObject(th_cmd(e.r[0], "FLUSHALL"));
    ASSERT_ERR(loop_op(c, l, 0, &d), REDISLOCK_OK);
    ASSERT_KEY(e.r[0], "redislock:rl-server", name);
    ASSERT_ERR(loop_op(c, l, 1, &d), REDISLOCK_OK);

    freeReplyObject(th_cmd(e.r[0], "SET redislock:rl-server 10.0.0.9:1/0"));
    ASSERT_ERR(loop_op(c, l, 0, &d), REDISLOCK_EINVAL);
    test_log("%s", d.detail);
    ASSERT(strstr(d.detail, "10.0.0.9:1/0") != NULL);
    ASSERT(strstr(d.detail, name) != NULL);
    ASSERT_EQ_INT(th_cmd_int(e.r[0], "EXISTS %s", key), 0);
    redislock_lock_free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}
