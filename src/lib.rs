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

extension_sql_file!("../sql/install/objects_in_the_way.sql", name = "objects_in_the_way", bootstrap);
extension_sql_file!("../sql/install/parts_type.sql", name = "parts_type", requires = ["objects_in_the_way"]);
extension_sql_file!("../sql/install/internal_schema.sql", name = "internal_schema", requires = ["objects_in_the_way"]);
extension_sql_file!(
    "../sql/install/library_functions.sql",
    name = "library_functions",
    requires = ["internal_schema", api::functions::snowflake_nextval_at]
);
extension_sql_file!(
    "../sql/install/decode.sql",
    name = "decode",
    requires = [
        "parts_type",
        "library_functions",
        api::functions::snowflake_timestamp,
        api::functions::snowflake_worker_id,
        api::functions::snowflake_sequence,
        api::functions::snowflake_timestamp_with_layout,
        api::functions::snowflake_worker_id_with_layout,
        api::functions::snowflake_sequence_with_layout
    ]
);
extension_sql_file!(
    "../sql/install/convert.sql",
    name = "convert",
    requires = ["library_functions", api::functions::snowflake_nextval]
);
extension_sql_file!("../sql/install/registry_tables.sql", name = "registry_tables");
extension_sql_file!(
    "../sql/install/registry_functions.sql",
    name = "registry_functions",
    requires = ["registry_tables", "internal_schema"]
);
extension_sql_file!("../sql/install/registry_entry.sql", name = "registry_entry", requires = ["registry_functions"]);
extension_sql_file!(
    "../sql/install/cluster.sql",
    name = "cluster",
    requires = ["library_functions", api::status::snowflake_id_status, api::cluster::snowflake_logical_peers]
);
extension_sql_file!(
    "../sql/install/logical.sql",
    name = "logical",
    requires = ["internal_schema", api::functions::snowflake_nextval]
);
extension_sql_file!("../sql/install/status_view.sql", name = "status_view", requires = ["library_functions"]);
extension_sql_file!("../sql/install/privileges.sql", name = "privileges", finalize);

#[pg_guard]
pub extern "C-unwind" fn _PG_init() {
    pg::report::no_rust_backtraces_for_clients();
    pg::report::name_the_node(settings::registry::node_name);
    shmem::init();
    settings::register(shmem::preloaded());
    settings::reserve_prefix();
    api::planner::install();
    if shmem::preloaded() {
        pg::instance::init();
        mark::wal::register();
        warn_about_settings();
        worker::mark_keeper::register();
        if worker::cluster_watch::citus_preloaded() {
            worker::cluster_watch::register();
        }
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
        pg::report::emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("snowflake_id: {}", e.line()),
            Some("snowflake_nextval() will refuse to issue IDs until this is fixed.".into()),
            Some(hint),
        );
    }
    if let (true, Some(problem)) = (errors.is_empty(), settings.problem(pg::clock::now_unix_ms())) {
        pg::report::emit(
            PgLogLevel::WARNING,
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            problem,
            Some(
                "snowflake_nextval() will refuse to issue IDs until this is fixed in postgresql.conf and the server restarted."
                    .into(),
            ),
            None,
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
            pg::report::emit(
                PgLogLevel::WARNING,
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                format!("snowflake_id: a layout change {what}: {changed}"),
                Some(hint.into()),
                None,
            );
        }
    }
}
