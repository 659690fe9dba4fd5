#include "fixture.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>

#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "../test.h"
#include "util.h"

redislock_client *th_client_url_at_(const char *file, int line, const char *url,
                                    const redislock_options *opts)
{
    redislock_client *c = NULL;
    redislock_err e = redislock_client_new(&c, url, opts);
    int tries = 1;

    /* A short command timeout (a test's 200 ms, for what it tests) may
     * run out in the constructor's checks on a loaded box: those are not
     * what the test is about, so they are tried again, 5 times at most. */
    while (e == REDISLOCK_ETIMEDOUT && tries++ < 5) {
        test_log("redislock_client_new(\"%s\") timed out; again", url);
        e = redislock_client_new(&c, url, opts);
    }
    if (e != REDISLOCK_OK || c == NULL)
        test_fail_(file, line, "redislock_client_new(\"%s\"): %s; %s", url,
                   redislock_errname(e), redislock_errdetail());
    return c;
}

redislock_lock *th_lock_at_(const char *file, int line, redislock_client *c,
                            const char *key)
{
    redislock_lock *l = NULL;
    redislock_err e = redislock_lock_new(c, key, strlen(key), &l);

    if (e != REDISLOCK_OK || l == NULL)
        test_fail_(file, line, "redislock_lock_new(\"%s\"): %s; %s", key,
                   redislock_errname(e), redislock_errdetail());
    return l;
}

redislock_lock *th_lock_set_at_(const char *file, int line, redislock_client *c,
                                const char *const *keys, size_t n)
{
    size_t lens[REDISLOCK_SET_MAX], i;
    redislock_lock *l = NULL;
    redislock_err e;

    if (n > REDISLOCK_SET_MAX)
        test_fail_(file, line, "th_lock_set: %zu keys, at most %d", n,
                   REDISLOCK_SET_MAX);
    for (i = 0; i < n; i++)
        lens[i] = strlen(keys[i]);
    e = redislock_lock_new_multi(c, (const void *const *)keys, lens, n, &l);
    if (e != REDISLOCK_OK || l == NULL)
        test_fail_(file, line, "redislock_lock_new_multi(%zu keys): %s; %s", n,
                   redislock_errname(e), redislock_errdetail());
    return l;
}

redislock_acquire_options th_aopts(int64_t ttl_ms, int64_t wait_ms,
                                   int64_t retry_delay_ms)
{
    redislock_acquire_options o = {0};

    o.ttl_ms = ttl_ms;
    o.wait_ms = wait_ms;
    o.retry_delay_ms = retry_delay_ms;
    return o;
}

void th_assert_key_at_(const char *file, int line, redisContext *c,
                       const char *key, const char *value)
{
    char *got = th_cmd_str_at_(file, line, c, NULL, "GET %s", key);
    size_t n = value != NULL ? strlen(value) : 0;

    /* A token of the native prefix that a waiter has marked (rl_mark_holder
     * in lua/lib.lua) still names its holder. */
    if (got != NULL && value != NULL && strncmp(value, "rl2-", 4) == 0 &&
        strncmp(got, value, n) == 0 && strcmp(got + n, "+w") == 0)
        got[n] = '\0';
    if (got == NULL ? value != NULL : value == NULL || strcmp(got, value))
        test_fail_(file, line, "key %s holds %s%s%s, want %s%s%s", key,
                   got ? "\"" : "", got ? got : "(nil)", got ? "\"" : "",
                   value ? "\"" : "", value ? value : "(nil)",
                   value ? "\"" : "");
    free(got);
}

void th_assert_field_at_(const char *file, int line, redisContext *c,
                         const char *key, const char *field, const char *value)
{
    char *got = th_cmd_str_at_(file, line, c, NULL, "HGET %s %s", key, field);

    if (got == NULL ? value != NULL : value == NULL || strcmp(got, value))
        test_fail_(file, line, "HGET %s %s is %s, want %s", key, field,
                   got ? got : "(nil)", value ? value : "(nil)");
    free(got);
}

