/*
 * The history file and the random numbers every process draws from.
 */
#include <errno.h>
#include <inttypes.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "excl.h"
#include "test.h"

void excl_rng_seed(excl_rng *r, uint64_t seed, uint64_t stream)
{
    r->s = seed ^ (stream * 0x9e3779b97f4a7c15ULL);
    (void)excl_rng_next(r);
}

uint64_t excl_rng_next(excl_rng *r)
{
    uint64_t z = (r->s += 0x9e3779b97f4a7c15ULL);

    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
}

int64_t excl_rng_range(excl_rng *r, int64_t lo, int64_t hi)
{
    if (hi <= lo)
        return lo;
    return lo + (int64_t)(excl_rng_next(r) % (uint64_t)(hi - lo + 1));
}

int excl_rng_chance(excl_rng *r, int percent)
{
    return (int)(excl_rng_next(r) % 100) < percent;
}

int64_t excl_now_us(void)
{
    struct timespec ts;

    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

int excl_history_open(const char *path)
{
    int fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0600);

    if (fd < 0)
        test_fail_(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
    return fd;
}

/* Appends the n records in buf with one write(). */
static void add_n(int fd, const excl_rec *buf, size_t n)
{
    ssize_t k;

    /* One write() of a few small records to an O_APPEND file lands whole,
     * after every earlier one, whichever process made it: a holder killed
     * with -9 leaves all of them or none. */
    do
        k = write(fd, buf, n * sizeof *buf);
    while (k < 0 && errno == EINTR);
    if (k != (ssize_t)(n * sizeof *buf)) {
        fprintf(stderr, "excl: history write: %s\n", strerror(errno));
        _exit(3);
    }
}

void excl_history_add(int fd, excl_rec *r)
{
    r->magic = EXCL_MAGIC;
    add_n(fd, r, 1);
}

void excl_history_add_each(int fd, excl_rec *r)
{
    excl_rec buf[EXCL_MAX_KEYS];
    size_t n = 0;
    int k;

    r->magic = EXCL_MAGIC;
    if (r->set == 0) {
        add_n(fd, r, 1);
        return;
    }
    for (k = 0; k < EXCL_MAX_KEYS; k++) {
        if (!(r->set & (1u << k)))
            continue;
        buf[n] = *r;
        buf[n++].key = (uint8_t)k;
    }
    add_n(fd, buf, n);
}

excl_rec *excl_history_read(const char *path, size_t *n)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    excl_rec *h;
    size_t want, got = 0, i, k = 0;
    ssize_t r;

    if (fd < 0 || fstat(fd, &st) != 0)
        test_fail_(__FILE__, __LINE__, "open %s: %s", path, strerror(errno));
    want = (size_t)st.st_size / sizeof *h;
    h = malloc((want ? want : 1) * sizeof *h);
    ASSERT(h != NULL);
    while (got < want * sizeof *h &&
           (r = read(fd, (char *)h + got, want * sizeof *h - got)) > 0)
        got += (size_t)r;
    close(fd);
    /* Only whole records with the magic count. */
    for (i = 0; i < got / sizeof *h; i++)
        if (h[i].magic == EXCL_MAGIC)
            h[k++] = h[i];
    *n = k;
    return h;
}

/* One record as a line of the excerpt (times in s from t_base). */
static void print_rec(const excl_rec *r, int64_t t_base)
{
    static const char *const kinds[] = {"?",      "acq",     "claim",
                                        "write",  "lease",   "attempt",
                                        "release", "loss",   "fault"};
    const char *k = r->kind <= EXCL_FAULT ? kinds[r->kind] : kinds[0];

    printf("      %-7s key %u pid %d acq %u%s t0 %.3f t1 %.3f fence %" PRId64
           " ttl %" PRId64 " x %" PRId64 " belief %.3f flags %u %s\n",
           k, r->key, r->pid, r->acq, r->share ? " share" : "",
           (double)(r->t0 - t_base) / 1e6,
           r->t1 != 0 ? (double)(r->t1 - t_base) / 1e6 : 0.0, r->fence,
           r->ttl_ms, r->x,
           r->kind == EXCL_CLAIM || r->kind == EXCL_LEASE
               ? (double)(r->belief - t_base) / 1e6
               : (double)r->belief,
           r->flags, r->what);
    if (r->kind == EXCL_LOSS && r->why[0] != '\0')
        printf("        told: %s\n", r->why);
}

void excl_history_excerpt(const excl_rec *h, size_t n, int64_t t_base,
                          double at_s)
{
    int64_t at = t_base + (int64_t)(at_s * 1e6);
    int64_t from = at - EXCL_EXCERPT_BEFORE_MS * 1000;
    int64_t to = at + EXCL_EXCERPT_AFTER_MS * 1000;
    size_t i, shown = 0;
    const excl_rec *r;

    printf("    the history from %.3f s to %.3f s (at most %d records, in "
           "the order written):\n",
           (double)(from - t_base) / 1e6, (double)(to - t_base) / 1e6,
           EXCL_EXCERPT_MAX);
    for (i = 0; i < n && shown < EXCL_EXCERPT_MAX; i++) {
        r = &h[i];
        if (r->t0 > to || (r->t0 < from && (r->t1 == 0 || r->t1 < from)))
            continue;
        print_rec(r, t_base);
        shown++;
    }
}
