#include "shard.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A 64-bit hash with good avalanche (FNV-1a, then a 64-bit finaliser). */
static uint64_t rl__hash64(const void *data, size_t len)
{
    const unsigned char *p = data;
    uint64_t h = 0xcbf29ce484222325ULL;
    size_t i;

    for (i = 0; i < len; i++) {
        h ^= p[i];
        h *= 0x100000001b3ULL;
    }
    /* FNV-1a alone clusters similar short strings; mix the bits. */
    h ^= h >> 33;
    h *= 0xff51afd7ed558ccdULL;
    h ^= h >> 33;
    h *= 0xc4ceb9fe1a85ec53ULL;
    h ^= h >> 33;
    return h;
}

typedef struct point {
    uint64_t at;
    uint32_t server;
} point;

static int by_position(const void *a, const void *b)
{
    const point *x = a, *y = b;

    if (x->at != y->at)
        return x->at < y->at ? -1 : 1;
    return x->server < y->server ? -1 : x->server > y->server;
}

int rl__ring_build(rl__ring *r, const char *const *names, size_t nnames)
{
    size_t i, v, n = nnames * RL_RING_VNODES;
    point *pts = calloc(n ? n : 1, sizeof *pts);
    char buf[512];

    memset(r, 0, sizeof *r);
    r->points = calloc(n ? n : 1, sizeof *r->points);
    r->server = calloc(n ? n : 1, sizeof *r->server);
    if (pts == NULL || r->points == NULL || r->server == NULL) {
        free(pts);
        rl__ring_free(r);
        return -1;
    }
    for (i = 0; i < nnames; i++)
        for (v = 0; v < RL_RING_VNODES; v++) {
            int len = snprintf(buf, sizeof buf, "%s#%zu", names[i], v);
            pts[i * RL_RING_VNODES + v].at = rl__hash64(
                buf, (size_t)len < sizeof buf ? (size_t)len : sizeof buf - 1);
            pts[i * RL_RING_VNODES + v].server = (uint32_t)i;
        }
    qsort(pts, n, sizeof *pts, by_position);
    for (i = 0; i < n; i++) {
        r->points[i] = pts[i].at;
        r->server[i] = pts[i].server;
    }
    r->n = n;
    free(pts);
    return 0;
}

size_t rl__ring_lookup(const rl__ring *r, const void *key, size_t len)
{
    uint64_t h = rl__hash64(key, len);
    size_t lo = 0, hi = r->n;

    if (r->n == 0)
        return 0;
    /* The first point at or after h, wrapping round to the first. */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (r->points[mid] < h)
            lo = mid + 1;
        else
            hi = mid;
    }
    return r->server[lo == r->n ? 0 : lo];
}

void rl__ring_free(rl__ring *r)
{
    free(r->points);
    free(r->server);
    memset(r, 0, sizeof *r);
}
