//! IDs as short text for URLs and JSON (core `id_text`): fixed-width base62
//! and Crockford base32, whose text sorts as the IDs do.
//!
//! IMMUTABLE and PARALLEL SAFE: pure functions of their argument, usable in
//! expression indexes, generated columns and parallel plans. STRICT: NULL
//! gives NULL, and PostgreSQL skips the call.

use pgrx::prelude::*;
use snowflake_id_core::id_text;

use crate::refusal::text_refusal;

/// `id` as 11 base62 symbols (`0-9A-Za-z`): the shortest common URL form,
/// at the one width that holds every bigint, so that text order is ID order.
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_to_base62(id: i64) -> String {
    match id_text::to_base62(id) {
        Ok(symbols) => symbols.iter().map(|&b| char::from(b)).collect(),
        Err(e) => text_refusal(&e, None).raise(),
    }
}

/// `id` as 13 Crockford base32 symbols: read back in any case and without
/// the letters people confuse with digits, so fit to be typed or read aloud.
/// Only digits and capitals: sorted as the IDs under `COLLATE "C"` and under
/// most linguistic collations too (base62 mixes cases, and needs "C").
#[pg_extern(immutable, strict, parallel_safe)]
fn snowflake_to_base32(id: i64) -> String {
    match id_text::to_base32(id) {
        Ok(symbols) => symbols.iter().map(|&b| char::from(b)).collect(),
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
