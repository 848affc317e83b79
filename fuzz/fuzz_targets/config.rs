//! A configuration file through `Config::load` (TOML, defaults, validation, secrets), then
//! what `check-config` and `serve` derive from an accepted one before binding: the
//! redacted view, the listen address, the tool catalog and the health sweep.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use sre_agent::config::{Config, ConfigSource};

fn scratch() -> &'static tempfile::TempDir {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().expect("a temporary directory"))
}

fuzz_target!(|data: &[u8]| {
    let file = scratch().path().join("config.toml");
    std::fs::write(&file, data).expect("write the config");
    let Ok(mut config) = Config::load(&ConfigSource { file: Some(file) }) else {
        return;
    };
    // The runbook index reads every file under its directory: not a parser to fuzz.
    config.runbooks.dir = scratch().path().join("runbooks");
    let _ = config.redacted_toml();
    let _ = config.listen_addr();
    let _ = config.enabled_integrations();
    let _rt = sre_agent_fuzz::runtime().enter();
    if let Ok(upstreams) = sre_agent::integrations::Upstreams::from_config(&config) {
        let _ = sre_agent::agent::build_tools(&config, &upstreams, sre_agent_fuzz::metrics());
        let _ = sre_agent::analyze::Sweep::new(&config, &upstreams);
    }
});
