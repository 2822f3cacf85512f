# shellcheck shell=bash
# Sourced by scripts/pg_servers.sh: 17 and 18 built here from upstream source
# as Debian ships it (postgresql-17 of trixie, postgresql-18 of sid; the
# tarball from debian_source.sh), and the trees of their source in which
# PostgreSQL's own regression suite runs (--regress-tree). Uses CACHE,
# CONTRIB, say, die, prefix_of, installed and apt_install from pg_servers.sh.

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
