/*
 * A private redis-server per test: a temp dir with a generated config
 * (loopback only, no persistence, a unix socket, a probed TCP port), a
 * PING-bounded start and a stop by pid. Several may run at once.
 *
 * Every function fails the calling test (test_fail_) on error, so tests
 * need not check results. Servers still running when the process that
 * started them exits are stopped by an atexit handler; the runner also
 * kills the test's process group, which the server belongs to.
 */
#ifndef TH_SERVER_H
#define TH_SERVER_H

#include <hiredis.h>
#include <stdint.h>
#include <sys/types.h>

#include "util.h"

typedef struct th_server_opts {
    /* The default user's password (requirepass). NULL: none. */
    const char *requirepass;
    /* An extra ACL user with every right, and its password. NULL: none. */
    const char *acl_user;
    const char *acl_pass;
    /* More configuration lines (TLS, say), appended as they are. */
    const char *extra_config;
    /* A cluster node: its bus port (cluster-port) is a free port picked
     * at each start attempt, as the server's own port is, so that one
     * taken between the pick and the bind is picked again. */
    int cluster_bus;
} th_server_opts;

typedef struct th_server {
    pid_t pid;
    /* Its entry in the exit list; cleanup.owner, the process that started
     * it, is the only one that stops it. */
    th_cleanup cleanup;
    int port;
    int paused;
    char dir[128];
    char sock[160];
    char unix_url[200];
    char tcp_url[64];
    char password[128]; /* requirepass, or "". */
} th_server;

/* Starts a server; opts may be NULL. The database is checked empty. On
 * Linux the server gets SIGKILL when the starting thread exits, so start
 * servers from a thread that outlives their use (normally the main one). */
th_server *th_server_start(const th_server_opts *opts);

/* Starts a replica of master (its configuration with extra added; NULL:
 * none) and waits, 10 s at most, for its first sync; the master is told
 * to start a sync at once (repl-diskless-sync-delay 0). */
th_server *th_replica_start(const th_server *master, const char *extra);

/* Stops the server (SIGTERM, then SIGKILL), removes its dir, frees s.
 * NULL is a no-op. */
void th_server_stop(th_server *s);

/* kill -9, and reaped: the server is gone, its sockets refuse. s must
 * still be passed to th_server_stop, which then only cleans up. */
void th_server_kill(th_server *s);

/* SIGSTOP / SIGCONT: the server keeps its sockets but does not answer. */
void th_server_pause(th_server *s);
void th_server_resume(th_server *s);

/* A new hiredis connection over the unix socket, authenticated as the
 * default user, with a 5 s timeout. Free with redisFree(). */
redisContext *th_server_redis(const th_server *s);

/* Whether c answers PING with PONG; frees c. NULL or a failed connection:
 * no. To see whether a process has come up. */
int th_redis_pong(redisContext *c);

/*
 * Runs a command; fails the test, naming the caller's file:line, on an I/O
 * error or (except th_cmd_raw) an error reply. Free replies with
 * freeReplyObject().
 */
#define th_cmd(c, ...) th_cmd_at_(__FILE__, __LINE__, 0, c, __VA_ARGS__)
#define th_cmd_raw(c, ...) th_cmd_at_(__FILE__, __LINE__, 1, c, __VA_ARGS__)
redisReply *th_cmd_at_(const char *file, int line, int raw, redisContext *c,
                       const char *fmt, ...);

/* A command whose reply must be an integer. */
#define th_cmd_int(c, ...) th_cmd_int_at_(__FILE__, __LINE__, c, __VA_ARGS__)
long long th_cmd_int_at_(const char *file, int line, redisContext *c,
                         const char *fmt, ...);

/* A command whose reply is a bulk string or nil: malloc'ed NUL-terminated
 * copy, or NULL for nil. *len gets the length when len is not NULL. */
#define th_cmd_str(c, len, ...)                                                \
    th_cmd_str_at_(__FILE__, __LINE__, c, len, __VA_ARGS__)
