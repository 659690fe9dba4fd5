#!/bin/sh
# Installs the Debian packages the build, the demo and the tests need, when
# any is missing. As root it runs apt-get; otherwise it says what to run.
set -eu

PKGS="gcc make cmake pkg-config libhiredis-dev redis-server redis-tools
python3 python3-redis man-db groff-base clang-format libfaketime
libevent-dev libuv1-dev libev-dev universal-ctags"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "install-deps: missing Debian packages:$missing" >&2
    echo "install-deps: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq $missing >/dev/null
