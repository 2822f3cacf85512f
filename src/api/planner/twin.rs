//! Which function a call of `snowflake_decode` is swapped for, and whether
//! it is at all: only a call that reads a row and that the planner will
//! inline gains ([`worth_swapping`]), only for a twin of the same extension,
//! schema and argument types that the current user may execute
//! ([`twin_of`]). The catalog lookups and the per-transaction memory of
//! twins found live here, apart from the walk that finds the calls
//! (`find.rs`), because this is where the hook's security argument is.

use std::ffi::{c_int, CStr};
use std::ptr;

use pgrx::pg_sys::{self, Node, NodeTag};

use super::raw;
use super::walk::{queue_all, Todo};

const DECODE: &CStr = c"snowflake_decode";

/// Whether a call of `snowflake_decode` gains from its twin: only when its
/// arguments read a row (a column, of this query or an outer one) and the
/// planner will inline the twin (no volatile function, no subquery in them:
/// PostgreSQL inlines neither form then, and both cost the same).
///
/// A call on constants gains nothing, since the planner folds it before the
/// first row either way. Leaving it as written keeps what a user sees the
/// same: an error the folding raises (a negative ID, a bad layout) then
/// names `snowflake_decode` in its CONTEXT ("SQL function ... during
/// inlining"), as without the hook, not the twin. A twin that runs without
/// being inlined would be named too, hence the second condition.
unsafe fn worth_swapping(call: *mut pg_sys::FuncExpr) -> bool {
    let args: *mut Node = (*call).args.cast();
    if args.is_null() {
        return false;
    }
    let mut reads_a_row = false;
    let mut todo = Todo::new();
    let todo_ptr: *mut Todo = ptr::addr_of_mut!(todo);
    (*todo_ptr).push(args);
    while let Some(node) = (*todo_ptr).pop() {
        match (*node).type_ {
            NodeTag::T_Var => reads_a_row = true,
            NodeTag::T_SubLink | NodeTag::T_Query => return false,
            _ => {
                raw::expression_tree_walker(node, Some(queue_all), todo_ptr.cast());
            }
        }
    }
    reads_a_row && !raw::contain_volatile_functions(args)
}

/// The twin named `twin` of the function `call` invokes, if that is a
/// `snowflake_decode` with such a twin beside it (same schema and argument
/// types, same result type, returning a set or not as `retset` says) and
/// both belong to one extension: a function of a user's that happens to be
/// named like ours is never swapped, nor ours for a twin someone planted in a
/// schema others may create in (a database at an older version of the
/// extension has no twins of its own). The current user must be allowed to
/// execute both, so privileges stay those of the function the query names.
/// Lookups only for functions named `snowflake_decode` in FROM or under a
/// field selection; the twin is remembered for the rest of the transaction,
/// or until `pg_proc` changes. The plan then depends on the user (`plan`).
pub(super) unsafe fn twin_of(call: *mut pg_sys::FuncExpr, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    let funcid = (*call).funcid;
    let name = raw::get_func_name(funcid);
    if name.is_null() || CStr::from_ptr(name) != DECODE || !worth_swapping(call) {
        return None;
    }
    let twin = remembered_twin(funcid, twin, retset)?;
    (may_execute(funcid) && may_execute(twin)).then_some(twin)
}

/// Counts the `pg_proc` invalidations this backend has received: a
/// remembered twin is good while the count it was found at is current.
static mut PROC_CHANGES: u64 = 1;
static mut CALLBACK_REGISTERED: bool = false;

/// Twins found in this backend: (`snowflake_decode`'s OID, `retset`, the
/// twin or `InvalidOid`), all found at `TWINS_AT` in the transaction that
/// started at `TWINS_TRANSACTION`. A handful at most: one
/// decoder per schema the extension was ever created in.
static mut TWINS: [(pg_sys::Oid, bool, pg_sys::Oid); 8] = [(pg_sys::InvalidOid, false, pg_sys::InvalidOid); 8];
static mut TWINS_LEN: usize = 0;
static mut TWINS_AT: u64 = 0;
static mut TWINS_TRANSACTION: pg_sys::TimestampTz = 0;

