/*
 * loop_libev [URL [KEY]]: a lock taken and given back on a libev loop
 * (<redislock/libev.h>, redislock_loop(3)); ev_run returns once the job
 * is done. The job: loop_job.h.
 */
#include <ev.h>
#include <redislock/libev.h>

#include "loop_job.h"

int main(int argc, char **argv)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    struct ev_loop *ev = EV_DEFAULT;
    redislock_libev *a;
    job j;

    if (job_open(argc, argv, &c, &l) != 0)
        return 2;
    if (redislock_libev_new(&a, c, ev) != REDISLOCK_OK) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    if (job_start(&j, redislock_libev_loop(a), l) == 0) {
        ev_run(ev, 0);
        printf("the loop ended\n");
    }
    redislock_libev_free(a);
    redislock_lock_free(l);
    redislock_client_free(c);
    return j.status;
}
