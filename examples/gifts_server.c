/*
 * gifts_server [-u URL] [-p PORT] [-c COST] [-w WORK_MS] [-n]: an HTTP
 * service that redeems points for gifts, one thread on one libevent loop.
 *
 * GET /redeem?user=N reads the stock and user N's points, checks them,
 * takes WORK_MS of processing (a timer: the loop serves other requests
 * meanwhile) and writes both back, the classic read-check-write, under a
 * redislock lock taken on the same loop (redislock_loop(3), through
 * <redislock/libevent.h>); the data goes through hiredis's async API on
 * the loop too. Answers: 200 "redeemed", 409 "sold out", 402 "not enough
 * points", 503 when the lock or Redis fails. Every redemption also counts
 * itself in gifts:redeemed with INCR, which does not lose updates: the
 * truth to hold the stock against. With -n the lock is skipped, and many
 * concurrent clients oversell: each reads the stock before any writes it.
 *
 * Keys: gifts:stock, gifts:points:<N>, gifts:redeemed; the lock
 * gifts:lock. URL: unix:///path or redis://host:port (default
 * redis://127.0.0.1:6379). Prints "listening on PORT" once ready (-p 0:
 * a port the system chooses).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <adapters/libevent.h>
#include <async.h>
#include <hiredis.h>
#include <redislock.h>
#include <redislock/libevent.h>

#define LOCK_KEY "gifts:lock"

typedef struct server {
    struct event_base *base;
    redisAsyncContext *data;
    redislock_client *client;
    redislock_libevent *loop;
    long long cost;
    int work_ms, no_lock;
} server;

/* One redemption under way: its HTTP request and its lock. */
typedef struct redemption {
    server *sv;
    struct evhttp_request *req;
    redislock_lock *lock;
    char user[32];
    long long stock, points;
    struct event *work;
    int code;
    const char *answer;
} redemption;

static void answer(redemption *r)
{
    struct evbuffer *b = evbuffer_new();

    if (b != NULL) {
        evbuffer_add_printf(b, "%s\n", r->answer);
        evhttp_send_reply(r->req, r->code, r->answer, b);
        evbuffer_free(b);
    } else {
        evhttp_send_error(r->req, 500, "out of memory");
    }
    if (r->work != NULL)
        event_free(r->work);
    redislock_lock_free(r->lock);
    free(r);
}

static void released(redislock_lock *l, redislock_err err, void *arg)
{
    redemption *r = arg;

    (void)l;
    if (err != REDISLOCK_OK)
        fprintf(stderr, "gifts_server: release: %s\n", redislock_errdetail());
    answer(r);
}

/* The redemption is decided (r->code, r->answer): the lock goes back,
 * then the client hears. */
static void finish(redemption *r, int code, const char *text)
{
    r->code = code;
    r->answer = text;
    if (r->sv->no_lock ||
        redislock_loop_release(redislock_libevent_loop(r->sv->loop), r->lock, 0,
                               released, r) != REDISLOCK_OK)
        answer(r);
}

static void written(redisAsyncContext *ac, void *reply, void *arg)
{
    redemption *r = arg;
    redisReply *rep = reply;

    (void)ac;
    if (rep == NULL || rep->type == REDIS_REPLY_ERROR)
        finish(r, 503, "redis failed");
    else
        finish(r, 200, "redeemed");
}

/* The processing is done: write back what was read, less one gift. */
static void worked(evutil_socket_t fd, short what, void *arg)
{
    redemption *r = arg;
    redisAsyncContext *ac = r->sv->data;

    (void)fd;
    (void)what;
    redisAsyncCommand(ac, NULL, NULL, "MULTI");
    redisAsyncCommand(ac, NULL, NULL, "SET gifts:stock %lld", r->stock - 1);
    redisAsyncCommand(ac, NULL, NULL, "SET gifts:points:%s %lld", r->user,
                      r->points - r->sv->cost);
    redisAsyncCommand(ac, NULL, NULL, "INCR gifts:redeemed");
    redisAsyncCommand(ac, written, r, "EXEC");
}

/* Stock and points read: check them, then process. */
static void read_done(redisAsyncContext *ac, void *reply, void *arg)
{
    redemption *r = arg;
    redisReply *rep = reply;
    struct timeval tv;

    (void)ac;
    if (rep == NULL || rep->type != REDIS_REPLY_ARRAY || rep->elements != 2) {
        finish(r, 503, "redis failed");
        return;
    }
    r->stock = rep->element[0]->str ? atoll(rep->element[0]->str) : 0;
    r->points = rep->element[1]->str ? atoll(rep->element[1]->str) : 0;
    if (r->stock <= 0) {
        finish(r, 409, "sold out");
        return;
    }
    if (r->points < r->sv->cost) {
        finish(r, 402, "not enough points");
        return;
    }
    tv.tv_sec = r->sv->work_ms / 1000;
    tv.tv_usec = (r->sv->work_ms % 1000) * 1000;
    if ((r->work = evtimer_new(r->sv->base, worked, r)) == NULL ||
        evtimer_add(r->work, &tv) != 0)
        finish(r, 503, "out of memory");
}

