//! The SQL edge of the core's errors: each becomes a [`Refusal`] (raised as an
//! `ereport(ERROR)`) with a SQLSTATE a client can test for and a hint a DBA
//! can act on. A setting's own problems are worded in `settings/error.rs`.

use pgrx::PgSqlErrorCode as Code;
use snowflake_id_core::id_text::{Form, TextError};
use snowflake_id_core::{epoch, Error};

use crate::pg::clock;
use crate::pg::report::Refusal;
use crate::settings::names;

const RESTART: &str = "in postgresql.conf and restart the server";

/// "Restore the settings in force": the layout a state file was written under.
fn restore_layout(stored: &snowflake_id_core::StoredLayout) -> String {
    format!(
        "Restore {} = {}, {} = {}, {} = '{}' {RESTART}",
        names::WORKER_BITS,
        stored.worker_bits,
        names::SEQUENCE_BITS,
        stored.sequence_bits,
        names::EPOCH,
        epoch::format_unix_ms(stored.epoch_ms),
    )
}

/// An error from the core that is not tied to one setting.
#[track_caller]
pub fn raise_core(e: &Error) -> ! {
    core_refusal(e).raise()
}

pub fn core_refusal(e: &Error) -> Refusal {
    let message = format!("snowflake_id: {e}");
    let (code, hint) = match e {
        Error::EpochInFuture { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some(format!("Set {} to an instant in the past {RESTART}, or fix the system clock.", names::EPOCH)),
        ),
        Error::EpochUnreachable { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some(format!(
                "Move {} later or give the timestamp more bits (fewer {} + {}) {RESTART}.",
                names::EPOCH,
                names::WORKER_BITS,
                names::SEQUENCE_BITS
            )),
        ),
        Error::Exhausted { last_ms } => (Code::ERRCODE_PROGRAM_LIMIT_EXCEEDED, Some(exhausted_hint(*last_ms))),
        Error::NegativeId { .. } => (
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            Some("Snowflake IDs always have the sign bit 0; a negative bigint was not made by a snowflake generator.".into()),
        ),
        Error::TimestampOutOfRange { .. } => (
            Code::ERRCODE_DATETIME_FIELD_OVERFLOW,
            Some(format!("Instants past the layout's end have no ID; a later {} moves the end.", names::EPOCH)),
        ),
        Error::LayoutTooWide { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some("worker_bits and sequence_bits must each be 0..22 with a sum of at most 22.".into()),
        ),
        Error::SpanOutOfRange { .. } => (
            Code::ERRCODE_INVALID_PARAMETER_VALUE,
            Some("Give a positive span such as '1 day', shorter than the layout's whole range.".into()),
        ),
        Error::CeilingReached { .. } => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Some("The registry has not renewed this server's lease on its worker id; snowflake_id_status shows the lease and the last registry error.".into()),
        ),
        Error::LayoutWouldGoBack { stored, .. } => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Some(format!(
                "{}. IDs of another layout can only follow once the clock is past the old ones.",
                restore_layout(stored)
            )),
        ),
        Error::LayoutChanged { stored } => (
            Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
            Some(format!(
                "{}. To change the layout on purpose (stored IDs will decode differently), set {} = on for one restart; see \"Layout changes across restarts\" in docs/guarantees.md.",
                restore_layout(stored),
                names::ALLOW_LAYOUT_CHANGE
            )),
        ),
        Error::StateCorrupt { .. } => (
            Code::ERRCODE_DATA_CORRUPTED,
            Some(format!(
                "The file {} records the highest ID reserved; an older copy from a backup is as unsafe as none. Before clients draw IDs, move it aside and, as a superuser, run SELECT snowflake_id_internal.snowflake_advance_past(max(id)::bigint) FROM each table whose IDs this server made.",
                snowflake_id_core::state_file::FILE_NAME
            )),
        ),
        Error::WorkerIdUnset
        | Error::WorkerIdOutOfRange { .. }
        | Error::EpochSyntax { .. }
        | Error::EpochAmbiguous { .. }
        | Error::NotAnInteger { .. } => {
            (Code::ERRCODE_INVALID_PARAMETER_VALUE, None)
        }
    };
    Refusal::new(code, message, None, hint)
}

