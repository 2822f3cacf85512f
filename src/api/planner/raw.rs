//! The PostgreSQL functions the planner hook calls, declared here without
//! pgrx's guard (see the hook's doc in `api/planner.rs`): an ERROR in any of
//! them unwinds by longjmp through our frames exactly as through C.
//! Signatures as in the headers of 15 to 19; since 16 the walkers are
//! macros over `*_impl` functions, and since 19 the planner takes the
//! EXPLAIN state being built, if any. A room of its own so that every other
//! room of the hook calls PostgreSQL through these and nothing else.

use std::ffi::{c_char, c_int, c_void};

use pgrx::pg_sys::{
    AclMode, AclResult, AttrNumber, Datum, Expr, HeapTuple, List, Node, Oid, ParamListInfo, PlannedStmt, PlannerInfo,
    Query, TimestampTz,
};

pub type Walker = Option<unsafe extern "C-unwind" fn(*mut Node, *mut c_void) -> bool>;

extern "C-unwind" {
    pub fn GetCurrentSubTransactionId() -> pgrx::pg_sys::SubTransactionId;
    pub fn standard_planner(
        parse: *mut Query,
        query_string: *const c_char,
        cursor_options: c_int,
        bound_params: ParamListInfo,
        #[cfg(feature = "pg19")] es: *mut pgrx::pg_sys::ExplainState,
    ) -> *mut PlannedStmt;
    #[cfg_attr(not(feature = "pg15"), link_name = "expression_tree_walker_impl")]
    pub fn expression_tree_walker(node: *mut Node, walker: Walker, context: *mut c_void) -> bool;
    #[cfg_attr(not(feature = "pg15"), link_name = "query_tree_walker_impl")]
    pub fn query_tree_walker(query: *mut Query, walker: Walker, context: *mut c_void, flags: c_int) -> bool;
    pub fn lappend(list: *mut List, datum: *mut c_void) -> *mut List;
    pub fn get_func_name(funcid: Oid) -> *mut c_char;
    pub fn get_namespace_oid(nspname: *const c_char, missing_ok: bool) -> Oid;
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
