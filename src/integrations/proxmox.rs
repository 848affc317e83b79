//! Proxmox VE client (`/api2/json`, API token auth), and the token-authenticated
//! `{"data": …}` envelope shared with Proxmox Backup Server.

use serde::Deserialize;
use serde::de::DeserializeOwned;

use super::{Auth, Upstream, UpstreamError, UpstreamOptions};
use crate::config::{ProxmoxApiConfig, Secret};

/// A Proxmox-family API (VE or Backup Server) answering `{"data": …}`.
#[derive(Clone, Debug)]
pub struct ProxmoxApi {
    upstream: Upstream,
}

#[derive(Deserialize)]
struct Envelope<T> {
    data: T,
}

impl ProxmoxApi {
    /// `scheme` is `PVEAPIToken` or `PBSAPIToken`; `separator` is `=` (VE) or `:` (PBS).
    pub fn new(
        service: &'static str,
        config: &ProxmoxApiConfig,
        scheme: &str,
        separator: char,
    ) -> Result<Self, UpstreamError> {
        let setup = |reason: &str| UpstreamError::Setup {
            service,
            reason: reason.to_string(),
        };
        let url = config.url.as_ref().ok_or_else(|| setup("url is not set"))?;
        let id = config
            .token_id
            .as_ref()
            .ok_or_else(|| setup("token_id is not set"))?;
        let secret = config
            .token_secret
            .as_ref()
            .ok_or_else(|| setup("token_secret is not set"))?;
        let value = Secret::new(format!("{scheme}={id}{separator}{}", secret.expose()));
        let mut base = url.0.clone();
        let path = base.path().trim_end_matches('/').to_string();
        if !path.ends_with("/api2/json") {
            base.set_path(&format!("{path}/api2/json/"));
        }
        let opts = UpstreamOptions {
            timeout: config.timeout.get(),
            auth: Some(Auth::Header("Authorization".into(), value)),
            ca_file: config.ca_file.clone(),
            accept_invalid_certs: !config.verify_tls,
            ..Default::default()
        };
        Ok(Self {
            upstream: Upstream::new(service, &base, opts)?,
        })
    }

    pub fn upstream(&self) -> &Upstream {
        &self.upstream
    }

    /// GETs `path` (under `/api2/json/`) and unwraps `data`.
    pub async fn get<T: DeserializeOwned>(
        &self,
        path: &str,
        query: &[(&str, String)],
    ) -> Result<T, UpstreamError> {
        let env: Envelope<T> = self.upstream.get_json(path, query).await?;
        Ok(env.data)
    }
}

/// `GET /nodes` item.
#[derive(Clone, Debug, Deserialize)]
pub struct PveNode {
    pub node: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub cpu: Option<f64>,
    #[serde(default)]
    pub maxcpu: Option<u64>,
    #[serde(default)]
    pub mem: Option<u64>,
    #[serde(default)]
    pub maxmem: Option<u64>,
    #[serde(default)]
    pub uptime: Option<u64>,
}

/// `GET /nodes/{node}/qemu` and `/lxc` item.
#[derive(Clone, Debug, Deserialize)]
pub struct PveGuest {
    /// Absent from nothing PVE lists; defaulted so one VM's `status/current` still reads.
    #[serde(default)]
    pub vmid: serde_json::Value,
    #[serde(default)]
    pub name: Option<String>,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub uptime: Option<u64>,
    /// Share (0–1) of its own vCPUs the guest keeps busy.
    #[serde(default)]
    pub cpu: Option<f64>,
    /// Its vCPUs (a container's CPU limit may be fractional).
    #[serde(default)]
    pub cpus: Option<f64>,
    #[serde(default)]
    pub mem: Option<u64>,
    #[serde(default)]
    pub maxmem: Option<u64>,
    #[serde(default)]
    pub template: Option<serde_json::Value>,
    /// A VM's run state as QEMU reports it (`running`, `paused`, `io-error`, …; with
    /// `full=1`): a VM whose `status` is `running` may be paused.
    #[serde(default)]
    pub qmpstatus: Option<String>,
    /// A running VM's balloon target in bytes, what QEMU's `query-balloon` calls `actual`
    /// (with `full=1`, when the guest's balloon driver answers): below `maxmem` when the
    /// host took memory back from the guest.
    #[serde(default)]
    pub balloon: Option<u64>,
    /// The configured minimum of the balloon (`balloon:` of the VM's config, in bytes), set
    /// only when ballooning is configured: PVE's auto-ballooning never shrinks it below.
    #[serde(default)]
    pub balloon_min: Option<u64>,
    /// The VM's weight in auto-ballooning (`shares:`, default 1000; 0 leaves it out).
    #[serde(default)]
    pub shares: Option<u64>,
    /// QEMU's `query-balloon` answer as PVE passes it on (`actual`, `max_mem`, `total_mem`,
    /// `free_mem`, `last_update`, …), kept as JSON: only its numbers are read.
    #[serde(default)]
    pub ballooninfo: Option<serde_json::Value>,
}

