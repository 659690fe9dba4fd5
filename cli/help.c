/* The text of redislock --help (an overview: the commands, the global
 * options, the exit statuses) and of redislock help COMMAND (one
 * command's usage and options). The man page, docs/man/redislock.1, says
 * the same at more length. */
#include "cli.h"

#include <stdio.h>
#include <string.h>

static const char overview[] =
    "Usage: redislock [GLOBAL OPTION...] COMMAND [OPTION...] ARG...\n"
    "Distributed locks on Redis, with the exit statuses of flock(1).\n"
    "\n"
    "Commands:\n"
    "  run KEY COMMAND...  run COMMAND holding the lock, renewing its lease\n"
    "  acquire KEY         take the lock and print its token\n"
    "  release KEY TOKEN   release a lock taken by acquire\n"
    "  extend KEY TOKEN    reset the lease of a lock taken by acquire\n"
    "  revoke KEY          ask the lock's holder to give it up\n"
    "  check KEY SEQUENCER whether the sequencer's holder still holds KEY\n"
    "  elect NAME COMMAND... run COMMAND while leading election NAME\n"
    "  leader NAME         print NAME's leader; --watch follows changes\n"
    "  status KEY          print the state of the lock on KEY\n"
    "  list [PATTERN]      print the locks whose keys match PATTERN\n"
    "  doctor              flag server settings that lose locks silently\n"
    "  help [COMMAND]      print this help, or COMMAND's\n"
    "  version             print the version\n"
    "'redislock help COMMAND' (or COMMAND --help): its usage and options.\n"
    "\n"
    "Global options (before COMMAND; -u, the timeouts and TLS may also\n"
    "follow COMMAND):\n"
    "  -u, --url URL      the Redis server: redis://[user[:pass]@]host"
    "[:port][/db]\n"
    "                     [?timeout=D&connect_timeout=D] or\n"
    "                     unix:///path/to.sock[?db=N&...]; default\n"
    "                     $REDISLOCK_URL, else $REDIS_URL, else\n"
    "                     redis://127.0.0.1:6379. Repeat it with --shard,\n"
    "                     --redlock, --cluster or --sentinel.\n"
    "  --shard            the URLs are independent servers; each key lives\n"
    "                     on one of them, chosen by a consistent hash\n"
    "  --redlock          the URLs (an odd number, at least 3) are\n"
    "                     independent servers; a lock is held when a\n"
    "                     majority grant it (the Redlock algorithm)\n"
    "  --cluster          the URLs are seed nodes of a Redis Cluster; each\n"
    "                     key goes to its hash slot's master\n"
    "  --sentinel NAME    the URLs are Redis Sentinels (redis://[:pass@]\n"
    "                     host:port, one password for all); locks go to\n"
    "                     the master they name for NAME, and follow a\n"
    "                     failover. Or one -u redis+sentinel://h:p,h:p/NAME\n"
    "  --prefix PREFIX    prepended to every key in Redis: with 'lock@',\n"
    "                     KEY job is the Redis key lock@job\n"
    "  --password-file FILE\n"
    "                     the password is FILE's first line (it wins over\n"
    "                     the URL's and $REDISCLI_AUTH, and stays out of\n"
    "                     the command line); '-' reads standard input\n"
    "  --connect-timeout DURATION\n"
    "                     time to connect, AUTH and SELECT (default 2s)\n"
    "  --command-timeout DURATION\n"
    "                     time to wait for each reply (default 2s). Each\n"
    "                     comes from the option, else the URL's query\n"
    "                     (?connect_timeout=, ?timeout=), else\n"
    "                     $REDISLOCK_CONNECT_TIMEOUT or\n"
    "                     $REDISLOCK_COMMAND_TIMEOUT; run caps both at TTL/5\n"
    "  --tls              TLS: redis:// URLs are taken as rediss://\n"
    "  --cacert FILE, --cacertdir DIR\n"
    "                     the CA certificate(s) that verify the server\n"
    "  --cert FILE, --tls-key FILE\n"
    "                     a client certificate and its key, for a server\n"
    "                     that asks for one (tls-auth-clients)\n"
    "  --sni NAME         the name the server's certificate must carry\n"
    "  --insecure         do not verify the server (tests only)\n"
    "  -h, --help, -V, --version  print this help, the version\n"
    "Durations: 500ms, 30s, 2m, 1h, 30d, 1.5s, 1h30m; a bare number means\n"
    "seconds, and one over 30 days is refused as a likely unit mistake.\n"
    "Password: --password-file, else the URL's, else $REDISCLI_AUTH.\n"
    "An option with a value is given once (a repeat is a usage error), but\n"
    "-u and -k once per URL or key; of -s and -x the last one wins.\n"
    "\n"
    "Exit status:\n"
    "  0        success; run, elect: COMMAND's own status passed through\n"
    "  1        the lock was not obtained (or CODE from -E); release,\n"
    "           extend: the token held nothing (its lease ended, or it was\n"
    "           released); revoke, check: KEY is free; leader: none leads\n"
    "  2        release, extend, check: another owner holds the lock\n"
    "  64       usage error: bad option, key, TTL, URL, missing command,\n"
    "           several URLs without --shard, --redlock, --cluster or\n"
    "           --sentinel, a URL given twice (or an even Redlock\n"
    "           count), a missing, unreadable or empty password file;\n"
    "           release, extend: -k keys that are not the token's set\n"
    "  65       run, acquire: the key is in use as another kind (a\n"
    "           semaphore of another limit, a shared lock); revoke: its\n"
    "           holder cannot hear a revocation\n"
    "  69       Redis is unreachable, did not answer in time or is not\n"
    "           Redis; with --redlock, too few servers answered for a\n"
    "           quorum; with --wait-replicas, too few replicas confirmed\n"
    "           the lock; a replica (use the master); Redis cannot serve\n"
    "           now: loading, busy script, maxmemory, maxclients\n"
    "  70       internal or protocol error, another Redis error\n"
    "  75       run, elect: the lock was lost or revoked while COMMAND ran,\n"
    "           or its lease ran out unrenewed and COMMAND was killed;\n"
    "           extend: the lock was revoked (the lease was renewed)\n"
    "  77       Redis refused the password, or the user's ACL refuses\n"
    "           a command or key (see ACL in redislock(3))\n"
    "  78       the server's configuration refuses us: protected mode,\n"
    "           a needed command (EVAL) renamed or disabled; no WAITAOF\n"
    "           (or no fsynced append-only file) for --wait-aof-*; with\n"
    "           --strict, a setting that can lose locks; doctor: it\n"
    "           found one\n"
    "  126, 127 run, elect: COMMAND could not be executed, was not found\n"
    "  128+N    run: COMMAND was killed by signal N; run, acquire:\n"
    "           redislock got signal N while waiting for the lock\n";

