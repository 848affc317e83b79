//! The one way the CLI finds and talks to a running daemon: `server.listen` (an unspecified
//! address means this host's loopback), `/healthz` to tell it answers, and the JSON API with
//! `server.api_token` as bearer.

use std::net::SocketAddr;
use std::time::Duration;

use reqwest::{Method, StatusCode};
use serde::de::DeserializeOwned;

use crate::config::Config;

/// A failed request to the daemon's API.
#[derive(Debug, thiserror::Error)]
pub enum DaemonError {
    #[error("{url} is unreachable: {source}")]
    Unreachable {
        url: String,
        #[source]
        source: reqwest::Error,
    },
    #[error("{url} answered {status}: {body}")]
    Status {
        url: String,
        status: StatusCode,
        body: String,
    },
    #[error("{url} answered {status}")]
    Unhealthy { url: String, status: StatusCode },
    #[error("{url} sent unreadable JSON: {source}")]
    Decode {
        url: String,
        #[source]
        source: serde_json::Error,
    },
}

/// A daemon's API client.
pub struct Daemon {
    base: String,
    http: reqwest::Client,
    token: Option<String>,
}

/// Where the daemon of `config` listens, as a connectable address.
pub fn address(config: &Config) -> SocketAddr {
    let mut addr = config.listen_addr();
    if addr.ip().is_unspecified() {
        addr.set_ip(std::net::Ipv4Addr::LOCALHOST.into());
    }
    addr
}

/// `http://<address>`, or `url` when given.
pub fn base_url(config: &Config, url: Option<&str>) -> String {
    url.map_or_else(
        || format!("http://{}", address(config)),
        |u| u.trim_end_matches('/').to_string(),
    )
}

impl Daemon {
    /// The daemon of `config` when its /healthz answers quickly; `None` when none runs.
    pub async fn find(config: &Config, timeout: Duration) -> Option<Self> {
        let addr = address(config);
        // A plain TCP connect first: when nothing listens, no HTTP client is built at all.
        let connect = tokio::net::TcpStream::connect(addr);
        if !matches!(
            tokio::time::timeout(Duration::from_millis(300), connect).await,
            Ok(Ok(_))
        ) {
            return None;
        }
        let daemon = Self::new(config, None, timeout).ok()?;
        daemon
            .healthz(Duration::from_millis(500))
            .await
            .ok()
            .map(|()| daemon)
    }

    /// A client for the daemon at `url` (default: `server.listen`); requests time out
    /// after `timeout`.
    pub fn new(config: &Config, url: Option<&str>, timeout: Duration) -> reqwest::Result<Self> {
        Ok(Self {
            base: base_url(config, url),
            http: reqwest::Client::builder().timeout(timeout).build()?,
            // A daemon beyond loopback without `server.api_token` generated one.
            token: config
                .server
                .api_token
                .clone()
                .or_else(|| crate::app::api_token::generated(config))
                .map(|t| t.expose().to_string()),
        })
    }

    /// Succeeds when `GET /healthz` answers 2xx within `timeout`.
    pub async fn healthz(&self, timeout: Duration) -> Result<(), DaemonError> {
        let url = self.url("/healthz");
        let resp = send(self.http.get(&url).timeout(timeout), &url).await?;
        match resp.status() {
            s if s.is_success() => Ok(()),
            status => Err(DaemonError::Unhealthy { url, status }),
        }
    }

    /// The full URL of `path`.
    pub fn url(&self, path: &str) -> String {
        format!("{}{path}", self.base)
    }

    /// Sends a JSON API request and decodes the JSON answer.
    pub async fn request<T: DeserializeOwned>(
        &self,
        method: Method,
        path: &str,
        body: Option<&serde_json::Value>,
    ) -> Result<T, DaemonError> {
        let url = self.url(path);
        let mut req = self.http.request(method, &url);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t);
        }
        if let Some(b) = body {
            req = req.json(b);
        }
        let resp = send(req, &url).await?;
        let status = resp.status();
        let text = resp.text().await.unwrap_or_default();
        if !status.is_success() {
            return Err(DaemonError::Status {
                url,
                status,
                body: text,
            });
        }
        serde_json::from_str(&text).map_err(|source| DaemonError::Decode { url, source })
    }
}

async fn send(req: reqwest::RequestBuilder, url: &str) -> Result<reqwest::Response, DaemonError> {
    req.send().await.map_err(|source| DaemonError::Unreachable {
        url: url.to_string(),
        source,
    })
}
