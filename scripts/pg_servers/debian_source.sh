# shellcheck shell=bash
# Sourced by scripts/pg_servers.sh: the upstream source tarballs of 17 and 18
# as Debian ships them (17's also serves 16's pg_walinspect), fetched once
# into $CACHE/src. Uses CACHE, say, die and apt_install from pg_servers.sh.
#
# The trixie/sid deb-src entries live in a private apt configuration under the
# cache (own sources list, package lists and apt cache): the system's apt never
# sees those suites, so nothing from them can ever be installed; only their
# source tarballs are fetched.

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
