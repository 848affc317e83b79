//! `[mcp]`: the Model Context Protocol both ways. `serve` puts sre-agent's own MCP server on
//! the daemon's listener (`/mcp`, behind `server.api_token`); each `[[mcp.servers]]` entry is
//! an MCP server whose allow-listed tools the agent may call, started as a command (stdio)
//! or reached at a URL (Streamable HTTP). Nothing of a server is offered unless its name is
//! in `tools`: the operator vouches that those tools only read.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use super::ConfigError;
use super::secrets::{SecretField, SecretFields, secret_fields};
use super::values::{HttpUrl, HumanDuration, Secret};

/// The longest server name: `mcp_<server>_<tool>` must stay a valid tool name (64).
pub const MAX_SERVER_NAME: usize = 24;

/// `[mcp]`.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(default, deny_unknown_fields)]
pub struct McpConfig {
    /// Serve `/mcp` (Streamable HTTP) on `server.listen`, behind `server.api_token`.
    pub serve: bool,
    pub servers: Vec<McpServerConfig>,
}

impl Default for McpConfig {
    fn default() -> Self {
        Self {
            serve: true,
            servers: Vec::new(),
        }
    }
}

/// One `[[mcp.servers]]` entry.
#[derive(Clone, Debug, Deserialize, Serialize)]
#[serde(deny_unknown_fields)]
pub struct McpServerConfig {
    /// Its tools are offered as `mcp_<name>_<tool>`.
    pub name: String,
    /// The program to start (stdio transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub command: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub args: Vec<String>,
    /// Environment of the program, added to the daemon's; values may be keys (shown `***`).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub env: BTreeMap<String, Secret>,
    /// The endpoint (Streamable HTTP transport).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<HttpUrl>,
    /// Sent as `Authorization: Bearer …`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_file: Option<PathBuf>,
    /// Another header carrying the credential (`header_name` + `header_value`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_value: Option<Secret>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub header_value_file: Option<PathBuf>,
    /// Longest wait for each call; starting and listing the tools may take this or a
    /// minute, whichever is longer.
    #[serde(default = "default_timeout")]
    pub timeout: HumanDuration,
    /// Largest message accepted from the server; a larger one is dropped.
    #[serde(default = "default_max_bytes")]
    pub max_bytes: usize,
    /// The allow-list: the server's tools the agent may call. Nothing else is offered.
    #[serde(default)]
    pub tools: Vec<String>,
}

fn default_timeout() -> HumanDuration {
    HumanDuration::secs(30)
}

fn default_max_bytes() -> usize {
    1024 * 1024
}

impl McpServerConfig {
    /// `mcp_<server>_<tool>`: the name the agent calls `tool` of this server by.
    pub fn tool_name(&self, tool: &str) -> String {
        format!("mcp_{}_{tool}", self.name)
    }

    /// Where the server is, for messages: the command or the URL without credentials.
    pub fn target(&self) -> String {
        match (&self.command, &self.url) {
            (Some(c), _) => format!("command {c:?}"),
            (None, Some(u)) => u.redacted(),
            (None, None) => "nowhere".into(),
        }
    }
}

impl SecretFields for McpConfig {
    fn secret_fields<'a>(&'a mut self, prefix: &str, out: &mut Vec<SecretField<'a>>) {
        self.servers
            .secret_fields(&format!("{prefix}.servers"), out);
    }
}

secret_fields!(McpServerConfig {
    token: token_file,
    header_value: header_value_file,
});

fn valid_name_char(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_' || c == '-'
}

