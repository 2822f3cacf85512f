//! Past-instant IDs under a worker id leased from a registry: a backend that
//! claims history slots tells the registry, committed, before it uses them
//! (the rule is the core's `past_instants::leased`). Claims are rare (a few dozen
//! per import), so the backend calls the registry itself, over a libpq
//! connection of its own for each call, rather than through the mark
//! keeper: the wait is then the query's own, and a cancel ends it.

use std::time::Duration;

use pgrx::PgSqlErrorCode;
use snowflake_id_core::past_instants::{Interval, RecordedClaim};

use crate::pg::libpq::Failure;
use crate::pg::report::raise;
use crate::service::generator::writer::query_keeps_going;
use crate::service::registry::session::{signature, RegistrySession};
use crate::settings::names::REGISTRY;
use crate::settings::registry::{namespace, node_name};
use crate::shmem::{self, LeaseState};

/// How long one call to the registry may take, connect included.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);

/// The lease a claim is made under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LeaseRef {
    pub worker_id: i64,
    pub epoch: i64,
    pub token: i64,
}

/// The lease in force on `worker_id`, or the error for a claim without one.
pub fn current(worker_id: i64) -> LeaseRef {
    let shared = shmem::lock().registry;
    match (shared.state, shared.lease) {
        (LeaseState::Held | LeaseState::Expired, Some(l)) if shared.worker_id == worker_id => {
            LeaseRef { worker_id, epoch: l.epoch, token: l.token }
        }
        _ => raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("snowflake_id: no lease on worker id {worker_id} to make past-instant IDs under"),
            Some(format!("The registry lease is {}.", shared.state.name())),
            Some("Wait until snowflake_id_status shows the lease held, then try again.".into()),
        ),
    }
}

/// The claims recorded on the lease's worker id (by every holder), for the
/// first claim under the lease; or the error. An unreachable registry stops
/// past-instant IDs, never live ones.
pub fn recorded(lease: LeaseRef) -> Result<Vec<RecordedClaim>, Lost> {
    let columns = "claim_epoch, from_tick, to_tick, level";
    let rows = call(columns, "snowflake_registry_history_of", &signature::HISTORY_OF, &lease_params(lease, &[]))?;
    let number = |row: &[Option<String>], i: usize| row.get(i).cloned().flatten().and_then(|v| v.parse::<i64>().ok());
    rows.iter()
        .map(|r| match (number(r, 0), number(r, 1), number(r, 2), number(r, 3)) {
            (Some(lease_epoch), Some(from), Some(to), Some(level)) => {
                Ok(RecordedClaim { lease_epoch, interval: Interval { from, to, level } })
            }
            _ => raise(
                PgSqlErrorCode::ERRCODE_PROTOCOL_VIOLATION,
                "snowflake_id: a row of snowflake_registry_history_of() is not four numbers".into(),
                None,
                None,
            ),
        })
        .collect()
}

/// Records a claim in the registry, committed, before it is used.
pub fn record(lease: LeaseRef, claim: Interval) -> Result<(), Lost> {
    let more = [claim.from.to_string(), claim.to.to_string(), claim.level.to_string()];
    call("*", "snowflake_registry_record_history", &signature::RECORD_HISTORY, &lease_params(lease, &more)).map(|_| ())
}

fn lease_params(lease: LeaseRef, more: &[String]) -> Vec<Option<String>> {
    let mut params = vec![
        Some(namespace()),
        Some(lease.worker_id.to_string()),
        Some(lease.epoch.to_string()),
        Some(lease.token.to_string()),
    ];
    params.extend(more.iter().cloned().map(Some));
    params
}

/// The registry's answer that the lease a claim was made under is gone.
pub struct Lost {
    pub message: String,
    pub detail: Option<String>,
}

impl Lost {
    pub fn raise(self) -> ! {
        raise(
            PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            format!("snowflake_id: past-instant IDs: {}", self.message),
            self.detail,
            Some("The history slots claimed under it are not used. Try again once this server holds a lease.".into()),
        )
    }
}

/// One statement on this backend's registry connection, opened on first
/// use; a lost lease is the caller's to handle, any other failure an ERROR.
fn call(
    columns: &str,
    function: &str,
    types: &[&str],
    params: &[Option<String>],
) -> Result<Vec<Vec<Option<String>>>, Lost> {
    match try_call(columns, function, types, params) {
        Ok(rows) => Ok(rows),
        Err(Failure::Refused { sqlstate, message, detail, .. }) if sqlstate == "SFL01" => Err(Lost { message, detail }),
        Err(Failure::Refused { sqlstate, message, .. }) if sqlstate == "42883" => raise(
            PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
            "snowflake_id: the registry does not record past-instant claims".into(),
            Some(format!("The registry answered: {message}")),
            Some(
                "Update the extension in the registry's database to 0.4.0 or later (ALTER EXTENSION snowflake_id \
                 UPDATE) and grant the node's role EXECUTE on snowflake_registry_history_of and \
                 snowflake_registry_record_history; live IDs are not affected."
                    .into(),
            ),
        ),
        Err(failure) => {
            // libpq's words may quote the registry's connection string: the
            // DBA's secret goes to the server log alone, never to the client.
            if let Failure::Connection(_) = failure {
                pgrx::ereport!(
                    pgrx::PgLogLevel::LOG_SERVER_ONLY,
                    PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                    format!("snowflake_id: past-instant IDs: {failure}")
                );
            }
            raise(
                PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!(
                    "snowflake_id: past-instant IDs need the registry, and it did not answer: {}",
                    failure.public()
                ),
                Some(
                    "A claim of history slots under a leased worker id is recorded in the registry before it is used; \
                 live IDs go on."
                        .into(),
                ),
                Some(format!("Check {REGISTRY} and the registry server, then try again.")),
            )
        }
    }
}

/// A connection per call, closed after it: claims are rare (a few dozen per
/// import), and a connection kept by every session that ever imported would
/// fill the registry's max_connections, and then nodes could not renew or
/// acquire their leases (live IDs stop).
fn try_call(
    columns: &str,
    function: &str,
    types: &[&str],
    params: &[Option<String>],
) -> Result<Vec<Vec<Option<String>>>, Failure> {
    let name = format!("snowflake_id {} (past-instant IDs)", node_name());
    let (_, mut session) = RegistrySession::open(&name, None, CALL_TIMEOUT, query_keeps_going, || ())?;
    session.call(columns, function, types, params, CALL_TIMEOUT, query_keeps_going)
}
