/*
 * The private poll() loop (ploop.h): a table of the fds the loop asked
 * to watch, its one timer, and a pipe that wakes the loop from another
 * thread.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"
#include "ploop.h"

typedef struct watched {
    int fd;
    int what;            /* RL_WATCH_READ | RL_WATCH_WRITE */
    unsigned long since; /* the round it was first watched in */
} watched;

struct rl__ploop {
    rl__loop *lp; /* the loop it drives (rl__ploop_drive) */
    watched *fds;
    size_t nfds, cap;
    int64_t due_us;      /* the loop's timer; -1: none */
    unsigned long round; /* poll() rounds so far */
    int wake[2];         /* a pipe: [0] polled, [1] written by rl__ploop_wake */
    struct pollfd *pfd;
    size_t pcap;
    int polls; /* rl__ploop_polls: never a blocking read */
};

static watched *find(rl__ploop *pl, int fd)
{
    size_t i;

    for (i = 0; i < pl->nfds; i++)
        if (pl->fds[i].fd == fd)
            return &pl->fds[i];
    return NULL;
}

/* The loop's "watch fd for what". Out of memory drops the watch: the
 * connection's deadline timer then fails its requests, so nothing hangs. */
static void on_watch(void *ctx, int fd, int what)
{
    rl__ploop *pl = ctx;
    watched *w = find(pl, fd), *grown;

    if (w != NULL && what == 0) {
        *w = pl->fds[--pl->nfds];
        return;
    }
    if (w != NULL || what == 0) {
        if (w != NULL)
            w->what = what;
        return;
    }
    if (pl->nfds == pl->cap) {
        grown = realloc(pl->fds, (pl->cap ? pl->cap * 2 : 8) * sizeof *grown);
        if (grown == NULL)
            return;
        pl->fds = grown;
        pl->cap = pl->cap ? pl->cap * 2 : 8;
    }
    pl->fds[pl->nfds].fd = fd;
    pl->fds[pl->nfds].since = pl->round;
    pl->fds[pl->nfds++].what = what;
}

static void on_timer(void *ctx, int64_t ms)
{
    rl__ploop *pl = ctx;

    pl->due_us = ms < 0 ? -1 : rl__now_us() + ms * 1000;
}

static int nonblocking_pipe(int fds[2])
{
    int i;

    if (pipe(fds) != 0)
        return -1;
    for (i = 0; i < 2; i++)
        if (fcntl(fds[i], F_SETFL, O_NONBLOCK) != 0 ||
            fcntl(fds[i], F_SETFD, FD_CLOEXEC) != 0) {
            close(fds[0]);
            close(fds[1]);
            return -1;
        }
    return 0;
}

