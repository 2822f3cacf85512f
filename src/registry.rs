//! Worker ids from a registry, the node's side: its settings, the lease as
//! the status view shows it, and the mark keeper's turn that acquires,
//! renews and releases it.
//!
//! Nothing here is on the query path. Queries only meet the lease as the
//! generator's ceiling (no ID past it, see `GeneratorState::enter_lease`)
//! and as the worker id they encode; the keeper talks to the registry
//! (`registry_client.rs`) between its polls, and raises the ceiling in
//! shared memory only after the registry committed the renewal.

use std::ffi::{CStr, CString};
use std::time::{Duration, Instant};

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};
use snowflake_id_core::state_file::RegistryLease;
use snowflake_id_core::Layout;

use crate::errors::Refusal;
use crate::registry_client::{Connection, Failure, KeepGoing};
use crate::shmem::{self, ShortText};
use crate::{clock, guc, nextval};

/// Whether this server takes its worker id from a registry: decided once,
/// in the postmaster at preload, from `snowflake_id.registry`; every
/// process inherits it.
static USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn used() -> bool {
    USED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Called from `_PG_init` after the settings are defined.
pub fn decide_at_start(preloaded: bool) {
    USED.store(preloaded && conninfo().is_some(), std::sync::atomic::Ordering::Relaxed);
}

pub const REGISTRY: &str = "snowflake_id.registry";

static REGISTRY_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static NAMESPACE_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"default"));
static HORIZON_SETTING: GucSetting<i32> = GucSetting::<i32>::new(30_000);
static NODE_NAME_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// Defines the registry settings. Whether a registry is used at all is
/// decided at server start (`registry` set or not); its connection string,
/// the horizon and the node name may change with a reload.
pub fn register_settings(preloaded: bool) {
    let context = |wanted| if preloaded { wanted } else { GucContext::Sighup };
    GucRegistry::define_string_guc(
        c"snowflake_id.registry",
        c"Connection string of the worker id registry (empty: worker_id is set by hand).",
        c"A libpq connection string or URI; several hosts with target_session_attrs=read-write follow a registry failover. Used from server start; a reload changes where the mark keeper connects.",
        &REGISTRY_SETTING,
        GucContext::Sighup,
        GucFlags::SUPERUSER_ONLY,
    );
    GucRegistry::define_string_guc(
        c"snowflake_id.registry_namespace",
        c"The registry's namespace of worker ids this server takes one from.",
        c"Servers that share IDs share a namespace; each namespace has one layout.",
        &NAMESPACE_SETTING,
        context(GucContext::Postmaster),
        GucFlags::default(),
    );
    GucRegistry::define_int_guc(
        c"snowflake_id.registry_lease",
        c"How far ahead of the clock a registry lease reaches after each renewal.",
        c"IDs continue this long without the registry; a server that takes over a worker id starts this far ahead of the last holder's clock.",
        &HORIZON_SETTING,
        1_000,
        86_400_000,
        GucContext::Sighup,
        GucFlags::UNIT_MS,
    );
    GucRegistry::define_string_guc(
        c"snowflake_id.node_name",
        c"This server's name in the registry, for humans.",
        c"Default: cluster_name, else the host name and port.",
        &NODE_NAME_SETTING,
        GucContext::Sighup,
        GucFlags::default(),
    );
}

fn text(setting: &GucSetting<Option<CString>>) -> Option<String> {
    setting.get().map(|s| s.to_string_lossy().trim().to_string()).filter(|s| !s.is_empty())
}

/// The registry's connection string, if one is set now.
pub fn conninfo() -> Option<String> {
    text(&REGISTRY_SETTING)
}

pub fn namespace() -> String {
    text(&NAMESPACE_SETTING).unwrap_or_else(|| "default".into())
}

pub fn horizon_ms() -> i64 {
    HORIZON_SETTING.get().into()
}

/// What the registry shows for this server: `snowflake_id.node_name`, else
/// `cluster_name`, else host name and port.
pub fn node_name() -> String {
    if let Some(name) = text(&NODE_NAME_SETTING) {
        return name;
    }
    let setting = |name: &CStr| {
        // SAFETY: built-in settings, read as text; the string is PostgreSQL's.
        let value = unsafe { pgrx::pg_sys::GetConfigOption(name.as_ptr(), true, false) };
        // SAFETY: NUL-terminated when not NULL.
        (!value.is_null()).then(|| unsafe { CStr::from_ptr(value) }.to_string_lossy().into_owned())
    };
    match setting(c"cluster_name").filter(|n| !n.is_empty()) {
        Some(name) => name,
        None => {
            let mut host = [0u8; 256];
            // SAFETY: gethostname writes at most len bytes into the buffer.
            unsafe { libc::gethostname(host.as_mut_ptr().cast(), host.len()) };
            let end = host.iter().position(|b| *b == 0).unwrap_or(host.len());
            format!("{}:{}", String::from_utf8_lossy(&host[..end]), setting(c"port").unwrap_or_default())
        }
    }
}

