# shellcheck shell=bash
# Sourced by scripts/pg_servers.sh: 16, which no Debian suite carries. PyPI's
# pgserver 0.1.4 wheel ships a complete 16.2 (binaries, server headers,
# PGXS); only its files are used, never its Python API. It has no contrib and
# no suite carries 16's source, so pg_walinspect (one test uses it) is built
# with 16's PGXS from 17's contrib/pg_walinspect: it compiles without a
# warning against 16.2's headers and serves the functions the test calls.
# Uses CACHE, say, die and apt_install from pg_servers.sh, and orig_tarball
# from debian_source.sh.

PGSERVER_VERSION=0.1.4

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
