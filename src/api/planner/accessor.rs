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
use super::walk::each_node;

const ACCESSORS: [&CStr; 3] = [c"snowflake_timestamp", c"snowflake_worker_id", c"snowflake_sequence"];
const INTERNAL: &CStr = c"snowflake_id_internal";

/// Puts the internal twin in place of each public accessor call below
/// `root` (a query, with its subqueries, or a stored expression), walked as
/// [`each_node`] walks (the arbiter of `ON CONFLICT` left as written).
pub(super) unsafe fn to_internal(root: *mut Node) {
    let internal = raw::get_namespace_oid(INTERNAL.as_ptr(), true);
    if internal == pg_sys::InvalidOid {
        return;
    }
    each_node(root, |node| {
        if (*node).type_ == NodeTag::T_FuncExpr {
            let call: *mut pg_sys::FuncExpr = node.cast();
            if let Some(twin) = twin_in(internal, (*call).funcid) {
                (*call).funcid = twin;
            }
        }
    });
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