char *th_cmd_str_at_(const char *file, int line, redisContext *c, size_t *len,
                     const char *fmt, ...);

/* The number a key holds (GET), 0 when it does not exist. */
long long th_get_num(redisContext *c, const char *key);

/* One INFO commandstats snapshot. */
#define TH_CMDSTATS_MAX 256
typedef struct th_cmdstats {
    int n;
    struct {
        char name[64]; /* "set", "client|setname" */
        long long calls;
        long long failed; /* failed_calls (error replies), 0 before 7.0 */
    } e[TH_CMDSTATS_MAX];
} th_cmdstats;

void th_cmdstats_read(redisContext *c, th_cmdstats *out);

/* Calls of cmd in a snapshot; 0 when absent. */
long long th_cmdstats_calls(const th_cmdstats *st, const char *cmd);

/* INFO commandstats calls of cmd (lowercase, e.g. "evalsha"). */
long long th_server_calls(redisContext *c, const char *cmd);

/* The server's own compare-and-delete, by its COMMAND INFO (not by the
 * library's reading of HELLO): "delifeq" (Valkey 9.0+), "delex" (Redis
 * 8.4+), or NULL. Where it has one, an uncontended plain release is that
 * command, not a script (rl__request's native). */
const char *th_native_release(redisContext *c);

/* The library's scripts that ran to a reply that is no error, however
 * they were called (FCALL, EVALSHA, EVAL; a NOSCRIPT is not one), by INFO
 * commandstats. */
long long th_script_runs(redisContext *c);

/* The same, every call counted (errors, NOSCRIPT, "Function not found"
 * too): the scripts the library sent. */
long long th_script_calls(redisContext *c);

/* th_script_calls in a snapshot. */
long long th_cmdstats_scripts(const th_cmdstats *st);

/* SLOWLOG made a log of every command (up to 1024), emptied. */
void th_slowlog_all(redisContext *c);

/* How many calls of the library's script sc (FCALL of its function, or
 * EVALSHA of its SHA1; a refused one too) SLOWLOG holds since
 * th_slowlog_all; the key count of the latest into *nkeys. */
struct rl__script;
int th_slowlog_runs(redisContext *c, const struct rl__script *sc,
                    long long *nkeys);

/* SCRIPT LOAD of sc, so that its first EVALSHA (a build or a user
 * without Functions) meets no NOSCRIPT, which th_slowlog_runs would
 * count as a call. */
void th_script_load(redisContext *c, const struct rl__script *sc);

/*
 * MONITOR on its own connection: what other clients send, in order. Lines
 * from Lua scripts ("[0 lua]") are kept apart, so a test can count the
 * commands a client really sent (commandstats counts both).
 */
typedef struct th_monitor {
    redisContext *c;
} th_monitor;

#define TH_MONITOR_MAX 64
typedef struct th_monitor_log {
    int n;                        /* Commands sent by clients. */
    char cmd[TH_MONITOR_MAX][32]; /* Their names, lowercase. */
    int nlua;                     /* Commands run by scripts; not listed. */
} th_monitor_log;

void th_monitor_start(th_monitor *m, const th_server *s);

/* Ends the recording: sends a marker through r (an ECHO, not recorded) and
 * reads the monitor up to it. Closes the monitor. */
void th_monitor_stop(th_monitor *m, redisContext *r, th_monitor_log *log);

/* Polls (every 5 ms, at most timeout_ms) until key is gone. Returns 1 if it
 * went away, 0 on timeout. */
int th_wait_key_gone(redisContext *c, const void *key, size_t len,
                     int64_t timeout_ms);

/* Polls (every 2 ms) until key exists; fails the test after timeout_ms. */
#define th_wait_exists(c, key, timeout_ms)                                     \
    th_wait_exists_at_(__FILE__, __LINE__, c, key, timeout_ms)
void th_wait_exists_at_(const char *file, int line, redisContext *c,
                        const char *key, int64_t timeout_ms);

#endif
