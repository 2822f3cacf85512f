//! The registry keeper: the mark keeper's turn that acquires, renews and
//! releases the worker id's lease by calling the registry's SQL functions
//! (sql/install/registry_functions.sql) over libpq (`pg/libpq.rs`).
//!
//! Nothing here is on the query path, and nothing here writes the lease in
//! shared memory or on disk: each answer is handed to the generator service
//! (`service/registry/lease.rs`), which raises the ceiling only after the registry
//! committed the renewal. Queries only meet the lease as the generator's
//! ceiling and the worker id they encode.
//!
//! The rooms: this file is the keeper's state and its turn (when to call,
//! the session, backing off and reporting a failure); `acquire.rs` gets a
//! worker id (the lease on disk, copies of a running node); `renew.rs`
//! renews and releases a lease held.

use std::time::{Duration, Instant};

use snowflake_id_core::lease as rule;
use snowflake_id_core::Layout;

use crate::pg::libpq::{Failure, KeepGoing};
use crate::pg::{clock, instance};
use crate::service::generator::resume;
use crate::service::registry::lease;
use crate::service::registry::session::{RegistrySession, NO_EXTENSION};
use crate::settings::names::REGISTRY;
use crate::settings::registry::{conninfo, horizon_ms, node_name};
use crate::shmem::log_limit::{self, Topic};
use crate::shmem::{self, LeaseState as State};

mod acquire;
mod renew;

/// How long one call to the registry may take, connect included.
const CALL_TIMEOUT: Duration = Duration::from_millis(rule::CALL_TIMEOUT_MS as u64);
/// After a failure the keeper waits this long before the next try, doubling
/// up to [`MAX_BACKOFF`]: an unreachable registry is not hammered.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
const REFUSED_RETRY: Duration = Duration::from_secs(1);
/// SQLSTATEs of a registry database without the extension's functions or
/// tables (not created yet, say, as on a Citus coordinator being set up).
const UNDEFINED: [&str; 4] = ["42883", "42P01", "3F000", NO_EXTENSION];

/// What the keeper process keeps between turns: the open connection and
/// when to try again after a failure.
pub struct RegistryKeeper {
    /// The session with the registry, and the setting it was opened with.
    session: Option<(String, RegistrySession)>,
    retry_at: Instant,
    backoff: Duration,
    /// When the registry last answered a renewal or grant: renewals are due
    /// at least every heartbeat (a tenth of the lease) by this monotonic
    /// clock, so the registry sees a running node run whatever its wall clock does.
    answered_at: Instant,
    /// With `auto`, the worker id on disk was refused (another node holds
    /// it now, or another start of this very lease runs): ask for any free
    /// one instead.
    forget_stored: bool,
    /// When this keeper began: a lease on disk waits this long
    /// (`START_WAIT_MS`) for the registry's answer before it is used unconfirmed.
    started_at: Instant,
    /// Whether the registry was reached since this keeper began (connected
    /// to, or answered): once it was, the lease on disk is never used
    /// unconfirmed.
    heard: bool,
    /// Since when the registry refuses this start's lease on disk as another
    /// running start's (SFL05), without a break.
    refused_since: Option<Instant>,
    /// Refused for longer than the silence: the start holding the lease
    /// renewed after the first refusal, so it runs and this is a copy of it.
    /// It no longer presents the lease on disk (it would be granted it anew
    /// at the original's first slow renewal), and takes the worker id only
    /// when it is stale or released, as any other node would.
    proven_copy: bool,
    /// The lease epoch renewed last and the highest ceiling asked for under
    /// it: an answer above it is refused (`rule::renewal_answer_fits`).
    asked: Option<(i64, i64)>,
}

impl RegistryKeeper {
    pub fn new() -> RegistryKeeper {
        RegistryKeeper {
            session: None,
            retry_at: Instant::now(),
            backoff: FIRST_BACKOFF,
            answered_at: Instant::now(),
            forget_stored: false,
            started_at: Instant::now(),
            heard: false,
            refused_since: None,
            proven_copy: false,
            asked: None,
        }
    }

    fn session(&mut self, keep_going: KeepGoing) -> Result<&mut RegistrySession, Failure> {
        if self.session.as_ref().is_some_and(|(c, _)| conninfo().as_ref() != Some(c)) {
            self.session = None; // a reload changed where the registry is
        }
        if self.session.is_none() {
            let name = format!("snowflake_id {}", node_name());
            // The registry is up once connected: a call that then times out
            // (a row lock, a commit waiting for a synchronous standby) is a
            // busy registry, not an outage, and the lease on disk never goes
            // on unconfirmed for it (a copy would then issue beside its
            // running original). Every call names this postmaster start
            // (sql/install/registry_functions.sql).
            let heard = &mut self.heard;
            let opened = RegistrySession::open(&name, Some(instance::id()), CALL_TIMEOUT, keep_going, || *heard = true);
            self.session = Some(opened?);
        }
        match self.session.as_mut() {
            Some((_, session)) => Ok(session),
            None => Err(Failure::Unreachable("no connection".into())),
        }
    }

    fn call(
        &mut self,
        columns: &str,
        function: &str,
        types: &[&str],
        params: &[Option<String>],
        keep_going: KeepGoing,
    ) -> Result<Vec<Vec<Option<String>>>, Failure> {
        let result =
            self.session(keep_going).and_then(|s| s.call(columns, function, types, params, CALL_TIMEOUT, keep_going));
        if matches!(&result, Err(f) if f.unanswered()) {
            self.session = None; // reconnect next time (maybe to a new registry primary)
        }
        result
    }

