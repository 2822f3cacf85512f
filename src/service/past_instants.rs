//! Past-instant IDs (invariant 9): `snowflake_nextval_at(ts)`.
//!
//! The per-row path is the core's [`Round`], kept in this backend's memory
//! for as long as the backend lives: no lock, no write. Only when the round
//! asks for a claim does a row take the level map's LWLock, raise the map,
//! write the history file and a WAL record, and wait for the synchronous
//! standbys, in that order, the way a new mark is made durable: a crash
//! loses only slots never used, and a promoted synchronous standby has every
//! claim an ID was returned under.

use std::cell::RefCell;

use pgrx::PgSqlErrorCode;
use snowflake_id_core::past_instants::{
    answer, history_sequence, history_slots, inherited, Claimed, Grant, Interval, LevelMap, Next, Round, RoundError,
    StoredMap, MAX_COUNTED_MS,
};
use snowflake_id_core::{epoch, Layout, StoredLayout};

use self::leased::LeaseRef;

use super::generator::draw::{check_may_issue, generator_settings};
use super::generator::resume::stored_layout;
use super::generator::writer::query_keeps_going;
use crate::mark::{past_instants_file, wal};
use crate::pg::clock::now_unix_ms;
use crate::pg::report::{check_for_interrupts, raise};
use crate::refusal::{raise_core, raise_io};
use crate::settings::names::REGISTRY;
use crate::settings::registry;
use crate::shmem;
use crate::shmem::past_instants::MAX_INTERVALS;

mod leased;

const NEXTVAL_AT: &str = "snowflake_nextval_at()";

thread_local! {
    /// This backend's round, with the layout and worker id its grants are of.
    static ROUND: RefCell<Option<(StoredLayout, Round)>> = const { RefCell::new(None) };
    /// A claim made durable here whose registry raise or wait for the
    /// synchronous standbys was cut short (an unreachable registry,
    /// statement_timeout, a cancel): the next call finishes both and then
    /// uses it, rather than claiming anew each time and spending slots a
    /// retry loop never gets to use.
    static PENDING: RefCell<Option<Pending>> = const { RefCell::new(None) };
    /// The start time of the statement this backend's round last drew for.
    static STATEMENT: std::cell::Cell<i64> = const { std::cell::Cell::new(i64::MIN) };
}

/// A claim made durable here and not used yet.
#[derive(Clone)]
struct Pending {
    key: StoredLayout,
    /// The pieces of the row's own span, and of the spans carried ahead.
    own: Vec<Grant>,
    dense: bool,
    carried: Vec<Grant>,
    /// Its WAL record, which the synchronous standbys must have first.
    lsn: u64,
    /// With a leased worker id: the lease it was claimed under, and the
    /// claim to record in the registry.
    registry: Option<(LeaseRef, Interval)>,
}

