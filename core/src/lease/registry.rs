//! The registry as `sql/install/registry_functions.sql` keeps it, composed of the rule's
//! functions: its tables (namespaces, leases, history claims) and its five
//! functions a node calls (`snowflake_registry_acquire`, `_renew`,
//! `_release`, `_history_of`, `_record_history`), each one transaction,
//! with every argument as SQL takes it (any may be NULL) and every refusal
//! as its SQLSTATE.
//!
//! This is the one model of the rule that the tests play: the two-holder
//! property test (`core/tests/two_holders.rs`) runs servers against it, and
//! the differential test (`tests/registry_model.rs`) plays random histories
//! on it and on a real registry server and wants the same answers and the
//! same tables after every call. So what the two-holder test proves of this
//! model holds of the SQL as far as those histories reach, and a change to
//! either copy that the other does not follow fails the differential test.
//! Nothing in the extension calls it: the node's side calls the rule's
//! functions (`super`) directly.

use std::collections::BTreeMap;

use super::{auto_worker, grant, release, renew, renewal_instance, request_tick, takeover, Busy, Claimant, DAY_MS};
use super::{Holder, Range, Takeover};
use crate::past_instants::{Interval, RecordedClaim};

/// The stale margin a namespace gets when a node's first grant creates it
/// (`snowflake_registry_namespaces.stale_margin`'s default).
pub const DEFAULT_STALE_MARGIN_MS: i64 = 10_000;

/// A namespace: its layout, fixed by its first grant, and its stale margin.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Namespace {
    pub worker_bits: i64,
    pub sequence_bits: i64,
    pub epoch_ms: i64,
    pub stale_margin_ms: i64,
}

/// A row of `snowflake_registry_leases`: the current lease of a worker id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    pub holder: Holder,
    pub range: Range,
    pub node_name: String,
    pub granted_at_ms: i64,
    pub released_at_ms: Option<i64>,
}

/// A claim's key in `snowflake_registry_history`: namespace, worker id,
/// lease epoch, from and to tick (its level is the value).
pub type ClaimKey = (String, i64, i64, i64, i64);

/// The registry's tables, keyed as their primary keys are.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Registry {
    pub namespaces: BTreeMap<String, Namespace>,
    pub leases: BTreeMap<(String, i64), Lease>,
    /// `snowflake_registry_history`: the claims of history slots (the
    /// model keeps the SQL names, `history_of` and `record_history` too).
    pub history: BTreeMap<ClaimKey, i64>,
}

/// The arguments of `snowflake_registry_acquire`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Acquire {
    pub namespace: Option<String>,
    pub worker_bits: Option<i64>,
    pub sequence_bits: Option<i64>,
    pub epoch_ms: Option<i64>,
    pub wanted: Option<i64>,
    pub system_identifier: Option<u64>,
    pub timeline: Option<i64>,
    pub node_name: Option<String>,
    pub node_tick: Option<i64>,
    pub horizon_ms: Option<i64>,
    pub resume_epoch: Option<i64>,
    pub resume_token: Option<i64>,
}

/// The lease a renewal, a release or a history call names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseName {
    pub namespace: Option<String>,
    pub worker_id: Option<i64>,
    pub epoch: Option<i64>,
    pub token: Option<i64>,
}

/// An acquire's answer, and why it was made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Granted {
    pub worker_id: i64,
    pub epoch: i64,
    pub token: i64,
    pub range: Range,
    pub kind: Takeover,
}

/// Why the registry refuses a call, as the SQLSTATE it raises.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 22004: an argument that may not be NULL is.
    Null,
    /// 22023: a horizon or a worker id out of range.
    OutOfRange,
    /// 23502: a history claim with a NULL bound or level (the table's NOT NULL).
    NotNull,
    /// 23514: a history claim that is empty or has no level (the table's CHECKs).
    Check,
    /// SFL01: the lease named is not held (replaced, released, never granted).
    Lost,
    /// SFL02, SFL05: see [`Busy`].
    Busy(Busy),
    /// SFL03: another layout than the namespace's.
    Layout,
    /// SFL04: every worker id of the namespace is held live.
    NoFreeWorker,
}

impl Refusal {
    pub fn sqlstate(self) -> &'static str {
        match self {
            Refusal::Null => "22004",
            Refusal::OutOfRange => "22023",
            Refusal::NotNull => "23502",
            Refusal::Check => "23514",
            Refusal::Lost => "SFL01",
            Refusal::Busy(Busy::Held) => "SFL02",
            Refusal::Layout => "SFL03",
            Refusal::NoFreeWorker => "SFL04",
            Refusal::Busy(Busy::Running) => "SFL05",
        }
    }
}

