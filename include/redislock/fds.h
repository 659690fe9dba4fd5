/*
 * For the event-loop adapters (libevent.h, libuv.h, libev.h): a table of
 * one pointer per fd, grown as the library's sockets need.
 */
#ifndef REDISLOCK_FDS_H
#define REDISLOCK_FDS_H

#include <stdlib.h>
#include <string.h>

/* Makes room for fd in the table *tab of *n pointers (the new ones
 * NULL); 0 when out of memory (that socket's operations then end by their
 * deadlines). */
static inline int redislock_fds_room_(void ***tab, int *n, int fd)
{
    int want = *n ? *n : 16;
    void **t;

    if (fd < *n)
        return 1;
    while (want <= fd)
        want *= 2;
    if ((t = (void **)realloc(*tab, (size_t)want * sizeof *t)) == NULL)
        return 0;
    memset(t + *n, 0, (size_t)(want - *n) * sizeof *t);
    *tab = t;
    *n = want;
    return 1;
}

#endif
