//! How the planner hook walks a tree without a stack of its own: a to-do
//! list ([`Todo`]) that PostgreSQL's walkers fill with a node's direct
//! children ([`queue`]), so however deep the expression, the hook uses a
//! few frames (see the hook's doc in `api/planner.rs`). Every other room of
//! the hook walks with these; nothing here knows what it looks for.

use std::ffi::c_void;
use std::ptr;

use pgrx::pg_sys::{self, Node, NodeTag};

use super::raw;

/// The nodes still to visit: up to [`Todo::NEAR`] on the C stack (a typical
/// query never needs more at once, and then the walk allocates nothing),
/// the rest in a PostgreSQL `List` in the planner's memory context. Nothing
/// here has a destructor (see the hook's doc in `api/planner.rs`).
pub(super) struct Todo {
    near: [*mut Node; Todo::NEAR],
    len: usize,
    spill: *mut pg_sys::List,
}

impl Todo {
    const NEAR: usize = 64;

    pub(super) fn new() -> Todo {
        Todo { near: [ptr::null_mut(); Todo::NEAR], len: 0, spill: ptr::null_mut() }
    }

    pub(super) unsafe fn push(&mut self, node: *mut Node) {
        match self.near.get_mut(self.len) {
            Some(slot) => {
                *slot = node;
                self.len += 1;
            }
            None => self.spill = raw::lappend(self.spill, node.cast()),
        }
    }

    pub(super) unsafe fn pop(&mut self) -> Option<*mut Node> {
        let spill = self.spill;
        if !spill.is_null() && (*spill).length > 0 {
            // Shortening `length` is how PostgreSQL's own list_truncate drops cells.
            (*spill).length -= 1;
            return Some((*(*spill).elements.add((*spill).length as usize)).ptr_value.cast());
        }
        self.len = self.len.checked_sub(1)?;
        self.near.get(self.len).copied()
    }
}

/// Visits every node below `root` (a query: its subqueries, CTEs, sublinks,
/// function arguments; or an index's or partition key's stored
/// expression), depth-first from a to-do list, calling `visit` on each
/// before its children are queued: a query's by `query_tree_walker`, any
/// other's by `expression_tree_walker`, so the C stack stays flat however
/// deep the tree. The arbiter of `ON CONFLICT` is never visited: the
/// planner matches it against unique indexes as the relcache holds them,
/// not through the copies `stored.rs` restates, so an arbiter the hook
/// rewrote would find no index and the INSERT would fail.
#[inline(never)] // its to-do list is gone from the stack before the planner recurses
pub(super) unsafe fn each_node(root: *mut Node, mut visit: impl FnMut(*mut Node)) {
    if root.is_null() {
        return;
    }
    let mut todo = Todo::new();
    let todo_ptr: *mut Todo = ptr::addr_of_mut!(todo);
    (*todo_ptr).push(root);
    while let Some(node) = (*todo_ptr).pop() {
        visit(node);
        match (*node).type_ {
            NodeTag::T_Query => {
                raw::query_tree_walker(node.cast(), Some(queue), todo_ptr.cast(), 0);
            }
            NodeTag::T_OnConflictExpr => {
                let on_conflict: *mut pg_sys::OnConflictExpr = node.cast();
                queue((*on_conflict).onConflictSet.cast(), todo_ptr.cast());
                queue((*on_conflict).onConflictWhere, todo_ptr.cast());
            }
            _ => {
                raw::expression_tree_walker(node, Some(queue), todo_ptr.cast());
            }
        }
    }
}

/// Whether a node can hold no call: constants, columns and parameters (the
/// bulk of a long `IN` list), join-tree references, placeholders and sort
/// clauses are never queued.
fn is_leaf(tag: NodeTag) -> bool {
    matches!(
        tag,
        NodeTag::T_Const
            | NodeTag::T_Var
            | NodeTag::T_Param
            | NodeTag::T_RangeTblRef
            | NodeTag::T_CaseTestExpr
            | NodeTag::T_SortGroupClause
    )
}

/// The walker's callback: queues one child (`context` is the [`Todo`]) and
/// returns false so that the walker goes on to the next child. A list's
/// members are queued at once, saving the walker a call for the list.
pub(super) unsafe extern "C-unwind" fn queue(node: *mut Node, context: *mut c_void) -> bool {
    if node.is_null() {
        return false;
    }
    let todo = context.cast::<Todo>();
    if (*node).type_ == NodeTag::T_List {
        for member in cells::<Node>(node.cast()) {
            if !member.is_null() && !is_leaf((*member).type_) {
                (*todo).push(member);
            }
        }
    } else if !is_leaf((*node).type_) {
        (*todo).push(node);
    }
    false
}

/// Like [`queue`], leaves included: for walks that look for columns.
pub(super) unsafe extern "C-unwind" fn queue_all(node: *mut Node, context: *mut c_void) -> bool {
    if !node.is_null() {
        (*context.cast::<Todo>()).push(node);
    }
    false
}

/// The pointers a `List` holds, in order (an empty iterator for NIL).
pub(super) unsafe fn cells<T>(list: *mut pg_sys::List) -> impl Iterator<Item = *mut T> {
    let (elements, length) = if list.is_null() { (ptr::null_mut(), 0) } else { ((*list).elements, (*list).length) };
    // SAFETY (of the closure): i < length, within the list's cell array.
    (0..length.max(0) as usize).map(move |i| unsafe { (*elements.add(i)).ptr_value.cast::<T>() })
}
