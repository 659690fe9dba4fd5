/*
 * Taking a lock while staying responsive to signals.
 *
 * The wait is one redislock_acquire() call, so that the library's retry
 * strategy, attempt cap and fail-fast judge the whole wait rather than
 * slices of it. That call blocks, so a helper thread reads the signals
 * that should end the wait from a signalfd and cancels it with
 * redislock_cancel(), the one call the library allows from another thread
 * while a handle is in use.
 */
#include "cli.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/signalfd.h>
#include <time.h>
#include <unistd.h>

typedef struct watcher {
    redislock_lock *l;
    int sfd;     /* signalfd for the signals that end the wait */
    int done[2]; /* a pipe: the main thread's "the wait is over" */
    int sig;     /* the signal taken, or 0; read after the join */
    pthread_t th;
} watcher;

static void *watch_main(void *arg)
{
    watcher *w = arg;
    struct pollfd p[2];
    struct signalfd_siginfo si;

    p[0].fd = w->sfd;
    p[0].events = POLLIN;
    p[1].fd = w->done[0];
    p[1].events = POLLIN;
    for (;;) {
        if (poll(p, 2, -1) < 0) {
            if (errno == EINTR)
                continue;
            return NULL;
        }
        if (p[1].revents != 0)
            return NULL;
        if (read(w->sfd, &si, sizeof si) == (ssize_t)sizeof si) {
            w->sig = (int)si.ssi_signo;
            redislock_cancel(w->l);
            return NULL;
        }
    }
}

static void watch_close(watcher *w)
{
    if (w->sfd >= 0)
        close(w->sfd);
    if (w->done[0] >= 0)
        close(w->done[0]);
    if (w->done[1] >= 0)
        close(w->done[1]);
}

/* Starts the helper thread; returns 0 or an errno value. */
static int watch_start(watcher *w, redislock_lock *l, const sigset_t *stop)
{
    sigset_t all, old;
    int err;

    w->l = l;
    w->sig = 0;
    w->done[0] = w->done[1] = -1;
    /* Close-on-exec: run forks its command later. */
    w->sfd = signalfd(-1, stop, SFD_CLOEXEC);
    if (w->sfd < 0 || pipe(w->done) != 0 ||
        fcntl(w->done[0], F_SETFD, FD_CLOEXEC) != 0 ||
        fcntl(w->done[1], F_SETFD, FD_CLOEXEC) != 0) {
        err = errno;
        watch_close(w);
        return err;
    }
    /* The helper takes no asynchronous signal: they all stay with the
     * main thread, as in a single-threaded program. */
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    err = pthread_create(&w->th, NULL, watch_main, w);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    if (err != 0)
        watch_close(w);
    return err;
}

/* Ends the helper thread and returns the signal it took, or 0. */
static int watch_stop(watcher *w)
{
    char c = 0;
    ssize_t n;

    do
        n = write(w->done[1], &c, 1);
    while (n < 0 && errno == EINTR);
    pthread_join(w->th, NULL);
    watch_close(w);
    return w->sig;
}

/* Takes one pending signal of set (blocked by the caller), or returns 0. */
static int take_signal(const sigset_t *set)
{
    struct timespec zero = {0, 0};
    int sig;

    if (set == NULL)
        return 0;
    sig = sigtimedwait(set, NULL, &zero);
    return sig > 0 ? sig : 0;
}

/* The lock taken with acq: acquired, or for elect campaigned for. */
static redislock_err attempt(redislock_lock *l, const cli_cmdopts *o,
                             const redislock_acquire_options *acq)
{
    if (o->elect)
        return redislock_campaign(l, o->value, acq);
    return redislock_acquire(l, acq);
}

/* The acquire call, cancelled by the signals in stop; *sig gets the
 * signal that came, or 0. Returns -1 when the watch cannot start. */
