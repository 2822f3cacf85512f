//! Keeping and giving back a lease held: the keeper's renewal (what it
//! asks for, and refusing an answer past it) and its release at a clean
//! stop. Apart from the keeper's turn (`registry_keeper.rs`) and from
//! getting a worker id (`acquire.rs`): these run only under a lease in force.

use snowflake_id_core::lease::{self as rule, Range};
use snowflake_id_core::state_file::RegistryLease;
use snowflake_id_core::Layout;

use super::RegistryKeeper;
use crate::pg::libpq::{Failure, KeepGoing};
use crate::service::registry::lease;
use crate::service::registry::session::signature;
use crate::settings::registry::{horizon_ms, namespace};
use crate::shmem::{self, LeaseState as State};

impl RegistryKeeper {
    pub(super) fn renew(
        &mut self,
        layout: &Layout,
        worker_id: i64,
        lease: RegistryLease,
        now: i64,
        keep_going: KeepGoing,
    ) -> Result<(), Failure> {
        // The most this renewal can answer (sql/install/registry_functions.sql computes it
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
