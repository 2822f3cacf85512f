#!/usr/bin/env bash
# Installs what building, testing and running snowflake_id needs on Debian 12
# as root, skipping whatever is already there: PostgreSQL 15 and its server
# headers, libclang (pgrx's bindgen), sudo (cargo pgrx test --runas),
# libfaketime (clock-step tests), procps (pgrep, for the crash test),
# pg_partman (the partitioning test), and cargo-pgrx 0.18.0.
set -euo pipefail

PG_CONFIG=/usr/lib/postgresql/15/bin/pg_config
PACKAGES=(postgresql-15 postgresql-server-dev-15 libclang-dev sudo libfaketime faketime procps postgresql-15-partman)

missing=()
for pkg in "${PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
    echo "setup: installing ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# pgrx 0.19 needs rustc 1.96; this machine has 1.95, so 0.18.0 exactly.
if ! cargo pgrx --version 2>/dev/null | grep -q "^cargo-pgrx 0.18.0$"; then
    echo "setup: installing cargo-pgrx 0.18.0 (about 6 minutes on 2 cores)"
    cargo install cargo-pgrx --version 0.18.0 --locked --quiet
fi

if ! grep -qs "^pg15 = \"$PG_CONFIG\"" "${PGRX_HOME:-$HOME/.pgrx}/config.toml"; then
    echo "setup: pointing pgrx at PostgreSQL 15"
    cargo pgrx init --pg15 "$PG_CONFIG" >/dev/null
fi
