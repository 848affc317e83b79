//! `[[tools.http]]`: declarative GET tools defined in configuration. Their names are
//! checked against the built-in tools by the tool catalog, which owns those names.

use std::collections::BTreeSet;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::secrets::secret_fields;
use super::values::{HumanDuration, Secret};

fn default_timeout() -> HumanDuration {
    HumanDuration::secs(15)
}

/// `[tools]`: tools defined in configuration.
#[derive(Clone, Debug, Default, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct ToolsConfig {
    pub http: Vec<HttpToolConfig>,
}

/// One `[[tools.http]]` entry: a GET request that becomes a tool.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct HttpToolConfig {
    pub name: String,
    pub description: String,
    /// URL template; `{param}` placeholders are replaced by URL-encoded arguments. Shown
    /// (`check-config`) without user, password or fixed query values, which may be keys.
    #[serde(serialize_with = "serialize_redacted_template")]
    pub url: String,
    /// JSON Schema of the arguments (`{type = "object", properties = {…}}`).
    #[serde(default = "empty_schema")]
    pub parameters: serde_json::Value,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_value: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_value_file: Option<PathBuf>,
    /// Dotted path into the JSON answer (`data.items[0].name` or `data.items.0.name`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub json_path: Option<String>,
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
}

/// `template` without credentials: user and password, and every query value that is not a
/// `{placeholder}`, become `***`.
pub fn redacted_template(template: &str) -> String {
    let (base, query) = match template.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (template, None),
    };
    let mut out = super::values::mask_userinfo(base);
    if let Some(q) = query {
        let pairs: Vec<String> = q
            .split('&')
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if v.starts_with('{') && v.ends_with('}') => format!("{k}={v}"),
                Some((k, _)) => format!("{k}=***"),
                None => pair.to_string(),
            })
            .collect();
        out = format!("{out}?{}", pairs.join("&"));
    }
    out
}

fn serialize_redacted_template<S: serde::Serializer>(url: &str, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&redacted_template(url))
}

fn empty_schema() -> serde_json::Value {
    serde_json::json!({"type": "object", "properties": {}})
}

fn default_max_bytes() -> usize {
    64 * 1024
}

impl HttpToolConfig {
    /// The `{param}` placeholders in the URL template, in order.
    pub fn placeholders(&self) -> Vec<String> {
        placeholders(&self.url)
    }
}

/// The `{name}` placeholders in `template`.
pub fn placeholders(template: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        let Some(len) = rest[start..].find('}') else {
            break;
        };
        out.push(rest[start + 1..start + len].to_string());
        rest = &rest[start + len + 1..];
    }
    out
}

impl super::secrets::SecretFields for ToolsConfig {
    fn secret_fields<'a>(
        &'a mut self,
        prefix: &str,
        out: &mut Vec<super::secrets::SecretField<'a>>,
    ) {
        self.http.secret_fields(&format!("{prefix}.http"), out);
    }
}

secret_fields!(HttpToolConfig {
    header_value: header_value_file
});

/// Validates `[[tools.http]]`: unique names, templates, schemas, headers. Whether a name
/// is a valid tool name free of the built-in ones is the tool catalog's to say
/// (`tools::catalog::validate`).
pub fn validate_http_tools(tools: &[HttpToolConfig]) -> Result<(), ConfigError> {
    let mut seen = BTreeSet::new();
    for (i, t) in tools.iter().enumerate() {
        let key = |field: &str| format!("tools.http[{i}].{field}");
        let bad =
            |field: &str, msg: String| Err(ConfigError::Invalid(format!("{}: {msg}", key(field))));
        if !seen.insert(t.name.clone()) {
            return bad("name", format!("duplicate name {:?}", t.name));
        }
        if t.description.trim().is_empty() {
            return bad("description", "must not be empty".into());
        }
        let schema = &t.parameters;
        if schema.get("type").and_then(|v| v.as_str()) != Some("object") {
            return bad("parameters", "must have type = \"object\"".into());
        }
        let props = schema.get("properties").and_then(|p| p.as_object());
        for p in t.placeholders() {
            if !props.is_some_and(|props| props.contains_key(&p)) {
                return bad(
                    "url",
                    format!("placeholder {{{p}}} is not declared in parameters.properties"),
                );
            }
        }
        let origin = |fill: &str| {
            let mut s = t.url.clone();
            for p in t.placeholders() {
                s = s.replace(&format!("{{{p}}}"), fill);
            }
            url::Url::parse(&s).map(|u| u.origin())
        };
        match (origin("a"), origin("b")) {
            (Ok(a), Ok(b)) if a == b && a.is_tuple() && t.url.starts_with("http") => {}
            (Ok(_), Ok(_)) => {
                return bad(
                    "url",
                    format!(
                        "{:?} must be an http(s) URL with placeholders only in the path or query",
                        t.url
                    ),
                );
            }
            _ => return bad("url", format!("invalid URL template {:?}", t.url)),
        }
        if t.header_name.is_some() != t.header_value.is_some() {
            return bad(
                "header_value",
                "header_name and header_value must be set together".into(),
            );
        }
        if let Some(h) = &t.header_name
            && reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return bad("header_name", format!("invalid header name {h:?}"));
        }
        if t.max_bytes == 0 {
            return bad("max_bytes", "must be at least 1".into());
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;

    #[test]
    fn templates_of_arbitrary_utf8_give_their_placeholders_and_hide_credentials() {
        let piece = prop_oneof![
            any::<String>(),
            Just("{".to_string()),
            Just("}".to_string()),
            Just("?".to_string()),
            Just("&".to_string()),
            Just("=".to_string()),
            Just("://é:pässword@".to_string()),
            Just("/".to_string()),
        ];
        let template = proptest::collection::vec(piece, 0..10).prop_map(|v| v.concat());
        let names = proptest::collection::vec(any::<String>(), 0..4);
        let config = Config {
            cases: 1000,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new(config)
            .run(&(template, names), |(template, names)| {
                placeholders(&template);
                redacted_template(&template);
                let clean: Vec<String> = names.iter().map(|n| n.replace(['{', '}'], "")).collect();
                let built: String = clean.iter().map(|n| format!("/é{{{n}}}")).collect();
                prop_assert_eq!(placeholders(&built), clean);
                let secret = format!("https://user:s3cret-é@host/{built}?token=s3cret-é");
                let shown = redacted_template(&secret);
                prop_assert!(!shown.contains("s3cret"), "{shown}");
                Ok(())
            })
            .unwrap();
    }
}
