//! TrueNAS scheduled data-protection tasks (REST API v2.0): cloud sync tasks (`GET
//! /cloudsync`), rsync tasks (`GET /rsynctask`) and ZFS replication tasks (`GET
//! /replication`), each with its cron schedule and the middleware job of its last run
//! (`job`: `state` SUCCESS, FAILED, ABORTED, RUNNING or WAITING, `error`, `time_started`,
//! `time_finished` as `{"$date": ms}`); a replication task also has zettarepl's `state`
//! (`FINISHED`, `ERROR`, `RUNNING`, … with `datetime`, `error`, `last_snapshot`). Jobs
//! live in the middleware's memory: after a reboot a task has no job until it runs. The
//! middleware's jobs of one method (`GET /core/get_jobs`) hold the last successful run
//! when the last run failed.

use chrono::{DateTime, Utc};
use serde::Deserialize;
use serde_json::Value;

use super::UpstreamError;
use super::truenas::{TruenasClient, api_time};

/// A task's cron schedule (`{"minute": "0", "hour": "3", "dom": "*", "month": "*",
/// "dow": "*"}`, replication tasks also `begin` and `end`, "HH:MM").
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TruenasSchedule {
    #[serde(default)]
    pub minute: Option<Value>,
    #[serde(default)]
    pub hour: Option<Value>,
    #[serde(default)]
    pub dom: Option<Value>,
    #[serde(default)]
    pub month: Option<Value>,
    #[serde(default)]
    pub dow: Option<Value>,
    #[serde(default)]
    pub begin: Option<String>,
    #[serde(default)]
    pub end: Option<String>,
}

fn cron_field(v: Option<&Value>) -> String {
    match v {
        Some(Value::String(s)) if !s.trim().is_empty() => s.trim().to_string(),
        Some(Value::Number(n)) => n.to_string(),
        _ => "*".to_string(),
    }
}

impl TruenasSchedule {
    /// As a crontab line: `0 3 * * *`.
    pub fn cron(&self) -> String {
        [&self.minute, &self.hour, &self.dom, &self.month, &self.dow]
            .map(|f| cron_field(f.as_ref()))
            .join(" ")
    }

    /// The hour field.
    pub fn hour_field(&self) -> String {
        cron_field(self.hour.as_ref())
    }

    /// The weekday field.
    pub fn dow_field(&self) -> String {
        cron_field(self.dow.as_ref())
    }

    /// Whether a `begin`–`end` window narrows the day (not 00:00–23:59).
    pub fn windowed(&self) -> bool {
        let b = self.begin.as_deref().map(str::trim).unwrap_or("00:00");
        let e = self.end.as_deref().map(str::trim).unwrap_or("23:59");
        !(b == "00:00" && (e == "23:59" || e == "00:00"))
    }
}

/// A middleware job: one run of a task.
#[derive(Clone, Debug, Default, Deserialize)]
pub struct TruenasJob {
    #[serde(default)]
    pub id: Option<Value>,
    #[serde(default)]
    pub method: Option<String>,
    #[serde(default)]
    pub arguments: Option<Value>,
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub time_started: Option<Value>,
    #[serde(default)]
    pub time_finished: Option<Value>,
}

impl TruenasJob {
    pub fn started(&self) -> Option<DateTime<Utc>> {
        api_time(self.time_started.as_ref()?)
    }

    pub fn finished(&self) -> Option<DateTime<Utc>> {
        api_time(self.time_finished.as_ref()?)
    }

    /// Whether it is the run of task `id` (its first argument).
    pub fn runs_task(&self, id: &Value) -> bool {
        let first = match &self.arguments {
            Some(Value::Array(a)) => a.first(),
            _ => None,
        };
        // `4` and `"4"` are the same task.
        let text = |v: &Value| match v {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        };
        first.is_some_and(|f| text(f) == text(id))
    }
}

/// `GET /cloudsync`, `GET /rsynctask` and `GET /replication` item, the parts read here.
#[derive(Clone, Debug, Deserialize)]
pub struct TruenasTask {
    pub id: Value,
    /// A cloud sync task's description.
    #[serde(default)]
    pub description: Option<String>,
    /// An rsync task's description.
    #[serde(default)]
    pub desc: Option<String>,
    /// A replication task's name.
    #[serde(default)]
    pub name: Option<String>,
    /// The local path (cloud sync, rsync).
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub remotehost: Option<String>,
    #[serde(default)]
    pub direction: Option<String>,
    #[serde(default)]
    pub source_datasets: Option<Vec<String>>,
    #[serde(default)]
    pub target_dataset: Option<String>,
    #[serde(default = "yes")]
    pub enabled: bool,
    #[serde(default)]
    pub schedule: Option<TruenasSchedule>,
    /// A replication task run by periodic snapshot tasks: theirs, with their schedules.
    #[serde(default)]
    pub periodic_snapshot_tasks: Option<Vec<PeriodicSnapshotTask>>,
    #[serde(default)]
    pub job: Option<TruenasJob>,
    /// A replication task's zettarepl state.
    #[serde(default)]
    pub state: Option<ReplicationState>,
}

