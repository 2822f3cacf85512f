//! Reading and writing the epoch setting.
//!
//! The epoch is parsed here rather than with PostgreSQL's `timestamptz_in`
//! because that one reads a zone-less value in the session's `TimeZone`,
//! which any user may `SET`: two backends could then disagree on the epoch
//! and issue colliding IDs. A value without an offset is read as UTC.

use chrono::{DateTime, NaiveDate, NaiveDateTime, Utc};

use crate::Error;

/// Kept reachable here, where it always was; it lives in `utc.rs` so that
/// `error.rs` can use it without importing this module back.
pub use crate::utc::format_unix_ms;

/// A bare number with fewer digits than this is ambiguous (seconds or
/// milliseconds?) and needs a unit: 10^11 ms is 1973-03-03.
const MIN_BARE_MS_DIGITS: usize = 12;

/// The default epoch, 2025-01-01 00:00:00 UTC, in Unix milliseconds.
pub const DEFAULT_EPOCH_MS: i64 = 1_735_689_600_000;

/// Parses an epoch given as an ISO 8601 timestamp (`2025-01-01 00:00:00+00`,
/// `2025-01-01T00:00:00.5Z`, `2025-01-01`), as whole Unix milliseconds of 12
/// digits or more (`1288834974657`), or as a number with a unit
/// (`1735689600 s`, `1735689600000 ms`). The result is in Unix milliseconds.
pub fn parse_epoch(text: &str) -> Result<i64, Error> {
    let s = text.trim();
    let bad = || Error::EpochSyntax { text: text.to_string() };
    let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
    if let Some(n) = s.strip_suffix("ms").map(str::trim_end).filter(|t| digits(t)) {
        return n.parse::<i64>().map_err(|_| bad());
    }
    if let Some(n) = s.strip_suffix('s').map(str::trim_end).filter(|t| digits(t)) {
        return n.parse::<i64>().ok().and_then(|n| n.checked_mul(1000)).ok_or_else(bad);
    }
    if digits(s) {
        let n = s.parse::<i64>().map_err(|_| bad())?;
        // Unix seconds of any year since 2001 have 10 digits; milliseconds
        // since 1973, 12 or more. A bare number in between is refused rather
        // than guessed: read as milliseconds, a seconds value lands in 1970.
        if n != 0 && s.trim_start_matches('0').len() < MIN_BARE_MS_DIGITS {
            return Err(Error::EpochAmbiguous { text: text.to_string(), as_ms: n, as_s: n.saturating_mul(1000) });
        }
        return Ok(n);
    }
    let with_offset = ["%Y-%m-%d %H:%M:%S%.f%#z", "%Y-%m-%dT%H:%M:%S%.f%#z", "%Y-%m-%d %H:%M%#z"]
        .iter()
        .find_map(|fmt| DateTime::parse_from_str(s, fmt).ok())
        .map(|dt| dt.with_timezone(&Utc))
        .or_else(|| DateTime::parse_from_rfc3339(s).ok().map(|dt| dt.with_timezone(&Utc)));
    let parsed = with_offset
        .or_else(|| {
            ["%Y-%m-%d %H:%M:%S%.f", "%Y-%m-%dT%H:%M:%S%.f", "%Y-%m-%d %H:%M"]
                .iter()
                .find_map(|fmt| NaiveDateTime::parse_from_str(s, fmt).ok())
                .or_else(|| NaiveDate::parse_from_str(s, "%Y-%m-%d").ok().and_then(|d| d.and_hms_opt(0, 0, 0)))
                .map(|naive| naive.and_utc())
        })
        .ok_or_else(bad)?;
    if parsed.timestamp_subsec_nanos() % 1_000_000 != 0 {
        // A fraction of a millisecond cannot be represented in the timestamp field.
        return Err(bad());
    }
    Ok(parsed.timestamp_millis())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn default_epoch_text_matches_constant() {
        assert_eq!(parse_epoch("2025-01-01 00:00:00+00"), Ok(DEFAULT_EPOCH_MS));
    }

    #[test]
    fn accepted_spellings() {
        let cases = [
            ("2025-01-01 00:00:00+00:00", DEFAULT_EPOCH_MS),
            ("2025-01-01T00:00:00Z", DEFAULT_EPOCH_MS),
            ("2025-01-01 01:00:00+01", DEFAULT_EPOCH_MS),
            ("2024-12-31 19:00:00-0500", DEFAULT_EPOCH_MS),
            ("2025-01-01 00:00:00", DEFAULT_EPOCH_MS),
            ("2025-01-01", DEFAULT_EPOCH_MS),
            ("  2025-01-01 00:00  ", DEFAULT_EPOCH_MS),
            ("2010-11-04 01:42:54.657+00", 1_288_834_974_657),
            ("1288834974657", 1_288_834_974_657),
            ("1735689600 s", DEFAULT_EPOCH_MS),
            ("1735689600s", DEFAULT_EPOCH_MS),
            ("1735689600000 ms", DEFAULT_EPOCH_MS),
            ("0", 0),
            ("1970-01-01 00:00:00+00", 0),
        ];
        for (text, want) in cases {
            assert_eq!(parse_epoch(text), Ok(want), "{text}");
        }
    }

    #[test]
    fn rejected_spellings() {
        for text in ["", "yesterday", "2025-13-01", "2025-01-01 00:00:00.0001+00", "-5", "2025-01-01 25:00"] {
            assert!(matches!(parse_epoch(text), Err(Error::EpochSyntax { .. })), "{text}");
        }
    }

    #[test]
    fn a_bare_number_that_may_be_seconds_is_refused() {
        assert_eq!(
            parse_epoch("1735689600"),
            Err(Error::EpochAmbiguous { text: "1735689600".into(), as_ms: 1_735_689_600, as_s: DEFAULT_EPOCH_MS })
        );
        assert!(matches!(parse_epoch("99999999999"), Err(Error::EpochAmbiguous { .. })));
        assert_eq!(parse_epoch("100000000000"), Ok(100_000_000_000));
        assert!(matches!(parse_epoch("9999999999999999999 s"), Err(Error::EpochSyntax { .. })));
    }

    #[test]
    fn format_round_trips() {
        assert_eq!(format_unix_ms(DEFAULT_EPOCH_MS), "2025-01-01T00:00:00.000Z");
        assert_eq!(parse_epoch(&format_unix_ms(1_288_834_974_657)), Ok(1_288_834_974_657));
    }
}
