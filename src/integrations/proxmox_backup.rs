//! Proxmox VE's scheduled backups: the backup jobs (`GET /cluster/backup`) and the
//! guests they select, the cluster's guests (`GET /cluster/resources?type=vm`), resource
//! pools' members, PVE's own list of guests no job selects, and the backups on a storage.

use serde::Deserialize;

use super::UpstreamError;
use super::proxmox::ProxmoxClient;

/// `GET /cluster/backup` item: a scheduled backup job (`vzdump`) and which guests it
/// selects. PVE picks them by `pool` first, else the `vmid` list, else `all` less the
/// `exclude` list; `node` restricts any of these to the guests on that node. Lists are
/// comma-separated text (a single id may come as a number); flags are 0 or 1.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct PveBackupJob {
    #[serde(default)]
    pub id: String,
    /// A calendar event (`sun 01:00`, `21:00`); older jobs have `starttime` and `dow`.
    #[serde(default)]
    pub schedule: Option<String>,
    #[serde(default)]
    pub starttime: Option<String>,
    #[serde(default)]
    pub dow: Option<String>,
    /// 0 for a disabled job; absent means enabled.
    #[serde(default)]
    pub enabled: Option<serde_json::Value>,
    #[serde(default)]
    pub all: Option<serde_json::Value>,
    #[serde(default)]
    pub vmid: Option<serde_json::Value>,
    #[serde(default)]
    pub exclude: Option<serde_json::Value>,
    #[serde(default)]
    pub pool: Option<String>,
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub storage: Option<String>,
    #[serde(default)]
    pub comment: Option<String>,
    /// Epoch seconds of its next run.
    #[serde(default, rename = "next-run")]
    pub next_run: Option<i64>,
}

/// Whether a 0/1 flag of the API is set (`1`, `"1"`, `true`).
pub fn flag(v: Option<&serde_json::Value>) -> bool {
    v.is_some_and(|v| v == 1 || v == "1" || v == true)
}

/// The ids of a PVE id list (`"100,101 102"`, `100`).
pub fn id_list(v: Option<&serde_json::Value>) -> Vec<String> {
    match v {
        Some(serde_json::Value::String(s)) => s
            .split([',', ';', ' ', '\t', '\n'])
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
            .collect(),
        Some(serde_json::Value::Number(n)) => vec![n.to_string()],
        Some(serde_json::Value::Array(items)) => {
            items.iter().flat_map(|i| id_list(Some(i))).collect()
        }
        _ => Vec::new(),
    }
}

impl PveBackupJob {
    /// Whether the job runs (`enabled` absent or 1).
    pub fn is_enabled(&self) -> bool {
        self.enabled.as_ref().is_none_or(|e| flag(Some(e)))
    }

    /// Its schedule as PVE states it: the calendar event, else the old start time and
    /// weekdays (`mon,tue 02:00`).
    pub fn schedule_text(&self) -> Option<String> {
        if let Some(s) = self
            .schedule
            .as_deref()
            .map(str::trim)
            .filter(|s| !s.is_empty())
        {
            return Some(s.to_string());
        }
        let start = self.starttime.as_deref()?.trim();
        match self.dow.as_deref().map(str::trim).filter(|d| !d.is_empty()) {
            Some(d) => Some(format!("{d} {start}")),
            None => Some(start.to_string()),
        }
    }
}

/// A guest as the cluster lists it (`GET /cluster/resources?type=vm`, or a pool's
/// member from `GET /pools/{poolid}`).
#[derive(Clone, Debug, Deserialize)]
pub struct PveResource {
    /// `qemu/100`, `lxc/200`, `storage/pve1/local`.
    #[serde(default)]
    pub id: String,
    /// `qemu`, `lxc` (`storage` for a pool's storage member).
    #[serde(default, rename = "type")]
    pub kind: String,
    #[serde(default)]
    pub vmid: Option<serde_json::Value>,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub node: Option<String>,
    #[serde(default)]
    pub status: Option<String>,
    #[serde(default)]
    pub template: Option<serde_json::Value>,
    #[serde(default)]
    pub uptime: Option<u64>,
}

