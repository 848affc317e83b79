//! Foundation figures (printed, not asserted): time from exec to /readyz 200, idle RSS,
//! and /metrics scrape latency, for the release binary on this machine.
//! Run: `cargo bench --bench foundation`.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// VmRSS of a process, in MiB.
fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(0.0, |kib| kib / 1024.0)
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    sorted[((sorted.len() as f64 - 1.0) * p).round() as usize]
}

fn main() {
    let bin = env!("CARGO_BIN_EXE_sre-agent");
    let http = http_get::Client::new();
    let mut ready_times = Vec::new();
    let mut rss = 0.0;
    let mut scrape = Vec::new();
    for run in 0..5 {
        let dir = tempfile::tempdir().unwrap();
        let port = free_port();
        let start = Instant::now();
        let mut child = Command::new(bin)
            .arg("serve")
            .current_dir(dir.path())
            .env("SRE_AGENT_SERVER__LISTEN", format!("127.0.0.1:{port}"))
            .env("SRE_AGENT_LOG__LEVEL", "warn")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        let url = format!("http://127.0.0.1:{port}");
        loop {
            if http
                .get(&format!("{url}/readyz"))
                .map(|s| s == 200)
                .unwrap_or(false)
            {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(10),
                "daemon not ready"
            );
            std::thread::sleep(Duration::from_millis(1));
        }
        ready_times.push(start.elapsed());
        if run == 0 {
            std::thread::sleep(Duration::from_secs(2));
            rss = rss_mib(child.id());
            for _ in 0..200 {
                http.get(&format!("{url}/metrics")).unwrap();
            }
            for _ in 0..2000 {
                let t = Instant::now();
                let status = http.get(&format!("{url}/metrics")).unwrap();
                scrape.push(t.elapsed());
                assert_eq!(status, 200);
            }
        }
        let _ = Command::new("kill")
            .arg("-TERM")
            .arg(child.id().to_string())
            .status();
        let _ = child.wait();
    }
    ready_times.sort();
    scrape.sort();
    println!("foundation benchmark (release build, 2-core machine)");
    println!(
        "exec to /readyz 200 (median of 5): {:.1} ms (target < 200 ms)",
        percentile(&ready_times, 0.5).as_secs_f64() * 1e3
    );
    println!("idle RSS after start: {rss:.1} MiB (target < 20 MiB)");
    println!(
        "/metrics scrape latency over 2000 requests: p50 {:.3} ms, p99 {:.3} ms (target p99 < 2 ms)",
        percentile(&scrape, 0.5).as_secs_f64() * 1e3,
        percentile(&scrape, 0.99).as_secs_f64() * 1e3
    );
}

/// A minimal keep-alive HTTP/1.1 GET client on std, so the bench needs no async runtime.
mod http_get {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpStream;
    use std::sync::Mutex;

    pub struct Client {
        conn: Mutex<Option<(String, BufReader<TcpStream>)>>,
    }

    impl Client {
        pub fn new() -> Self {
            Self {
                conn: Mutex::new(None),
            }
        }

        /// GETs `url` (http://host:port/path) and returns the status code.
        pub fn get(&self, url: &str) -> std::io::Result<u16> {
            let rest = url.strip_prefix("http://").expect("http URL");
            let (host, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
            let mut guard = self.conn.lock().unwrap();
            if guard.as_ref().is_none_or(|(h, _)| h != host) {
                let stream = TcpStream::connect(host)?;
                stream.set_nodelay(true)?;
                *guard = Some((host.to_string(), BufReader::new(stream)));
            }
            let result = (|| {
                let (_, reader) = guard.as_mut().unwrap();
                write!(
                    reader.get_mut(),
                    "GET {path} HTTP/1.1\r\nHost: {host}\r\n\r\n"
                )?;
                let mut line = String::new();
                reader.read_line(&mut line)?;
                let status: u16 = line
                    .split_whitespace()
                    .nth(1)
                    .and_then(|s| s.parse().ok())
                    .unwrap_or(0);
                let mut len = 0usize;
                loop {
                    line.clear();
                    reader.read_line(&mut line)?;
                    if line == "\r\n" || line.is_empty() {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        len = v.trim().parse().unwrap_or(0);
                    }
                }
                let mut body = vec![0; len];
                reader.read_exact(&mut body)?;
                Ok(status)
            })();
            if result.is_err() {
                *guard = None;
            }
            result
        }
    }
}
