//! TrueNAS tools: pools (health, usage), active alerts, disks with temperature and the
//! last SMART test, scheduled cloud sync, replication and rsync tasks with their last run.

use std::sync::Arc;

use async_trait::async_trait;
use serde_json::{Value, json};

use super::format::{human_age, human_bytes, percent};
use super::{Tool, ToolError};
use crate::integrations::truenas::TruenasClient;

const ROLE: &str = "an API key whose user has the READONLY_ADMIN role";

#[derive(Clone, Copy, Debug)]
pub enum TruenasKind {
    Pools,
    Alerts,
    Disks,
    Tasks,
}

impl TruenasKind {
    pub const ALL: [TruenasKind; 4] = [Self::Pools, Self::Alerts, Self::Disks, Self::Tasks];

    /// The name the tool registers under.
    pub const fn name(self) -> &'static str {
        match self {
            Self::Pools => "truenas_pools",
            Self::Alerts => "truenas_alerts",
            Self::Disks => "truenas_disks",
            Self::Tasks => "truenas_tasks",
        }
    }
}

/// One TrueNAS tool.
pub struct TruenasTool {
    pub kind: TruenasKind,
    pub client: Arc<TruenasClient>,
}

#[async_trait]
impl Tool for TruenasTool {
    fn name(&self) -> &'static str {
        self.kind.name()
    }

    fn description(&self) -> &'static str {
        match self.kind {
            TruenasKind::Pools => "TrueNAS ZFS pools: status, health, usage, last scrub.",
            TruenasKind::Alerts => "Active (not dismissed) TrueNAS alerts, most severe first.",
            TruenasKind::Disks => {
                "TrueNAS disks: model, pool, temperature and last SMART test result where available."
            }
            TruenasKind::Tasks => {
                "TrueNAS scheduled cloud sync, replication and rsync tasks: schedule, enabled, last run's state, time and error."
            }
        }
    }

    fn parameters(&self) -> Value {
        json!({"type": "object", "properties": {}})
    }

    async fn call(&self, _args: Value) -> Result<String, ToolError> {
        let c = &self.client;
        let mut out = Vec::new();
        match self.kind {
            TruenasKind::Pools => {
                for p in c.pools().await.map_err(|e| ToolError::upstream(e, ROLE))? {
                    let used = p.allocated;
                    out.push(format!(
                        "{} status={}{}{} used={}/{} ({}){}",
                        p.name,
                        p.status,
                        // Not "healthy=false": a 1.5B model read the word and wrote
                        // "pool is healthy" of a DEGRADED pool.
                        match p.healthy {
                            Some(true) => ", healthy",
                            Some(false) => ", has a problem",
                            None => "",
                        },
                        p.status_detail
                            .as_deref()
                            .map(|d| format!(" ({d})"))
                            .unwrap_or_default(),
                        human_bytes(used.unwrap_or(0)),
                        human_bytes(p.size.unwrap_or(0)),
                        percent(used, p.size),
                        p.scan
                            .as_ref()
                            .map(|s| format!(
                                " last {}: {} errors={}",
                                s.function.as_deref().unwrap_or("scan").to_lowercase(),
                                s.state.as_deref().unwrap_or("?").to_lowercase(),
                                s.errors.unwrap_or(0)
                            ))
                            .unwrap_or_default(),
                    ));
                    for (disk, status, read, write, checksum) in p.unhealthy_devices() {
                        out.push(format!(
                            "  device {disk}: {status} ({read} read, {write} write, {checksum} checksum errors)"
                        ));
                    }
                }
            }
            TruenasKind::Alerts => {
                let rank = |l: &str| match l {
                    "EMERGENCY" => 0,
                    "ALERT" => 1,
                    "CRITICAL" => 2,
                    "ERROR" => 3,
                    "WARNING" => 4,
                    "NOTICE" => 5,
                    _ => 6,
                };
                let mut alerts: Vec<_> = c
                    .alerts()
                    .await
                    .map_err(|e| ToolError::upstream(e, ROLE))?
                    .into_iter()
                    .filter(|a| !a.dismissed)
                    .collect();
                alerts.sort_by_key(|a| rank(&a.level));
                let now = chrono::Utc::now().timestamp();
                for a in alerts {
                    let text = a
                        .formatted
                        .as_deref()
                        .or(a.text.as_deref())
                        .unwrap_or("")
                        .split_whitespace()
                        .collect::<Vec<_>>()
                        .join(" ");
                    out.push(format!(
                        "{} {}{}: {text}",
                        a.level,
                        a.klass,
                        a.datetime
                            .map(|d| format!(" ({} ago)", human_age(now - d.millis / 1000)))
                            .unwrap_or_default(),
                    ));
                }
                if out.is_empty() {
                    out.push("no active alerts".into());
                }
            }
            TruenasKind::Tasks => tasks(c, &mut out).await?,
            TruenasKind::Disks => {
                let disks = c.disks().await.map_err(|e| ToolError::upstream(e, ROLE))?;
                // Both are optional: VMs and some controllers report neither.
                let temps = c.temperatures().await.unwrap_or_default();
                let smart = c.smart_results().await.unwrap_or_default();
                for d in disks {
                    let temp = temps.get(&d.name).copied().flatten();
                    let last = smart
                        .iter()
                        .find(|s| s.disk == d.name)
                        .and_then(|s| s.tests.first());
                    out.push(format!(
                        "{} {} {} {}{} temperature={} last SMART test={}",
                        d.name,
                        d.kind.as_deref().unwrap_or("?"),
                        d.model.as_deref().unwrap_or("?"),
                        human_bytes(d.size.unwrap_or(0)),
                        d.pool
                            .as_deref()
                            .map(|p| format!(" pool={p}"))
                            .unwrap_or_default(),
                        temp.map(|t| format!("{t:.0}°C")).unwrap_or("n/a".into()),
                        last.map(|t| format!(
                            "{} {}{}",
                            t.description,
                            t.status,
                            t.status_verbose
                                .as_deref()
                                .filter(|v| !v.is_empty())
                                .map(|v| format!(" ({v})"))
                                .unwrap_or_default()
                        ))
                        .unwrap_or("n/a".into()),
                    ));
                }
            }
        }
        if out.is_empty() {
            out.push("nothing found".into());
        }
        Ok(out.join("\n"))
    }
}

