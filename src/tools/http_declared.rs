//! Declarative HTTP tools: each `[[tools.http]]` entry becomes a GET tool whose URL
//! template is filled with URL-encoded arguments, optionally narrowed by a JSON path and
//! capped at `max_bytes` (the rest of the answer is never read). An argument fills exactly
//! its placeholder: in the path it is one segment (`/` is encoded, `.` and `..` are refused),
//! so whatever the model sends, the request stays on the template.

use async_trait::async_trait;
use serde_json::Value;
use url::Url;

use super::args::ArgError;
use super::{CatalogError, Tool, ToolError};
use crate::config::{ConfigError, HttpToolConfig, placeholders};
use crate::integrations::{Auth, Upstream, UpstreamOptions};

/// One configured GET tool.
pub struct HttpTool {
    name: &'static str,
    description: &'static str,
    parameters: Value,
    template: String,
    upstream: Upstream,
    json_path: Option<String>,
    max_bytes: usize,
}

impl HttpTool {
    /// Builds the tool from a validated config entry; `key` (`tools.http[0]`) names it in
    /// errors.
    pub fn new(key: &str, spec: &HttpToolConfig) -> Result<Self, CatalogError> {
        let bad_url = |why: String| ConfigError::Invalid(format!("{key}.url: {why}"));
        let probe = fill(&spec.url, &|_| Some("x".into()))
            .ok_or_else(|| bad_url("cannot fill the template".into()))?;
        let parsed = Url::parse(&probe).map_err(|e| bad_url(e.to_string()))?;
        let origin = Url::parse(&parsed.origin().ascii_serialization())
            .map_err(|e| bad_url(e.to_string()))?;
        let opts = UpstreamOptions {
            timeout: spec.timeout.get(),
            auth: spec
                .header_name
                .clone()
                .zip(spec.header_value.clone())
                .map(|(n, v)| Auth::Header(n, v)),
            ..Default::default()
        };
        // Tool names and descriptions are `&'static str`; these live for the process.
        Ok(Self {
            name: Box::leak(spec.name.clone().into_boxed_str()),
            description: Box::leak(spec.description.clone().into_boxed_str()),
            parameters: spec.parameters.clone(),
            template: spec.url.clone(),
            upstream: Upstream::new("HTTP tool", &origin, opts)?,
            json_path: spec.json_path.clone(),
            max_bytes: spec.max_bytes,
        })
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Refuses a path argument that is empty, `.` or `..`: URL parsing would drop or climb
/// that segment (`/api/items/{id}/status` with `..` would become `/api/status`).
fn check_path_arguments(
    template: &str,
    value: &dyn Fn(&str) -> Option<String>,
) -> Result<(), ArgError> {
    let path = template.split(['?', '#']).next().unwrap_or_default();
    for p in placeholders(path) {
        let v = value(&p).unwrap_or_default();
        if matches!(v.as_str(), "" | "." | "..") {
            return Err(ArgError::Invalid(format!(
                "argument {p:?} = {v:?} is not allowed: it fills one path segment"
            )));
        }
    }
    Ok(())
}

/// The template with every `{p}` replaced by `value(p)` URL-encoded; `None` if one is missing.
fn fill(template: &str, value: &dyn Fn(&str) -> Option<String>) -> Option<String> {
    let mut out = template.to_string();
    for p in placeholders(template) {
        let v = value(&p)?;
        out = out.replacen(&format!("{{{p}}}"), &encode(&v), 1);
    }
    Some(out)
}

/// Follows `a.b[0].c` / `a.b.0.c` into `v`.
pub fn select(v: &Value, path: &str) -> Option<Value> {
    let mut cur = v;
    for raw in path.split('.').filter(|s| !s.is_empty()) {
        let (key, indexes) = match raw.find('[') {
            Some(i) => (&raw[..i], &raw[i..]),
            None => (raw, ""),
        };
        if !key.is_empty() {
            cur = match (cur, key.parse::<usize>()) {
                (Value::Array(a), Ok(i)) => a.get(i)?,
                _ => cur.get(key)?,
            };
        }
        for idx in indexes.split('[').filter(|s| !s.is_empty()) {
            let i: usize = idx.trim_end_matches(']').parse().ok()?;
            cur = cur.get(i)?;
        }
    }
    Some(cur.clone())
}

#[async_trait]
impl Tool for HttpTool {
    fn name(&self) -> &'static str {
        self.name
    }

    fn description(&self) -> &'static str {
        self.description
    }

    fn parameters(&self) -> Value {
        self.parameters.clone()
    }

    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let value = |p: &str| match args.get(p) {
            None | Some(Value::Null) => None,
            Some(Value::String(s)) => Some(s.clone()),
            Some(other) => Some(other.to_string()),
        };
        let missing: Vec<String> = placeholders(&self.template)
            .into_iter()
            .filter(|p| value(p).is_none())
            .collect();
        if !missing.is_empty() {
            return Err(
                ArgError::Invalid(format!("missing argument(s): {}", missing.join(", "))).into(),
            );
        }
        check_path_arguments(&self.template, &value)?;
        let Some(url) = fill(&self.template, &value) else {
            return Err(ArgError::Invalid("cannot fill the URL template".into()).into());
        };
        let parsed = Url::parse(&url)
            .map_err(|e| ArgError::Invalid(format!("bad URL after filling: {e}")))?;
        let mut path = parsed.path().trim_start_matches('/').to_string();
        if let Some(q) = parsed.query() {
            path = format!("{path}?{q}");
        }
        let (body, truncated) = self.upstream.get_prefix(&path, &[], self.max_bytes).await?;
        let body = &body[..];
        if let Some(jp) = &self.json_path {
            let v: Value = serde_json::from_slice(body).map_err(|e| {
                ToolError::Answer(format!("answer is not JSON (json_path {jp:?}): {e}"))
            })?;
            let picked = select(&v, jp).ok_or_else(|| {
                ToolError::Answer(format!("json_path {jp:?} not found in the answer"))
            })?;
            return Ok(match picked {
                Value::String(s) => s,
                other => other.to_string(),
            });
        }
        let mut text = String::from_utf8_lossy(body).into_owned();
        if truncated {
            text.push_str(&format!("\n[answer cut at max_bytes = {}]", self.max_bytes));
        }
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn placeholders_are_url_encoded_and_json_paths_follow_keys_and_indexes() {
        let url = fill("http://h/api/{q}?x={n}", &|p| {
            Some(if p == "q" { "a b/c".into() } else { "1".into() })
        });
        assert_eq!(url.as_deref(), Some("http://h/api/a%20b%2Fc?x=1"));
        let v = json!({"data": {"items": [{"name": "a"}, {"name": "b"}]}});
        assert_eq!(select(&v, "data.items[1].name"), Some(json!("b")));
        assert_eq!(select(&v, "data.items.0.name"), Some(json!("a")));
        assert_eq!(select(&v, "data.nope"), None);
    }
}
