//! The stored-expression twin: indexes and partition keys whose stored
//! expression selects a field of `snowflake_decode`, restated for a query
//! that had a decoder swapped so that the planner still matches them
//! (index scans, partition pruning). PostgreSQL's `get_relation_info_hook`
//! (`build_simple_rel_hook` since 19, which replaced it and runs after the
//! same catalog reads) lives here; it does something only when `nesting.rs`
//! says the query being planned had a swap.

use std::ffi::{c_int, c_void};
use std::ptr;

use pgrx::pg_sys::{self, Node, NodeTag};

use super::accessor;
use super::find::swap_decoders;
use super::nesting;
use super::raw;
use super::walk::{cells, queue, Todo};

#[cfg(not(feature = "pg19"))]
static mut PREV_RELATION_INFO: pg_sys::get_relation_info_hook_type = None;
#[cfg(feature = "pg19")]
static mut PREV_SIMPLE_REL: pg_sys::build_simple_rel_hook_type = None;

/// Installs [`relation_info`]; called once per process from the hook's `install`.
pub(super) unsafe fn install() {
    #[cfg(not(feature = "pg19"))]
    {
        PREV_RELATION_INFO = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
    }
    #[cfg(feature = "pg19")]
    {
        PREV_SIMPLE_REL = pg_sys::build_simple_rel_hook;
        pg_sys::build_simple_rel_hook = Some(simple_rel);
    }
}

// Indexes and partition keys. The planner matches a query's expressions
// against an index's or a partition key's stored expression as the relcache
// holds it: inlined and folded, `(CASE WHEN id IS NULL ... ELSE ROW(...)
// END).ts` for a field of `snowflake_decode`, which it cannot reduce. The
// query's copy, swapped, is reduced to the accessor, `snowflake_timestamp(id,
// ...)`, and the two would no longer be equal: no index scan, no partition
// pruning. So when a query had a decoder swapped, the planner's copy of each
// of its tables' index expressions, index predicates and partition key
// expressions that select a field is read again from the catalog and put
// through the same swap and the same folding as the relcache's: the two
// sides meet at the accessor. The index holds the same values either way (a
// field of `snowflake_decode` is the field of its twin, NULL for NULL), and
// what the executor computes for new rows is untouched.

/// PostgreSQL's `get_relation_info_hook`, called for each table of a query
/// as the planner opens it. Written as the planner hook is (see the hook's doc in `api/planner.rs`).
#[cfg(not(feature = "pg19"))]
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relation: pg_sys::Oid,
    inhparent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    if let Some(prev) = PREV_RELATION_INFO {
        prev(root, relation, inhparent, rel);
    }
    restate(rel, relation);
}

/// PostgreSQL 19's `build_simple_rel_hook`, called for each relation of a
/// query once the planner has read its indexes and partition key from the
/// catalog; only tables have stored expressions to restate.
#[cfg(feature = "pg19")]
unsafe extern "C-unwind" fn simple_rel(
    root: *mut pg_sys::PlannerInfo,
    rel: *mut pg_sys::RelOptInfo,
    rte: *mut pg_sys::RangeTblEntry,
) {
    if let Some(prev) = PREV_SIMPLE_REL {
        prev(root, rel, rte);
    }
    if !rte.is_null() && (*rte).rtekind == pg_sys::RTEKind::RTE_RELATION {
        restate(rel, (*rte).relid);
    }
}

/// The stored expressions of table `relation`'s indexes and partition key,
/// restated in the planner's copy `rel` when the query had a swap.
unsafe fn restate(rel: *mut pg_sys::RelOptInfo, relation: pg_sys::Oid) {
    if !nesting::swapped_in_planning() || rel.is_null() {
        return;
    }
    let varno = (*rel).relid as c_int;
    for index in cells::<pg_sys::IndexOptInfo>((*rel).indexlist) {
        restate_index(index, varno);
        // The planner's own copies (the target list holds the same nodes).
        accessor::to_internal((*index).indexprs.cast());
        accessor::to_internal((*index).indpred.cast());
    }
    if !(*rel).part_scheme.is_null() && !(*rel).partexprs.is_null() {
        restate_partition_key(rel, relation, varno);
        let natts =
            usize::try_from((*(*rel).part_scheme).partnatts).unwrap_or(0).min(pg_sys::PARTITION_MAX_KEYS as usize);
        for i in 0..natts {
            accessor::to_internal((*(*rel).partexprs.add(i)).cast());
        }
    }
}

