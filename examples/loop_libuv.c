/*
 * loop_libuv [URL [KEY]]: a lock taken and given back on a libuv loop
 * (<redislock/libuv.h>, redislock_loop(3)); uv_run returns once the job
 * is done. The job: loop_job.h.
 */
#define _POSIX_C_SOURCE 200809L /* uv.h needs pthread_rwlock_t */

#include <uv.h>
#include <redislock/libuv.h>

#include "loop_job.h"

int main(int argc, char **argv)
{
    redislock_client *c = NULL;
    redislock_lock *l = NULL;
    uv_loop_t *uv = uv_default_loop();
    redislock_libuv *a;
    job j;

    if (job_open(argc, argv, &c, &l) != 0)
        return 2;
    if (redislock_libuv_new(&a, c, uv) != REDISLOCK_OK) {
        fprintf(stderr, "out of memory\n");
        return 2;
    }
    if (job_start(&j, redislock_libuv_loop(a), l) == 0) {
        uv_run(uv, UV_RUN_DEFAULT);
        printf("the loop ended\n");
    }
    redislock_libuv_free(a);
    /* The adapter's handles close as the loop runs their callbacks. */
    uv_run(uv, UV_RUN_DEFAULT);
    uv_loop_close(uv);
    redislock_lock_free(l);
    redislock_client_free(c);
    return j.status;
}
