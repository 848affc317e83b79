//! Upper bounds on the numbers of the configuration that the daemon turns into dates,
//! clock times, semaphores or worker pools, so a value `check-config` accepts cannot
//! overflow or exhaust memory in `serve`. Durations are bounded where they are parsed
//! ([`super::values::MAX_DURATION`]); the error names the key and the bound.

use super::{Config, ConfigError};

/// `store.retention_days`: 100 years.
pub const MAX_RETENTION_DAYS: u32 = 36_500;
/// `store.cache_mib`: 64 GiB.
pub const MAX_CACHE_MIB: u32 = 65_536;
/// `llm.max_retries`: each retry may wait `llm.timeout`.
pub const MAX_LLM_RETRIES: u32 = 100;
/// `server.max_connections`: a semaphore's permits (tokio allows about 2^61).
pub const MAX_CONNECTIONS: usize = 1_000_000;
/// `alerts.concurrency`: one worker task each, started at once.
pub const MAX_CONCURRENCY: usize = 1_000;
/// `llm.max_parallel_tools`: tool calls of one step run at once.
pub const MAX_PARALLEL_TOOLS: usize = 1_000;

/// The first key whose number is above its bound.
pub(super) fn validate(c: &Config) -> Result<(), ConfigError> {
    let checks: [(&str, u128, u128, &str); 6] = [
        (
            "store.retention_days",
            c.store.retention_days.into(),
            MAX_RETENTION_DAYS.into(),
            ", 100 years; 0 keeps everything",
        ),
        (
            "store.cache_mib",
            c.store.cache_mib.into(),
            MAX_CACHE_MIB.into(),
            "",
        ),
        (
            "llm.max_retries",
            c.llm.max_retries.into(),
            MAX_LLM_RETRIES.into(),
            "",
        ),
        (
            "server.max_connections",
            c.server.max_connections as u128,
            MAX_CONNECTIONS as u128,
            "",
        ),
        (
            "alerts.concurrency",
            c.alerts.concurrency as u128,
            MAX_CONCURRENCY as u128,
            "",
        ),
        (
            "llm.max_parallel_tools",
            c.llm.max_parallel_tools as u128,
            MAX_PARALLEL_TOOLS as u128,
            "",
        ),
    ];
    match checks.iter().find(|(_, value, max, _)| value > max) {
        Some((key, value, max, why)) => Err(ConfigError::Invalid(format!(
            "{key}: {value} is too large (at most {max}{why})"
        ))),
        None => Ok(()),
    }
}