impl PveGuest {
    /// Its id as text (`vmid` is a number, or a string for some containers).
    pub fn id(&self) -> String {
        match &self.vmid {
            serde_json::Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }
}

/// `GET /nodes/{node}/storage` item.
#[derive(Clone, Debug, Deserialize)]
pub struct PveStorage {
    pub storage: String,
    #[serde(default, rename = "type")]
    pub kind: Option<String>,
    #[serde(default)]
    pub active: Option<u8>,
    #[serde(default)]
    pub enabled: Option<u8>,
    #[serde(default)]
    pub used: Option<u64>,
    #[serde(default)]
    pub total: Option<u64>,
    #[serde(default)]
    pub avail: Option<u64>,
    #[serde(default)]
    pub shared: Option<u8>,
}

/// A task of a Proxmox VE node (`GET /nodes/{node}/tasks`) or of a Backup Server
/// (`GET /nodes/localhost/tasks`, which names the type and id `worker_type`, `worker_id`).
#[derive(Clone, Debug, Deserialize)]
pub struct ProxmoxTask {
    pub upid: String,
    #[serde(default)]
    pub node: String,
    /// What the task did (`vzdump`, `qmshutdown`, `backup`, `verificationjob`).
    #[serde(default, rename = "type", alias = "worker_type")]
    pub kind: String,
    /// What it did it to (`100`, `backup:vm/100`).
    #[serde(default, alias = "worker_id")]
    pub id: Option<String>,
    #[serde(default)]
    pub user: Option<String>,
    #[serde(default)]
    pub starttime: Option<i64>,
    #[serde(default)]
    pub endtime: Option<i64>,
    /// "OK", "WARNINGS: n", or the error text; absent while running.
    #[serde(default)]
    pub status: Option<String>,
}

/// `GET /nodes/{node}/replication` item: a storage replication job of a guest on that
/// node with its state (`pvesr status`). Times are epoch seconds, 0 for never.
#[derive(Clone, Debug, Deserialize)]
pub struct PveReplication {
    /// `<guest>-<jobnum>` (`105-0`).
    pub id: String,
    /// The guest's id (a number).
    #[serde(default)]
    pub guest: serde_json::Value,
    /// The node the guest is replicated to.
    #[serde(default)]
    pub target: Option<String>,
    /// A calendar event (`*/15`, `22:30`, `mon..fri 02:00`); `*/15` when absent.
    #[serde(default)]
    pub schedule: Option<String>,
    #[serde(default)]
    pub vmtype: Option<String>,
    #[serde(default)]
    pub disable: Option<serde_json::Value>,
    #[serde(default)]
    pub remove_job: Option<String>,
    /// Start of the last successful sync.
    #[serde(default)]
    pub last_sync: Option<i64>,
    /// Start of the last attempt.
    #[serde(default)]
    pub last_try: Option<i64>,
    #[serde(default)]
    pub next_sync: Option<i64>,
    /// Seconds the last attempt took.
    #[serde(default)]
    pub duration: Option<f64>,
    /// Attempts failed in a row (0 after a success).
    #[serde(default)]
    pub fail_count: Option<u64>,
    /// The last attempt's error, when it failed.
    #[serde(default)]
    pub error: Option<String>,
    /// The process of a sync running now.
    #[serde(default)]
    pub pid: Option<u64>,
}

impl PveReplication {
    /// The guest's id as text.
    pub fn guest_id(&self) -> String {
        match &self.guest {
            serde_json::Value::String(s) => s.clone(),
            serde_json::Value::Null => self.id.split('-').next().unwrap_or_default().to_string(),
            other => other.to_string(),
        }
    }
}

/// A Proxmox VE cluster.
#[derive(Clone, Debug)]
pub struct ProxmoxClient {
    api: ProxmoxApi,
}

impl ProxmoxClient {
    pub fn new(config: &ProxmoxApiConfig) -> Result<Self, UpstreamError> {
        Ok(Self {
            api: ProxmoxApi::new("Proxmox VE", config, "PVEAPIToken", '=')?,
        })
    }

