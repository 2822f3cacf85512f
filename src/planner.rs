//! Decoding at scan speed, through a planner hook.
//!
//! `snowflake_decode` is an SQL function that the planner inlines into calls
//! of the accessors. Two places defeat that, and in both the hook swaps the
//! call for a twin with the same arguments in the same schema before the
//! planner inlines SQL functions:
//!
//! * In FROM (`FROM t, snowflake_decode(t.id) d`). PostgreSQL runs a function
//!   returning one composite value there through a tuplestore per outer row
//!   (a few microseconds each), unless it is an SQL function that returns a
//!   *set*, which the planner inlines like a subselect. `snowflake_decode`
//!   cannot return a set, or `(snowflake_decode(id)).ts` in a target list or
//!   an aggregate would become a set-returning call, so there the hook calls
//!   `snowflake_decode_rows` (one row, the same fields).
//! * Under a field selection (`(snowflake_decode(id)).ts`). `snowflake_decode`
//!   gives NULL for a NULL id, as 0.1.0's did, through a CASE the planner
//!   does not see through, so a field of it would build the composite per
//!   row. A field of NULL and of a row of NULLs is the same NULL, so there the
//!   hook calls `snowflake_decode_fields`, a bare ROW that the planner reduces
//!   to the one accessor asked for.
//!
//! Every query of a server that loads the library passes through the hook, in
//! every database. Where the extension is not installed it returns at once:
//! a per-backend flag, looked up again after any change to `pg_proc` (which
//! `CREATE`, `DROP` and `ALTER EXTENSION` all make).

use std::ffi::{c_char, c_int, c_void, CStr};

use pgrx::pg_sys;
use pgrx::prelude::*;

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;

const EXTENSION: &CStr = c"snowflake_id";
const DECODE: &CStr = c"snowflake_decode";
const ROWS_TWIN: &CStr = c"snowflake_decode_rows";
const FIELDS_TWIN: &CStr = c"snowflake_decode_fields";

/// Counts the `pg_proc` invalidations this backend has received: a cached
/// answer is good while the count it was taken at is current. A count, not a
/// flag, so that an invalidation arriving during the lookup itself is not lost.
static mut PROC_CHANGES: u64 = 1;
static mut CALLBACK_REGISTERED: bool = false;
/// `PROC_CHANGES` when `INSTALLED` was looked up (0: never).
static mut INSTALLED_AT: u64 = 0;
static mut INSTALLED: bool = false;

/// Installs the hook; called from `_PG_init` in every process that loads the
/// library (preloaded or not: decoding needs no shared memory).
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any planning.
    unsafe {
        PREV_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
    }
}

#[pg_guard]
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    if installed() {
        // The top query's FROM here, every node below it through PostgreSQL's
        // walker: `visit` is only ever entered from C, so an ERROR in the walk
        // (stack depth, a catalog lookup) travels from its guard to the
        // walker's FFI boundary as pgrx expects, never by longjmp over this frame.
        swap_in_from(parse);
        pg_sys::query_tree_walker(parse, Some(visit), std::ptr::null_mut(), 0);
    }
    match PREV_PLANNER {
        Some(prev) => {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev(parse, query_string, cursor_options, bound_params))
        }
        None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
    }
}

/// Whether the extension is installed in this backend's database. The
/// lookup is a catalog scan, so its answer is kept until `pg_proc` changes.
unsafe fn installed() -> bool {
    if !CALLBACK_REGISTERED {
        // Registered in the backend rather than in _PG_init: the postmaster
        // that preloads the library has no caches to invalidate.
        pg_sys::CacheRegisterSyscacheCallback(
            pg_sys::SysCacheIdentifier::PROCOID as c_int,
            Some(proc_changed),
            pg_sys::Datum::from(0),
        );
        CALLBACK_REGISTERED = true;
    }
    if INSTALLED_AT != PROC_CHANGES {
        let at = PROC_CHANGES;
        INSTALLED = pg_sys::get_extension_oid(EXTENSION.as_ptr(), true) != pg_sys::InvalidOid;
        INSTALLED_AT = at;
    }
    INSTALLED
}

