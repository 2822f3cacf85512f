//! snowflake_id: the PostgreSQL side. The layout math and the next-ID state
//! machine live in the `snowflake_id_core` crate; this crate only binds them
//! to settings (`guc`), shared memory (`shmem`, `spinlock`), the durable mark
//! in the data directory (`durable`) and in WAL (`wal`), the worker that
//! keeps it ahead (`mark_keeper`), the per-call driver (`nextval`) and SQL (`api`,
//! `status`), turning core errors into SQLSTATEs (`errors`), and a planner
//! hook that keeps decoding in FROM inlined (`planner`).

use pgrx::prelude::*;
use pgrx::{PgLogLevel, PgSqlErrorCode};

mod api;
mod clock;
mod compat;
mod durable;
mod errors;
mod guc;
mod guc_check;
mod guc_origin;
mod log_limit;
mod mark_keeper;
mod nextval;
mod planner;
mod registry;
mod registry_client;
mod shmem;
mod spinlock;
mod status;
mod wait_event;
mod wal;

::pgrx::pg_module_magic!();

extension_sql_file!("../sql/types.sql", name = "types", bootstrap);
extension_sql_file!(
    "../sql/decode.sql",
    name = "decode",
    requires = [
        "types",
        api::snowflake_timestamp,
        api::snowflake_worker_id,
        api::snowflake_sequence,
        api::snowflake_timestamp_with_layout,
        api::snowflake_worker_id_with_layout,
        api::snowflake_sequence_with_layout
    ]
);
extension_sql_file!(
    "../sql/convert.sql",
    name = "convert",
    requires = [api::snowflake_nextval, api::snowflake_from_timestamp, status::snowflake_id_status]
);
extension_sql_file!("../sql/registry.sql", name = "registry");
extension_sql_file!("../sql/finalize.sql", name = "finalize", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    errors::no_rust_backtraces_for_clients();
    shmem::init();
    guc::register(shmem::preloaded());
    registry::register_settings(shmem::preloaded());
    registry::decide_at_start(shmem::preloaded());
    guc::reserve_prefix();
    planner::install();
    if shmem::preloaded() {
        wal::register();
        warn_about_settings();
        mark_keeper::register();
    }
}

/// Bad settings do not stop the server (that would take every database down
/// for a key generator); they are logged at start, and `snowflake_nextval()`
/// refuses to issue IDs with the same message until they are fixed.
fn warn_about_settings() {
    let settings = guc::Settings::get();
    // One WARNING per bad setting, each naming where to fix it, so that one
    // restart can fix them all.
    let errors = settings.errors();
    for e in &errors {
        let (_, hint) = errors::setting_error_code_and_hint(e);
        pgrx::pg_sys::panic::ErrorReport::new(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("snowflake_id: {}", e.line()),
            "snowflake_id",
        )
        .set_detail("snowflake_nextval() will refuse to issue IDs until this is fixed.")
        .set_hint(hint)
        .report(PgLogLevel::WARNING);
    }
    if let (true, Some(problem)) = (errors.is_empty(), settings.problem(clock::now_unix_ms())) {
        ereport!(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            problem,
            "snowflake_nextval() will refuse to issue IDs until this is fixed in postgresql.conf and the server restarted."
        );
    }
    // A layout other than the one the state file records: said at start, not
    // only when the first ID is asked for.
    let stored = durable::read().ok().flatten();
    if let (Some(stored), Ok(layout)) = (stored, &settings.layout) {
        if stored.layout.layout() != *layout {
            let (what, hint) = if guc::allow_layout_change() {
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
