//! The LLM client: any OpenAI-compatible `/chat/completions` endpoint (OpenAI, Ollama,
//! vLLM, llama.cpp) with tool calling, lenient parsing of provider quirks, bounded retries
//! with backoff honouring `Retry-After`, and the `sre_agent_llm_*` metrics (calls, latency,
//! tokens, estimated cost). The API key is only ever sent in the Authorization header.
//!
//! What small local models send is read leniently: tool calls written as text become tool
//! calls (`text_calls`), broken argument JSON is repaired (`repair`), tool names match the
//! offered ones loosely (`names`), and `context_window` estimates prompt tokens and
//! fits a conversation into the model's context window.
//!
//! Why reqwest and not `async_openai::Client::create_byot`: async-openai 0.43 turns an
//! error response into `OpenAIError::ApiError` after dropping the response headers (so
//! `Retry-After` is lost), and parses the error body with `code: Option<String>`, so the
//! integer `code` of vLLM/llama.cpp errors becomes a deserialization error. Correct retry
//! handling needs both, so the HTTP exchange is done here with reqwest; async-openai still
//! provides the typed tool definitions of the request (`ChatCompletionTools`).

mod context_window;
#[cfg(test)]
pub(crate) mod fixtures;
#[cfg(test)]
mod fuzz_tests;
mod names;
mod normalize;
mod repair;
mod retry;
mod text_calls;
mod wire;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::config::{LlmConfig, ModelPricing, Secret, redact_url};
use crate::integrations::read_capped;
use crate::telemetry::Metrics;
use crate::tools::ToolDefinition;

pub use context_window::{
    CHARS_PER_TOKEN, ContextWindow, Fit, estimate_tokens, summarise_fenced, summarise_lines,
};
pub use names::match_tool_name;
pub use repair::{parse_lenient, tool_arguments};
pub use retry::{backoff_delay, parse_retry_after};
pub use text_calls::{TextCalls, extract_text_calls};
pub use wire::request_body;

/// The largest answer read from the endpoint; the rest of a larger one is never read.
const MAX_RESPONSE_BYTES: usize = 8 * 1024 * 1024;

/// One message of the conversation, in the roles the Chat Completions API knows.
#[derive(Clone, Debug, PartialEq)]
pub enum ChatMessage {
    System(String),
    User(String),
    /// An assistant turn; echoed back exactly, with its tool calls.
    Assistant {
        content: Option<String>,
        tool_calls: Vec<ToolCall>,
    },
    /// The result of one tool call.
    Tool {
        tool_call_id: String,
        content: String,
    },
}

/// A tool call requested by the model. `arguments` is the parsed JSON object, or the raw
/// text as a JSON string when the model sent something that is not valid JSON.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ToolCall {
    pub id: String,
    pub name: String,
    pub arguments: Value,
}

/// Token counts of one call or a sum of calls. `cached` is part of `prompt`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize, utoipa::ToSchema)]
pub struct Usage {
    pub prompt: u64,
    pub completion: u64,
    pub cached: u64,
}

crate::telemetry::labelled! {
    /// The counts of a [`Usage`]: the `type` label of `sre_agent_llm_tokens_total`.
    pub enum TokenKind {
        Prompt => "prompt",
        Completion => "completion",
        Cached => "cached",
    }
}

impl Usage {
    /// Saturating, like the sums below: a server may report any count.
    pub fn total(&self) -> u64 {
        self.prompt.saturating_add(self.completion)
    }

    /// The count of one kind.
    pub fn of(&self, kind: TokenKind) -> u64 {
        match kind {
            TokenKind::Prompt => self.prompt,
            TokenKind::Completion => self.completion,
            TokenKind::Cached => self.cached,
        }
    }
}

impl std::ops::AddAssign for Usage {
    fn add_assign(&mut self, o: Self) {
        self.prompt = self.prompt.saturating_add(o.prompt);
        self.completion = self.completion.saturating_add(o.completion);
        self.cached = self.cached.saturating_add(o.cached);
    }
}

