/*
 * conn: the protocol form of a command (rl__conn_format), byte for byte
 * what hiredis's own formatting gives, for binary words, empty ones,
 * lengths at each count of digits and commands longer than the stack
 * buffer the connection formats small ones in; and the native
 * compare-and-delete a server's HELLO says it has. No server.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
#include "request.h"
#include "test.h"

/* rl__conn_format of argv against hiredis's redisFormatCommandArgv. */
static void same_as_hiredis(int argc, const char **argv, const size_t *lens)
{
    char *want = NULL, *got;
    int n = redisFormatCommandArgv(&want, argc, argv, lens);
    size_t room = rl__conn_format_room(argc, argv, lens), len;

    ASSERT_GT(n, 0);
    ASSERT_GE(room, n);
    got = malloc(room + 1);
    ASSERT(got != NULL);
    memset(got, 'X', room + 1);
    len = rl__conn_format(got, argc, argv, lens);
    ASSERT_EQ_INT(len, n);
    ASSERT_EQ_MEM(got, want, len);
    /* Not a byte past the length it gave. */
    ASSERT_EQ_INT(got[len], 'X');
    free(got);
    free(want);
}

void test_conn_format_like_hiredis(void)
{
    static const char *words[] = {"SET", "k", "", "a\r\nb", "c\0d"};
    static const size_t lens[] = {3, 1, 0, 4, 3};
    const char *argv[120];
    size_t big[120];
    char *longs[4];
    int i;

    same_as_hiredis(5, words, lens);
    /* C strings: the \0 word ends at its first byte. */
    same_as_hiredis(5, words, NULL);
    same_as_hiredis(1, words, NULL);
    /* Lengths of 9, 10, 99, 100, 999 and 100000 bytes, and 10 and more
     * words (two-digit counts). */
    for (i = 0; i < 4; i++) {
        static const size_t sizes[4] = {9, 99, 999, 100000};
        ASSERT((longs[i] = malloc(sizes[i] + 1)) != NULL);
        memset(longs[i], 'a' + i, sizes[i] + 1);
        argv[2 * i] = longs[i];
        big[2 * i] = sizes[i];
        argv[2 * i + 1] = longs[i];
        big[2 * i + 1] = sizes[i] + 1;
    }
    same_as_hiredis(8, argv, big);
    for (i = 0; i < 120; i++) {
        argv[i] = words[i % 4];
        big[i] = lens[i % 4];
    }
    same_as_hiredis(10, argv, big);
    same_as_hiredis(120, argv, big);
    for (i = 0; i < 4; i++)
        free(longs[i]);
}

/* A HELLO reply (RESP2: name, value pairs) naming server and version. */
static redisReply *hello(const char *server, const char *version)
{
    static redisReply k[2], v[2], *el[4];
    static redisReply r;

    k[0] = (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)"server"};
    v[0] = (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)server};
    k[1] = (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)"version"};
    v[1] = (redisReply){.type = REDIS_REPLY_STRING, .str = (char *)version};
    el[0] = &k[0], el[1] = &v[0], el[2] = &k[1], el[3] = &v[1];
    r = (redisReply){.type = REDIS_REPLY_ARRAY, .elements = 4, .element = el};
    return &r;
}

/*
 * rl__request_caps: the native compare-and-delete a server offers, by
 * HELLO's name and version: DELIFEQ from Valkey 9.0, DELEX from Redis
 * 8.4, nothing before them, for other servers, or without a HELLO.
 */
void test_conn_native_caps_by_version(void)
{
    redisReply err = {.type = REDIS_REPLY_ERROR, .str = (char *)"ERR unknown"};

    ASSERT_EQ_INT(rl__request_caps(hello("valkey", "9.0.0")), RL_CAP_DELIFEQ);
    ASSERT_EQ_INT(rl__request_caps(hello("valkey", "9.1.2")), RL_CAP_DELIFEQ);
    ASSERT_EQ_INT(rl__request_caps(hello("valkey", "10.0.1")), RL_CAP_DELIFEQ);
    ASSERT_EQ_INT(rl__request_caps(hello("valkey", "8.1.1")), RL_CAP_NONE);
    ASSERT_EQ_INT(rl__request_caps(hello("redis", "8.4.0")), RL_CAP_DELEX);
    ASSERT_EQ_INT(rl__request_caps(hello("redis", "8.6.3")), RL_CAP_DELEX);
    ASSERT_EQ_INT(rl__request_caps(hello("redis", "9.0.0")), RL_CAP_DELEX);
    ASSERT_EQ_INT(rl__request_caps(hello("redis", "8.2.1")), RL_CAP_NONE);
    ASSERT_EQ_INT(rl__request_caps(hello("redis", "7.0.15")), RL_CAP_NONE);
    /* Valkey under its Redis-compatible name says 7.2.4. */
    ASSERT_EQ_INT(rl__request_caps(hello("redis", "7.2.4")), RL_CAP_NONE);
    ASSERT_EQ_INT(rl__request_caps(hello("keydb", "9.0.0")), RL_CAP_NONE);
    ASSERT_EQ_INT(rl__request_caps(hello("valkey", "x")), RL_CAP_NONE);
    ASSERT_EQ_INT(rl__request_caps(&err), RL_CAP_NONE);
    ASSERT_EQ_INT(rl__request_caps(NULL), RL_CAP_NONE);
}
