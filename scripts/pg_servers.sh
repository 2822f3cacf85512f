#!/usr/bin/env bash
# The PostgreSQL servers snowflake_id is built and tested against, one per
# major, installed once and cached: a second run builds and downloads nothing.
#
#   bash scripts/pg_servers.sh               install what is missing, register each
#                                            major with pgrx, print "<major> <bindir> <version>"
#   bash scripts/pg_servers.sh --no-register install what is missing, nothing else (needs no
#                                            cargo-pgrx: scripts/test.sh builds the servers
#                                            with this while cargo-pgrx and the tests compile)
#   bash scripts/pg_servers.sh --bindir 17   print the bin dir of an installed major (no install)
#   bash scripts/pg_servers.sh --pg-config 17   print its pg_config
#   bash scripts/pg_servers.sh --regress-tree 18   print a source tree of installed 18 (17 or 18)
#                                            in which `make -C src/test/regress installcheck`
#                                            runs PostgreSQL's regression suite against a
#                                            server of that install; built once and cached
#                                            under $SNOWFLAKE_PG_CACHE/regress/pg18
#
#   PG_MAJORS="15 18"   the majors to install (default: 15 16 17 18 19)
#   PG_REGRESS_MAJORS="18"  also the --regress-tree of these majors (default: none);
#                       a major built now keeps its build tree as that tree
#                       rather than configuring and compiling a second one
#   SNOWFLAKE_PG_CACHE  where 16, 17 and 18 live (default /var/cache/snowflake_id as root)
#   PG_SERVERS_READY_DIR  touch <dir>/<major> as soon as that major (and its
#                       --regress-tree when asked) is ready, in PG_MAJORS' order,
#                       so that a caller can use it while the next one builds
#
# Where each major comes from (Debian 12 reaches only Debian, PyPI, crates.io,
# npm), each route in a file of scripts/pg_servers/ that says why:
#   15     Debian 12's own packages (postgresql-15), as scripts/setup.sh installs them.
#   16     PyPI's pgserver wheel, a complete 16.2, with pg_walinspect built
#          from 17's contrib (pgserver_16.sh).
#   17 18  Upstream source as Debian ships it (postgresql-17 of trixie,
#          postgresql-18 of sid), fetched by debian_source.sh and built here
#          by source_build.sh, which also builds the --regress-tree.
#   19     Debian experimental's binary packages, in a sid root under the
#          cache, patched to run on the host (sid_19.sh).
# This script keeps what is common to them (where each lives, whether it is
# installed completely), the command line, the order and pgrx's registration.
#
# Runs as root (apt, and the cache under /var/cache). Everything installed is
# world-readable so that the `postgres` user can run the servers: PostgreSQL
# refuses to run as root, and /root is not traversable by other users.
set -euo pipefail
umask 022

ALL_MAJORS="15 16 17 18 19"
PG_MAJORS=${PG_MAJORS:-$ALL_MAJORS}
PG_REGRESS_MAJORS=${PG_REGRESS_MAJORS:-}
no_register=""
if [ "$(id -u)" = 0 ]; then
    CACHE=${SNOWFLAKE_PG_CACHE:-/var/cache/snowflake_id}
else
    CACHE=${SNOWFLAKE_PG_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/snowflake_id}
fi
# The contrib modules the tests create (grep tests/ for CREATE EXTENSION;
# pg_partman is a separate Debian package and stays 15-only).
CONTRIB=(pg_walinspect)
# What the tests and scripts run from a server's bin dir.
TOOLS=(initdb pg_ctl postgres psql pgbench pg_basebackup pg_dump pg_restore pg_config)

say() { echo "pg_servers: $*" >&2; }
die() {
    say "$*"
    exit 1
}

prefix_of() {
    case "$1" in
    15) echo /usr/lib/postgresql/15 ;;
    # A stable name for a path that depends on the venv's Python version.
    16) echo "$CACHE/pg16/pginstall" ;;
    17 | 18) echo "$CACHE/pg$1" ;;
    19) echo "$CACHE/pg19/root/usr/lib/postgresql/19" ;;
    *) die "unsupported major '$1' (supported: $ALL_MAJORS)" ;;
    esac
}

