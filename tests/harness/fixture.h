/*
 * Shorthands for integration tests: library objects that fail the test
 * instead of returning errors, and checks of a lock key's state through a
 * separate hiredis connection.
 */
#ifndef TH_FIXTURE_H
#define TH_FIXTURE_H

#include <hiredis.h>
#include <pthread.h>
#include <stdint.h>

#include <redislock.h>

#include "server.h"

/* A client for url (opts may be NULL); a constructor that times out
 * (REDISLOCK_ETIMEDOUT: a short command timeout on a loaded box) is
 * tried again, 5 times at most. */
#define th_client_url(url, opts)                                               \
    th_client_url_at_(__FILE__, __LINE__, url, opts)
redislock_client *th_client_url_at_(const char *file, int line, const char *url,
                                    const redislock_options *opts);

/* A client on s's unix socket with default options. */
#define th_client(s) th_client_url_at_(__FILE__, __LINE__, (s)->unix_url, NULL)

/* A lock handle for the NUL-terminated key. */
#define th_lock(c, key) th_lock_at_(__FILE__, __LINE__, c, key)
redislock_lock *th_lock_at_(const char *file, int line, redislock_client *c,
                            const char *key);

/* A handle for the set of n NUL-terminated keys, taken all or none
 * (redislock_lock_new_multi). */
#define th_lock_set(c, keys, n) th_lock_set_at_(__FILE__, __LINE__, c, keys, n)
redislock_lock *th_lock_set_at_(const char *file, int line, redislock_client *c,
                                const char *const *keys, size_t n);

/* Acquire options with ttl_ms and wait_ms, and a retry delay. */
redislock_acquire_options th_aopts(int64_t ttl_ms, int64_t wait_ms,
                                   int64_t retry_delay_ms);

/* PTTL of key: ms left, -1 no expiry, -2 no key. */
/* A test's server, inspection connection and client, made and freed in
 * one call each. */
typedef struct th_env {
    th_server *s;
    redisContext *r;
    redislock_client *c;
} th_env;

th_env th_env_start(void);
void th_env_stop(th_env *e);

/* Several private servers at once (sharding, Redlock), each with an
 * inspection connection and its unix URL. */
#define TH_SERVERS_MAX 6
typedef struct th_servers {
    int n;
    th_server *s[TH_SERVERS_MAX];
    redisContext *r[TH_SERVERS_MAX]; /* NULL once killed */
    const char *urls[TH_SERVERS_MAX];
} th_servers;

th_servers th_servers_start(int n);

/* kill -9 of server i (see th_server_kill); its connection goes too. */
void th_servers_kill(th_servers *e, int i);

void th_servers_stop(th_servers *e);

/* How many of e's servers have key with value (a plain lock's token: a
 * Redlock lock's majority). */
int th_servers_holding(th_servers *e, const char *key, const char *value);

#define th_pttl(c, key) th_cmd_int(c, "PTTL %s", key)

/* The number of keys that are not the library's helper keys (wake lists,
 * fair queues, fencing counters: their names contain ":rl-"), by SCAN.
 * Helper keys expire on their own shortly after the lock's last use. */
long long th_lock_keys(redisContext *c);

/* Keys held by many (semaphores, locks held shared) on a sharded client
 * of three private servers: for each of n keys, two handles take a share
 * with o and a third is refused with x (REDISLOCK_EHELD). Each key's set
 * must be whole on one server (the two shares and the member mark that
 * names its kind), and the keys spread over the servers (logged). Once
 * the shares are released x takes each key; then only helper keys are
 * left. */
void th_sharded_shares(int n, const redislock_acquire_options *o,
                       const redislock_acquire_options *x, const char *mark);

/* On e's key, a share (a semaphore's permit, a reader's share) taken
 * with shortl (a lease of about 60 ms) beside one taken with longl (a
 * long one): once it has run out, whether a later acquire has pruned it
 * or it is still in the set, release and extend report
 * REDISLOCK_EEXPIRED, never success, and the set (ZCARD less its kind's
 * member) counts what it should. Leaves the key free. */
void th_share_expiry(th_env *e, const char *key,
                     const redislock_acquire_options *shortl,
                     const redislock_acquire_options *longl);

/* n worker processes: each runs worker(e's server, a seed of its own),
 * which ends the process with _exit(); returns once all have, asserting
 * that each exited 0. */
void th_run_workers(th_env *e, int n,
                    void (*worker)(const th_server *s, unsigned seed));

/* A holder to kill: a child process that takes the n keys (a set when
 * more than one) on e's server with o and waits for a signal. Returns its
 * pid once it holds; t gets th_now_ms() before and after its acquire. */
int th_start_holder(th_env *e, const char *const *keys, int n,
                    const redislock_acquire_options *o, int64_t t[2]);

/* A holder stopped past its lease: a child process that takes the keys on
 * e's server with o (a short lease), stops itself (SIGSTOP) and, once
 * resumed, writes "stale" to the fenced resource res with its token.
 * Returns once the child has stopped holding; th_resume_refused() then
 * resumes it and asserts that it saw the loss (redislock_check) and that
 * its write was refused (REDISLOCK_ESTALE). */
int th_start_stopped_holder(th_env *e, const char *const *keys, int n,
                            const redislock_acquire_options *o,
                            const char *res);
void th_resume_refused(int pid);

/* Fair waiters listening for a hand-off on channels matching pattern
 * (a lock's are "<key>{<key>}:rl-c:*"): PUBSUB CHANNELS, which lists
 * the channels with a subscriber. */
