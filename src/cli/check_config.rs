//! `sre-agent check-config`: validates the configuration and prints it with every secret
//! as `***`, with which integrations are on and which `SRE_AGENT_*` variables were ignored.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::config::{Config, ConfigSource, ignored_env_vars};

/// Prints the redacted configuration to stdout.
pub fn run(config: &Config, source: &ConfigSource) {
    // A closed pipe (`check-config | head`) is not an error worth a panic.
    let _ = std::io::stdout()
        .lock()
        .write_all(render(config, source).as_bytes());
}

fn render(config: &Config, source: &ConfigSource) -> String {
    let mut out = String::new();
    let _ = match &source.file {
        Some(f) => writeln!(
            out,
            "# configuration from {} (plus SRE_AGENT_* environment)",
            f.display()
        ),
        None => writeln!(
            out,
            "# built-in defaults (plus SRE_AGENT_* environment); no config file"
        ),
    };
    let enabled = config.enabled_integrations();
    let disabled: Vec<&str> = Config::INTEGRATIONS
        .iter()
        .copied()
        .filter(|i| !enabled.contains(i))
        .collect();
    let on = if enabled.is_empty() {
        "none".to_string()
    } else {
        enabled.join(", ")
    };
    let _ = writeln!(out, "# enabled integrations: {on}");
    let _ = writeln!(out, "# disabled integrations: {}\n", disabled.join(", "));
    let ignored = ignored_env_vars();
    if !ignored.is_empty() {
        let _ = writeln!(
            out,
            "# ignored environment variables (not a config section): {}\n",
            ignored.join(", ")
        );
    }
    if config.grafana.annotate {
        let _ = writeln!(
            out,
            "# grafana.annotate: findings are written to Grafana as annotations; \
             grafana.token needs the Editor role (annotations:write)\n"
        );
    }
    out.push_str(&config.redacted_toml());
    out.push_str("\n# configuration is valid\n");
    out
}
