//! One MCP server's connection, kept up by a supervisor task: start (a child process over
//! stdio, or Streamable HTTP), initialize and list the tools within `timeout`, then wait for
//! the connection to end; when it does (the process died, the HTTP server went away) the
//! supervisor starts it again after a backoff (1 s doubling to 60 s, back to 1 s after a
//! minute up). Meanwhile its tools answer an error saying so. Each change is written to the
//! health map `/readyz` shows (`mcp_<server>`) and to `sre_agent_component_healthy`.
//! Messages from the server are bounded (`max_bytes`); a larger one is dropped. A stdio
//! server's process is set up and reaped by `child.rs`.

use std::collections::{BTreeMap, HashMap};
use std::process::Stdio;
use std::sync::{Arc, Mutex, RwLock};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation};
use rmcp::service::{Peer, RoleClient, RunningService};
use rmcp::transport::StreamableHttpClientTransport;
use rmcp::transport::async_rw::AsyncRwTransport;
use rmcp::transport::streamable_http_client::StreamableHttpClientTransportConfig;
use rmcp::{ServiceError, ServiceExt};
use serde_json::Value;
use tokio::sync::watch;
use tokio_util::sync::CancellationToken;

use super::child;
use crate::config::McpServerConfig;
use crate::integrations::health::{ComponentHealth, ComponentStatus};
use crate::telemetry::Metrics;
use crate::text::{fence, truncate};

/// Longest backoff between two starts of a server.
const MAX_BACKOFF: Duration = Duration::from_secs(60);
/// How long a connection must stay up for the backoff to start again at one second.
const STABLE: Duration = Duration::from_secs(60);
/// Least time a server gets to start and list its tools: an interpreter or `uvx` can take
/// longer to start than a call should take to answer.
const MIN_START: Duration = Duration::from_secs(60);
/// Longest text kept of an error or a description from the server.
const MAX_TEXT: usize = 1000;

type Client = RunningService<RoleClient, ClientConfig>;

/// What the agent knows of one listed tool.
#[derive(Clone)]
pub struct Listed {
    /// Ours, with the server's own description fenced (it is the server's text).
    pub description: &'static str,
    pub schema: Value,
}

#[derive(Default)]
struct State {
    peer: Option<Peer<RoleClient>>,
    /// The allow-listed tools the server listed last time it was up, by their own name.
    listed: BTreeMap<String, Listed>,
    /// Why it is not up (the last failure), until it is.
    error: Option<String>,
    /// Completed attempts (the first start counts), for waiting on the first one.
    attempts: u64,
    restarts: u64,
}

pub(super) struct Shared {
    pub config: McpServerConfig,
    metrics: Arc<Metrics>,
    state: RwLock<State>,
    health: RwLock<Option<ComponentHealth>>,
    attempts: watch::Sender<u64>,
    /// Descriptions given out as `&'static str`, interned so a restart leaks nothing new.
    interned: Mutex<HashMap<String, &'static str>>,
}

/// A configured MCP server and its supervisor; dropping it stops the supervisor (and the
/// child process with it).
pub struct McpServer {
    pub(super) shared: Arc<Shared>,
    stop: CancellationToken,
}

impl Drop for McpServer {
    fn drop(&mut self) {
        self.stop.cancel();
    }
}

impl McpServer {
    /// The server of `config`; its supervisor starts now when a tokio runtime runs (else its
    /// tools answer that it is not started).
    pub fn start(config: McpServerConfig, metrics: Arc<Metrics>) -> Arc<Self> {
        metrics
            .component_healthy
            .with_label_values(&[&component(&config.name)])
            .set(0);
        let shared = Arc::new(Shared {
            config,
            metrics,
            state: RwLock::new(State::default()),
            health: RwLock::new(None),
            attempts: watch::channel(0).0,
            interned: Mutex::new(HashMap::new()),
        });
        let stop = CancellationToken::new();
        if let Ok(rt) = tokio::runtime::Handle::try_current() {
            rt.spawn(supervise(shared.clone(), stop.clone()));
        } else {
            shared.update(|s| s.error = Some("not started: no async runtime".into()));
        }
        Arc::new(Self { shared, stop })
    }

    pub fn name(&self) -> &str {
        &self.shared.config.name
    }

    /// Reports each change of this server's state to `health` (`/readyz`) from now on.
    pub fn report_to(&self, health: ComponentHealth) {
        if let Ok(mut h) = self.shared.health.write() {
            *h = Some(health);
        }
        self.shared.publish();
    }

    /// Waits until the first start attempt ended (up or failed), at most `timeout`.
    pub async fn first_attempt(&self, timeout: Duration) {
        let mut rx = self.shared.attempts.subscribe();
        let _ = tokio::time::timeout(timeout, rx.wait_for(|n| *n > 0)).await;
    }

    /// The connection, or why there is none.
    pub fn peer(&self) -> Result<Peer<RoleClient>, String> {
        let state = self
            .shared
            .state
            .read()
            .map_err(|_| "state lock poisoned")?;
        match (&state.peer, &state.error) {
            (Some(p), _) if !p.is_transport_closed() => Ok(p.clone()),
            (_, Some(e)) => Err(format!(
                "MCP server {} is down ({e}); it is being restarted",
                self.name()
            )),
            _ => Err(format!("MCP server {} is starting", self.name())),
        }
    }

