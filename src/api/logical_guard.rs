//! `snowflake_id_received()`: the row trigger of the logical replication
//! guard. `snowflake_logical_guard()` (sql/install/logical.sql) puts it on every
//! table whose key defaults to `snowflake_nextval()`, enabled as a REPLICA
//! trigger: it fires only where `session_replication_role = replica`, which
//! is how apply workers run (native and pglogical), so local inserts never
//! call it. The function and the trigger keep the SQL name
//! `snowflake_id_received`: every guarded table's trigger, and every dump
//! of one, names it.
//!
//! Written against the C trigger interface rather than pgrx's `#[pg_trigger]`
//! so that one applied row costs a column read and one spinlock hold, no
//! allocation; and it never raises for anything a table can hold (a
//! missing or renamed column, another type, NULL): an apply must never fail
//! because of it.

use std::ffi::CStr;

use pgrx::pg_sys;
use pgrx::prelude::*;

use crate::service::logical_guard;

#[no_mangle]
#[doc(hidden)]
pub extern "C" fn pg_finfo_snowflake_id_received() -> &'static pg_sys::Pg_finfo_record {
    const V1: pg_sys::Pg_finfo_record = pg_sys::Pg_finfo_record { api_version: 1 };
    &V1
}

/// The trigger: every argument names a `bigint` column whose value, in the
/// row being written, is handed to the guard. Returns the row unchanged.
///
/// # Safety
/// Called by PostgreSQL's function manager with a valid `fcinfo`.
#[no_mangle]
#[pg_guard]
pub unsafe extern "C-unwind" fn snowflake_id_received(fcinfo: pg_sys::FunctionCallInfo) -> pg_sys::Datum {
    let context = (*fcinfo).context;
    if context.is_null() || (*context).type_ != pg_sys::NodeTag::T_TriggerData {
        error!("snowflake_id_received() may only be called as a trigger");
    }
    let data = context.cast::<pg_sys::TriggerData>();
    let event = (*data).tg_event;
    if event & pg_sys::TRIGGER_EVENT_ROW == 0 {
        return pg_sys::Datum::from(0usize);
    }
    let tuple = if event & pg_sys::TRIGGER_EVENT_OPMASK == pg_sys::TRIGGER_EVENT_UPDATE {
        (*data).tg_newtuple
    } else {
        (*data).tg_trigtuple
    };
    let returned = if event & pg_sys::TRIGGER_EVENT_TIMINGMASK == pg_sys::TRIGGER_EVENT_BEFORE {
        pg_sys::Datum::from(tuple)
    } else {
        pg_sys::Datum::from(0usize)
    };
    // Only an apply worker's rows move the generator: a background worker
    // (native subscriptions and pglogical apply in one) in a session with
    // session_replication_role = replica. Anywhere else the trigger is a
    // no-op: any table owner can put it on a table or enable it ALWAYS, and
    // a row it inserts would otherwise push every later ID a day ahead, a
    // move snowflake_advance_past keeps to superusers;
    // a data-only restore that left it enabled for local sessions would
    // raise a false shared-worker alarm at each insert.
    if !in_apply_worker() {
        return returned;
    }
    if !tuple.is_null() && (event & pg_sys::TRIGGER_EVENT_OPMASK) != pg_sys::TRIGGER_EVENT_DELETE {
        let tupdesc = (*(*data).tg_relation).rd_att;
        let trigger = (*data).tg_trigger;
        let args = (*trigger).tgargs;
        for i in 0..usize::try_from((*trigger).tgnargs).unwrap_or(0) {
            let name = *args.add(i);
            if name.is_null() {
                continue;
            }
            let attnum = pg_sys::SPI_fnumber(tupdesc, name);
            if attnum <= 0 || pg_sys::SPI_gettypeid(tupdesc, attnum) != pg_sys::INT8OID {
                warn_unusable(CStr::from_ptr(name), (*data).tg_relation, (*trigger).tgfoid);
                continue;
            }
            let mut is_null = false;
            let datum = pg_sys::heap_getattr(tuple, attnum, tupdesc, &mut is_null);
            if !is_null {
                logical_guard::saw(datum.value() as i64);
            }
        }
    }
    returned
}

/// Whether this process applies rows of a logical subscription: a
/// background worker (a client backend can never be one) whose session
/// replication role is `replica`, as every apply worker's is.
fn in_apply_worker() -> bool {
    // SAFETY: plain globals of this process, set before any trigger fires.
    unsafe {
        !pg_sys::MyBgworkerEntry.is_null()
            && pg_sys::SessionReplicationRole == pg_sys::SESSION_REPLICATION_ROLE_REPLICA as std::ffi::c_int
    }
}

/// A column renamed, dropped or retyped since the trigger was made: the row
/// goes in unguarded. The hint names the guard's entry point in
/// `snowflake_id_internal` (sql/install/logical.sql) and the table, with exact
/// types: any call of `snowflake_logical_guard` in the extension's schema is
/// another role's to make ambiguous with an overload. Before the
/// database's extension reaches 0.7.0 there is no such schema, and the hint
/// names the function in the trigger function's schema, as 0.6.0 did.
fn warn_unusable(name: &CStr, relation: pg_sys::Relation, function: pg_sys::Oid) {
    if crate::shmem::preloaded() && crate::shmem::log_limit::due(crate::shmem::log_limit::Topic::LogicalGuard) {
        let call = guard_call(relation, function).unwrap_or_else(|| "snowflake_logical_guard()".into());
        warning!(
            "snowflake_id: the trigger snowflake_id_received names column \"{}\", which is not a bigint column of \
             the table; run SELECT * FROM {call}; as the table's owner to make it anew",
            name.to_string_lossy()
        );
    }
}

/// `schema.snowflake_logical_guard('schema.table'::pg_catalog.regclass)`
/// for `relation`, the schema being `snowflake_id_internal` where it exists,
/// else `function`'s; None when a name is missing from the catalogs.
/// Syscache lookups only: nothing here raises.
fn guard_call(relation: pg_sys::Relation, function: pg_sys::Oid) -> Option<String> {
    // SAFETY: `relation` is the trigger's open relation; the lookups return
    // NULL (never raise) for a missing object, and quote_identifier returns
    // its argument or a palloc'd copy, NUL-terminated.
    unsafe {
        let quoted = |name: *const std::ffi::c_char| -> Option<String> {
            (!name.is_null()).then(|| CStr::from_ptr(pg_sys::quote_identifier(name)).to_string_lossy().into_owned())
        };
        let form = (*relation).rd_rel;
        let internal = pg_sys::get_namespace_oid(c"snowflake_id_internal".as_ptr(), true);
        let schema = if internal != pg_sys::InvalidOid {
            "snowflake_id_internal".to_string()
        } else {
            quoted(pg_sys::get_namespace_name(pg_sys::get_func_namespace(function)))?
        };
        let table_schema = quoted(pg_sys::get_namespace_name((*form).relnamespace))?;
        let table = quoted((*form).relname.data.as_ptr())?;
        let literal = format!("{table_schema}.{table}").replace('\'', "''");
        Some(format!("{schema}.snowflake_logical_guard('{literal}'::pg_catalog.regclass)"))
    }
}