    /// Milliseconds since the registry last answered, by the monotonic clock.
    fn answered_ms(&self) -> i64 {
        i64::try_from(self.answered_at.elapsed().as_millis()).unwrap_or(i64::MAX)
    }

    /// One turn of the keeper: acquire when there is no lease, renew when a
    /// renewal is due (`rule::renewal_due`). Returns whether it talked to
    /// the registry.
    pub fn turn(&mut self, layout: &Layout, keep_going: KeepGoing) -> bool {
        if Instant::now() < self.retry_at {
            return false;
        }
        let shared = shmem::lock().registry;
        // Where IDs are issued (the later of the clock and the last ID: a
        // logical clock ahead after a burst, advance_past or a floor), which
        // decides when a renewal is due, and the position sent with it (the
        // rule's: so that takeovers in a row do not add up ahead of the clock).
        let clock_tick = clock::now_unix_ms().saturating_sub(layout.epoch_ms());
        let last_tick = resume::last_tick();
        let at = clock_tick.max(last_tick.unwrap_or(0));
        let now = rule::position(clock_tick, last_tick, horizon_ms());
        let outcome = match (shared.state, shared.lease) {
            // Lost: ask for a worker id again (with a number, it stays
            // refused while the new holder is live; with auto, any free one).
            (State::Lost, _) => {
                self.forget_stored = true;
                self.acquire(layout, now, keep_going)
            }
            (State::Held | State::Expired, Some(lease))
                if !rule::renewal_due(lease.ceiling, at, horizon_ms(), self.answered_ms()) =>
            {
                return false
            }
            (State::Held | State::Expired, Some(lease)) => self.renew(layout, shared.worker_id, lease, now, keep_going),
            _ => self.acquire(layout, now, keep_going),
        };
        match outcome {
            Ok(()) => {
                self.backoff = FIRST_BACKOFF;
                self.answered_at = Instant::now();
                lease::registry_answered();
            }
            Err(failure) => {
                // An unreachable registry, or one without the extension yet
                // (each try an ERROR in its log), is retried less and less
                // often; an answer (a worker id held by a live node, say) is
                // asked again every second, to take over as soon as it can.
                let (wait, next) = match &failure {
                    Failure::Refused { sqlstate, .. } if !UNDEFINED.contains(&sqlstate.as_str()) => {
                        (REFUSED_RETRY, FIRST_BACKOFF)
                    }
                    _ => (self.backoff, (self.backoff * 2).min(MAX_BACKOFF)),
                };
                self.retry_at = Instant::now() + wait;
                self.backoff = next;
                let lost = matches!(&failure, Failure::Refused { sqlstate, .. } if sqlstate == "SFL01");
                if !matches!(failure, Failure::Stopped) && log_limit::due(Topic::Registry) {
                    let held = shmem::lock().registry.lease;
                    pgrx::pg_sys::panic::ErrorReport::new(
                        pgrx::PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                        format!("snowflake_id: worker id registry: {failure}"),
                        "snowflake_id",
                    )
                    .set_detail(match held {
                        Some(lease) => format!(
                            "IDs continue up to the lease's ceiling ({}), then stop until the registry answers.",
                            snowflake_id_core::epoch::format_unix_ms(layout.epoch_ms().saturating_add(lease.ceiling))
                        ),
                        None => "No worker id yet: snowflake_nextval() refuses until the registry grants one.".into(),
                    })
                    .set_hint(match &failure {
                        // The registry's own hint says what to do (a copy: its own worker id).
                        Failure::Refused { hint: Some(hint), .. } => format!("{hint} This repeats at most once a minute."),
                        // PostgreSQL's refusal names the function only: the grant a
                        // DBA set up for 0.8.0, on the public names, no longer reaches
                        // the implementations a node calls.
                        Failure::Refused { sqlstate, .. } if sqlstate == "42501" => format!(
                            "In the registry's database, grant the role in {REGISTRY} EXECUTE on the functions a node \
                             calls, in schema snowflake_id_internal (docs/fleets.md): {} This repeats at most once a \
                             minute.",
                            grant_node_role()
                        ),
                        _ => format!(
                            "Check {REGISTRY} and the registry server; snowflake_id_status.registry_error has the latest answer. This repeats at most once a minute."
                        ),
                    })
                    .report(pgrx::PgLogLevel::WARNING);
                }
                // Readable by every role (the status view, a refusal's
                // DETAIL): libpq's own words stay in the WARNING above, in
                // the server log only.
                lease::registry_failed(&failure.public(), lost);
            }
        }
        true
    }
}

/// The GRANT a DBA runs in the registry's database for the nodes' role
/// (docs/fleets.md), written from the signatures the node calls, so that
/// the hint names exactly what the node needs.
fn grant_node_role() -> String {
    use crate::service::registry::session::signature;
    let function = |name: &str, args: &[&str]| format!("snowflake_id_internal.{name}({})", args.join(", "));
    format!(
        "GRANT EXECUTE ON FUNCTION {}, {}, {}, {}, {} TO <that role>;",
        function("snowflake_registry_acquire", &signature::ACQUIRE),
        function("snowflake_registry_renew", &signature::RENEW),
        function("snowflake_registry_release", &signature::RELEASE),
        function("snowflake_registry_history_of", &signature::HISTORY_OF),
        function("snowflake_registry_record_history", &signature::RECORD_HISTORY)
    )
}
