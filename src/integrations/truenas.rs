//! TrueNAS client (REST API v2.0, `Authorization: Bearer` API key): pools, alerts, disks,
//! disk temperatures and SMART test results.

use std::collections::BTreeMap;

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

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

/// One disk of a pool's topology.
#[derive(Clone, Debug, PartialEq)]
pub struct TruenasMember {
    /// The disk's name (`sda`, `nvme0n1`), as `GET /disk` names it when the topology says.
    pub disk: String,
    pub status: String,
    pub read_errors: u64,
    pub write_errors: u64,
    pub checksum_errors: u64,
    /// The topology group it is in (`data`, `log`, `cache`, `spare`, `special`, `dedup`).
    pub group: String,
    /// The disk it replaces, when it is the new one of a REPLACING vdev (ZFS lists the
    /// new device last).
    pub replacing: Option<String>,
    /// The model the topology itself gives: a missing disk's `unavail_disk`.
    pub model: Option<String>,
}

impl TruenasPool {
    /// Every disk of the pool's topology, group by group, in the order sent.
    pub fn members(&self) -> Vec<TruenasMember> {
        let mut out = Vec::new();
        match &self.topology {
            Some(Value::Object(groups)) => {
                for (group, vdevs) in groups {
                    walk(vdevs, group, &mut out);
                }
            }
            Some(t) => walk(t, "data", &mut out),
            None => {}
        }
        out
    }

    /// The devices of the pool that are not ONLINE (a hot spare waiting, AVAIL, is fine)
    /// or have counted read, write or checksum errors (ZFS keeps a disk ONLINE while it
    /// repairs what it returned wrong), as `(disk, status, read, write, checksum errors)`.
    pub fn unhealthy_devices(&self) -> Vec<(String, String, u64, u64, u64)> {
        self.members()
            .into_iter()
            .filter(|m| {
                let errors = m.read_errors > 0 || m.write_errors > 0 || m.checksum_errors > 0;
                !m.status.is_empty() && (!matches!(m.status.as_str(), "ONLINE" | "AVAIL") || errors)
            })
            .map(|m| {
                (
                    m.disk,
                    m.status,
                    m.read_errors,
                    m.write_errors,
                    m.checksum_errors,
                )
            })
            .collect()
    }
}

/// A non-empty string field of a JSON object, trimmed.
fn text<'a>(m: &'a serde_json::Map<String, Value>, k: &str) -> Option<&'a str> {
    m.get(k)
        .and_then(Value::as_str)
        .map(str::trim)
        .filter(|s| !s.is_empty())
}

/// The DISK vdevs under `v` (of topology group `group`) into `out`.
fn walk(v: &Value, group: &str, out: &mut Vec<TruenasMember>) {
    match v {
        Value::Array(items) => items.iter().for_each(|i| walk(i, group, out)),
        Value::Object(m) => {
            let kind = text(m, "type").unwrap_or_default();
            if kind == "DISK" {
                out.push(member(m, group));
            }
            let first = out.len();
            if let Some(children) = m.get("children") {
                walk(children, group, out);
            }
            if kind == "REPLACING" && out.len() >= first + 2 {
                let old = out.get(first).map(|o| o.disk.clone());
                if let Some(new) = out.last_mut() {
                    new.replacing = old;
                }
            }
        }
        _ => {}
    }
}

/// A DISK vdev: named by its `disk`, else the missing disk's `unavail_disk`, else its
/// device, name or path.
fn member(m: &serde_json::Map<String, Value>, group: &str) -> TruenasMember {
    let missing = m.get("unavail_disk").and_then(Value::as_object);
    let name = text(m, "disk")
        .or_else(|| missing.and_then(|u| text(u, "devname")))
        .or_else(|| missing.and_then(|u| text(u, "name")))
        .or_else(|| ["device", "name", "path"].iter().find_map(|k| text(m, k)))
        .unwrap_or("?");
    let stat = |k: &str| {
        m.get("stats")
            .and_then(|s| s.get(k))
            .and_then(Value::as_u64)
            .unwrap_or(0)
    };
    TruenasMember {
        disk: name.to_string(),
        status: text(m, "status").unwrap_or_default().to_string(),
        read_errors: stat("read_errors"),
        write_errors: stat("write_errors"),
        checksum_errors: stat("checksum_errors"),
        group: group.to_string(),
        replacing: None,
        model: missing.and_then(|u| text(u, "model")).map(str::to_string),
    }
}