static int acquire(const char *ctx, redislock_lock *l, const cli_cmdopts *o,
                   const sigset_t *stop, int *sig, redislock_err *err)
{
    const redislock_acquire_options *acq = &o->acq;
    watcher w;
    redislock_acquire_options rest = *acq;
    int64_t t0 = cli_now_ms();
    int e, watched = stop != NULL && acq->wait_ms != REDISLOCK_NO_WAIT;

    /* A single attempt is one round trip: no thread for that. Nor for
     * the first of a wait, most often the only one (a free lock): the
     * thread costs a tenth of a millisecond, on every run's path. A
     * signal meanwhile waits, blocked, for that round trip. Only where
     * the split changes nothing but that round trip: not for a fair
     * waiter, whose first attempt is its place in the queue, nor with a
     * count of attempts or pauses that grow, which would start again. */
    if (watched && !acq->fair && acq->max_attempts == 0 &&
        acq->retry == REDISLOCK_RETRY_CONSTANT) {
        rest.wait_ms = REDISLOCK_NO_WAIT;
        *err = attempt(l, o, &rest);
        *sig = take_signal(stop);
        if (*err != REDISLOCK_EHELD || *sig != 0)
            return 0;
        /* Held: the wait goes on, less what the attempt took. */
        rest = *acq;
        if (rest.wait_ms != REDISLOCK_WAIT_FOREVER &&
            (rest.wait_ms -= cli_now_ms() - t0) <= 0)
            return 0;
        acq = &rest;
    }
    if (watched && (e = watch_start(&w, l, stop)) != 0) {
        cli_err(ctx, "cannot watch for signals while waiting: %s", strerror(e));
        return -1;
    }
    *err = attempt(l, o, acq);
    *sig = watched ? watch_stop(&w) : 0;
    /* A signal that came as the lock was taken still means "stop". */
    if (*sig == 0)
        *sig = take_signal(stop);
    return 0;
}

/* The key of l, quoted for a message, in q (CLI_QUOTE_MAX bytes). */
static const char *quoted_key(redislock_lock *l, char *q)
{
    char raw[REDISLOCK_KEY_MAX + 1];
    size_t len;
    const char *key = redislock_key(l, &len);

    /* The CLI's keys have no NUL byte (they come from argv). */
    snprintf(raw, sizeof raw, "%.*s", (int)len, key);
    return cli_quote(raw, q, CLI_QUOTE_MAX);
}

/* A lease length for a message: "its lease ends in N ms", or why not. */
static void lease_text(int64_t ttl, char *buf, size_t size)
{
    if (ttl >= 0)
        snprintf(buf, size, "its lease ends in %lld ms", (long long)ttl);
    else if (ttl == REDISLOCK_TTL_NO_EXPIRY)
        snprintf(buf, size, "its key has no expiry");
    else
        snprintf(buf, size, "its lease is unknown");
}

/* --verbose: the holders of a key held shared, which have no owner id:
 * how many readers, or none while a waiting exclusive request keeps the
 * key for itself. */
static void shared_text(const redislock_info *info, char *buf, size_t size)
{
    char lease[64];

    lease_text(info->ttl_ms, lease, sizeof lease);
    if (info->holds > 0)
        snprintf(buf, size, "held shared by %lld reader%s (%s)",
                 (long long)info->holds, info->holds == 1 ? "" : "s", lease);
    else
        snprintf(buf, size, "kept for a waiting exclusive request (%s)", lease);
}

int cli_holder_text(redislock_lock *l, char *buf, size_t size)
{
    char lease[64], owner[CLI_QUOTE_MAX], meta[CLI_QUOTE_MAX];
    redislock_info info;

    if (redislock_inspect(l, &info) != REDISLOCK_OK) {
        snprintf(buf, size, "its holder cannot be read");
        return -1;
    }
    if (!info.held) {
        snprintf(buf, size, "it is free now");
        return 0;
    }
    if (info.reserved == REDISLOCK_KIND_SHARED) {
        shared_text(&info, buf, size);
        return 1;
    }
    lease_text(info.ttl_ms, lease, sizeof lease);
    if (info.reserved == REDISLOCK_KIND_SEMAPHORE) {
        snprintf(buf, size,
                 "a semaphore with %lld of its %d permits taken (%s)",
                 (long long)info.holds, info.limit, lease);
        return 1;
    }
    /* metadata is then the key's Redis type. */
    if (cli_foreign(&info)) {
        snprintf(buf, size,
                 "held by a foreign owner: a %s key whose value is no "
                 "redislock token (another tool's lock, or no lock) (%s)",
                 info.metadata != NULL
                     ? cli_quote(info.metadata, meta, sizeof meta)
                     : "Redis",
                 lease);
        return 1;
    }
    snprintf(buf, size, "%s %s%s%s (%s%s%s%s)",
             info.reserved == REDISLOCK_KIND_RESERVED
                 ? "reserved after a release (--hold-after) by"
                 : "held by",
             info.owner != NULL ? "owner '" : "another owner",
             info.owner != NULL ? cli_quote(info.owner, owner, sizeof owner)
                                : "",
             info.owner != NULL ? "'" : "", lease,
             info.metadata != NULL ? ", metadata '" : "",
             info.metadata != NULL ? cli_quote(info.metadata, meta, sizeof meta)
                                   : "",
             info.metadata != NULL ? "'" : "");
    return 1;
}

