//! Everything the core can refuse, as data. The SQL edge turns each variant
//! into an `ereport` with a SQLSTATE and a hint; nothing here knows about
//! PostgreSQL, so the same errors are asserted in plain unit tests.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Error {
    /// `worker_bits` or `sequence_bits` outside 0..=22, or their sum above 22
    /// (fewer than 41 timestamp bits last under 70 years).
    LayoutTooWide { worker_bits: i64, sequence_bits: i64 },
    /// A setting that must be a whole number is not one.
    NotAnInteger { text: String },
    /// The worker id setting was never given.
    WorkerIdUnset,
    /// The worker id does not fit the worker field.
    WorkerIdOutOfRange { worker_id: i64, max: i64 },
    /// The epoch text is not a timestamp we can read.
    EpochSyntax { text: String },
    /// A bare number too short to be milliseconds of a sensible epoch: it may
    /// be seconds. Both readings, in Unix milliseconds.
    EpochAmbiguous { text: String, as_ms: i64, as_s: i64 },
    /// The epoch is after the current time: every ID would need a negative timestamp.
    EpochInFuture { epoch_ms: i64, now_ms: i64 },
    /// The timestamp field overflowed before now: the epoch is too far in the past.
    EpochUnreachable { epoch_ms: i64, last_ms: i64, now_ms: i64 },
    /// A negative number is never a snowflake ID (the sign bit is always 0).
    NegativeId { id: i64 },
    /// A timestamp past what the layout's timestamp field can hold.
    TimestampOutOfRange { unix_ms: i64, last_ms: i64 },
    /// A span of time that is not a positive number of whole milliseconds the
    /// timestamp field can hold.
    SpanOutOfRange { ms: i64, max_ms: i64 },
    /// The logical clock ran past the last tick the layout can encode.
    Exhausted { last_ms: i64 },
    /// The next ID's tick is past the ceiling of the worker id's lease from
    /// the registry (a tick: ms since the layout's epoch).
    CeilingReached { ceiling: i64 },
    /// The stored state was written under another layout and this one could
    /// issue IDs below ones already reserved (issued, or under the mark: the
    /// file cannot tell which).
    LayoutWouldGoBack { stored: StoredLayout, stored_max_id: i64, first_new_id: i64 },
    /// IDs were issued under another layout (bits or epoch): changing it would
    /// change what every stored ID decodes to, so it needs an explicit override.
    LayoutChanged { stored: StoredLayout },
    /// The durable state file exists but cannot be read as one.
    StateCorrupt { detail: String },
}

/// The layout and worker a state file was written under, kept for the message
/// that explains a refused restart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StoredLayout {
    pub worker_bits: u8,
    pub sequence_bits: u8,
    pub epoch_ms: i64,
    pub worker_id: i64,
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::LayoutTooWide { worker_bits, sequence_bits } => write!(
                f,
                "worker_bits ({worker_bits}) + sequence_bits ({sequence_bits}) must be at most 22, each between 0 and 22"
            ),
            Error::NotAnInteger { text } => write!(f, "\"{text}\" is not an integer"),
            Error::WorkerIdUnset => write!(f, "the worker id is not set"),
            Error::WorkerIdOutOfRange { worker_id, max } => {
                write!(f, "worker id {worker_id} is out of range 0..{max}")
            }
            Error::EpochSyntax { text } => write!(f, "epoch \"{text}\" is not a timestamp"),
            Error::EpochAmbiguous { text, as_ms, as_s } => write!(
                f,
                "epoch \"{text}\" is ambiguous: as milliseconds it is {}, as seconds {}",
                crate::utc::format_unix_ms(*as_ms),
                crate::utc::format_unix_ms(*as_s)
            ),
            Error::EpochInFuture { epoch_ms, now_ms } => write!(
                f,
                "epoch {} is in the future (now is {})",
                crate::utc::format_unix_ms(*epoch_ms),
                crate::utc::format_unix_ms(*now_ms)
            ),
            Error::EpochUnreachable { epoch_ms, last_ms, now_ms } => write!(
                f,
                "epoch {} is too far in the past: the timestamp field ran out at {} (now is {})",
                crate::utc::format_unix_ms(*epoch_ms),
                crate::utc::format_unix_ms(*last_ms),
                crate::utc::format_unix_ms(*now_ms)
            ),
            Error::NegativeId { id } => write!(f, "snowflake ID {id} is negative"),
            Error::TimestampOutOfRange { unix_ms, last_ms } => write!(
                f,
                "timestamp {} is past the last one this layout can encode ({})",
                crate::utc::format_unix_ms(*unix_ms),
                crate::utc::format_unix_ms(*last_ms)
            ),
            Error::SpanOutOfRange { ms, max_ms } => {
                write!(f, "a span of {ms} ms is not between 1 ms and the layout's {max_ms} ms")
            }
            Error::Exhausted { last_ms } => write!(
                f,
                "the timestamp field is exhausted: no IDs after {}",
                crate::utc::format_unix_ms(*last_ms)
            ),
            Error::CeilingReached { ceiling } => {
                write!(f, "the worker id's lease ends at tick {ceiling}: no ID may be issued past it until it is renewed")
            }
            Error::LayoutWouldGoBack { stored, stored_max_id, first_new_id } => write!(
                f,
                "IDs up to {stored_max_id} are reserved (issued, or covered by the durable mark) under worker_bits={}, sequence_bits={}, epoch={}; this layout would issue {first_new_id}, which is smaller",
                stored.worker_bits,
                stored.sequence_bits,
                crate::utc::format_unix_ms(stored.epoch_ms)
            ),
            Error::LayoutChanged { stored } => write!(
                f,
                "the durable mark was written under worker_bits={}, sequence_bits={}, epoch={}; another layout would change what every stored ID decodes to",
                stored.worker_bits,
                stored.sequence_bits,
                crate::utc::format_unix_ms(stored.epoch_ms)
            ),
            Error::StateCorrupt { detail } => write!(f, "the state file is unreadable: {detail}"),
        }
    }
}

impl std::error::Error for Error {}