fn yes() -> bool {
    true
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct PeriodicSnapshotTask {
    #[serde(default)]
    pub schedule: Option<TruenasSchedule>,
}

#[derive(Clone, Debug, Default, Deserialize)]
pub struct ReplicationState {
    #[serde(default)]
    pub state: Option<String>,
    #[serde(default)]
    pub datetime: Option<Value>,
    #[serde(default)]
    pub error: Option<String>,
    #[serde(default)]
    pub last_snapshot: Option<String>,
}

/// The kinds of scheduled tasks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TaskKind {
    CloudSync,
    Rsync,
    Replication,
}

impl TaskKind {
    pub const ALL: [TaskKind; 3] = [Self::CloudSync, Self::Replication, Self::Rsync];

    /// The API path listing them.
    pub fn path(self) -> &'static str {
        match self {
            Self::CloudSync => "cloudsync",
            Self::Rsync => "rsynctask",
            Self::Replication => "replication",
        }
    }

    /// The middleware method of one run.
    pub fn method(self) -> &'static str {
        match self {
            Self::CloudSync => "cloudsync.sync",
            Self::Rsync => "rsynctask.run",
            Self::Replication => "replication.run",
        }
    }

    /// "cloud sync", "rsync", "replication".
    pub fn words(self) -> &'static str {
        match self {
            Self::CloudSync => "cloud sync",
            Self::Rsync => "rsync",
            Self::Replication => "replication",
        }
    }
}

impl TruenasTask {
    /// Its id as text.
    pub fn id_text(&self) -> String {
        match &self.id {
            Value::String(s) => s.clone(),
            other => other.to_string(),
        }
    }

    /// Its name: description, name, else path or datasets, else the kind and id.
    pub fn label(&self, kind: TaskKind) -> String {
        let named = [&self.description, &self.desc, &self.name]
            .into_iter()
            .flatten()
            .map(|s| s.trim())
            .find(|s| !s.is_empty());
        let place = self
            .path
            .as_deref()
            .map(str::trim)
            .filter(|p| !p.is_empty());
        let datasets = self
            .source_datasets
            .as_ref()
            .filter(|d| !d.is_empty())
            .map(|d| d.join(","));
        named
            .map(str::to_string)
            .or(place.map(str::to_string))
            .or(datasets)
            .unwrap_or_else(|| format!("{} {}", kind.words(), self.id_text()))
    }
}

impl TruenasClient {
    /// The scheduled tasks of `kind`.
    pub async fn tasks(&self, kind: TaskKind) -> Result<Vec<TruenasTask>, UpstreamError> {
        self.upstream().get_json(kind.path(), &[]).await
    }

    /// The middleware's finished successful runs of `kind`'s tasks it still holds.
    pub async fn successful_runs(&self, kind: TaskKind) -> Result<Vec<TruenasJob>, UpstreamError> {
        let q = [
            ("method", kind.method().to_string()),
            ("state", "SUCCESS".to_string()),
        ];
        let jobs: Vec<TruenasJob> = self.upstream().get_json("core/get_jobs", &q).await?;
        // The filter is the server's to apply; a server that ignores it is filtered here.
        Ok(jobs
            .into_iter()
            .filter(|j| j.method.as_deref() == Some(kind.method()))
            .filter(|j| j.state.as_deref() == Some("SUCCESS"))
            .collect())
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_schedule_reads_as_a_crontab_line_and_a_job_knows_its_task() {
        let s: TruenasSchedule = serde_json::from_value(
            json!({"minute": "0", "hour": 3, "dom": "*", "month": "*", "dow": "1-5"}),
        )
        .unwrap();
        assert_eq!(s.cron(), "0 3 * * 1-5");
        assert!(!s.windowed());
        let w: TruenasSchedule =
            serde_json::from_value(json!({"minute": "*/15", "begin": "08:00", "end": "18:00"}))
                .unwrap();
        assert!(w.windowed());
        let job: TruenasJob = serde_json::from_value(json!({"id": 311, "method": "cloudsync.sync",
            "arguments": [4], "state": "SUCCESS", "time_finished": {"$date": 1795780800000i64}}))
        .unwrap();
        assert!(job.runs_task(&json!(4)));
        assert!(!job.runs_task(&json!(5)));
        assert_eq!(job.finished().unwrap().timestamp(), 1795780800);
        let task: TruenasTask =
            serde_json::from_value(json!({"id": 4, "path": "/mnt/tank/photos"})).unwrap();
        assert!(task.enabled);
        assert_eq!(task.label(TaskKind::CloudSync), "/mnt/tank/photos");
        let bare: TruenasTask = serde_json::from_value(json!({"id": 9, "desc": " "})).unwrap();
        assert_eq!(bare.label(TaskKind::Rsync), "rsync 9");
    }
}
