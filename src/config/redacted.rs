//! The configuration as `check-config` prints it and the console shows it: which
//! integrations are on, which `SRE_AGENT_*` variables were ignored, then the TOML with
//! every secret as `***`.

use std::fmt::Write as _;

use super::{Config, ignored_env_vars};

impl Config {
    /// The redacted configuration with its summary lines (no line about its source file).
    pub fn redacted_summary(&self) -> String {
        let mut out = String::new();
        let enabled = self.enabled_integrations();
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
        out.push_str(&self.redacted_toml());
        out.push_str("\n# configuration is valid\n");
        out
    }
}
