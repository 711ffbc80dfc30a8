//! Transparency logs: RFC 6962 Merkle trees beside the hash chains, signed checkpoints
//! (C2SP `tlog-checkpoint` in a `signed-note`) and the proof files a household keeps
//! (`c2sp.org/tlog-proof@v1`). Bottom layer: no store, no HTTP.

pub mod checkpoint;
pub mod note;
pub mod tree;
