//! The loopback AWS emulator (moto, from PyPI) for tests that use the real AWS SDK.
//!
//! `scripts/test` installs moto into `.venv`, starts one server (`scripts/moto_server.py`,
//! which serves one request at a time; see there why) and exports its URL as
//! `HEARTH_TEST_MOTO_ENDPOINT`; [`Moto::shared`] then uses it. A plain `cargo test` after that
//! install starts one server per test binary the same way. Without either the test fails and
//! says what to do: a missing emulator is never a skipped test.

use std::io::Write;
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

pub struct Moto {
    pub endpoint: String,
    port: u16,
    process: Option<Running>,
}

/// A server this process started. It runs under a small shell that kills it when its stdin
/// closes, which happens however this process ends, so no emulator outlives its tests.
struct Running {
    child: Child,
    stdin: ChildStdin,
}

fn project() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A loopback port nobody listens on at the moment of asking.
pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

fn spawn(port: u16) -> Running {
    let python = project().join(".venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing; run scripts/test, which installs moto into .venv",
        python.display()
    );
    let mut child = Command::new("sh")
        .args([
            "-c",
            r#""$0" "$1" "$2" >/dev/null 2>&1 & pid=$!; cat >/dev/null; kill $pid; wait $pid"#,
        ])
        .arg(&python)
        .arg(project().join("scripts/moto_server.py"))
        .arg(port.to_string())
        .stdin(Stdio::piped())
        .spawn()
        .expect("start moto_server");
    let stdin = child.stdin.take().expect("piped stdin");
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "moto_server did not start on port {port}"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    Running { child, stdin }
}

impl Moto {
    /// The emulator shared by every test of this process: the one `scripts/test` started, or
    /// one started on first use.
    pub fn shared() -> &'static Moto {
        static SHARED: OnceLock<Moto> = OnceLock::new();
        SHARED.get_or_init(|| match std::env::var("HEARTH_TEST_MOTO_ENDPOINT") {
            Ok(endpoint) => Moto {
                port: endpoint
                    .rsplit(':')
                    .next()
                    .and_then(|port| port.parse().ok())
                    .expect("HEARTH_TEST_MOTO_ENDPOINT ends in a port"),
                endpoint,
                process: None,
            },
            Err(_) => Moto::start_own(),
        })
    }

    /// An emulator of this test's own, for tests that stop and restart it.
    pub fn start_own() -> Moto {
        let port = free_port();
        Moto {
            endpoint: format!("http://127.0.0.1:{port}"),
            port,
            process: Some(spawn(port)),
        }
    }

    /// Stops an emulator started by [`Moto::start_own`]; its data is gone.
    pub fn stop(&mut self) {
        if let Some(mut running) = self.process.take() {
            let _ = running.stdin.write_all(b"");
            drop(running.stdin);
            let _ = running.child.wait();
        }
        let started = Instant::now();
        while TcpStream::connect(("127.0.0.1", self.port)).is_ok() {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "moto_server did not stop"
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// Starts a stopped own emulator again on the same port (empty).
    pub fn restart(&mut self) {
        assert!(self.process.is_none(), "stop it first");
        self.process = Some(spawn(self.port));
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

    /// A DynamoDB client builder for this emulator; tests may add interceptors before building.
    pub fn dynamodb_config(&self) -> aws_sdk_dynamodb::config::Builder {
        use aws_sdk_dynamodb::config::{BehaviorVersion, Credentials, Region};
        aws_sdk_dynamodb::Config::builder()
            .behavior_version(BehaviorVersion::latest())
            .endpoint_url(&self.endpoint)
            .region(Region::new("us-east-1"))
            .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
    }

    pub fn polly_client(&self) -> aws_sdk_polly::Client {
        polly_client(&self.endpoint)
    }

    pub fn dynamodb_client(&self) -> aws_sdk_dynamodb::Client {
        aws_sdk_dynamodb::Client::from_conf(self.dynamodb_config().build())
    }

    /// A DynamoDB client whose every call the returned counter sees (see [`crate::CallCounter`]).
    pub fn counted_dynamodb_client(&self) -> (aws_sdk_dynamodb::Client, crate::CallCounter) {
        let counter = crate::CallCounter::default();
        let config = self.dynamodb_config().interceptor(counter.clone()).build();
        (aws_sdk_dynamodb::Client::from_conf(config), counter)
    }
}

impl Drop for Moto {
    fn drop(&mut self) {
        self.stop();
    }
}

/// A name (secret, table) no other test uses.
pub fn unique_name(prefix: &str) -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static NEXT: AtomicU32 = AtomicU32::new(0);
    format!(
        "{prefix}-{}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::Relaxed)
    )
}

/// A Polly client for any loopback endpoint (moto, or a test's own stand-in).
pub fn polly_client(endpoint: &str) -> aws_sdk_polly::Client {
    use aws_sdk_polly::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_polly::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
        .build();
    aws_sdk_polly::Client::from_conf(config)
}

/// A Bedrock Runtime client for a loopback stand-in (moto does not implement Converse).
pub fn bedrock_client(endpoint: &str) -> aws_sdk_bedrockruntime::Client {
    use aws_sdk_bedrockruntime::config::{BehaviorVersion, Credentials, Region};
    let config = aws_sdk_bedrockruntime::Config::builder()
        .behavior_version(BehaviorVersion::latest())
        .endpoint_url(endpoint)
        .region(Region::new("us-east-1"))
        .credentials_provider(Credentials::new("testing", "testing", None, None, "tests"))
        .build();
    aws_sdk_bedrockruntime::Client::from_conf(config)
}
