/*
 * loop_libevent [URL [KEY]]: a lock taken and given back on a libevent
 * loop (<redislock/libevent.h>, redislock_loop(3)); event_base_dispatch
 * returns once the job is done. The job: loop_job.h.
 */
#include <event2/event.h>
#include <redislock/libevent.h>

#include "loop_job.h"

int main(int argc, char **argv)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    struct event_base *base;
    redislock_libevent *a;
    job j;

    if (job_open(argc, argv, &c, &l) != 0)
        return 2;
    if ((base = event_base_new()) == NULL ||
        redislock_libevent_new(&a, c, base) != REDISLOCK_OK) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    if (job_start(&j, redislock_libevent_loop(a), l) == 0) {
        event_base_dispatch(base);
        printf("the loop ended\n");
    }
    redislock_libevent_free(a);
    event_base_free(base);
    redislock_lock_free(l);
    redislock_client_free(c);
    return j.status;
}