/* The pieces of the commands' help, each a run of whole lines. */

static const char run_usage[] =
    "Usage: redislock [GLOBAL OPTION...] run [OPTION...] KEY [--] COMMAND "
    "[ARG...]\n"
    "       redislock [GLOBAL OPTION...] run [OPTION...] KEY -c STRING\n"
    "       redislock [GLOBAL OPTION...] run [OPTION...] -c STRING KEY\n"
    "Take the lock, run COMMAND with REDISLOCK_KEY, REDISLOCK_TOKEN and\n"
    "REDISLOCK_FENCE (the fencing token) in its environment (with\n"
    "--sequencer, REDISLOCK_SEQUENCER too), renew the lease every TTL/3\n"
    "while it runs, release it when COMMAND ends and exit\n"
    "with COMMAND's status (128+N if a signal N killed it). SIGHUP, SIGINT,\n"
    "SIGQUIT, SIGTERM, SIGUSR1 and SIGUSR2 are passed on to COMMAND. If the\n"
    "lock is lost, or cannot be renewed while the lease is still known to\n"
    "be valid, COMMAND's process group gets SIGTERM, then SIGKILL 5 s later\n"
    "or when the lease's validity ends, if sooner. A guardian process kills\n"
    "COMMAND, and what it started, if redislock dies (even by SIGKILL) or\n"
    "when the lease ends while redislock is stopped. COMMAND's environment\n"
    "lacks REDISCLI_AUTH, and the Redis URL variable that redislock used if\n"
    "it holds a password.\n"
    "\n"
    "Options:\n"
    "  -c, --command STRING\n"
    "                     run /bin/sh -c STRING instead of COMMAND (as\n"
    "                     flock -c; right after KEY it must be the last\n"
    "                     argument)\n";

static const char acquire_usage[] =
    "Usage: redislock [GLOBAL OPTION...] acquire [OPTION...] KEY\n"
    "Take the lock and print its token (with --owner or --metadata: the\n"
    "owner id), for release and extend. Nothing renews the lease.\n"
    "\n"
    "Options:\n";

