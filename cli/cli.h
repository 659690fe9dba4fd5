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
    /* The key is in use as another kind of lock than the one asked for:
     * the command line is valid, the data in Redis does not fit it. */
    CLI_EXIT_KIND = 65,
    CLI_EXIT_UNAVAILABLE = 69,
    CLI_EXIT_SOFTWARE = 70,
    CLI_EXIT_LOST = 75,
    CLI_EXIT_NOPERM = 77,
    CLI_EXIT_CONFIG = 78
};

/* The most -u options one command line may give. */
#define CLI_URLS_MAX 64

/* The ids of the options that have no short form. */
enum {
    CLI_ID_JSON = 256,
    CLI_ID_PREFIX,
    CLI_ID_SHARD,
    CLI_ID_REDLOCK,
    CLI_ID_CLUSTER,
    CLI_ID_SENTINEL,
    CLI_ID_OWNER,
    CLI_ID_METADATA,
    CLI_ID_FAIL_FAST,
    CLI_ID_RETRY,
    CLI_ID_RETRY_DELAY,
    CLI_ID_RETRY_MAX_DELAY,
    CLI_ID_MAX_ATTEMPTS,
    CLI_ID_HOLD_AFTER,
    CLI_ID_FAIR,
    CLI_ID_LIMIT,
    CLI_ID_PASSWORD_FILE,
    CLI_ID_VERBOSE,
    CLI_ID_CONNECT_TIMEOUT,
    CLI_ID_COMMAND_TIMEOUT,
    CLI_ID_ALL,
    CLI_ID_WAIT_REPLICAS,
    CLI_ID_WAIT_REPLICAS_TIMEOUT,
    CLI_ID_WAIT_REPLICAS_LENIENT,
    CLI_ID_WAIT_AOF_LOCAL,
    CLI_ID_WAIT_AOF_REPLICAS,
    CLI_ID_TLS,
    CLI_ID_CACERT,
    CLI_ID_CACERTDIR,
    CLI_ID_CERT,
    CLI_ID_TLS_KEY,
    CLI_ID_SNI,
    CLI_ID_INSECURE,
    CLI_ID_STRICT,
    CLI_ID_CLOCK,
    CLI_ID_LOCK_DELAY,
    CLI_ID_REASON,
    CLI_ID_SEQUENCER,
    CLI_ID_VALUE,
    CLI_ID_WATCH,
    CLI_ID_END /* one past the last id */
};

