/* Shared pieces of the redislock command-line tool. The CLI uses only the
 * public header; nothing here is part of the library. */
#ifndef RL_CLI_H
#define RL_CLI_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>

#include "redislock.h"

/* Exit statuses. 1 is "not obtained" as in flock(1); the others follow
 * sysexits(3), so scripts can tell a busy lock from a broken setup. */
enum {
    CLI_EXIT_OK = 0,
    CLI_EXIT_NOT_OBTAINED = 1,
    CLI_EXIT_FREE = 1,
    CLI_EXIT_OTHER_OWNER = 2,
    CLI_EXIT_USAGE = 64,
    CLI_EXIT_UNAVAILABLE = 69,
    CLI_EXIT_SOFTWARE = 70,
    CLI_EXIT_LOST = 75,
    CLI_EXIT_NOPERM = 77
};

/* Options that every subcommand understands. */
typedef struct cli_global {
    const char *url; /* from -u, or NULL to consult the environment */
    /* SIGPIPE's disposition on entry. The CLI ignores SIGPIPE so that a
     * dropped Redis connection is an error rather than death; run's
     * command gets the original back. */
    struct sigaction sigpipe_orig;
} cli_global;

/*
 * A small getopt: short options (clustered or with an attached value),
 * long options ("--ttl 5s", "--ttl=5s") and "--". It stops at the first
 * operand, so a command's own options are never taken for ours.
 */
typedef struct cli_optdef {
    int id;               /* the short letter, or >= 256 for long-only */
    const char *longname; /* without the dashes; NULL for none */
    int has_arg;
} cli_optdef;

typedef struct cli_args {
    int argc;
    char **argv;
    int i;           /* the argument being looked at */
    int pos;         /* offset inside a cluster of short options, or 0 */
    const char *ctx; /* subcommand name for messages, or NULL */
} cli_args;

/* The id of --json, which has no short form. */
#define CLI_ID_JSON 256

/* Returns the next option's id, storing its value in *val; 0 when the
 * options end (a->i then indexes the first operand); -1 after printing a
 * usage error. defs ends with an entry whose id is 0. */
int cli_getopt(cli_args *a, const cli_optdef *defs, const char **val);

/* A buffer size for quoting user-supplied text in a message. */
#define CLI_QUOTE_MAX 256

/* Copies s into buf for a message: control bytes become '?' so that every
 * message stays on one line, and text that does not fit is cut with "...".
 * Returns buf. */
const char *cli_quote(const char *s, char *buf, size_t size);

/* A subcommand's options, defaults filled in. */
typedef struct cli_cmdopts {
    cli_global g;      /* with -u applied */
    int64_t ttl_ms;    /* -t; REDISLOCK_DEFAULT_TTL_MS */
    int64_t wait_ms;   /* -w, -n; REDISLOCK_WAIT_FOREVER */
    int conflict_code; /* -E; CLI_EXIT_NOT_OBTAINED */
    int json;          /* --json */
    int operand;       /* index in argv of the first operand */
} cli_cmdopts;

/* What cli_cmd_options() returns when the subcommand should go on. */
#define CLI_CONTINUE (-1)

/*
 * Parses the options of subcommand argv[0] that defs lists, then checks
 * that at least min_ops and at most max_ops operands follow (max_ops < 0:
 * no limit), naming the first missing one from names. Returns CLI_CONTINUE,
 * or the exit status after printing help or a usage error.
 */
int cli_cmd_options(int argc, char **argv, const cli_global *g,
                    const cli_optdef *defs, int min_ops, int max_ops,
                    const char *const *names, cli_cmdopts *o);

/* Prints "redislock: [ctx: ]<message>" as one line on stderr. */
void cli_err(const char *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* Prints a usage error and returns CLI_EXIT_USAGE. */
int cli_usage(const char *ctx, const char *fmt, ...)
#if defined(__GNUC__)
    __attribute__((format(printf, 2, 3)))
#endif
    ;

/* The exit status for a library error other than the lock outcomes. */
int cli_exit_for(redislock_err err);

/* A buffer size for redislock_errdetail() text. */
#define CLI_DETAIL_MAX 512

/* Copies redislock_errdetail() into buf like cli_quote(). Call it right
 * after the failing call: the library's text lasts until its next call. */
const char *cli_detail(char *buf, size_t size);

/* Prints "redislock: ctx: what: <message>[ (<detail>)]" for a library error
 * and returns cli_exit_for(err). Call it right after the failing call,
 * before the detail is overwritten. */
int cli_fail(const char *ctx, redislock_err err, const char *what);

/* Parses a TTL (> 0, at most REDISLOCK_TTL_MAX_MS) or prints why not and
 * returns CLI_EXIT_USAGE. */
int cli_parse_ttl(const char *ctx, const char *s, int64_t *ttl_ms);

/* Parses a wait (>= 0) like cli_parse_ttl. */
int cli_parse_wait(const char *ctx, const char *s, int64_t *wait_ms);

/* Parses an exit code 0..255 like cli_parse_ttl. */
int cli_parse_code(const char *ctx, const char *s, int *code);

/* Checks that key is usable on the command line: non-empty, short enough,
 * without control characters. Prints why not and returns CLI_EXIT_USAGE. */
int cli_check_key(const char *ctx, const char *key);

/*
 * Connects to the server from g (or the environment) and makes a handle
 * for key. timeout_ms > 0 overrides the connect and command timeouts.
 * Returns 0, or an exit status after printing the error.
 */
int cli_open(const char *ctx, const cli_global *g, const char *key,
             int64_t timeout_ms, redislock_client **c, redislock_lock **l);

/* Frees what cli_open made; NULLs are fine. */
void cli_close(redislock_client *c, redislock_lock *l);

/*
 * Acquires l for ttl_ms, waiting wait_ms (REDISLOCK_WAIT_FOREVER for no
 * limit). The signals in stop (blocked by the caller; may be NULL) end the
 * wait: *sig is then the signal's number, the result REDISLOCK_EHELD and
 * nothing is held; otherwise *sig is 0. On success *start_ms is
 * the CLOCK_MONOTONIC time before the request that took the lock, so the
 * lease lasts at least until *start_ms + ttl_ms.
 */
redislock_err cli_acquire(redislock_lock *l, int64_t ttl_ms, int64_t wait_ms,
                          const sigset_t *stop, int *sig, int64_t *start_ms);

/* Fills set with the signals that the CLI passes on to its command (HUP,
 * INT, QUIT, TERM, USR1, USR2), leaving out those ignored on entry: a
 * command started under nohup keeps ignoring SIGHUP, and so does the CLI. */
void cli_signal_set(sigset_t *set);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t cli_now_ms(void);

/* The subcommands. argv[0] is the subcommand name. */
int cli_cmd_run(int argc, char **argv, const cli_global *g);
int cli_cmd_acquire(int argc, char **argv, const cli_global *g);
int cli_cmd_release(int argc, char **argv, const cli_global *g);
int cli_cmd_extend(int argc, char **argv, const cli_global *g);
int cli_cmd_status(int argc, char **argv, const cli_global *g);

/* Prints the full help on stdout. */
void cli_print_help(void);

#endif
