/* Small helpers shared by the runner, the harness and the tests. */
#ifndef TH_UTIL_H
#define TH_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

/* Milliseconds on CLOCK_MONOTONIC, independent of the library's clock. */
int64_t th_now_ms(void);

/* Microseconds on CLOCK_MONOTONIC. */
int64_t th_now_us(void);

/* A random test's seed: the environment variable var when set (to replay
 * a run), else one from the clock; logged with how to replay it. */
uint64_t th_seed(const char *var);

/* Joins thread t within ms, or fails the test. */
#define th_join_within(t, ms) th_join_within_at_(__FILE__, __LINE__, t, ms)
void th_join_within_at_(const char *file, int line, pthread_t t, int64_t ms);

/* Sleeps ms milliseconds, resuming after signals. */
void th_sleep_ms(int64_t ms);

/* Polls cond every 5 ms for at most ms, then fails the test (test.h's
 * test_fail_) naming it. */
#define WAIT_FOR(cond, ms)                                                     \
    do {                                                                       \
        int64_t wait_end_ = th_now_ms() + (ms);                                \
        while (!(cond)) {                                                      \
            if (th_now_ms() >= wait_end_)                                      \
                test_fail_(__FILE__, __LINE__, "timed out waiting for %s",     \
                           #cond);                                             \
            th_sleep_ms(5);                                                    \
        }                                                                      \
    } while (0)

/* The threads of this process now (/proc/self/task); -1 when unknown. */
int th_threads(void);

/* qsort's comparison of int64_t values, ascending. */
int th_cmp_i64(const void *a, const void *b);

/* Whether a plain lock's value names token as its holder: the token, or
 * a token of the native prefix that a waiter has marked ("+w";
 * rl_mark_holder in lua/lib.lua). */
int th_value_is_token(const char *value, const char *token);

/* Asserts th_value_is_token(value, token), naming both when it fails. */
#define ASSERT_VALUE_IS_TOKEN(value, token)                                    \
    th_assert_value_is_token_at_(__FILE__, __LINE__, value, token)
void th_assert_value_is_token_at_(const char *file, int line, const char *value,
                                  const char *token);

/* $TMPDIR when set and short enough for a unix socket path, else /tmp. */
const char *th_tmpdir(void);

/* Creates a fresh directory th_tmpdir()/<prefix>.XXXXXX; malloc'ed path,
 * or NULL with errno. */
char *th_mkdtemp(const char *prefix);

/* Removes path and everything below it. Returns 0 or -1. */
int th_rmtree(const char *path);

/* A TCP port on 127.0.0.1 that nobody listened on a moment ago (bound with
 * port 0, then closed). Returns the port or -1. */
int th_free_port(void);

/* Finds an executable by name in $PATH; malloc'ed path, or NULL. */
char *th_which(const char *name);

/* Whether file dir/name contains needle (in its first 8 KiB). */
int th_file_contains(const char *dir, const char *name, const char *needle);

/* Copies the end (2 KiB) of file dir/name to stderr, under a header naming
 * it label, or dir/name when label is NULL; a missing file is skipped. To
 * explain a failure. */
void th_dump_file_end(const char *dir, const char *name, const char *label);

/* With RL_TEST_KEEP_LOGS set to a directory, copies dir/name there
 * before dir goes, as <test's TMPDIR name>.<dir's name>.log: a server's
 * redis.log (scripts/check-declared-keys.sh reads them), a sentinel's
 * sentinel.log (what the sentinels did in a failover a test saw). Off by
 * default. */
void th_keep_log(const char *dir, const char *name);

/* Waits up to ms for child pid to exit, then kills it (SIGKILL); reaped
 * either way. */
void th_reap(pid_t pid, int64_t ms);

/* How to start one kind of redis-server process: a server, a sentinel. */
typedef struct th_proc_kind {
    /* Its files in its dir: <name>.conf, written before each attempt,
     * <name>.log, its log (where a taken port shows), and <name>.stdout,
     * which gets its stdout and stderr. */
    const char *name;
    /* The variable naming its binary; else $REDIS_SERVER, else
     * redis-server from PATH. */
    const char *bin_env;
    /* An argument after the config file's path ("--sentinel"), or NULL. */
    const char *mode;
    /* Writes its config, for the port just probed, to f. */
    void (*configure)(void *obj, FILE *f);
    /* Whether it answers PING. */
    int (*ready)(void *obj);
} th_proc_kind;

/* Starts a process of kind k in dir and waits (5 s at most) until it is
 * ready, on a fresh port again (10 tries) while the port turns out taken.
 * The port and the pid go to *port and *pid as the start goes on, where
 * configure and ready find them through obj. Returns 0, or -1 with *pid 0
 * after saying why on stderr, where what names the process. On Linux the
 * process gets SIGKILL when the calling thread exits. */
int th_proc_start(const th_proc_kind *k, const char *what, const char *dir,
                  void *obj, int *port, pid_t *pid);

/*
 * Things to stop at exit (servers, sentinel setups) when the process that
 * registered them exits without stopping them. Each embeds its th_cleanup.
 * They are stopped newest first, and a forked worker, which inherits the
 * list, stops none of its parent's.
 */
typedef struct th_cleanup {
    /* Stops and frees obj; called with c off the list already. */
    void (*stop)(void *obj);
    void *obj;
    pid_t owner; /* The process that registered it; only it stops it. */
    struct th_cleanup *next;
} th_cleanup;

/* Registers c, to call stop(obj) at exit; c must live until removed. */
void th_cleanup_add(th_cleanup *c, void (*stop)(void *obj), void *obj);

/* Unregisters c; a no-op when it is not registered. owner stays. */
void th_cleanup_remove(th_cleanup *c);

#endif
