//! Both servers a stranger can reach, `hearth serve` and `hearth witness serve`, run as
//! processes: a client that sends its request head slowly is dropped at 10 seconds, and past
//! the connection cap a new connection waits in the kernel's backlog, unanswered, until one
//! of the open ones closes.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::process::{free_port, wait_until_listening};

/// One of the two servers, on a free loopback port, killed when dropped.
struct Running {
    port: u16,
    child: Child,
    _data: tempfile::TempDir,
}

impl Running {
    fn hearth(vars: &[(&str, &str)]) -> Self {
        let data = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
        command
            .env_clear()
            .env("HEARTH_ADDR", format!("127.0.0.1:{port}"))
            .env("HEARTH_DATA_DIR", data.path());
        Self::start(command, vars, port, data)
    }

    fn witness(vars: &[(&str, &str)]) -> Self {
        let data = tempfile::tempdir().unwrap();
        let port = free_port();
        let mut command = Command::new(env!("CARGO_BIN_EXE_hearth"));
        command
            .args(["witness", "serve"])
            .env_clear()
            .env("HEARTH_WITNESS_ADDR", format!("127.0.0.1:{port}"))
            .env("HEARTH_WITNESS_DIR", data.path());
        Self::start(command, vars, port, data)
    }

    fn start(
        mut command: Command,
        vars: &[(&str, &str)],
        port: u16,
        data: tempfile::TempDir,
    ) -> Self {
        let child = command
            .envs(vars.iter().copied())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        wait_until_listening(port, "the server");
        Self {
            port,
            child,
            _data: data,
        }
    }

    fn connect(&self) -> TcpStream {
        TcpStream::connect(("127.0.0.1", self.port)).unwrap()
    }
}

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// How long after sending half a request head the server closed the connection; whatever it
/// sent first (a 408, or nothing) is read and ignored.
fn closed_after_half_a_head(server: &Running) -> Duration {
    let mut stream = server.connect();
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let sent = Instant::now();
    stream
        .write_all(b"GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
        .unwrap();
    let mut buffer = [0u8; 1024];
    loop {
        match stream.read(&mut buffer) {
            Ok(0) => return sent.elapsed(),
            Ok(_) => continue,
            Err(error) if error.kind() == std::io::ErrorKind::ConnectionReset => {
                return sent.elapsed();
            }
            Err(error) => panic!("the connection was still open after 30 s: {error}"),
        }
    }
}

fn assert_dropped_at_ten_seconds(name: &str, server: &Running) {
    let after = closed_after_half_a_head(server);
    assert!(
        after >= Duration::from_millis(9_500) && after < Duration::from_secs(13),
        "{name} closed a half-sent head after {after:?}, not at 10 s"
    );
}

#[test]
fn a_half_sent_request_head_is_dropped_at_ten_seconds() {
    let hearth = Running::hearth(&[]);
    let witness = Running::witness(&[]);
    // Both at once: each waits out its own ten seconds.
    std::thread::scope(|scope| {
        scope.spawn(|| assert_dropped_at_ten_seconds("hearth serve", &hearth));
        scope.spawn(|| assert_dropped_at_ten_seconds("hearth witness serve", &witness));
    });
}

/// One request on a kept-alive connection: the answer's status line, or `None` when nothing
/// came back within `wait`.
fn ask(stream: &mut TcpStream, path: &str, wait: Duration) -> Option<String> {
    stream.set_read_timeout(Some(wait)).unwrap();
    stream
        .write_all(format!("GET {path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n").as_bytes())
        .unwrap();
    let mut answer = Vec::new();
    let mut buffer = [0u8; 4096];
    while !answer.windows(4).any(|window| window == b"\r\n\r\n") {
        match stream.read(&mut buffer) {
            Ok(0) => return None,
            Ok(read) => answer.extend_from_slice(&buffer[..read]),
            Err(_) => return None,
        }
    }
    let text = String::from_utf8_lossy(&answer);
    text.lines().next().map(str::to_owned)
}

/// `cap` connections are answered and kept open; the one past the cap is accepted by the
/// kernel but not answered until one of them closes.
fn assert_capped(name: &str, server: &Running, cap: usize, path: &str) {
    let mut open: Vec<TcpStream> = (0..cap).map(|_| server.connect()).collect();
    for (index, stream) in open.iter_mut().enumerate() {
        let status = ask(stream, path, Duration::from_secs(5));
        assert!(
            status
                .as_deref()
                .is_some_and(|line| line.starts_with("HTTP/1.1 ")),
            "{name}: connection {} of {cap} is answered: {status:?}",
            index + 1
        );
    }
    let mut past = server.connect();
    assert_eq!(
        ask(&mut past, path, Duration::from_secs(1)),
        None,
        "{name}: connection {} waits while {cap} are open",
        cap + 1
    );
    drop(open.pop());
    let mut buffer = [0u8; 4096];
    past.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
    let read = past.read(&mut buffer).unwrap_or(0);
    assert!(
        String::from_utf8_lossy(&buffer[..read]).starts_with("HTTP/1.1 "),
        "{name}: connection {} is answered once one closes",
        cap + 1
    );
}

#[test]
fn past_the_connection_cap_a_connection_waits_in_the_backlog() {
    let hearth = Running::hearth(&[("HEARTH_MAX_CONNECTIONS", "4")]);
    assert_capped("hearth serve", &hearth, 4, "/healthz");
    let witness = Running::witness(&[("HEARTH_WITNESS_MAX_CONNECTIONS", "3")]);
    assert_capped("hearth witness serve", &witness, 3, "/");
}