impl Registry {
    /// An empty registry with one namespace made beforehand (as a DBA does
    /// to choose its stale margin).
    pub fn with_namespace(name: &str, namespace: Namespace) -> Registry {
        Registry { namespaces: BTreeMap::from([(name.to_string(), namespace)]), ..Registry::default() }
    }

    /// `snowflake_registry_acquire`, at `now_ms` by the registry's clock,
    /// called by postmaster start `instance` (`snowflake_registry.instance`).
    /// A new grant's token is `new_token`: the registry's random draw is the
    /// caller's to make.
    pub fn acquire(
        &mut self,
        now_ms: i64,
        c: &Acquire,
        instance: Option<i64>,
        new_token: i64,
    ) -> Result<Granted, Refusal> {
        let (
            Some(name),
            Some(bits),
            Some(seq),
            Some(epoch_ms),
            Some(system_identifier),
            Some(timeline),
            Some(node_name),
            Some(node_tick),
            Some(horizon_ms),
        ) = (
            &c.namespace,
            c.worker_bits,
            c.sequence_bits,
            c.epoch_ms,
            c.system_identifier,
            c.timeline,
            &c.node_name,
            c.node_tick,
            c.horizon_ms,
        )
        else {
            return Err(Refusal::Null);
        };
        if !(1..=DAY_MS).contains(&horizon_ms) {
            return Err(Refusal::OutOfRange);
        }
        // Created by the first call that commits, with the default margin.
        let ns = self.namespaces.get(name).copied().unwrap_or(Namespace {
            worker_bits: bits,
            sequence_bits: seq,
            epoch_ms,
            stale_margin_ms: DEFAULT_STALE_MARGIN_MS,
        });
        if (ns.worker_bits, ns.sequence_bits, ns.epoch_ms) != (bits, seq, epoch_ms) {
            return Err(Refusal::Layout);
        }
        let max_worker = (1i64 << ns.worker_bits) - 1;
        let tick = request_tick(node_tick, now_ms - ns.epoch_ms);
        let claimant = Claimant { system_identifier, timeline, resume: c.resume_epoch.zip(c.resume_token), instance };
        let worker_id = match c.wanted {
            Some(w) if !(0..=max_worker).contains(&w) => return Err(Refusal::OutOfRange),
            Some(w) => w,
            None => {
                let leases = self.leases.iter().filter(|((n, _), _)| n == name).map(|((_, w), l)| (*w, &l.holder));
                auto_worker(leases, &claimant, max_worker, ns.stale_margin_ms, now_ms).ok_or(Refusal::NoFreeWorker)?
            }
        };
        let key = (name.clone(), worker_id);
        let old = self.leases.get(&key);
        let kind = takeover(old.map(|l| &l.holder), &claimant, ns.stale_margin_ms, now_ms).map_err(Refusal::Busy)?;
        if let (Takeover::Continued, Some(old)) = (kind, old) {
            let (h, range) = (old.holder, old.range);
            return Ok(Granted { worker_id, epoch: h.epoch, token: h.token, range, kind });
        }
        let range = grant(old.map(|l| l.range.ceiling), tick, horizon_ms);
        let holder = Holder {
            epoch: old.map_or(0, |l| l.holder.epoch) + 1,
            token: new_token,
            system_identifier,
            timeline,
            released: false,
            renewed_at_ms: now_ms,
            horizon_ms,
            instance,
        };
        let lease = Lease { holder, range, node_name: node_name.clone(), granted_at_ms: now_ms, released_at_ms: None };
        self.leases.insert(key, lease);
        self.namespaces.insert(name.clone(), ns);
        Ok(Granted { worker_id, epoch: holder.epoch, token: holder.token, range, kind })
    }

    /// `snowflake_registry_check_holder`: the lease `l` names, if it is the
    /// one held (not NULL, same epoch and token, not released).
    fn held(&self, l: &LeaseName) -> Result<(String, i64), Refusal> {
        let (Some(name), Some(worker_id), Some(epoch), Some(token)) = (&l.namespace, l.worker_id, l.epoch, l.token)
        else {
            return Err(Refusal::Lost);
        };
        let key = (name.clone(), worker_id);
        match self.leases.get(&key) {
            Some(r) if r.holder.epoch == epoch && r.holder.token == token && !r.holder.released => Ok(key),
            _ => Err(Refusal::Lost),
        }
    }

