//! Where past-instant IDs come from (invariant 9), as pure functions: the
//! history slots of a millisecond, and the level map that hands them out.
//!
//! A past-instant ID for millisecond `t` carries `t`, the server's worker id
//! and a sequence number among the top [`history_slots`] of the millisecond,
//! which the live generator never issues ([`skip_history`]): a past-instant
//! ID can never equal a live one, whatever the instant. The top and not the
//! bottom because releases before 0.4.0 started every fresh millisecond at
//! sequence 0: their IDs reach the top slots only in a millisecond that
//! issued more than [`live_sequences`] IDs on one worker id.
//!
//! Which of a millisecond's history slots a caller may use is decided by the
//! [`LevelMap`]: "every slot below `level` of every millisecond in
//! `[from, to)` may have been used". A claim raises the level over an
//! interval and owns the slots between the old maximum and the new level, so
//! claims that meet in time never share a slot; merging intervals only
//! raises levels, so the map stays small and is still safe. State per
//! millisecond is never kept.
//!
//! What users see, and the trade-offs: docs/past-instants.md.
//!
//! Names: the feature is `past_instants` in code, as in the docs; the slots
//! are "history slots", the docs' name for them. What is on disk or in SQL
//! keeps the word "history", for those are contracts with existing data
//! directories, WAL and registries: the file `snowflake_id.history`
//! ([`FILE_NAME`]), the WAL record pg_waldump shows as `HISTORY`, the
//! registry's table `snowflake_registry_history` and its functions
//! `snowflake_registry_history_of` and `snowflake_registry_record_history`.

mod leased;
mod level_map;
mod record;
mod round;
mod slots;
mod stored;

pub use leased::{inherited, RecordedClaim};
pub use level_map::{ClaimError, Fill, Interval, LevelMap};
pub use record::Claimed;
pub use round::ahead::{answer, Answer, MAX_PIECES};
pub use round::{Grant, Next, Round, RoundError, MAX_COUNTED_MS};
pub use slots::{history_sequence, history_slots, live_sequences, skip_history};
pub use stored::{StoredMap, FILE_NAME};
