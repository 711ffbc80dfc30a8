//! Captures what the production log subscriber writes, for tests that read the logs.

use std::io::Write;
use std::sync::{Arc, Mutex};

/// A log sink; install it with `tracing::subscriber::set_default(telemetry::subscriber(..))`
/// in a test binary of its own (tracing caches per-callsite interest across threads).
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Captured {
    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }
}

impl Write for Captured {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}
