#include "watchdog.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "clock.h"
#include "error.h"

/* A failed renewal is retried after a tenth of the TTL (at least this),
 * until the lease's validity runs out. */
#define RL_RETRY_MIN_US 5000

struct rl__watch {
    redislock_lock *lock; /* the lease's holder: passed back, never read */
    const rl__lease *lease;
    int64_t ttl_ms;
    int64_t next_us;    /* when to renew next */
    int64_t started_us; /* when the lock was acquired */
    int64_t max_hold_us;
    int renewals;
    int max_renewals;
    int oneshot; /* one renewal, then done (and no loss report after) */
    /* The last renewal's failure, while it is retried (0: none). */
    redislock_err failed;
    char failed_why[200];
    int efd;
    redislock_lost_cb cb;
    void *cb_arg;
};

/* Tells the holder, once: state (redislock_check, redislock_valid_ms),
 * the eventfd, then the callback. */
static void report_loss(struct rl__watch *w, redislock_err why)
{
    uint64_t one = 1;

    if (!w->lease->lost(w->lock, why))
        return;
    while (w->efd >= 0 && write(w->efd, &one, sizeof one) < 0 && errno == EINTR)
        ;
    if (w->cb != NULL)
        w->cb(w->lock, why, w->cb_arg);
}

static int capped(const struct rl__watch *w, int64_t now)
{
    return (w->max_renewals > 0 && w->renewals >= w->max_renewals) ||
           (w->max_hold_us > 0 && now - w->started_us >= w->max_hold_us);
}

/* Renewals failed (a timeout, say) until the validity ran out: for the
 * holder that is an expiry, as redislock_check() already says; the
 * detail keeps the last renewal's error. */
static redislock_err failed_loss(const struct rl__watch *w)
{
    return rl__err(REDISLOCK_EEXPIRED,
                   "renewals failed until the validity ran out (last: %s: "
                   "%s)",
                   redislock_errname(w->failed), w->failed_why);
}

rl__renew_step rl__watch_after(rl__watch *w, redislock_err err, int64_t sent_us)
{
    redislock_lock *l = w->lock;
    int64_t now = rl__now_us(), valid;
    int64_t period = w->ttl_ms * 1000 / 3, retry;

    w->failed = err;
    if (err == REDISLOCK_OK) {
        w->renewals++;
        /* A period after the renewal was sent, not after its reply: the
         * validity counts from the sending, and a reply that took a
         * third of the TTL (a slow link, a loaded server or client)
         * would leave the next renewal due after the validity ran out,
         * the holder's redislock_valid_ms() at 0 until its reply. */
        w->next_us = sent_us + period > now ? sent_us + period : now;
        return w->oneshot ? RL_RENEW_DROP : RL_RENEW_KEEP;
    }
    /* Revoked: the lease was lengthened, but the holder is asked to give
     * the lock up, and told as of a loss; renewals stop, so a holder that
     * does not release keeps the lock no longer than this lease. */
    if (err == REDISLOCK_EEXPIRED || err == REDISLOCK_ELOST ||
        err == REDISLOCK_EREVOKED) {
        report_loss(w, err);
        return RL_RENEW_DROP;
    }
    snprintf(w->failed_why, sizeof w->failed_why, "%s", redislock_errdetail());
    if (now >= (valid = w->lease->valid_until(l))) {
        report_loss(w, failed_loss(w));
        return RL_RENEW_DROP;
    }
    /* A transient failure: try again soon, but not past the validity, at
     * which point the lock counts as lost (rl__watch_before). */
    retry = w->ttl_ms * 100;
    w->next_us = now + (retry > RL_RETRY_MIN_US ? retry : RL_RETRY_MIN_US);
    if (w->next_us > valid)
        w->next_us = valid;
    return RL_RENEW_KEEP;
}

rl__renew_step rl__watch_before(rl__watch *w)
{
    int64_t now = rl__now_us(), valid = w->lease->valid_until(w->lock);

    if (now >= valid) {
        /* No renewal goes once the validity has run out: the holder must
         * count the lock as lost, and a renewal could only lengthen, on
         * the server, a lease nobody holds any more. Either renewals
         * failed until then, or the cap stopped them, or they were held
         * up past it (the process was stopped, or this thread kept
         * busy). */
        if (w->failed != REDISLOCK_OK)
            report_loss(w, failed_loss(w));
        else if (capped(w, now))
            report_loss(w, REDISLOCK_EEXPIRED);
        else
            report_loss(w, rl__err(REDISLOCK_EEXPIRED,
                                   "the lease ran out %lld ms before its "
                                   "renewal could be sent (the process or "
                                   "its watchdog was held up)",
                                   (long long)((now - valid) / 1000)));
        return RL_RENEW_DROP;
    }
    if (!capped(w, now))
        return RL_RENEW_SEND;
    /* No more renewals: the lease runs out at its validity. */
    w->next_us = valid;
    return RL_RENEW_KEEP;
}

int64_t rl__watch_due(const rl__watch *w)
{
    return w->next_us;
}

redislock_err rl__watch_start(const rl__lease *lease, redislock_lock *l,
                              int64_t ttl_ms,
                              const redislock_acquire_options *o,
                              int64_t sent_us, int64_t first_us, int efd,
                              rl__watch **out)
{
    struct rl__watch *w = calloc(1, sizeof *w);

    if (w == NULL)
        return rl__err(REDISLOCK_ENOMEM, "out of memory");
    /* A one-renewal watch (a short hand-off lease) reports no loss; a
     * watch an application's loop drives (which may have thousands)
     * reports it by the callback and validity only. */
    w->efd = o->watchdog && efd ? eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK) : -1;
    if (o->watchdog && efd && w->efd < 0) {
        free(w);
        return rl__err(REDISLOCK_ENOMEM, "cannot make an eventfd");
    }
    w->lock = l;
    w->lease = lease;
    w->ttl_ms = ttl_ms;
    w->started_us = sent_us;
    w->next_us = first_us ? first_us : sent_us + ttl_ms * 1000 / 3;
    w->oneshot = !o->watchdog;
    w->max_hold_us = o->max_hold_ms * 1000;
    w->max_renewals = o->max_renewals;
    w->cb = o->on_lost;
    w->cb_arg = o->on_lost_arg;
    *out = w;
    return REDISLOCK_OK;
}

void rl__watch_stop(rl__watch *w)
{
    if (w == NULL)
        return;
    if (w->efd >= 0)
        close(w->efd);
    free(w);
}

int rl__watch_efd(const rl__watch *w)
{
    return w != NULL ? w->efd : -1;
}
