//! Instants as text for messages and the state file: the one formatter both
//! errors and the epoch setting use.

use chrono::{DateTime, SecondsFormat, Utc};

/// Formats Unix milliseconds as an ISO 8601 UTC timestamp for messages and
/// the state file; out-of-range values fall back to the raw number.
pub fn format_unix_ms(ms: i64) -> String {
    match DateTime::<Utc>::from_timestamp_millis(ms) {
        Some(dt) => dt.to_rfc3339_opts(SecondsFormat::Millis, true),
        None => format!("{ms} ms after 1970"),
    }
}
