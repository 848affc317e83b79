//! `sre-agent check-config`: validates the configuration and prints it with every secret
//! as `***`, with which integrations are on and which `SRE_AGENT_*` variables were ignored
//! (`Config::redacted_summary`, which the console shows too).

use std::io::Write as _;

use crate::config::{Config, ConfigSource, unpriced_model_warning};

/// Prints the redacted configuration to stdout.
pub fn run(config: &Config, source: &ConfigSource) {
    // A closed pipe (`check-config | head`) is not an error worth a panic.
    let _ = std::io::stdout()
        .lock()
        .write_all(render(config, source).as_bytes());
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
    out + &config.redacted_summary()
}
