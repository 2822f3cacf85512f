//! IDs as short text for URLs and JSON (core `id_text`): fixed-width base62
//! and Crockford base32, whose text sorts as the IDs do.
//!
//! IMMUTABLE and PARALLEL SAFE: pure functions of their argument, usable in
//! expression indexes, generated columns and parallel plans. STRICT: NULL
//! gives NULL, and PostgreSQL skips the call.

use pgrx::callconv::{BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable};
use pgrx::prelude::*;
use snowflake_id_core::id_text;

use crate::refusal::text_refusal;

/// `id` as 11 base62 symbols (`0-9A-Za-z`): the shortest common URL form,
/// at the one width that holds every bigint, so that text order is ID order.
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_to_base62(id: i64) -> Symbols<11> {
    match id_text::to_base62(id) {
        Ok(symbols) => Symbols(symbols),
        Err(e) => text_refusal(&e, None).raise(),
    }
}

/// `id` as 13 Crockford base32 symbols: read back in any case and without
/// the letters people confuse with digits, so fit to be typed or read aloud.
/// Only digits and capitals: sorted as the IDs under `COLLATE "C"` and under
/// most linguistic collations too (base62 mixes cases, and needs "C").
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_to_base32(id: i64) -> Symbols<13> {
    match id_text::to_base32(id) {
        Ok(symbols) => Symbols(symbols),
        Err(e) => text_refusal(&e, None).raise(),
    }
}

/// The ID base62 `text` stands for; shorter text is read with leading zeros.
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_from_base62(text: &str) -> i64 {
    id_text::from_base62(text).unwrap_or_else(|e| text_refusal(&e, Some(text)).raise())
}

/// The ID Crockford base32 `text` stands for, read as Crockford allows:
/// any case, I and L as 1, O as 0, hyphens between symbols.
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_from_base32(text: &str) -> i64 {
    id_text::from_base32(text).unwrap_or_else(|e| text_refusal(&e, Some(text)).raise())
}

/// An encoded ID returned as `text` straight from the core's fixed-width
/// ASCII symbols: one palloc of the varlena, no Rust `String` on the way
/// (its heap allocation, UTF-8 pushes and free were a fifth of the cost per
/// ID; docs/benchmarks.md section 11). The symbols are ASCII, valid in every
/// server encoding.
pub struct Symbols<const N: usize>([u8; N]);

// SAFETY: the datum returned is a `text` varlena in the caller's memory
// context, as the SQL declares.
unsafe impl<const N: usize> BoxRet for Symbols<N> {
    unsafe fn box_into<'fcx>(self, fcinfo: &mut FcInfo<'fcx>) -> Datum<'fcx> {
        match self.0.as_slice().into_datum() {
            // SAFETY: the datum is returned to the function's caller at once.
            Some(datum) => unsafe { fcinfo.return_raw_datum(datum) },
            None => fcinfo.return_null(),
        }
    }
}

// SAFETY: the datum is a `text` varlena (BoxRet above), as the SQL says.
unsafe impl<const N: usize> SqlTranslatable for Symbols<N> {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(Symbols);
    const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
        pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::External;
    // Never an argument: only what the encoders return.
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("TEXT"));
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("TEXT")));
}