/// Where the lease stands, as the status view shows it.
#[repr(u8)]
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum State {
    /// No registry is configured.
    None,
    /// Waiting for the registry to grant a worker id.
    Acquiring,
    /// A lease is held and renewed.
    Held,
    /// Another node took the worker id (or the lease was released): no ID
    /// past the ceiling, ever, under this lease.
    Lost,
    /// The ceiling is reached and the registry has not renewed it.
    Expired,
}

impl State {
    pub fn name(self) -> &'static str {
        match self {
            State::None => "none",
            State::Acquiring => "acquiring",
            State::Held => "held",
            State::Lost => "lost",
            State::Expired => "expired",
        }
    }
}

/// The lease in shared memory: what the keeper last learnt from the
/// registry, for the status view and for a restart of the keeper.
#[repr(C)]
#[derive(Debug, Clone, Copy)]
pub struct Shared {
    pub state: State,
    pub worker_id: i64,
    pub lease: Option<RegistryLease>,
    /// When the registry last granted or renewed it (Unix ms, our clock).
    pub renewed_unix_ms: i64,
    /// The last failure talking to the registry, until a call succeeds.
    pub error: Option<ShortText>,
    pub error_since_unix_ms: i64,
}

impl Shared {
    pub const fn new() -> Shared {
        Shared {
            state: State::None,
            worker_id: -1,
            lease: None,
            renewed_unix_ms: 0,
            error: None,
            error_since_unix_ms: 0,
        }
    }
}

/// How long one call to the registry may take, connect included.
const CALL_TIMEOUT: Duration = Duration::from_secs(5);
/// After a failure the keeper waits this long before the next try, doubling
/// up to [`MAX_BACKOFF`]: an unreachable registry is not hammered.
const FIRST_BACKOFF: Duration = Duration::from_millis(500);
const MAX_BACKOFF: Duration = Duration::from_secs(10);
const REFUSED_RETRY: Duration = Duration::from_secs(1);

/// What the keeper process keeps between turns: the open connection and
/// when to try again after a failure.
pub struct Keeper {
    connection: Option<(String, Connection)>,
    retry_at: Instant,
    backoff: Duration,
    /// When the registry last answered a renewal or grant: renewals are due
    /// at least every half lease by this (monotonic) clock too, so a wall
    /// clock stepped back does not let the registry see the lease go stale.
    answered_at: Instant,
    /// With `auto`, the worker id on disk was refused (another node holds
    /// it now): ask for any free one instead.
    forget_stored: bool,
}

impl Keeper {
    pub fn new() -> Keeper {
        Keeper {
            connection: None,
            retry_at: Instant::now(),
            backoff: FIRST_BACKOFF,
            answered_at: Instant::now(),
            forget_stored: false,
        }
    }

    fn connection(&mut self, keep_going: KeepGoing) -> Result<&mut Connection, Failure> {
        let conninfo = conninfo().ok_or_else(|| Failure::Unreachable(format!("{REGISTRY} is empty")))?;
        if self.connection.as_ref().is_some_and(|(c, _)| *c != conninfo) {
            self.connection = None; // a reload changed where the registry is
        }
        if self.connection.is_none() {
            let name = format!("snowflake_id {}", node_name());
            let mut connection = Connection::open(&conninfo, &name, CALL_TIMEOUT, keep_going)?;
            // A grant or renewal the registry could lose in a crash would let
            // it hand the same range to another node: commits must be durable
            // before the keeper acts on them, whatever the registry's default.
            connection.query("SET synchronous_commit = on", &[], CALL_TIMEOUT, keep_going)?;
            self.connection = Some((conninfo, connection));
        }
        match self.connection.as_mut() {
            Some((_, connection)) => Ok(connection),
            None => Err(Failure::Unreachable("no connection".into())),
        }
    }

    fn call(
        &mut self,
        sql: &str,
        params: &[Option<String>],
        keep_going: KeepGoing,
    ) -> Result<Vec<Vec<Option<String>>>, Failure> {
        let result = self.connection(keep_going).and_then(|c| c.query(sql, params, CALL_TIMEOUT, keep_going));
        if matches!(result, Err(Failure::Unreachable(_))) {
            self.connection = None; // reconnect next time (maybe to a new registry primary)
        }
        result
    }