void th_assert_token_at_(const char *file, int line, const char *t,
                         const char *prefix)
{
    size_t i, n = strlen(prefix);
    const char *h = t;

    if (t == NULL)
        test_fail_(file, line, "token is NULL");
    /* A plain lock's token has either prefix: "rl2-" where the server
     * has a native compare-and-delete (rand.h). */
    if (strcmp(prefix, "rl1-") == 0 && strncmp(t, "rl2-", n) == 0)
        prefix = "rl2-";
    if (strncmp(t, prefix, n) == 0)
        h = t + n;
    for (i = 0; h[i] != '\0'; i++)
        if (!((h[i] >= '0' && h[i] <= '9') || (h[i] >= 'a' && h[i] <= 'f')))
            break;
    if (h == t + n && i == 32 && h[i] == '\0')
        return;
    test_fail_(file, line, "\"%s\" is not \"%s\" and 32 lowercase hex digits",
               t, prefix);
}

long long th_listening(redisContext *c, const char *pattern)
{
    redisReply *r = th_cmd(c, "PUBSUB CHANNELS %s", pattern);
    long long n;

    ASSERT(r->type == REDIS_REPLY_ARRAY);
    n = (long long)r->elements;
    freeReplyObject(r);
    return n;
}

int th_clients_flagged(redisContext *c, char flag)
{
    redisReply *rep = th_cmd(c, "CLIENT LIST");
    const char *p = rep->str;
    int n = 0;

    ASSERT(rep->type == REDIS_REPLY_STRING);
    while ((p = strstr(p, " flags=")) != NULL) {
        p += 7;
        while (*p != ' ' && *p != '\0')
            n += *p++ == flag;
    }
    freeReplyObject(rep);
    return n;
}

int th_tracked_scripts(redisContext *c)
{
    redisReply *rep = th_cmd(c, "CLIENT LIST");
    char *line, *save = NULL, *f, *end;
    int n = 0;

    ASSERT(rep->type == REDIS_REPLY_STRING);
    for (line = strtok_r(rep->str, "\n", &save); line != NULL;
         line = strtok_r(NULL, "\n", &save)) {
        if ((f = strstr(line, " flags=")) == NULL ||
            (end = strchr(f + 7, ' ')) == NULL)
            continue;
        f += 7;
        if (memchr(f, 't', (size_t)(end - f)) != NULL &&
            (strstr(line, " cmd=fcall ") != NULL ||
             strstr(line, " cmd=evalsha ") != NULL))
            n++;
    }
    freeReplyObject(rep);
    return n;
}

long long th_script_loads(redisContext *c)
{
    return th_server_calls(c, "function|load") +
           th_server_calls(c, "script|load");
}

long long th_lock_keys(redisContext *c)
{
    char cursor[32] = "0";
    long long n = 0;
    size_t i;

    do {
        redisReply *r = th_cmd(c, "SCAN %s COUNT 1000", cursor);
        ASSERT(r->type == REDIS_REPLY_ARRAY && r->elements == 2);
        snprintf(cursor, sizeof cursor, "%s", r->element[0]->str);
        for (i = 0; i < r->element[1]->elements; i++) {
            const redisReply *k = r->element[1]->element[i];
            if (memmem(k->str, (size_t)k->len, ":rl-", 4) == NULL)
                n++;
        }
        freeReplyObject(r);
    } while (strcmp(cursor, "0") != 0);
    return n;
}

/* In a child: a client of url and a handle for the n keys (a set when
 * more than one), acquired with o; 0, or -1 when any of it failed. */
static int child_take(const char *url, const char *const *keys, int n,
                      const redislock_acquire_options *o, redislock_client **c,
                      redislock_lock **l)
{
    size_t lens[REDISLOCK_SET_MAX];
    int i;

    if (n < 1 || n > REDISLOCK_SET_MAX ||
        redislock_client_new(c, url, NULL) != REDISLOCK_OK)
        return -1;
    for (i = 0; i < n; i++)
        lens[i] = strlen(keys[i]);
    if (redislock_lock_new_multi(*c, (const void *const *)keys, lens, (size_t)n,
                                 l) != REDISLOCK_OK)
        return -1;
    return redislock_acquire(*l, o) == REDISLOCK_OK ? 0 : -1;
}

