/*
 * libFuzzer target for the non-blocking connection (src/wire/aconn.c): what it
 * does with a server's bytes itself, beyond hiredis's reply parser, in
 * both modes: replies matched to requests in order, the handshake's
 * checks, and on a subscriber connection confirmations, messages,
 * unsubscribes nobody asked for and everything else a server may send.
 *
 * The connection code runs unchanged against fake.h's server; here the
 * non-blocking connects are swapped (at link time) for its socketpair.
 *
 * Input: byte 0 picks the setup (bit 0 a subscriber with two channels,
 * bits 1-3 the requests sent first, bit 4 a password, bit 5 a database,
 * bit 6 requests also sent from callbacks, bit 7 a close from the third
 * callback); the rest is what the server sends. Checked: every request
 * and every subscription hears of its end exactly once.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis.h>
#include <sds.h>

#include "aconn.h"
#include "fake.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
redisContext *__wrap_redisConnectNonBlock(const char *ip, int port);
redisContext *__wrap_redisConnectUnixNonBlock(const char *path);

redisContext *__wrap_redisConnectNonBlock(const char *ip, int port)
{
    (void)ip;
    (void)port;
    return fake_connect();
}

redisContext *__wrap_redisConnectUnixNonBlock(const char *path)
{
    (void)path;
    return fake_connect();
}

/* What the callbacks saw. */
static struct {
    rl__aconn *c;
    int sent, heard, subs, ended, more, close_at;
} st;

static void heard(void *arg, redislock_err err, const rl__reply *r)
{
    static const char *const ping[] = {"PING"};

    (void)arg;
    (void)r;
    st.heard++;
    if (st.more > 0 && err == REDISLOCK_OK) {
        st.more--;
        if (rl__aconn_send(st.c, 1, (const char **)ping, NULL, heard, NULL) ==
            REDISLOCK_OK)
            st.sent++;
    }
    if (st.close_at != 0 && st.heard == st.close_at) {
        st.close_at = 0;
        rl__aconn_close(st.c);
        st.c = NULL;
    }
}

static void on_sub(void *arg, redislock_err err, const rl__reply *r)
{
    (void)arg;
    (void)r;
    if (err != REDISLOCK_OK)
        st.ended++;
}

static void nothing(void *ctx, int fd, int what)
{
    (void)ctx;
    (void)fd;
    (void)what;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const ping[] = {"PING"};
    rl__aconn_ops ops = {nothing, NULL, NULL};
    rl__conn_cfg cfg = {0};
    rl__url u;
    int i, n;

    if (size < 1 || rl__url_parse(data[0] & 0x20 ? "unix:///fuzz?db=3"
                                                 : "unix:///fuzz",
                                  &u) != REDISLOCK_OK)
        return 0;
    stream = data + 1;
    stream_len = size - 1;
    stream_pos = 0;
    memset(&st, 0, sizeof st);
    cfg.url = &u;
    cfg.password = data[0] & 0x10 ? "pw" : NULL;
    cfg.connect_timeout_ms = 1000;
    cfg.command_timeout_ms = 1000;
    st.more = data[0] & 0x40 ? 3 : 0;
    st.close_at = data[0] & 0x80 ? 3 : 0;
    if (rl__aconn_open(&cfg, &ops, &st.c) != REDISLOCK_OK) {
        rl__url_free(&u);
        return 0;
    }
    n = (data[0] >> 1) & 7;
    for (i = 0; i < n; i++)
        if (rl__aconn_send(st.c, 1, (const char **)ping, NULL, heard, NULL) ==
            REDISLOCK_OK)
            st.sent++;
    if (data[0] & 1) {
        st.subs += rl__aconn_subscribe(st.c, "a", 1, 0, on_sub, NULL) ==
                   REDISLOCK_OK;
        st.subs += rl__aconn_subscribe(st.c, "b\0c", 3, 0, on_sub, NULL) ==
                   REDISLOCK_OK;
    }
    /* A byte a call, until the stream ends (the server closes) or the
     * connection does. */
    while (st.c != NULL && !rl__aconn_broken(st.c) &&
           stream_pos <= stream_len) {
        rl__aconn_io(st.c, RL_WATCH_READ | RL_WATCH_WRITE);
        if (stream_pos == stream_len && st.c != NULL &&
            !rl__aconn_broken(st.c))
            rl__aconn_io(st.c, RL_WATCH_READ);
    }
    if (st.c != NULL)
        rl__aconn_close(st.c);
    /* Every request and every subscription heard of its end once. */
    if (st.heard != st.sent || st.ended != st.subs)
        abort();
    rl__url_free(&u);
    return 0;
}
