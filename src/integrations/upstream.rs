//! The HTTP plumbing every upstream client shares: the one place a `reqwest` client is
//! built (timeouts, user agent, extra CA file, `verify_tls = false`), authentication, and
//! errors naming the service, the redacted URL and the status or cause.

use std::path::PathBuf;
use std::time::Duration;

use serde::de::DeserializeOwned;
use url::Url;

use crate::config::Secret;

/// An upstream failure: which service, which URL, what happened.
#[derive(Debug, Clone, thiserror::Error)]
pub enum UpstreamError {
    #[error("{service} at {url} returned {status}: {body}")]
    Status {
        service: &'static str,
        url: String,
        status: u16,
        body: String,
    },
    #[error("{service} at {url} timed out after {timeout:?}")]
    Timeout {
        service: &'static str,
        url: String,
        timeout: Duration,
    },
    #[error("{service} at {url} is unreachable: {reason}")]
    Transport {
        service: &'static str,
        url: String,
        reason: String,
    },
    #[error("{service} at {url} sent an unexpected response: {reason}")]
    Decode {
        service: &'static str,
        url: String,
        reason: String,
    },
    #[error("{service}: {reason}")]
    Setup {
        service: &'static str,
        reason: String,
    },
}

impl UpstreamError {
    /// Rewrites the body of a `Status` error (e.g. to the upstream's own error message).
    pub fn map_status_body(self, f: impl FnOnce(String) -> String) -> Self {
        match self {
            Self::Status {
                service,
                url,
                status,
                body,
            } => Self::Status {
                service,
                url,
                status,
                body: f(body),
            },
            other => other,
        }
    }

    /// The HTTP status, when the upstream answered with one.
    pub fn status(&self) -> Option<u16> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

/// How a client authenticates.
#[derive(Clone, Debug)]
pub enum Auth {
    Bearer(Secret),
    Basic(String, Secret),
    Header(String, Secret),
}

/// Options for building an [`Upstream`].
#[derive(Clone, Debug)]
pub struct UpstreamOptions {
    pub timeout: Duration,
    pub auth: Option<Auth>,
    /// Extra CA certificate (PEM file) to trust.
    pub ca_file: Option<PathBuf>,
    /// Skip certificate verification (self-signed homelab APIs; warned about at start).
    pub accept_invalid_certs: bool,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(15),
            auth: None,
            ca_file: None,
            accept_invalid_certs: false,
        }
    }
}

/// One upstream service at a base URL.
#[derive(Clone, Debug)]
pub struct Upstream {
    service: &'static str,
    base: Url,
    http: reqwest::Client,
    auth: Option<Auth>,
    timeout: Duration,
}

/// The URL without user, password or query, safe for logs and error messages.
pub fn redact_url(url: &Url) -> String {
    let mut u = url.clone();
    let _ = u.set_username("");
    let _ = u.set_password(None);
    u.set_query(None);
    u.to_string()
}