/// The scheduled data-protection tasks, one line each, with their last run.
async fn tasks(c: &TruenasClient, out: &mut Vec<String>) -> Result<(), ToolError> {
    use crate::integrations::UpstreamError;
    use crate::integrations::truenas::api_time;
    use crate::integrations::truenas_tasks::TaskKind;
    let now = chrono::Utc::now();
    let ago = |t: Option<chrono::DateTime<chrono::Utc>>| {
        t.map(|t| format!(" {} ago", human_age((now - t).num_seconds())))
            .unwrap_or_default()
    };
    let one_line = |e: &str| e.split_whitespace().collect::<Vec<_>>().join(" ");
    for kind in TaskKind::ALL {
        let tasks = match c.tasks(kind).await {
            Ok(t) => t,
            Err(UpstreamError::Status {
                status: 404 | 405, ..
            }) => continue,
            Err(e) => return Err(ToolError::upstream(e, ROLE)),
        };
        for t in tasks {
            let schedule = t
                .schedule
                .as_ref()
                .map(|s| s.cron())
                .unwrap_or_else(|| "after its snapshot tasks".into());
            let mut line = format!(
                "{} {} {:?} schedule={}{}",
                kind.words(),
                t.id_text(),
                t.label(kind),
                schedule,
                if t.enabled { "" } else { " disabled" }
            );
            match &t.job {
                Some(j) => {
                    let state = j.state.as_deref().unwrap_or("?");
                    line.push_str(&format!(
                        " last run {state}{}",
                        ago(j.finished().or(j.started()))
                    ));
                    if let Some(e) = j.error.as_deref().filter(|e| !e.trim().is_empty()) {
                        line.push_str(&format!(": {}", one_line(e)));
                    }
                }
                None if t.state.is_none() => line.push_str(" no run since the NAS started"),
                None => {}
            }
            if let Some(st) = &t.state {
                let at = st.datetime.as_ref().and_then(api_time);
                line.push_str(&format!(
                    " state {}{}",
                    st.state.as_deref().unwrap_or("?"),
                    ago(at)
                ));
                if let Some(e) = st.error.as_deref().filter(|e| !e.trim().is_empty()) {
                    line.push_str(&format!(": {}", one_line(e)));
                }
                if let Some(s) = st.last_snapshot.as_deref().filter(|s| !s.is_empty()) {
                    line.push_str(&format!(" last snapshot {s}"));
                }
            }
            out.push(line);
        }
    }
    if out.is_empty() {
        out.push("no cloud sync, replication or rsync tasks".into());
    }
    Ok(())
}