/* The options of run and acquire that shape the lock and the wait. */
static const char take_options[] =
    "  -t, --ttl TTL      lease length (default 30s, at most 30 days)\n"
    "  -w, --wait, --timeout SECONDS\n"
    "                     wait at most this long for a held lock\n"
    "  -n, --nonblock, --no-wait\n"
    "                     do not wait (the default is to wait forever)\n"
    "  -E, --conflict-exit-code CODE\n"
    "                     exit status when the lock is not obtained (with\n"
    "                     0, COMMAND does not run and no token is printed)\n"
    "  --verbose          say on stderr what it waits for, who holds the\n"
    "                     lock and its lease, how long it took, why it\n"
    "                     stopped; run: the renewals and the command's end.\n"
    "                     Without it, a lock not obtained prints nothing.\n"
    "  --fail-fast        give up at once when the holder's lease outlasts\n"
    "                     the wait (or its key has no expiry)\n"
    "  --fair             wait in a FIFO queue: a release hands the lock\n"
    "                     (with -s or --limit, a share) to the longest\n"
    "                     waiter (default: a release wakes one waiter,\n"
    "                     which competes with newcomers)\n"
    "  --retry constant|linear|exponential\n"
    "                     how the pause between attempts grows (constant)\n"
    "  --retry-delay DURATION\n"
    "                     the pause, or its first step (default 100ms);\n"
    "                     each pause is drawn from [d/2, d]\n"
    "  --retry-max-delay DURATION\n"
    "                     cap on one pause for linear and exponential\n"
    "                     (default 2s)\n"
    "  --max-attempts N   give up after N attempts\n"
    "  --limit N          take one of N permits of a semaphore on KEY\n"
    "                     (release and extend take its token): at most N\n"
    "                     holders at once, each with a lease of its own\n"
    "                     (every user of KEY must give the same N)\n"
    "  -s, --shared       take a share of KEY (a reader lock; release and\n"
    "                     extend take its token): any number of shares at\n"
    "                     once, but none while an exclusive holder has KEY\n"
    "                     or waits for it. Not with --limit, --owner,\n"
    "                     --metadata or --hold-after\n"
    "  -x, --exclusive    an exclusive lock, the default (as flock -x);\n"
    "                     with -s too, the last one given wins\n"
    "  -k, --key KEY2     KEY2 too, as one set taken all or none with one\n"
    "                     token and lease (repeat for more, up to 8 keys\n"
    "                     in all, on any servers or slots: keys on one\n"
    "                     server or slot take one round trip). Not with\n"
    "                     --limit, -s, --owner, --metadata, --fair or\n"
    "                     --hold-after\n"
    "  --owner ID         take the lock reentrant as owner ID: each\n"
    "                     acquire with ID adds a hold\n"
    "  --metadata TEXT    store TEXT with the lock for status and list\n"
    "                     (the owner id is then host:pid:random)\n"
    "  --lock-delay DURATION\n"
    "                     if the holder dies or stops past its lease\n"
    "                     (no release), nobody gets the lock for this\n"
    "                     long after the lease (at most 60s); a release\n"
    "                     frees it at once. The key's TTL is the lease\n"
    "                     and the delay. Not with --fair, --limit, -s or\n"
    "                     -k\n"
    "  --sequencer        also make the lock's sequencer, FENCE:DIGEST, a\n"
    "                     proof of this holder that a resource checks\n"
    "                     with 'redislock check' (one round trip more):\n"
    "                     run puts it in REDISLOCK_SEQUENCER, acquire\n"
    "                     prints it on a second line. Not with --limit,\n"
    "                     -s or -k\n";

static const char hold_after_option[] =
    "  --hold-after DURATION\n"
    "                     keep the lock reserved this long after release,\n"
    "                     then let it expire\n";

static const char guard_options[] =
    "Durability guards (for --sentinel or --cluster, where a failover must\n"
    "not lose a lock; each write of the lease then waits for the slowest\n"
    "replica that must confirm, up to the timeout):\n"
    "  --wait-replicas N  after each write of the lease, wait until N\n"
    "                     replicas have it (WAIT); else acquire gives the\n"
    "                     lock back and fails (exit 69); 'all': every\n"
    "                     replica the master has had\n"
    "  --wait-replicas-timeout DURATION\n"
    "                     how long each wait lasts at most (default 100ms)\n"
    "  --wait-replicas-lenient\n"
    "                     keep the lock when too few confirm, with a warning\n"
    "  --wait-aof-local   wait until the master's append-only file has it\n"
    "                     fsynced (WAITAOF, Redis 7.2+; else exit 78)\n"
    "  --wait-aof-replicas N\n"
    "                     the same for N replicas' append-only files\n"
    "  --strict           refuse servers whose settings can lose a lock\n"
    "                     (what doctor reports, the clock aside; exit 78)\n";

