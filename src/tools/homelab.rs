//! Registration of the homelab tools (Kubernetes, Proxmox VE, Proxmox Backup Server,
//! TrueNAS, declarative HTTP) for the configured integrations, and the small helpers
//! they share: argument access, byte and age formatting, permission-naming errors.

use std::sync::Arc;

use anyhow::Context;
use serde_json::Value;

use super::ToolRegistry;
use super::http_declared::HttpTool;
use super::kubernetes::{K8sKind, K8sTool};
use super::pbs::{PbsKind, PbsTool};
use super::proxmox::{PveKind, PveTool};
use super::truenas::{TruenasKind, TruenasTool};
use crate::config::Config;
use crate::integrations::UpstreamError;
use crate::integrations::kubernetes::KubeClient;
use crate::integrations::pbs::PbsClient;
use crate::integrations::proxmox::ProxmoxClient;
use crate::integrations::truenas::TruenasClient;

/// Registers the homelab tools whose integration is configured; none otherwise.
/// Warns once per integration that skips TLS verification.
pub fn register_homelab_tools(registry: &mut ToolRegistry, config: &Config) -> anyhow::Result<()> {
    let max_chars = config.llm.max_tool_output_chars;
    let insecure = |section: &str| {
        tracing::warn!(
            integration = section,
            "{section}.verify_tls = false: TLS certificates are NOT verified; prefer {section}.ca_file"
        );
    };
    if config.kubernetes.enabled {
        let client = Arc::new(KubeClient::new(&config.kubernetes).context("kubernetes")?);
        for kind in K8sKind::ALL {
            registry.register(Arc::new(K8sTool {
                kind,
                client: client.clone(),
                max_chars,
            }));
        }
    }
    if config.proxmox.url.is_some() {
        if !config.proxmox.verify_tls {
            insecure("proxmox");
        }
        let client = Arc::new(ProxmoxClient::new(&config.proxmox).context("proxmox")?);
        for kind in PveKind::ALL {
            registry.register(Arc::new(PveTool {
                kind,
                client: client.clone(),
            }));
        }
    }
    if config.pbs.url.is_some() {
        if !config.pbs.verify_tls {
            insecure("pbs");
        }
        let client = Arc::new(PbsClient::new(&config.pbs).context("pbs")?);
        for kind in PbsKind::ALL {
            registry.register(Arc::new(PbsTool {
                kind,
                client: client.clone(),
            }));
        }
    }
    if config.truenas.url.is_some() {
        if !config.truenas.verify_tls {
            insecure("truenas");
        }
        let client = Arc::new(TruenasClient::new(&config.truenas).context("truenas")?);
        for kind in TruenasKind::ALL {
            registry.register(Arc::new(TruenasTool {
                kind,
                client: client.clone(),
            }));
        }
    }
    for (i, spec) in config.tools.http.iter().enumerate() {
        let key = format!("tools.http[{i}]");
        if registry.get(&spec.name).is_some() {
            anyhow::bail!("{key}.name: {:?} clashes with another tool", spec.name);
        }
        let tool = HttpTool::new(spec).with_context(|| key.clone())?;
        registry.register(Arc::new(tool));
    }
    Ok(())
}

/// A string argument, when present and non-empty.
pub fn arg_str(args: &Value, key: &str) -> Option<String> {
    args.get(key)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(String::from)
}

pub fn arg_bool(args: &Value, key: &str) -> bool {
    args.get(key).and_then(Value::as_bool).unwrap_or(false)
}

pub fn arg_i64(args: &Value, key: &str) -> Option<i64> {
    args.get(key).and_then(Value::as_i64)
}

/// `1.5 GiB`-style sizes.
pub fn human_bytes(n: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut v = n as f64;
    let mut i = 0;
    while v >= 1024.0 && i < UNITS.len() - 1 {
        v /= 1024.0;
        i += 1;
    }
    if i == 0 {
        format!("{n} B")
    } else {
        format!("{v:.1} {}", UNITS[i])
    }
}

/// `3d4h`-style durations from seconds.
pub fn human_age(secs: i64) -> String {
    let s = secs.max(0);
    match s {
        0..60 => format!("{s}s"),
        60..3600 => format!("{}m", s / 60),
        3600..86400 => format!("{}h{}m", s / 3600, s % 3600 / 60),
        _ => format!("{}d{}h", s / 86400, s % 86400 / 3600),
    }
}

/// Percentage `part/whole`, or "?" when the whole is unknown.
pub fn percent(part: Option<u64>, whole: Option<u64>) -> String {
    match (part, whole) {
        (Some(p), Some(w)) if w > 0 => format!("{:.1}%", p as f64 * 100.0 / w as f64),
        _ => "?".into(),
    }
}

/// An upstream error for the model; on 401/403 it names the permission the token lacks.
pub fn explain(e: UpstreamError, permission: &str) -> String {
    match e.status() {
        Some(401) => {
            format!("{e} — authentication failed: check the API token (needs {permission})")
        }
        Some(403) => format!("{e} — permission denied: the API token needs {permission}"),
        _ => e.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_ages_read_like_a_human_wrote_them() {
        assert_eq!(human_bytes(512), "512 B");
        assert_eq!(human_bytes(3 * 1024 * 1024 * 1024), "3.0 GiB");
        assert_eq!(human_age(90), "1m");
        assert_eq!(human_age(2 * 86400 + 3 * 3600), "2d3h");
        assert_eq!(percent(Some(1), Some(4)), "25.0%");
        assert_eq!(percent(Some(1), None), "?");
    }
}
