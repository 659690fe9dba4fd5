/* redislock(1): global options and dispatch to the subcommands. */
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
    {"status", cli_cmd_status},   {"list", cli_cmd_list},
    {"doctor", cli_cmd_doctor},   {"revoke", cli_cmd_revoke},
    {"check", cli_cmd_check},     {"elect", cli_cmd_elect},
    {"leader", cli_cmd_leader},
};

/* help: the overview, or with an operand that command's help. */
static int help(int argc, char **argv)
{
    char q[CLI_QUOTE_MAX];

    if (argc > 2)
        return cli_usage("help", "unexpected argument '%s': give one command",
                         cli_quote(argv[2], q, sizeof q));
    if (argc == 1 || strcmp(argv[1], "-h") == 0 ||
        strcmp(argv[1], "--help") == 0) {
        cli_print_help();
        return CLI_EXIT_OK;
    }
    if (cli_print_command_help(argv[1]) == 0)
        return CLI_EXIT_OK;
    return cli_usage("help",
                     "unknown command '%s': commands are run, acquire, "
                     "release, extend, revoke, check, elect, leader, status, "
                     "list, doctor, help and version",
                     cli_quote(argv[1], q, sizeof q));
}

static int dispatch(int argc, char **argv, const cli_global *g)
{
    char q[CLI_QUOTE_MAX];
    size_t i;

    if (argc == 0)
        return cli_usage(NULL, "missing command (run, acquire, release, "
                               "extend, revoke, check, elect, leader, "
                               "status, list or doctor)");
    for (i = 0; i < sizeof commands / sizeof commands[0]; i++)
        if (strcmp(argv[0], commands[i].name) == 0)
            return commands[i].fn(argc, argv, g);
    if (strcmp(argv[0], "help") == 0)
        return help(argc, argv);
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

/* The options before the subcommand. Returns CLI_CONTINUE, or the exit
 * status after --help, --version or a usage error. */
static int global_options(cli_args *a, cli_global *g)
{
    static const cli_optdef defs[] = {
        {'u', "url", 1},
        {'h', "help", 0},
        {'V', "version", 0},
        {CLI_ID_PREFIX, "prefix", 1},
        {CLI_ID_SHARD, "shard", 0},
        {CLI_ID_REDLOCK, "redlock", 0},
        {CLI_ID_CLUSTER, "cluster", 0},
        {CLI_ID_SENTINEL, "sentinel", 1},
        {CLI_ID_PASSWORD_FILE, "password-file", 1},
        {CLI_ID_CONNECT_TIMEOUT, "connect-timeout", 1},
        {CLI_ID_COMMAND_TIMEOUT, "command-timeout", 1},
        CLI_OPTS_TLS,
        {0, NULL, 0},
    };
    const char *val;
    int id;

    while ((id = cli_getopt(a, defs, &val)) > 0) {
        if (cli_note_option(NULL, g, defs, id) != 0 ||
            cli_global_option(NULL, g, id, val) == CLI_EXIT_USAGE)
            return CLI_EXIT_USAGE;
        if (id == CLI_ID_PREFIX)
            g->prefix = val;
        if (id == CLI_ID_SHARD)
            g->shard = 1;
        if (id == CLI_ID_REDLOCK)
            g->redlock = 1;
        if (id == CLI_ID_CLUSTER)
            g->cluster = 1;
        if (id == CLI_ID_SENTINEL)
            g->sentinel = val;
        if (id == CLI_ID_PASSWORD_FILE)
            g->password_file = val;
        if (id == 'h')
            cli_print_help();
        if (id == 'V')
            print_version();
        if (id == 'h' || id == 'V')
            return finish(CLI_EXIT_OK);
    }
    return id < 0 ? CLI_EXIT_USAGE : CLI_CONTINUE;
}

int main(int argc, char **argv)
{
    cli_args a = {argc, argv, 1, 0, NULL};
    cli_global g;
    struct sigaction ign;
    int rc;

    guard_std_fds();
    memset(&g, 0, sizeof g);
    if ((rc = global_options(&a, &g)) != CLI_CONTINUE ||
        (rc = cli_load_env(&g)) != 0)
        return rc;
    if ((rc = cli_load_password(&g)) != 0)
        return rc;
    memset(&ign, 0, sizeof ign);
    ign.sa_handler = SIG_IGN;
    sigemptyset(&ign.sa_mask);
    sigaction(SIGPIPE, &ign, &g.sigpipe_orig);
    rc = finish(dispatch(argc - a.i, argv + a.i, &g));
    cli_drop_password(&g);
    return rc;
}