static const char release_usage[] =
    "Usage: redislock [GLOBAL OPTION...] release [OPTION...] KEY TOKEN\n"
    "       redislock [GLOBAL OPTION...] release [OPTION...] --owner ID KEY\n"
    "Release a lock taken by acquire (a lock, a share, a permit or a set,\n"
    "by its token); with --owner, drop one hold of a reentrant lock (the\n"
    "last hold frees it).\n"
    "\n"
    "Options:\n"
    "  --owner ID         the owner id that took the lock, instead of TOKEN\n"
    "  -k, --key KEY2     KEY2 too: the set that acquire -k took\n";

static const char extend_usage[] =
    "Usage: redislock [GLOBAL OPTION...] extend [OPTION...] KEY TOKEN\n"
    "       redislock [GLOBAL OPTION...] extend [OPTION...] --owner ID KEY\n"
    "Reset the lease of a lock taken by acquire to TTL.\n"
    "\n"
    "Options:\n"
    "  -t, --ttl TTL      the new lease (default 30s, at most 30 days)\n"
    "  --owner ID         the owner id that took the lock, instead of TOKEN\n"
    "  -k, --key KEY2     KEY2 too: the set that acquire -k took\n"
    "  --lock-delay DURATION\n"
    "                     the delay acquire took the lock with: the key\n"
    "                     then lives for TTL and the delay\n";

static const char status_usage[] =
    "Usage: redislock [GLOBAL OPTION...] status [--json] KEY\n"
    "Print 'free', or 'held ttl_ms=N' followed by 'reserved' for a\n"
    "hold-after reservation, holds=N and owner=ID for a lock with an owner\n"
    "id, revoked[=REASON] for a lock whose holder was asked to give it up\n"
    "(revoke), and metadata=TEXT; for a semaphore (--limit) 'permits=K "
    "limit=N',\n"
    "for a lock held shared (-s) 'readers=K' (its live shares), then\n"
    "'leases_ms=N,N...' (each share's time left, shortest first, at most\n"
    "100). ttl_ms=-1: no expiry. A key held by a foreign owner (a value\n"
    "that is no lock redislock reads: another tool's, a list, a cached\n"
    "value; acquire waits for it) prints 'held-foreign ttl_ms=N\n"
    "type=TYPE'. A key with fair waiters (--fair) adds 'waiters=N' before\n"
    "metadata, then a line per waiter in queue order, 'waiter I owner=ID\n"
    "waited_ms=N' (at most 100; owner=- for a waiter without an owner\n"
    "id, whose token is never shown).\n"
    "\n"
    "Options:\n"
    "  --json             print {\"key\":KEY,\"held\":true,\"ttl_ms\":N,\n"
    "                     "
    "\"holds\":N,\"owner\":ID|null,\"metadata\":TEXT|null,\n"
    "                     \"fence\":N,\"reserved\":BOOL} or\n"
    "                     {\"key\":KEY,\"held\":false}; a semaphore has\n"
    "                     \"permits\":K,\"limit\":N and a shared lock\n"
    "                     \"readers\":K,\"shared\":true, both\n"
    "                     \"leases_ms\":[N,...], in place of holds, owner,\n"
    "                     metadata and reserved; fence (the fencing token\n"
    "                     of its life) only for a lock with an owner id;\n"
    "                     another library's lock has no holds; a foreign\n"
    "                     owner's key\n"
    "                     {...,\"foreign\":true,\"type\":TYPE}; with fair\n"
    "                     waiters, \"queued\":N,\"waiters\":[{\"owner\":\n"
    "                     ID|null,\"waited_ms\":N},...]\n";

