#include "canon.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <limits.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Whether sa is 127.0.0.1, ::1 or ::ffff:127.0.0.1. Other 127/8 addresses
 * are not: a server bound to 127.0.0.1 does not answer on 127.0.0.2. */
static int is_loopback(const struct sockaddr *sa)
{
    static const unsigned char mapped[12] = {0, 0, 0, 0, 0,    0,
                                             0, 0, 0, 0, 0xff, 0xff};
    const struct sockaddr_in6 *s6 = (const struct sockaddr_in6 *)sa;
    const unsigned char *b = s6->sin6_addr.s6_addr;

    if (sa->sa_family == AF_INET)
        return ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) ==
               INADDR_LOOPBACK;
    if (sa->sa_family != AF_INET6)
        return 0;
    if (IN6_IS_ADDR_LOOPBACK(&s6->sin6_addr))
        return 1;
    return memcmp(b, mapped, sizeof mapped) == 0 && b[12] == 127 &&
           b[13] == 0 && b[14] == 0 && b[15] == 1;
}

/* The name of one address into out: RL_CANON_LOOPBACK for the loopback
 * host, else its numeric form (lowercase, shortest IPv6). Returns 0, or
 * -1 for an address that is neither IPv4 nor IPv6. */
static int rl__canon_addr(const struct sockaddr *sa, socklen_t len, char *out,
                          size_t size)
{
    char buf[NI_MAXHOST];

    if (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)
        return -1;
    if (is_loopback(sa)) {
        snprintf(out, size, "%s", RL_CANON_LOOPBACK);
        return 0;
    }
    if (getnameinfo(sa, len, buf, sizeof buf, NULL, 0, NI_NUMERICHOST) != 0)
        return -1;
    rl__canon_dns_name(buf, out, size);
    return 0;
}

int rl__canon_addrs(const struct addrinfo *ai, char *out, size_t size)
{
    const struct addrinfo *p;

    if (ai == NULL)
        return 0;
    for (p = ai; p != NULL; p = p->ai_next)
        if (p->ai_addr == NULL || !is_loopback(p->ai_addr))
            return 0;
    snprintf(out, size, "%s", RL_CANON_LOOPBACK);
    return 1;
}

void rl__canon_dns_name(const char *host, char *out, size_t size)
{
    size_t i, n = strlen(host);

    if (size == 0)
        return;
    /* "redis.example." and "redis.example" are one name; "." stays. */
    if (n > 1 && host[n - 1] == '.')
        n--;
    for (i = 0; i < n && i + 1 < size; i++)
        out[i] = (char)tolower((unsigned char)host[i]);
    out[i] = '\0';
}

void rl__canon_host(const char *host, char *out, size_t size)
{
    struct addrinfo hints, *ai = NULL;
    int named;

    memset(&hints, 0, sizeof hints);
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_NUMERICHOST;
    if (getaddrinfo(host, NULL, &hints, &ai) == 0) {
        named = rl__canon_addr(ai->ai_addr, ai->ai_addrlen, out, size) == 0;
        freeaddrinfo(ai);
        if (named)
            return;
    } else {
        /* A name that does not resolve now keeps its spelling: it may
         * resolve later, and a sharded client cannot be made without
         * reaching it anyway. */
        hints.ai_flags = 0;
        ai = NULL;
        if (getaddrinfo(host, NULL, &hints, &ai) == 0) {
            named = rl__canon_addrs(ai, out, size);
            freeaddrinfo(ai);
            if (named)
                return;
        }
    }
    rl__canon_dns_name(host, out, size);
}

void rl__canon_tcp(char *out, size_t size, const char *host, int port, int db)
{
    snprintf(out, size, "%s:%d/%d", host, port, db);
}

void rl__canon_unix(char *out, size_t size, const char *path, long tcp_port,
                    int db)
{
    char real[PATH_MAX];

    if (tcp_port > 0 && tcp_port <= 65535) {
        snprintf(out, size, "%s:%ld/%d", RL_CANON_LOOPBACK, tcp_port, db);
        return;
    }
    if (realpath(path, real) == NULL)
        snprintf(real, sizeof real, "%s", path);
    snprintf(out, size, "%s/%d", real, db);
}

int rl__canon_info_field(const char *info, size_t len, const char *field,
                         char *out, size_t size)
{
    size_t flen = strlen(field), vlen;
    const char *p = info, *end = info + len, *eol;

    while (p < end) {
        eol = memchr(p, '\n', (size_t)(end - p));
        if (eol == NULL)
            eol = end;
        if ((size_t)(eol - p) > flen && memcmp(p, field, flen) == 0 &&
            p[flen] == ':') {
            vlen = (size_t)(eol - p) - flen - 1;
            if (vlen > 0 && p[flen + vlen] == '\r')
                vlen--;
            if (vlen >= size)
                return -1;
            memcpy(out, p + flen + 1, vlen);
            out[vlen] = '\0';
            return 0;
        }
        p = eol + 1;
    }
    return -1;
}
