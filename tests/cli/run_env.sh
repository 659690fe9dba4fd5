#!/bin/sh
# run's command does not inherit the passwords that redislock read from
# the environment: REDISCLI_AUTH, and the Redis URL variable it used when
# that holds credentials. A variable redislock did not read (a URL given
# with -u, REDIS_URL behind REDISLOCK_URL) stays, as does everything else.
set -eu
. "$(dirname "$0")/lib.inc"

PW=pw-Ee52-envsecret
tcp=127.0.0.1:$REDIS_PORT
rcli config set requirepass "$PW" >/dev/null
# For rcli from here on (redis-cli reads it too).
REDISCLI_AUTH=$PW
export REDISCLI_AUTH

# env_has NAME=VALUE / env_lacks NAME: about the command's environment,
# as env(1) printed it on the last run_rl's stdout.
env_has() {
    grep -qxF "$1" "$TEST_TMPDIR/out" ||
        fail "the command's environment lacks $1"
}
env_lacks() {
    ! grep -q "^$1=" "$TEST_TMPDIR/out" ||
        fail "the command's environment has $1"
}
no_password() {
    ! grep -qF "$PW" "$TEST_TMPDIR/out" ||
        fail "the password is in the command's environment"
}

# REDISCLI_AUTH, the password the library used.
expect 0 env KEEP=1 "$RL" run env-key -- env
env_lacks REDISCLI_AUTH
no_password
env_has KEEP=1
env_has "REDISLOCK_URL=$REDISLOCK_URL"

# A password in REDISLOCK_URL; REDIS_URL, not read, stays.
expect 0 env -u REDISCLI_AUTH REDISLOCK_URL="redis://:$PW@$tcp" \
    REDIS_URL=redis://app:other@db:1 "$RL" run env-key -- env
env_lacks REDISLOCK_URL
no_password
env_has REDIS_URL=redis://app:other@db:1

# In REDIS_URL, when REDISLOCK_URL is empty.
expect 0 env -u REDISCLI_AUTH REDISLOCK_URL= REDIS_URL="redis://:$PW@$tcp" \
    "$RL" run env-key -- env
env_lacks REDIS_URL
no_password

# A URL without credentials stays, for a command that runs redislock
# itself; the password came from a file.
printf '%s\n' "$PW" >"$TEST_TMPDIR/pw"
expect 0 env -u REDISCLI_AUTH REDISLOCK_URL="redis://$tcp" \
    "$RL" --password-file "$TEST_TMPDIR/pw" run env-key -- env
env_has "REDISLOCK_URL=redis://$tcp"
no_password

# With -u the environment's URLs were not read: they stay.
expect 0 env -u REDISCLI_AUTH REDIS_URL=redis://app:other@db:1 \
    "$RL" -u "redis://:$PW@$tcp" run env-key -- env
env_has REDIS_URL=redis://app:other@db:1
no_password
key_gone env-key || fail "run did not release"
exit 0
