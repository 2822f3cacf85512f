//! The durable mark in WAL: a custom resource manager whose records carry
//! each new mark, so that crash recovery and every streaming standby learn
//! how far the primary may have issued IDs.
//!
//! A primary writes one record per advance of the mark (about two a second
//! while IDs flow, none when idle) and flushes it before any ID under the
//! new mark is returned; with `synchronous_standby_names` set it also waits
//! until the synchronous standbys have flushed it. Redo runs in the startup
//! process, the same in crash recovery and on a standby: it raises the mark
//! in shared memory and rewrites the state file durably, because records
//! before a checkpoint's redo pointer are never replayed again.

use std::ffi::{c_char, CStr};
use std::sync::atomic::{AtomicI32, AtomicU8, Ordering};

use pgrx::pg_sys;
use pgrx::prelude::*;
use snowflake_id_core::mark_record::{self, Kind};
use snowflake_id_core::minors::sync_standbys_status_has_bits as status_has_bits;
use snowflake_id_core::past_instants::Claimed;
use snowflake_id_core::state_file::Stored;

use super::{file, past_instants_file};
use crate::pg::clock;
use crate::pg::wait_event::Wait;
use crate::pg::KeepGoing;
use crate::shmem::log_limit::{self, Topic};
use crate::{refusal, settings, shmem};

/// The resource manager's name, as `pg_get_wal_resource_managers()` and
/// `pg_walinspect` show it.
const RM_NAME: &CStr = c"snowflake_id";

/// The id registered in the postmaster; every child inherits it by fork.
static RMGR_ID: AtomicU8 = AtomicU8::new(0);

/// Registers the resource manager; only possible while preload libraries
/// load. A taken id is a FATAL error at start naming the other one.
pub fn register() {
    let id = settings::wal_rmgr_id();
    let data = pg_sys::RmgrData {
        rm_name: RM_NAME.as_ptr(),
        rm_redo: Some(redo),
        rm_desc: Some(desc),
        rm_identify: Some(identify),
        ..Default::default()
    };
    // SAFETY: called from _PG_init during preload; PostgreSQL copies `data`
    // and keeps only rm_name, which is static.
    unsafe { pg_sys::RegisterCustomRmgr(id, &data as *const pg_sys::RmgrData as *mut _) };
    RMGR_ID.store(id, Ordering::Relaxed);
}

/// Writes one record carrying `stored` and flushes it; returns its end LSN.
/// Errors (no WAL during recovery, a full disk) are PostgreSQL's own.
pub fn log_mark(kind: Kind, stored: &Stored) -> pg_sys::XLogRecPtr {
    let data = mark_record::encode(stored);
    // SAFETY: the standard sequence for a record without buffers; `data`
    // outlives XLogInsert, which copies it.
    unsafe {
        pg_sys::XLogBeginInsert();
        // `as _`: the pointer and length types differ across majors (15: char*, int; 18: void*, uint32).
        pg_sys::XLogRegisterData(data.as_ptr() as *mut c_char as _, data.len() as _);
        let lsn = pg_sys::XLogInsert(RMGR_ID.load(Ordering::Relaxed), kind.info());
        pg_sys::XLogFlush(lsn);
        lsn
    }
}

/// Writes one record per claim of history slots (one durable write of
/// claims, see `service/past_instants.rs`) and flushes once, after the last;
/// returns its end LSN. Each record is replayed on its own, so a claim
/// carried ahead needs no format of its own.
pub fn log_past_instant_claims(claims: &[Claimed]) -> pg_sys::XLogRecPtr {
    let mut lsn = 0;
    for claimed in claims {
        let data = claimed.encode();
        // SAFETY: as in log_mark.
        unsafe {
            pg_sys::XLogBeginInsert();
            pg_sys::XLogRegisterData(data.as_ptr() as *mut c_char as _, data.len() as _);
            lsn = pg_sys::XLogInsert(RMGR_ID.load(Ordering::Relaxed), Kind::PastInstants.info());
        }
    }
    // SAFETY: flushing WAL up to a position already inserted.
    unsafe { pg_sys::XLogFlush(lsn) };
    lsn
}

/// The running server's `server_version_num`, read once per process.
static SERVER_VERSION_NUM: AtomicI32 = AtomicI32::new(0);

