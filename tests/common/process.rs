//! The `hearth` binary as a separate process, and a minimal HTTP client for it.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

pub use hearth_testkit::moto::free_port;

/// A minimal HTTP/1.1 exchange (no client library needed); returns the status and body.
pub fn http(
    port: u16,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String) {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut request = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\nContent-Length: {}\r\n",
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).unwrap();
    let mut response = String::new();
    stream.read_to_string(&mut response).unwrap();
    let status = response[9..12].parse().unwrap();
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    (status, body)
}

/// Waits until something accepts connections on loopback `port`, for at most 20 s; `what`
/// names the server in the failure.
pub fn wait_until_listening(port: u16, what: &str) {
    let started = Instant::now();
    while TcpStream::connect(("127.0.0.1", port)).is_err() {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{what} did not start"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// A running `hearth` binary on a free port, with a clean environment plus `vars`; killed
/// when dropped. Its stderr (the JSON log) is kept for [`Server::stop`].
pub struct Server {
    pub port: u16,
    child: Child,
    /// What the server has logged so far, read as it writes.
    log: std::sync::Arc<std::sync::Mutex<String>>,
    reader: Option<std::thread::JoinHandle<()>>,
}

/// How many free ports a server is started on before its failure to bind is reported.
const PORT_ATTEMPTS: usize = 3;

impl Server {
    pub fn start(data_dir: &std::path::Path, vars: &[(&str, String)]) -> Self {
        Self::start_serving(data_dir, &[], vars)
    }

    /// As [`Server::start`], running `hearth serve ARGS`.
    ///
    /// Waits for the server's own `serving` line naming its port, not just for something to
    /// accept connections there: a port [`free_port`] found free can be taken by another
    /// test's server before this one binds it, and this one then exits while the other
    /// answers. Such a server is started again on another port.
    pub fn start_serving(
        data_dir: &std::path::Path,
        args: &[&str],
        vars: &[(&str, String)],
    ) -> Self {
        for attempt in 1..=PORT_ATTEMPTS {
            let port = free_port();
            let mut child = Command::new(env!("CARGO_BIN_EXE_hearth"))
                .env_clear()
                .env("HEARTH_ADDR", format!("127.0.0.1:{port}"))
                .env("HEARTH_DATA_DIR", data_dir)
                .envs(vars.iter().map(|(name, value)| (*name, value.as_str())))
                .arg("serve")
                .args(args)
                .stdout(Stdio::null())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
            let stderr = child.stderr.take().unwrap();
            let kept = log.clone();
            let reader = std::thread::spawn(move || {
                use std::io::BufRead;
                for line in std::io::BufReader::new(stderr).lines() {
                    let Ok(line) = line else { break };
                    let mut kept = kept.lock().unwrap();
                    kept.push_str(&line);
                    kept.push('\n');
                }
            });
            let mut server = Self {
                port,
                child,
                log,
                reader: Some(reader),
            };
            let serving = format!("\"address\":\"127.0.0.1:{port}\"");
            let started = Instant::now();
            loop {
                if server
                    .logged()
                    .lines()
                    .any(|line| line.contains("\"serving\"") && line.contains(&serving))
                {
                    wait_until_listening(port, "hearth");
                    return server;
                }
                if !server.is_running() {
                    let log = server.stop();
                    assert!(
                        attempt < PORT_ATTEMPTS && log.contains("in use"),
                        "hearth exited before serving:\n{log}"
                    );
                    break;
                }
                assert!(
                    started.elapsed() < Duration::from_secs(20),
                    "hearth did not start:\n{}",
                    server.logged()
                );
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        unreachable!("every attempt returns a server, starts again, or fails")
    }

    /// What the server has logged so far.
    fn logged(&self) -> String {
        self.log.lock().unwrap().clone()
    }

    pub fn is_running(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }

    /// Stops the server and returns what it logged.
    pub fn stop(mut self) -> String {
        let _ = self.child.kill();
        self.child.wait().unwrap();
        if let Some(reader) = self.reader.take() {
            reader.join().unwrap();
        }
        self.logged()
    }

    /// A JSON-RPC call to `/mcp` with a bearer token; returns the status and parsed body.
    pub fn rpc(&self, token: &str, body: &serde_json::Value) -> (u16, serde_json::Value) {
        let bearer = format!("Bearer {token}");
        let (status, text) = http(
            self.port,
            "POST",
            "/mcp",
            &[
                ("Authorization", bearer.as_str()),
                ("Content-Type", "application/json"),
                ("Accept", "application/json, text/event-stream"),
            ],
            &body.to_string(),
        );
        (status, serde_json::from_str(&text).unwrap_or_default())
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The development judge token a server wrote into its data folder.
pub fn dev_judge_token(data_dir: &std::path::Path) -> String {
    let stored: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(data_dir.join("dev-credentials.json")).unwrap(),
    )
    .unwrap();
    stored["judge_token"].as_str().unwrap().to_owned()
}

/// `hearth admin --data-dir DIR ARGS --json` in a cleared environment plus `vars`: its exit
/// code and the one JSON object it printed (a failure if it printed anything else).
pub fn admin(
    data_dir: &std::path::Path,
    vars: &[(&str, String)],
    args: &[&str],
) -> (i32, serde_json::Value) {
    let output = Command::new(env!("CARGO_BIN_EXE_hearth"))
        .env_clear()
        .envs(vars.iter().map(|(name, value)| (*name, value.as_str())))
        .arg("admin")
        .arg("--data-dir")
        .arg(data_dir)
        .args(args)
        .arg("--json")
        .output()
        .unwrap();
    let answer = serde_json::from_slice(&output.stdout).unwrap_or_else(|error| {
        panic!(
            "{args:?}: not one JSON object ({error}): {}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        )
    });
    (output.status.code().unwrap(), answer)
}