/// The hint for a timestamp field used up. Not "a later epoch": a layout
/// change that would issue IDs below the reserved ones is refused. When the
/// clock is far from the layout's end, the mark was moved there (a mistyped
/// `snowflake_advance_past` forced through), which has a way back.
fn exhausted_hint(last_ms: i64) -> String {
    let now_ms = clock::now_unix_ms();
    let far = "The section \"When the durable mark is far ahead\" of docs/replication.md says how to bring it back near the clock.";
    if last_ms.saturating_sub(now_ms) > 86_400_000 {
        format!(
            "The clock reads {}, long before that: the durable mark was moved to the layout's end, most likely by \
             snowflake_advance_past() with a wrong ID. {far}",
            epoch::format_unix_ms(now_ms)
        )
    } else {
        format!("The layout's timestamp field has run out. {far}")
    }
}

const NOT_PRELOADED: &str = "snowflake_id must be loaded via shared_preload_libraries";

/// The library was loaded by CREATE EXTENSION or LOAD, not at server start,
/// so there is no shared generator to draw from.
pub fn not_preloaded_refusal() -> Refusal {
    Refusal::new(
        Code::ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE,
        NOT_PRELOADED.into(),
        Some("The generator lives in shared memory, which is set up only at server start."),
        Some("Add 'snowflake_id' to shared_preload_libraries in postgresql.conf and restart the server.".into()),
    )
}

/// Reading or writing the durable state file failed.
#[track_caller]
pub fn raise_io(what: String) -> ! {
    io_refusal(what).raise()
}

pub fn io_refusal(what: String) -> Refusal {
    Refusal::new(
        Code::ERRCODE_IO_ERROR,
        format!("snowflake_id: {what}"),
        Some("No ID is issued past the durable mark until it can be written."),
        Some("Check the permissions and free space of the data directory.".into()),
    )
}

/// `snowflake_nextval()` where nothing may be written: on a standby (it would
/// repeat the primary's IDs) or in a READ ONLY transaction. SQLSTATE 25006,
/// as `nextval()` gives.
pub fn read_only_refusal(function: &str, when: &str, recovery: bool) -> Refusal {
    let (detail, hint) = if recovery {
        (
            "Only the primary issues IDs; a standby's mark follows the primary's through WAL.",
            "Connect to the primary to draw IDs. snowflake_decode() and snowflake_id_status work here.",
        )
    } else {
        (
            "Drawing an ID advances the generator's durable mark, which a read-only transaction may not do.",
            "Draw IDs in a read-write transaction.",
        )
    };
    Refusal::new(
        Code::ERRCODE_READ_ONLY_SQL_TRANSACTION,
        format!("cannot execute {function} {when}"),
        Some(detail),
        Some(hint.into()),
    )
}

/// Text that is not an ID in a short form (22P02, as core's `'x'::bigint`),
/// a number above bigint (22003), or a negative ID to write (22003, the hint
/// of a negative ID to decode). The message names the bad character and its
/// position; the DETAIL quotes the text, cut at 40 characters.
pub fn text_refusal(e: &TextError, text: Option<&str>) -> Refusal {
    let message = format!("snowflake_id: {e}");
    let detail = text.map(|t| {
        let mut quoted: String = t.chars().take(40).collect();
        if quoted.len() < t.len() {
            quoted.push_str("...");
        }
        format!("The text was \"{quoted}\".")
    });
    let alphabet = |form: Form| match form {
        Form::Base62 => "Base62 text is 1 to 11 of 0-9, A-Z and a-z (case matters).",
        Form::Base32 => {
            "Crockford base32 text is 1 to 13 of 0-9 and A-Z less U, in any case; I and L read as 1, O as 0, \
             and single hyphens between symbols are ignored."
        }
    };
    let (code, hint) = match e {
        TextError::BadCharacter { form, .. } | TextError::Empty { form } | TextError::TooLong { form, .. } => {
            (Code::ERRCODE_INVALID_TEXT_REPRESENTATION, alphabet(*form).to_string())
        }
        TextError::OutOfRange { form } => (
            Code::ERRCODE_NUMERIC_VALUE_OUT_OF_RANGE,
            format!(
                "The largest ID, 9223372036854775807, is {} in {}.",
                match form {
                    Form::Base62 => "AzL8n0Y58m7",
                    Form::Base32 => "7ZZZZZZZZZZZZ",
                },
                form.name()
            ),
        ),
        TextError::Negative { id } => return core_refusal(&Error::NegativeId { id: *id }),
    };
    let mut refusal = Refusal::new(code, message, None, Some(hint));
    refusal.detail = detail;
    refusal
}