/// Validates `[mcp]`: unique server names, one transport each, credentials only with a URL,
/// and an allow-list whose every entry makes a valid tool name. Whether a name is free of
/// the other tools' is the tool catalog's to say (`tools::catalog::validate`).
pub fn validate_mcp(mcp: &McpConfig) -> Result<(), ConfigError> {
    let mut names = BTreeSet::new();
    for (i, s) in mcp.servers.iter().enumerate() {
        let bad = |field: &str, msg: String| {
            Err(ConfigError::Invalid(format!(
                "mcp.servers[{i}].{field}: {msg}"
            )))
        };
        if s.name.is_empty()
            || s.name.len() > MAX_SERVER_NAME
            || !s.name.chars().all(valid_name_char)
        {
            return bad(
                "name",
                format!(
                    "invalid name {:?} (expected ^[a-zA-Z0-9_-]{{1,{MAX_SERVER_NAME}}}$)",
                    s.name
                ),
            );
        }
        if !names.insert(s.name.as_str()) {
            return bad("name", format!("duplicate name {:?}", s.name));
        }
        match (&s.command, &s.url) {
            (Some(_), Some(_)) => {
                return bad(
                    "url",
                    "set either command (stdio) or url (HTTP), not both".into(),
                );
            }
            (None, None) => {
                return bad(
                    "command",
                    "set command (stdio) or url (Streamable HTTP)".into(),
                );
            }
            (Some(c), None) => {
                if c.trim().is_empty() {
                    return bad("command", "must not be empty".into());
                }
                if s.token.is_some() || s.header_name.is_some() {
                    return bad(
                        "token",
                        "credentials go with url; a command gets its own in env".into(),
                    );
                }
            }
            (None, Some(u)) => {
                if !matches!(u.0.scheme(), "http" | "https") {
                    return bad("url", format!("{} must be http(s)", u.redacted()));
                }
                if !s.args.is_empty() || !s.env.is_empty() {
                    return bad("args", "args and env go with command, not url".into());
                }
            }
        }
        if s.header_name.is_some() != s.header_value.is_some() {
            return bad(
                "header_value",
                "header_name and header_value must be set together".into(),
            );
        }
        if let Some(h) = &s.header_name
            && reqwest::header::HeaderName::from_bytes(h.as_bytes()).is_err()
        {
            return bad("header_name", format!("invalid header name {h:?}"));
        }
        if let Some(bad_key) = s
            .env
            .keys()
            .find(|k| k.is_empty() || k.contains(['=', '\0']))
        {
            return bad("env", format!("invalid variable name {bad_key:?}"));
        }
        if s.timeout.get().is_zero() {
            return bad("timeout", "must be longer than 0s".into());
        }
        if s.max_bytes < 1024 {
            return bad("max_bytes", "must be at least 1024".into());
        }
        if s.tools.is_empty() {
            return bad(
                "tools",
                "list the tools the agent may call (nothing is offered unless listed)".into(),
            );
        }
        let mut seen = BTreeSet::new();
        for (j, t) in s.tools.iter().enumerate() {
            let full = s.tool_name(t);
            if t.is_empty() || full.len() > 64 || !t.chars().all(valid_name_char) {
                return bad(
                    &format!("tools[{j}]"),
                    format!(
                        "{t:?} does not make a valid tool name ({full:?}: ^[a-zA-Z0-9_-]{{1,64}}$)"
                    ),
                );
            }
            if !seen.insert(t.as_str()) {
                return bad(&format!("tools[{j}]"), format!("duplicate tool {t:?}"));
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(toml_text: &str) -> Result<(), String> {
        let mcp: McpConfig = toml::from_str(toml_text).map_err(|e| e.to_string())?;
        validate_mcp(&mcp).map_err(|e| e.to_string())
    }

    #[test]
    fn a_server_needs_one_transport_and_an_allow_list_of_valid_names() {
        server("[[servers]]\nname = \"time\"\ncommand = \"mcp-server-time\"\ntools = [\"get_current_time\"]")
            .unwrap();
        server("[[servers]]\nname = \"ha\"\nurl = \"http://ha:8123/mcp\"\ntoken = \"t\"\ntools = [\"GetLiveContext\"]")
            .unwrap();
        let cases = [
            ("name = \"time\"\ntools = [\"a\"]", "mcp.servers[0].command"),
            (
                "name = \"t\"\ncommand = \"x\"\nurl = \"http://h/\"\ntools = [\"a\"]",
                "not both",
            ),
            ("name = \"t\"\ncommand = \"x\"", "mcp.servers[0].tools"),
            (
                "name = \"t\"\ncommand = \"x\"\ntools = [\"get.time\"]",
                "tools[0]",
            ),
            (
                "name = \"a b\"\ncommand = \"x\"\ntools = [\"a\"]",
                "invalid name",
            ),
            (
                "name = \"t\"\ncommand = \"x\"\ntoken = \"s\"\ntools = [\"a\"]",
                "credentials go with url",
            ),
            (
                "name = \"t\"\nurl = \"http://h/\"\nargs = [\"-v\"]\ntools = [\"a\"]",
                "args and env",
            ),
            (
                "name = \"t\"\nurl = \"http://h/\"\ntimeout = \"0s\"\ntools = [\"a\"]",
                "timeout",
            ),
            (
                "name = \"t\"\ncommand = \"x\"\ntools = [\"a\", \"a\"]",
                "duplicate tool",
            ),
        ];
        for (body, expected) in cases {
            let err = server(&format!("[[servers]]\n{body}")).unwrap_err();
            assert!(err.contains(expected), "{body}: {err}");
        }
        let long = "x".repeat(60);
        let err = server(&format!(
            "[[servers]]\nname = \"t\"\ncommand = \"x\"\ntools = [\"{long}\"]"
        ))
        .unwrap_err();
        assert!(err.contains("valid tool name"), "{err}");
        let err = server("[[servers]]\nname = \"t\"\ncommand = \"x\"\ntools = [\"a\"]\n[[servers]]\nname = \"t\"\ncommand = \"y\"\ntools = [\"b\"]")
            .unwrap_err();
        assert!(err.contains("mcp.servers[1].name: duplicate"), "{err}");
    }

    #[test]
    fn env_values_and_tokens_print_as_stars() {
        let mcp: McpConfig = toml::from_str(
            "[[servers]]\nname = \"t\"\ncommand = \"x\"\nenv = { API_KEY = \"hunter2\" }\ntools = [\"a\"]\n[[servers]]\nname = \"u\"\nurl = \"http://h/\"\ntoken = \"s3cret\"\ntools = [\"a\"]",
        )
        .unwrap();
        let shown = toml::to_string(&mcp).unwrap();
        assert!(
            !shown.contains("hunter2") && !shown.contains("s3cret"),
            "{shown}"
        );
        assert!(shown.contains("***"), "{shown}");
    }
}