redislock_err rl__ploop_new(rl__ploop **out, rl__loop_ops *ops)
{
    rl__ploop *pl;

    *out = NULL;
    if ((pl = calloc(1, sizeof *pl)) == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    pl->due_us = -1;
    if (nonblocking_pipe(pl->wake) != 0) {
        free(pl);
        return rl__err(REDISLOCK_EIO,
                       "cannot make the loop's wake-up pipe: "
                       "%s",
                       strerror(errno));
    }
    ops->watch = on_watch;
    ops->timer = on_timer;
    ops->ctx = pl;
    *out = pl;
    return REDISLOCK_OK;
}

void rl__ploop_drive(rl__ploop *pl, rl__loop *lp)
{
    pl->lp = lp;
}

void rl__ploop_free(rl__ploop *pl)
{
    if (pl == NULL)
        return;
    close(pl->wake[0]);
    close(pl->wake[1]);
    free(pl->fds);
    free(pl->pfd);
    free(pl);
}

void rl__ploop_wake(rl__ploop *pl)
{
    char one = 1;
    ssize_t n;

    /* A full pipe is already a wake-up. */
    do
        n = write(pl->wake[1], &one, 1);
    while (n < 0 && errno == EINTR);
}

/* Empties the wake-up pipe; whether anything was in it. */
static int drained(rl__ploop *pl)
{
    char buf[64];
    int any = 0;
    ssize_t n;

    while ((n = read(pl->wake[0], buf, sizeof buf)) > 0 ||
           (n < 0 && errno == EINTR))
        any |= n > 0;
    return any;
}

/* poll()'s events for what the loop watches. */
static short events(int what)
{
    return (short)(((what & RL_WATCH_READ) ? POLLIN : 0) |
                   ((what & RL_WATCH_WRITE) ? POLLOUT : 0));
}

/* The poll set: the wake-up pipe first, then the watched fds. */
static int poll_set(rl__ploop *pl, size_t *n)
{
    struct pollfd *grown;
    size_t i;

    *n = pl->nfds + 1;
    if (*n > pl->pcap) {
        if ((grown = realloc(pl->pfd, *n * sizeof *grown)) == NULL)
            return -1;
        pl->pfd = grown;
        pl->pcap = *n;
    }
    pl->pfd[0] = (struct pollfd){.fd = pl->wake[0], .events = POLLIN};
    for (i = 0; i < pl->nfds; i++)
        pl->pfd[i + 1] = (struct pollfd){.fd = pl->fds[i].fd,
                                         .events = events(pl->fds[i].what)};
    return 0;
}

/* poll()'s timeout for the loop's timer, rounded up: -1 when none. */
static int timeout_ms(const rl__ploop *pl)
{
    int64_t left;

    if (pl->due_us < 0)
        return -1;
    left = pl->due_us - rl__now_us();
    if (left <= 0)
        return 0;
    left = (left + 999) / 1000;
    return left > 60000 ? 60000 : (int)left;
}

/* Hands one fd's events to the loop, unless a callback run meanwhile
 * stopped watching it, or closed it and watched a new one under the same
 * number (its events would then be stale). Errors and
 * hang-ups go to whatever the fd is watched for: the read or write that
 * follows meets them. */
static void dispatch(rl__ploop *pl, const struct pollfd *p)
{
    const watched *w = find(pl, p->fd);
    int what = 0;

    if (w == NULL || w->since == pl->round || p->revents == 0)
        return;
    if (p->revents & (POLLIN | POLLHUP | POLLERR))
        what |= RL_WATCH_READ;
    if (p->revents & (POLLOUT | POLLERR))
        what |= RL_WATCH_WRITE;
    what &= w->what;
    if (what == 0 && (p->revents & (POLLHUP | POLLERR | POLLNVAL)))
        what = w->what;
    if (what != 0)
        rl__loop_io(pl->lp, p->fd, what);
}

/* The loop's timer, if it is due. */
static void due(rl__ploop *pl)
{
    if (pl->due_us >= 0 && rl__now_us() >= pl->due_us) {
        /* One-shot: the loop asks again for the next one. */
        pl->due_us = -1;
        rl__loop_timeout(pl->lp);
    }
}

/* One poll() round, waiting at most for the loop's timer, or not at
 * all with nowait. */
static redislock_err round_once(rl__ploop *pl, int nowait,
                                rl__ploop_woken_cb woken, void *arg)
{
    size_t n, i;
    int got;

    /* One reply awaited and nothing else: a blocking read, not poll().
     * A wake-up meanwhile waits for the next round. */
    if (!nowait && !pl->polls && rl__loop_wait(pl->lp)) {
        pl->round++;
        due(pl);
        return REDISLOCK_OK;
    }
    if (poll_set(pl, &n) != 0)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    pl->round++;
    got = poll(pl->pfd, (nfds_t)n, nowait ? 0 : timeout_ms(pl));
    if (got < 0 && errno != EINTR)
        return rl__err(REDISLOCK_EIO, "poll: %s", strerror(errno));
    for (i = 1; got > 0 && i < n; i++)
        dispatch(pl, &pl->pfd[i]);
    due(pl);
    if (got > 0 && (pl->pfd[0].revents & POLLIN) && drained(pl) &&
        woken != NULL)
        woken(arg);
    return REDISLOCK_OK;
}

redislock_err rl__ploop_run(rl__ploop *pl, const atomic_int *done,
                            rl__ploop_woken_cb woken, void *arg)
{
    redislock_err err;

    while (!atomic_load(done))
        if ((err = round_once(pl, 0, woken, arg)) != REDISLOCK_OK)
            return err;
    return REDISLOCK_OK;
}

redislock_err rl__ploop_round(rl__ploop *pl, rl__ploop_woken_cb woken,
                              void *arg)
{
    return round_once(pl, 0, woken, arg);
}

void rl__ploop_polls(rl__ploop *pl)
{
    pl->polls = 1;
}

redislock_err rl__ploop_refresh(rl__ploop *pl)
{
    return round_once(pl, 1, NULL, NULL);
}