/* The stopped holder's exit status: 1 its write refused (the expected),
 * 0 accepted, 2 another outcome; +10 when redislock_check did not
 * report the loss. */
static int stopped_holder(const char *url, const char *const *keys, int n,
                          const redislock_acquire_options *o, const char *res)
{
    redislock_client *c;
    redislock_lock *l;
    redislock_err e;
    int lost;

    if (child_take(url, keys, n, o, &c, &l) != 0)
        return 2;
    raise(SIGSTOP); /* longer than the lease */
    lost = redislock_check(l) != REDISLOCK_OK;
    e = redislock_fenced_set(c, res, strlen(res), "stale", 5,
                             redislock_fence(l));
    return (e == REDISLOCK_ESTALE ? 1
            : e == REDISLOCK_OK   ? 0
                                  : 2) +
           (lost ? 0 : 10);
}

int th_start_stopped_holder(th_env *e, const char *const *keys, int n,
                            const redislock_acquire_options *o, const char *res)
{
    int st;
    pid_t pid;

    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0)
        _exit(stopped_holder(e->s->unix_url, keys, n, o, res));
    ASSERT_EQ_INT(waitpid(pid, &st, WUNTRACED), pid);
    ASSERT(WIFSTOPPED(st));
    return (int)pid;
}

void th_run_workers(th_env *e, int n,
                    void (*worker)(const th_server *s, unsigned seed))
{
    pid_t *pid = calloc((size_t)n, sizeof *pid);
    int i, st;

    ASSERT(pid != NULL);
    fflush(NULL);
    for (i = 0; i < n; i++) {
        pid[i] = fork();
        ASSERT(pid[i] >= 0);
        if (pid[i] == 0) {
            worker(e->s, (unsigned)getpid() * 2654435761u);
            _exit(0);
        }
    }
    for (i = 0; i < n; i++) {
        ASSERT_EQ_INT(waitpid(pid[i], &st, 0), pid[i]);
        ASSERT(WIFEXITED(st));
        ASSERT_EQ_INT(WEXITSTATUS(st), 0);
    }
    free(pid);
}

int th_start_holder(th_env *e, const char *const *keys, int n,
                    const redislock_acquire_options *o, int64_t t[2])
{
    redislock_client *c;
    redislock_lock *l;
    int fds[2];
    pid_t pid;

    ASSERT_EQ_INT(pipe(fds), 0);
    fflush(NULL);
    pid = fork();
    ASSERT(pid >= 0);
    if (pid == 0) {
        close(fds[0]);
        t[0] = th_now_ms();
        if (child_take(e->s->unix_url, keys, n, o, &c, &l) != 0)
            _exit(2);
        t[1] = th_now_ms();
        if (write(fds[1], t, 2 * sizeof *t) != (ssize_t)(2 * sizeof *t))
            _exit(3);
        pause();
        _exit(0);
    }
    close(fds[1]);
    ASSERT_EQ_INT(read(fds[0], t, 2 * sizeof *t), (long long)(2 * sizeof *t));
    close(fds[0]);
    return (int)pid;
}

void th_resume_refused(int pid)
{
    int st;

    ASSERT_EQ_INT(kill(pid, SIGCONT), 0);
    ASSERT_EQ_INT(waitpid(pid, &st, 0), pid);
    ASSERT(WIFEXITED(st));
    test_log("the stopped holder's exit status: %d (1: its write refused)",
             WEXITSTATUS(st));
    ASSERT_EQ_INT(WEXITSTATUS(st), 1);
}

