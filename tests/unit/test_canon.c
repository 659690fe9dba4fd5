/*
 * canon: the names a sharded client's ring hashes must not depend on how a
 * URL spells a server, or two clients route one key to two servers and
 * both hold it. Also the INFO fields that identify the server behind a
 * connection. No server; the resolver is asked only about numeric
 * addresses and "localhost".
 */
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "canon.h"
#include "test.h"

/* rl__canon_host(host), which must be want. */
static void assert_host(const char *host, const char *want)
{
    char out[RL_CANON_MAX];

    memset(out, 'X', sizeof out);
    rl__canon_host(host, out, sizeof out);
    if (strcmp(out, want) != 0)
        test_fail_(__FILE__, __LINE__,
                   "host \"%s\" is named \"%s\", not \"%s\"", host, out, want);
}

void test_canon_loopback_spellings(void)
{
    /* The loopback host, however written: one name. */
    assert_host("127.0.0.1", RL_CANON_LOOPBACK);
    assert_host("::1", RL_CANON_LOOPBACK);
    assert_host("0:0:0:0:0:0:0:1", RL_CANON_LOOPBACK);
    assert_host("::ffff:127.0.0.1", RL_CANON_LOOPBACK);
    assert_host("localhost", RL_CANON_LOOPBACK);
    assert_host("LocalHost", RL_CANON_LOOPBACK);
    /* Another loopback address is another listener. */
    assert_host("127.0.0.2", "127.0.0.2");
}

void test_canon_numeric_and_names(void)
{
    char out[RL_CANON_MAX];

    assert_host("10.0.0.5", "10.0.0.5");
    assert_host("2001:0DB8:0:0::1", "2001:db8::1");
    assert_host("2001:db8::1", "2001:db8::1");
    /* Names are compared as DNS compares them, and are not replaced by
     * their addresses (which may change). */
    rl__canon_dns_name("Redis-1.Example.", out, sizeof out);
    ASSERT_EQ_STR(out, "redis-1.example");
    rl__canon_dns_name("redis-1.example", out, sizeof out);
    ASSERT_EQ_STR(out, "redis-1.example");
    rl__canon_dns_name(".", out, sizeof out);
    ASSERT_EQ_STR(out, ".");
    /* A short buffer truncates, never overflows. */
    rl__canon_dns_name("ABCDEF", out, 4);
    ASSERT_EQ_STR(out, "abc");
}

/* An addrinfo list of the n IPv4 or IPv6 literals in addrs. */
static struct addrinfo *resolved(const char *const *addrs, size_t n)
{
    struct addrinfo hints, *head = NULL, **tail = &head, *ai;
    size_t i;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    for (i = 0; i < n; i++) {
        ASSERT_EQ_INT(getaddrinfo(addrs[i], NULL, &hints, &ai), 0);
        *tail = ai;
        while (ai->ai_next != NULL)
            ai = ai->ai_next;
        tail = &ai->ai_next;
    }
    return head;
}

void test_canon_resolved_lists(void)
{
    static const char *const both[] = {"::1", "127.0.0.1"};
    static const char *const mixed[] = {"127.0.0.1", "10.0.0.5"};
    static const char *const lan[] = {"10.0.0.5"};
    struct addrinfo *ai;
    char out[RL_CANON_MAX] = "untouched";

    /* "localhost" as most systems resolve it: both families. */
    ai = resolved(both, 2);
    ASSERT_EQ_INT(rl__canon_addrs(ai, out, sizeof out), 1);
    ASSERT_EQ_STR(out, RL_CANON_LOOPBACK);
    freeaddrinfo(ai);
    /* A name that reaches the loopback and something else is kept. */
    snprintf(out, sizeof out, "untouched");
    ai = resolved(mixed, 2);
    ASSERT_EQ_INT(rl__canon_addrs(ai, out, sizeof out), 0);
    freeaddrinfo(ai);
    ai = resolved(lan, 1);
    ASSERT_EQ_INT(rl__canon_addrs(ai, out, sizeof out), 0);
    freeaddrinfo(ai);
    ASSERT_EQ_STR(out, "untouched");
    ASSERT_EQ_INT(rl__canon_addrs(NULL, out, sizeof out), 0);
}

void test_canon_full_names(void)
{
    char out[RL_CANON_MAX], dir[] = "/tmp/rl-canon.XXXXXX", link[96];
    char sock[96], want[RL_CANON_MAX];
    FILE *f;

    /* What earlier versions hashed for these spellings, so that their
     * clients route alike. */
    rl__canon_tcp(out, sizeof out, RL_CANON_LOOPBACK, 6379, 0);
    ASSERT_EQ_STR(out, "127.0.0.1:6379/0");
    rl__canon_tcp(out, sizeof out, "redis-1.example", 6380, 3);
    ASSERT_EQ_STR(out, "redis-1.example:6380/3");
    /* A unix socket whose server listens on a TCP port is that port on
     * the loopback host. */
    rl__canon_unix(out, sizeof out, "/no/such.sock", 7001, 2);
    ASSERT_EQ_STR(out, "127.0.0.1:7001/2");
    /* Otherwise its real path: a link to it is the same socket. */
    ASSERT(mkdtemp(dir) != NULL);
    snprintf(sock, sizeof sock, "%s/redis.sock", dir);
    snprintf(link, sizeof link, "%s/link.sock", dir);
    ASSERT((f = fopen(sock, "w")) != NULL);
    fclose(f);
    ASSERT_EQ_INT(symlink(sock, link), 0);
    ASSERT(realpath(sock, want) != NULL);
    strcat(want, "/0");
    rl__canon_unix(out, sizeof out, link, 0, 0);
    ASSERT_EQ_STR(out, want);
    /* A path that cannot be resolved is kept as written. */
    rl__canon_unix(out, sizeof out, "/no/such.sock", 0, 1);
    ASSERT_EQ_STR(out, "/no/such.sock/1");
    unlink(link);
    unlink(sock);
    rmdir(dir);
}

void test_canon_info_fields(void)
{
    static const char info[] =
        "# Server\r\nredis_version:7.0.15\r\nrun_id_x:no\r\n"
        "run_id:3f1e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f\r\n"
        "tcp_port:6379\r\nexecutable:/usr/bin/redis-server\r\nlast:1";
    char out[64], tiny[4];

    ASSERT_EQ_INT(
        rl__canon_info_field(info, strlen(info), "run_id", out, sizeof out), 0);
    ASSERT_EQ_STR(out, "3f1e0c2b9a8d7e6f5a4b3c2d1e0f9a8b7c6d5e4f");
    ASSERT_EQ_INT(
        rl__canon_info_field(info, strlen(info), "tcp_port", out, sizeof out),
        0);
    ASSERT_EQ_STR(out, "6379");
    /* The last line needs no line end. */
    ASSERT_EQ_INT(
        rl__canon_info_field(info, strlen(info), "last", out, sizeof out), 0);
    ASSERT_EQ_STR(out, "1");
    ASSERT_EQ_INT(
        rl__canon_info_field(info, strlen(info), "run", out, sizeof out), -1);
    ASSERT_EQ_INT(
        rl__canon_info_field(info, strlen(info), "Server", out, sizeof out),
        -1);
    ASSERT_EQ_INT(
        rl__canon_info_field(info, strlen(info), "tcp_port", tiny, sizeof tiny),
        -1);
    /* Only the first len bytes are read. */
    ASSERT_EQ_INT(
        rl__canon_info_field(info, 10, "redis_version", out, sizeof out), -1);
}