    /// What the server listed for `tool` when it was last up.
    pub fn listed(&self, tool: &str) -> Option<Listed> {
        self.shared.state.read().ok()?.listed.get(tool).cloned()
    }

    /// The last failure, when it is not up.
    pub fn error(&self) -> Option<String> {
        self.shared.state.read().ok()?.error.clone()
    }

    /// How many times it was started again after it ended or failed.
    pub fn restarts(&self) -> u64 {
        self.shared.state.read().map(|s| s.restarts).unwrap_or(0)
    }

    /// The longest wait for starting and listing the tools.
    pub fn start_limit(&self) -> Duration {
        start_limit(&self.shared.config)
    }

    /// The longest wait for one call.
    pub fn timeout(&self) -> Duration {
        self.shared.config.timeout.get()
    }
}

/// The component name of `server` in health and metrics.
pub fn component(server: &str) -> String {
    format!("mcp_{server}")
}

impl Shared {
    fn update(&self, f: impl FnOnce(&mut State)) {
        if let Ok(mut s) = self.state.write() {
            f(&mut s);
        }
        self.publish();
    }

    /// Writes the current state to the health map and the gauge.
    fn publish(&self) {
        let (healthy, error) = match self.state.read() {
            Ok(s) => (s.peer.is_some() && s.error.is_none(), s.error.clone()),
            Err(_) => (false, Some("state lock poisoned".into())),
        };
        let name = component(&self.config.name);
        self.metrics
            .component_healthy
            .with_label_values(&[&name])
            .set(i64::from(healthy));
        let Ok(guard) = self.health.read() else {
            return;
        };
        if let Some(health) = guard.as_ref()
            && let Ok(mut map) = health.write()
        {
            map.insert(
                name,
                ComponentStatus {
                    healthy,
                    url: self.config.target(),
                    error,
                    checked_at: chrono::Utc::now(),
                },
            );
        }
    }

    fn intern(&self, text: String) -> &'static str {
        let Ok(mut interned) = self.interned.lock() else {
            return "(description unavailable)";
        };
        // A server that changes its descriptions on every start cannot make this grow
        // without bound: past 256 distinct texts, the newest is not kept.
        if let Some(s) = interned.get(&text) {
            return s;
        }
        if interned.len() >= 256 {
            return "(the server changed its descriptions too often; not shown)";
        }
        let leaked: &'static str = Box::leak(text.clone().into_boxed_str());
        interned.insert(text, leaked);
        leaked
    }

    /// The allow-listed tools among `tools`, with our description around theirs.
    fn allowed(&self, tools: Vec<rmcp::model::Tool>) -> BTreeMap<String, Listed> {
        let server = &self.config.name;
        tools
            .into_iter()
            .filter(|t| self.config.tools.iter().any(|a| a == t.name.as_ref()))
            .map(|t| {
                let theirs = t.description.as_deref().unwrap_or("(none)");
                let description = self.intern(format!(
                    "Tool {:?} of the operator's MCP server {server:?}. Its own description:\n{}",
                    t.name.as_ref(),
                    fence(&format!("mcp:{server}"), &truncate(theirs, MAX_TEXT))
                ));
                let listed = Listed {
                    description,
                    schema: Value::Object(t.input_schema.as_ref().clone()),
                };
                (t.name.into_owned(), listed)
            })
            .collect()
    }
}

