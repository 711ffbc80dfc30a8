//! Captures what the production log subscriber writes, for tests that read the logs.

use std::io::Write;
use std::sync::{Arc, Mutex};

use hearth_core::config::MetricDetail;

/// A log sink for this thread, installed by [`Captured::installed`] (which keeps tracing's
/// per-callsite interest cache from hiding lines a sibling test's thread reached first).
#[derive(Clone, Default)]
pub struct Captured(pub Arc<Mutex<Vec<u8>>>);

impl Captured {
    /// A sink installed as the production subscriber, with its default metrics, on this
    /// thread until the guard drops.
    pub fn installed() -> (Self, tracing::subscriber::DefaultGuard) {
        Self::installed_with(MetricDetail::default())
    }

    /// [`Captured::installed`], its lines carrying the metrics `detail` asks for.
    pub fn installed_with(detail: MetricDetail) -> (Self, tracing::subscriber::DefaultGuard) {
        // While exactly one dispatcher is registered, tracing-core decides a callsite's
        // interest from the default of whichever thread reaches it first: a sibling test's
        // thread, without a subscriber, caches "never" process-wide and this sink misses the
        // line (tokio-rs/tracing#3611). A second dispatcher kept alive for the whole binary
        // makes tracing ask every registered dispatcher, this sink included.
        static SECOND: std::sync::OnceLock<tracing::Dispatch> = std::sync::OnceLock::new();
        SECOND.get_or_init(|| tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default()));
        let captured = Self::default();
        let sink = captured.clone();
        let guard = tracing::subscriber::set_default(hearth_core::telemetry::subscriber(
            move || sink.clone(),
            detail,
        ));
        (captured, guard)
    }

    pub fn text(&self) -> String {
        String::from_utf8(self.0.lock().unwrap().clone()).unwrap()
    }

    /// The one line per request (`hearth::request`) written so far, parsed.
    pub fn request_lines(&self) -> Vec<serde_json::Value> {
        self.text()
            .lines()
            .map(|line| serde_json::from_str::<serde_json::Value>(line).expect("a JSON line"))
            .filter(|line| line["target"] == "hearth::request")
            .collect()
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