/* Options that every subcommand understands. */
typedef struct cli_global {
    /* From -u, in order; none: consult the environment. */
    const char *urls[CLI_URLS_MAX];
    size_t nurls;
    /* How several URLs are used: --shard (each key on one server),
     * --redlock (a majority of independent servers), --cluster (seed
     * nodes of a Redis Cluster). At most one is set. */
    int shard;
    int redlock;
    int cluster;
    /* --sentinel NAME: the URLs are sentinels, which name the master of
     * NAME; NULL: not given. */
    const char *sentinel;
    const char *prefix; /* --prefix, or NULL */
    /* --password-file's name, and the password read from it (owned, wiped
     * by cli_drop_password()); NULL: the URL's or the environment's. */
    const char *password_file;
    char *password;
    /* --connect-timeout, --command-timeout; 0: not given. */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
    /* $REDISLOCK_CONNECT_TIMEOUT, $REDISLOCK_COMMAND_TIMEOUT; 0: unset. */
    int64_t env_connect_timeout_ms;
    int64_t env_command_timeout_ms;
    /* The library's durability guards (redislock_options), which run,
     * acquire and extend ask for: --wait-replicas N,
     * --wait-replicas-timeout, --wait-replicas-lenient, --wait-aof-local
     * and --wait-aof-replicas N; 0: off, or the library's default. */
    int wait_replicas;
    int64_t wait_replicas_timeout_ms;
    int wait_replicas_lenient;
    int wait_aof_local;
    int wait_aof_replicas;
    /* --strict: the client refuses servers whose configuration can lose
     * a lock (redislock_options.strict). */
    int strict;
    /* TLS, redis-cli's options: --tls (redis:// URLs become rediss://),
     * --cacert, --cacertdir, --cert, --tls-key, --sni, --insecure; NULL
     * or 0: not given. */
    int tls;
    const char *cacert;
    const char *cacertdir;
    const char *cert;
    const char *tls_key;
    const char *sni;
    int insecure;
    /* Which options the command line has given so far, by id, before
     * the command and after it (cli_note_option): nonzero once given. */
    unsigned char given[CLI_ID_END];
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

/* Returns the next option's id, storing its value in *val; 0 when the
 * options end (a->i then indexes the first operand); -1 after printing a
 * usage error. defs ends with an entry whose id is 0. */
int cli_getopt(cli_args *a, const cli_optdef *defs, const char **val);

/*
 * Records that option id (of defs) was given, in g->given. An option that
 * takes a value may be given once: a second time is a usage error naming
 * it, as a repeat is a mistake more often than an override (two --limit
 * values are two semaphores). -u and -k add one URL or key each time.
 * Options without a value may repeat, and -s and -x (which one wins) are
 * the caller's; but -n and -w both set the wait and exclude each other.
 * Returns 0, or CLI_EXIT_USAGE after the message.
 */
int cli_note_option(const char *ctx, cli_global *g, const cli_optdef *defs,
                    int id);

/* A buffer size for quoting user-supplied text in a message. */
#define CLI_QUOTE_MAX 256

/* Copies s into buf for a message: control bytes become '?' so that every
 * message stays on one line, and text that does not fit is cut with "...".
 * Returns buf. */
const char *cli_quote(const char *s, char *buf, size_t size);

/* Where a client's events go (redislock_options.on_event_arg): it must
 * outlive the client. */
typedef struct cli_events {
    const char *ctx; /* the subcommand's name, for messages */
    int verbose;     /* each pause of a wait and each renewal on stderr */
    /* > 2: a descriptor (a non-blocking pipe) written one byte at each
     * renewal, the watchdog's included, so that run's guardian follows
     * the lease the library holds; 0: none. */
    int renewed_fd;
} cli_events;

/* A subcommand's options, defaults filled in. */
typedef struct cli_cmdopts {
    cli_global g; /* with -u applied */
    /* What acquire and run ask the library for: ttl_ms (-t, default
     * REDISLOCK_DEFAULT_TTL_MS), wait_ms (-w, -n; default
     * REDISLOCK_WAIT_FOREVER), the retry settings, fail_fast, owner
     * (--owner, which also sets reentrant), metadata, limit (--limit)
     * and shared (-s; -x clears it, the last of them winning as in
     * flock(1)). release and extend read ttl_ms and owner. */
    redislock_acquire_options acq;
    int64_t hold_after_ms; /* --hold-after; 0 */
    const char *command;   /* run -c: a string for sh -c; NULL */
    const char *reason;    /* revoke --reason; NULL */
    int sequencer;         /* run, acquire --sequencer */
    int elect;             /* elect: run's lock taken by a campaign */
    const char *value;     /* elect --value: the leader's value; NULL */
    int watch;             /* leader --watch */
    int conflict_code;     /* -E; CLI_EXIT_NOT_OBTAINED */
    int json;              /* --json */
    int64_t clock_ms;      /* doctor --clock; 1000 */
    int all;               /* list --all: keys that are not locks too */
    int verbose;           /* --verbose: say what happens on stderr */
    cli_events ev;         /* the client's events: --verbose, run's pipe */
    int operand;           /* index in argv of the first operand */
    /* -k/--key: the set's further keys, after the KEY operand (run,
     * acquire, release, extend take them all or none). */
    const char *keys[REDISLOCK_SET_MAX];
    int nkeys;
} cli_cmdopts;

/* Entries of a cli_optdef table: those of every subcommand, and those of
 * the subcommands that take a lock (acquire, run). */
/* clang-format off */
#define CLI_OPTS_COMMON                                                       \
    {'u', "url", 1}, {'h', "help", 0},                                        \
    {CLI_ID_CONNECT_TIMEOUT, "connect-timeout", 1},                           \
    {CLI_ID_COMMAND_TIMEOUT, "command-timeout", 1}, CLI_OPTS_TLS
/* TLS (cli_global's tls and what follows it), redis-cli's names but
 * --tls-key: --key is a set's key (-k). */
#define CLI_OPTS_TLS                                                          \
    {CLI_ID_TLS, "tls", 0}, {CLI_ID_CACERT, "cacert", 1},                     \
    {CLI_ID_CACERTDIR, "cacertdir", 1}, {CLI_ID_CERT, "cert", 1},             \
    {CLI_ID_TLS_KEY, "tls-key", 1}, {CLI_ID_SNI, "sni", 1},                   \
    {CLI_ID_INSECURE, "insecure", 0}
#define CLI_OPTS_TAKE                                                         \
    {'t', "ttl", 1}, {'w', "wait", 1}, {'w', "timeout", 1},                   \
    {'n', "nonblock", 0}, {'n', "no-wait", 0},                                \
    {'E', "conflict-exit-code", 1},                                           \
    {CLI_ID_OWNER, "owner", 1}, {CLI_ID_METADATA, "metadata", 1},             \
    {CLI_ID_FAIL_FAST, "fail-fast", 0}, {CLI_ID_RETRY, "retry", 1},           \
    {CLI_ID_RETRY_DELAY, "retry-delay", 1},                                   \
    {CLI_ID_RETRY_MAX_DELAY, "retry-max-delay", 1},                           \
    {CLI_ID_MAX_ATTEMPTS, "max-attempts", 1}, {CLI_ID_FAIR, "fair", 0},       \
    {CLI_ID_VERBOSE, "verbose", 0}, {'s', "shared", 0},                       \
    {'x', "exclusive", 0}, {'k', "key", 1},                                   \
    {CLI_ID_LOCK_DELAY, "lock-delay", 1},                                  \
    {CLI_ID_SEQUENCER, "sequencer", 0}
/* The options of the subcommands that write a lease (run, acquire,
 * extend): the library's replica-sync and WAITAOF guards. */
#define CLI_OPTS_GUARDS                                                       \
    {CLI_ID_WAIT_REPLICAS, "wait-replicas", 1},                               \
    {CLI_ID_WAIT_REPLICAS_TIMEOUT, "wait-replicas-timeout", 1},               \
    {CLI_ID_WAIT_REPLICAS_LENIENT, "wait-replicas-lenient", 0},               \
    {CLI_ID_WAIT_AOF_LOCAL, "wait-aof-local", 0},                             \
    {CLI_ID_WAIT_AOF_REPLICAS, "wait-aof-replicas", 1},                       \
    {CLI_ID_STRICT, "strict", 0}
/* clang-format on */

/* Refuses, as a usage error naming the clash, the options that a share
 * of a lock (-s) cannot have: --limit, --owner, --metadata, --fair and
 * --hold-after. Returns 0 when there is none, or without -s. Called
 * before anything connects, so a refused command writes nothing. */
int cli_check_shared(const char *ctx, const cli_cmdopts *o);

/* The same for a set of keys (-k): --limit, -s, --owner, --metadata,
 * --fair and --hold-after are for one key; and each key must be a key
 * (cli_check_key). */
int cli_check_set(const char *ctx, const cli_cmdopts *o);

/* Who holds l's key now, for a message, read with one more request:
 * "held by owner 'ID' (its lease ends in N ms, metadata 'TEXT')", "it is
 * free now", a semaphore's or a shared lock's holders, a key another
 * tool wrote, or why it cannot be told. It may change at once. Returns
 * 1 when the key is held, 0 when free, -1 when it cannot be told. */
int cli_holder_text(redislock_lock *l, char *buf, size_t size);

/* With --wait-replicas-lenient, after an acquire or extend that fewer
 * replicas (or append-only files) confirmed than the guards ask for: a
 * warning on stderr naming how many did. */
void cli_warn_guards(const char *ctx, redislock_lock *l, const cli_global *g);

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

/* cli_fail with the detail copied before (by cli_detail), for a caller
 * that makes another library call first. */
int cli_fail_with(const char *ctx, redislock_err err, const char *what,
                  const char *detail);

/* Parses a TTL (> 0, at most REDISLOCK_TTL_MAX_MS) or prints why not and
 * returns CLI_EXIT_USAGE. */
int cli_parse_ttl(const char *ctx, const char *s, int64_t *ttl_ms);

/* Parses a wait (>= 0) like cli_parse_ttl. */
int cli_parse_wait(const char *ctx, const char *s, int64_t *wait_ms);

/* Parses a positive delay (what name calls it in messages) like
 * cli_parse_ttl. */
int cli_parse_delay(const char *ctx, const char *name, const char *s,
                    int64_t *ms);

/* Parses a hold-after time (>= 0) like cli_parse_ttl. */
int cli_parse_hold(const char *ctx, const char *s, int64_t *ms);

/* Parses a duration >= 0 (what name calls it in messages) like
 * cli_parse_ttl. */
int cli_parse_span(const char *ctx, const char *name, const char *s,
                   int64_t *ms);

/* The longest connect or command timeout the CLI takes: one day. */
#define CLI_TIMEOUT_MAX_MS (24LL * 3600 * 1000)

/* Parses a connect or command timeout (what name calls it in messages;
 * > 0, at most CLI_TIMEOUT_MAX_MS) like cli_parse_ttl. */
int cli_parse_timeout(const char *ctx, const char *name, const char *s,
                      int64_t *ms);

/* Applies a global option that may also follow the subcommand: -u,
 * --connect-timeout, --command-timeout. Returns 0, CLI_EXIT_USAGE after a
 * message, or CLI_CONTINUE when id is none of them. */
int cli_global_option(const char *ctx, cli_global *g, int id, const char *val);

/* Reads $REDISLOCK_CONNECT_TIMEOUT and $REDISLOCK_COMMAND_TIMEOUT into g
 * (empty: unset). Returns 0, or CLI_EXIT_USAGE after a message that names
 * the variable. */
int cli_load_env(cli_global *g);

/*
 * Sets o's timeouts from g: each is --connect-timeout or
 * --command-timeout, else the one the Redis URL's query sets (left to the
 * library), else the environment's, else the library's default; with
 * cap_ms > 0, none is longer than cap_ms. Returns the longer of the two
 * timeouts that apply.
 */
int64_t cli_set_timeouts(const cli_global *g, int64_t cap_ms,
                         redislock_options *o);

/* Parses an exit code 0..255 like cli_parse_ttl. */
int cli_parse_code(const char *ctx, const char *s, int *code);

/* Parses the value of option name (for messages) as a whole number from
 * 1 to max, like cli_parse_ttl. */
int cli_parse_count(const char *ctx, const char *name, const char *s, int max,
                    int *n);

/* Checks that key is usable on the command line: non-empty, short enough,
 * without control characters. Prints why not and returns CLI_EXIT_USAGE. */
int cli_check_key(const char *ctx, const char *key);

/* Checks a token or owner id (what names it in messages) like
 * cli_check_key: non-empty, without control characters. */
int cli_check_token(const char *ctx, const char *what, const char *token);

/* Checks a leader's value (elect --value) as the library will: at most
 * REDISLOCK_ELECT_VALUE_MAX bytes of printable ASCII, so that a refused
 * one is a usage error before anything connects. */
int cli_check_value(const char *ctx, const char *value);

/* Adds url to g's list for -u, or prints why not and returns
 * CLI_EXIT_USAGE. */
int cli_add_url(const char *ctx, cli_global *g, const char *url);

/*
 * Connects to the server or, with --shard, the servers from g (or the
 * environment), with the timeouts of cli_set_timeouts(g, cap_ms). The
 * client's events go to cli_on_event with ev (NULL: none). Returns 0, or
 * an exit status after printing the error.
 */
int cli_connect(const char *ctx, const cli_global *g, int64_t cap_ms,
                const cli_events *ev, redislock_client **c);

/* The client's event callback (redislock_options.on_event; arg: a
 * cli_events): with verbose, each pause of a wait, with the holder's
 * lease, and each renewal, on stderr; each renewal wakes renewed_fd. */
void cli_on_event(const redislock_event *ev, void *arg);

/* The longest password --password-file takes, in bytes. */
#define CLI_PASSWORD_MAX 4096

/* Reads g->password from the first line of g->password_file ("-":
 * standard input), if one was given. Returns 0, or CLI_EXIT_USAGE after a
 * message that names the file (never what is in it). */
int cli_load_password(cli_global *g);

/* Wipes and frees g->password. */
void cli_drop_password(cli_global *g);

/* Removes from the environment the passwords the CLI may have read there,
 * so that run's command does not inherit them: REDISCLI_AUTH, and the
 * Redis URL variable that was used (no -u) if it holds credentials. Call
 * it once the client is made: the library keeps its own copies. */
void cli_scrub_env(const cli_global *g);

/* cli_connect, then a handle for key, or with o's -k keys (o may be NULL)
 * for the set of key and those. */
int cli_open(const char *ctx, const cli_global *g, const char *key,
             const cli_cmdopts *o, int64_t cap_ms, redislock_client **c,
             redislock_lock **l);

/* Frees what cli_open made; NULLs are fine. */
void cli_close(redislock_client *c, redislock_lock *l);

/*
 * Takes the lock with o->acq: one redislock_acquire() call, so that the
 * retry strategy, the attempt cap and fail-fast see the whole wait. The
 * signals in stop (blocked by the caller; may be NULL) end the wait, and
 * nothing is then held. Returns nonzero with the lock held (*rc is then
 * 0). Otherwise returns 0 with the exit status in *rc: 128+N after signal
 * N; o->conflict_code when the lock is not obtained (0 is a valid choice,
 * so only the return value says whether it is held), silently as in
 * flock(1) unless o->verbose; or another exit status after a message.
 * With o->verbose it also says what it waits for, who holds the lock and
 * how the wait ended.
 */
int cli_take(const char *ctx, redislock_lock *l, const cli_cmdopts *o,
             const sigset_t *stop, int *rc);

/* Fills set with the signals that the CLI passes on to its command (HUP,
 * INT, QUIT, TERM, USR1, USR2), leaving out those ignored on entry: a
 * command started under nohup keeps ignoring SIGHUP, and so does the CLI. */
void cli_signal_set(sigset_t *set);

/* Milliseconds on CLOCK_MONOTONIC. */
int64_t cli_now_ms(void);

/*
 * Prints one lock's state: with_key as a line of list ("KEY ttl_ms=N
 * ..."), otherwise as status's line ("held ttl_ms=N ..." or "free"); with
 * json, as a JSON object and no newline. key (keylen bytes) is the key
 * without the prefix.
 */
void cli_print_lock(const char *key, size_t keylen, const redislock_info *info,
                    int json, int with_key);

/* Whether info is a key held by a foreign owner: one that exists but
 * holds no lock redislock can read (another tool's value, a list, a hash
 * not ours). acquire finds it held; info->metadata is its Redis type. */
int cli_foreign(const redislock_info *info);

/* The subcommands. argv[0] is the subcommand name. */
int cli_cmd_run(int argc, char **argv, const cli_global *g);
int cli_cmd_acquire(int argc, char **argv, const cli_global *g);
int cli_cmd_release(int argc, char **argv, const cli_global *g);
int cli_cmd_extend(int argc, char **argv, const cli_global *g);
int cli_cmd_status(int argc, char **argv, const cli_global *g);
int cli_cmd_list(int argc, char **argv, const cli_global *g);
int cli_cmd_doctor(int argc, char **argv, const cli_global *g);
int cli_cmd_revoke(int argc, char **argv, const cli_global *g);
int cli_cmd_check(int argc, char **argv, const cli_global *g);
int cli_cmd_elect(int argc, char **argv, const cli_global *g);
int cli_cmd_leader(int argc, char **argv, const cli_global *g);

/* Prints an election's state (redislock_leader: "leader id=ID term=T
 * value=V ttl_ms=N" or "none") or, with change, the change observe
 * reported ("KIND n=N term=T ..."); with json, as a JSON object and no
 * newline. */
void cli_print_leader(const redislock_leader_info *s, int json, int change);

/* l's sequencer (redislock_sequencer) into buf, of at least
 * REDISLOCK_SEQUENCER_MAX bytes: 0, or an exit status after a message. */
int cli_sequencer(const char *ctx, redislock_lock *l, char *buf);

/* Prints one finding of redislock_doctor(): two lines ("SERVER: NAME:
 * WHAT" and "  fix: FIX"), or with json a JSON object and no newline. */
void cli_print_finding(const redislock_finding *f, int json);

/* Prints the overview (--help, help) on stdout: the commands, one line
 * each, the global options and the exit statuses. */
void cli_print_help(void);

/* Prints command name's usage and options on stdout (help COMMAND,
 * COMMAND --help). Returns 0, or -1 without printing anything when there
 * is no such command. */
int cli_print_command_help(const char *name);

#endif
