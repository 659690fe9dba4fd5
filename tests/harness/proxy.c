#include "proxy.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "../test.h"
#include "util.h"

/* Connections open at once; a test that abandons requests opens one per
 * retry, and each lives until its held bytes have been forwarded. */
#define TH_PROXY_CONNS 256
#define TH_PROXY_CHUNK 65536

/* Bytes read from a client, to be forwarded at due_ms. */
typedef struct chunk {
    struct chunk *next;
    int64_t due_ms;
    int held;
    size_t len;
    char data[];
} chunk;

typedef struct pconn {
    int cfd, sfd; /* client and server sides; -1 once closed */
    int shut;     /* the server side was shut down for writing */
    chunk *head, *tail;
} pconn;

struct th_proxy {
    int lfd, port, upstream_port;
    int wake[2]; /* a byte here makes the thread look at stop */
    atomic_int stop;
    _Atomic int64_t delay_ms;
    pthread_t th;
    pthread_mutex_t mu; /* guards stats */
    th_proxy_stats stats;
    pconn conns[TH_PROXY_CONNS];
    /* The poll set: the wake pipe, the listener, then each open side;
     * idx[i] is 2 * the connection of fds[i], plus 1 for a server side. */
    struct pollfd fds[2 + 2 * TH_PROXY_CONNS];
    int idx[2 + 2 * TH_PROXY_CONNS];
};

static int listen_loopback(int *port)
{
    struct sockaddr_in sa;
    socklen_t len = sizeof sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (bind(fd, (struct sockaddr *)&sa, sizeof sa) != 0 ||
        listen(fd, 64) != 0 ||
        getsockname(fd, (struct sockaddr *)&sa, &len) != 0) {
        close(fd);
        return -1;
    }
    *port = ntohs(sa.sin_port);
    return fd;
}

static int connect_upstream(int port)
{
    struct sockaddr_in sa;
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;

    if (fd < 0)
        return -1;
    memset(&sa, 0, sizeof sa);
    sa.sin_family = AF_INET;
    sa.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    sa.sin_port = htons((uint16_t)port);
    if (connect(fd, (struct sockaddr *)&sa, sizeof sa) != 0) {
        close(fd);
        return -1;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    return fd;
}

/* Writes all of buf; 0, or -1 when the peer has gone. */
static int send_all(int fd, const char *buf, size_t len)
{
    while (len > 0) {
        ssize_t n = send(fd, buf, len, MSG_NOSIGNAL);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        buf += n;
        len -= (size_t)n;
    }
    return 0;
}

static void close_fd(int *fd)
{
    if (*fd >= 0)
        close(*fd);
    *fd = -1;
}

static void drop_chunks(pconn *c)
{
    while (c->head != NULL) {
        chunk *k = c->head;
        c->head = k->next;
        free(k);
    }
    c->tail = NULL;
}

static void accept_one(th_proxy *p)
{
    int fd = accept4(p->lfd, NULL, NULL, SOCK_CLOEXEC), one = 1, i;

    if (fd < 0)
        return;
    for (i = 0; i < TH_PROXY_CONNS; i++)
        if (p->conns[i].cfd < 0 && p->conns[i].sfd < 0)
            break;
    if (i == TH_PROXY_CONNS) {
        close(fd);
        return;
    }
    setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
    p->conns[i].sfd = connect_upstream(p->upstream_port);
    if (p->conns[i].sfd < 0) {
        close(fd);
        return;
    }
    p->conns[i].cfd = fd;
    p->conns[i].shut = 0;
    pthread_mutex_lock(&p->mu);
    p->stats.accepted++;
    pthread_mutex_unlock(&p->mu);
}

/* The client sent bytes, or closed its side. */
static void from_client(th_proxy *p, pconn *c)
{
    char buf[TH_PROXY_CHUNK];
    ssize_t n = read(c->cfd, buf, sizeof buf);
    int64_t delay = atomic_load(&p->delay_ms);
    chunk *k;

    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) {
        /* What it sent before is still on its way. */
        close_fd(&c->cfd);
        return;
    }
    k = malloc(sizeof *k + (size_t)n);
    ASSERT(k != NULL);
    k->next = NULL;
    k->due_ms = th_now_ms() + delay;
    k->held = delay > 0;
    k->len = (size_t)n;
    memcpy(k->data, buf, (size_t)n);
    if (c->tail != NULL)
        c->tail->next = k;
    else
        c->head = k;
    c->tail = k;
    if (k->held) {
        pthread_mutex_lock(&p->mu);
        p->stats.held++;
        pthread_mutex_unlock(&p->mu);
    }
}

/* The server answered, or closed the connection. */
static void from_server(pconn *c)
{
    char buf[TH_PROXY_CHUNK];
    ssize_t n = read(c->sfd, buf, sizeof buf);

    if (n < 0 && errno == EINTR)
        return;
    if (n <= 0) {
        close_fd(&c->sfd);
        close_fd(&c->cfd);
        drop_chunks(c);
        return;
    }
    if (c->cfd >= 0 && send_all(c->cfd, buf, (size_t)n) != 0)
        close_fd(&c->cfd);
}