unsafe fn remembered_twin(funcid: pg_sys::Oid, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    if !CALLBACK_REGISTERED {
        // In the backend, not in _PG_init: the postmaster has no caches.
        raw::CacheRegisterSyscacheCallback(
            pg_sys::SysCacheIdentifier::PROCOID as c_int,
            Some(proc_changed),
            pg_sys::Datum::from(0),
        );
        CALLBACK_REGISTERED = true;
    }
    let twins = &mut *ptr::addr_of_mut!(TWINS);
    // Membership changes (ALTER EXTENSION ... ADD/DROP) touch pg_depend, not
    // pg_proc: what was found holds for one transaction at most.
    let transaction = raw::GetCurrentTransactionStartTimestamp();
    if TWINS_AT != PROC_CHANGES || TWINS_TRANSACTION != transaction {
        TWINS_LEN = 0;
        TWINS_AT = PROC_CHANGES;
        TWINS_TRANSACTION = transaction;
    }
    if let Some(&(_, _, found)) = twins.iter().take(TWINS_LEN).find(|(f, r, _)| *f == funcid && *r == retset) {
        return (found != pg_sys::InvalidOid).then_some(found);
    }
    let at = PROC_CHANGES;
    let found = find_twin(funcid, twin, retset).unwrap_or(pg_sys::InvalidOid);
    // Not kept if pg_proc changed during the lookup itself.
    if at == PROC_CHANGES && TWINS_AT == at {
        if TWINS_LEN == twins.len() {
            TWINS_LEN = 0;
        }
        if let Some(slot) = twins.get_mut(TWINS_LEN) {
            *slot = (funcid, retset, found);
            TWINS_LEN += 1;
        }
    }
    (found != pg_sys::InvalidOid).then_some(found)
}

/// Called by PostgreSQL for every invalidation of `pg_proc` entries (also
/// for a full cache reset), in this backend's transaction or another's.
unsafe extern "C-unwind" fn proc_changed(_arg: pg_sys::Datum, _cache: c_int, _hash: u32) {
    PROC_CHANGES = PROC_CHANGES.wrapping_add(1).max(1);
}

unsafe fn find_twin(funcid: pg_sys::Oid, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    let mut argtypes: *mut pg_sys::Oid = ptr::null_mut();
    let mut nargs: c_int = 0;
    let rettype = raw::get_func_signature(funcid, &mut argtypes, &mut nargs);
    let oid = raw::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as c_int,
        pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(twin.as_ptr()),
        pg_sys::Datum::from(raw::buildoidvector(argtypes, nargs)),
        pg_sys::Datum::from(raw::get_func_namespace(funcid)),
        pg_sys::Datum::from(0),
    );
    if oid == pg_sys::InvalidOid || raw::get_func_retset(oid) != retset || raw::get_func_rettype(oid) != rettype {
        return None;
    }
    let extension = raw::getExtensionOfObject(pg_sys::ProcedureRelationId, funcid);
    (extension != pg_sys::InvalidOid && raw::getExtensionOfObject(pg_sys::ProcedureRelationId, oid) == extension)
        .then_some(oid)
}

/// Whether the current user may execute function `funcid`, as the planner
/// asks before it inlines one.
pub(super) unsafe fn may_execute(funcid: pg_sys::Oid) -> bool {
    let mode = pg_sys::ACL_EXECUTE as pg_sys::AclMode;
    #[cfg(feature = "pg15")]
    let result = raw::pg_proc_aclcheck(funcid, raw::GetUserId(), mode);
    #[cfg(not(feature = "pg15"))]
    let result = raw::object_aclcheck(pg_sys::ProcedureRelationId, funcid, raw::GetUserId(), mode);
    result == pg_sys::AclResult::ACLCHECK_OK
}
