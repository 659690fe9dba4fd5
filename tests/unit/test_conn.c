/*
 * conn: the protocol form of a command (rl__conn_format), byte for byte
 * what hiredis's own formatting gives, for binary words, empty ones,
 * lengths at each count of digits and commands longer than the stack
 * buffer the connection formats small ones in. No server.
 */
#include <stdlib.h>
#include <string.h>

#include "conn.h"
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
