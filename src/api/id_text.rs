//! IDs as short text for URLs and JSON (core `id_text`): fixed-width base62
//! and Crockford base32, whose text sorts as the IDs do.
//!
//! IMMUTABLE and PARALLEL SAFE: pure functions of their argument, usable in
//! expression indexes, generated columns and parallel plans. STRICT: NULL
//! gives NULL, and PostgreSQL skips the call.

use pgrx::callconv::{Arg, ArgAbi, BoxRet, FcInfo};
use pgrx::datum::Datum;
use pgrx::pgrx_sql_entity_graph::metadata::{ArgumentError, ReturnsError, ReturnsRef, SqlMappingRef, SqlTranslatable};
use pgrx::prelude::*;
use snowflake_id_core::id_text::{self, TextError};

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
fn snowflake_from_base62(text: TextArg) -> i64 {
    text.decode(id_text::from_base62)
}

/// The ID Crockford base32 `text` stands for, read as Crockford allows:
/// any case, I and L as 1, O as 0, hyphens between symbols.
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_from_base32(text: TextArg) -> i64 {
    text.decode(id_text::from_base32)
}

/// A `text` argument as the bytes PostgreSQL holds, in the database's
/// encoding. pgrx's `&str` would fail on a non-ASCII character in a
/// database that is not UTF-8 with an internal error (XX000) where bad text
/// must get 22P02 naming the character.
pub struct TextArg<'fcx>(&'fcx [u8]);

impl TextArg<'_> {
    #[inline(always)]
    fn decode(&self, decoder: impl Fn(&str) -> Result<i64, TextError>) -> i64 {
        if database_is_utf8() {
            // SAFETY: PostgreSQL checks text as UTF-8 when it enters a UTF-8
            // database (pgrx's `&str` relies on it the same way).
            let text = unsafe { std::str::from_utf8_unchecked(self.0) };
            return decoder(text).unwrap_or_else(|e| text_refusal(&e, Some(text)).raise());
        }
        // Another encoding: every valid symbol is ASCII; anything else is
        // read in UTF-8 to be named, and named in escapes (\u{e9}) that the
        // server's encoding can carry to the client.
        let text = match std::str::from_utf8(self.0) {
            Ok(ascii) if ascii.is_ascii() => std::borrow::Cow::Borrowed(ascii),
            _ => std::borrow::Cow::Owned(in_utf8(self.0)),
        };
        decoder(&text).unwrap_or_else(|e| {
            let mut refusal = text_refusal(&e, Some(&text));
            refusal.message = escaped(&refusal.message);
            refusal.detail = refusal.detail.as_deref().map(escaped);
            refusal.raise()
        })
    }
}

/// Whether the backend's database is UTF-8: asked once, as a backend stays
/// in its database.
fn database_is_utf8() -> bool {
    use std::sync::atomic::{AtomicU8, Ordering};
    static UTF8: AtomicU8 = AtomicU8::new(0); // 0: not asked yet, 1: no, 2: yes
    match UTF8.load(Ordering::Relaxed) {
        0 => {
            // SAFETY: reads the encoding of the database the backend is in.
            let utf8 = unsafe { pg_sys::GetDatabaseEncoding() } == pg_sys::pg_enc::PG_UTF8 as i32;
            UTF8.store(if utf8 { 2 } else { 1 }, Ordering::Relaxed);
            utf8
        }
        known => known == 2,
    }
}

/// Text of the database's encoding converted to UTF-8 by PostgreSQL.
fn in_utf8(bytes: &[u8]) -> String {
    let len = i32::try_from(bytes.len()).unwrap_or(i32::MAX);
    // SAFETY: `bytes` is valid for `len` bytes; pg_server_to_any reads that
    // many and returns either its input or a palloc'd NUL-terminated copy.
    let converted = unsafe { pg_sys::pg_server_to_any(bytes.as_ptr().cast(), len, pg_sys::pg_enc::PG_UTF8 as i32) };
    if std::ptr::eq(converted.cast::<u8>(), bytes.as_ptr()) {
        return String::from_utf8_lossy(bytes).into_owned();
    }
    // SAFETY: a NUL-terminated string PostgreSQL made.
    unsafe { std::ffi::CStr::from_ptr(converted) }.to_string_lossy().into_owned()
}

/// Non-ASCII characters as Rust-style escapes (`\u{e9}`): PostgreSQL sends a
/// message in the database's encoding, which may not hold them.
fn escaped(text: &str) -> String {
    text.chars().map(|c| if c.is_ascii() { c.to_string() } else { c.escape_unicode().to_string() }).collect()
}

// SAFETY: `text` is a varlena; the bytes are borrowed (detoasted if need
// be) for the call, as pgrx's own `&[u8]` does for `bytea`.
unsafe impl<'fcx> ArgAbi<'fcx> for TextArg<'fcx> {
    unsafe fn unbox_arg_unchecked(arg: Arg<'_, 'fcx>) -> Self {
        // SAFETY: the caller's promise (a non-null `text`: the function is STRICT).
        TextArg(unsafe { <&'fcx [u8] as ArgAbi<'fcx>>::unbox_arg_unchecked(arg) })
    }
}

// SAFETY: unboxed from a `text` varlena (ArgAbi above), as the SQL says.
unsafe impl SqlTranslatable for TextArg<'_> {
    const TYPE_IDENT: &'static str = pgrx::pgrx_resolved_type!(TextArg);
    const TYPE_ORIGIN: pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin =
        pgrx::pgrx_sql_entity_graph::metadata::TypeOrigin::External;
    const ARGUMENT_SQL: Result<SqlMappingRef, ArgumentError> = Ok(SqlMappingRef::literal("TEXT"));
    // Never returned: only what the decoders take.
    const RETURN_SQL: Result<ReturnsRef, ReturnsError> = Ok(ReturnsRef::One(SqlMappingRef::literal("TEXT")));
}

/// An encoded ID returned as `text` straight from the core's fixed-width
/// ASCII symbols: one palloc of the varlena, no Rust `String` on the way
/// (its heap allocation, UTF-8 pushes and free were about a third of the cost per
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
