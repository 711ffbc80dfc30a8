//! The loopback AWS emulator (`moto_server` from PyPI) for tests that use the real AWS SDK.
//!
//! `scripts/test` installs moto into `.venv`, starts one server and exports its URL as
//! `HEARTH_TEST_MOTO_ENDPOINT`. A plain `cargo test` after that install starts its own server
//! from `.venv/bin/moto_server`. Without either the test fails with what to do: a missing
//! emulator is never a skipped test.

use std::net::{TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub struct Moto {
    pub endpoint: String,
    child: Option<Child>,
}

impl Moto {
    pub fn start() -> Self {
        if let Ok(endpoint) = std::env::var("HEARTH_TEST_MOTO_ENDPOINT") {
            return Self {
                endpoint,
                child: None,
            };
        }
        let server = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join(".venv/bin/moto_server");
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(&server)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|error| {
                panic!(
                    "cannot start {} ({error}); run scripts/test, which installs moto into .venv",
                    server.display()
                )
            });
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", port)).is_err() {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "moto_server did not start on port {port}"
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        Self {
            endpoint: format!("http://127.0.0.1:{port}"),
            child: Some(child),
        }
    }

    /// The environment the AWS SDK needs to talk to this emulator.
    pub fn environment(&self) -> Vec<(&'static str, String)> {
        vec![
            ("AWS_ENDPOINT_URL", self.endpoint.clone()),
            ("AWS_REGION", "us-east-1".into()),
            ("AWS_ACCESS_KEY_ID", "testing".into()),
            ("AWS_SECRET_ACCESS_KEY", "testing".into()),
        ]
    }

    pub fn secrets_client(&self) -> aws_sdk_secretsmanager::Client {
        use aws_sdk_secretsmanager::config::{BehaviorVersion, Credentials, Region};
        let config = aws_sdk_secretsmanager::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
            .build();
        aws_sdk_secretsmanager::Client::from_conf(config)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        if let Some(child) = &mut self.child {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// A secret name no other test uses.
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}