static void start_read(redemption *r)
{
    if (redisAsyncCommand(r->sv->data, read_done, r,
                          "MGET gifts:stock gifts:points:%s",
                          r->user) != REDIS_OK)
        finish(r, 503, "redis failed");
}

static void locked(redislock_lock *l, redislock_err err, void *arg)
{
    redemption *r = arg;

    (void)l;
    if (err != REDISLOCK_OK) {
        fprintf(stderr, "gifts_server: lock: %s\n", redislock_errdetail());
        r->code = 503;
        r->answer = "busy";
        answer(r);
        return;
    }
    start_read(r);
}

static void redeem(struct evhttp_request *req, void *arg)
{
    server *sv = arg;
    struct evkeyvalq q;
    const char *user;
    redemption *r = calloc(1, sizeof *r);
    redislock_acquire_options o = {0};

    memset(&q, 0, sizeof q);
    if (r == NULL || evhttp_parse_query(evhttp_request_get_uri(req), &q) != 0 ||
        (user = evhttp_find_header(&q, "user")) == NULL ||
        strspn(user, "0123456789") != strlen(user) || strlen(user) > 20) {
        evhttp_clear_headers(&q);
        free(r);
        evhttp_send_error(req, 400, "want /redeem?user=N");
        return;
    }
    r->sv = sv;
    r->req = req;
    snprintf(r->user, sizeof r->user, "%s", user);
    evhttp_clear_headers(&q);
    if (sv->no_lock) {
        start_read(r);
        return;
    }
    o.ttl_ms = 10000;
    o.wait_ms = 10000;
    if (redislock_lock_new(sv->client, LOCK_KEY, strlen(LOCK_KEY), &r->lock) !=
            REDISLOCK_OK ||
        redislock_loop_acquire(redislock_libevent_loop(sv->loop), r->lock, &o,
                               locked, r) != REDISLOCK_OK) {
        fprintf(stderr, "gifts_server: %s\n", redislock_errdetail());
        r->code = 503;
        r->answer = "busy";
        answer(r);
    }
}

/* The data connection: unix:///path or redis://host:port. */
static redisAsyncContext *connect_data(const char *url)
{
    char host[256] = "127.0.0.1";
    int port = 6379;

    if (strncmp(url, "unix://", 7) == 0) {
        snprintf(host, sizeof host, "%s", url + 7);
        host[strcspn(host, "?")] = '\0';
        return redisAsyncConnectUnix(host);
    }
    sscanf(strncmp(url, "redis://", 8) == 0 ? url + 8 : url, "%255[^:/]:%d",
           host, &port);
    return redisAsyncConnect(host, port);
}

int main(int argc, char **argv)
{
    server sv = {0};
    const char *url = "redis://127.0.0.1:6379";
    struct evhttp *http;
    struct evhttp_bound_socket *bound;
    struct sockaddr_in sin;
    socklen_t sinlen = sizeof sin;
    int opt, port = 8080;

    sv.cost = 10;
    sv.work_ms = 20;
    while ((opt = getopt(argc, argv, "u:p:c:w:n")) != -1) {
        switch (opt) {
        case 'u':
            url = optarg;
            break;
        case 'p':
            port = atoi(optarg);
            break;
        case 'c':
            sv.cost = atoll(optarg);
            break;
        case 'w':
            sv.work_ms = atoi(optarg);
            break;
        case 'n':
            sv.no_lock = 1;
            break;
        default:
            fprintf(stderr, "usage: gifts_server [-u URL] [-p PORT] "
                            "[-c COST] [-w WORK_MS] [-n]\n");
            return 2;
        }
    }
    if ((sv.base = event_base_new()) == NULL ||
        (http = evhttp_new(sv.base)) == NULL) {
        fprintf(stderr, "gifts_server: libevent failed\n");
        return 1;
    }
    sv.data = connect_data(url);
    if (sv.data == NULL || sv.data->err) {
        fprintf(stderr, "gifts_server: cannot connect to %s\n", url);
        return 1;
    }
    redisLibeventAttach(sv.data, sv.base);
    if (redislock_client_new(&sv.client, url, NULL) != REDISLOCK_OK ||
        redislock_libevent_new(&sv.loop, sv.client, sv.base) != REDISLOCK_OK) {
        fprintf(stderr, "gifts_server: %s\n", redislock_errdetail());
        return 1;
    }
    evhttp_set_cb(http, "/redeem", redeem, &sv);
    if ((bound = evhttp_bind_socket_with_handle(http, "127.0.0.1",
                                                (ev_uint16_t)port)) == NULL) {
        fprintf(stderr, "gifts_server: cannot listen on port %d\n", port);
        return 1;
    }
    /* -p 0: the port the system chose. */
    if (getsockname(evhttp_bound_socket_get_fd(bound), (struct sockaddr *)&sin,
                    &sinlen) == 0)
        port = ntohs(sin.sin_port);
    printf("listening on %d%s\n", port, sv.no_lock ? " (no lock)" : "");
    fflush(stdout);
    event_base_dispatch(sv.base);
    evhttp_free(http);
    redislock_libevent_free(sv.loop);
    redislock_client_free(sv.client);
    redisAsyncDisconnect(sv.data);
    event_base_free(sv.base);
    return 0;
}