/// The model's answer to one call.
#[derive(Clone, Debug, PartialEq)]
pub struct ChatResponse {
    pub content: Option<String>,
    pub tool_calls: Vec<ToolCall>,
    pub usage: Usage,
    pub cost_usd: f64,
    pub model: String,
    /// What was repaired to read this answer ("1 tool call(s) read from the text of the
    /// answer", "tool name … read as …"); empty for a well-formed answer.
    pub repairs: Vec<String>,
}

/// Why an LLM call failed; every message names the endpoint URL.
#[derive(Debug, thiserror::Error)]
pub enum LlmError {
    #[error("LLM not configured (set llm.base_url)")]
    NotConfigured,
    #[error("LLM endpoint {url} answered {status}: {message}")]
    Status {
        url: String,
        status: u16,
        message: String,
        /// The error body's machine-readable code (`error.code`, else `error.type`).
        code: Option<String>,
    },
    #[error("LLM endpoint {url} did not answer within {timeout:?}")]
    Timeout { url: String, timeout: Duration },
    #[error("LLM endpoint {url} is unreachable: {reason}")]
    Transport { url: String, reason: String },
    #[error("LLM endpoint {url} sent a response that cannot be read: {reason}")]
    BadResponse { url: String, reason: String },
}

impl LlmError {
    /// Whether the server refused the request because it does not fit the model's context
    /// window (OpenAI `context_length_exceeded`, llama.cpp `exceed_context_size_error`,
    /// vLLM "maximum context length").
    pub fn is_context_overflow(&self) -> bool {
        let Self::Status {
            status,
            message,
            code,
            ..
        } = self
        else {
            return false;
        };
        let code = code.as_deref().unwrap_or_default();
        let m = message.to_lowercase();
        matches!(*status, 400 | 413 | 422)
            && (code.contains("context")
                || (m.contains("context")
                    && ["length", "size", "window", "exceed"]
                        .iter()
                        .any(|k| m.contains(k)))
                || m.contains("too many tokens"))
    }

    /// Whether another attempt may succeed (429 except quota, 408/409, 5xx, timeouts).
    fn is_transient(&self) -> bool {
        match self {
            Self::Status { status, code, .. } => {
                (*status == 429 && code.as_deref() != Some("insufficient_quota"))
                    || matches!(status, 408 | 409)
                    || *status >= 500
            }
            Self::Timeout { .. } | Self::Transport { .. } => true,
            Self::NotConfigured | Self::BadResponse { .. } => false,
        }
    }
}

/// A client for one configured endpoint and model. Cheap to clone.
#[derive(Clone)]
pub struct LlmClient {
    inner: Arc<Inner>,
}

struct Inner {
    http: reqwest::Client,
    /// The chat completions URL without credentials or query, for errors and logs.
    url: String,
    /// The URL requests go to (it may carry credentials).
    endpoint: String,
    api_key: Option<Secret>,
    model: String,
    timeout: Duration,
    max_retries: u32,
    max_answer_tokens: u32,
    pricing: Option<ModelPricing>,
    warned_unpriced: AtomicBool,
    metrics: Arc<Metrics>,
}

impl LlmClient {
    /// A client for `config`, or `None` when `llm.base_url` is unset.
    pub fn new(config: &LlmConfig, metrics: Arc<Metrics>) -> Result<Option<Self>, LlmError> {
        let Some(base) = &config.base_url else {
            return Ok(None);
        };
        let endpoint = format!("{}/chat/completions", base.0.as_str().trim_end_matches('/'));
        let url = redact_url(&url::Url::parse(&endpoint).unwrap_or_else(|_| base.0.clone()));
        let timeout = config.timeout.get();
        let mut builder = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(timeout.min(Duration::from_secs(10)));
        if base.0.scheme() == "http" {
            // Plain HTTP (a local Ollama, vLLM, llama.cpp): skip loading the system CA
            // store, which costs startup time and memory for nothing.
            builder = builder.tls_certs_only([]);
        }
        let http = builder.build().map_err(|e| LlmError::Transport {
            url: url.clone(),
            reason: e.to_string(),
        })?;
        metrics.llm_cost_dollars.with_label_values(&[&config.model]);
        Ok(Some(Self {
            inner: Arc::new(Inner {
                http,
                url,
                endpoint,
                api_key: config.api_key.clone(),
                model: config.model.clone(),
                timeout,
                max_retries: config.max_retries,
                max_answer_tokens: config.max_answer_tokens,
                pricing: crate::config::price_for(config, &config.model),
                warned_unpriced: AtomicBool::new(false),
                metrics,
            }),
        }))
    }