/* --verbose: a pause of a wait, with the holder's lease, or a renewal. */
static void say_event(const redislock_event *ev, const char *ctx)
{
    char q[CLI_QUOTE_MAX], lease[64];
    int64_t ttl = redislock_holder_ttl(ev->lock);

    if (ttl >= 0)
        snprintf(lease, sizeof lease, "its lease ends in %lld ms",
                 (long long)ttl);
    else
        snprintf(lease, sizeof lease, "%s",
                 ttl == REDISLOCK_TTL_NO_EXPIRY ? "it has no expiry"
                                                : "its lease is unknown");
    if (ev->kind == REDISLOCK_EVENT_RETRY)
        cli_err(ctx,
                "attempt %d: lock '%s' is held (%s); trying again within "
                "%lld ms, sooner if it is released",
                ev->attempts, quoted_key(ev->lock, q), lease,
                (long long)ev->ms);
    else if (ev->kind == REDISLOCK_EVENT_RENEWED)
        cli_err(ctx, "renewed lock '%s' (valid for %lld ms)",
                quoted_key(ev->lock, q), (long long)ev->ms);
}

void cli_on_event(const redislock_event *ev, void *arg)
{
    const cli_events *e = arg;
    char one = 1;
    ssize_t n;

    if (e->verbose)
        say_event(ev, e->ctx);
    if (e->renewed_fd > 2 && ev->kind == REDISLOCK_EVENT_RENEWED) {
        /* A full pipe is readable already: no byte is needed then. */
        n = write(e->renewed_fd, &one, 1);
        (void)n;
    }
}

/* --verbose, before the wait: what is waited for, and for how long. */
static void say_start(const char *ctx, redislock_lock *l,
                      const redislock_acquire_options *acq)
{
    char q[CLI_QUOTE_MAX], holder[3 * CLI_QUOTE_MAX], wait[64];

    if (acq->wait_ms == REDISLOCK_NO_WAIT)
        snprintf(wait, sizeof wait, "trying once (-n)");
    else if (acq->wait_ms == REDISLOCK_WAIT_FOREVER)
        snprintf(wait, sizeof wait, "waiting as long as it takes");
    else
        snprintf(wait, sizeof wait, "waiting up to %lld ms",
                 (long long)acq->wait_ms);
    cli_holder_text(l, holder, sizeof holder);
    cli_err(ctx, "taking %slock '%s' for %lld ms, %s: %s",
            acq->shared ? "a share of " : "", quoted_key(l, q),
            (long long)acq->ttl_ms, wait, holder);
}

/* Why a wait that did not get the lock ended, from what the library was
 * asked to do and how long it took. */
static const char *miss_reason(const redislock_acquire_options *acq,
                               int64_t took_ms)
{
    int cut_short =
        acq->wait_ms == REDISLOCK_WAIT_FOREVER || took_ms < acq->wait_ms;

    if (acq->wait_ms == REDISLOCK_NO_WAIT)
        return "it is held and -n does not wait";
    if (acq->fail_fast && cut_short)
        return "the holder's lease outlasts the wait (--fail-fast)";
    if (acq->max_attempts > 0 && cut_short)
        return "no attempt left (--max-attempts)";
    return "the wait ran out";
}

/* Not obtained: silent, as flock(1) is, unless --verbose, which says why
 * and who holds it. */
static int held(const char *ctx, redislock_lock *l, const cli_cmdopts *o,
                int64_t took_ms)
{
    char q[CLI_QUOTE_MAX], holder[3 * CLI_QUOTE_MAX];

    if (!o->verbose)
        return o->conflict_code;
    cli_holder_text(l, holder, sizeof holder);
    cli_err(ctx, "lock '%s' not obtained after %lld ms: %s; %s; exit status %d",
            quoted_key(l, q), (long long)took_ms, miss_reason(&o->acq, took_ms),
            holder, o->conflict_code);
    return o->conflict_code;
}

