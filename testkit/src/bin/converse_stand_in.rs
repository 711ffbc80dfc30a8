//! `converse-stand-in SCRIPTS.json [PORT]`: the scripted Converse stand-in (see
//! `hearth_testkit::converse`) as a loopback server, for tests that run Hearth as a process.
//! It prints `listening on http://127.0.0.1:PORT` once it accepts connections.

use hearth_testkit::converse::{Scripts, router};

#[tokio::main]
async fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(file), port) = (args.first(), args.get(1)) else {
        eprintln!("usage: converse-stand-in SCRIPTS.json [PORT]");
        std::process::exit(2);
    };
    let scripts = Scripts::load(std::path::Path::new(file));
    let port: u16 = port.map_or(0, |p| p.parse().expect("PORT is a number"));
    let listener = tokio::net::TcpListener::bind(("127.0.0.1", port))
        .await
        .expect("the port is free");
    println!(
        "listening on http://{}",
        listener.local_addr().expect("an address")
    );
    axum::serve(listener, router(scripts, Default::default()))
        .await
        .expect("the stand-in serves");
}
