/*
 * The guardian of run's command: a small process, forked by run before
 * the command and the command's parent, that kills the command's whole
 * process group, and what the command started that left the group, when
 * run dies (however: SIGKILL included) or when the lease's known validity
 * ends without a newer one from run (run stopped or stuck). See the
 * "COMMAND LIFETIME" section of redislock(1).
 */
#ifndef RL_CLI_GUARD_H
#define RL_CLI_GUARD_H

#include <signal.h>
#include <stdint.h>
#include <sys/types.h>

/* What the guardian needs to start the command. */
typedef struct cli_guard_spawn {
    char **cmd;
    /* The lease's validity end, in ms on CLOCK_MONOTONIC (system-wide, so
     * the two processes agree on it). */
    int64_t deadline_ms;
    /* What run changed for itself, restored for the command. */
    sigset_t mask;
    struct sigaction sigpipe, sigchld;
    /* The controlling terminal, to give the command's process group, or
     * -1 to leave it alone. */
    int tty;
} cli_guard_spawn;

/* The guardian as run sees it. */
typedef struct cli_guard {
    pid_t pid; /* the guardian's pid, or -1 */
    int fd;    /* run's end of the socket pair, or -1 */
    void *map; /* the guardian's memory (guard.c), or NULL */
    size_t map_len;
} cli_guard;

/* The messages on the socket pair. */
enum {
    /* run to the guardian. */
    CLI_GUARD_DEADLINE = 1, /* val: the new validity end */
    CLI_GUARD_SIGNAL,       /* arg: a signal; val: 1 for the whole group */
    /* The guardian to run. */
    CLI_GUARD_STARTED, /* val: the command's pid, also its group */
    CLI_GUARD_FAILED,  /* arg: errno; val: 1 exec failed, 0 fork did */
    CLI_GUARD_STOPPED, /* arg: the signal that stopped the command */
    CLI_GUARD_EXITED   /* arg: wait status; val: 1 if killed at deadline */
};

typedef struct cli_guard_msg {
    int32_t type;
    int32_t arg;
    int64_t val;
} cli_guard_msg;

/* Starts the guardian, which starts s->cmd. The caller must be single-
 * threaded. Returns 0, or an errno value. */
int cli_guard_start(cli_guard *g, const cli_guard_spawn *s);

/* Sends one message to the guardian. Returns 0, or -1 once it is gone. */
int cli_guard_send(const cli_guard *g, int type, int arg, int64_t val);

/* Reads one message: 1, or 0 when the guardian is gone. */
int cli_guard_recv(const cli_guard *g, cli_guard_msg *m);

/* Closes run's end, which makes a guardian still running kill what is
 * left of the command, and reaps the guardian. */
void cli_guard_end(cli_guard *g);

#endif