void th_share_expiry(th_env *e, const char *key,
                     const redislock_acquire_options *shortl,
                     const redislock_acquire_options *longl)
{
    redislock_lock *a = th_lock(e->c, key), *b = th_lock(e->c, key),
                   *c = th_lock(e->c, key);

    ASSERT_OK(redislock_acquire(b, longl));
    /* Run out and pruned by a later acquire: gone. */
    ASSERT_OK(redislock_acquire(a, shortl));
    th_sleep_ms(120);
    ASSERT_OK(redislock_acquire(c, longl));
    ASSERT_EQ_INT(th_cmd_int(e->r, "ZCARD %s", key), 3);
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_release(c));
    /* Run out on the server's clock but still in the set (nobody acquired
     * since): neither released nor extended. */
    ASSERT_OK(redislock_acquire(a, shortl));
    th_sleep_ms(120);
    ASSERT_EQ_INT(th_cmd_int(e->r, "ZCARD %s", key), 3);
    ASSERT_ERR(redislock_extend(a, 1000), REDISLOCK_EEXPIRED);
    ASSERT_OK(redislock_acquire(a, shortl));
    th_sleep_ms(120);
    ASSERT_ERR(redislock_release(a), REDISLOCK_EEXPIRED);
    ASSERT_EQ_INT(th_cmd_int(e->r, "ZCARD %s", key), 2);
    ASSERT_OK(redislock_release(b));
    ASSERT_EQ_INT(th_cmd_int(e->r, "EXISTS %s", key), 0);
    redislock_lock_free(a);
    redislock_lock_free(b);
    redislock_lock_free(c);
}

void th_sharded_shares(int n, const redislock_acquire_options *o,
                       const redislock_acquire_options *x, const char *mark)
{
    th_servers e = th_servers_start(3);
    redislock_client *c = NULL;
    redislock_lock *(*l)[3] = calloc((size_t)n, sizeof *l);
    char key[16];
    long long on[3] = {0, 0, 0}, size;
    int i, j, k;

    ASSERT(l != NULL);
    ASSERT_OK(redislock_client_new_sharded(&c, e.urls, 3, NULL));
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "s:%d", i);
        for (j = 0; j < 3; j++)
            l[i][j] = th_lock(c, key);
        ASSERT_OK(redislock_acquire(l[i][0], o));
        ASSERT_OK(redislock_acquire(l[i][1], o));
        ASSERT_ERR(redislock_acquire(l[i][2], x), REDISLOCK_EHELD);
    }
    for (i = 0; i < n; i++) {
        snprintf(key, sizeof key, "s:%d", i);
        for (k = 0; k < 3; k++) {
            size = th_cmd_int(e.r[k], "ZCARD %s", key);
            ASSERT(size == 0 || size == 3);
            if (size > 0) {
                redisReply *r = th_cmd(e.r[k], "ZSCORE %s %s", key, mark);

                ASSERT_EQ_INT(r->type, REDIS_REPLY_STRING);
                freeReplyObject(r);
            }
            on[k] += size > 0;
        }
    }
    test_log("sets per server: %lld %lld %lld", on[0], on[1], on[2]);
    ASSERT_EQ_INT(on[0] + on[1] + on[2], n);
    for (i = 0; i < n; i++) {
        for (j = 0; j < 2; j++)
            ASSERT_OK(redislock_release(l[i][j]));
        ASSERT_OK(redislock_acquire(l[i][2], x));
        ASSERT_OK(redislock_release(l[i][2]));
        for (j = 0; j < 3; j++)
            redislock_lock_free(l[i][j]);
    }
    for (k = 0; k < 3; k++)
        ASSERT_EQ_INT(th_lock_keys(e.r[k]), 0);
    free(l);
    redislock_client_free(c);
    th_servers_stop(&e);
}

th_env th_env_start(void)
{
    th_env e;

    e.s = th_server_start(NULL);
    e.r = th_server_redis(e.s);
    e.c = th_client(e.s);
    return e;
}

void th_env_stop(th_env *e)
{
    redislock_client_free(e->c);
    redisFree(e->r);
    th_server_stop(e->s);
}

th_servers th_servers_start(int n)
{
    th_servers e;
    int i;

    memset(&e, 0, sizeof e);
    ASSERT_LE(n, TH_SERVERS_MAX);
    e.n = n;
    for (i = 0; i < n; i++) {
        e.s[i] = th_server_start(NULL);
        e.r[i] = th_server_redis(e.s[i]);
        e.urls[i] = e.s[i]->unix_url;
    }
    return e;
}

void th_servers_kill(th_servers *e, int i)
{
    redisFree(e->r[i]);
    e->r[i] = NULL;
    th_server_kill(e->s[i]);
}

