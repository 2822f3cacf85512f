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
# Where each major comes from (Debian 12 reaches only Debian, PyPI, crates.io, npm):
#   15  Debian 12's own packages (postgresql-15), as scripts/setup.sh installs them.
#   16  No Debian suite carries 16. PyPI's pgserver 0.1.4 wheel ships a complete
#       16.2 (binaries, server headers, PGXS); only its files are used, never its
#       Python API. It has no contrib and no suite carries 16's source, so
#       pg_walinspect (one test uses it) is built with 16's PGXS from 17's
#       contrib/pg_walinspect: it compiles without a warning against 16.2's
#       headers and serves the functions the test calls.
#   17  Upstream source as Debian ships it (postgresql-17, trixie), built here.
#   18  Likewise (postgresql-18, sid).
#   19  No suite serves 19's source; Debian's experimental suite has its binary
#       packages (19~rc1-1), built for a newer C library than Debian 12's.
#       They are installed into a Debian sid root made with debootstrap
#       under the cache, then each program's ELF interpreter and library
#       path are pointed into that root (patchelf): the programs then run on
#       the host itself, with the root's C library, and see the host's files,
#       so data directories, sockets, libfaketime and the library built
#       here work as with any other major, and pg_config answers with the
#       root's paths (PostgreSQL finds them relative to its binaries). Its
#       PGXS Makefile.global is edited for the host's compiler (gcc 12
#       lacks a warning flag gcc 16 has; no clang-21 bitcode).
# The trixie/sid deb-src entries live in a private apt configuration under the
# cache (own sources list, package lists and apt cache): the system's apt never
# sees those suites, so nothing from them can ever be installed; only their
# source tarballs are fetched.
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
PGSERVER_VERSION=0.1.4
# The contrib modules the tests create (grep tests/ for CREATE EXTENSION;
# pg_partman is a separate Debian package and stays 15-only).
CONTRIB=(pg_walinspect)
# What the tests and scripts run from a server's bin dir.
TOOLS=(initdb pg_ctl postgres psql pgbench pg_basebackup pg_dump pg_restore pg_config)
# Debian suite whose source package carries each built major.
declare -A SUITE=([17]=trixie [18]=sid)
# The upstream release of each built major that the tests run on and the
# README names, with the SHA-256 of its tarball (from the signed .dsc that apt
# verified when it was first fetched). Taken straight from Debian's pool
# first: a suite's index can name a release the mirror does not serve yet
# (trixie's named 17.12 while deb.debian.org answered 404 for it, November
# 2026), and a pinned release keeps every run on what the README says. Only
# when the pool no longer has it (Debian drops superseded releases) is the
# suite's current source package fetched instead, and the README's versions
# want updating.
declare -A PINNED=(
    [17]="17.11 dd27f2b3c59e73ed14aa3324901242bf69a032a6347805f274e6260322d42979"
    [18]="18.6 555610c24d53e4316da5b7d3fc25c279d96856d5e0e23ee308c328c5fa881d9f"
)

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

# apt pointed at the private deb-src entries only (see the header).
private_apt() {
    local dir="$CACHE/apt"
    mkdir -p "$dir/sources.list.d" "$dir/lists/partial" "$dir/cache/archives/partial"
    local suite
    : >"$dir/sources.list.new"
    for suite in trixie sid; do
        echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $suite main" \
            >>"$dir/sources.list.new"
    done
    mv "$dir/sources.list.new" "$dir/sources.list"
    apt-get -o Dir::Etc::SourceList="$dir/sources.list" -o Dir::Etc::SourceParts="$dir/sources.list.d" \
        -o Dir::State::Lists="$dir/lists" -o Dir::Cache="$dir/cache" "$@"
}

