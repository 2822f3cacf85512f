//! Finding the calls to swap: the walk over a query (its subqueries, CTEs,
//! sublinks, function arguments) or over a stored expression, which puts
//! a twin in place of each call of `snowflake_decode` in a FROM list or
//! under a field selection (why, in the hook's doc in `api/planner.rs`).
//! Which twin, and whether, is `twin.rs`'s to say.

use std::ffi::CStr;

use pgrx::pg_sys::{self, Node, NodeTag};

use super::twin::twin_of;
use super::walk::{cells, each_node};

const ROWS_TWIN: &CStr = c"snowflake_decode_rows";
const FIELDS_TWIN: &CStr = c"snowflake_decode_fields";

/// Swaps the decoder in each FROM list and under each field selection
/// below `root` (a query, or an index's or partition key's stored
/// expression), walked as [`each_node`] walks (the arbiter of `ON CONFLICT`
/// left as written). Returns whether it swapped anything.
pub(super) unsafe fn swap_decoders(root: *mut Node) -> bool {
    let mut swapped = false;
    each_node(root, |node| match (*node).type_ {
        NodeTag::T_Query => swapped |= swap_in_from(node.cast()),
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
    });
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
