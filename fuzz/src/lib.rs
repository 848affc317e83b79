//! What the fuzz targets share: a fake upstream that answers every HTTP request with the
//! bytes of the current fuzz input, a configuration whose every integration (and the LLM
//! endpoint) points at it, and one runtime to drive the daemon's async clients.
//!
//! The clients are the daemon's own (`sre_agent::integrations`, `sre_agent::llm`), so an
//! input travels the same way a real answer does: HTTP, size cap, envelope, decoder, then
//! the tool or analyzer that reads it.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use sre_agent::config::{Config, ConfigSource};
use sre_agent::telemetry::Metrics;

/// The answer the fake upstream gives to every request until the next one is set.
#[derive(Clone, Debug, Default)]
pub struct Answer {
    pub status: u16,
    /// Extra header lines (name, value); values with line breaks are dropped.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

/// An HTTP/1.1 server on loopback answering each request with the current [`Answer`].
pub struct Fake {
    addr: SocketAddr,
    answer: Arc<Mutex<Answer>>,
}

impl Fake {
    fn start() -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind a loopback port");
        let addr = listener.local_addr().expect("local address");
        let answer = Arc::new(Mutex::new(Answer::default()));
        let shared = answer.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let answer = shared.lock().expect("answer lock").clone();
                // A thread per connection: the analyzers ask in parallel.
                std::thread::spawn(move || {
                    let _ = serve(stream, &answer);
                });
            }
        });
        Self { addr, answer }
    }

    /// `http://127.0.0.1:PORT`
    pub fn url(&self) -> String {
        format!("http://{}", self.addr)
    }

    pub fn set(&self, answer: Answer) {
        *self.answer.lock().expect("answer lock") = answer;
    }
}

/// Reads one request (head and `Content-Length` body) and writes `answer`, then closes.
fn serve(stream: TcpStream, answer: &Answer) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            return Ok(());
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((name, value)) = line.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    // Read the whole body: closing with unread bytes would reset the connection.
    std::io::copy(
        &mut reader.by_ref().take(length as u64),
        &mut std::io::sink(),
    )?;
    let mut head = format!(
        "HTTP/1.1 {} Fuzz\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n",
        answer.status,
        answer.body.len()
    );
    for (name, value) in &answer.headers {
        if !value.contains(['\r', '\n']) {
            head.push_str(&format!("{name}: {value}\r\n"));
        }
    }
    head.push_str("\r\n");
    let mut stream = stream;
    stream.write_all(head.as_bytes())?;
    stream.write_all(&answer.body)?;
    stream.flush()
}

/// The fake upstream, started on first use.
pub fn fake() -> &'static Fake {
    static FAKE: OnceLock<Fake> = OnceLock::new();
    FAKE.get_or_init(Fake::start)
}

/// One current-thread runtime for every execution (the clients are built inside it).
pub fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: OnceLock<tokio::runtime::Runtime> = OnceLock::new();
    RT.get_or_init(|| {
        sre_agent::install_crypto_provider();
        tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime")
    })
}

/// Metrics for the clients that count (registered in their own registry, once).
pub fn metrics() -> Arc<Metrics> {
    static M: OnceLock<Arc<Metrics>> = OnceLock::new();
    M.get_or_init(|| Arc::new(Metrics::new("fuzz"))).clone()
}

/// The clients of `config`'s integrations, built as the daemon builds them (needs a
/// runtime entered: the Kubernetes client is built on one).
pub fn upstreams(config: &Config) -> sre_agent::integrations::Upstreams {
    sre_agent::integrations::Upstreams::from_config(config).expect("the clients build")
}

