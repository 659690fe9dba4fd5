/*
 * guard: the socket between run and its guardian (cli/guard.c, built into
 * the tests). The guardian's last message must
 * reach run even when the guardian exits with one of run's messages
 * unread, which makes Linux reset the socket and report the reset before
 * the messages waiting behind it.
 */
#include <sys/socket.h>
#include <unistd.h>

#include "guard.h"
#include "test.h"

void test_guard_last_word_survives_reset(void)
{
    cli_guard g = {-1, -1, NULL, 0};
    cli_guard_msg m = {CLI_GUARD_EXITED, 0, 1}, got = {0, 0, 0};
    int sv[2];

    ASSERT(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == 0);
    /* The guardian reports the command's end... */
    ASSERT(send(sv[1], &m, sizeof m, 0) == (ssize_t)sizeof m);
    /* ...while run's renewal is on its way, and exits unread. */
    m.type = CLI_GUARD_DEADLINE;
    ASSERT(send(sv[0], &m, sizeof m, 0) == (ssize_t)sizeof m);
    close(sv[1]);
    g.fd = sv[0];
    ASSERT_EQ_INT(cli_guard_recv(&g, &got), 1);
    ASSERT_EQ_INT(got.type, CLI_GUARD_EXITED);
    ASSERT_EQ_INT(got.val, 1);
    /* Then the guardian is gone. */
    ASSERT_EQ_INT(cli_guard_recv(&g, &got), 0);
    close(sv[0]);
}
