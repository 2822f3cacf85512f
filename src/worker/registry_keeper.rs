//! The registry keeper: the mark keeper's turn that acquires, renews and
//! releases the worker id's lease by calling the registry's SQL functions
//! (sql/registry.sql) over libpq (`pg/libpq.rs`).
//!
//! Nothing here is on the query path, and nothing here writes the lease in
//! shared memory or on disk: each answer is handed to the generator service
//! (`service/lease.rs`), which raises the ceiling only after the registry
//! committed the renewal. Queries only meet the lease as the generator's
//! ceiling and the worker id they encode.

use std::time::{Duration, Instant};

use snowflake_id_core::lease::{self as rule, Range};
use snowflake_id_core::state_file::RegistryLease;
use snowflake_id_core::Layout;

use crate::pg::libpq::{Failure, KeepGoing};
use crate::pg::recovery::{current_timeline, system_identifier};
use crate::pg::{clock, instance, report};
use crate::service::registry_session::{signature, RegistrySession, NO_EXTENSION};
use crate::service::{lease, resume};
use crate::settings::names::REGISTRY;
use crate::settings::registry::{conninfo, horizon_ms, namespace, node_name};
use crate::settings::Settings;
use crate::shmem::log_limit::{self, Topic};
use crate::shmem::{self, LeaseState as State};

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
            // (sql/registry.sql).
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

    fn acquire(&mut self, layout: &Layout, now: i64, keep_going: KeepGoing) -> Result<(), Failure> {
        let (system, timeline) = (system_identifier(), current_timeline() as i32);
        let fixed = Settings::get().values.worker_id;
        // The lease on disk, to resume (this server) or to take over (a
        // promoted standby, its old primary's); with `auto` and that worker
        // id gone to another node, any free one instead.
        let resumable =
            resume::stored_lease(layout).filter(|_| (fixed.is_some() || !self.forget_stored) && !self.proven_copy);
        // This server's own (same timeline, not released): presented to the
        // registry, in force only once it answers that it goes on (it may be
        // a copy of a running node's).
        let own = resumable.filter(|(_, l)| rule::resumes_own(l, timeline.into()));
        lease::acquiring(own.map(|(w, _)| w));
        let connected = self.session(keep_going).map(|s| s.before_instances);
        // (restore_own_lease only for a registry that records no instance.)
        let before_instances = connected == Ok(true);
        if let Some((worker_id, _)) = own.filter(|_| before_instances && lease::restore_own_lease(layout)) {
            pgrx::pg_sys::panic::ErrorReport::new(
                pgrx::PgSqlErrorCode::ERRCODE_FEATURE_NOT_SUPPORTED,
                format!("snowflake_id: resumed worker id {worker_id} from disk unconfirmed: the registry's extension is older than 0.4.0"),
                "snowflake_id",
            )
            .set_detail("A copy of this server's data directory would not be refused while this server runs.")
            .set_hint("Run ALTER EXTENSION snowflake_id UPDATE in the registry database.")
            .report(pgrx::PgLogLevel::WARNING);
            return Ok(());
        }
        let wanted = fixed.or(resumable.map(|(w, _)| w));
        let sent = Instant::now();
        let result = connected.and_then(|_| {
            self.call(
                "worker_id, lease_epoch, holder_token, floor_tick, ceiling_tick",
                "snowflake_registry_acquire",
                &signature::ACQUIRE,
                &[
                    Some(namespace()),
                    Some(layout.worker_bits().to_string()),
                    Some(layout.sequence_bits().to_string()),
                    Some(layout.epoch_ms().to_string()),
                    wanted.map(|w| w.to_string()),
                    Some(system),
                    Some(timeline.to_string()),
                    Some(node_name()),
                    Some(now.to_string()),
                    Some(horizon_ms().to_string()),
                    resumable.map(|(_, l)| l.epoch.to_string()),
                    resumable.map(|(_, l)| l.token.to_string()),
                ],
                keep_going,
            )
        });
        match &result {
            Err(Failure::Unreachable(why) | Failure::Connection(why))
                if own.is_some()
                    && !self.heard
                    && rule::resumes_unconfirmed(
                        i64::try_from(self.started_at.elapsed().as_millis()).unwrap_or(i64::MAX),
                    ) =>
            {
                self.resume_unconfirmed(layout, why);
            }
            Err(Failure::Unreachable(_) | Failure::Connection(_) | Failure::Stopped) => {}
            Ok(_) | Err(Failure::Refused { .. }) => self.heard = true,
        }
        if matches!(&result, Err(Failure::Refused { sqlstate, .. }) if sqlstate == "SFL02" || sqlstate == "SFL05")
            && fixed.is_none()
        {
            self.forget_stored = true;
        }
        self.note_refusal(&result, sent);
        let rows = result?;
        let number =
            |row: &[Option<String>], i: usize| row.get(i).cloned().flatten().and_then(|v| v.parse::<i64>().ok());
        let granted = rows.first().and_then(|r| {
            let lease = RegistryLease {
                epoch: number(r, 1)?,
                token: number(r, 2)?,
                floor: number(r, 3)?,
                ceiling: number(r, 4)?,
                timeline: timeline.into(),
            };
            Some((number(r, 0)?, lease))
        });
        let Some((worker_id, lease)) = granted else {
            return Err(Failure::Unreachable("the registry's answer to acquire has no lease".into()));
        };
        // The lease on disk goes on under this start: the registry knows it
        // as this instance's (its keeper restarted, or a crash reinitialised
        // shared memory).
        if let Some((_, stored)) = own.filter(|(w, l)| (*w, l.epoch, l.token) == (worker_id, lease.epoch, lease.token))
        {
            if lease::restore_own_lease(layout) {
                lease::renewed(layout, stored, lease.ceiling);
                return Ok(());
            }
        }
        lease::take_lease(layout, worker_id, lease, keep_going).map_err(Failure::Unreachable)
    }

    /// Keeps count of how long the registry has refused this start's lease as
    /// another running start's: past the silence, the other one renewed
    /// meanwhile (it would have been granted otherwise), so it runs. Counted
    /// from the first refusal's answer (the registry looked before it) to the
    /// latest call's sending (it looked after), so a slow answer does not
    /// lengthen it.
    fn note_refusal<T>(&mut self, result: &Result<T, Failure>, sent: Instant) {
        match result {
            Err(Failure::Refused { sqlstate, .. }) if sqlstate == "SFL05" => {
                let since = *self.refused_since.get_or_insert_with(Instant::now);
                let refused_ms = i64::try_from(sent.saturating_duration_since(since).as_millis()).unwrap_or(i64::MAX);
                if !self.proven_copy && rule::proven_copy(refused_ms, horizon_ms()) {
                    self.proven_copy = true;
                    report::emit(
                        pgrx::PgLogLevel::WARNING,
                        pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                        "snowflake_id: this server is a copy of a running node: its lease on disk is renewed by another start".into(),
                        Some(format!(
                            "The registry refused it for {} s while the other start renewed it; this server now waits for the worker id to be released or stale, as any other node would.",
                            refused_ms / 1000
                        )),
                        Some("Give this server its own snowflake_id.worker_id (or auto) or its own snowflake_id.registry_namespace.".into()),
                    );
                }
            }
            Err(Failure::Unreachable(_) | Failure::Connection(_) | Failure::Stopped) => {}
            _ => self.refused_since = None,
        }
    }

    /// The registry did not answer for `START_WAIT_MS` since this keeper
    /// began: the lease on disk goes on unconfirmed, as a restart must not
    /// wait for a registry outage. Were this a copy of a running node, it
    /// issues under the original's lease until its first renewal reaches
    /// the registry, which refuses it (SFL05): said in the log.
    fn resume_unconfirmed(&mut self, layout: &Layout, why: &str) {
        if !lease::restore_own_lease(layout) {
            return;
        }
        let worker_id = shmem::lock().registry.worker_id;
        pgrx::pg_sys::panic::ErrorReport::new(
            pgrx::PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
            format!(
                "snowflake_id: resumed worker id {worker_id} from disk unconfirmed: no answer from the registry for {} s ({why})",
                rule::START_WAIT_MS / 1000
            ),
            "snowflake_id",
        )
        .set_detail(
            "If this data directory is a copy of a running node, it issues that node's IDs until the registry answers a renewal, which stops it.",
        )
        .set_hint(format!("Check {REGISTRY}; a copy of a running node needs its own snowflake_id.worker_id (or auto)."))
        .report(pgrx::PgLogLevel::WARNING);
    }

    fn renew(
        &mut self,
        layout: &Layout,
        worker_id: i64,
        lease: RegistryLease,
        now: i64,
        keep_going: KeepGoing,
    ) -> Result<(), Failure> {
        // The most this renewal can answer (sql/registry.sql computes it
        // with the same rule), or what an earlier one under this lease asked
        // for when more: its answer may have been lost after the registry
        // committed it, and a clock stepped back since asks for less.
        let asked = rule::renew(Range { floor: lease.floor, ceiling: lease.ceiling }, now, horizon_ms());
        let asked = match self.asked {
            Some((epoch, earlier)) if epoch == lease.epoch => asked.max(earlier),
            _ => asked,
        };
        self.asked = Some((lease.epoch, asked));
        let rows = self.call(
            "ceiling_tick",
            "snowflake_registry_renew",
            &signature::RENEW,
            &[
                Some(namespace()),
                Some(worker_id.to_string()),
                Some(lease.epoch.to_string()),
                Some(lease.token.to_string()),
                Some(now.to_string()),
                Some(horizon_ms().to_string()),
            ],
            keep_going,
        );
        if matches!(&rows, Err(Failure::Refused { sqlstate, .. }) if sqlstate == "SFL05") {
            lease::refused_as_another_start(layout);
        }
        let rows = rows?;
        let ceiling = rows.first().and_then(|r| r.first().cloned().flatten()).and_then(|v| v.parse::<i64>().ok());
        let Some(ceiling) = ceiling else {
            return Err(Failure::Unreachable("the registry's answer to renew has no ceiling".into()));
        };
        if !rule::renewal_answer_fits(ceiling, asked) {
            // Never from the registry's own function: a ceiling past every
            // one asked for would let this node issue IDs the registry may
            // grant to the next holder.
            return Err(Failure::Refused {
                sqlstate: "08P01".into(),
                message: format!(
                    "the registry answered a renewal of worker id {worker_id} with ceiling {ceiling}, past the {asked} asked for; ignored"
                ),
                detail: None,
                hint: Some(
                    "Look in the registry's database for another snowflake_registry_renew than the extension's; \
                     IDs stop at the ceiling already held."
                        .into(),
                ),
            });
        }
        lease::renewed(layout, lease, ceiling);
        Ok(())
    }

    /// A clean stop: closes the lease here first (no ID past the last one
    /// issued), then tells the registry, so the next holder starts right
    /// above it instead of a horizon ahead. Failing that, the lease simply
    /// goes stale.
    /// `keep_going` answers interrupts during the call and never stops it:
    /// SIGTERM has been received already, so the call runs to its own timeout.
    pub fn release(&mut self, layout: &Layout, keep_going: KeepGoing) {
        let shared = shmem::lock().registry;
        let (State::Held | State::Expired, Some(lease)) = (shared.state, shared.lease) else { return };
        let Some(last) = lease::close_lease(layout) else { return };
        let params = [
            Some(namespace()),
            Some(shared.worker_id.to_string()),
            Some(lease.epoch.to_string()),
            Some(lease.token.to_string()),
            Some(last.to_string()),
        ];
        match self.call("*", "snowflake_registry_release", &signature::RELEASE, &params, keep_going) {
            Ok(_) => {
                lease::released();
                pgrx::ereport!(
                    pgrx::PgLogLevel::LOG,
                    pgrx::PgSqlErrorCode::ERRCODE_SUCCESSFUL_COMPLETION,
                    format!("snowflake_id: released worker id {} (lease epoch {}) at its last ID", shared.worker_id, lease.epoch)
                );
            }
            Err(failure) => pgrx::ereport!(
                pgrx::PgLogLevel::LOG,
                pgrx::PgSqlErrorCode::ERRCODE_CONNECTION_FAILURE,
                format!(
                    "snowflake_id: could not release worker id {} in the registry: {failure}; it is free again once its lease goes stale",
                    shared.worker_id
                )
            ),
        }
    }
}
