#include "seen.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

/* Masters remembered at once: a cluster's, with room for failovers. */
#define RL_SEEN_MAX 64
#define RL_REPLID_LEN 40

typedef struct master {
    char id[RL_REPLID_LEN + 1];
    int most;        /* replicas online, the most seen */
    int64_t most_ms; /* when most was last reached */
    int64_t used_ms; /* when last asked about, for replacing */
} master;

struct rl__seen {
    pthread_mutex_t mu;
    int guess;
    int n;
    master m[RL_SEEN_MAX];
};

rl__seen *rl__seen_new(void)
{
    rl__seen *s = calloc(1, sizeof *s);

    if (s == NULL)
        return NULL;
    pthread_mutex_init(&s->mu, NULL);
    s->guess = 1;
    return s;
}

void rl__seen_free(rl__seen *s)
{
    if (s == NULL)
        return;
    pthread_mutex_destroy(&s->mu);
    free(s);
}

int rl__seen_guess(rl__seen *s)
{
    int g;

    pthread_mutex_lock(&s->mu);
    g = s->guess;
    pthread_mutex_unlock(&s->mu);
    return g;
}

/* The replication ID in info into id, and the replicas it lists online
 * (lines "slaveN:...,state=online,..."); -1 when info is not a master's. */
static int parse(const char *info, char id[RL_REPLID_LEN + 1])
{
    const char *p = strstr(info, "master_replid:");
    int online = 0;

    if (strstr(info, "role:master") == NULL || p == NULL)
        return -1;
    p += strlen("master_replid:");
    memcpy(id, p, strnlen(p, RL_REPLID_LEN));
    id[strnlen(p, RL_REPLID_LEN)] = '\0';
    for (p = info; (p = strstr(p, "\nslave")) != NULL; p++) {
        const char *end = strchr(p + 1, '\n');
        const char *st = strstr(p, "state=online");

        online += st != NULL && (end == NULL || st < end);
    }
    return online;
}

/* The entry for id, made (replacing the least recently asked) if new. */
static master *find(rl__seen *s, const char *id, int64_t now_ms)
{
    master *e = NULL;
    int i;

    for (i = 0; i < s->n; i++)
        if (strcmp(s->m[i].id, id) == 0)
            return &s->m[i];
    if (s->n < RL_SEEN_MAX) {
        e = &s->m[s->n++];
    } else {
        for (e = &s->m[0], i = 1; i < s->n; i++)
            if (s->m[i].used_ms < e->used_ms)
                e = &s->m[i];
    }
    memset(e, 0, sizeof *e);
    strcpy(e->id, id);
    e->most_ms = now_ms;
    return e;
}

int rl__seen_need(rl__seen *s, const char *info, int64_t now_ms)
{
    char id[RL_REPLID_LEN + 1];
    int online = parse(info, id), need;
    master *e;

    if (online < 0)
        return -1;
    pthread_mutex_lock(&s->mu);
    e = find(s, id, now_ms);
    if (online >= e->most || now_ms - e->most_ms > RL_SEEN_FORGET_MS) {
        e->most = online;
        e->most_ms = now_ms;
    }
    e->used_ms = now_ms;
    need = e->most > 1 ? e->most : 1;
    s->guess = need;
    pthread_mutex_unlock(&s->mu);
    return need;
}
