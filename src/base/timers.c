/*
 * A binary min-heap of timer pointers (see timers.h): the earliest at the
 * root, each timer's slot kept current as it moves, so that one can be
 * re-armed or disarmed where it stands.
 */
#include <stdlib.h>

#include "error.h"
#include "timers.h"

/* Whether a is due before b. */
static int before(const rl__timer *a, const rl__timer *b)
{
    return a->at_us < b->at_us || (a->at_us == b->at_us && a->order < b->order);
}

static void place(rl__timers *h, size_t i, rl__timer *t)
{
    h->heap[i] = t;
    t->slot = i + 1;
}

static void up(rl__timers *h, size_t i)
{
    rl__timer *t = h->heap[i];

    while (i > 0 && before(t, h->heap[(i - 1) / 2])) {
        place(h, i, h->heap[(i - 1) / 2]);
        i = (i - 1) / 2;
    }
    place(h, i, t);
}

static void down(rl__timers *h, size_t i)
{
    rl__timer *t = h->heap[i];

    for (;;) {
        size_t l = 2 * i + 1, m = i;
        const rl__timer *least = t;

        if (l < h->n && before(h->heap[l], least)) {
            m = l;
            least = h->heap[l];
        }
        if (l + 1 < h->n && before(h->heap[l + 1], least))
            m = l + 1;
        if (m == i)
            break;
        place(h, i, h->heap[m]);
        i = m;
    }
    place(h, i, t);
}

void rl__timers_init(rl__timers *h)
{
    h->heap = NULL;
    h->n = h->cap = 0;
    h->armed = 0;
}

void rl__timers_free(rl__timers *h)
{
    size_t i;

    for (i = 0; i < h->n; i++)
        h->heap[i]->slot = 0;
    free(h->heap);
    rl__timers_init(h);
}

int rl__timer_armed(const rl__timer *t)
{
    return t->slot != 0;
}

redislock_err rl__timer_arm(rl__timers *h, rl__timer *t, int64_t at_us)
{
    if (t->slot == 0 && h->n == h->cap) {
        size_t cap = h->cap ? 2 * h->cap : 16;
        rl__timer **v = realloc(h->heap, cap * sizeof *v);

        if (v == NULL)
            return rl__err(REDISLOCK_ENOMEM, "out of memory for a timer");
        h->heap = v;
        h->cap = cap;
    }
    t->at_us = at_us;
    t->order = h->armed++;
    if (t->slot == 0) {
        place(h, h->n++, t);
        up(h, h->n - 1);
    } else {
        /* Re-armed: later than before only moves it down (its new order
         * is the latest), earlier only up. */
        up(h, t->slot - 1);
        down(h, t->slot - 1);
    }
    return REDISLOCK_OK;
}

void rl__timer_disarm(rl__timers *h, rl__timer *t)
{
    size_t i;
    rl__timer *last;

    if (t->slot == 0)
        return;
    i = t->slot - 1;
    t->slot = 0;
    last = h->heap[--h->n];
    if (i == h->n)
        return;
    place(h, i, last);
    up(h, i);
    down(h, last->slot - 1);
}

rl__timer *rl__timers_first(const rl__timers *h)
{
    return h->n > 0 ? h->heap[0] : NULL;
}

rl__timer *rl__timers_due(rl__timers *h, int64_t now_us)
{
    rl__timer *t = rl__timers_first(h);

    if (t == NULL || t->at_us > now_us)
        return NULL;
    rl__timer_disarm(h, t);
    return t;
}
