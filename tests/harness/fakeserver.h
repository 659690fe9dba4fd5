/*
 * A misbehaving Redis double: a tiny RESP server in a forked process,
 * listening on a unix socket and on a loopback TCP port, that answers as a
 * test's rules say rather than as Redis would. It parses each request
 * (a RESP array of bulk strings, as hiredis sends) and replies with raw
 * bytes, so a test can send anything: wrong types, impossible lengths,
 * half a reply, one byte at a time, replies nobody asked for.
 *
 * Each connection is served by its own forked process, so a rule that
 * stalls one connection (FS_HANG, FS_SLOW) never stalls the next one. Both
 * die with the server (PR_SET_PDEATHSIG), and the runner kills the test's
 * process group anyway. Start servers from the test's main thread.
 */
#ifndef TH_FAKESERVER_H
#define TH_FAKESERVER_H

#include <stddef.h>
#include <sys/types.h>

/* What to do with a matched request. */
typedef enum fs_action {
    FS_REPLY = 0, /* send the reply at once and go on serving */
    FS_SLOW,      /* send the reply one byte every param ms, go on */
    FS_HANG,      /* send the reply, then never answer this connection */
    FS_CLOSE,     /* send the reply, then close the connection */
    FS_STREAM     /* send the reply, then param MiB of fill, repeated, as
                     fast as the client reads it, then hang */
} fs_action;

/*
 * One rule. The first rule that matches a request applies. Requests no rule
 * matches get Redis-like defaults: PING "+PONG", AUTH, SELECT and CLIENT
 * "+OK", anything else an "-ERR" naming the command.
 */
typedef struct fs_rule {
    const char *cmd;   /* command name, any case; NULL matches every one */
    const char *reply; /* raw bytes sent back (NUL-terminated), "" none */
    fs_action action;
    int param;        /* FS_SLOW: ms per byte; FS_STREAM: MiB of filler */
    int times;        /* applies to the first `times` matches only; 0: always */
    const char *fill; /* FS_STREAM: what is repeated; NULL: "x" */
} fs_rule;

/* Replies that never end (FS_STREAM): a length header, then fill as
 * fast as the client reads it: 64 MiB of a bulk string nobody will ever
 * need, or 8 MiB of array elements (4 bytes each on the wire, a reply
 * object each in memory). A client must stop reading long before that:
 * by its timeout, and with a bounded buffer. */
typedef struct fs_flood {
    const char *head, *fill;
    int mib;
} fs_flood;
#define FS_NFLOODS 2
extern const fs_flood fs_floods[FS_NFLOODS];

/* Shorthands: reply at once to every match, or to the first only. */
#define FS_ALWAYS(cmd, reply)                                                  \
    {                                                                          \
        (cmd), (reply), FS_REPLY, 0, 0, NULL                                   \
    }
#define FS_ONCE(cmd, reply)                                                    \
    {                                                                          \
        (cmd), (reply), FS_REPLY, 0, 1, NULL                                   \
    }

typedef struct fs_stats fs_stats; /* shared with the server process */

typedef struct fs_server {
    pid_t pid;
    int port;
    char dir[128];
    char sock[160];
    char unix_url[200];
    char tcp_url[64];
    fs_stats *stats;
} fs_server;

/* Starts a server with n rules and an optional greeting, sent on every
 * connection before any request. The server process works on its own
 * copy of the caller's memory, so rules and strings may live anywhere,
 * the stack included. Fails the test on error. */
fs_server *fs_start(const fs_rule *rules, size_t n, const char *greeting);

/* Kills the server and its connection processes, removes its directory
 * and frees s. NULL is a no-op. */
void fs_stop(fs_server *s);

/* Connections accepted so far. */
int fs_connections(const fs_server *s);

/* Requests received so far whose command is cmd (any case). Counted for
 * PING, AUTH, SELECT, SET, PTTL, EVALSHA, EVAL, SCRIPT and SCAN; other
 * names are counted together under "*". */
long fs_calls(const fs_server *s, const char *cmd);

#endif