/// A configuration with the LLM endpoint and every integration at the fake upstream
/// (no retries, short timeouts), loaded through `Config::load` like the daemon's.
pub fn config() -> &'static Config {
    static CONFIG: OnceLock<(tempfile::TempDir, Config)> = OnceLock::new();
    let (_, config) = CONFIG.get_or_init(|| {
        let url = fake().url();
        let dir = tempfile::tempdir().expect("a temporary directory");
        let kubeconfig = dir.path().join("kubeconfig");
        std::fs::write(
            &kubeconfig,
            format!(
                "apiVersion: v1\nkind: Config\ncurrent-context: fake\n\
                 clusters:\n- name: fake\n  cluster:\n    server: {url}\n\
                 contexts:\n- name: fake\n  context:\n    cluster: fake\n    user: fake\n\
                 users:\n- name: fake\n  user:\n    token: fuzz\n"
            ),
        )
        .expect("write the kubeconfig");
        let toml = format!(
            r#"
[llm]
base_url = "{url}/v1"
max_retries = 0
timeout = "5s"
[prometheus]
url = "{url}"
timeout = "5s"
[loki]
url = "{url}"
timeout = "5s"
[grafana]
url = "{url}"
token = "fuzz"
timeout = "5s"
[alertmanager]
url = "{url}"
timeout = "5s"
[kubernetes]
enabled = true
kubeconfig = "{kubeconfig}"
timeout = "5s"
[proxmox]
url = "{url}"
token_id = "fuzz@pve!fuzz"
token_secret = "fuzz"
timeout = "5s"
[pbs]
url = "{url}"
token_id = "fuzz@pbs!fuzz"
token_secret = "fuzz"
timeout = "5s"
[truenas]
url = "{url}"
api_key = "fuzz"
timeout = "5s"
[runbooks]
dir = "{runbooks}"
"#,
            kubeconfig = kubeconfig.display(),
            runbooks = dir.path().join("runbooks").display(),
        );
        let file = dir.path().join("config.toml");
        std::fs::write(&file, toml).expect("write the config");
        let config = Config::load(&ConfigSource { file: Some(file) })
            .unwrap_or_else(|e| panic!("the fuzz configuration loads: {e}"));
        (dir, config)
    });
    config
}

/// The HTTP status a fuzz input asks for: its number when it is a final status, else 200.
pub fn status(text: &str) -> u16 {
    match text.trim().parse::<u16>() {
        Ok(s @ 200..=599) => s,
        _ => 200,
    }
}

/// Splits an input into its first line (the target's own header) and the rest (the body).
pub fn header_and_body(data: &[u8]) -> (String, Vec<u8>) {
    match data.iter().position(|b| *b == b'\n') {
        Some(i) => (
            String::from_utf8_lossy(&data[..i]).into_owned(),
            data[i + 1..].to_vec(),
        ),
        None => (String::new(), data.to_vec()),
    }
}

/// What `agent/promql.rs` needs of the crate around it (it is compiled here from its
/// source: the daemon keeps it private to the agent).
mod tools {
    pub mod promql {
        pub use sre_agent::tools::promql::{Class, classify, selectors};
    }
}
mod analyze {
    pub mod prom {
        pub use sre_agent::analyze::prom::escape;
    }
}

/// The agent's PromQL helpers for rule expressions, from the daemon's source file.
/// (Formatted with the daemon's sources, not here.)
#[rustfmt::skip]
#[path = "../../src/agent/promql.rs"]
pub mod rule_promql;

/// What the agent does with one rule expression: its value side, direction, metric names
/// and the selectors of each (the evidence plan's queries are built from these).
pub fn read_rule_expression(expr: &str) {
    let value = rule_promql::value_expr(expr);
    let _ = rule_promql::without_comments(expr);
    let _ = rule_promql::fires_below(expr);
    for name in rule_promql::metric_names(expr) {
        assert!(!name.is_empty(), "an empty metric name from {expr:?}");
    }
    let _ = rule_promql::metric_names(&value);
    let _ = sre_agent::tools::promql::selectors(expr);
    let _ = sre_agent::tools::promql::selectors(&value);
}

/// Everything the intake and the evidence plan read from one webhook body.
pub fn read_webhook(source: sre_agent::alerts::AlertSource, data: &[u8]) {
    use sre_agent::alerts::{grouping, label_fingerprint, parse_webhook};
    let Ok(batch) = parse_webhook(source, data) else {
        return;
    };
    let group_by = ["alertname".to_string(), "instance".to_string()];
    for mut alert in batch.alerts {
        let _ = label_fingerprint(&alert.labels);
        let _ = grouping::group_key(&group_by, &alert.labels, &alert.fingerprint);
        let _ = grouping::group_title(&group_by, &alert.labels);
        let _ = rule_promql::identity_selector(&alert.labels);
        if let Some(expr) = alert
            .generator_url
            .as_deref()
            .and_then(rule_promql::expr_from_generator_url)
        {
            read_rule_expression(&expr);
        }
        for value in alert.annotations.values().chain(alert.labels.values()) {
            let _ = rule_promql::escape(value);
        }
        let _ = sre_agent::alerts::cap::cap(&mut alert);
        let _ = sre_agent::text::fence("alert", &alert.name);
    }
}
