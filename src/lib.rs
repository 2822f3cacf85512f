//! snowflake_id: the PostgreSQL side. The layout math, the next-ID state
//! machine and the registry lease's rule live in the `snowflake_id_core`
//! crate; this crate binds them to PostgreSQL in layers, each using only
//! those below it (docs/architecture.md draws them; `python3
//! scripts/import_graph.py` checks there is no loop):
//!
//! 1. `pg`: adapters to PostgreSQL with no knowledge of the generator.
//! 2. `settings`: every `snowflake_id.*` setting, its checks and its errors;
//!    `refusal`: the core's errors as SQLSTATEs and hints.
//! 3. `shmem`: all shared state; `mark`: the durable mark's storage (state
//!    file and WAL).
//! 4. `service`: the generator service (drawing IDs, writing the mark, the
//!    node's side of the registry lease).
//! 5. `worker`: the mark keeper and the registry keeper.
//! 6. `api`: the SQL functions, the status view and the planner hook.

use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};

mod api;
mod mark;
mod pg;
mod refusal;
mod service;
mod settings;
mod shmem;
mod worker;

::pgrx::pg_module_magic!();

extension_sql_file!("../sql/types.sql", name = "types", bootstrap);
extension_sql_file!(
    "../sql/decode.sql",
    name = "decode",
    requires = [
        "types",
        api::functions::snowflake_timestamp,
        api::functions::snowflake_worker_id,
        api::functions::snowflake_sequence,
        api::functions::snowflake_timestamp_with_layout,
        api::functions::snowflake_worker_id_with_layout,
        api::functions::snowflake_sequence_with_layout
    ]
);
extension_sql_file!(
    "../sql/convert.sql",
    name = "convert",
    requires =
        [api::functions::snowflake_nextval, api::functions::snowflake_from_timestamp, api::status::snowflake_id_status]
);
extension_sql_file!("../sql/registry.sql", name = "registry");
extension_sql_file!("../sql/finalize.sql", name = "finalize", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::report::no_rust_backtraces_for_clients();
    shmem::init();
    settings::register(shmem::preloaded());
    settings::reserve_prefix();
    api::planner::install();
    if shmem::preloaded() {
        mark::wal::register();
        warn_about_settings();
        worker::mark_keeper::register();
    }
}

/// Bad settings do not stop the server (that would take every database down
/// for a key generator); they are logged at start, and `snowflake_nextval()`
/// refuses to issue IDs with the same message until they are fixed.
fn warn_about_settings() {
    let settings = settings::Settings::get();
    // One WARNING per bad setting, each naming where to fix it, so that one
    // restart can fix them all.
    let errors = settings.errors();
    for e in &errors {
        let (_, hint) = settings::setting_error_code_and_hint(e);
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("snowflake_id: {}", e.line()),
            "snowflake_id",
        )
        .set_detail("snowflake_nextval() will refuse to issue IDs until this is fixed.")
        .set_hint(hint)
        .report(PgLogLevel::WARNING);
    }
    if let (true, Some(problem)) = (errors.is_empty(), settings.problem(pg::clock::now_unix_ms())) {
        ereport!(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            problem,
            "snowflake_nextval() will refuse to issue IDs until this is fixed in postgresql.conf and the server restarted."
        );
    }
    // A layout other than the one the state file records: said at start, not
    // only when the first ID is asked for.
    let stored = mark::file::read().ok().flatten();
    if let (Some(stored), Ok(layout)) = (stored, &settings.layout) {
        if stored.layout.layout() != *layout {
            let (what, hint) = if settings::allow_layout_change() {
                (
                    "is allowed",
                    "Stored IDs decode differently from now on; turn snowflake_id.allow_layout_change off again.",
                )
            } else {
                ("is refused", "snowflake_nextval() refuses until the settings are restored or the change is allowed.")
            };
            let changed = snowflake_id_core::Error::LayoutChanged { stored: stored.layout };
            ereport!(
                PgLogLevel::WARNING,
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("snowflake_id: a layout change {what}: {changed}"),
                hint
            );
        }
    }
}

#[cfg(any(test, feature = "pg_test"))]
#[pg_schema]
mod tests {
    use pgrx::prelude::*;

