#!/bin/sh
# Installs the Debian packages `make bench` needs beyond the build's own
# (scripts/install-deps.sh), when any is missing. As root it runs apt-get;
# otherwise it says what to run.
set -eu

PKGS="gnuplot-nox python3-redis redis-server redis-tools util-linux"

missing=""
for p in $PKGS; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" ||
        missing="$missing $p"
done
# Node may come from elsewhere (NodeSource bundles npm in its nodejs): only
# a missing command asks for Debian's packages.
command -v node >/dev/null 2>&1 || missing="$missing nodejs"
command -v npm >/dev/null 2>&1 || missing="$missing npm"
[ -z "$missing" ] && exit 0

if [ "$(id -u)" != 0 ]; then
    echo "bench/install-deps: missing Debian packages:$missing" >&2
    echo "bench/install-deps: run: sudo apt-get install -y$missing" >&2
    exit 1
fi
echo "bench/install-deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086
apt-get install -y -qq $missing >/dev/null
