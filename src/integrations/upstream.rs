//! The HTTP plumbing every upstream client shares: the one place a `reqwest` client is
//! built (timeouts, user agent, extra CA file, `verify_tls = false`, redirects followed
//! only within the origin), authentication, bodies read up to a cap, and errors naming the
//! service, the redacted URL and the status or cause.

use std::path::PathBuf;
use std::time::Duration;

use serde::de::DeserializeOwned;
use url::Url;

use crate::config::Secret;
pub use crate::config::redact_url;

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

/// The largest answer an upstream may send (`UpstreamOptions::max_body`'s default): the rest
/// of a larger one is never read.
pub const MAX_BODY_BYTES: usize = 8 * 1024 * 1024;

/// Redirects followed within one origin before giving up.
const MAX_REDIRECTS: usize = 5;

/// Options for building an [`Upstream`].
#[derive(Clone, Debug)]
pub struct UpstreamOptions {
    pub timeout: Duration,
    pub auth: Option<Auth>,
    /// Extra CA certificate (PEM file) to trust.
    pub ca_file: Option<PathBuf>,
    /// Skip certificate verification (self-signed homelab APIs; warned about at start).
    pub accept_invalid_certs: bool,
    /// The largest answer read; a larger one is an error naming the service and URL.
    pub max_body: usize,
}

impl Default for UpstreamOptions {
    fn default() -> Self {
        Self {
            timeout: Duration::from_secs(15),
            auth: None,
            ca_file: None,
            accept_invalid_certs: false,
            max_body: MAX_BODY_BYTES,
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
    max_body: usize,
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
            .pool_max_idle_per_host(4)
            .redirect(same_origin_redirects());
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
            max_body: opts.max_body,
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
        // reqwest's text would name the URL again, with its query.
        let e = e.without_url();
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

    /// GETs `path` with `query` and returns at most `max` bytes of a 2xx answer, and whether
    /// the answer was longer (the rest is never read).
    pub async fn get_prefix(
        &self,
        path: &str,
        query: &[(&str, String)],
        max: usize,
    ) -> Result<(bytes::Bytes, bool), UpstreamError> {
        let url = self.url(path);
        self.send_capped(&url, self.http.get(url.clone()).query(query), max)
            .await
    }

    /// Sends `req` (authorized here) and returns the body of a 2xx answer, failing when it
    /// is larger than the cap.
    async fn send(
        &self,
        url: &Url,
        req: reqwest::RequestBuilder,
    ) -> Result<bytes::Bytes, UpstreamError> {
        match self.send_capped(url, req, self.max_body).await? {
            (body, false) => Ok(body),
            (_, true) => Err(UpstreamError::Decode {
                service: self.service,
                url: redact_url(url),
                reason: format!(
                    "the answer is larger than {} (not read further)",
                    human_bytes(self.max_body)
                ),
            }),
        }
    }

    /// Sends `req` (authorized here); a 2xx answer's first `max` bytes and whether there
    /// was more, or the error of any other answer.
    async fn send_capped(
        &self,
        url: &Url,
        req: reqwest::RequestBuilder,
        max: usize,
    ) -> Result<(bytes::Bytes, bool), UpstreamError> {
        let resp = self
            .authorize(req)
            .send()
            .await
            .map_err(|e| self.transport_error(url, e))?;
        let status = resp.status();
        if status.is_redirection() {
            let to = resp
                .headers()
                .get(reqwest::header::LOCATION)
                .and_then(|v| v.to_str().ok())
                .and_then(|l| resp.url().join(l).ok())
                .map_or_else(|| "elsewhere".to_string(), |u| redact_url(&u));
            return Err(UpstreamError::Status {
                service: self.service,
                url: redact_url(url),
                status: status.as_u16(),
                body: format!(
                    "redirect to {to} not followed (only redirects within the same origin are)"
                ),
            });
        }
        let limit = if status.is_success() {
            max
        } else {
            max.min(MAX_ERROR_BODY)
        };
        let (body, truncated) = read_capped(resp, limit)
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
        Ok((body, truncated))
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

    /// GETs `path` and succeeds on any 2xx answered within `within` (or the client's
    /// timeout, if shorter): health checks give up sooner than queries.
    pub async fn probe(&self, path: &str, within: Duration) -> Result<(), UpstreamError> {
        let within = within.min(self.timeout);
        let url = self.url(path);
        let req = self.http.get(url.clone()).timeout(within);
        match self.send(&url, req).await {
            Ok(_) => Ok(()),
            Err(UpstreamError::Timeout { service, url, .. }) => Err(UpstreamError::Timeout {
                service,
                url,
                timeout: within,
            }),
            Err(e) => Err(e),
        }
    }
}

/// Bytes of an error answer read for its excerpt.
const MAX_ERROR_BODY: usize = 64 * 1024;

/// Follows a redirect only within the origin of the request: configured credentials and
/// headers (`X-Api-Key` survives reqwest's cross-host stripping) never go elsewhere.
fn same_origin_redirects() -> reqwest::redirect::Policy {
    reqwest::redirect::Policy::custom(|attempt| {
        let same_origin = attempt
            .previous()
            .first()
            .is_some_and(|first| first.origin() == attempt.url().origin());
        if !same_origin {
            attempt.stop()
        } else if attempt.previous().len() > MAX_REDIRECTS {
            attempt.error("too many redirects")
        } else {
            attempt.follow()
        }
    })
}

/// Reads at most `max` bytes of the body of `resp`, and whether it had more (which is never
/// read: a 200 MiB answer costs `max`, not its size).
pub async fn read_capped(
    mut resp: reqwest::Response,
    max: usize,
) -> Result<(bytes::Bytes, bool), reqwest::Error> {
    let mut out = bytes::BytesMut::with_capacity(
        resp.content_length()
            .map_or(0, |n| n.min(max as u64) as usize)
            .min(64 * 1024),
    );
    while let Some(chunk) = resp.chunk().await? {
        let room = max - out.len();
        if chunk.len() > room {
            out.extend_from_slice(&chunk[..room]);
            return Ok((out.freeze(), true));
        }
        out.extend_from_slice(&chunk);
    }
    Ok((out.freeze(), false))
}

/// `n` bytes as "8 MiB", "64 KiB" or "100 bytes".
fn human_bytes(n: usize) -> String {
    match n {
        n if n >= 1 << 20 && n % (1 << 20) == 0 => format!("{} MiB", n >> 20),
        n if n >= 1 << 10 && n % (1 << 10) == 0 => format!("{} KiB", n >> 10),
        n => format!("{n} bytes"),
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
