/*
 * The fuzzed "server" that fuzz_reply.c and fuzz_aconn.c share: a
 * hiredis context on a socketpair nobody writes to, requests formatted
 * as usual and dropped (redisBufferWrite, swapped at link time), and the
 * input fed to the context's real reply parser a byte a read
 * (redisBufferRead); an exhausted input is the server closing the
 * connection. Included once, by one target's only file.
 */
#ifndef RL_FUZZ_FAKE_H
#define RL_FUZZ_FAKE_H

#include <stdint.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <hiredis.h>
#include <sds.h>

int __wrap_redisBufferWrite(redisContext *c, int *done);
int __wrap_redisBufferRead(redisContext *c);
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags);

/* What the server sends, and how much of it was read. */
static const uint8_t *stream;
static size_t stream_len, stream_pos;
static int pair = -1; /* our end of a socketpair: a socket for setsockopt */

static redisContext *fake_connect(void)
{
    int sv[2];

    if (pair < 0 && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0)
        pair = sv[0]; /* sv[1] stays open, so reads would block forever */
    return redisConnectFd(pair < 0 ? -1 : dup(pair));
}

static int fail(redisContext *c, int err, const char *msg)
{
    c->err = err;
    strncpy(c->errstr, msg, sizeof c->errstr - 1);
    c->errstr[sizeof c->errstr - 1] = '\0';
    return REDIS_ERR;
}

/* Sending: the request is formatted as usual and dropped. */
int __wrap_redisBufferWrite(redisContext *c, int *done)
{
    sdsclear(c->obuf);
    *done = 1;
    return REDIS_OK;
}

/* A plain socket's writes skip redisBufferWrite (conn.c's plain_write
 * sends with MSG_NOSIGNAL): dropped too, or the socketpair, which nobody
 * reads, would fill and block the target. */
ssize_t __wrap_send(int fd, const void *buf, size_t len, int flags)
{
    (void)fd;
    (void)buf;
    (void)flags;
    return (ssize_t)len;
}

/* Receiving: the next byte of the input goes to the context's real reply
 * parser; an exhausted input is the server closing the connection. */
int __wrap_redisBufferRead(redisContext *c)
{
    if (stream_pos == stream_len)
        return fail(c, REDIS_ERR_EOF, "Server closed the connection");
    redisReaderFeed(c->reader, (const char *)stream + stream_pos++, 1);
    return REDIS_OK;
}

#endif
