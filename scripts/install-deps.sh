#!/bin/sh
# Installs the Debian packages the build, the demo and the tests need, when
# any is missing. As root it runs apt-get; otherwise it says what to run.
# Elsewhere (no dpkg) it names them and leaves the installing to you.
set -eu

PKGS="gcc make cmake pkg-config libhiredis-dev redis-server redis-tools
python3 python3-redis man-db groff-base clang-format libfaketime
libevent-dev libuv1-dev libev-dev universal-ctags"

# Not Debian (no dpkg): name what is needed and go on; CMake and the
# test runner say what is still missing when they meet it.
if ! command -v dpkg-query >/dev/null 2>&1; then
    echo "install-deps: not a Debian system: install the equivalents of" \
        "these Debian packages (README, Install):" $PKGS >&2
    exit 0
fi

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
