/*
 * libFuzzer target for the URL parser (src/base/url.c): any bytes, as a
 * NUL-terminated string. Besides the sanitizers it checks what a caller
 * relies on: a parsed URL names exactly one endpoint with a port and a
 * database in range; a failure is EINVAL (or ENOTLS) with a detail.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "url.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_parsed(const rl__url *u)
{
    if ((u->host == NULL) == (u->path == NULL))
        abort();
    if (u->host != NULL && (u->port < 1 || u->port > 65535 || !*u->host))
        abort();
    if (u->path != NULL && u->path[0] != '/')
        abort();
    if (u->db < 0 || u->db > 1000000)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    char *s = malloc(size + 1);
    rl__url u;
    redislock_err err;

    if (s == NULL)
        return 0;
    memcpy(s, data, size);
    s[size] = '\0';
    err = rl__url_parse(s, &u);
    if (err == REDISLOCK_OK)
        check_parsed(&u);
    else if ((err != REDISLOCK_EINVAL && err != REDISLOCK_ENOTLS &&
              err != REDISLOCK_ENOMEM) ||
             redislock_errdetail()[0] == '\0')
        abort();
    rl__url_free(&u);
    free(s);
    return 0;
}