/// A new ID whose time is `unix_ms` (to the millisecond, or a later one when
/// that millisecond's history slots are used up).
pub fn nextval_at(unix_ms: i64) -> i64 {
    check_may_issue(NEXTVAL_AT);
    let (layout, worker_id) = generator_settings();
    let slots = history_slots(&layout);
    if slots == 0 {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            "snowflake_id: a layout with fewer than 4 sequence bits has no room for past-instant IDs".into(),
            None,
            Some("snowflake_id.sequence_bits = 4 or more keeps a sixteenth of each millisecond for them.".into()),
        );
    }
    // The clock once per row (and again after a claim, which takes time):
    // rows at instants that the present has since passed stay allowed; the
    // limit only moves forward.
    let mut limit = past_limit(&layout);
    let tick = checked_tick(&layout, unix_ms, limit);
    let key = stored_layout(&layout, worker_id);
    ROUND.with(|cell| {
        let mut cell = cell.borrow_mut();
        // Another worker id or layout: the grants are of those. A round that
        // has counted rows at a million milliseconds starts over (memory).
        let stale = cell.as_ref().is_none_or(|(k, r)| *k != key || r.counted() > MAX_COUNTED_MS);
        if stale {
            *cell = Some((key, Round::new()));
        }
        let Some((_, round)) = cell.as_mut() else { unreachable!("set above") };
        // Long claims are for an import: one statement that issues many rows.
        // SAFETY: reads the top-level statement's start time of this backend.
        let statement = unsafe { pgrx::pg_sys::GetCurrentStatementStartTimestamp() };
        if STATEMENT.with(|s| s.replace(statement)) != statement {
            round.new_statement();
        }
        if let Some(pending) = PENDING.with(|p| p.borrow().clone()) {
            if pending.key == key {
                make_usable(&pending);
                round.granted_pieces(&pending.own, pending.dense);
                pending.carried.iter().for_each(|&g| round.granted_ahead(g));
            }
            PENDING.with(|p| p.borrow_mut().take());
        }
        // One slot a millisecond per claim for rows this session never met
        // there: a session raises the level of what it spans by its widths.
        let sparse_width = 1;
        loop {
            match round.next(tick, limit, sparse_width) {
                Ok(Next::Issued { tick, slot }) => {
                    return layout
                        .encode(tick, worker_id, history_sequence(&layout, slot))
                        .unwrap_or_else(|e| raise_core(&e));
                }
                Ok(Next::Claim { from, to, at, width, dense }) => {
                    check_for_interrupts();
                    let ahead = round.ahead(from, to, at, limit);
                    match claim(key, slots, (from, to, at, width, dense), limit, &ahead) {
                        Ok((own, carried)) => {
                            round.granted_pieces(&own, dense);
                            carried.into_iter().for_each(|g| round.granted_ahead(g));
                        }
                        Err(until) => round.full_until(at, until),
                    }
                    limit = past_limit(&layout);
                }
                Err(RoundError::NoRoom { tick, limit }) => raise(
                    PgSqlErrorCode::ERRCODE_PROGRAM_LIMIT_EXCEEDED,
                    format!(
                        "snowflake_id: no past-instant ID is left on worker id {worker_id} from {} to now",
                        epoch::format_unix_ms(layout.epoch_ms().saturating_add(tick))
                    ),
                    Some(format!(
                        "Every one of the {slots} history slots of each millisecond from there up to {} is used.",
                        epoch::format_unix_ms(layout.epoch_ms().saturating_add(limit))
                    )),
                    Some("Import these rows on a server with another snowflake_id.worker_id.".into()),
                ),
            }
        }
    })
}

/// The first tick that is not in the past: the wall clock's, or the
/// layout's end.
fn past_limit(layout: &Layout) -> i64 {
    now_unix_ms().saturating_sub(layout.epoch_ms()).min(layout.max_tick().saturating_add(1))
}

/// The tick of `unix_ms`, or the error for an instant no past-instant ID
/// can have.
/// `limit` is [`past_limit`]'s. The instant is formatted only for an error:
/// on every row it cost an import about a seventh of its time.
fn checked_tick(layout: &Layout, unix_ms: i64, limit: i64) -> i64 {
    let tick = unix_ms.saturating_sub(layout.epoch_ms());
    let at = || epoch::format_unix_ms(unix_ms);
    if tick < 0 {
        raise(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("snowflake_id: {} is before the epoch of the IDs", at()),
            Some(format!("snowflake_id.epoch is {}.", epoch::format_unix_ms(layout.epoch_ms()))),
            Some("An ID cannot tell a time before its layout's epoch; keep such rows' time in a column.".into()),
        );
    }
    if tick > layout.max_tick() {
        raise(
            PgSqlErrorCode::ERRCODE_DATETIME_FIELD_OVERFLOW,
            format!("snowflake_id: {} is after the last instant the IDs can tell", at()),
            Some(format!("The layout's timestamp field ends at {}.", epoch::format_unix_ms(layout.last_unix_ms()))),
            Some("Check the instant: a past instant is before the current millisecond.".into()),
        );
    }
    if tick >= limit {
        raise(
            PgSqlErrorCode::ERRCODE_INVALID_PARAMETER_VALUE,
            format!("snowflake_id: {} is not in the past", at()),
            Some("snowflake_nextval_at() makes IDs for instants before the current millisecond.".into()),
            Some("Call snowflake_nextval() for an ID of the present.".into()),
        );
    }
    tick
}