impl PveResource {
    /// Its vmid as text: `vmid`, else the number after the slash of `id`.
    pub fn vmid_text(&self) -> Option<String> {
        id_list(self.vmid.as_ref())
            .into_iter()
            .next()
            .or_else(|| Some(self.id.rsplit_once('/')?.1.to_string()))
            .filter(|v| !v.is_empty() && v.chars().all(|c| c.is_ascii_digit()))
    }
}

/// `GET /cluster/backup-info/not-backed-up` item: a guest no backup job selects.
#[derive(Clone, Debug, Deserialize)]
pub struct PveNotBackedUp {
    pub vmid: serde_json::Value,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
}

/// `GET /nodes/{node}/storage/{storage}/content?content=backup` item: one backup.
#[derive(Clone, Debug, Deserialize)]
pub struct PveBackupVolume {
    #[serde(default)]
    pub volid: String,
    #[serde(default)]
    pub vmid: Option<serde_json::Value>,
    /// Epoch seconds it was made.
    #[serde(default)]
    pub ctime: Option<i64>,
}

impl ProxmoxClient {
    /// The backups on `storage` as `node` sees it.
    pub async fn backups(
        &self,
        node: &str,
        storage: &str,
    ) -> Result<Vec<PveBackupVolume>, UpstreamError> {
        let q = [("content", "backup".to_string())];
        let path = format!("nodes/{node}/storage/{storage}/content");
        self.api().get(&path, &q).await
    }

    /// The scheduled backup jobs of the cluster.
    pub async fn backup_jobs(&self) -> Result<Vec<PveBackupJob>, UpstreamError> {
        self.api().get("cluster/backup", &[]).await
    }

    /// The guests no backup job selects, as PVE computes them (PVE 6.4 and later).
    pub async fn not_backed_up(&self) -> Result<Vec<PveNotBackedUp>, UpstreamError> {
        self.api()
            .get("cluster/backup-info/not-backed-up", &[])
            .await
    }

    /// Every guest of the cluster, on every node (offline ones too).
    pub async fn cluster_guests(&self) -> Result<Vec<PveResource>, UpstreamError> {
        let q = [("type", "vm".to_string())];
        let all: Vec<PveResource> = self.api().get("cluster/resources", &q).await?;
        Ok(all
            .into_iter()
            .filter(|r| r.kind == "qemu" || r.kind == "lxc")
            .collect())
    }

    /// The guests of resource pool `pool`: `GET /pools/{poolid}`, else (PVE 8.1 and
    /// later, where that path is deprecated) `GET /pools?poolid=`.
    pub async fn pool_guests(&self, pool: &str) -> Result<Vec<PveResource>, UpstreamError> {
        #[derive(Deserialize)]
        struct Pool {
            #[serde(default)]
            members: Vec<PveResource>,
        }
        // PVE's pool ids are letters, digits, `-` and `_` (and `/` for nested pools);
        // any other name is not asked for.
        let valid = !pool.is_empty()
            && !pool.contains("..")
            && pool
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || "-_/".contains(c));
        if !valid {
            return Err(UpstreamError::Setup {
                service: "Proxmox VE",
                reason: format!("not a pool id: {pool:?}"),
            });
        }
        let members = match self.api().get::<Pool>(&format!("pools/{pool}"), &[]).await {
            Ok(p) => p.members,
            Err(first) => {
                let q = [("poolid", pool.to_string())];
                match self.api().get::<Vec<Pool>>("pools", &q).await {
                    Ok(pools) => pools.into_iter().flat_map(|p| p.members).collect(),
                    Err(_) => return Err(first),
                }
            }
        };
        Ok(members
            .into_iter()
            .filter(|m| m.kind == "qemu" || m.kind == "lxc")
            .collect())
    }
}
