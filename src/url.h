/* Parsing of the connection URLs the client accepts. Pure: no I/O. */
#ifndef RL_URL_H
#define RL_URL_H

#include "redislock.h"

typedef struct rl__url {
    char *host; /* TCP host (brackets of an IPv6 literal removed), or NULL */
    int port;   /* TCP port, 1..65535 */
    char *path; /* unix socket path, or NULL */
    char *user; /* ACL user, or NULL */
    char *password; /* NULL when the URL has none */
    int db;         /* SELECT index; 0 needs no SELECT */
    int tls;        /* rediss:// */
    /* From the query (?connect_timeout=, ?timeout=...); 0: not given. */
    int64_t connect_timeout_ms;
    int64_t command_timeout_ms;
} rl__url;

/* The longest timeout a URL may set: one day. */
#define RL_URL_TIMEOUT_MAX_MS (24LL * 3600 * 1000)

/* Parses s into u (which the caller frees with rl__url_free even on
 * failure). Returns REDISLOCK_EINVAL with a detail naming the problem, or
 * REDISLOCK_ENOTLS for rediss://. */
redislock_err rl__url_parse(const char *s, rl__url *u);

void rl__url_free(rl__url *u);

#endif