impl Upstream {
    pub fn new(
        service: &'static str,
        base: &Url,
        opts: UpstreamOptions,
    ) -> Result<Self, UpstreamError> {
        let mut builder = reqwest::Client::builder()
            .timeout(opts.timeout)
            .connect_timeout(opts.timeout.min(Duration::from_secs(10)))
            .user_agent(concat!("sre-agent/", env!("CARGO_PKG_VERSION")))
            .pool_max_idle_per_host(4);
        if let Some(path) = &opts.ca_file {
            let pem = std::fs::read(path).map_err(|e| UpstreamError::Setup {
                service,
                reason: format!("cannot read CA file {}: {e}", path.display()),
            })?;
            for cert in
                reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| UpstreamError::Setup {
                    service,
                    reason: format!("CA file {} is not PEM: {e}", path.display()),
                })?
            {
                builder = builder.add_root_certificate(cert);
            }
        }
        if opts.accept_invalid_certs {
            builder = builder.tls_danger_accept_invalid_certs(true);
        }
        let http = builder.build().map_err(|e| UpstreamError::Setup {
            service,
            reason: e.to_string(),
        })?;
        let mut base = base.clone();
        if !base.path().ends_with('/') {
            base.set_path(&format!("{}/", base.path()));
        }
        Ok(Self {
            service,
            base,
            http,
            auth: opts.auth,
            timeout: opts.timeout,
        })
    }

    pub fn service(&self) -> &'static str {
        self.service
    }

    /// The base URL, redacted.
    pub fn base_display(&self) -> String {
        redact_url(&self.base).trim_end_matches('/').to_string()
    }

    /// `path` (relative, e.g. "api/v1/query") under the base URL, keeping any base path.
    pub fn url(&self, path: &str) -> Url {
        self.base
            .join(path.trim_start_matches('/'))
            .unwrap_or_else(|_| self.base.clone())
    }

    fn authorize(&self, req: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match &self.auth {
            None => req,
            Some(Auth::Bearer(t)) => req.bearer_auth(t.expose()),
            Some(Auth::Basic(u, p)) => req.basic_auth(u, Some(p.expose())),
            Some(Auth::Header(name, v)) => req.header(name.as_str(), v.expose()),
        }
    }

    fn transport_error(&self, url: &Url, e: reqwest::Error) -> UpstreamError {
        let url = redact_url(url);
        if e.is_timeout() {
            return UpstreamError::Timeout {
                service: self.service,
                url,
                timeout: self.timeout,
            };
        }
        let mut reason = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            reason = format!("{reason}: {s}");
            source = s.source();
        }
        UpstreamError::Transport {
            service: self.service,
            url,
            reason,
        }
    }

    /// GETs `path` with `query` and returns the body of a 2xx answer.
    pub async fn get_bytes(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<bytes::Bytes, UpstreamError> {
        let url = self.url(path);
        self.send(&url, self.http.get(url.clone()).query(query))
            .await
    }

    /// POSTs `body` as JSON to `path` (a read-only query method, such as TrueNAS'
    /// `disk/temperatures`) and decodes a JSON answer.
    pub async fn post_json<T: DeserializeOwned>(
        &self,
        path: &str,
        body: &serde_json::Value,
    ) -> Result<T, UpstreamError> {
        let url = self.url(path);
        let answer = self
            .send(&url, self.http.post(url.clone()).json(body))
            .await?;
        self.decode(path, &answer)
    }

    /// Sends `req` (authorized here) and returns the body of a 2xx answer.
    async fn send(
        &self,
        url: &Url,
        req: reqwest::RequestBuilder,
    ) -> Result<bytes::Bytes, UpstreamError> {
        let resp = self
            .authorize(req)
            .send()
            .await
            .map_err(|e| self.transport_error(url, e))?;
        let status = resp.status();
        let body = resp
            .bytes()
            .await
            .map_err(|e| self.transport_error(url, e))?;
        if !status.is_success() {
            return Err(UpstreamError::Status {
                service: self.service,
                url: redact_url(url),
                status: status.as_u16(),
                body: excerpt(&body, 300),
            });
        }
        Ok(body)
    }

    fn decode<T: DeserializeOwned>(&self, path: &str, body: &[u8]) -> Result<T, UpstreamError> {
        serde_json::from_slice(body).map_err(|e| UpstreamError::Decode {
            service: self.service,
            url: redact_url(&self.url(path)),
            reason: format!("{e}; body starts: {}", excerpt(body, 200)),
        })
    }

    /// GETs `path` and decodes a JSON answer.
    pub async fn get_json<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, UpstreamError> {
        let body = self.get_bytes(path, query).await?;
        self.decode(path, &body)
    }

    /// GETs `path` and succeeds on any 2xx (health checks).
    pub async fn probe(&self, path: &str) -> Result<(), UpstreamError> {
        self.get_bytes(path, &[]).await.map(|_| ())
    }
}

/// The first `max` characters of a body, on one line, for error messages.
pub(crate) fn excerpt(body: &[u8], max: usize) -> String {
    let text = String::from_utf8_lossy(body);
    let one_line: String = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() > max {
        format!("{}…", crate::text::first_chars(&one_line, max))
    } else if one_line.is_empty() {
        "(empty body)".to_string()
    } else {
        one_line
    }
}
