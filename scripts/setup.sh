#!/usr/bin/env bash
# Installs what building, testing and running snowflake_id needs on Debian 12
# as root, skipping whatever is already there: PostgreSQL 15 and its server
# headers, libclang (pgrx's bindgen), libfaketime (clock-step tests), procps
# (pgrep, for the crash test), strace (slows the mark's fsync in the wait
# event test), pg_partman (the partitioning test), python3-venv (the client
# test's virtualenv), cargo-pgrx 0.19.4, Citus for PostgreSQL 15 (the Citus
# test) when ../shared/citus has a build of it, and the servers of PostgreSQL
# 16 to 19 (scripts/pg_servers.sh) with the packages installing them needs.
#
#   bash scripts/setup.sh               all of it
#   bash scripts/setup.sh --packages    the Debian packages only
#   bash scripts/setup.sh --no-servers  all but the servers of 16-19, which
#                                       scripts/test.sh builds in the background
#   PG_MAJORS="15 18"                   the majors whose servers it installs
set -euo pipefail

step=${1:-all}
case "$step" in
all | --packages | --no-servers) ;;
*)
    echo "usage: $0 [--packages | --no-servers]" >&2
    exit 2
    ;;
esac

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
RUST_NEEDED=1.95

# First the one thing this script cannot install: the Rust toolchain. pgrx
# 0.19 declares rustc 1.96 and builds with 1.95 (scripts/cargo.sh adds
# --ignore-rust-version below 1.96); Debian 12's own rustc package is 1.63.
rust_missing() {
    cat >&2 <<MSG
setup: $1
setup: building snowflake_id needs a Rust toolchain, rustc $RUST_NEEDED or newer (pgrx 0.19).
setup: install it with rustup (https://rustup.rs), for example
setup:     curl --proto '=https' --tlsv1.2 -sSf https://sh.rustup.rs | sh -s -- -y --default-toolchain $RUST_NEEDED
setup:     . "\$HOME/.cargo/env"
setup: then run this again. Debian's rustc package is too old. A host without a
setup: toolchain can install the Debian package instead (README: "Install from the package").
MSG
    exit 1
}
command -v cargo >/dev/null 2>&1 || rust_missing "cargo was not found on PATH."
command -v rustc >/dev/null 2>&1 || rust_missing "rustc was not found on PATH."
rust_version=$(rustc --version | awk '{print $2}')
if [ "$(printf '%s\n%s\n' "$RUST_NEEDED" "${rust_version%%-*}" | sort -V | head -n 1)" != "$RUST_NEEDED" ]; then
    rust_missing "rustc $rust_version is too old."
fi
# libpq5: the mark keeper opens libpq at run time to talk to a worker id registry.
# flex, libkrb5-dev: pg_tle's build (../shared/pg_tle), for the managed edition's tests.
PACKAGES=(postgresql-15 postgresql-server-dev-15 libclang-dev libpq5 libfaketime faketime procps strace postgresql-15-partman postgresql-15-pglogical python3-venv flex libkrb5-dev)
# What scripts/pg_servers.sh needs to fetch and build 16, 17 and 18, and to
# make 19's sid root, installed here in one apt run: its own apt runs would
# collide with anything else installing while it builds in the background.
if [[ " ${PG_MAJORS:-16} " == *" 1"[6789]" "* ]]; then
    PACKAGES+=(dpkg-dev debian-archive-keyring gcc make perl bison flex zlib1g-dev debootstrap patchelf)
fi

missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
[ "$step" != --packages ] || exit 0

# Citus is in no registry these machines reach: ../shared/citus (beside this
# repository; CITUS_DIR elsewhere) may hold a build of Citus 13.2 for Debian's
# PostgreSQL 15 and the script that puts it in place, doing nothing when it
# is there already. Without it, the tests of tests/citus.rs fail on 15
# (unless SNOWFLAKE_SKIP names them: docs/development.md).
citus_dir=${CITUS_DIR:-$(dirname "${BASH_SOURCE[0]}")/../../shared/citus}
if [[ " ${PG_MAJORS:-15} " == *" 15 "* ]] && [ -f "$citus_dir/install.sh" ]; then
    bash "$citus_dir/install.sh" >/dev/null
fi

# The cargo-pgrx of the pgrx in Cargo.toml, exactly (scripts/cargo.sh adds
# --ignore-rust-version where rustc is older than its declared 1.96).
if ! cargo pgrx --version 2>/dev/null | grep -q "^cargo-pgrx 0.19.4$"; then
    echo "setup: installing cargo-pgrx 0.19.4 (8 to 16 minutes on 2 cores)"
    bash "$(dirname "${BASH_SOURCE[0]}")/cargo.sh" install cargo-pgrx --version 0.19.4 --locked --force --quiet
fi

# pgrx's build reads every pg_config that config.toml names and fails on
# one that is gone (a server cache moved or removed: SNOWFLAKE_PG_CACHE
# elsewhere, a clone deleted): such lines go; scripts/pg_servers.sh
# registers the servers again when they are there.
pgrx_config=${PGRX_HOME:-$HOME/.pgrx}/config.toml
if [ -f "$pgrx_config" ]; then
    kept=()
    dropped=0
    while IFS= read -r line; do
        path=$(sed -n 's/^pg[0-9]* = "\(.*\)"$/\1/p' <<<"$line")
        if [ -n "$path" ] && [ ! -x "$path" ]; then
            echo "setup: pgrx names $path, which is gone; dropping it from $pgrx_config"
            dropped=1
        else
            kept+=("$line")
        fi
    done <"$pgrx_config"
    if ((dropped)); then
        printf '%s\n' "${kept[@]}" >"$pgrx_config.tmp"
        mv "$pgrx_config.tmp" "$pgrx_config"
    fi
fi

if ! grep -qs "^pg15 = \"$PG_CONFIG\"" "$pgrx_config"; then
    echo "setup: pointing pgrx at PostgreSQL 15"
    cargo pgrx init --pg15 "$PG_CONFIG" >/dev/null
fi

# The servers of every supported major (15 above, 16 from PyPI's pgserver, 17
# and 18 built from Debian's source packages), cached; PG_MAJORS selects them.
[ "$step" = --no-servers ] || bash "$(dirname "${BASH_SOURCE[0]}")/pg_servers.sh" >/dev/null
