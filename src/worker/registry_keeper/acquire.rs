//! Getting a worker id: the keeper's acquire, with what it decides about
//! the lease on disk (present it, resume it as the registry's answer says,
//! go on under it unconfirmed when the registry is silent at a start) and
//! the refusals that tell a copy of a running node from a restart. Apart
//! from the keeper's turn (`registry_keeper.rs`) because this is where a
//! start's uniqueness argument is (core's `lease/copies.rs`).

use std::time::Instant;

use snowflake_id_core::lease as rule;
use snowflake_id_core::state_file::RegistryLease;
use snowflake_id_core::Layout;

use super::RegistryKeeper;
use crate::pg::libpq::{Failure, KeepGoing};
use crate::pg::recovery::{current_timeline, system_identifier};
use crate::pg::report;
use crate::service::generator::resume;
use crate::service::registry::lease;
use crate::service::registry::session::signature;
use crate::settings::names::REGISTRY;
use crate::settings::registry::{horizon_ms, namespace, node_name};
use crate::settings::Settings;
use crate::shmem;

impl RegistryKeeper {
    pub(super) fn acquire(&mut self, layout: &Layout, now: i64, keep_going: KeepGoing) -> Result<(), Failure> {
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
}
