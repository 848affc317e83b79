//! `sre-agent check-config`: validates the configuration and prints it with every secret
//! as `***`, with which integrations are on and which `SRE_AGENT_*` variables were ignored.

use std::fmt::Write as _;
use std::io::Write as _;

use crate::config::{Config, ConfigSource, ignored_env_vars, unpriced_model_warning};

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
    if config.llm.base_url.is_some()
        && let Some(warning) = unpriced_model_warning(&config.llm)
    {
        let _ = writeln!(out, "# warning: {warning}\n");
    }
    let ignored = ignored_env_vars();
    if !ignored.is_empty() {
        let _ = writeln!(
            out,
            "# ignored environment variables (not a config section): {}\n",
            ignored.join(", ")
        );
    }
    out.push_str(&config.redacted_toml());
    out.push_str("\n# configuration is valid\n");
    out
}
