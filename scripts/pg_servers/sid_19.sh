# shellcheck shell=bash
# Sourced by scripts/pg_servers.sh: 19. No suite serves 19's source; Debian's
# experimental suite has its binary packages (19~rc1-1), built for a newer C
# library than Debian 12's. They are installed into a Debian sid root made
# with debootstrap under the cache, then each program's ELF interpreter and
# library path are pointed into that root (patchelf): the programs then run
# on the host itself, with the root's C library, and see the host's files,
# so data directories, sockets, libfaketime and the library built here work
# as with any other major, and pg_config answers with the root's paths
# (PostgreSQL finds them relative to its binaries). Its PGXS Makefile.global
# is edited for the host's compiler (gcc 12 lacks a warning flag gcc 16 has;
# no clang-21 bitcode). Uses CACHE, say, die and apt_install from
# pg_servers.sh.

# Debian's experimental 19, in a sid root under the cache.
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