# The newest upstream tarball of major $1 already fetched, else fetch it.
orig_tarball() {
    local major=$1 tarball
    tarball=$(find "$CACHE/src" -maxdepth 1 -name "postgresql-${major}_*.orig.tar.bz2" 2>/dev/null | sort -V | tail -n 1)
    if [ -z "$tarball" ]; then
        apt_install dpkg-dev debian-archive-keyring
        mkdir -p "$CACHE/src"
        local release=${PINNED[$major]% *} sha256=${PINNED[$major]#* }
        local name="postgresql-${major}_$release.orig.tar.bz2"
        say "fetching $name from Debian's pool"
        # apt-helper checks the hash, and leaves no file when it does not match.
        if /usr/lib/apt/apt-helper -qq download-file "http://deb.debian.org/debian/pool/main/p/postgresql-$major/$name" \
            "$CACHE/src/$name" "SHA256:$sha256" >/dev/null 2>&1; then
            echo "$CACHE/src/$name"
            return 0
        fi
        rm -f "$CACHE/src/$name"
        say "the pool no longer has $name: the newest postgresql-$major of ${SUITE[$major]} instead (update the README's versions)"
        if [ ! -e "$CACHE/apt/.updated" ]; then
            say "reading the trixie and sid source indexes (private apt lists)"
            private_apt -qq update >&2
            touch "$CACHE/apt/.updated"
        fi
        # apt downloads as _apt when it can write the target directory.
        chown _apt "$CACHE/src" 2>/dev/null || true
        say "fetching postgresql-$major/${SUITE[$major]} (source)"
        (cd "$CACHE/src" && private_apt -qq source --download-only "postgresql-$major/${SUITE[$major]}" >/dev/null)
        tarball=$(find "$CACHE/src" -maxdepth 1 -name "postgresql-${major}_*.orig.tar.bz2" | sort -V | tail -n 1)
        [ -n "$tarball" ] || die "apt-get source postgresql-$major fetched no .orig.tar.bz2"
    fi
    echo "$tarball"
}

# Builds and installs major $1 from source; with $2 = keep, in the place of
# its --regress-tree and kept as that tree (the full build has every part
# the suite needs), else in a scratch directory removed afterwards.
build_from_source() {
    local major=$1 keep=${2:-} prefix tarball src log
    prefix=$(prefix_of "$major")
    tarball=$(orig_tarball "$major")
    # Since 17 the tarballs no longer carry the generated parser: bison, flex.
    apt_install gcc make perl bison flex zlib1g-dev
    if [ "$keep" = keep ]; then
        src="$CACHE/regress/pg$major"
        mkdir -p "$CACHE/regress"
        exec 8>"$CACHE/regress/.lock-pg$major"
        flock 8
    else
        src="$CACHE/build/pg$major"
    fi
    rm -rf "$src" "$prefix"
    mkdir -p "$src" "$CACHE/build"
    log="$CACHE/build/pg$major.log"
    say "building $(basename "$tarball") into $prefix (about 3 minutes on 2 cores; log: $log)"
    tar -xjf "$tarball" -C "$src" --strip-components=1
    if ! (
        cd "$src" &&
            ./configure --prefix="$prefix" --without-icu --without-readline &&
            make -j"$(nproc)" &&
            make install &&
            for mod in "${CONTRIB[@]}"; do make -C "contrib/$mod" install || exit 1; done &&
            if [ "$keep" = keep ]; then make -C src/test/regress -j"$(nproc)"; fi
    ) >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "building PostgreSQL $major failed (full log: $log)"
    fi
    if [ "$keep" = keep ]; then
        tree_stamp "$major" "$tarball" >"$src/.regress-tree"
        # The tree is ready: release its lock now, not when this script
        # ends (scripts/test.sh runs the suite while the next major builds).
        exec 8>&-
    else
        rm -rf "$src"
    fi
}

# What a regression-suite tree of major $1 built from tarball $2 records:
# a tree is reused only for the same tarball and configuration.
tree_stamp() {
    echo "$(basename "$2") --prefix=$(prefix_of "$1") --without-icu --without-readline"
}

install_pgserver() {
    local dir="$CACHE/pg16" pginstall
    apt_install python3-venv
    rm -rf "$dir"
    mkdir -p "$dir"
    say "installing PyPI pgserver==$PGSERVER_VERSION (PostgreSQL 16.2) into $dir/venv"
    # Debian's Python, not one under /root: the venv must not point into a
    # directory the postgres user cannot traverse.
    /usr/bin/python3 -m venv "$dir/venv"
    "$dir/venv/bin/pip" install -q --disable-pip-version-check --no-deps "pgserver==$PGSERVER_VERSION" >&2
    pginstall=$(find "$dir/venv/lib" -maxdepth 4 -type d -path '*/site-packages/pgserver/pginstall' | head -n 1)
    [ -n "$pginstall" ] || die "pgserver $PGSERVER_VERSION has no pgserver/pginstall directory"
    ln -sfn "${pginstall#"$dir"/}" "$dir/pginstall"
    local pgc="$dir/pginstall/bin/pg_config" tarball tmp
    "$pgc" --version | grep -q "^PostgreSQL 16\." || die "pgserver's pg_config reports '$("$pgc" --version)', not 16"
    # pgserver ships no contrib: pg_walinspect from 17's source (see the header).
    tarball=$(orig_tarball 17)
    apt_install gcc make
    tmp=$(mktemp -d)
    tar -xjf "$tarball" -C "$tmp" --strip-components=1 --wildcards "*/contrib/pg_walinspect/*"
    if ! make -C "$tmp/contrib/pg_walinspect" USE_PGXS=1 PG_CONFIG="$pgc" install >"$dir/pg_walinspect.log" 2>&1; then
        tail -n 30 "$dir/pg_walinspect.log" >&2
        die "building pg_walinspect for 16 failed"
    fi
    rm -rf "$tmp"
}

# Debian's experimental 19 (see the header), in a sid root under the cache.
# The root is made aside and moved into place when complete, so that a run
# stopped halfway leaves nothing that looks installed. About a minute and a
# half and 450 MB; mostly downloads.
SID_MIRROR=http://deb.debian.org/debian
PG19_PACKAGES=(postgresql-19/experimental postgresql-client-19/experimental libpq5/experimental)
install_sid_19() {
    local base="$CACHE/pg19" new root
    root="$base/root"
    new="$base/root.new"
    apt_install debootstrap patchelf debian-archive-keyring
    # A run stopped while the new root had /proc mounted leaves it mounted.
    umount "$new/proc" 2>/dev/null || true
    rm -rf "$root" "$new"
    mkdir -p "$base"
    say "making a Debian sid root for PostgreSQL 19 in $root (about a minute and a half; log: $base/install.log)"
    if ! debootstrap --variant=minbase sid "$new" "$SID_MIRROR" >"$base/install.log" 2>&1; then
        tail -n 30 "$base/install.log" >&2
        die "debootstrap of sid failed (full log: $base/install.log)"
    fi
    cp /etc/resolv.conf "$new/etc/resolv.conf"
    # No service may start inside the root, and no cluster be made there.
    printf '#!/bin/sh\nexit 101\n' >"$new/usr/sbin/policy-rc.d"
    chmod 755 "$new/usr/sbin/policy-rc.d"
    mkdir -p "$new/etc/postgresql-common"
    echo "create_main_cluster = false" >"$new/etc/postgresql-common/createcluster.conf"
    # The archive's Release files can be older than the machine's clock.
    echo 'Acquire::Check-Valid-Until "false";' >"$new/etc/apt/apt.conf.d/99snowflake-no-valid-until"
    echo "deb $SID_MIRROR experimental main" >"$new/etc/apt/sources.list.d/experimental.list"
    mount -t proc proc "$new/proc"
    # `-t experimental` cannot be solved (it wants a newer perl): each package
    # by name. postgresql-server-dev-19 depends on clang-21 and llvm-21 (a
    # gigabyte): only its files are taken, for the server headers and PGXS.
    if ! {
        chroot "$new" apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive chroot "$new" apt-get install -y -qq --no-install-recommends \
                "${PG19_PACKAGES[@]}" &&
            chroot "$new" sh -c 'cd /tmp && apt-get download -qq postgresql-server-dev-19/experimental' &&
            dpkg -x "$new"/tmp/postgresql-server-dev-19_*.deb "$new" &&
            chroot "$new" apt-get clean
    } >>"$base/install.log" 2>&1; then
        umount "$new/proc" || true
        tail -n 30 "$base/install.log" >&2
        die "installing PostgreSQL 19 into the sid root failed (full log: $base/install.log)"
    fi
    umount "$new/proc"
    rm -f "$new"/tmp/postgresql-server-dev-19_*.deb
    mv "$new" "$root"
    local interp="$root/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2" prog
    # DT_RPATH (not RUNPATH) so that it also serves the libraries a server
    # loads, and what they load in turn.
    for prog in "$root/usr/lib/postgresql/19/bin"/*; do
        head -c 4 "$prog" | grep -q ELF || continue
        patchelf --set-interpreter "$interp" --force-rpath \
            --set-rpath "$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu" "$prog"
    done
    local global="$root/usr/lib/postgresql/19/lib/pgxs/src/Makefile.global"
    sed -i -e 's/^with_llvm\t= yes/with_llvm\t= no/' -e 's/^CC = x86_64-linux-gnu-gcc$/CC = gcc/' \
        -e 's/ -Wmissing-variable-declarations//' "$global"
    chmod -R a+rX "$base"
}

# A tree of major $1's source (17 or 18, the majors built from source here)
# for PostgreSQL's own regression suite (scripts/core_regress.sh): the same
# tarball and configure options as the installed server, so that the suite's
# C module (regress.so) fits that server and pg_regress runs its psql. Builds
# only what `make -C src/test/regress installcheck` needs (generated headers,
# libpgport/libpgcommon, libpq, pg_regress, regress.so, contrib/spi's
# refint.so and autoinc.so), about a minute on 2 cores; the tree is kept and a
# second call only prints its path.
regress_tree() {
    local major=$1 prefix tarball version dir stamp want log
    case "$major" in
    17 | 18) ;;
    *) die "--regress-tree: only 17 and 18 are built from source here; $major has no source tree" ;;
    esac
    installed "$major" || die "PostgreSQL $major is not installed; run: PG_MAJORS=$major bash scripts/pg_servers.sh"
    prefix=$(prefix_of "$major")
    dir="$CACHE/regress/pg$major"
    stamp="$dir/.regress-tree"
    mkdir -p "$CACHE/regress"
    exec 8>"$CACHE/regress/.lock-pg$major"
    flock 8
    tarball=$(orig_tarball "$major")
    # postgresql-18_18.1.orig.tar.bz2 -> 18.1: the installed server's version,
    # or the expected outputs may not be that server's.
    version=$(basename "$tarball" .orig.tar.bz2)
    version=${version#*_}
    "$prefix/bin/pg_config" --version | grep -qx "PostgreSQL $version" ||
        die "the installed $("$prefix/bin/pg_config" --version) is not the tarball's $version; reinstall it: rm -rf $prefix && PG_MAJORS=$major bash scripts/pg_servers.sh"
    want=$(tree_stamp "$major" "$tarball")
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$want" ] && [ -x "$dir/src/test/regress/pg_regress" ]; then
        exec 8>&-
        echo "$dir"
        return 0
    fi
    apt_install gcc make perl bison flex zlib1g-dev
    rm -rf "$dir"
    mkdir -p "$dir"
    log="$CACHE/regress/pg$major.log"
    say "building the regression suite of $(basename "$tarball") in $dir (about a minute; log: $log)"
    tar -xjf "$tarball" -C "$dir" --strip-components=1
    # Configured exactly like build_from_source; then only the suite's parts.
    if ! (
        cd "$dir" &&
            ./configure --prefix="$prefix" --without-icu --without-readline &&
            make -C src/interfaces/libpq -j"$(nproc)" &&
            make -C src/test/regress -j"$(nproc)"
    ) >"$log" 2>&1; then
        tail -n 30 "$log" >&2
        die "building the regression suite of PostgreSQL $major failed (full log: $log)"
    fi
    echo "$want" >"$stamp"
    exec 8>&-
    echo "$dir"
}

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