    /// `snowflake_registry_renew`: the new ceiling.
    pub fn renew(
        &mut self,
        now_ms: i64,
        l: &LeaseName,
        node_tick: Option<i64>,
        horizon_ms: Option<i64>,
        instance: Option<i64>,
    ) -> Result<i64, Refusal> {
        let (Some(_), Some(_), Some(_), Some(_), Some(node_tick), Some(horizon_ms)) =
            (&l.namespace, l.worker_id, l.epoch, l.token, node_tick, horizon_ms)
        else {
            return Err(Refusal::Null);
        };
        if !(1..=DAY_MS).contains(&horizon_ms) {
            return Err(Refusal::OutOfRange);
        }
        let key = self.held(l)?;
        let epoch_ms = self.namespaces.get(&key.0).map_or(0, |n| n.epoch_ms);
        let lease = self.leases.get_mut(&key).ok_or(Refusal::Lost)?;
        lease.holder.instance = renewal_instance(lease.holder.instance, instance).map_err(Refusal::Busy)?;
        let tick = request_tick(node_tick, now_ms - epoch_ms);
        lease.range.ceiling = renew(lease.range, tick, horizon_ms);
        lease.holder.horizon_ms = horizon_ms;
        lease.holder.renewed_at_ms = now_ms;
        Ok(lease.range.ceiling)
    }

    /// `snowflake_registry_release`: whether it released (it refuses nothing).
    pub fn release(&mut self, now_ms: i64, l: &LeaseName, last_tick: Option<i64>, instance: Option<i64>) -> bool {
        let Ok(key) = self.held(l) else { return false };
        let Some(lease) = self.leases.get_mut(&key) else { return false };
        // Another start's last tick says nothing of what the recorded one issued.
        if renewal_instance(lease.holder.instance, instance).is_err() {
            return false;
        }
        // SQL's least() skips a NULL: a release that names no last tick
        // keeps the ceiling (the safe reading; the node always names one).
        lease.range.ceiling = last_tick.map_or(lease.range.ceiling, |t| release(lease.range, t));
        lease.holder.released = true;
        lease.released_at_ms = Some(now_ms);
        true
    }

    /// `snowflake_registry_history_of`: every claim recorded on the worker
    /// id, by any of its leases, for its holder; ordered by interval (then,
    /// where SQL leaves the order open, by lease epoch and level).
    pub fn history_of(&self, l: &LeaseName) -> Result<Vec<RecordedClaim>, Refusal> {
        let (name, worker_id) = self.held(l)?;
        let mut claims: Vec<RecordedClaim> = self
            .history
            .iter()
            .filter(|((n, w, ..), _)| *n == name && *w == worker_id)
            .map(|((_, _, epoch, from, to), level)| RecordedClaim {
                lease_epoch: *epoch,
                interval: Interval { from: *from, to: *to, level: *level },
            })
            .collect();
        claims.sort_by_key(|c| (c.interval.from, c.interval.to, c.lease_epoch, c.interval.level));
        Ok(claims)
    }

