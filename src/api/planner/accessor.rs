//! The accessors' twins: a query that had a decoder swapped meets its
//! tables' indexes and partition keys at the accessors of
//! `snowflake_id_internal`, which the twins' bodies call (so that nothing
//! planted in the extension's schema can stop pg_upgrade from re-creating
//! them). An index or a query that names a public accessor,
//! `snowflake_timestamp(id, ...)`, is moved to the same meeting point:
//! without it, `(snowflake_decode(id, ...)).ts` would no longer use an
//! index on `snowflake_timestamp(id, ...)`, as it did when the decoders
//! called the public accessors. Only calls of the three accessors of the
//! extension's schema with a twin of the same extension, name and argument
//! types in `snowflake_id_internal`, both of which the current user may
//! execute (privileges stay those of the function the query names); the
//! twin is the same C function, so every value stays what it was.

use std::ffi::{c_int, CStr};
use std::ptr;

use pgrx::pg_sys::{self, Node, NodeTag};

use super::raw;
use super::twin::may_execute;
use super::walk::{queue, Todo};

const ACCESSORS: [&CStr; 3] = [c"snowflake_timestamp", c"snowflake_worker_id", c"snowflake_sequence"];
const INTERNAL: &CStr = c"snowflake_id_internal";

/// Puts the internal twin in place of each public accessor call below
/// `root` (a query, with its subqueries, or a stored expression).
pub(super) unsafe fn to_internal(root: *mut Node) {
    if root.is_null() {
        return;
    }
    let internal = raw::get_namespace_oid(INTERNAL.as_ptr(), true);
    if internal == pg_sys::InvalidOid {
        return;
    }
    let mut todo = Todo::new();
    let todo_ptr: *mut Todo = ptr::addr_of_mut!(todo);
    (*todo_ptr).push(root);
    while let Some(node) = (*todo_ptr).pop() {
        match (*node).type_ {
            NodeTag::T_Query => {
                raw::query_tree_walker(node.cast(), Some(queue), todo_ptr.cast(), 0);
                continue;
            }
            // The arbiter of ON CONFLICT stays as written: the planner
            // matches it against unique indexes as the relcache holds them
            // (not the copies restated here), so a moved arbiter would find
            // no index and the INSERT would fail.
            NodeTag::T_OnConflictExpr => {
                let on_conflict: *mut pg_sys::OnConflictExpr = node.cast();
                queue((*on_conflict).onConflictSet.cast(), todo_ptr.cast());
                queue((*on_conflict).onConflictWhere, todo_ptr.cast());
                continue;
            }
            NodeTag::T_FuncExpr => {
                let call: *mut pg_sys::FuncExpr = node.cast();
                if let Some(twin) = twin_in(internal, (*call).funcid) {
                    (*call).funcid = twin;
                }
            }
            _ => {}
        }
        raw::expression_tree_walker(node, Some(queue), todo_ptr.cast());
    }
}

/// The twin in schema `internal` of accessor `funcid`, if `funcid` is one
/// of the extension's accessors outside that schema.
unsafe fn twin_in(internal: pg_sys::Oid, funcid: pg_sys::Oid) -> Option<pg_sys::Oid> {
    let name = raw::get_func_name(funcid);
    if name.is_null() || !ACCESSORS.contains(&CStr::from_ptr(name)) || raw::get_func_namespace(funcid) == internal {
        return None;
    }
    let mut argtypes: *mut pg_sys::Oid = ptr::null_mut();
    let mut nargs: c_int = 0;
    let rettype = raw::get_func_signature(funcid, &mut argtypes, &mut nargs);
    let twin = raw::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as c_int,
        pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(name),
        pg_sys::Datum::from(raw::buildoidvector(argtypes, nargs)),
        pg_sys::Datum::from(internal),
        pg_sys::Datum::from(0),
    );
    if twin == pg_sys::InvalidOid || raw::get_func_rettype(twin) != rettype {
        return None;
    }
    let extension = raw::getExtensionOfObject(pg_sys::ProcedureRelationId, funcid);
    (extension != pg_sys::InvalidOid
        && raw::getExtensionOfObject(pg_sys::ProcedureRelationId, twin) == extension
        && may_execute(funcid)
        && may_execute(twin))
    .then_some(twin)
}