    /// One turn of the keeper: acquire when there is no lease, renew when
    /// its ceiling is within half a horizon of the clock. Returns whether it
    /// talked to the registry.
    pub fn turn(&mut self, layout: &Layout, keep_going: KeepGoing) -> bool {
        if Instant::now() < self.retry_at {
            return false;
        }
        // A restart on the same timeline goes on with the lease on disk and
        // renews it; only without one does it ask for a new grant (which
        // would start a lease ahead, above the old ceiling).
        nextval::restore_own_lease(layout);
        let shared = shmem::lock().registry;
        // The node's position: the later of its clock and its last ID (a
        // logical clock ahead after a burst or advance_past); renewals
        // reach a lease past it.
        let now = clock::now_unix_ms().saturating_sub(layout.epoch_ms()).max(nextval::last_tick().unwrap_or(0));
        let half = horizon_ms() / 2;
        let outcome = match (shared.state, shared.lease) {
            // Lost: ask for a worker id again (with a number, it stays
            // refused while the new holder is live; with auto, any free one).
            (State::Lost, _) => {
                self.forget_stored = true;
                self.acquire(layout, now, keep_going)
            }
            (State::Held | State::Expired, Some(lease))
                if lease.ceiling - now > half && self.answered_at.elapsed() < Duration::from_millis(half as u64) =>
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
                let mut shared = shmem::lock();
                shared.registry.error = None;
                shared.registry.error_since_unix_ms = 0;
            }
            Err(failure) => {
                // An unreachable registry is retried less and less often; an
                // answer (a worker id held by a live node, say) is asked
                // again every second, to take over as soon as it goes stale.
                let (wait, next) = match &failure {
                    Failure::Refused { .. } => (REFUSED_RETRY, FIRST_BACKOFF),
                    _ => (self.backoff, (self.backoff * 2).min(MAX_BACKOFF)),
                };
                self.retry_at = Instant::now() + wait;
                self.backoff = next;
                let lost = matches!(&failure, Failure::Refused { sqlstate, .. } if sqlstate == "SFL01");
                if !matches!(failure, Failure::Stopped) && crate::log_limit::due(crate::log_limit::Topic::Registry) {
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
                    .set_hint(format!(
                        "Check {REGISTRY} and the registry server; snowflake_id_status.registry_error has the latest answer. This repeats at most once a minute."
                    ))
                    .report(pgrx::PgLogLevel::WARNING);
                }
                let text = ShortText::new(&failure.to_string());
                let mut shared = shmem::lock();
                if shared.registry.error.is_none() {
                    shared.registry.error_since_unix_ms = crate::clock::now_unix_ms();
                }
                shared.registry.error = Some(text);
                if lost {
                    shared.registry.state = State::Lost;
                }
            }
        }
        true
    }

    fn acquire(&mut self, layout: &Layout, now: i64, keep_going: KeepGoing) -> Result<(), Failure> {
        {
            let mut shared = shmem::lock();
            if shared.registry.lease.is_none() {
                shared.registry.state = State::Acquiring;
            }
        }
        let (system, timeline) = identity();
        let fixed = guc::Settings::get().values.worker_id;
        // The lease on disk, to resume (this server) or to take over (a
        // promoted standby, its old primary's); with `auto` and that worker
        // id gone to another node, any free one instead.
        let resumable = nextval::stored_lease(layout).filter(|_| fixed.is_some() || !self.forget_stored);
        let wanted = fixed.or(resumable.map(|(w, _)| w));
        let result = self.call(
            "SELECT worker_id, lease_epoch, holder_token, floor_tick, ceiling_tick FROM snowflake_registry_acquire($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)",
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
        );
        if matches!(&result, Err(Failure::Refused { sqlstate, .. }) if sqlstate == "SFL02") && fixed.is_none() {
            self.forget_stored = true;
        }
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
        nextval::take_lease(layout, worker_id, lease).map_err(Failure::Unreachable)?;
        let mut shared = shmem::lock();
        shared.registry = Shared {
            state: State::Held,
            worker_id,
            lease: Some(lease),
            renewed_unix_ms: crate::clock::now_unix_ms(),
            ..shared.registry
        };
        Ok(())
    }

    fn renew(
        &mut self,
        layout: &Layout,
        worker_id: i64,
        lease: RegistryLease,
        now: i64,
        keep_going: KeepGoing,
    ) -> Result<(), Failure> {
        let rows = self.call(
            "SELECT snowflake_registry_renew($1, $2, $3, $4, $5, $6)",
            &[
                Some(namespace()),
                Some(worker_id.to_string()),
                Some(lease.epoch.to_string()),
                Some(lease.token.to_string()),
                Some(now.to_string()),
                Some(horizon_ms().to_string()),
            ],
            keep_going,
        )?;
        let ceiling = rows.first().and_then(|r| r.first().cloned().flatten()).and_then(|v| v.parse::<i64>().ok());
        let Some(ceiling) = ceiling else {
            return Err(Failure::Unreachable("the registry's answer to renew has no ceiling".into()));
        };
        nextval::raise_ceiling(layout, ceiling);
        let mut shared = shmem::lock();
        shared.registry.state = State::Held;
        shared.registry.lease = Some(RegistryLease { ceiling, ..lease });
        shared.registry.renewed_unix_ms = crate::clock::now_unix_ms();
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
        let Some(last) = nextval::close_lease(layout) else { return };
        let params = [
            Some(namespace()),
            Some(shared.worker_id.to_string()),
            Some(lease.epoch.to_string()),
            Some(lease.token.to_string()),
            Some(last.to_string()),
        ];
        match self.call("SELECT snowflake_registry_release($1, $2, $3, $4, $5)", &params, keep_going) {
            Ok(_) => {
                shmem::lock().registry.state = State::Lost;
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

/// PostgreSQL's identity of this cluster for the registry: the system
/// identifier (shared by a primary and its standbys) and the timeline (a
/// promoted standby's is higher, which lets it take its primary's worker id
/// at once).
fn identity() -> (String, i32) {
    // SAFETY: a plain read of the control file's copy in shared memory.
    let system = unsafe { pgrx::pg_sys::GetSystemIdentifier() };
    (system.to_string(), current_timeline() as i32)
}

/// The timeline this server writes WAL on (only asked where IDs are issued,
/// so never during recovery).
pub fn current_timeline() -> i64 {
    // SAFETY: a plain read of shared state.
    unsafe { pgrx::pg_sys::GetWALInsertionTimeLine() }.into()
}

/// `snowflake_nextval()` with a registry but no lease yet.
pub fn no_lease_refusal(shared: &Shared) -> Refusal {
    let detail = match shared.error {
        Some(error) => format!(
            "The mark keeper has asked the registry for a worker id of namespace \"{}\" since {}; the last answer: {error}",
            namespace(),
            snowflake_id_core::epoch::format_unix_ms(shared.error_since_unix_ms)
        ),
        None => format!("The mark keeper is asking the registry for a worker id of namespace \"{}\".", namespace()),
    };
    Refusal::new(
        pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        "snowflake_id: no worker id yet: the registry has not granted a lease".into(),
        Some(&detail),
        Some(format!(
            "IDs flow once the registry grants one; check {REGISTRY} and that the registry database has the extension. snowflake_id_status shows the lease and the registry's last error."
        )),
    )
}

/// `snowflake_nextval()` at the lease's ceiling: the registry has not
/// renewed it (unreachable, or the worker id went to another node).
pub fn ceiling_refusal(shared: &Shared, ceiling_unix_ms: i64) -> Refusal {
    let ceiling = snowflake_id_core::epoch::format_unix_ms(ceiling_unix_ms);
    let (message, detail) = match (shared.state, shared.error) {
        (State::Lost, error) => (
            format!("snowflake_id: the lease on worker id {} is lost; no ID past {ceiling}", shared.worker_id),
            format!(
                "Another server now holds worker id {} (or the lease was released); this server issues no ID under it past the lease's end.{}",
                shared.worker_id,
                error.map_or(String::new(), |e| format!(" The registry said: {e}"))
            ),
        ),
        (_, Some(error)) => (
            format!("snowflake_id: the lease on worker id {} ends at {ceiling} and the registry has not renewed it", shared.worker_id),
            format!(
                "Since {}: {error}",
                snowflake_id_core::epoch::format_unix_ms(shared.error_since_unix_ms)
            ),
        ),
        (_, None) => (
            format!("snowflake_id: the lease on worker id {} ends at {ceiling}", shared.worker_id),
            "The mark keeper renews it ahead of need; it may be starting, or be stopped.".into(),
        ),
    };
    Refusal::new(
        pgrx::PgSqlErrorCode::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        message,
        Some(&detail),
        Some(format!(
            "IDs resume once the registry renews the lease or grants a new one; check {REGISTRY} and the registry server. snowflake_id_status shows the lease."
        )),
    )
}
