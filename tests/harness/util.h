/* Small helpers shared by the runner, the harness and the tests. */
#ifndef TH_UTIL_H
#define TH_UTIL_H

#include <pthread.h>
#include <stddef.h>
#include <stdint.h>

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

/* qsort's comparison of int64_t values, ascending. */
int th_cmp_i64(const void *a, const void *b);

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

#endif
