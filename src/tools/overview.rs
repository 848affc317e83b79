//! `prometheus_instance_overview`: the common questions about one host answered without
//! PromQL, for models that write it badly: is it up, how busy is its CPU, how full is its
//! memory, how busy its busiest disks are, and for each filesystem how full it is, how fast
//! it fills and when it is full.
//! Node-exporter metric names; what a host does not export is said, not guessed. When
//! process-exporter runs on the same host, its top 3 process groups by CPU.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use chrono::{DateTime, Utc};
use serde_json::{Value, json};

use super::args::{ArgError, ago, arg, parse_duration, required};
use super::closest::rank_values;
use super::compact::{Unit, format_number};
use super::prometheus::{alternatives, auto_step, sizes_for};
use super::trend::{Measure, describe, join_key};
use super::{Tool, ToolError};
use crate::integrations::PrometheusClient;
use crate::integrations::prometheus::Series;

/// Filesystems that are not disks.
const PSEUDO_FS: &str = "tmpfs|devtmpfs|overlay|squashfs|ramfs|nsfs|autofs|fuse.lxcfs|rootfs";
/// Most filesystems listed.
const MAX_FILESYSTEMS: usize = 12;
/// Most disks listed (the busiest).
const MAX_DISKS: usize = 2;

/// `prometheus_instance_overview`: up, CPU, memory and filesystems of one instance.
pub struct PrometheusInstanceOverview {
    pub client: Arc<PrometheusClient>,
    pub max_chars: usize,
}

impl PrometheusInstanceOverview {
    /// The name the tool registers under.
    pub const NAME: &'static str = "prometheus_instance_overview";

    /// The instances meant by `wanted` (`pve1` means `pve1:9100`), or the text saying
    /// which exist.
    async fn resolve(
        &self,
        wanted: &str,
        start: DateTime<Utc>,
        end: DateTime<Utc>,
    ) -> Result<Result<Vec<String>, String>, ToolError> {
        let all = self
            .client
            .label_values_between("instance", &[], start, end)
            .await?;
        if all.iter().any(|v| v == wanted) {
            // The exact instance (edge-a:9100), not every exporter on its host.
            return Ok(Ok(vec![wanted.to_string()]));
        }
        let host = |v: &str| v.rsplit_once(':').map_or(v, |(h, _)| h).to_string();
        let matched: Vec<String> = all
            .iter()
            .filter(|v| *v == wanted || host(v) == wanted || host(v) == host(wanted))
            .cloned()
            .collect();
        if !matched.is_empty() {
            return Ok(Ok(matched));
        }
        let (ranked, likely) = rank_values(wanted, &all);
        let shown: Vec<&str> = ranked.iter().take(10).copied().collect();
        let mut text = format!(
            "instance {wanted:?} has no data in this range; instances: {}",
            shown.join(", ")
        );
        if likely {
            text.push_str(&format!(" (did you mean {:?}?)", ranked[0]));
        }
        Ok(Err(text))
    }
}

impl PrometheusInstanceOverview {
    /// `top processes by CPU: ffmpeg 3.5 cores, dockerd 0.1 cores`: the 3 process-exporter
    /// groups using the most CPU over the 10 minutes before `at` (Unix seconds; now when
    /// NaN) on the hosts of `instances` (any port: `edge-a:9256` for `edge-a:9100`).
    /// `None` when the host has no process-exporter metrics or the lookup fails.
    async fn top_processes(&self, instances: &[String], at: f64) -> Option<String> {
        let hosts = alternatives(
            instances
                .iter()
                .map(|i| i.rsplit_once(':').map_or(i.as_str(), |(h, _)| h)),
        );
        let q = format!(
            "topk(3, sum by (groupname) (rate(namedprocess_namegroup_cpu_seconds_total{{instance=~\"({hosts})(:[0-9]+)?\"}}[10m])))"
        );
        let at = DateTime::from_timestamp(at as i64, 0).filter(|_| at.is_finite());
        let mut top = match self.client.query_vector(&q, at).await {
            Ok(v) => v,
            Err(e) => {
                tracing::debug!(error = %e, "no process-exporter metrics");
                return None;
            }
        };
        if top.is_empty() {
            return None;
        }
        top.sort_by(|a, b| b.value.total_cmp(&a.value));
        let groups: Vec<String> = top
            .iter()
            .map(|s| {
                format!(
                    "{} {} cores",
                    s.metric.get("groupname").map_or("?", String::as_str),
                    format_number(s.value, Unit::Plain)
                )
            })
            .collect();
        Some(format!("top processes by CPU: {}", groups.join(", ")))
    }
}

