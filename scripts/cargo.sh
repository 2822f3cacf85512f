#!/usr/bin/env bash
# cargo as this project runs it: `bash scripts/cargo.sh ARGS` is `cargo ARGS`,
# except that with a rustc older than pgrx 0.19's declared 1.96 the commands
# that compile get --ignore-rust-version (pgrx 0.19.4 builds and passes every
# test with 1.95, the newest stable these machines have; docs/development.md).
#
#   bash scripts/cargo.sh build --features pg19     cargo build, flag added
#   bash scripts/cargo.sh pgrx install --pg-config ...
#                                                   cargo-pgrx, with this script as
#                                                   its cargo: it must not pass the
#                                                   flag to `cargo metadata`, which
#                                                   refuses it, so it cannot be given
#                                                   to cargo-pgrx itself
#
# With rustc 1.96 or newer it is plain cargo.
set -euo pipefail

PGRX_RUST=1.96
real_cargo=${SNOWFLAKE_REAL_CARGO:-$(command -v cargo)}
export SNOWFLAKE_REAL_CARGO=$real_cargo

rust_version=$(rustc --version | awk '{ print $2 }')
rust_version=${rust_version%%-*}
if [ "$(printf '%s\n%s\n' "$PGRX_RUST" "$rust_version" | sort -V | head -n 1)" = "$PGRX_RUST" ]; then
    exec "$real_cargo" "$@"
fi

case "${1:-}" in
pgrx)
    shift
    # cargo-pgrx runs $CARGO for every cargo command it needs. cargo finds
    # its subcommands in $CARGO_HOME/bin even off PATH; so does this.
    pgrx_bin=$(command -v cargo-pgrx || echo "${CARGO_HOME:-$HOME/.cargo}/bin/cargo-pgrx")
    CARGO="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)/cargo.sh" exec "$pgrx_bin" pgrx "$@"
    ;;
build | check | clippy | test | run | rustc | doc | bench | install)
    sub=$1
    shift
    exec "$real_cargo" "$sub" --ignore-rust-version "$@"
    ;;
*) exec "$real_cargo" "$@" ;;
esac