/* Forwards the chunks that are due; once a closed client's last chunk has
 * gone, tells the server that nothing more comes. */
static void forward_due(th_proxy *p, pconn *c, int64_t now)
{
    while (c->sfd >= 0 && c->head != NULL && c->head->due_ms <= now) {
        chunk *k = c->head;
        if (send_all(c->sfd, k->data, k->len) != 0) {
            close_fd(&c->sfd);
            close_fd(&c->cfd);
            drop_chunks(c);
            return;
        }
        if (k->held) {
            pthread_mutex_lock(&p->mu);
            p->stats.held_forwarded++;
            p->stats.last_held_forward_ms = th_now_ms();
            pthread_mutex_unlock(&p->mu);
        }
        c->head = k->next;
        if (c->head == NULL)
            c->tail = NULL;
        free(k);
    }
    if (c->cfd < 0 && c->sfd >= 0 && c->head == NULL && !c->shut) {
        shutdown(c->sfd, SHUT_WR);
        c->shut = 1;
    }
}

/* Fills p->fds; *timeout is when the next held chunk is due. */
static int build_set(th_proxy *p, int *timeout)
{
    struct pollfd *fds = p->fds;
    int *idx = p->idx;
    int64_t now = th_now_ms(), next = now + 100;
    int n = 2, i;

    fds[0] = (struct pollfd){p->wake[0], POLLIN, 0};
    fds[1] = (struct pollfd){p->lfd, POLLIN, 0};
    for (i = 0; i < TH_PROXY_CONNS; i++) {
        pconn *c = &p->conns[i];
        if (c->cfd >= 0) {
            idx[n] = 2 * i;
            fds[n++] = (struct pollfd){c->cfd, POLLIN, 0};
        }
        if (c->sfd >= 0) {
            idx[n] = 2 * i + 1;
            fds[n++] = (struct pollfd){c->sfd, POLLIN, 0};
        }
        if (c->head != NULL && c->head->due_ms < next)
            next = c->head->due_ms;
    }
    *timeout = next > now ? (int)(next - now) : 0;
    return n;
}

static void *run(void *arg)
{
    th_proxy *p = arg;
    struct pollfd *fds = p->fds;
    int *idx = p->idx;
    int n, i, timeout;
    char b;

    while (!atomic_load(&p->stop)) {
        n = build_set(p, &timeout);
        if (poll(fds, (nfds_t)n, timeout) < 0 && errno != EINTR)
            break;
        if (fds[0].revents & POLLIN)
            while (read(p->wake[0], &b, 1) == 1)
                ;
        if (fds[1].revents & POLLIN)
            accept_one(p);
        for (i = 2; i < n; i++) {
            pconn *c = &p->conns[idx[i] / 2];
            if (!(fds[i].revents & (POLLIN | POLLHUP | POLLERR)))
                continue;
            if (idx[i] % 2 == 0 && c->cfd == fds[i].fd)
                from_client(p, c);
            else if (idx[i] % 2 == 1 && c->sfd == fds[i].fd)
                from_server(c);
        }
        for (i = 0; i < TH_PROXY_CONNS; i++)
            forward_due(p, &p->conns[i], th_now_ms());
    }
    return NULL;
}

th_proxy *th_proxy_start(int upstream_port)
{
    th_proxy *p = calloc(1, sizeof *p);
    int i;

    ASSERT(p != NULL);
    p->upstream_port = upstream_port;
    for (i = 0; i < TH_PROXY_CONNS; i++)
        p->conns[i].cfd = p->conns[i].sfd = -1;
    pthread_mutex_init(&p->mu, NULL);
    p->lfd = listen_loopback(&p->port);
    if (p->lfd < 0)
        test_fail_(__FILE__, __LINE__, "proxy: cannot listen: %s",
                   strerror(errno));
    ASSERT_EQ_INT(pipe2(p->wake, O_CLOEXEC | O_NONBLOCK), 0);
    ASSERT_EQ_INT(pthread_create(&p->th, NULL, run, p), 0);
    return p;
}

int th_proxy_port(const th_proxy *p)
{
    return p->port;
}

void th_proxy_set_delay(th_proxy *p, int64_t ms)
{
    atomic_store(&p->delay_ms, ms);
}

void th_proxy_stats_get(th_proxy *p, th_proxy_stats *out)
{
    pthread_mutex_lock(&p->mu);
    *out = p->stats;
    pthread_mutex_unlock(&p->mu);
}

void th_proxy_stop(th_proxy *p)
{
    int i;

    if (p == NULL)
        return;
    atomic_store(&p->stop, 1);
    while (write(p->wake[1], "x", 1) < 0 && errno == EINTR)
        ;
    pthread_join(p->th, NULL);
    for (i = 0; i < TH_PROXY_CONNS; i++) {
        close_fd(&p->conns[i].cfd);
        close_fd(&p->conns[i].sfd);
        drop_chunks(&p->conns[i]);
    }
    close(p->lfd);
    close(p->wake[0]);
    close(p->wake[1]);
    pthread_mutex_destroy(&p->mu);
    free(p);
}