/// The finite points of `s` up to `until` (all when NaN): a `rate()` over a window where
/// the data stops reads wrong, so callers leave out the last 5 minutes before the newest
/// data.
fn points_until(s: &Series, until: f64) -> Vec<f64> {
    s.values
        .iter()
        .filter(|p| p.0 <= until || until.is_nan())
        .map(|p| p.1)
        .filter(|v| v.is_finite())
        .collect()
}

/// `last 21.3 %, avg 20.1 %, max 25 %` of a percentage series' points (`points_until`).
fn percent_summary(vs: &[f64]) -> String {
    let Some(last) = vs.last() else {
        return "no data".into();
    };
    let avg = vs.iter().sum::<f64>() / vs.len() as f64;
    let max = vs.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!("last {last:.1} %, avg {avg:.1} %, max {max:.1} %")
}

#[async_trait]
impl Tool for PrometheusInstanceOverview {
    fn name(&self) -> &'static str {
        Self::NAME
    }
    fn description(&self) -> &'static str {
        "One host without PromQL: up, CPU %, memory %, busiest disks' I/O %, each filesystem used %, fill rate and time until full."
    }
    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {
            "instance": {"type": "string", "description": "e.g. pve1 or pve1:9100"},
            "since": {"type": "string", "description": "e.g. 6h (default), 7d"}
        }, "required": ["instance"]})
    }
    async fn call(&self, args: Value) -> Result<String, ToolError> {
        let wanted = required(&args, "instance")?.trim();
        let since = parse_duration(arg(&args, "since").unwrap_or("6h"))?;
        if since < Duration::from_secs(600) || since > Duration::from_secs(90 * 86_400) {
            return Err(ArgError::Invalid("\"since\" must be between 10m and 90d".into()).into());
        }
        let end = Utc::now();
        let start = ago(end, since)?;
        let instances = match self.resolve(wanted, start, end).await? {
            Ok(i) => i,
            Err(text) => return Ok(text),
        };
        let sel = format!(
            "instance=~\"{}\"",
            alternatives(instances.iter().map(String::as_str))
        );
        let step = auto_step(since);
        let range = |q: String| {
            let client = self.client.clone();
            async move { client.query_range(&q, start, end, step).await }
        };
        let (up, cpu, mem, fs, disks) = tokio::join!(
            range(format!("up{{{sel}}}")),
            range(format!(
                "100 * (1 - avg by (instance) (rate(node_cpu_seconds_total{{mode=\"idle\",{sel}}}[5m])))"
            )),
            range(format!(
                "100 * (1 - node_memory_MemAvailable_bytes{{{sel}}} / node_memory_MemTotal_bytes{{{sel}}})"
            )),
            range(format!(
                "node_filesystem_avail_bytes{{{sel},fstype!~\"{PSEUDO_FS}\"}}"
            )),
            range(format!(
                "topk({MAX_DISKS}, 100 * max by (instance, device) (rate(node_disk_io_time_seconds_total{{{sel}}}[5m])))"
            )),
        );
        let (up, cpu, mem, mut fs) = (up?, cpu?, mem?, fs?);
        // Busy disks are a detail: a failed query leaves their lines out.
        let disks = disks.unwrap_or_default();
        let newest = up
            .iter()
            .chain(&fs)
            .filter_map(|s| s.values.last().map(|p| p.0))
            .fold(f64::NAN, f64::max);
        let mut out = format!(
            "{} over the last {} ({} to {})",
            instances.join(", "),
            super::format::humanize(since),
            start.format("%Y-%m-%d %H:%M"),
            end.format("%Y-%m-%d %H:%M UTC")
        );
        if let Some(t) = DateTime::from_timestamp(newest as i64, 0).filter(|_| newest.is_finite()) {
            out.push_str(&format!("; newest data {}", t.format("%Y-%m-%d %H:%M UTC")));
        }
        if up.is_empty() {
            out.push_str("\nup: no data");
        }
        for s in &up {
            let down = s.values.iter().filter(|p| p.1 == 0.0).count() as u64 * step.as_secs();
            let last = s.values.last().map_or(f64::NAN, |p| p.1);
            let job = s.metric.get("job").map_or("?", String::as_str);
            let state = if last == 1.0 { "up" } else { "DOWN" };
            out.push_str(&format!(
                "\nup (job={job}): {state} at the newest point; down ~{} min in range",
                down / 60
            ));
        }
        let line = |name: &str, s: &[Series], missing: &str| match s.first() {
            Some(s) => format!(
                "\n{name}: {}",
                percent_summary(&points_until(s, newest - 300.0))
            ),
            None => format!("\n{name}: no data ({missing} not exported for this instance)"),
        };
        out.push_str(&line("cpu used", &cpu, "node_cpu_seconds_total"));
        out.push_str(&line("memory used", &mem, "node_memory_MemAvailable_bytes"));
        // The disks busiest at the newest point (time spent doing I/O; near 100 % a disk
        // is saturated and everything on it waits).
        let mut disks: Vec<(f64, String)> = disks
            .iter()
            .map(|s| {
                let points = points_until(s, newest - 300.0);
                let device = s.metric.get("device").map_or("?", String::as_str);
                let text = format!("\ndisk {device} busy: {}", percent_summary(&points));
                (points.last().copied().unwrap_or(f64::NEG_INFINITY), text)
            })
            .collect();
        disks.sort_by(|a, b| b.0.total_cmp(&a.0));
        for (_, text) in disks.iter().take(MAX_DISKS) {
            out.push_str(text);
        }
        if fs.is_empty() {
            out.push_str("\nfilesystems: no data (node_filesystem_avail_bytes not exported)");
        }
        let sizes = sizes_for(
            &self.client,
            "node_filesystem_avail_bytes",
            fs.iter().map(|s| &s.metric),
            end,
            since,
        )
        .await;
        fs.sort_by(|a, b| a.metric.get("mountpoint").cmp(&b.metric.get("mountpoint")));
        for s in fs.iter().take(MAX_FILESYSTEMS) {
            let mount = s.metric.get("mountpoint").map_or("?", String::as_str);
            let size = sizes.get(&join_key(&s.metric)).copied();
            let last = s.values.last().map_or(f64::NAN, |p| p.1);
            let text = describe(&s.values, Unit::Bytes, Measure::FreeBytes, size)
                .unwrap_or_else(|| format!("{} free, unchanged", format_number(last, Unit::Bytes)));
            out.push_str(&format!("\nfilesystem {mount}: {}", text.trim_start()));
        }
        // Like the CPU line: the points run on for the 5-minute lookback after the data.
        if let Some(line) = self.top_processes(&instances, newest - 300.0).await {
            out.push('\n');
            out.push_str(&line);
        }
        if fs.len() > MAX_FILESYSTEMS {
            out.push_str(&format!(
                "\n… and {} more filesystems",
                fs.len() - MAX_FILESYSTEMS
            ));
        }
        Ok(crate::text::truncate(&out, self.max_chars))
    }
}
