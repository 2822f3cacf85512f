//! The registry's settings: whether worker ids come from a registry (decided
//! at server start), where it is, the namespace, how far a lease reaches, and
//! this server's name there.

use std::ffi::{CStr, CString};

use pgrx::{GucContext, GucFlags, GucRegistry, GucSetting};

/// Whether this server takes its worker id from a registry: decided once,
/// in the postmaster at preload, from `snowflake_id.registry`; every
/// process inherits it.
static USED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

pub fn used() -> bool {
    USED.load(std::sync::atomic::Ordering::Relaxed)
}

/// Called once the settings are defined.
pub fn decide_at_start(preloaded: bool) {
    USED.store(preloaded && conninfo().is_some(), std::sync::atomic::Ordering::Relaxed);
}

static REGISTRY_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);
static NAMESPACE_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(Some(c"default"));
static REGISTRY_LEASE_SETTING: GucSetting<i32> = GucSetting::<i32>::new(30_000);
static NODE_NAME_SETTING: GucSetting<Option<CString>> = GucSetting::<Option<CString>>::new(None);

/// Defines the registry settings. Whether a registry is used at all is
/// decided at server start (`registry` set or not); its connection string,
/// the lease (`registry_lease`) and the node name may change with a reload.
pub fn define(preloaded: bool) {
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
        &REGISTRY_LEASE_SETTING,
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

/// `snowflake_id.registry_lease`, in milliseconds: the registry's SQL and
/// the lease rule call it the horizon (how far a grant reaches past a tick).
pub fn horizon_ms() -> i64 {
    REGISTRY_LEASE_SETTING.get().into()
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