    pub fn api(&self) -> &ProxmoxApi {
        &self.api
    }

    pub async fn nodes(&self) -> Result<Vec<PveNode>, UpstreamError> {
        self.api.get("nodes", &[]).await
    }

    /// Guests on `node`: ("qemu" | "lxc", guest).
    pub async fn guests(&self, node: &str) -> Result<Vec<(&'static str, PveGuest)>, UpstreamError> {
        // `full=1`: the run state QEMU reports (a VM paused on an I/O error is "running").
        let full = [("full", "1".to_string())];
        let qemu: Vec<PveGuest> = self.api.get(&format!("nodes/{node}/qemu"), &full).await?;
        let lxc: Vec<PveGuest> = self.api.get(&format!("nodes/{node}/lxc"), &[]).await?;
        Ok(qemu
            .into_iter()
            .map(|g| ("qemu", g))
            .chain(lxc.into_iter().map(|g| ("lxc", g)))
            .collect())
    }

    /// One VM's state (`GET /nodes/{node}/qemu/{vmid}/status/current`, the same fields as
    /// a `full=1` listing: balloon target, memory used as the guest reports it).
    pub async fn qemu_status(&self, node: &str, vmid: &str) -> Result<PveGuest, UpstreamError> {
        self.api
            .get(&format!("nodes/{node}/qemu/{vmid}/status/current"), &[])
            .await
    }

    pub async fn storage(&self, node: &str) -> Result<Vec<PveStorage>, UpstreamError> {
        self.api.get(&format!("nodes/{node}/storage"), &[]).await
    }

    pub async fn tasks(
        &self,
        node: &str,
        errors_only: bool,
        since: Option<i64>,
    ) -> Result<Vec<ProxmoxTask>, UpstreamError> {
        let mut q = vec![("limit", "50".to_string())];
        if errors_only {
            q.push(("errors", "1".into()));
        }
        if let Some(s) = since {
            q.push(("since", s.to_string()));
        }
        self.api.get(&format!("nodes/{node}/tasks"), &q).await
    }

    /// The replication jobs of guests on `node` with their state (PVE 5.0 and later).
    pub async fn replication(&self, node: &str) -> Result<Vec<PveReplication>, UpstreamError> {
        self.api
            .get(&format!("nodes/{node}/replication"), &[])
            .await
    }

    /// The first `limit` lines of a task's log (`GET /nodes/{node}/tasks/{upid}/log`),
    /// where a failed task says why in more words than its status.
    pub async fn task_log(
        &self,
        node: &str,
        upid: &str,
        limit: u32,
    ) -> Result<Vec<String>, UpstreamError> {
        #[derive(Deserialize)]
        struct Line {
            #[serde(default)]
            t: String,
        }
        let q = [("limit", limit.to_string())];
        let lines: Vec<Line> = self
            .api
            .get(&format!("nodes/{node}/tasks/{upid}/log"), &q)
            .await?;
        Ok(lines.into_iter().map(|l| l.t).collect())
    }
}
