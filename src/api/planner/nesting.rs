//! The subtransaction bookkeeping: whether the query being planned had a
//! decoder swapped (only then does `stored.rs` restate its tables' index
//! and partition key expressions), kept right through nested plannings,
//! through ERRORs that longjmp past a planning's return and are caught by a
//! subtransaction, and across transactions. Apart from the hook because
//! the flag's lifetime follows PostgreSQL's (sub)transactions, not the walk.

use std::ffi::c_void;
use std::ptr;

use pgrx::pg_sys;

use super::raw;

/// Whether the query being planned had a decoder swapped: only then are
/// the indexes and partition keys of its tables restated (`stored.rs`).
static mut SWAPPED_IN_PLANNING: bool = false;
/// The flags of the plannings in progress, outermost first, each with the
/// subtransaction it began in. [`end`] puts its caller's flag back when it
/// returns; an ERROR in a nested planning longjmps past that, and a plpgsql
/// EXCEPTION block can catch it while the outer query is still being
/// planned, which then lost its indexes and pruning.
/// The subtransaction's abort puts the flag back instead ([`subxact_ended`]).
/// A fixed array: nothing here may allocate or drop (see the hook's doc);
/// plannings nested deeper are not tracked (their abort leaves the flag as
/// the innermost tracked one set it, which only ever costs an index).
const TRACKED: usize = 32;
static mut PLANNINGS: [(pg_sys::SubTransactionId, bool); TRACKED] = [(0, false); TRACKED];
static mut DEPTH: usize = 0;

/// Registers [`subxact_ended`] and [`xact_ended`]; called once per process
/// from the hook's `install`.
pub(super) unsafe fn install() {
    pg_sys::RegisterSubXactCallback(Some(subxact_ended), ptr::null_mut());
    pg_sys::RegisterXactCallback(Some(xact_ended), ptr::null_mut());
}

/// Whether the query being planned (the innermost planning) had a decoder swapped.
pub(super) unsafe fn swapped_in_planning() -> bool {
    SWAPPED_IN_PLANNING
}

/// What [`end`] puts back when a planning returns: its caller's flag and depth.
/// Plain data (see the hook's doc: nothing with a destructor in its frames).
#[derive(Clone, Copy)]
pub(super) struct Outer {
    swapped: bool,
    depth: usize,
}

/// A planning begins, with `swapped` its query's flag. Planning may plan
/// other queries on the way (SPI in a function folded as a constant): each
/// sees its own answer, and this one's is back after ([`end`]). An ERROR in
/// between longjmps past `end`: see `PLANNINGS`.
pub(super) unsafe fn begin(swapped: bool) -> Outer {
    let outer = SWAPPED_IN_PLANNING;
    let depth = DEPTH;
    if depth < TRACKED {
        PLANNINGS[depth] = (raw::GetCurrentSubTransactionId(), outer);
    }
    DEPTH = depth + 1;
    SWAPPED_IN_PLANNING = swapped;
    Outer { swapped: outer, depth }
}

/// The planning that [`begin`] returned `outer` for has returned.
pub(super) unsafe fn end(outer: Outer) {
    DEPTH = outer.depth;
    SWAPPED_IN_PLANNING = outer.swapped;
}

/// A subtransaction aborted: the plannings that began in it (or in one
/// nested in it) will never return, so the flag is the one of the planning
/// that was in progress before them.
unsafe extern "C-unwind" fn subxact_ended(
    event: pg_sys::SubXactEvent::Type,
    my_subid: pg_sys::SubTransactionId,
    _parent: pg_sys::SubTransactionId,
    _arg: *mut c_void,
) {
    if event != pg_sys::SubXactEvent::SUBXACT_EVENT_ABORT_SUB {
        return;
    }
    while DEPTH > 0 {
        let top = DEPTH - 1;
        if top < TRACKED {
            let (began_in, outer) = PLANNINGS[top];
            if began_in < my_subid {
                break;
            }
            SWAPPED_IN_PLANNING = outer;
        }
        DEPTH = top;
    }
}

/// A transaction ended: no planning is in progress any more, whatever an
/// ERROR caught without a subtransaction left behind.
unsafe extern "C-unwind" fn xact_ended(_event: pg_sys::XactEvent::Type, _arg: *mut c_void) {
    DEPTH = 0;
    SWAPPED_IN_PLANNING = false;
}
