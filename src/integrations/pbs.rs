//! Proxmox Backup Server client: datastore usage and GC status, backup groups, snapshots
//! with their verification, tasks.

use serde::Deserialize;

use super::UpstreamError;
use super::proxmox::{ProxmoxApi, ProxmoxTask};
use crate::config::PbsConfig;

/// `GET /status/datastore-usage` item.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PbsDatastoreUsage {
    pub store: String,
    #[serde(default)]
    pub total: Option<i64>,
    #[serde(default)]
    pub used: Option<i64>,
    #[serde(default)]
    pub avail: Option<i64>,
    #[serde(default)]
    pub estimated_full_date: Option<i64>,
    /// Used share (0–1) per `history_delta` seconds from `history_start`; `null` where
    /// nothing was recorded.
    #[serde(default)]
    pub history: Option<Vec<Option<f64>>>,
    #[serde(default)]
    pub history_start: Option<i64>,
    #[serde(default)]
    pub history_delta: Option<i64>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub gc_status: Option<PbsGcStatus>,
}

/// Last garbage collection of a datastore.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PbsGcStatus {
    #[serde(default)]
    pub upid: Option<String>,
    #[serde(default)]
    pub removed_bytes: Option<u64>,
    #[serde(default)]
    pub pending_bytes: Option<u64>,
    #[serde(default)]
    pub disk_bytes: Option<u64>,
    #[serde(default)]
    pub index_data_bytes: Option<u64>,
    #[serde(default)]
    pub still_bad: Option<u64>,
}

/// `GET /admin/datastore/{store}/groups` item.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PbsBackupGroup {
    pub backup_type: String,
    pub backup_id: String,
    /// Epoch seconds of the newest snapshot.
    pub last_backup: i64,
    #[serde(default)]
    pub backup_count: Option<u64>,
    #[serde(default)]
    pub owner: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
}

/// `GET /admin/datastore/{store}/snapshots` item, the part read here.
#[derive(Clone, Debug, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub struct PbsSnapshot {
    pub backup_type: String,
    pub backup_id: String,
    /// Epoch seconds.
    pub backup_time: i64,
    #[serde(default)]
    pub comment: Option<String>,
    #[serde(default)]
    pub size: Option<u64>,
    /// The last verification; absent when never verified.
    #[serde(default)]
    pub verification: Option<PbsVerification>,
}

/// A snapshot's last verification.
#[derive(Clone, Debug, Deserialize)]
pub struct PbsVerification {
    /// `ok` or `failed`.
    #[serde(default)]
    pub state: String,
    /// The task that verified it.
    #[serde(default)]
    pub upid: Option<String>,
}

/// A Proxmox Backup Server.
#[derive(Clone, Debug)]
pub struct PbsClient {
    api: ProxmoxApi,
}

impl PbsClient {
    pub fn new(config: &PbsConfig) -> Result<Self, UpstreamError> {
        Ok(Self {
            api: ProxmoxApi::new("Proxmox Backup Server", &config.api(), "PBSAPIToken", ':')?,
        })
    }

    pub fn api(&self) -> &ProxmoxApi {
        &self.api
    }

    pub async fn datastores(&self) -> Result<Vec<PbsDatastoreUsage>, UpstreamError> {
        self.api.get("status/datastore-usage", &[]).await
    }

    pub async fn groups(&self, store: &str) -> Result<Vec<PbsBackupGroup>, UpstreamError> {
        self.api
            .get(&format!("admin/datastore/{store}/groups"), &[])
            .await
    }

    /// Every snapshot of `store` with its last verification.
    pub async fn snapshots(&self, store: &str) -> Result<Vec<PbsSnapshot>, UpstreamError> {
        self.api
            .get(&format!("admin/datastore/{store}/snapshots"), &[])
            .await
    }

    pub async fn tasks(
        &self,
        errors_only: bool,
        since: Option<i64>,
    ) -> Result<Vec<ProxmoxTask>, UpstreamError> {
        let mut q = vec![("limit", "50".to_string())];
        if errors_only {
            q.push(("errors", "true".into()));
        }
        if let Some(s) = since {
            q.push(("since", s.to_string()));
        }
        self.api.get("nodes/localhost/tasks", &q).await
    }

    /// Tasks of type `kind` (`backup`, `verificationjob`, …) started since `since`, running
    /// ones included, newest first, at most `limit`. PBS matches `typefilter` as a
    /// substring: callers keep the exact type.
    pub async fn tasks_of_type(
        &self,
        kind: &str,
        since: i64,
        limit: usize,
    ) -> Result<Vec<ProxmoxTask>, UpstreamError> {
        let q = [
            ("typefilter", kind.to_string()),
            ("since", since.to_string()),
            ("limit", limit.to_string()),
        ];
        self.api.get("nodes/localhost/tasks", &q).await
    }
}
