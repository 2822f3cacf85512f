//! Decoding in FROM at scan speed.
//!
//! `FROM t, snowflake_decode(t.id) d` puts a function that returns one
//! composite value in FROM. PostgreSQL runs such a function through a
//! tuplestore per outer row (a few microseconds each), unless it is an SQL
//! function that returns a *set*, which the planner inlines into the query
//! like a subselect. `snowflake_decode` cannot return a set, or
//! `(snowflake_decode(id)).ts` in a target list or an aggregate would become
//! a set-returning call. So this planner hook swaps, in FROM only, each call
//! of `snowflake_decode` for its set-returning twin `snowflake_decode_rows`
//! (same arguments, same schema, one row); the planner then inlines it and
//! the form costs what the accessors cost. The results are the same row.

use std::ffi::{c_char, c_int, c_void, CStr};

use pgrx::pg_sys;
use pgrx::prelude::*;

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;

const DECODE: &CStr = c"snowflake_decode";
const TWIN: &CStr = c"snowflake_decode_rows";

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
    visit(parse.cast(), std::ptr::null_mut());
    match PREV_PLANNER {
        Some(prev) => {
            pg_sys::submodules::ffi::pg_guard_ffi_boundary(|| prev(parse, query_string, cursor_options, bound_params))
        }
        None => pg_sys::standard_planner(parse, query_string, cursor_options, bound_params),
    }
}

/// Visits every query in the tree (subqueries, CTEs, sublinks), rewriting
/// each one's range table.
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
    pg_sys::expression_tree_walker(node, Some(visit), context)
}

/// In one query's FROM list, replaces each lone call of `snowflake_decode`
/// (without `WITH ORDINALITY`) by its twin.
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
        if let Some(twin) = twin_of(call) {
            (*call).funcid = twin;
            (*call).funcretset = true;
        }
    }
}

/// The twin of the function `call` invokes, if that is a `snowflake_decode`
/// with a `snowflake_decode_rows` beside it (same schema and argument types,
/// returning a set of the same type). Two syscache lookups, only for
/// functions in FROM.
unsafe fn twin_of(call: *mut pg_sys::FuncExpr) -> Option<pg_sys::Oid> {
    let funcid = (*call).funcid;
    let name = pg_sys::get_func_name(funcid);
    if name.is_null() || CStr::from_ptr(name) != DECODE {
        return None;
    }
    let mut argtypes: *mut pg_sys::Oid = std::ptr::null_mut();
    let mut nargs: c_int = 0;
    let rettype = pg_sys::get_func_signature(funcid, &mut argtypes, &mut nargs);
    let twin = pg_sys::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as c_int,
        pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(TWIN.as_ptr()),
        pg_sys::Datum::from(pg_sys::buildoidvector(argtypes, nargs)),
        pg_sys::Datum::from(pg_sys::get_func_namespace(funcid)),
        pg_sys::Datum::from(0),
    );
    (twin != pg_sys::InvalidOid && pg_sys::get_func_retset(twin) && pg_sys::get_func_rettype(twin) == rettype)
        .then_some(twin)
}