fn server_version_num() -> i32 {
    let cached = SERVER_VERSION_NUM.load(Ordering::Relaxed);
    if cached != 0 {
        return cached;
    }
    // SAFETY: a built-in, always-present GUC; the returned string is
    // PostgreSQL's and only read here.
    let text = unsafe { pg_sys::GetConfigOption(c"server_version_num".as_ptr(), false, false) };
    let version = if text.is_null() {
        0
    } else {
        // SAFETY: non-null C string owned by the GUC machinery.
        unsafe { CStr::from_ptr(text) }.to_str().ok().and_then(|t| t.parse().ok()).unwrap_or(0)
    };
    SERVER_VERSION_NUM.store(version, Ordering::Relaxed);
    version
}

/// `sync_standbys_status`'s bits (walsender_private.h), defined here because
/// headers of a minor before the change (16.2, say) do not have them.
const SYNC_STANDBY_INIT: u32 = 1 << 0;
const SYNC_STANDBY_DEFINED: u32 = 1 << 1;

/// Whether `synchronous_standby_names` asks for synchronous standbys, and
/// if so up to where they have flushed WAL. Decided as PostgreSQL's own
/// commit wait does: from the checkpointer's reading of the setting once it
/// has one, from the setting before that.
fn sync_standbys() -> Option<pg_sys::XLogRecPtr> {
    let bits = status_has_bits(server_version_num());
    // SAFETY: WalSndCtl is set up at server start. Its fields are written
    // under SyncRepLock; a byte and an aligned 64-bit word are read
    // atomically here, and a stale value only makes us wait one more round.
    unsafe {
        let ctl = pg_sys::WalSndCtl;
        if ctl.is_null() {
            return None;
        }
        // The byte right after `lsn[]`, named `sync_standbys_defined` or
        // `sync_standbys_status` depending on the headers built against; the
        // same byte in every minor.
        let byte = std::ptr::addr_of!((*ctl).lsn).add(1).cast::<u8>();
        let status = u32::from(std::ptr::read_volatile(byte));
        let defined = if !bits {
            status != 0
        } else if status & SYNC_STANDBY_INIT == 0 {
            let names = pg_sys::SyncRepStandbyNames;
            !names.is_null() && *names != 0
        } else {
            status & SYNC_STANDBY_DEFINED != 0
        };
        defined.then(|| std::ptr::read_volatile(&(*ctl).lsn[pg_sys::SYNC_REP_WAIT_FLUSH as usize]))
    }
}

/// Waits until the synchronous standbys (if any are configured) have
/// flushed WAL up to `lsn`. Polls every millisecond on the latch, calling
/// `keep_going` in between: a backend checks for interrupts there
/// (statement_timeout, pg_cancel_backend), the mark keeper for SIGTERM.
/// Returns false if it gave up.
pub fn wait_for_sync_standbys(lsn: pg_sys::XLogRecPtr, keep_going: KeepGoing) -> bool {
    let started = std::time::Instant::now();
    let mut warned = false;
    loop {
        match sync_standbys() {
            Some(flushed) if flushed < lsn => {}
            _ => {
                standby_wait_over(lsn);
                return true;
            }
        }
        still_waiting_for_standbys();
        if !warned && started.elapsed() >= STANDBY_WAIT_WARNING_AFTER {
            warned = true;
            warn_standby_wait(lsn);
        }
        clock::sleep_on_latch(1, Wait::SyncStandby);
        if !keep_going() {
            return false;
        }
    }
}

/// A waiter that has not said it still waits for this long (ms) no longer
/// counts: it was cancelled, timed out or ended with a FATAL, none of which
/// passes through [`standby_wait_over`].
const STANDBY_WAITER_GONE_AFTER_MS: i64 = 1000;

/// Keeps the status view's `sync_standby_wait_since`: set by the first
/// waiter, kept while any waiter goes on (so that a client retrying after
/// statement_timeout sees how long IDs have been stopped, not its own wait).
fn still_waiting_for_standbys() {
    let now = clock::now_unix_ms();
    let mut shared = shmem::lock();
    if shared.standby_wait_since_unix_ms == 0 || now - shared.standby_wait_seen_unix_ms > STANDBY_WAITER_GONE_AFTER_MS {
        shared.standby_wait_since_unix_ms = now;
    }
    shared.standby_wait_seen_unix_ms = now;
}

