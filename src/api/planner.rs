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
//! Every query of every database of a server that loads the library passes
//! through this hook, so it must be invisible to the rest of PostgreSQL:
//!
//! * **Errors pass through untouched.** The hook is written as a C hook is:
//!   no pgrx guard, and every PostgreSQL function it calls is declared
//!   without pgrx's wrapper (`raw.rs`). An ERROR raised in the walk, in
//!   `standard_planner` or in another extension's hook longjmps straight past
//!   it to PostgreSQL's own handler with every field intact (context lines,
//!   the message in the database's encoding, schema/table/datatype/constraint
//!   names). pgrx's guard would catch it, turn it into a Rust panic and raise
//!   a copy after the error context callbacks are gone. For the longjmp to be
//!   sound, no value with a destructor is ever alive in these frames, and
//!   nothing here can panic.
//! * **No stack depth of its own.** The walk is a loop over a to-do list,
//!   not a recursion: PostgreSQL's walker is asked only for a node's direct
//!   children, so however deep the expression, the hook uses a few frames.
//! * **No catalog access for queries that do not decode.** No "is the
//!   extension installed" lookup (0.3.0 locked `pg_extension` at each
//!   session's first query): a function is looked up only when the query
//!   calls one in FROM or under a field selection, and then by the OID the
//!   parser has just resolved (a syscache hit). Only a call of a function
//!   named `snowflake_decode` there makes the hook look up its twin and the
//!   extension both belong to (`pg_depend`, under an AccessShareLock), once
//!   per transaction.
//! * **Cheap on big trees.** Constants, variables and parameters (the bulk of
//!   a long `IN` list) are never queued.
//!
//! The rooms: this file is the hook itself (installing it, and one planning
//! from start to end); `find.rs` walks a query for the calls to swap and
//! swaps them; `twin.rs` says which twin, and whether this call and this
//! user may have it; `stored.rs` restates the stored expressions of indexes
//! and partition keys so that a swapped query still matches them;
//! `nesting.rs` keeps, through nested plannings and aborted
//! subtransactions, whether the query being planned had a swap; `walk.rs`
//! is the stack-free walk they all use and `raw.rs` the PostgreSQL
//! functions they call.

use std::ffi::{c_char, c_int};

use pgrx::pg_sys;

mod accessor;
mod find;
mod nesting;
mod raw;
mod stored;
mod twin;
mod walk;

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;

/// Installs the hook; called from `_PG_init` in every process that loads the
/// library (preloaded or not: decoding needs no shared memory).
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any planning.
    unsafe {
        PREV_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
        stored::install();
        nesting::install();
    }
}

/// The hook. Deliberately not `#[pg_guard]` (see the module's doc).
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
    #[cfg(feature = "pg19")] es: *mut pg_sys::ExplainState,
) -> *mut pg_sys::PlannedStmt {
    let swapped = find::swap_decoders(parse.cast());
    if swapped {
        // The twins call the accessors of snowflake_id_internal: the
        // query's own accessor calls go there too (see `accessor`).
        accessor::to_internal(parse.cast());
    }
    // Planning may plan other queries on the way: see `nesting::begin`.
    let outer = nesting::begin(swapped);
    let planned = match PREV_PLANNER {
        #[cfg(not(feature = "pg19"))]
        Some(prev) => prev(parse, query_string, cursor_options, bound_params),
        #[cfg(not(feature = "pg19"))]
        None => raw::standard_planner(parse, query_string, cursor_options, bound_params),
        #[cfg(feature = "pg19")]
        Some(prev) => prev(parse, query_string, cursor_options, bound_params, es),
        #[cfg(feature = "pg19")]
        None => raw::standard_planner(parse, query_string, cursor_options, bound_params, es),
    };
    nesting::end(outer);
    if swapped && !planned.is_null() {
        // The swap was allowed for this user (see `twin_of`): a cached plan
        // must be made again for another, as for row-level security.
        (*planned).dependsOnRole = true;
    }
    planned
}