int th_servers_holding(th_servers *e, const char *key, const char *value)
{
    int i, n = 0;

    for (i = 0; i < e->n; i++) {
        char *v = th_cmd_str(e->r[i], NULL, "GET %s", key);

        n += v != NULL && strcmp(v, value) == 0;
        free(v);
    }
    return n;
}

void th_servers_stop(th_servers *e)
{
    int i;

    for (i = 0; i < e->n; i++) {
        if (e->r[i] != NULL)
            redisFree(e->r[i]);
        th_server_stop(e->s[i]);
    }
}

static void *waiter_thread(void *arg)
{
    th_waiter *w = arg;

    w->err = redislock_acquire(w->l, &w->o);
    w->done_us = th_now_us();
    snprintf(w->detail, sizeof w->detail, "%s", redislock_errdetail());
    if (w->err == REDISLOCK_OK)
        snprintf(w->token, sizeof w->token, "%s", redislock_token(w->l));
    return NULL;
}

void th_waiter_start_at_(const char *file, int line, th_waiter *w,
                         redislock_client *c, const char *key,
                         const redislock_acquire_options *o)
{
    memset(w, 0, sizeof *w);
    w->l = th_lock_at_(file, line, c, key);
    w->o = *o;
    if (pthread_create(&w->t, NULL, waiter_thread, w) != 0)
        test_fail_(file, line, "cannot start a waiter thread");
}

void th_waiter_start_lock_at_(const char *file, int line, th_waiter *w,
                              redislock_lock *l,
                              const redislock_acquire_options *o)
{
    memset(w, 0, sizeof *w);
    w->l = l;
    w->o = *o;
    if (pthread_create(&w->t, NULL, waiter_thread, w) != 0)
        test_fail_(file, line, "cannot start a waiter thread");
}

void th_waiter_join_ok_at_(const char *file, int line, th_waiter *w, int64_t ms)
{
    th_join_within_at_(file, line, w->t, ms);
    if (w->err != REDISLOCK_OK)
        test_fail_(file, line, "waiter: %s; %s", redislock_errname(w->err),
                   w->detail);
}

long long th_info_field_at_(const char *file, int line, redisContext *r,
                            const char *section, const char *field)
{
    redisReply *rep = th_cmd_at_(file, line, 0, r, "INFO %s", section);
    char pat[64];
    const char *p;
    long long v;

    snprintf(pat, sizeof pat, "\n%s:", field);
    p = strstr(rep->str, pat);
    if (p == NULL)
        test_fail_(file, line, "INFO %s has no %s", section, field);
    v = strtoll(p + strlen(pat), NULL, 10);
    freeReplyObject(rep);
    return v;
}

void th_redlock_refuses(const redislock_acquire_options *o, const char *word)
{
    th_servers rs = th_servers_start(3);
    redislock_client *rl = NULL;
    redislock_lock *q;
    int i;

    ASSERT_OK(redislock_client_new_redlock(&rl, rs.urls, 3, NULL));
    q = th_lock(rl, "redlock:key");
    ASSERT_ERR(redislock_acquire(q, o), REDISLOCK_EINVAL);
    test_log("on Redlock: %s", redislock_errdetail());
    ASSERT(strstr(redislock_errdetail(), word) != NULL);
    for (i = 0; i < 3; i++)
        ASSERT_EQ_INT(th_cmd_int(rs.r[i], "DBSIZE"), 0);
    redislock_lock_free(q);
    redislock_client_free(rl);
    th_servers_stop(&rs);
}

void th_assert_silent_at_(const char *file, int line, redisContext *r,
                          int64_t ms)
{
    th_cmdstats *s0 = malloc(sizeof *s0), *s1 = malloc(sizeof *s1);
    long long all0 = 0, all1 = 0, info;
    int i;

    if (s0 == NULL || s1 == NULL)
        test_fail_(file, line, "out of memory");
    th_sleep_ms(200);
    th_cmdstats_read(r, s0);
    th_sleep_ms(ms);
    th_cmdstats_read(r, s1);
    for (i = 0; i < s0->n; i++)
        all0 += s0->e[i].calls;
    for (i = 0; i < s1->n; i++)
        all1 += s1->e[i].calls;
    /* The second snapshot's INFO is the only command of the window. */
    info = th_cmdstats_calls(s1, "info") - th_cmdstats_calls(s0, "info");
    free(s0);
    free(s1);
    if (all1 - all0 != info)
        test_fail_(file, line, "%lld commands in %lld ms of silence",
                   all1 - all0 - info, (long long)ms);
}