long long th_listening(redisContext *c, const char *pattern);

/* Clients with CLIENT LIST flag t (tracking on) whose last command was a
 * script: waiters or observers whose tracked read has run. */
int th_tracked_scripts(redisContext *c);

/* Clients whose CLIENT LIST flags hold flag (P a subscriber, t tracking
 * on). */
int th_clients_flagged(redisContext *c, char flag);

/* The scripts loaded into the server so far: FUNCTION LOAD and SCRIPT
 * LOAD calls (INFO commandstats). */
long long th_script_loads(redisContext *c);

/* Asserts that key holds exactly value (NULL: no such key), or value
 * with a waiter's mark ("+w") when it is a token of the native prefix. */
#define ASSERT_KEY(c, key, value)                                              \
    th_assert_key_at_(__FILE__, __LINE__, c, key, value)
void th_assert_key_at_(const char *file, int line, redisContext *c,
                       const char *key, const char *value);

/* Asserts that field of the hash at key holds value (NULL: absent). */
#define ASSERT_FIELD(c, key, field, value)                                     \
    th_assert_field_at_(__FILE__, __LINE__, c, key, field, value)
void th_assert_field_at_(const char *file, int line, redisContext *c,
                         const char *key, const char *field, const char *value);

/* Asserts that t is a plain lock's token: "rl1-" (or "rl2-", where the
 * server has a native compare-and-delete) and 32 lowercase hex digits. */
#define ASSERT_TOKEN(t) th_assert_token_at_(__FILE__, __LINE__, t, "rl1-")
/* Asserts that t is 32 lowercase hex digits (an owner id's random part). */
#define ASSERT_HEX32(t) th_assert_token_at_(__FILE__, __LINE__, t, "")
void th_assert_token_at_(const char *file, int line, const char *t,
                         const char *prefix);

/* An acquire on a thread of its own: th_waiter_start() fills l and o and
 * starts it; the outcome is read after th_waiter_join_ok(). */
typedef struct th_waiter {
    pthread_t t;
    redislock_lock *l;
    redislock_acquire_options o;
    redislock_err err;
    int64_t done_us; /* th_now_us() when the acquire returned */
    char token[300];
    char detail[256];
} th_waiter;

/* Starts an acquire of key with o on a new thread. */
#define th_waiter_start(w, c, key, o)                                          \
    th_waiter_start_at_(__FILE__, __LINE__, w, c, key, o)
void th_waiter_start_at_(const char *file, int line, th_waiter *w,
                         redislock_client *c, const char *key,
                         const redislock_acquire_options *o);

/* The same with a handle of the caller's (a set's), which it keeps. */
#define th_waiter_start_lock(w, l, o)                                          \
    th_waiter_start_lock_at_(__FILE__, __LINE__, w, l, o)
void th_waiter_start_lock_at_(const char *file, int line, th_waiter *w,
                              redislock_lock *l,
                              const redislock_acquire_options *o);

/* Joins the waiter within ms and asserts that it got the lock. */
#define th_waiter_join_ok(w, ms)                                               \
    th_waiter_join_ok_at_(__FILE__, __LINE__, w, ms)
void th_waiter_join_ok_at_(const char *file, int line, th_waiter *w,
                           int64_t ms);

/* A numeric field of an INFO section, e.g. ("clients", "blocked_clients");
 * fails the test when the section has no such field. */
#define th_info_field(r, section, field)                                       \
    th_info_field_at_(__FILE__, __LINE__, r, section, field)
long long th_info_field_at_(const char *file, int line, redisContext *r,
                            const char *section, const char *field);

/* Clients blocked in a blocking command (BLPOP). */
#define th_blocked_clients(r) th_info_field(r, "clients", "blocked_clients")

/* Polls until n clients are blocked; fails the test after ms. */
#define th_wait_blocked(r, n, ms)                                              \
    th_wait_blocked_at_(__FILE__, __LINE__, r, n, ms)
void th_wait_blocked_at_(const char *file, int line, redisContext *r,
                         long long n, int64_t ms);

/* Asserts that the server sees no command for ms (after a 200 ms settle),
 * but the INFO that reads its counts (INFO commandstats): blocked waiters
 * are silent. */
#define th_assert_silent(r, ms) th_assert_silent_at_(__FILE__, __LINE__, r, ms)
void th_assert_silent_at_(const char *file, int line, redisContext *r,
                          int64_t ms);

/* How long th_cli lets the CLI run before it kills it and fails. */
#define TH_CLI_MS 20000

/* Runs the built CLI with args (NULL-terminated, after argv[0]) and
 * $REDISCLI_AUTH set to auth (NULL: unset): its exit status, its stdout
 * in out and its stderr in err (either may be NULL), each cut to its
 * size. Fails the test when it runs longer than TH_CLI_MS. */
#define th_cli(args, auth, out, outsize, err, errsize)                         \
    th_cli_at_(__FILE__, __LINE__, args, auth, out, outsize, err, errsize)
int th_cli_at_(const char *file, int line, const char *const *args,
               const char *auth, char *out, size_t outsize, char *err,
               size_t errsize);

/* A Redlock client of three private servers refuses an acquire with o
 * (REDISLOCK_EINVAL, the detail holding word) and writes nothing. */
void th_redlock_refuses(const redislock_acquire_options *o, const char *word);

/* A token nobody holds, for adopting. */
#define TH_WRONG_TOKEN "0123456789abcdef0123456789abcdef"

#endif
