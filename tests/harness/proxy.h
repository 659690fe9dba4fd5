/*
 * A TCP proxy for network-fault tests: it listens on a loopback port and
 * forwards each connection to a server's TCP port, from a thread of its
 * own.
 *
 * Bytes from a client to the server can be held back. Each chunk read from
 * a client is forwarded once the delay in force when it was read has
 * passed, in order; a chunk still held when its client closes the
 * connection is forwarded all the same, as a packet already in the network
 * arrives after its sender gave up, and the server's side is closed after
 * it. Replies from the server pass at once (to nobody, if the client has
 * gone).
 *
 * Every function fails the calling test on error.
 */
#ifndef TH_PROXY_H
#define TH_PROXY_H

#include <stdint.h>

typedef struct th_proxy th_proxy;

/* Starts a proxy to 127.0.0.1:upstream_port on a free loopback port. */
th_proxy *th_proxy_start(int upstream_port);

/* The port the proxy listens on. */
int th_proxy_port(const th_proxy *p);

/* Holds client-to-server bytes read from now on for ms before forwarding
 * them (0: forward at once). Chunks already held keep their time. */
void th_proxy_set_delay(th_proxy *p, int64_t ms);

typedef struct th_proxy_stats {
    long accepted;       /* client connections */
    long held;           /* chunks read while a delay was in force */
    long held_forwarded; /* of those, forwarded to the server */
    /* th_now_ms() when the last held chunk was forwarded; 0 if none. */
    int64_t last_held_forward_ms;
} th_proxy_stats;

void th_proxy_stats_get(th_proxy *p, th_proxy_stats *out);

/* Stops the thread, closes every connection (dropping what is held) and
 * frees p. NULL is a no-op. */
void th_proxy_stop(th_proxy *p);

#endif