void th_wait_blocked_at_(const char *file, int line, redisContext *r,
                         long long n, int64_t ms)
{
    int64_t deadline = th_now_ms() + ms;
    long long got;

    while ((got = th_info_field_at_(file, line, r, "clients",
                                    "blocked_clients")) != n &&
           th_now_ms() < deadline)
        th_sleep_ms(2);
    if (got != n)
        test_fail_(file, line, "%lld clients blocked after %lld ms, want %lld",
                   got, (long long)ms, n);
}

#ifdef RL_CLI_PATH
/* Reads what the pipes fds[0] (into out) and fds[1] (into err) carry
 * until both close, within ms; kills pid and fails the test after. */
static void read_both(const char *file, int line, pid_t pid, const int *fds,
                      char **bufs, const size_t *sizes, int64_t ms)
{
    int64_t until = th_now_ms() + ms;
    size_t got[2] = {0, 0};
    int open_fds = 2, i;
    ssize_t n;

    while (open_fds > 0) {
        struct pollfd p[2];
        int64_t left = until - th_now_ms();

        for (i = 0; i < 2; i++)
            p[i] = (struct pollfd){fds[i], POLLIN, 0};
        if (left <= 0 || poll(p, 2, (int)left) == 0) {
            kill(pid, SIGKILL);
            waitpid(pid, NULL, 0);
            test_fail_(file, line, "the CLI still runs after %lld ms",
                       (long long)ms);
        }
        for (i = 0; i < 2; i++) {
            if (fds[i] < 0 || !(p[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            n = read(fds[i], bufs[i] + got[i], sizes[i] - 1 - got[i]);
            if (n < 0 && errno == EINTR)
                continue;
            if (n <= 0 || (got[i] += (size_t)n) == sizes[i] - 1) {
                close(fds[i]);
                ((int *)fds)[i] = -1;
                open_fds--;
            }
        }
    }
    for (i = 0; i < 2; i++)
        bufs[i][got[i]] = '\0';
}
#endif

int th_cli_at_(const char *file, int line, const char *const *args,
               const char *auth, char *out, size_t outsize, char *err,
               size_t errsize)
{
#ifndef RL_CLI_PATH
    (void)args;
    (void)auth;
    (void)out;
    (void)outsize;
    (void)err;
    (void)errsize;
    test_fail_(file, line, "the CLI target was not built");
    return -1;
#else
    const char *argv[24] = {RL_CLI_PATH};
    char spare[2][256];
    char *bufs[2] = {out ? out : spare[0], err ? err : spare[1]};
    size_t sizes[2] = {out ? outsize : sizeof spare[0],
                       err ? errsize : sizeof spare[1]};
    int po[2], pe[2], fds[2], st, n = 1;
    pid_t pid;

    while (*args != NULL && n < 23)
        argv[n++] = *args++;
    argv[n] = NULL;
    if (pipe(po) != 0 || pipe(pe) != 0)
        test_fail_(file, line, "pipe: %s", strerror(errno));
    fflush(NULL);
    if ((pid = fork()) < 0)
        test_fail_(file, line, "fork: %s", strerror(errno));
    if (pid == 0) {
        dup2(po[1], STDOUT_FILENO);
        dup2(pe[1], STDERR_FILENO);
        close(po[0]);
        close(po[1]);
        close(pe[0]);
        close(pe[1]);
        if (auth != NULL)
            setenv("REDISCLI_AUTH", auth, 1);
        else
            unsetenv("REDISCLI_AUTH");
        execv(RL_CLI_PATH, (char *const *)argv);
        _exit(127);
    }
    close(po[1]);
    close(pe[1]);
    fds[0] = po[0];
    fds[1] = pe[0];
    read_both(file, line, pid, fds, bufs, sizes, TH_CLI_MS);
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            test_fail_(file, line, "waitpid: %s", strerror(errno));
    return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
#endif
}
