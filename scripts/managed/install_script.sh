# shellcheck shell=bash
# Sourced by scripts/managed.sh (from the repository's root): the install
# script's body (the guard, then sql/install's and sql/managed's files in
# the order of parts), which the pg_tle script, the plain script and the
# database.dev package embed, and the update scripts' bodies. Reads version,
# parts, updates, this_extension and types_lookup from managed.sh.

script() { # $1: tle or plain
    # The guard is managed.sh's (sourced from scripts/managed/guard.sh).
    printf -- '-- ==== the guard (scripts/managed.sh) ====\n'
    guard "$1"
    printf '\n'
    local text
    for f in "${parts[@]}"; do
        printf -- '-- ==== %s ====\n' "$f"
        if [ "$f" = sql/install/objects_in_the_way.sql ]; then
            text=$(sed "s/@snowflake_id_version@/$version/g" "$f")
            printf '%s\n' "${text//"$types_lookup"/"$this_extension;"}"
        else
            sed "s/@snowflake_id_version@/$version/g" "$f"
        fi
        printf '\n'
    done
    if [ "$1" = tle ]; then
        printf -- '-- ==== %s ====\n' sql/managed/config_dump.sql
        cat sql/managed/config_dump.sql
    fi
}

# The update scripts this version registers, one path a line: a path to a
# version after this one is a draft for the next release, left out (the
# version it leads to is not here).
update_scripts() {
    local u to base
    for u in "$updates"/snowflake_id--*--*.sql; do
        [ -f "$u" ] || continue
        base=$(basename "$u" .sql)
        to=${base##*--}
        if [ "$(printf '%s\n%s\n' "$to" "$version" | sort -V | tail -1)" = "$version" ]; then
            printf '%s\n' "$u"
        fi
    done
}

# An update script as pg_tle runs it. A line "-- @snowflake_id_install_in_place@"
# stands for this version's install script made to run over an earlier
# install, as the plain script's update does: functions and the view
# replaced in place (the same identities: column defaults and views that use
# them stay), the type kept.
update_body() { # $1: sql/managed/updates/snowflake_id--FROM--TO.sql
    local line
    while IFS= read -r line || [ -n "$line" ]; do
        if [ "$line" = '-- @snowflake_id_install_in_place@' ]; then
            # sql/install/objects_in_the_way.sql and parts_type.sql left out: the type is kept, and the guard
            # (the native one) counts a composite type's pg_class row,
            # which is no member, as in the way.
            script tle | awk '/^-- ==== /{skip = ($0 == "-- ==== sql/install/objects_in_the_way.sql ====" || $0 == "-- ==== sql/install/parts_type.sql ====")} !skip' |
                sed -e 's/^CREATE FUNCTION /CREATE OR REPLACE FUNCTION /' -e 's/^CREATE VIEW /CREATE OR REPLACE VIEW /'
        else
            printf '%s\n' "$line"
        fi
    done <"$1"
}
