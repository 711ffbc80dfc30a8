//! A secret value that never shows itself: the one type every layer passes credentials in.
//! It sits below `auth`, `accounts` and `config`, so each can hold a secret without importing
//! the others.

use std::fmt;

/// A secret value. Its `Debug` never shows the value, so a credential inside a logged or
/// printed structure cannot leak by accident.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    pub fn new(value: impl Into<String>) -> Self {
        Self(value.into())
    }

    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("Secret(..)")
    }
}
