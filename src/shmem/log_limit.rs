//! The one rate limiter for log lines that a misbehaving clock or disk
//! could otherwise repeat per ID: server-wide (in shared memory), so a
//! hundred backends hitting the same fault still log it once per period.

use crate::pg::clock;
use crate::shmem;

/// What a limited log line is about; each has its own period.
#[derive(Clone, Copy)]
pub enum Topic {
    /// The state file could not be written.
    WriteFailure = 0,
    /// The system clock went back (while running or while the server was down).
    StepBack = 1,
    /// IDs wait for synchronous standbys.
    StandbyWait = 2,
    /// The worker id registry did not answer, or refused.
    Registry = 3,
    /// Rows received through logical replication that the guard could not
    /// move past (implausible, a failed write, a column gone).
    LogicalGuard = 4,
    /// A logical replication peer issuing with this server's worker id: a
    /// topic of its own, so that a flood of the others never hides it.
    SharedWorker = 5,
}

// Every topic has its slot in shared memory.
const _: () = assert!(Topic::SharedWorker as usize + 1 == shmem::LOG_TOPICS);

impl Topic {
    /// At most one line per this many ms.
    pub const fn period_ms(self) -> i64 {
        match self {
            Topic::WriteFailure => 10_000,
            Topic::StepBack | Topic::StandbyWait | Topic::Registry | Topic::LogicalGuard | Topic::SharedWorker => {
                60_000
            }
        }
    }
}

/// Whether a line about `topic` may be logged now; if so, the period starts again.
pub fn due(topic: Topic) -> bool {
    let now = clock::now_unix_ms();
    let mut shared = shmem::lock();
    let last = &mut shared.logged_unix_ms[topic as usize];
    let due = *last == 0 || now - *last >= topic.period_ms();
    // A clock that went back restarts the period from its new reading
    // (without a line): otherwise a step back of an hour would silence the
    // topic for an hour.
    if due || now < *last {
        *last = now;
    }
    due
}