/// Starts the server, initializes it and lists its tools, all within `timeout`.
async fn connect(
    shared: &Shared,
    stop: &CancellationToken,
) -> Result<(Client, Vec<rmcp::model::Tool>), String> {
    let cfg = &shared.config;
    let info = ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("sre-agent", env!("CARGO_PKG_VERSION")),
    );
    let work = async {
        let client: Client = match (&cfg.command, &cfg.url) {
            (Some(command), _) => {
                let mut cmd = tokio::process::Command::new(command);
                cmd.args(&cfg.args)
                    .env_clear()
                    .envs(child::env(std::env::vars(), cfg))
                    .stdin(Stdio::piped())
                    .stdout(Stdio::piped())
                    .stderr(Stdio::inherit())
                    .kill_on_drop(true);
                let mut child = cmd
                    .spawn()
                    .map_err(|e| format!("cannot start {command:?}: {e}"))?;
                let (Some(stdout), Some(stdin)) = (child.stdout.take(), child.stdin.take()) else {
                    return Err("the child process has no stdio".into());
                };
                let transport =
                    AsyncRwTransport::new_client(stdout, stdin).with_max_line_length(cfg.max_bytes);
                // The child lives as long as the connection: reaped when it ends, killed
                // when the supervisor drops it.
                let client = info
                    .serve(transport)
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?;
                tokio::spawn(child::reap(
                    child,
                    client.cancellation_token(),
                    stop.clone(),
                ));
                client
            }
            (None, Some(url)) => {
                let mut headers = HashMap::new();
                if let (Some(n), Some(v)) = (&cfg.header_name, &cfg.header_value) {
                    let name = reqwest::header::HeaderName::from_bytes(n.as_bytes())
                        .map_err(|e| format!("header_name: {e}"))?;
                    let mut value = reqwest::header::HeaderValue::from_str(v.expose())
                        .map_err(|_| "header_value is not a valid header value".to_string())?;
                    value.set_sensitive(true);
                    headers.insert(name, value);
                }
                let mut config = StreamableHttpClientTransportConfig::with_uri(url.0.as_str())
                    .custom_headers(headers)
                    .max_json_response_size(cfg.max_bytes)
                    .max_sse_event_size(cfg.max_bytes);
                if let Some(t) = &cfg.token {
                    config = config.auth_header(t.expose());
                }
                // Calls are bounded by `timeout` around them; a total timeout here would
                // also cut the server's long-lived event stream.
                let http = reqwest::Client::builder()
                    .connect_timeout(cfg.timeout.get())
                    .redirect(reqwest::redirect::Policy::none())
                    .build()
                    .map_err(|e| format!("HTTP client: {e}"))?;
                let transport = StreamableHttpClientTransport::with_client(http, config);
                info.serve(transport)
                    .await
                    .map_err(|e| format!("initialize failed: {e}"))?
            }
            (None, None) => return Err("no command and no url".into()),
        };
        let tools = client
            .peer()
            .list_all_tools()
            .await
            .map_err(|e| format!("listing its tools failed: {}", describe(&e)))?;
        Ok::<_, String>((client, tools))
    };
    let limit = start_limit(cfg);
    match tokio::time::timeout(limit, work).await {
        Ok(r) => r.map_err(|e| truncate(&e, MAX_TEXT)),
        Err(_) => Err(format!("did not start and list its tools within {limit:?}")),
    }
}

/// How long a server may take to start and list its tools: its `timeout`, at least
/// [`MIN_START`].
pub fn start_limit(cfg: &McpServerConfig) -> Duration {
    cfg.timeout.get().max(MIN_START)
}

/// An rmcp error in words, bounded.
pub fn describe(e: &ServiceError) -> String {
    truncate(&e.to_string(), MAX_TEXT)
}

/// Keeps the server up until `stop`.
async fn supervise(shared: Arc<Shared>, stop: CancellationToken) {
    let name = shared.config.name.clone();
    let mut failures: u32 = 0;
    loop {
        let outcome = tokio::select! {
            _ = stop.cancelled() => return,
            r = connect(&shared, &stop) => r,
        };
        let error = match outcome {
            Ok((client, tools)) => {
                let listed = shared.allowed(tools);
                let missing: Vec<&String> = shared
                    .config
                    .tools
                    .iter()
                    .filter(|t| !listed.contains_key(*t))
                    .collect();
                if !missing.is_empty() {
                    tracing::warn!(server = %name, ?missing, "MCP server does not list these allowed tools");
                }
                tracing::info!(server = %name, tools = listed.len(), "MCP server up");
                let up_since = Instant::now();
                shared.update(|s| {
                    s.peer = Some(client.peer().clone());
                    s.listed = listed;
                    s.error = None;
                    s.attempts += 1;
                });
                shared.attempts.send_modify(|n| *n += 1);
                let end = client.cancellation_token();
                let ended = tokio::select! {
                    _ = stop.cancelled() => {
                        end.cancel();
                        return;
                    }
                    q = client.waiting() => match q {
                        Ok(q) => format!("{q:?}"),
                        Err(e) => e.to_string(),
                    },
                };
                if up_since.elapsed() >= STABLE {
                    failures = 0;
                }
                format!("the connection ended ({ended})")
            }
            Err(e) => {
                shared.update(|s| s.attempts += 1);
                shared.attempts.send_modify(|n| *n += 1);
                e
            }
        };
        failures = failures.saturating_add(1);
        let delay = backoff(failures);
        tracing::warn!(server = %name, error = %error, retry_in = ?delay, "MCP server down");
        shared.update(|s| {
            s.peer = None;
            s.error = Some(error);
        });
        tokio::select! {
            _ = stop.cancelled() => return,
            _ = tokio::time::sleep(delay) => {}
        }
        shared.update(|s| s.restarts += 1);
        shared
            .metrics
            .mcp_client_restarts
            .with_label_values(&[&name])
            .inc();
    }
}

/// 1 s, 2 s, 4 s … up to a minute.
fn backoff(failures: u32) -> Duration {
    let secs = 1u64
        .checked_shl(failures.saturating_sub(1).min(16))
        .unwrap_or(u64::MAX);
    Duration::from_secs(secs).min(MAX_BACKOFF)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backoff_doubles_from_one_second_to_a_minute() {
        let d: Vec<u64> = [1, 2, 3, 4, 6, 7, 40, u32::MAX]
            .map(|n| backoff(n).as_secs())
            .to_vec();
        assert_eq!(d, vec![1, 2, 4, 8, 32, 60, 60, 60]);
    }
}
