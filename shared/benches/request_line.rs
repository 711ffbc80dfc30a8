//! Criterion bench for the one log line every `/mcp` request writes: the request's fields
//! recorded by tracing and formatted, with its embedded metrics, by the subscriber every entry
//! point uses (written to a sink, so the bench measures the formatting, not the write).
//! Run with `cargo bench -p hearth-core --bench request_line`.

use std::hint::black_box;
use std::time::Duration;

use criterion::{Criterion, criterion_group, criterion_main};
use hearth_core::auth::Caller;
use hearth_core::config::MetricDetail;
use hearth_core::telemetry::{RequestLog, subscriber};
use http::StatusCode;

fn request_line(c: &mut Criterion) {
    let caller = Caller::unattested("5f2b".repeat(16));
    // The most a line carries: every request metric, by function and by tool.
    tracing::subscriber::with_default(subscriber(std::io::sink, MetricDetail::Tool), || {
        c.bench_function("tool_call_request_line", |b| {
            b.iter(|| {
                let mut log = RequestLog::new(black_box("3f9a1c0e5b7d2468".to_owned()));
                log.method(Some("tools/call"));
                log.tool("explain_why");
                log.subject(&caller);
                log.finish(StatusCode::OK, Duration::from_micros(1_250));
            });
        });
    });
}

criterion_group!(benches, request_line);
criterion_main!(benches);