    /// `snowflake_registry_record_history`: a claim of the slots below
    /// `level` of every millisecond in `[from, to)` by the lease's holder.
    /// The same lease's claims it covers at a level at least theirs go;
    /// one over the very same interval keeps the higher level.
    pub fn record_history(
        &mut self,
        l: &LeaseName,
        from: Option<i64>,
        to: Option<i64>,
        level: Option<i64>,
    ) -> Result<(), Refusal> {
        let (name, worker_id) = self.held(l)?;
        let epoch = l.epoch.ok_or(Refusal::Lost)?;
        let (Some(from), Some(to), Some(level)) = (from, to, level) else {
            return Err(Refusal::NotNull);
        };
        if level <= 0 || to <= from {
            return Err(Refusal::Check);
        }
        self.history.retain(|(n, w, e, f, t), held| {
            !(*n == name && *w == worker_id && *e == epoch && *f >= from && *t <= to && *held <= level)
        });
        let level_now = self.history.entry((name, worker_id, epoch, from, to)).or_insert(level);
        *level_now = (*level_now).max(level);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn acquire(wanted: Option<i64>, system: u64, node_tick: i64) -> Acquire {
        Acquire {
            namespace: Some("n".into()),
            worker_bits: Some(1),
            sequence_bits: Some(12),
            epoch_ms: Some(0),
            wanted,
            system_identifier: Some(system),
            timeline: Some(1),
            node_name: Some("a".into()),
            node_tick: Some(node_tick),
            horizon_ms: Some(30_000),
            resume_epoch: None,
            resume_token: None,
        }
    }

    fn name(g: &Granted) -> LeaseName {
        LeaseName {
            namespace: Some("n".into()),
            worker_id: Some(g.worker_id),
            epoch: Some(g.epoch),
            token: Some(g.token),
        }
    }

    #[test]
    fn grants_renewals_releases_and_refusals() {
        let mut r = Registry::default();
        let g = r.acquire(1_000, &acquire(None, 1, 1_000), Some(7), 5).unwrap();
        assert_eq!(
            (g.worker_id, g.epoch, g.token, g.range, g.kind),
            (0, 1, 5, Range { floor: 0, ceiling: 31_000 }, Takeover::Unheld)
        );
        assert_eq!(r.namespaces["n"].stale_margin_ms, DEFAULT_STALE_MARGIN_MS);
        assert_eq!(r.acquire(1_000, &acquire(Some(0), 2, 1_000), None, 6), Err(Refusal::Busy(Busy::Held)));
        assert_eq!(r.acquire(1_000, &acquire(Some(2), 2, 1_000), None, 6), Err(Refusal::OutOfRange));
        let other = r.acquire(1_000, &acquire(None, 2, 1_000), None, 6).unwrap();
        assert_eq!(other.worker_id, 1);
        assert_eq!(r.acquire(1_000, &acquire(None, 3, 1_000), None, 7), Err(Refusal::NoFreeWorker));
        assert_eq!(
            r.acquire(1_000, &Acquire { epoch_ms: Some(1), ..acquire(None, 3, 0) }, None, 7),
            Err(Refusal::Layout)
        );
        assert_eq!(r.acquire(1_000, &Acquire { node_tick: None, ..acquire(None, 3, 0) }, None, 7), Err(Refusal::Null));
        assert_eq!(r.renew(2_000, &name(&g), Some(40_000), Some(30_000), Some(7)), Ok(70_000));
        assert_eq!(r.renew(2_000, &name(&g), Some(0), Some(30_000), Some(8)), Err(Refusal::Busy(Busy::Running)));
        assert!(!r.release(3_000, &LeaseName { token: Some(4), ..name(&g) }, Some(10), Some(7)));
        assert!(r.release(3_000, &name(&g), Some(10), Some(7)));
        assert_eq!(r.leases[&("n".to_string(), 0)].range.ceiling, 10);
        assert_eq!(r.renew(4_000, &name(&g), Some(0), Some(30_000), Some(7)), Err(Refusal::Lost));
        let again = r.acquire(4_000, &acquire(Some(0), 2, 4_000), None, 9).unwrap();
        assert_eq!((again.epoch, again.range.floor, again.kind), (2, 11, Takeover::Released));
    }

    #[test]
    fn history_claims_are_kept_per_lease_and_read_by_the_holder() {
        let mut r = Registry::default();
        let g = r.acquire(0, &acquire(Some(0), 1, 0), None, 5).unwrap();
        let claim = |r: &mut Registry, from, to, level| r.record_history(&name(&g), Some(from), Some(to), Some(level));
        claim(&mut r, 10, 20, 2).unwrap();
        claim(&mut r, 12, 14, 1).unwrap();
        claim(&mut r, 10, 20, 1).unwrap();
        assert_eq!(claim(&mut r, 10, 10, 1), Err(Refusal::Check));
        assert_eq!(claim(&mut r, 10, 11, 0), Err(Refusal::Check));
        assert_eq!(r.record_history(&name(&g), None, Some(1), Some(1)), Err(Refusal::NotNull));
        let levels = |r: &Registry| {
            r.history_of(&name(&g))
                .unwrap()
                .iter()
                .map(|c| (c.interval.from, c.interval.to, c.interval.level))
                .collect::<Vec<_>>()
        };
        // (12, 14) was covered by (10, 20) at its level; (10, 20) keeps the higher of its two.
        assert_eq!(levels(&r), [(10, 20, 2)]);
        claim(&mut r, 9, 20, 3).unwrap();
        assert_eq!(levels(&r), [(9, 20, 3)], "covered claims at a level at most this one's go");
        // The next holder reads them, and they stay when its own claim covers them.
        r.release(1, &name(&g), Some(0), None);
        assert_eq!(r.history_of(&name(&g)), Err(Refusal::Lost));
        let next = r.acquire(2, &acquire(Some(0), 2, 2), None, 6).unwrap();
        let n = name(&next);
        r.record_history(&n, Some(0), Some(100), Some(5)).unwrap();
        let all = r.history_of(&n).unwrap();
        assert_eq!(all.iter().map(|c| c.lease_epoch).collect::<Vec<_>>(), [2, 1]);
    }
}