/* --verbose: how the wait ended, when not by a conflict or an error. */
static void say_end(const char *ctx, redislock_lock *l, int sig, int64_t took)
{
    char q[CLI_QUOTE_MAX];

    if (sig != 0)
        cli_err(ctx,
                "stopped waiting for lock '%s' after %lld ms: got signal %d "
                "(%s)",
                quoted_key(l, q), (long long)took, sig, strsignal(sig));
    else
        cli_err(
            ctx, "got lock '%s' after %lld ms (valid for %lld ms, fence %lld)",
            quoted_key(l, q), (long long)took, (long long)redislock_valid_ms(l),
            (long long)redislock_fence(l));
}

/* Whether l's key, read now, is held as another kind of shared key than
 * acq asks for: a semaphore of another limit, or a shared lock against a
 * semaphore. The library refuses that with REDISLOCK_EINVAL, the code of
 * the caller's own mistakes too; the key itself tells them apart. */
static int other_kind(redislock_lock *l, const redislock_acquire_options *acq)
{
    redislock_info info;

    if (!acq->shared && acq->limit <= 0)
        return 0;
    if (redislock_inspect(l, &info) != REDISLOCK_OK || !info.held)
        return 0;
    if (info.reserved == REDISLOCK_KIND_SHARED)
        return !acq->shared;
    if (info.reserved == REDISLOCK_KIND_SEMAPHORE)
        return acq->shared || info.limit != acq->limit;
    return 0;
}

/* An acquire that failed with err. A key in use as another kind is no
 * usage error (the command line is valid, the clash is with the key's
 * other users) but CLI_EXIT_KIND, in the library's words, which say what
 * the key is, what was asked and the fix. */
static int failed(const char *ctx, redislock_lock *l, redislock_err err,
                  const redislock_acquire_options *acq)
{
    char detail[CLI_DETAIL_MAX], q[CLI_QUOTE_MAX];

    cli_detail(detail, sizeof detail);
    if (err != REDISLOCK_EINVAL || !other_kind(l, acq))
        return cli_fail_with(ctx, err, "cannot acquire lock", detail);
    cli_err(ctx, "lock '%s': %s", quoted_key(l, q), detail);
    return CLI_EXIT_KIND;
}

int cli_take(const char *ctx, redislock_lock *l, const cli_cmdopts *o,
             const sigset_t *stop, int *rc)
{
    redislock_err err;
    int64_t t0 = cli_now_ms(), took;
    int sig;

    *rc = CLI_EXIT_SOFTWARE;
    if (o->verbose)
        say_start(ctx, l, &o->acq);
    if (acquire(ctx, l, o, stop, &sig, &err) != 0)
        return 0;
    took = cli_now_ms() - t0;
    if (o->verbose && (sig != 0 || err == REDISLOCK_OK))
        say_end(ctx, l, sig, took);
    if (sig != 0) {
        /* Best effort: if this fails the lease ends by its TTL. */
        if (err == REDISLOCK_OK)
            (void)redislock_release(l);
        *rc = 128 + sig;
        return 0;
    }
    if (err == REDISLOCK_EHELD) {
        *rc = held(ctx, l, o, took);
        return 0;
    }
    if (err != REDISLOCK_OK) {
        *rc = failed(ctx, l, err, &o->acq);
        return 0;
    }
    cli_warn_guards(ctx, l, &o->g);
    *rc = CLI_EXIT_OK;
    return 1;
}

void cli_warn_guards(const char *ctx, redislock_lock *l, const cli_global *g)
{
    char q[CLI_QUOTE_MAX];
    int n = redislock_replicas(l), local = -1, aof = redislock_aof(l, &local);

    if (!g->wait_replicas_lenient)
        return;
    if (g->wait_replicas > 0 && n < g->wait_replicas)
        cli_err(ctx,
                "warning: lock '%s' is held, but %d of the %d replicas "
                "asked for (--wait-replicas) confirmed it",
                quoted_key(l, q), n < 0 ? 0 : n, g->wait_replicas);
    if ((g->wait_aof_local && local != 1) ||
        (g->wait_aof_replicas > 0 && aof < g->wait_aof_replicas))
        cli_err(ctx,
                "warning: lock '%s' is held, but its append-only file "
                "fsyncs were not all confirmed: master %s, %d of %d "
                "replicas (--wait-aof-local, --wait-aof-replicas)",
                quoted_key(l, q), local == 1 ? "yes" : "no", aof < 0 ? 0 : aof,
                g->wait_aof_replicas);
}