static const char list_usage[] =
    "Usage: redislock [GLOBAL OPTION...] list [--json] [--all] [PATTERN]\n"
    "Print the locks whose key matches the glob PATTERN (default all), one\n"
    "per line as 'KEY ttl_ms=N [holds=N owner=ID] [waiters=N]\n"
    "[metadata=TEXT]' (a semaphore, a lock held shared: the fields of\n"
    "status, as in 'KEY ttl_ms=N readers=K'; waiters=N counts the fair\n"
    "waiters, which status lists). Keys are shown without the prefix;\n"
    "control bytes, backslashes and (in KEY and ID) spaces are written as\n"
    "\\xNN. Keys that are not locks, and locks without a TTL, are left out.\n"
    "\n"
    "Options:\n"
    "  --json             print a JSON array of status objects\n"
    "  --all              keys that are not locks too ('KEY held-foreign\n"
    "                     ttl_ms=N type=TYPE'), and locks without a TTL\n";

static const char revoke_usage[] =
    "Usage: redislock [GLOBAL OPTION...] revoke [--reason TEXT] KEY\n"
    "Ask whoever holds KEY to give it up. The holder keeps its lease until\n"
    "it releases; it hears of it at its next renewal or extend (run stops\n"
    "its command with SIGTERM, then SIGKILL, releases KEY and exits 75;\n"
    "the library's holders get REDISLOCK_EREVOKED as a loss). A holder\n"
    "that never renews does not hear it and keeps its lease to the end.\n"
    "Exit 0: the holder is asked (now, or by an earlier revoke); 1: KEY\n"
    "is free; 65: KEY holds something whose holder cannot hear it\n"
    "(another library's lock, a hold-after reservation, a semaphore or a\n"
    "lock held shared, not a lock).\n"
    "\n"
    "Options:\n"
    "  --reason TEXT      why (printable ASCII, at most 64 bytes), told to\n"
    "                     the holder\n";

static const char check_usage[] =
    "Usage: redislock [GLOBAL OPTION...] check KEY SEQUENCER\n"
    "Whether the holder SEQUENCER was made for (run or acquire with\n"
    "--sequencer) still holds KEY: for a resource that asks before it acts\n"
    "on a writer's behalf, rather than keep the largest fencing token it\n"
    "has seen. It only reads; the lock can change hands right after.\n"
    "Exit 0: it still holds KEY; 1: KEY is free; 2: another holder has it,\n"
    "or it was taken again since; 64: SEQUENCER is not one; 65: KEY is\n"
    "held by many (a semaphore or shares: not yet).\n"
    "\n"
    "Options:\n";

static const char elect_usage[] =
    "Usage: redislock [GLOBAL OPTION...] elect [OPTION...] NAME [--] COMMAND "
    "[ARG...]\n"
    "       redislock [GLOBAL OPTION...] elect [OPTION...] NAME -c STRING\n"
    "Campaign in election NAME (a lock on key NAME held under an owner id,\n"
    "--owner or host:pid:random), waiting as run does (a hot standby), and\n"
    "run COMMAND while leader, as run: REDISLOCK_TERM (the leader's term,\n"
    "its fencing token, = REDISLOCK_FENCE) in its environment, stopped if\n"
    "leadership is lost (exit 75). At COMMAND's end it resigns: the change\n"
    "is recorded and the next candidate leads. Each election and\n"
    "resignation is recorded for 'redislock leader --watch'. Not with -s,\n"
    "-k, --limit, --metadata, --lock-delay or --sequencer.\n"
    "\n"
    "Options:\n"
    "  --value TEXT       the leader's value, for 'redislock leader' (at\n"
    "                     most 1024 bytes of printable ASCII)\n"
    "  -c, --command STRING\n"
    "                     run /bin/sh -c STRING instead of COMMAND\n";

static const char leader_usage[] =
    "Usage: redislock [GLOBAL OPTION...] leader [--json] [--watch] NAME\n"
    "Print election NAME's leader, 'leader term=T id=ID value=V ttl_ms=N',\n"
    "or 'none'. With --watch, then print each change as it comes, in\n"
    "order, until SIGINT or SIGTERM: 'elected n=N term=T id=ID value=V',\n"
    "'proclaimed ...', 'resigned n=N term=T', 'expired n=N term=T' (its\n"
    "lease ran out), 'gap n=N ...' (changes were missed: the leader now).\n"
    "A watch rides through a server restart or a failover; one that\n"
    "lasts a minute is said on standard error, once a minute.\n"
    "Exit 0: a leader (--watch: after a signal); 1: none leads.\n"
    "\n"
    "Options:\n"
    "  --json             print JSON objects, one a line\n"
    "  --watch            follow the changes\n";

