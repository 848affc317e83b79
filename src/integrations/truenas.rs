//! TrueNAS client (REST API v2.0, `Authorization: Bearer` API key): pools, alerts, disks,
//! disk temperatures and SMART test results.

use std::collections::BTreeMap;

use serde::Deserialize;

use super::{Auth, Upstream, UpstreamError, UpstreamOptions};
use crate::config::TruenasConfig;

const SERVICE: &str = "TrueNAS";

/// `GET /pool` item.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasPool {
    pub name: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub healthy: Option<bool>,
    #[serde(default)]
    pub warning: Option<bool>,
    #[serde(default)]
    pub status_detail: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub allocated: Option<u64>,
    #[serde(default)]
    pub free: Option<u64>,
    #[serde(default)]
    pub scan: Option<TruenasScan>,
    /// The vdev tree (`data`, `log`, `cache`, `spare`, … each a list of vdevs with
    /// `children`), kept as sent: its shape differs between TrueNAS versions.
    #[serde(default)]
    pub topology: Option<serde_json::Value>,
}

impl TruenasPool {
    /// The devices of the pool that are not ONLINE or have counted read, write or
    /// checksum errors (ZFS keeps a disk ONLINE while it repairs what it returned wrong),
    /// as `(disk, status, read, write, checksum errors)`.
    pub fn unhealthy_devices(&self) -> Vec<(String, String, u64, u64, u64)> {
        fn walk(v: &serde_json::Value, out: &mut Vec<(String, String, u64, u64, u64)>) {
            match v {
                serde_json::Value::Array(items) => items.iter().for_each(|i| walk(i, out)),
                serde_json::Value::Object(m) => {
                    let status = m.get("status").and_then(|s| s.as_str()).unwrap_or("");
                    let is_disk = m.get("type").and_then(|t| t.as_str()) == Some("DISK");
                    let stat = |k: &str| {
                        m.get("stats")
                            .and_then(|s| s.get(k))
                            .and_then(|n| n.as_u64())
                            .unwrap_or(0)
                    };
                    let errors = ["read_errors", "write_errors", "checksum_errors"]
                        .iter()
                        .any(|k| stat(k) > 0);
                    if is_disk && !status.is_empty() && (status != "ONLINE" || errors) {
                        let name = ["disk", "device", "name", "path"]
                            .iter()
                            .find_map(|k| m.get(*k).and_then(|d| d.as_str()))
                            .unwrap_or("?");
                        out.push((
                            name.to_string(),
                            status.to_string(),
                            stat("read_errors"),
                            stat("write_errors"),
                            stat("checksum_errors"),
                        ));
                    }
                    for (k, child) in m {
                        if k != "stats" {
                            walk(child, out);
                        }
                    }
                }
                _ => {}
            }
        }
        let mut out = Vec::new();
        if let Some(t) = &self.topology {
            walk(t, &mut out);
        }
        out
    }
}

/// The last scrub or resilver of a pool.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasScan {
    #[serde(default)]
    pub function: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub errors: Option<u64>,
}

/// `GET /alert/list` item.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasAlert {
    #[serde(default)]
    pub level: String,
    #[serde(default)]
    pub klass: String,
    #[serde(default)]
    pub formatted: Option<String>,
    #[serde(default)]
    pub text: Option<String>,
    #[serde(default)]
    pub dismissed: bool,
    /// What the alert is about (`{"volume": "tank", "capacity": 81}`), as sent.
    #[serde(default)]
    pub args: Option<serde_json::Value>,
    #[serde(default)]
    pub datetime: Option<TruenasDate>,
}

/// `{"$date": epoch-milliseconds}`.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasDate {
    #[serde(rename = "$date")]
    pub millis: i64,
}

/// `GET /disk` item.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasDisk {
    pub name: String,
    #[serde(default)]
    pub serial: Option<String>,
    #[serde(default)]
    pub model: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    #[serde(default)]
    pub pool: Option<String>,
}

/// `GET /smart/test/results` item.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasSmartResults {
    pub disk: String,
    #[serde(default)]
    pub tests: Vec<TruenasSmartTest>,
}

