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
//!   no pgrx guard, and every PostgreSQL function it calls is declared here
//!   without pgrx's wrapper (`raw`). An ERROR raised in the walk, in
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

use std::ffi::{c_char, c_int, c_void, CStr};
use std::ptr;

use pgrx::pg_sys::{self, Node, NodeTag};

static mut PREV_PLANNER: pg_sys::planner_hook_type = None;
static mut PREV_RELATION_INFO: pg_sys::get_relation_info_hook_type = None;
/// Whether the query being planned had a decoder swapped: only then are
/// the indexes and partition keys of its tables restated ([`relation_info`]).
static mut SWAPPED_IN_PLANNING: bool = false;
/// The flags of the plannings in progress, outermost first, each with the
/// subtransaction it began in. `plan` puts its caller's flag back when it
/// returns; an ERROR in a nested planning longjmps past that, and a plpgsql
/// EXCEPTION block can catch it while the outer query is still being
/// planned, which then lost its indexes and pruning (helper-16's review).
/// The subtransaction's abort puts the flag back instead ([`subxact_ended`]).
/// A fixed array: nothing here may allocate or drop (see the module's doc);
/// plannings nested deeper are not tracked (their abort leaves the flag as
/// the innermost tracked one set it, which only ever costs an index).
const TRACKED: usize = 32;
static mut PLANNINGS: [(pg_sys::SubTransactionId, bool); TRACKED] = [(0, false); TRACKED];
static mut DEPTH: usize = 0;

const DECODE: &CStr = c"snowflake_decode";
const ROWS_TWIN: &CStr = c"snowflake_decode_rows";
const FIELDS_TWIN: &CStr = c"snowflake_decode_fields";

/// The PostgreSQL functions this module calls, declared without pgrx's
/// guard (see the module's doc): an ERROR in any of them unwinds by longjmp
/// through our frames exactly as through C. Signatures as in the headers of
/// 15 to 18; since 16 the walkers are macros over `*_impl` functions.
mod raw {
    use std::ffi::{c_char, c_int, c_void};

    use pgrx::pg_sys::{
        AclMode, AclResult, AttrNumber, Datum, Expr, HeapTuple, List, Node, Oid, ParamListInfo, PlannedStmt,
        PlannerInfo, Query, TimestampTz,
    };

    pub type Walker = Option<unsafe extern "C-unwind" fn(*mut Node, *mut c_void) -> bool>;

    extern "C-unwind" {
        pub fn GetCurrentSubTransactionId() -> pgrx::pg_sys::SubTransactionId;
        pub fn standard_planner(
            parse: *mut Query,
            query_string: *const c_char,
            cursor_options: c_int,
            bound_params: ParamListInfo,
        ) -> *mut PlannedStmt;
        #[cfg_attr(not(feature = "pg15"), link_name = "expression_tree_walker_impl")]
        pub fn expression_tree_walker(node: *mut Node, walker: Walker, context: *mut c_void) -> bool;
        #[cfg_attr(not(feature = "pg15"), link_name = "query_tree_walker_impl")]
        pub fn query_tree_walker(query: *mut Query, walker: Walker, context: *mut c_void, flags: c_int) -> bool;
        pub fn lappend(list: *mut List, datum: *mut c_void) -> *mut List;
        pub fn get_func_name(funcid: Oid) -> *mut c_char;
        pub fn get_func_namespace(funcid: Oid) -> Oid;
        pub fn get_func_signature(funcid: Oid, argtypes: *mut *mut Oid, nargs: *mut c_int) -> Oid;
        pub fn get_func_rettype(funcid: Oid) -> Oid;
        pub fn get_func_retset(funcid: Oid) -> bool;
        pub fn buildoidvector(oids: *const Oid, n: c_int) -> *mut pgrx::pg_sys::oidvector;
        pub fn getExtensionOfObject(class_id: Oid, object_id: Oid) -> Oid;
        pub fn GetUserId() -> Oid;
        pub fn GetCurrentTransactionStartTimestamp() -> TimestampTz;
        #[cfg(feature = "pg15")]
        pub fn pg_proc_aclcheck(proc_oid: Oid, roleid: Oid, mode: AclMode) -> AclResult::Type;
        #[cfg(not(feature = "pg15"))]
        pub fn object_aclcheck(classid: Oid, objectid: Oid, roleid: Oid, mode: AclMode) -> AclResult::Type;
        pub fn CacheRegisterSyscacheCallback(
            cacheid: c_int,
            func: Option<unsafe extern "C-unwind" fn(Datum, c_int, u32)>,
            arg: Datum,
        );
        pub fn SearchSysCache1(cache_id: c_int, key1: Datum) -> HeapTuple;
        pub fn SysCacheGetAttr(cache_id: c_int, tuple: HeapTuple, attnum: AttrNumber, is_null: *mut bool) -> Datum;
        pub fn ReleaseSysCache(tuple: HeapTuple);
        pub fn text_to_cstring(t: *const pgrx::pg_sys::text) -> *mut c_char;
        pub fn stringToNode(s: *const c_char) -> *mut c_void;
        pub fn eval_const_expressions(root: *mut PlannerInfo, node: *mut Node) -> *mut Node;
        pub fn canonicalize_qual(qual: *mut Expr, is_check: bool) -> *mut Expr;
        pub fn make_ands_implicit(clause: *mut Expr) -> *mut List;
        pub fn fix_opfuncids(node: *mut Node);
        pub fn ChangeVarNodes(node: *mut Node, old_varno: c_int, new_varno: c_int, sublevels_up: c_int);
        pub fn contain_volatile_functions(clause: *mut Node) -> bool;
        pub fn GetSysCacheOid(
            cache_id: c_int,
            oidcol: AttrNumber,
            key1: Datum,
            key2: Datum,
            key3: Datum,
            key4: Datum,
        ) -> Oid;
    }
}

