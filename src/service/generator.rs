//! The generator: drawing IDs and keeping them above the durable mark.
//! From the bottom: what a start resumes from (`resume`), making the mark
//! durable (`writer`), starting (`start`), drawing an ID or a block
//! (`draw`), and moving past an ID from elsewhere (`advance`).

pub mod advance;
pub mod draw;
pub mod resume;
pub mod start;
pub mod writer;
