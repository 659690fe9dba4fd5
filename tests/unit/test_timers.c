/*
 * The timer heap (src/base/timers.c) against a model: random arms, re-arms,
 * disarms and pops of due timers, each checked against a plain array
 * searched in full. RL_TIMERS_SEED replays a run (the seed is logged).
 */
#include <stdint.h>
#include <stdlib.h>

#include "harness/util.h"
#include "test.h"
#include "timers.h"

#define NT 200
#define STEPS 100000

/* The model's view of timer i: armed, and its (at, order). */
typedef struct mt {
    int armed;
    int64_t at;
    uint64_t order;
} mt;

/* The model's earliest armed timer due by now (INT64_MAX: any), or -1. */
static int model_first(const mt *m, int64_t now)
{
    int i, best = -1;

    for (i = 0; i < NT; i++)
        if (m[i].armed && m[i].at <= now &&
            (best < 0 || m[i].at < m[best].at ||
             (m[i].at == m[best].at && m[i].order < m[best].order)))
            best = i;
    return best;
}

void test_timers_heap_against_model(void)
{
    static rl__timer t[NT];
    static mt m[NT];
    rl__timers h;
    uint64_t seed = th_seed("RL_TIMERS_SEED"), armed = 0;
    unsigned r = (unsigned)seed;
    int step, i, n = 0;

    rl__timers_init(&h);
    for (i = 0; i < NT; i++)
        t[i].slot = 0;
    for (step = 0; step < STEPS; step++) {
        int op = rand_r(&r) % 10, k = rand_r(&r) % NT;
        int64_t at = rand_r(&r) % 1000;
        rl__timer *got;
        int want;

        if (op < 5) {
            /* Arm or re-arm: ties are common with 1000 instants. */
            ASSERT_OK(rl__timer_arm(&h, &t[k], at));
            n += !m[k].armed;
            m[k] = (mt){1, at, armed++};
        } else if (op < 7) {
            rl__timer_disarm(&h, &t[k]);
            n -= m[k].armed;
            m[k].armed = 0;
        } else {
            /* Pop what is due by a random now, one by one. */
            for (;;) {
                got = rl__timers_due(&h, at);
                want = model_first(m, at);
                if (got == NULL && want < 0)
                    break;
                if (got == NULL || want < 0 || got != &t[want])
                    test_fail_(__FILE__, __LINE__,
                               "step %d (RL_TIMERS_SEED=%llu): popped timer "
                               "%d, the model says %d",
                               step, (unsigned long long)seed,
                               got ? (int)(got - t) : -1, want);
                ASSERT(!rl__timer_armed(got));
                m[want].armed = 0;
                n--;
            }
        }
        want = model_first(m, INT64_MAX);
        got = rl__timers_first(&h);
        if ((want < 0) != (got == NULL) || (got && got != &t[want]))
            test_fail_(__FILE__, __LINE__,
                       "step %d (RL_TIMERS_SEED=%llu): first is %d, the model "
                       "says %d",
                       step, (unsigned long long)seed,
                       got ? (int)(got - t) : -1, want);
        ASSERT_EQ_INT((int)h.n, n);
    }
    test_log("seed %llu: %d steps, %d armed at the end",
             (unsigned long long)seed, STEPS, n);
    rl__timers_free(&h);
    for (i = 0; i < NT; i++)
        ASSERT(!rl__timer_armed(&t[i]));
}

/* Disarming what is not armed, and re-arming in place, earlier and later;
 * an empty heap has no first and nothing due. */
void test_timers_edges(void)
{
    rl__timers h;
    rl__timer a = {0}, b = {0}, c = {0};

    rl__timers_init(&h);
    ASSERT(rl__timers_first(&h) == NULL);
    ASSERT(rl__timers_due(&h, INT64_MAX) == NULL);
    rl__timer_disarm(&h, &a);
    ASSERT_OK(rl__timer_arm(&h, &a, 10));
    ASSERT_OK(rl__timer_arm(&h, &b, 20));
    ASSERT_OK(rl__timer_arm(&h, &c, 10));
    ASSERT(rl__timers_first(&h) == &a);
    ASSERT_OK(rl__timer_arm(&h, &a, 30)); /* later: behind b */
    ASSERT(rl__timers_first(&h) == &c);
    ASSERT_OK(rl__timer_arm(&h, &b, 5)); /* earlier: first */
    ASSERT(rl__timers_due(&h, 4) == NULL);
    ASSERT(rl__timers_due(&h, 100) == &b);
    ASSERT(rl__timers_due(&h, 100) == &c);
    ASSERT(rl__timers_due(&h, 100) == &a);
    ASSERT(rl__timers_due(&h, 100) == NULL);
    ASSERT(!rl__timer_armed(&a) && !rl__timer_armed(&b) &&
           !rl__timer_armed(&c));
    rl__timers_free(&h);
}