/// Installs the hook; called from `_PG_init` in every process that loads the
/// library (preloaded or not: decoding needs no shared memory).
pub fn install() {
    // SAFETY: _PG_init runs once per process, before any planning.
    unsafe {
        PREV_PLANNER = pg_sys::planner_hook;
        pg_sys::planner_hook = Some(plan);
        PREV_RELATION_INFO = pg_sys::get_relation_info_hook;
        pg_sys::get_relation_info_hook = Some(relation_info);
        pg_sys::RegisterSubXactCallback(Some(subxact_ended), ptr::null_mut());
        pg_sys::RegisterXactCallback(Some(xact_ended), ptr::null_mut());
    }
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

/// The hook. Deliberately not `#[pg_guard]` (see the module's doc).
unsafe extern "C-unwind" fn plan(
    parse: *mut pg_sys::Query,
    query_string: *const c_char,
    cursor_options: c_int,
    bound_params: pg_sys::ParamListInfo,
) -> *mut pg_sys::PlannedStmt {
    let swapped = swap_decoders(parse.cast());
    // Planning may plan other queries on the way (SPI in a function folded
    // as a constant): each sees its own answer, and this one's is back after.
    // An ERROR in between longjmps past the restore below: see `PLANNINGS`.
    let outer = SWAPPED_IN_PLANNING;
    let depth = DEPTH;
    if depth < TRACKED {
        PLANNINGS[depth] = (raw::GetCurrentSubTransactionId(), outer);
    }
    DEPTH = depth + 1;
    SWAPPED_IN_PLANNING = swapped;
    let planned = match PREV_PLANNER {
        Some(prev) => prev(parse, query_string, cursor_options, bound_params),
        None => raw::standard_planner(parse, query_string, cursor_options, bound_params),
    };
    DEPTH = depth;
    SWAPPED_IN_PLANNING = outer;
    if swapped && !planned.is_null() {
        // The swap was allowed for this user (see `twin_of`): a cached plan
        // must be made again for another, as for row-level security.
        (*planned).dependsOnRole = true;
    }
    planned
}

/// Visits every node below `root` (a query: its subqueries, CTEs, sublinks,
/// function arguments; or an index's or partition key's stored expression),
/// swapping the decoder in each FROM list and under each field selection.
/// Depth-first from a to-do list ([`Todo`]): PostgreSQL's walkers only queue
/// a node's direct children, so the C stack stays flat. Returns whether it
/// swapped anything.
///
/// The arbiter of `ON CONFLICT` is left as written: the planner matches it
/// against unique indexes as the relcache holds them, not through
/// [`relation_info`], so a swapped arbiter would find no index and the
/// INSERT would fail.
#[inline(never)] // its to-do list is gone from the stack before the planner recurses
unsafe fn swap_decoders(root: *mut Node) -> bool {
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

/// Whether a call of `snowflake_decode` gains from its twin: only when its
/// arguments read a row (a column, of this query or an outer one) and the
/// planner will inline the twin (no volatile function, no subquery in them:
/// PostgreSQL inlines neither form then, and both cost the same).
///
/// A call on constants gains nothing, since the planner folds it before the
/// first row either way. Leaving it as written keeps what a user sees the
/// same: an error the folding raises (a negative ID, a bad layout) then
/// names `snowflake_decode` in its CONTEXT ("SQL function ... during
/// inlining"), as without the hook, not the twin. A twin that runs without
/// being inlined would be named too, hence the second condition.
unsafe fn worth_swapping(call: *mut pg_sys::FuncExpr) -> bool {
    let args: *mut Node = (*call).args.cast();
    if args.is_null() {
        return false;
    }
    let mut reads_a_row = false;
    let mut todo = Todo::new();
    let todo_ptr: *mut Todo = ptr::addr_of_mut!(todo);
    (*todo_ptr).push(args);
    while let Some(node) = (*todo_ptr).pop() {
        match (*node).type_ {
            NodeTag::T_Var => reads_a_row = true,
            NodeTag::T_SubLink | NodeTag::T_Query => return false,
            _ => {
                raw::expression_tree_walker(node, Some(queue_all), todo_ptr.cast());
            }
        }
    }
    reads_a_row && !raw::contain_volatile_functions(args)
}

/// The nodes still to visit: up to [`Todo::NEAR`] on the C stack (a typical
/// query never needs more at once, and then the walk allocates nothing),
/// the rest in a PostgreSQL `List` in the planner's memory context. Nothing
/// here has a destructor (see the module's doc).
struct Todo {
    near: [*mut Node; Todo::NEAR],
    len: usize,
    spill: *mut pg_sys::List,
}

impl Todo {
    const NEAR: usize = 64;

    fn new() -> Todo {
        Todo { near: [ptr::null_mut(); Todo::NEAR], len: 0, spill: ptr::null_mut() }
    }

    unsafe fn push(&mut self, node: *mut Node) {
        match self.near.get_mut(self.len) {
            Some(slot) => {
                *slot = node;
                self.len += 1;
            }
            None => self.spill = raw::lappend(self.spill, node.cast()),
        }
    }

    unsafe fn pop(&mut self) -> Option<*mut Node> {
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
unsafe extern "C-unwind" fn queue(node: *mut Node, context: *mut c_void) -> bool {
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
unsafe extern "C-unwind" fn queue_all(node: *mut Node, context: *mut c_void) -> bool {
    if !node.is_null() {
        (*context.cast::<Todo>()).push(node);
    }
    false
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

/// The pointers a `List` holds, in order (an empty iterator for NIL).
unsafe fn cells<T>(list: *mut pg_sys::List) -> impl Iterator<Item = *mut T> {
    let (elements, length) = if list.is_null() { (ptr::null_mut(), 0) } else { ((*list).elements, (*list).length) };
    // SAFETY (of the closure): i < length, within the list's cell array.
    (0..length.max(0) as usize).map(move |i| unsafe { (*elements.add(i)).ptr_value.cast::<T>() })
}

/// The twin named `twin` of the function `call` invokes, if that is a
/// `snowflake_decode` with such a twin beside it (same schema and argument
/// types, same result type, returning a set or not as `retset` says) and
/// both belong to one extension: a function of a user's that happens to be
/// named like ours is never swapped, nor ours for a twin someone planted in a
/// schema others may create in (a database at an older version of the
/// extension has no twins of its own). The current user must be allowed to
/// execute both, so privileges stay those of the function the query names.
/// Lookups only for functions named `snowflake_decode` in FROM or under a
/// field selection; the twin is remembered for the rest of the transaction,
/// or until `pg_proc` changes. The plan then depends on the user (`plan`).
unsafe fn twin_of(call: *mut pg_sys::FuncExpr, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    let funcid = (*call).funcid;
    let name = raw::get_func_name(funcid);
    if name.is_null() || CStr::from_ptr(name) != DECODE || !worth_swapping(call) {
        return None;
    }
    let twin = remembered_twin(funcid, twin, retset)?;
    (may_execute(funcid) && may_execute(twin)).then_some(twin)
}

/// Counts the `pg_proc` invalidations this backend has received: a
/// remembered twin is good while the count it was found at is current.
static mut PROC_CHANGES: u64 = 1;
static mut CALLBACK_REGISTERED: bool = false;

/// Twins found in this backend: (`snowflake_decode`'s OID, `retset`, the
/// twin or `InvalidOid`), all found at `TWINS_AT` in the transaction that
/// started at `TWINS_TRANSACTION`. A handful at most: one
/// decoder per schema the extension was ever created in.
static mut TWINS: [(pg_sys::Oid, bool, pg_sys::Oid); 8] = [(pg_sys::InvalidOid, false, pg_sys::InvalidOid); 8];
static mut TWINS_LEN: usize = 0;
static mut TWINS_AT: u64 = 0;
static mut TWINS_TRANSACTION: pg_sys::TimestampTz = 0;

unsafe fn remembered_twin(funcid: pg_sys::Oid, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    if !CALLBACK_REGISTERED {
        // In the backend, not in _PG_init: the postmaster has no caches.
        raw::CacheRegisterSyscacheCallback(
            pg_sys::SysCacheIdentifier::PROCOID as c_int,
            Some(proc_changed),
            pg_sys::Datum::from(0),
        );
        CALLBACK_REGISTERED = true;
    }
    let twins = &mut *ptr::addr_of_mut!(TWINS);
    // Membership changes (ALTER EXTENSION ... ADD/DROP) touch pg_depend, not
    // pg_proc: what was found holds for one transaction at most.
    let transaction = raw::GetCurrentTransactionStartTimestamp();
    if TWINS_AT != PROC_CHANGES || TWINS_TRANSACTION != transaction {
        TWINS_LEN = 0;
        TWINS_AT = PROC_CHANGES;
        TWINS_TRANSACTION = transaction;
    }
    if let Some(&(_, _, found)) = twins.iter().take(TWINS_LEN).find(|(f, r, _)| *f == funcid && *r == retset) {
        return (found != pg_sys::InvalidOid).then_some(found);
    }
    let at = PROC_CHANGES;
    let found = find_twin(funcid, twin, retset).unwrap_or(pg_sys::InvalidOid);
    // Not kept if pg_proc changed during the lookup itself.
    if at == PROC_CHANGES && TWINS_AT == at {
        if TWINS_LEN == twins.len() {
            TWINS_LEN = 0;
        }
        if let Some(slot) = twins.get_mut(TWINS_LEN) {
            *slot = (funcid, retset, found);
            TWINS_LEN += 1;
        }
    }
    (found != pg_sys::InvalidOid).then_some(found)
}

/// Called by PostgreSQL for every invalidation of `pg_proc` entries (also
/// for a full cache reset), in this backend's transaction or another's.
unsafe extern "C-unwind" fn proc_changed(_arg: pg_sys::Datum, _cache: c_int, _hash: u32) {
    PROC_CHANGES = PROC_CHANGES.wrapping_add(1).max(1);
}

unsafe fn find_twin(funcid: pg_sys::Oid, twin: &CStr, retset: bool) -> Option<pg_sys::Oid> {
    let mut argtypes: *mut pg_sys::Oid = ptr::null_mut();
    let mut nargs: c_int = 0;
    let rettype = raw::get_func_signature(funcid, &mut argtypes, &mut nargs);
    let oid = raw::GetSysCacheOid(
        pg_sys::SysCacheIdentifier::PROCNAMEARGSNSP as c_int,
        pg_sys::Anum_pg_proc_oid as pg_sys::AttrNumber,
        pg_sys::Datum::from(twin.as_ptr()),
        pg_sys::Datum::from(raw::buildoidvector(argtypes, nargs)),
        pg_sys::Datum::from(raw::get_func_namespace(funcid)),
        pg_sys::Datum::from(0),
    );
    if oid == pg_sys::InvalidOid || raw::get_func_retset(oid) != retset || raw::get_func_rettype(oid) != rettype {
        return None;
    }
    let extension = raw::getExtensionOfObject(pg_sys::ProcedureRelationId, funcid);
    (extension != pg_sys::InvalidOid && raw::getExtensionOfObject(pg_sys::ProcedureRelationId, oid) == extension)
        .then_some(oid)
}

/// Whether the current user may execute function `funcid`, as the planner
/// asks before it inlines one.
unsafe fn may_execute(funcid: pg_sys::Oid) -> bool {
    let mode = pg_sys::ACL_EXECUTE as pg_sys::AclMode;
    #[cfg(feature = "pg15")]
    let result = raw::pg_proc_aclcheck(funcid, raw::GetUserId(), mode);
    #[cfg(not(feature = "pg15"))]
    let result = raw::object_aclcheck(pg_sys::ProcedureRelationId, funcid, raw::GetUserId(), mode);
    result == pg_sys::AclResult::ACLCHECK_OK
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
/// as the planner opens it. Written as the planner hook is (see the module's doc).
unsafe extern "C-unwind" fn relation_info(
    root: *mut pg_sys::PlannerInfo,
    relation: pg_sys::Oid,
    inhparent: bool,
    rel: *mut pg_sys::RelOptInfo,
) {
    if let Some(prev) = PREV_RELATION_INFO {
        prev(root, relation, inhparent, rel);
    }
    if !SWAPPED_IN_PLANNING || rel.is_null() {
        return;
    }
    let varno = (*rel).relid as c_int;
    for index in cells::<pg_sys::IndexOptInfo>((*rel).indexlist) {
        restate_index(index, varno);
    }
    if !(*rel).part_scheme.is_null() && !(*rel).partexprs.is_null() {
        restate_partition_key(rel, relation, varno);
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