    pub fn model(&self) -> &str {
        &self.inner.model
    }

    /// The chat completions URL, without credentials.
    pub fn url(&self) -> &str {
        &self.inner.url
    }

    /// One chat completion, retried on transient failures; `tools = &[]` for a plain answer.
    pub async fn chat(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
    ) -> Result<ChatResponse, LlmError> {
        self.chat_with(messages, tools, false).await
    }

    /// One chat completion that may not call `tools` (they are sent, so a server's cached
    /// prompt still matches; see [`wire::request_body`]). Tool calls the server returns
    /// anyway are dropped.
    pub async fn answer_only(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
    ) -> Result<ChatResponse, LlmError> {
        let mut resp = self.chat_with(messages, tools, true).await?;
        resp.tool_calls.clear();
        Ok(resp)
    }

    async fn chat_with(
        &self,
        messages: &[ChatMessage],
        tools: &[ToolDefinition],
        answer_only: bool,
    ) -> Result<ChatResponse, LlmError> {
        let inner = &self.inner;
        let body = wire::request_body(
            &inner.model,
            messages,
            tools,
            inner.max_answer_tokens,
            answer_only,
        );
        let start = Instant::now();
        let mut attempt = 0;
        let result = loop {
            match self.attempt(&body).await {
                Ok(r) => break Ok(r),
                Err((e, retry_after)) if e.is_transient() && attempt < inner.max_retries => {
                    let delay = retry_after.unwrap_or_else(|| backoff_delay(attempt));
                    tracing::warn!(url = %inner.url, error = %e, ?delay, attempt = attempt + 1,
                        "LLM call failed; retrying");
                    tokio::time::sleep(delay).await;
                    attempt += 1;
                }
                Err((e, _)) => break Err(e),
            }
        };
        let m = &inner.metrics;
        m.llm_call_duration.observe(start.elapsed().as_secs_f64());
        let status = crate::telemetry::CallStatus::of(result.is_ok()).label();
        m.llm_calls.with_label_values(&[status]).inc();
        let (content, tool_calls, usage) = result?;
        let offered: Vec<&str> = tools.iter().map(|t| t.name).collect();
        let (content, tool_calls, repairs) =
            normalize::normalize_response(content, tool_calls, &offered);
        let cost_usd = self.cost(usage);
        for &kind in TokenKind::ALL {
            m.llm_tokens
                .with_label_values(&[kind.label()])
                .inc_by(usage.of(kind));
        }
        m.llm_cost_dollars
            .with_label_values(&[&inner.model])
            .inc_by(cost_usd);
        Ok(ChatResponse {
            content,
            tool_calls,
            usage,
            cost_usd,
            model: inner.model.clone(),
            repairs,
        })
    }

    /// One HTTP exchange; on failure also the server's `Retry-After`, if any.
    async fn attempt(&self, body: &Value) -> Result<wire::Parsed, (LlmError, Option<Duration>)> {
        let inner = &self.inner;
        let url = &inner.url;
        let mut req = inner.http.post(&inner.endpoint).json(body);
        if let Some(key) = &inner.api_key {
            req = req.bearer_auth(key.expose());
        }
        let resp = req.send().await.map_err(|e| (self.transport(e), None))?;
        let status = resp.status();
        let retry_after = resp
            .headers()
            .get(reqwest::header::RETRY_AFTER)
            .and_then(|v| v.to_str().ok())
            .and_then(parse_retry_after);
        let (bytes, too_large) = read_capped(resp, MAX_RESPONSE_BYTES)
            .await
            .map_err(|e| (self.transport(e), None))?;
        if too_large && status.is_success() {
            let reason = format!("the answer is larger than {MAX_RESPONSE_BYTES} bytes");
            let err = LlmError::BadResponse {
                url: url.clone(),
                reason,
            };
            return Err((err, None));
        }
        if !status.is_success() {
            let err = LlmError::Status {
                url: url.clone(),
                status: status.as_u16(),
                message: wire::error_message(&bytes),
                code: wire::error_code(&bytes),
            };
            return Err((err, retry_after));
        }
        wire::parse_response(&bytes).map_err(|reason| {
            (
                LlmError::BadResponse {
                    url: url.clone(),
                    reason,
                },
                None,
            )
        })
    }