/// The standbys have WAL up to `lsn`: unless a later mark was written
/// meanwhile (its writer still waits), nothing waits for them any more.
fn standby_wait_over(lsn: pg_sys::XLogRecPtr) {
    let mut shared = shmem::lock();
    if shared.standby_wait_since_unix_ms != 0 && lsn >= shared.mark_lsn {
        shared.standby_wait_since_unix_ms = 0;
    }
}

/// Since when (Unix ms) IDs have waited for synchronous standbys, if they do.
pub fn standby_wait_since(shared: &shmem::Shared, now_unix_ms: i64) -> Option<i64> {
    let since = shared.standby_wait_since_unix_ms;
    (since != 0 && now_unix_ms - shared.standby_wait_seen_unix_ms <= STANDBY_WAITER_GONE_AFTER_MS).then_some(since)
}

/// A wait for synchronous standbys longer than this is logged (IDs have
/// stopped, and nothing else would say why).
const STANDBY_WAIT_WARNING_AFTER: std::time::Duration = std::time::Duration::from_secs(2);

/// One WARNING, at most one a minute across the server.
fn warn_standby_wait(lsn: pg_sys::XLogRecPtr) {
    if log_limit::due(Topic::StandbyWait) {
        crate::pg::report::emit(
            pgrx::PgLogLevel::WARNING,
            pgrx::PgSqlErrorCode::ERRCODE_WARNING,
            format!(
                "snowflake_id: IDs have waited {} s for the synchronous standbys to flush the durable mark (WAL up to {:X}/{:X})",
                STANDBY_WAIT_WARNING_AFTER.as_secs(),
                lsn >> 32,
                lsn & 0xFFFF_FFFF
            ),
            Some(
                "No ID under a new mark is returned until the standbys named in synchronous_standby_names have it, \
                 so that a failover never repeats one."
                    .into(),
            ),
            Some(
                "Check the standbys (pg_stat_replication). statement_timeout ends a waiting call with 57014. \
                 This warning repeats at most once a minute."
                    .into(),
            ),
        );
    }
}

/// The record's payload, as redo and desc get it.
///
/// # Safety
/// `record` is the reader state PostgreSQL passes to a resource manager.
unsafe fn payload<'a>(record: *mut pg_sys::XLogReaderState) -> (u8, &'a [u8]) {
    let decoded = (*record).record;
    let info = (*decoded).header.xl_info;
    let len = (*decoded).main_data_len as usize;
    let data = if len == 0 { &[][..] } else { std::slice::from_raw_parts((*decoded).main_data as *const u8, len) };
    (info, data)
}

/// Redo: raise the replayed mark and make it durable in the state file, or
/// raise the history slots' level map by a replayed claim and make that
/// durable in the history file.
#[pg_guard]
unsafe extern "C-unwind" fn redo(record: *mut pg_sys::XLogReaderState) {
    let (info, data) = payload(record);
    if Kind::from_info(info) == Some(Kind::PastInstants) {
        let claimed = Claimed::decode(data).unwrap_or_else(|e| refusal::raise_core(&e));
        past_instants_file::replay(&claimed);
        return;
    }
    let stored = mark_record::decode(data).unwrap_or_else(|e| refusal::raise_core(&e));
    file::replay(&stored, (*record).EndRecPtr);
}

#[pg_guard]
unsafe extern "C-unwind" fn desc(buf: pg_sys::StringInfo, record: *mut pg_sys::XLogReaderState) {
    let (info, data) = payload(record);
    let text = if Kind::from_info(info) == Some(Kind::PastInstants) {
        Claimed::decode(data).map_or_else(|e| e.to_string(), |c| c.describe())
    } else {
        mark_record::decode(data).map_or_else(|e| e.to_string(), |stored| mark_record::describe(&stored))
    };
    pg_sys::appendBinaryStringInfo(buf, text.as_ptr() as *const c_char as _, text.len() as i32);
}

#[pg_guard]
unsafe extern "C-unwind" fn identify(info: u8) -> *const c_char {
    Kind::from_info(info).map_or(std::ptr::null(), |kind| kind.name().as_ptr())
}
