//! `sre-agent check-config`: validates the configuration and prints it with every secret
//! as `***`, with which integrations are on and which `SRE_AGENT_*` variables were ignored
//! (`Config::redacted_summary`, which the console shows too), then whether each MCP server
//! starts and lists its allowed tools (`check_mcp.rs`).

use std::io::Write as _;

use crate::config::{Config, ConfigSource, unpriced_model_warning};

/// Prints the redacted configuration to stdout.
pub fn run(config: &Config, source: &ConfigSource) {
    // A closed pipe (`check-config | head`) is not an error worth a panic.
    let _ = std::io::stdout()
        .lock()
        .write_all(render(config, source).as_bytes());
    let _ = std::io::stdout()
        .lock()
        .write_all(super::check_mcp::report(config).as_bytes());
}

fn render(config: &Config, source: &ConfigSource) -> String {
    let header = match &source.file {
        Some(f) => format!(
            "# configuration from {} (plus SRE_AGENT_* environment)\n",
            f.display()
        ),
        None => "# built-in defaults (plus SRE_AGENT_* environment); no config file\n".into(),
    };
    let mut out = header;
    if config.llm.base_url.is_some()
        && let Some(warning) = unpriced_model_warning(&config.llm)
    {
        out.push_str(&format!("# warning: {warning}\n\n"));
    }
    if config.grafana.annotate {
        out.push_str(
            "# grafana.annotate: findings are written to Grafana as annotations; \
             grafana.token needs the Editor role (annotations:write)\n\n",
        );
    }
    out + &config.redacted_summary()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn check_config_says_grafana_annotate_needs_an_editor_token_and_hides_it() {
        let mut config = Config::default();
        config.grafana.url = Some("http://grafana:3000".parse().unwrap());
        config.grafana.token = Some(crate::config::Secret::new("glsa_editor_secret"));
        config.grafana.annotate = true;
        let out = render(&config, &ConfigSource { file: None });
        assert!(out.contains("Editor role"), "{out}");
        assert!(out.contains("annotate = true"), "{out}");
        assert!(!out.contains("glsa_editor_secret"), "{out}");
        config.grafana.annotate = false;
        let out = render(&config, &ConfigSource { file: None });
        assert!(!out.contains("Editor role"), "{out}");
    }
}