#[derive(Clone, Debug, Deserialize)]
pub struct TruenasSmartTest {
    #[serde(default)]
    pub description: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub status_verbose: Option<String>,
    #[serde(default)]
    pub lifetime: Option<u64>,
}

/// A TrueNAS server.
#[derive(Clone, Debug)]
pub struct TruenasClient {
    upstream: Upstream,
}

impl TruenasClient {
    pub fn new(config: &TruenasConfig) -> Result<Self, UpstreamError> {
        let setup = |reason: String| UpstreamError::Setup {
            service: SERVICE,
            reason,
        };
        let url = config
            .url
            .as_ref()
            .ok_or_else(|| setup("url is not set".into()))?;
        let key = config
            .api_key
            .clone()
            .ok_or_else(|| setup("api_key is not set".into()))?;
        let mut base = url.0.clone();
        let path = base.path().trim_end_matches('/').to_string();
        if !path.ends_with("/api/v2.0") {
            base.set_path(&format!("{path}/api/v2.0/"));
        }
        let opts = UpstreamOptions {
            timeout: config.timeout.get(),
            auth: Some(Auth::Bearer(key)),
            ca_file: config.ca_file.clone(),
            accept_invalid_certs: !config.verify_tls,
            ..Default::default()
        };
        Ok(Self {
            upstream: Upstream::new(SERVICE, &base, opts)?,
        })
    }

    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    pub async fn pools(&self) -> Result<Vec<TruenasPool>, UpstreamError> {
        self.upstream.get_json("pool", &[]).await
    }

    pub async fn alerts(&self) -> Result<Vec<TruenasAlert>, UpstreamError> {
        self.upstream.get_json("alert/list", &[]).await
    }

    pub async fn disks(&self) -> Result<Vec<TruenasDisk>, UpstreamError> {
        self.upstream.get_json("disk", &[]).await
    }

    pub async fn smart_results(&self) -> Result<Vec<TruenasSmartResults>, UpstreamError> {
        self.upstream.get_json("smart/test/results", &[]).await
    }

    /// Temperatures in °C by disk name; `None` for disks that report none.
    pub async fn temperatures(&self) -> Result<BTreeMap<String, Option<f64>>, UpstreamError> {
        // A POST, but a read-only query method.
        self.upstream
            .post_json("disk/temperatures", &serde_json::json!({"names": []}))
            .await
    }
}

#[cfg(test)]
mod tests {
    use super::TruenasPool;

    #[test]
    fn the_devices_of_a_degraded_pool_that_are_not_online_are_named_with_their_errors() {
        let pool: TruenasPool = serde_json::from_value(serde_json::json!({
            "name": "tank", "status": "DEGRADED",
            "topology": {"data": [{"type": "MIRROR", "status": "DEGRADED", "children": [
                {"type": "DISK", "disk": "sda", "status": "ONLINE", "stats": {"read_errors": 0}},
                {"type": "DISK", "disk": "sdb", "status": "FAULTED",
                 "stats": {"read_errors": 23, "write_errors": 0, "checksum_errors": 11}}
            ]}], "log": [], "spare": []}
        }))
        .unwrap();
        assert_eq!(
            pool.unhealthy_devices(),
            vec![("sdb".into(), "FAULTED".into(), 23, 0, 11)]
        );
    }

    #[test]
    fn an_online_disk_that_counted_checksum_errors_is_named_and_clean_ones_are_not() {
        let pool: TruenasPool = serde_json::from_value(serde_json::json!({
            "name": "tank", "status": "ONLINE", "healthy": false,
            "topology": {"data": [{"type": "RAIDZ2", "status": "ONLINE",
                "stats": {"checksum_errors": 0}, "children": [
                {"type": "DISK", "disk": "sdc", "status": "ONLINE",
                 "stats": {"read_errors": 0, "write_errors": 0, "checksum_errors": 0}},
                {"type": "DISK", "disk": "sdd", "status": "ONLINE",
                 "stats": {"read_errors": 0, "write_errors": 0, "checksum_errors": 86}}
            ]}]}
        }))
        .unwrap();
        assert_eq!(
            pool.unhealthy_devices(),
            vec![("sdd".into(), "ONLINE".into(), 0, 0, 86)]
        );
    }
}
