//! Finding the calls to swap: the walk over a query (its subqueries, CTEs,
//! sublinks, function arguments) or over a stored expression, which puts
//! a twin in place of each call of `snowflake_decode` in a FROM list or
//! under a field selection (why, in the hook's doc in `api/planner.rs`).
//! Which twin, and whether, is `twin.rs`'s to say.

use std::ffi::CStr;
use std::ptr;

use pgrx::pg_sys::{self, Node, NodeTag};

use super::raw;
use super::twin::twin_of;
use super::walk::{cells, queue, Todo};

const ROWS_TWIN: &CStr = c"snowflake_decode_rows";
const FIELDS_TWIN: &CStr = c"snowflake_decode_fields";

/// Visits every node below `root` (a query: its subqueries, CTEs, sublinks,
/// function arguments; or an index's or partition key's stored expression),
/// swapping the decoder in each FROM list and under each field selection.
/// Depth-first from a to-do list ([`Todo`]): PostgreSQL's walkers only queue
/// a node's direct children, so the C stack stays flat. Returns whether it
/// swapped anything.
///
/// The arbiter of `ON CONFLICT` is left as written: the planner matches it
/// against unique indexes as the relcache holds them, not through
/// `stored.rs`, so a swapped arbiter would find no index and the
/// INSERT would fail.
#[inline(never)] // its to-do list is gone from the stack before the planner recurses
pub(super) unsafe fn swap_decoders(root: *mut Node) -> bool {
    let mut swapped = false;
    let mut todo = Todo::new();
    let todo_ptr: *mut Todo = ptr::addr_of_mut!(todo);
    (*todo_ptr).push(root);
    while let Some(node) = (*todo_ptr).pop() {
        match (*node).type_ {
            NodeTag::T_Query => {
                let query: *mut pg_sys::Query = node.cast();
                swapped |= swap_in_from(query);
                raw::query_tree_walker(query, Some(queue), todo_ptr.cast(), 0);
                continue;
            }
            NodeTag::T_OnConflictExpr => {
                let on_conflict: *mut pg_sys::OnConflictExpr = node.cast();
                queue((*on_conflict).onConflictSet.cast(), todo_ptr.cast());
                queue((*on_conflict).onConflictWhere, todo_ptr.cast());
                continue;
            }
            NodeTag::T_FieldSelect => {
                let arg: *mut Node = (*node.cast::<pg_sys::FieldSelect>()).arg.cast();
                if !arg.is_null() && (*arg).type_ == NodeTag::T_FuncExpr {
                    let call: *mut pg_sys::FuncExpr = arg.cast();
                    if let Some(twin) = twin_of(call, FIELDS_TWIN, false) {
                        (*call).funcid = twin;
                        swapped = true;
                    }
                }
            }
            _ => {}
        }
        raw::expression_tree_walker(node, Some(queue), todo_ptr.cast());
    }
    swapped
}

/// In one query's FROM list, replaces each lone call of `snowflake_decode`
/// (without `WITH ORDINALITY`) by its set-returning twin; returns whether
/// it did.
unsafe fn swap_in_from(query: *mut pg_sys::Query) -> bool {
    let mut swapped = false;
    for rte in cells::<pg_sys::RangeTblEntry>((*query).rtable) {
        if (*rte).rtekind != pg_sys::RTEKind::RTE_FUNCTION || (*rte).funcordinality {
            continue;
        }
        let functions = (*rte).functions;
        if functions.is_null() || (*functions).length != 1 {
            continue;
        }
        let Some(rtfunc) = cells::<pg_sys::RangeTblFunction>(functions).next() else { continue };
        let expr = (*rtfunc).funcexpr;
        if expr.is_null() || (*expr).type_ != NodeTag::T_FuncExpr {
            continue;
        }
        let call: *mut pg_sys::FuncExpr = expr.cast();
        if let Some(twin) = twin_of(call, ROWS_TWIN, true) {
            (*call).funcid = twin;
            (*call).funcretset = true;
            swapped = true;
        }
    }
    swapped
}