/// The last scrub or resilver of a pool (`function` RESILVER or SCRUB, `state` SCANNING,
/// FINISHED or CANCELED), with its progress as the API gives it. Counters are read as
/// numbers whatever their JSON type, so an odd one never costs the pool.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasScan {
    #[serde(default)]
    pub function: Option<String>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub errors: Option<u64>,
    /// `{"$date": epoch-milliseconds}` (REST v2.0), or epoch seconds.
    #[serde(default)]
    pub start_time: Option<Value>,
    #[serde(default)]
    pub end_time: Option<Value>,
    /// Percent done, 0 to 100.
    #[serde(default)]
    pub percentage: Option<f64>,
    /// Bytes the scan has to go through, and those issued so far.
    #[serde(default)]
    pub bytes_to_process: Option<f64>,
    #[serde(default)]
    pub bytes_processed: Option<f64>,
    #[serde(default)]
    pub bytes_issued: Option<f64>,
    /// When it was paused (`null` while it runs).
    #[serde(default)]
    pub pause: Option<Value>,
    /// ZFS's estimate of the seconds left (`null` when not running).
    #[serde(default)]
    pub total_secs_left: Option<f64>,
}

impl TruenasScan {
    /// Whether it is running now (paused or not).
    pub fn running(&self) -> bool {
        self.state.as_deref() == Some("SCANNING")
    }

    /// Whether it is paused.
    pub fn paused(&self) -> bool {
        self.pause.as_ref().is_some_and(|p| !p.is_null())
    }

    /// When it started.
    pub fn started(&self) -> Option<DateTime<Utc>> {
        api_time(self.start_time.as_ref()?)
    }
}

/// A time of the TrueNAS API: `{"$date": epoch-milliseconds}`, or a number of epoch
/// seconds (milliseconds when it is too large to be seconds).
pub fn api_time(v: &Value) -> Option<DateTime<Utc>> {
    if let Some(ms) = v.get("$date").and_then(Value::as_i64) {
        return DateTime::from_timestamp_millis(ms);
    }
    let n = v.as_i64()?;
    match n > 100_000_000_000 {
        true => DateTime::from_timestamp_millis(n),
        false => DateTime::from_timestamp(n, 0),
    }
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
    use super::{TruenasPool, TruenasScan, api_time};

    #[test]
    fn members_name_a_missing_disk_by_its_unavail_disk_and_the_new_disk_of_a_replacement() {
        let pool: TruenasPool = serde_json::from_value(serde_json::json!({
            "name": "tank", "status": "DEGRADED",
            "topology": {"data": [{"type": "RAIDZ1", "status": "DEGRADED", "children": [
                {"type": "DISK", "disk": "sda", "device": "sda1", "status": "ONLINE", "children": []},
                {"type": "REPLACING", "status": "DEGRADED", "children": [
                    {"type": "DISK", "disk": null, "device": null, "status": "UNAVAIL", "children": [],
                     "unavail_disk": {"devname": "sdb", "model": "ST4000VN008-2DR166", "serial": "ZL2ABC02"}},
                    {"type": "DISK", "disk": "sdd", "device": "sdd1", "status": "ONLINE", "children": []}]}]}],
                "spare": [{"type": "DISK", "disk": "sde", "status": "AVAIL", "children": []}]}
        }))
        .unwrap();
        let m = pool.members();
        let names: Vec<(&str, &str, Option<&str>)> = m
            .iter()
            .map(|m| (m.disk.as_str(), m.group.as_str(), m.replacing.as_deref()))
            .collect();
        assert_eq!(
            names,
            [
                ("sda", "data", None),
                ("sdb", "data", None),
                ("sdd", "data", Some("sdb")),
                ("sde", "spare", None)
            ]
        );
        assert_eq!(m[1].model.as_deref(), Some("ST4000VN008-2DR166"));
        assert_eq!(
            pool.unhealthy_devices(),
            vec![("sdb".into(), "UNAVAIL".into(), 0, 0, 0)],
            "a waiting spare is not unhealthy"
        );
    }

    #[test]
    fn a_scan_reads_both_time_forms_and_odd_counters_never_cost_the_pool() {
        let scan: TruenasScan = serde_json::from_value(serde_json::json!({
            "function": "RESILVER", "state": "SCANNING", "start_time": {"$date": 1764290000000i64},
            "end_time": null, "percentage": 42.5, "bytes_to_process": 3.0e12, "bytes_processed": 1300000000000u64,
            "bytes_issued": 1275000000000u64, "pause": null, "errors": 0, "total_secs_left": 5400
        }))
        .unwrap();
        assert!(scan.running() && !scan.paused());
        assert_eq!(scan.started().unwrap().timestamp(), 1764290000);
        assert_eq!(
            api_time(&serde_json::json!(1764290000))
                .unwrap()
                .timestamp(),
            1764290000
        );
        assert_eq!(api_time(&serde_json::json!("soon")), None);
    }

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
