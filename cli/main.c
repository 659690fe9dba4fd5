/* redislock(1): dispatch, global options, help. */
#include "cli.h"

#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#define CLI_STR_(x) #x
#define CLI_STR(x) CLI_STR_(x)
#define CLI_VERSION                                                            \
    CLI_STR(REDISLOCK_VERSION_MAJOR)                                           \
    "." CLI_STR(REDISLOCK_VERSION_MINOR) "." CLI_STR(REDISLOCK_VERSION_PATCH)

static const char help_text[] =
    "Usage: redislock [-u URL] COMMAND [OPTION...] ARG...\n"
    "Distributed locks on Redis.\n"
    "\n"
    "Commands:\n"
    "  run [-t TTL] [-w SECONDS | -n] [-E CODE] KEY [--] COMMAND [ARG...]\n"
    "      Take the lock, run COMMAND with REDISLOCK_KEY and REDISLOCK_TOKEN\n"
    "      in its environment, renew the lease every TTL/3 while it runs,\n"
    "      release it when COMMAND ends and exit with COMMAND's status\n"
    "      (128+N if a signal N killed it). SIGHUP, SIGINT, SIGQUIT,\n"
    "      SIGTERM, SIGUSR1 and SIGUSR2 are passed on to COMMAND. If the\n"
    "      lock is lost, COMMAND gets SIGTERM, SIGKILL 5 s later.\n"
    "  acquire [-t TTL] [-w SECONDS | -n] [-E CODE] KEY\n"
    "      Take the lock and print its token. Nothing renews the lease.\n"
    "  release KEY TOKEN\n"
    "      Release a lock taken by acquire.\n"
    "  extend [-t TTL] KEY TOKEN\n"
    "      Reset the lease of a lock taken by acquire to TTL.\n"
    "  status [--json] KEY\n"
    "      Print 'held ttl_ms=N' or 'free' (ttl_ms=-1: the key has no\n"
    "      expiry); with --json {\"key\":KEY,\"held\":true,\"ttl_ms\":N}\n"
    "      or {\"key\":KEY,\"held\":false}.\n"
    "\n"
    "Options:\n"
    "  -u, --url URL      the Redis server: redis://[user[:pass]@]host"
    "[:port][/db]\n"
    "                     or unix:///path/to.sock[?db=N]; default\n"
    "                     $REDISLOCK_URL, else $REDIS_URL, else\n"
    "                     redis://127.0.0.1:6379\n"
    "  -t, --ttl TTL      lease length (default 30s, at most 30 days)\n"
    "  -w, --wait, --timeout SECONDS\n"
    "                     wait at most this long for a held lock\n"
    "  -n, --nonblock     do not wait (the default is to wait forever)\n"
    "  -E, --conflict-exit-code CODE\n"
    "                     exit status when the lock is not obtained\n"
    "  --json             status: print JSON\n"
    "  -h, --help         print this help\n"
    "  -V, --version      print the version\n"
    "Durations: 500ms, 30s, 2m, 1h, 1.5s; a bare number means seconds.\n"
    "Password: from the URL, else $REDISCLI_AUTH.\n"
    "\n"
    "Exit status:\n"
    "  0        success; run: COMMAND's own status is passed through\n"
    "  1        the lock was not obtained (or CODE from -E);\n"
    "           release, extend: the lock had expired and is free\n"
    "  2        release, extend: another owner holds the lock\n"
    "  64       usage error: bad option, key, TTL, URL, missing command\n"
    "  69       Redis is unreachable or did not answer in time\n"
    "  70       internal or protocol error\n"
    "  75       run: the lock was lost while COMMAND ran\n"
    "  77       Redis refused authentication\n"
    "  126, 127 run: COMMAND could not be executed, was not found\n"
    "  128+N    run: COMMAND was killed by signal N, or redislock got\n"
    "           signal N while waiting for the lock\n";

void cli_print_help(void)
{
    fputs(help_text, stdout);
}

static void print_version(void)
{
    printf("redislock %s (libredislock %s)\n", CLI_VERSION,
           redislock_version());
}

static const struct {
    const char *name;
    int (*fn)(int argc, char **argv, const cli_global *g);
} commands[] = {
    {"run", cli_cmd_run},         {"acquire", cli_cmd_acquire},
    {"release", cli_cmd_release}, {"extend", cli_cmd_extend},
    {"status", cli_cmd_status},
};

static int dispatch(int argc, char **argv, const cli_global *g)
{
    char q[CLI_QUOTE_MAX];
    size_t i;

    if (argc == 0)
        return cli_usage(NULL, "missing command (run, acquire, release, "
                               "extend or status)");
    for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[0], commands[i].name) == 0)
            return commands[i].fn(argc, argv, g);
    if (strcmp(argv[0], "help") == 0) {
        cli_print_help();
        return CLI_EXIT_OK;
    }
    if (strcmp(argv[0], "version") == 0) {
        print_version();
        return CLI_EXIT_OK;
    }
    return cli_usage(NULL, "unknown command '%s'",
                     cli_quote(argv[0], q, sizeof q));
}

/* Writes buffered output now, so that a full disk or closed pipe is an
 * error rather than silence. A failure already reported keeps its
 * status and its one line. */
static int finish(int rc)
{
    if ((fflush(stdout) != 0 || ferror(stdout)) && rc == CLI_EXIT_OK) {
        cli_err(NULL, "cannot write to standard output");
        return CLI_EXIT_SOFTWARE;
    }
    return rc;
}

/*
 * A closed standard descriptor would be reused by the Redis socket, and
 * the token or a message would then be sent to Redis. Fill the gap with
 * /dev/null opened read-only, so that writes still fail as they would have.
 */
static void guard_std_fds(void)
{
    int fd;

    while ((fd = open("/dev/null", O_RDONLY)) >= 0 && fd <= 2)
        ;
    if (fd > 2)
        close(fd);
}

int main(int argc, char **argv)
{
    static const cli_optdef defs[] = {
        {'u', "url", 1},
        {'h', "help", 0},
        {'V', "version", 0},
        {0, NULL, 0},
    };
    cli_args a = {argc, argv, 1, 0, NULL};
    cli_global g;
    struct sigaction ign;
    const char *val;
    int id;

    guard_std_fds();
    memset(&g, 0, sizeof g);
    while ((id = cli_getopt(&a, defs, &val)) > 0) {
        if (id == 'u')
            g.url = val;
        else if (id == 'h')
            cli_print_help();
        else
            print_version();
        if (id != 'u')
            return finish(CLI_EXIT_OK);
    }
    if (id < 0)
        return CLI_EXIT_USAGE;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &g.sigpipe_orig);
    return finish(dispatch(argc - a.i, argv + a.i, &g));
}