/// Claims up to `width` history slots of every millisecond of the row's
/// span (`at` is the row's millisecond) and of each span carried `ahead`,
/// piece by piece at the level already there (the core's [`answer`]), and
/// makes them durable in one write: the history file once, a WAL record per
/// piece, one flush, then the wait for the synchronous standbys. Returns the
/// pieces of the row's span and those carried ahead, or says up to which
/// tick from `at` on nothing is left (at most `limit`). A claim whose wait
/// for the synchronous standbys is cut short is kept, all its pieces, for
/// the next call (`PENDING`).
///
/// With a leased worker id the map is first raised by the claims the
/// registry recorded (once per lease: `inherited`), the row's span is
/// claimed at one level (the registry records one interval per claim) and
/// recorded in the registry before it is used, and nothing is carried
/// ahead (a claim the registry does not know would be another holder's to
/// take again).
fn claim(
    key: StoredLayout,
    slots: i64,
    (from, to, at, width, dense): (i64, i64, i64, i64, bool),
    limit: i64,
    ahead: &[(i64, i64)],
) -> Result<(Vec<Grant>, Vec<Grant>), i64> {
    let lease = registry::used().then(|| leased::current(key.worker_id));
    // The registry's claims as one map, built outside the lock: a worker id
    // may have thousands.
    let mut fetched: Option<LevelMap> = None;
    let pending = loop {
        let mut shared = shmem::past_instants::lock();
        let mut map = if shared.loaded && shared.layout == key {
            shared.map()
        } else if shared.loaded {
            StoredMap::for_layout(Some(&StoredMap { layout: shared.layout, map: shared.map() }), key)
        } else {
            shared.applied = (-1, 0);
            let stored = past_instants_file::read().unwrap_or_else(|e| past_instants_file::raise_unreadable(e));
            StoredMap::for_layout(stored.as_ref(), key)
        };
        if let Some(l) = lease.filter(|l| shared.applied != (l.worker_id, l.epoch)) {
            let Some(recorded) = &fetched else {
                // Read the registry without holding the lock (a call may
                // take seconds), then start over.
                drop(shared);
                let claims = leased::recorded(l).unwrap_or_else(|lost| lost.raise());
                let mut envelope = LevelMap::envelope(inherited(&claims));
                envelope.coarsen(MAX_INTERVALS);
                fetched = Some(envelope);
                continue;
            };
            for i in recorded.intervals() {
                map.raise(i.from, i.to, i.level);
            }
        }
        let (own, carried) = if lease.is_some() {
            let attempt = map.claim(from, to, width, slots).map(|g| (from, to, g)).or_else(|_| {
                // A full millisecond in the span: the room around `at` only.
                let (a, b) = map.room_around(at, from, to, slots).unwrap_or((at, at + 1));
                map.claim(a, b, width, slots).map(|g| (a, b, g))
            });
            let Ok((from, to, (base, granted))) = attempt else {
                return Err(map.first_not_full(at, slots).unwrap_or(limit).min(limit));
            };
            (vec![Grant { from, to, base, width: granted }], vec![])
        } else {
            let answer = answer(&mut map, (from, to, at, width, dense), ahead, slots, limit, MAX_INTERVALS);
            (answer.own?, answer.carried)
        };
        let records: Vec<Claimed> = own
            .iter()
            .chain(&carried)
            .map(|g| Claimed { layout: key, from: g.from, to: g.to, level: g.base + g.width })
            .collect();
        map.coarsen(MAX_INTERVALS);
        // The file first: a crash after it and before the records loses
        // nothing that was used. Then the records, flushed.
        past_instants_file::write(&StoredMap { layout: key, map: map.clone() })
            .unwrap_or_else(|e| raise_io(e.to_string()));
        let lsn = wal::log_past_instant_claims(&records);
        shared.set(key, &map);
        if let Some(l) = lease {
            shared.applied = (l.worker_id, l.epoch);
        }
        let registry =
            lease.and_then(|l| own.first().map(|g| (l, Interval { from: g.from, to: g.to, level: g.base + g.width })));
        break Pending { key, own, dense, carried, lsn, registry };
    };
    PENDING.with(|p| *p.borrow_mut() = Some(pending.clone()));
    make_usable(&pending);
    PENDING.with(|p| p.borrow_mut().take());
    Ok((pending.own, pending.carried))
}

/// What must happen before a claim is used: the registry records it (with a
/// leased worker id), and the synchronous standbys have its record. Raises
/// the error when the claim can never be used (the lease is gone), and
/// forgets it then.
fn make_usable(pending: &Pending) {
    if let Some((lease, claim)) = pending.registry {
        let forget = || PENDING.with(|p| p.borrow_mut().take());
        if !registry::used() {
            forget();
            raise(
                PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
                "snowflake_id: a past-instant claim made under a registry lease cannot be used any more".into(),
                Some(format!("{REGISTRY} was emptied before the registry recorded it.")),
                Some("Call snowflake_nextval_at() again.".into()),
            );
        }
        if let Err(lost) = leased::record(lease, claim) {
            forget();
            lost.raise();
        }
    }
    wal::wait_for_sync_standbys(pending.lsn, query_keeps_going);
}