/// The index's expressions and predicate with the swap applied, as
/// `RelationGetIndexExpressions` and `RelationGetIndexPredicate` make them.
/// An index the catalog does not know (a hypothetical one that another
/// extension's hook added) is left alone.
unsafe fn restate_index(index: *mut pg_sys::IndexOptInfo, varno: c_int) {
    let cache = pg_sys::SysCacheIdentifier::INDEXRELID as c_int;
    if selects_a_field((*index).indexprs.cast()) {
        if let Some(exprs) = stored_and_swapped(cache, (*index).indexoid, pg_sys::Anum_pg_index_indexprs) {
            let exprs = raw::eval_const_expressions(ptr::null_mut(), exprs);
            raw::fix_opfuncids(exprs);
            if varno != 1 {
                raw::ChangeVarNodes(exprs, 1, varno, 0);
            }
            (*index).indexprs = exprs.cast();
            // The target list the planner built holds the same expressions,
            // one per expression column, in order (build_index_tlist).
            let mut next = cells::<pg_sys::Expr>(exprs.cast());
            let ncolumns = usize::try_from((*index).ncolumns).unwrap_or(0);
            for (i, entry) in cells::<pg_sys::TargetEntry>((*index).indextlist).enumerate().take(ncolumns) {
                if *(*index).indexkeys.add(i) == 0 {
                    if let Some(expr) = next.next() {
                        (*entry).expr = expr;
                    }
                }
            }
        }
    }
    if selects_a_field((*index).indpred.cast()) {
        if let Some(pred) = stored_and_swapped(cache, (*index).indexoid, pg_sys::Anum_pg_index_indpred) {
            let pred = raw::eval_const_expressions(ptr::null_mut(), pred);
            let pred = raw::make_ands_implicit(raw::canonicalize_qual(pred.cast(), false));
            raw::fix_opfuncids(pred.cast());
            if varno != 1 {
                raw::ChangeVarNodes(pred.cast(), 1, varno, 0);
            }
            (*index).indpred = pred;
        }
    }
}

/// The partition key's expressions with the swap applied, as
/// `RelationBuildPartitionKey` makes them, one list per key column as
/// `set_baserel_partition_key_exprs` lays them out.
unsafe fn restate_partition_key(rel: *mut pg_sys::RelOptInfo, relation: pg_sys::Oid, varno: c_int) {
    const PARTATTRS: u32 = 5; // Anum_pg_partitioned_table_partattrs
    const PARTEXPRS: u32 = 8; // Anum_pg_partitioned_table_partexprs
    let natts = usize::try_from((*(*rel).part_scheme).partnatts).unwrap_or(0).min(pg_sys::PARTITION_MAX_KEYS as usize);
    if !(0..natts).any(|i| selects_a_field((*(*rel).partexprs.add(i)).cast())) {
        return;
    }
    let cache = pg_sys::SysCacheIdentifier::PARTRELID as c_int;
    // Which key columns are expressions: partattrs 0. Copied out before the
    // tuple is released.
    let mut attrs = [1i16; pg_sys::PARTITION_MAX_KEYS as usize];
    let tuple = raw::SearchSysCache1(cache, pg_sys::Datum::from(relation));
    if tuple.is_null() {
        return;
    }
    let mut is_null = false;
    let datum = raw::SysCacheGetAttr(cache, tuple, PARTATTRS as pg_sys::AttrNumber, &mut is_null);
    if !is_null {
        // int2vector is stored plain (never a short header), as GETSTRUCT reads it.
        let vector = datum.cast_mut_ptr::<pg_sys::int2vector>();
        let n = usize::try_from((*vector).dim1).unwrap_or(0).min(natts);
        let values = (*vector).values.as_ptr();
        for (i, slot) in attrs.iter_mut().enumerate().take(n) {
            *slot = *values.add(i);
        }
    }
    raw::ReleaseSysCache(tuple);
    if is_null {
        return;
    }
    let Some(exprs) = stored_and_swapped(cache, relation, PARTEXPRS) else { return };
    let exprs = raw::eval_const_expressions(ptr::null_mut(), exprs);
    raw::fix_opfuncids(exprs);
    if varno != 1 {
        raw::ChangeVarNodes(exprs, 1, varno, 0);
    }
    let mut next = cells::<c_void>(exprs.cast());
    for (i, attr) in attrs.iter().enumerate().take(natts) {
        if *attr == 0 {
            if let Some(expr) = next.next() {
                *(*rel).partexprs.add(i) = raw::lappend(ptr::null_mut(), expr);
            }
        }
    }
}

/// Whether `node` holds a field selection anywhere: the cheap test before
/// any catalog lookup (a stored expression rarely has one).
unsafe fn selects_a_field(node: *mut Node) -> bool {
    if node.is_null() {
        return false;
    }
    let mut todo = Todo::new();
    let todo_ptr: *mut Todo = ptr::addr_of_mut!(todo);
    (*todo_ptr).push(node);
    while let Some(node) = (*todo_ptr).pop() {
        if (*node).type_ == NodeTag::T_FieldSelect {
            return true;
        }
        raw::expression_tree_walker(node, Some(queue), todo_ptr.cast());
    }
    false
}

/// The expression stored in column `attnum` of the catalog row `cache`
/// finds for `oid`, as written (not folded), if the swap changed it.
unsafe fn stored_and_swapped(cache: c_int, oid: pg_sys::Oid, attnum: u32) -> Option<*mut Node> {
    let tuple = raw::SearchSysCache1(cache, pg_sys::Datum::from(oid));
    if tuple.is_null() {
        return None;
    }
    let mut is_null = false;
    let datum = raw::SysCacheGetAttr(cache, tuple, attnum as pg_sys::AttrNumber, &mut is_null);
    // A copy (detoasted) in the planner's memory, before the tuple goes back.
    let text = if is_null { ptr::null_mut() } else { raw::text_to_cstring(datum.cast_mut_ptr()) };
    raw::ReleaseSysCache(tuple);
    if text.is_null() {
        return None;
    }
    let stored: *mut Node = raw::stringToNode(text).cast();
    (!stored.is_null() && swap_decoders(stored)).then_some(stored)
}