    fn transport(&self, e: reqwest::Error) -> LlmError {
        let url = self.inner.url.clone();
        let e = e.without_url();
        if e.is_timeout() {
            LlmError::Timeout {
                url,
                timeout: self.inner.timeout,
            }
        } else {
            // The URL is in the message already, without credentials; keep the chain.
            let mut reason = e.to_string();
            let mut source = std::error::Error::source(&e);
            while let Some(s) = source {
                reason = format!("{reason}: {s}");
                source = s.source();
            }
            LlmError::Transport { url, reason }
        }
    }

    /// Estimated USD cost of `usage` from `[llm.pricing."<model>"]`; 0 when unpriced.
    fn cost(&self, usage: Usage) -> f64 {
        let inner = &self.inner;
        match &inner.pricing {
            Some(p) => cost_of(p, usage),
            None => {
                if !inner.warned_unpriced.swap(true, Ordering::Relaxed) {
                    tracing::warn!(model = %inner.model,
                        "no [llm.pricing] entry or built-in price for this model; its cost is counted as 0");
                }
                0.0
            }
        }
    }
}

/// USD cost of `usage` at `p` (per million tokens; cached prompt tokens at the cached rate).
pub fn cost_of(p: &ModelPricing, usage: Usage) -> f64 {
    let cached = usage.cached.min(usage.prompt);
    let uncached = usage.prompt - cached;
    (uncached as f64 * p.input_per_million
        + cached as f64 * p.cached_input_per_million
        + usage.completion as f64 * p.output_per_million)
        / 1_000_000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cached_tokens_are_priced_at_the_cached_rate_and_not_twice() {
        let p = ModelPricing {
            input_per_million: 1.0,
            output_per_million: 2.0,
            cached_input_per_million: 0.5,
        };
        let usage = Usage {
            prompt: 1_000_000,
            completion: 1_000_000,
            cached: 500_000,
        };
        assert!((cost_of(&p, usage) - (0.5 + 0.25 + 2.0)).abs() < 1e-9);
    }

    #[test]
    fn context_overflow_errors_of_every_server_are_recognised() {
        let status = |s: u16, message: &str, code: Option<&str>| LlmError::Status {
            url: "u".into(),
            status: s,
            message: message.into(),
            code: code.map(str::to_string),
        };
        let overflows = [
            status(
                400,
                "the request exceeds the available context size, try increasing it (exceed_context_size_error)",
                Some("exceed_context_size_error"),
            ),
            status(
                400,
                "This model's maximum context length is 8192 tokens. However, you requested 9000 tokens",
                Some("BadRequestError"),
            ),
            status(400, "too long", Some("context_length_exceeded")),
        ];
        for e in overflows {
            assert!(e.is_context_overflow(), "{e}");
        }
        assert!(!status(400, "invalid tool schema", None).is_context_overflow());
        assert!(!status(500, "context size exceeded", None).is_context_overflow());
    }

    #[test]
    fn only_transient_statuses_are_retried() {
        let status = |s: u16, code: &str| LlmError::Status {
            url: "u".into(),
            status: s,
            message: "m".into(),
            code: (!code.is_empty()).then(|| code.into()),
        };
        assert!(status(429, "slow down").is_transient());
        assert!(status(503, "").is_transient());
        assert!(!status(429, "insufficient_quota").is_transient());
        for s in [400, 401, 403, 404] {
            assert!(!status(s, "").is_transient(), "{s}");
        }
    }
}