static const char doctor_usage[] =
    "Usage: redislock [GLOBAL OPTION...] doctor [--json] [--clock DURATION]\n"
    "Read each server's configuration (INFO, CONFIG GET appendfsync, an\n"
    "EVAL, TIME; a cluster's CLUSTER INFO; the sentinels' CKQUORUM) and\n"
    "print each setting that can lose a lock or grant it twice, with its\n"
    "fix, as 'SERVER: NAME: WHAT' and '  fix: FIX'. NAME is eviction,\n"
    "no-persistence, fsync, replica, replicas, no-scripts,\n"
    "sentinel-quorum, cluster-slots, clock or unanswered. Judged against\n"
    "the guards given (--wait-replicas, --wait-aof-local). Exit 0: none;\n"
    "78: a finding; 69: only servers that did not answer.\n"
    "\n"
    "Options:\n"
    "  --json             print a JSON array of {\"server\",\"risk\",\n"
    "                     \"what\",\"fix\"} objects\n"
    "  --clock DURATION   compare each server's clock with this machine's\n"
    "                     over DURATION (default 1s, at most 60s; 0: not)\n";

/* The options every command takes. */
static const char common_options[] =
    "  -u, --url URL, --connect-timeout DURATION, --command-timeout "
    "DURATION\n"
    "  --tls, --cacert FILE, --cacertdir DIR, --cert FILE, --tls-key FILE,\n"
    "  --sni NAME, --insecure\n"
    "                     as before the command (see redislock --help)\n"
    "  -h, --help         print this help\n";

static const char run_exit[] =
    "\n"
    "Exit status: COMMAND's own; 1 (or -E CODE) when the lock is not\n"
    "obtained; 75 when it is lost while COMMAND runs, or its lease ran out\n"
    "unrenewed and COMMAND was killed; 126, 127 when COMMAND cannot be\n"
    "executed, is not found; 128+N when COMMAND, or redislock while it\n"
    "waits, gets signal N.\n";

static const char acquire_exit[] =
    "\n"
    "Exit status: 0 with the token printed; 1 (or -E CODE) when the lock is\n"
    "not obtained; 128+N when signal N ends the wait.\n";

static const char token_exit[] =
    "\n"
    "Exit status: 0 when done; 1 when the token held nothing (its lease\n"
    "ended, or it was released: the message says who holds KEY now, if\n"
    "anyone); 2 when another owner holds the lock.\n";

static const char footer[] =
    "\n"
    "See redislock --help for the global options, durations and the other\n"
    "exit statuses.\n";

static const char help_usage[] =
    "Usage: redislock help [COMMAND]\n"
    "Print the overview of the commands, the global options and the exit\n"
    "statuses, or COMMAND's usage and options.\n";

static const char version_usage[] =
    "Usage: redislock version\n"
    "       redislock --version\n"
    "Print the version of the tool and of the library.\n";

/* Each command's help: its pieces in order, ending with NULL. */
static const struct {
    const char *name;
    const char *parts[8];
} commands[] = {
    {"run",
     {run_usage, take_options, hold_after_option, common_options, guard_options,
      run_exit, footer, NULL}},
    {"acquire",
     {acquire_usage, take_options, common_options, guard_options, acquire_exit,
      footer, NULL}},
    {"release",
     {release_usage, hold_after_option, common_options, token_exit, footer,
      NULL}},
    {"extend",
     {extend_usage, common_options, guard_options, token_exit, footer, NULL}},
    {"status", {status_usage, common_options, footer, NULL}},
    {"list", {list_usage, common_options, footer, NULL}},
    {"doctor", {doctor_usage, common_options, guard_options, footer, NULL}},
    {"revoke", {revoke_usage, common_options, footer, NULL}},
    {"check", {check_usage, common_options, footer, NULL}},
    {"elect",
     {elect_usage, take_options, common_options, guard_options, run_exit,
      footer, NULL}},
    {"leader", {leader_usage, common_options, footer, NULL}},
    {"help", {help_usage, NULL}},
    {"version", {version_usage, NULL}},
};

void cli_print_help(void)
{
    fputs(overview, stdout);
}

int cli_print_command_help(const char *name)
{
    size_t i, j;

    for (i = 0; i < sizeof commands / sizeof commands[0]; i++) {
        if (strcmp(commands[i].name, name) != 0)
            continue;
        for (j = 0; commands[i].parts[j] != NULL; j++)
            fputs(commands[i].parts[j], stdout);
        return 0;
    }
    return -1;
}
