//! Test support shared by Hearth's test suites (never a dependency of shipped code).

pub mod moto;