    fn one<T: pgrx::IntoDatum + pgrx::FromDatum>(sql: &str) -> T {
        Spi::get_one::<T>(sql).expect("query failed").expect("query returned NULL")
    }

    #[pg_test]
    fn nextval_increases_and_decodes_to_this_worker_and_now() {
        assert!(one::<bool>(
            "SELECT bool_and(id > prev) FROM (SELECT id, lag(id) OVER (ORDER BY n) AS prev
               FROM (SELECT n, snowflake_nextval() AS id FROM generate_series(1, 20000) n) s) t
             WHERE prev IS NOT NULL"
        ));
        assert_eq!(one::<i32>("SELECT (snowflake_decode(snowflake_nextval())).worker_id"), 42);
        assert!(one::<bool>(
            "SELECT abs(extract(epoch FROM (snowflake_decode(snowflake_nextval())).ts - clock_timestamp())) < 5"
        ));
    }

    /// Discord's documented example ID and its documented breakdown:
    /// https://discord.com/developers/docs/reference#snowflakes
    #[pg_test]
    fn decodes_discords_documented_id() {
        let row = one::<String>(
            "SELECT format('%s|%s|%s', (d).ts AT TIME ZONE 'UTC', (d).worker_id, (d).sequence)
               FROM (SELECT snowflake_decode(175928847299117063, '2015-01-01 00:00:00+00', 10, 12) AS d) s",
        );
        assert_eq!(row, "2016-04-30 11:18:25.796|32|7");
    }

    #[pg_test]
    fn from_timestamp_bounds_ids_by_time() {
        assert_eq!(one::<i64>("SELECT snowflake_from_timestamp('2025-01-01 00:00:00+00')"), 0);
        assert_eq!(one::<i64>("SELECT snowflake_from_timestamp('2025-01-01 00:00:00.001+00')"), 1 << 22);
        assert_eq!(one::<i64>("SELECT snowflake_from_timestamp('1999-01-01')"), 0);
        assert!(one::<bool>(
            "SELECT snowflake_from_timestamp(now() - interval '1 second') <= id
                AND id < snowflake_from_timestamp(clock_timestamp() + interval '1 second')
               FROM (SELECT snowflake_nextval() AS id) s"
        ));
        assert!(one::<bool>(
            "SELECT snowflake_from_timestamp((snowflake_decode(id)).ts) <= id FROM (SELECT snowflake_nextval() AS id) s"
        ));
    }

    #[pg_test]
    fn decode_null_is_null() {
        assert_eq!(Spi::get_one::<bool>("SELECT snowflake_decode(NULL) IS NULL").unwrap(), Some(true));
    }

    #[pg_test(error = "snowflake_id: snowflake ID -1 is negative")]
    fn decode_negative_is_an_error() {
        Spi::run("SELECT snowflake_decode(-1)").unwrap();
    }

    #[pg_test(error = "snowflake_id: worker_bits (20) + sequence_bits (12) must be at most 22, each between 0 and 22")]
    fn decode_with_impossible_layout_is_an_error() {
        Spi::run("SELECT snowflake_decode(1, now(), 20, 12)").unwrap();
    }

    #[pg_test(error = "parameter \"snowflake_id.worker_id\" cannot be changed without restarting the server")]
    fn worker_id_cannot_be_set() {
        Spi::run("SET snowflake_id.worker_id = '7'").unwrap();
    }

    #[pg_test]
    fn status_counts_issued_ids() {
        Spi::run("SELECT snowflake_nextval() FROM generate_series(1, 10)").unwrap();
        assert!(one::<i64>("SELECT ids_issued FROM snowflake_id_status") >= 10);
        assert_eq!(one::<i64>("SELECT worker_id FROM snowflake_id_status"), 42);
        assert!(one::<bool>("SELECT last_id IS NOT NULL AND durable_mark >= logical_clock FROM snowflake_id_status"));
    }
}

/// Settings for `cargo pgrx test`: the generator needs preloading and a worker id.
#[cfg(test)]
pub mod pg_test {
    pub fn setup(_options: Vec<&str>) {}

    pub fn postgresql_conf_options() -> Vec<&'static str> {
        vec!["shared_preload_libraries = 'snowflake_id'", "snowflake_id.worker_id = '42'"]
    }
}