# Is major $1 installed completely: every tool, server headers, the contrib
# modules the tests need, and a pg_config that reports major $1 and paths
# inside its own prefix (pgserver's is relocatable: it must not report the
# build machine's paths)?
installed() {
    local major=$1 prefix bin pgc tool
    prefix=$(prefix_of "$major")
    bin="$prefix/bin"
    pgc="$bin/pg_config"
    [ -x "$pgc" ] || return 1
    # "PostgreSQL 18.6", or a pre-release's "PostgreSQL 19rc1".
    "$pgc" --version 2>/dev/null | grep -Eq "^PostgreSQL $major([^0-9]|$)" || return 1
    for tool in "${TOOLS[@]}"; do [ -x "$bin/$tool" ] || return 1; done
    [ -f "$("$pgc" --includedir-server)/postgres.h" ] || return 1
    local real_prefix
    real_prefix=$(cd "$prefix" && pwd -P)
    case "$("$pgc" --bindir)" in "$real_prefix"/* | "$prefix"/*) ;; *) return 1 ;; esac
    if [ "$major" != 15 ]; then
        local mod
        for mod in "${CONTRIB[@]}"; do [ -f "$("$pgc" --sharedir)/extension/$mod.control" ] || return 1; done
    fi
    return 0
}

bindir_of() {
    echo "$(prefix_of "$1")/bin"
}

apt_install() {
    local pkg missing=()
    for pkg in "$@"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
    done
    if ((${#missing[@]})); then
        say "installing ${missing[*]}"
        apt-get update -qq
        DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
}

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
for f in debian_source source_build pgserver_16 sid_19; do
    # shellcheck source=/dev/null
    source "$here/pg_servers/$f.sh"
done

ensure() {
    local major=$1
    installed "$major" && return 0
    case "$major" in
    15) apt_install postgresql-15 postgresql-server-dev-15 ;;
    16) install_pgserver ;;
    19) install_sid_19 ;;
    17 | 18)
        if [[ " $PG_REGRESS_MAJORS " == *" $major "* ]]; then
            build_from_source "$major" keep
        else
            build_from_source "$major"
        fi
        ;;
    esac
    installed "$major" || die "PostgreSQL $major is incomplete after installing it (see $CACHE)"
}

# Registers every installed major with pgrx (~/.pgrx/config.toml), only when
# its line is missing or points elsewhere. `cargo pgrx init` merges into the
# existing file, downloads nothing when given paths, and as root skips its
# own initdb.
register() {
    local config="${PGRX_HOME:-$HOME/.pgrx}/config.toml" args=() major pgc
    for major in "$@"; do
        pgc="$(prefix_of "$major")/bin/pg_config"
        grep -qsx "pg$major = \"$pgc\"" "$config" || args+=("--pg$major" "$pgc")
    done
    ((${#args[@]})) || return 0
    if ! { command -v cargo && cargo pgrx --version; } >/dev/null 2>&1; then
        die "cargo-pgrx is not installed (scripts/setup.sh installs it); cannot register ${args[*]}"
    fi
    say "registering with pgrx: ${args[*]}"
    # PGnn_PG_CONFIG in the environment would override the flags.
    env -u PG15_PG_CONFIG -u PG16_PG_CONFIG -u PG17_PG_CONFIG -u PG18_PG_CONFIG -u PG19_PG_CONFIG \
        cargo pgrx init "${args[@]}" >/dev/null
}

case "${1:-}" in
--bindir | --pg-config)
    [ $# -eq 2 ] || die "usage: $0 $1 <major>"
    prefix_of "$2" >/dev/null
    installed "$2" || die "PostgreSQL $2 is not installed; run: PG_MAJORS=$2 bash scripts/pg_servers.sh"
    if [ "$1" = --bindir ]; then bindir_of "$2"; else echo "$(bindir_of "$2")/pg_config"; fi
    exit 0
    ;;
--regress-tree)
    [ $# -eq 2 ] || die "usage: $0 $1 <major>"
    [ "$(id -u)" = 0 ] || say "not root: building the tree under $CACHE may fail"
    regress_tree "$2"
    exit 0
    ;;
--no-register) no_register=1 ;;
"") ;;
*) die "usage: $0 [--no-register | --bindir <major> | --pg-config <major> | --regress-tree <major>]" ;;
esac

# A major ready to use: scripts/test.sh starts testing it while the next builds.
announce() {
    [ -z "${PG_SERVERS_READY_DIR:-}" ] || touch "$PG_SERVERS_READY_DIR/$1"
}

for major in $PG_MAJORS $PG_REGRESS_MAJORS; do prefix_of "$major" >/dev/null; done
missing=()
for major in $PG_MAJORS; do installed "$major" || missing+=("$major"); done
# Everything there: no lock, so that a run for 15 alone (scripts/package.sh)
# does not wait for another run building 17 in the same cache.
if ((${#missing[@]})) || [ -n "$PG_REGRESS_MAJORS" ]; then
    [ "$(id -u)" = 0 ] || say "not root: installing anything missing will fail (apt)"
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    # A fresh index each run that has to fetch something; runs that find
    # everything never touch the network.
    rm -f "$CACHE/apt/.updated"
    for major in $PG_MAJORS; do
        ensure "$major"
        [[ " $PG_REGRESS_MAJORS " != *" $major "* ]] || regress_tree "$major" >/dev/null
        announce "$major"
    done
    # A major installed before its tree was asked for.
    for major in $PG_REGRESS_MAJORS; do
        installed "$major" || ensure "$major"
        regress_tree "$major" >/dev/null
    done
    # The trixie and sid indexes (about 50 MB) only serve a fetch.
    rm -rf "$CACHE/apt/lists"
fi
# Those that were there already.
for major in $PG_MAJORS; do announce "$major"; done
[ -z "$no_register" ] || exit 0

registered=()
for major in $ALL_MAJORS; do installed "$major" && registered+=("$major"); done
register "${registered[@]}"

for major in $PG_MAJORS; do
    printf '%s\t%s\t%s\n' "$major" "$(bindir_of "$major")" "$("$(bindir_of "$major")/pg_config" --version)"
done