/// Called by PostgreSQL for every invalidation of `pg_proc` entries (also
/// for a full cache reset), in this backend's transaction or another's.
#[pg_guard]
unsafe extern "C-unwind" fn proc_changed(_arg: pg_sys::Datum, _cache: c_int, _hash: u32) {
    PROC_CHANGES = PROC_CHANGES.wrapping_add(1).max(1);
}

/// Visits every node below a query (subqueries, CTEs, sublinks, function
/// arguments): each query's FROM list and each field selection. The walker's
/// callback, called by PostgreSQL only.
#[pg_guard]
unsafe extern "C-unwind" fn visit(node: *mut pg_sys::Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    if pgrx::is_a(node, pg_sys::NodeTag::T_Query) {
        let query: *mut pg_sys::Query = node.cast();
        swap_in_from(query);
        return pg_sys::query_tree_walker(query, Some(visit), context, 0);
    }
    if pgrx::is_a(node, pg_sys::NodeTag::T_FieldSelect) {
        let arg: *mut pg_sys::Node = (*node.cast::<pg_sys::FieldSelect>()).arg.cast();
        if pgrx::is_a(arg, pg_sys::NodeTag::T_FuncExpr) {
            let call: *mut pg_sys::FuncExpr = arg.cast();
            if let Some(twin) = twin_of(call, FIELDS_TWIN, false) {
                (*call).funcid = twin;
            }
        }
    }
    pg_sys::expression_tree_walker(node, Some(visit), context)
}

/// In one query's FROM list, replaces each lone call of `snowflake_decode`
/// (without `WITH ORDINALITY`) by its set-returning twin.
unsafe fn swap_in_from(query: *mut pg_sys::Query) {
    let rtable = pgrx::PgList::<pg_sys::RangeTblEntry>::from_pg((*query).rtable);
    for rte in rtable.iter_ptr() {
        if (*rte).rtekind != pg_sys::RTEKind::RTE_FUNCTION || (*rte).funcordinality {
            continue;
        }
        let functions = pgrx::PgList::<pg_sys::RangeTblFunction>::from_pg((*rte).functions);
        if functions.len() != 1 {
            continue;
        }
        let Some(rtfunc) = functions.get_ptr(0) else { continue };
        let expr = (*rtfunc).funcexpr;
        if !pgrx::is_a(expr, pg_sys::NodeTag::T_FuncExpr) {
            continue;
        }
        let call: *mut pg_sys::FuncExpr = expr.cast();
        if let Some(twin) = twin_of(call, ROWS_TWIN, true) {
            (*call).funcid = twin;
            (*call).funcretset = true;
        }
    }
}

/// The twin named `twin` of the function `call` invokes, if that is a
/// `snowflake_decode` with such a twin beside it (same schema and argument
/// types, same result type, returning a set or not as `retset` says). Absent
/// in a database still at an older version of the extension, so nothing is
/// swapped there. Syscache lookups, only for functions in FROM or under a
/// field selection.
unsafe fn twin_of(call: *mut pg_sys::FuncExpr, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    let funcid = (*call).funcid;
    let name = pg_sys::get_func_name(funcid);
    if name.is_null() || CStr::from_ptr(name) != DECODE {
        return None;
    }
    let mut argtypes: *mut pg_sys::Oid = std::ptr::null_mut();
    let mut nargs: c_int = 0;
    let rettype = pg_sys::get_func_signature(funcid, &mut argtypes, &mut nargs);
    let oid = pg_sys::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as c_int,
        pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(twin.as_ptr()),
        pg_sys::Datum::from(pg_sys::buildoidvector(argtypes, nargs)),
        pg_sys::Datum::from(pg_sys::get_func_namespace(funcid)),
        pg_sys::Datum::from(0),
    );
    (oid != pg_sys::InvalidOid && pg_sys::get_func_retset(oid) == retset && pg_sys::get_func_rettype(oid) == rettype)
        .then_some(oid)
}
