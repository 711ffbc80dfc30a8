//! Transparency logs: RFC 6962 Merkle trees beside the hash chains, signed checkpoints
//! (C2SP `tlog-checkpoint` in a `signed-note`) and the proof files a household keeps
//! (`c2sp.org/tlog-proof@v1`); and witnessing: witnesses' cosignatures (`tlog-cosignature`),
//! the policies that say whose are needed (`tlog-policy`) and the body of a request for one
//! (`tlog-witness`). Bottom layer: no store, no HTTP.

pub mod checkpoint;
pub mod cosignature;
pub mod note;
pub mod policy;
pub mod tree;
pub mod witness_request;
