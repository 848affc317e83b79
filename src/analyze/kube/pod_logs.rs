//! What a failed container said before it ended: for the pods `kube_pods` reports whose
//! container exited with an error (a pod in phase `Failed`, a crash loop, a restart after
//! a failing exit), the tail of that run's log, and of it the lines that look worst
//! ([`crate::analyze::logs::signal`]: level fields, syslog priorities, failure words), added
//! to the pod's fact. A Job's "password authentication failed" or a crash's panic is in
//! the log, not in the pod's status.
//!
//! Bounded: a few pods (those the trigger is about first, one per workload), a short
//! tail each, read at once under a time limit; a log that cannot be read leaves its fact
//! as it was.

use std::collections::HashSet;
use std::time::Duration;

use k8s_openapi::api::core::v1::{ContainerStatus, Pod};

use crate::analyze::logs::{Signal, fold_log};
use crate::analyze::{Fact, Scope, line_pattern, readable_line};
use crate::integrations::kubernetes::KubeClient;
use crate::text::truncate;

/// Most pods whose log is read per sweep.
const MAX_READS: usize = 3;
/// Lines read from the end of a log.
const TAIL: i64 = 40;
/// Lines quoted per pod, and characters per line.
const QUOTED: usize = 2;
const LINE_CHARS: usize = 150;
/// Lines of the next grade quoted beside a worst grade of one pattern, and their
/// characters.
const BESIDE: usize = 2;
const BESIDE_CHARS: usize = 100;
/// Time for all the reads.
const READS_TIME_LIMIT: Duration = Duration::from_millis(2500);
/// Characters of the fact's own detail kept in front of the log lines.
const DETAIL_CHARS: usize = 90;

/// Which run of a container to read: the one that ended (`previous` when the container
/// runs or waits again since).
struct LogRead {
    fact: usize,
    namespace: String,
    pod: String,
    container: String,
    previous: bool,
}

/// Adds to `facts` about pods in `pods` the worst lines of their failed run's log.
pub async fn attach(client: &KubeClient, pods: &[Pod], facts: &mut [Fact], scope: &Scope) {
    let reads = choose(pods, facts, scope);
    let fetches = reads.iter().map(|r| {
        client.logs(
            &r.namespace,
            &r.pod,
            Some(r.container.clone()),
            r.previous,
            TAIL,
        )
    });
    let Ok(logs) = tokio::time::timeout(READS_TIME_LIMIT, futures::future::join_all(fetches)).await
    else {
        return;
    };
    for (read, log) in reads.iter().zip(logs) {
        let Ok(text) = log else { continue };
        let lines = worst_lines(&text);
        if lines.is_empty() {
            continue;
        }
        let fact = &mut facts[read.fact];
        let quoted = lines.join(" | ");
        let detail = match fact.detail.as_deref() {
            Some(d) => format!("{}; log: {quoted}", truncate(d, DETAIL_CHARS)),
            None => format!("log: {quoted}"),
        };
        *fact = fact.clone().detail(detail);
    }
}

/// The logs worth reading: facts about a pod with a container whose run ended in an
/// error, those the trigger is about first, one per workload, at most [`MAX_READS`].
fn choose(pods: &[Pod], facts: &[Fact], scope: &Scope) -> Vec<LogRead> {
    let mut order: Vec<usize> = (0..facts.len())
        .filter(|i| facts[*i].entity.kind == "pod")
        .collect();
    order.sort_by_key(|i| !scope.is_about(&facts[*i].entity));
    let mut workloads = HashSet::new();
    let mut reads = Vec::new();
    for i in order {
        let labels = &facts[i].entity.labels;
        let (Some(ns), Some(name)) = (labels.get("namespace"), labels.get("pod")) else {
            continue;
        };
        let Some(pod) = pods.iter().find(|p| {
            p.metadata.namespace.as_deref() == Some(ns.as_str())
                && p.metadata.name.as_deref() == Some(name.as_str())
        }) else {
            continue;
        };
        let Some((container, previous)) = failed_run(pod, labels.get("container")) else {
            continue;
        };
        let workload = labels.get("workload").unwrap_or(name).clone();
        if !workloads.insert((ns.clone(), workload)) {
            continue;
        }
        reads.push(LogRead {
            fact: i,
            namespace: ns.clone(),
            pod: name.clone(),
            container,
            previous,
        });
        if reads.len() == MAX_READS {
            break;
        }
    }
    reads
}

/// The container of `pod` (`named`, else the first that qualifies) whose last run ended
/// with a non-zero exit, and whether that run is the previous one.
fn failed_run(pod: &Pod, named: Option<&String>) -> Option<(String, bool)> {
    let status = pod.status.as_ref()?;
    let all = status
        .init_container_statuses
        .iter()
        .flatten()
        .chain(status.container_statuses.iter().flatten());
    let candidates: Vec<&ContainerStatus> = all
        .filter(|cs| named.is_none_or(|n| &cs.name == n))
        .collect();
    candidates.into_iter().find_map(|cs| {
        let ended = |t: Option<&k8s_openapi::api::core::v1::ContainerStateTerminated>| {
            t.is_some_and(|t| t.exit_code != 0)
        };
        let current = cs.state.as_ref().and_then(|s| s.terminated.as_ref());
        let last = cs.last_state.as_ref().and_then(|s| s.terminated.as_ref());
        if ended(current) {
            Some((cs.name.clone(), false))
        } else if ended(last) {
            Some((cs.name.clone(), true))
        } else {
            None
        }
    })
}

/// The lines of `log` that look bad, as [`worst_lines`] quotes them (none when no line
/// looks bad: a healthy log says nothing).
pub(super) fn bad_lines(log: &str) -> Vec<String> {
    let bad = fold_log(log).iter().any(|(_, s)| *s > Signal::None);
    if bad { worst_lines(log) } else { Vec::new() }
}

/// The lines of `log` to quote: the last [`QUOTED`] distinct lines of the worst signal
/// present (the last lines when none looks bad), oldest first, made readable and cut. A
/// stack trace is one line, its exception ([`fold_log`]). When the worst lines are all
/// one pattern, that pattern's last line and up to [`BESIDE`] patterns of the next grade
/// present nearest before it (what the container said leading up to its error).
fn worst_lines(log: &str) -> Vec<String> {
    let lines: Vec<(String, Signal)> = fold_log(log)
        .into_iter()
        .filter(|(l, _)| !l.trim().is_empty())
        .collect();
    let worst = lines.iter().map(|(_, s)| *s).max().unwrap_or(Signal::None);
    let worst_patterns: HashSet<String> = lines
        .iter()
        .filter(|(_, s)| *s == worst)
        .map(|(l, _)| line_pattern(l))
        .collect();
    let one_pattern = worst > Signal::None && worst_patterns.len() == 1;
    let quoted = if one_pattern { 1 } else { QUOTED };
    let mut seen = HashSet::new();
    let mut picked: Vec<(usize, String)> = lines
        .iter()
        .enumerate()
        .rev()
        .filter(|(_, (_, s))| *s == worst)
        .map(|(i, (l, _))| (i, truncate(&readable_line(l), LINE_CHARS)))
        .filter(|(_, l)| seen.insert(l.clone()))
        .take(quoted)
        .collect();
    let next = lines.iter().map(|(_, s)| *s).filter(|s| *s < worst).max();
    if let (true, Some(next), Some(&(at, _))) = (one_pattern, next, picked.first()) {
        // Nearest before the worst line: what led up to it (after it, a dying container
        // mostly repeats itself or answers health checks).
        let mut patterns = HashSet::new();
        let beside: Vec<(usize, String)> = (0..at)
            .rev()
            .filter(|i| lines[*i].1 == next)
            .filter(|i| patterns.insert(line_pattern(&lines[*i].0)))
            .take(BESIDE)
            .map(|i| (i, truncate(&readable_line(&lines[i].0), BESIDE_CHARS)))
            .collect();
        picked.extend(beside);
    }
    picked.sort_by_key(|(i, _)| *i);
    picked.into_iter().map(|(_, l)| l).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_quoted_lines_are_the_last_of_the_worst_kind_oldest_first() {
        let log = "starting dump\nconnecting to db:5432\n\
                   pg_dump: error: connection failed: FATAL: password authentication failed for user \"backup\"\n\
                   exiting\n";
        // One error: what the container said before it too.
        assert_eq!(
            worst_lines(log),
            vec![
                "starting dump",
                "connecting to db:5432",
                "pg_dump: error: connection failed: FATAL: password authentication failed for user \"backup\""
            ]
        );
        let log = "level=error msg=\"a\"\nlevel=info msg=\"b\"\nlevel=error msg=\"c\"\nlevel=error msg=\"c\"\nlevel=error msg=\"d\"\n";
        assert_eq!(
            worst_lines(log),
            vec!["level=error msg=\"c\"", "level=error msg=\"d\""]
        );
        // Nothing looks bad: the last lines are what the container said last, and no line
        // is bad.
        assert_eq!(worst_lines("one\ntwo\nthree\n"), vec!["two", "three"]);
        assert!(bad_lines("one\ntwo\nthree\n").is_empty());
        assert_eq!(bad_lines(log).len(), 2);
        assert!(worst_lines("\n\n").is_empty());
    }

    #[test]
    fn one_error_pattern_is_quoted_once_with_the_warnings_before_it() {
        let log = "level=info msg=\"loading config\" file=/etc/app/config.yaml\n\
                   level=warn msg=\"config key deprecated\" key=storage.path\n\
                   level=info msg=\"connecting\" addr=db:5432\n\
                   level=warn msg=\"TLS verification disabled for database connection\"\n\
                   level=error msg=\"migration failed\" version=41 err=\"pq: relation users already exists\"\n\
                   level=info msg=\"retrying\" in=5s\n\
                   level=error msg=\"migration failed\" version=42 err=\"pq: relation users already exists\"\n";
        assert_eq!(
            bad_lines(log),
            vec![
                "level=warn msg=\"config key deprecated\" key=storage.path",
                "level=warn msg=\"TLS verification disabled for database connection\"",
                "level=error msg=\"migration failed\" version=42 err=\"pq: relation users already exists\"",
            ]
        );
    }

    #[test]
    fn a_stack_trace_in_a_containers_log_is_quoted_by_its_exception() {
        // gunicorn's worker logging an unhandled exception in a Django view.
        let log = "[2026-11-27 10:00:00 +0000] [7] [INFO] Booting worker with pid: 7\n\
                   [2026-11-27 10:00:05 +0000] [7] [ERROR] Error handling request /api/orders\n\
                   Traceback (most recent call last):\n  \
                   File \"/usr/lib/python3/site-packages/gunicorn/workers/sync.py\", line 135, in handle\n    \
                   self.handle_request(listener, req, client, addr)\n  \
                   File \"/srv/shop/views.py\", line 18, in orders\n    \
                   return db.fetch(q)\n\
                   redis.exceptions.ConnectionError: Error 111 connecting to cache:6379. Connection refused.\n";
        assert_eq!(
            bad_lines(log),
            vec![
                "[2026-11-27 10:00:00 +0000] [7] [INFO] Booting worker with pid: 7",
                "redis.exceptions.ConnectionError: Error 111 connecting to cache:6379. Connection refused."
            ]
        );
    }

    #[test]
    fn a_run_that_failed_is_read_now_or_as_the_previous_run() {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": {"name": "p", "namespace": "n"},
            "status": {"containerStatuses": [
                {"name": "ok", "image": "i", "imageID": "", "ready": true, "restartCount": 0,
                 "state": {"running": {}}},
                {"name": "loop", "image": "i", "imageID": "", "ready": false, "restartCount": 4,
                 "state": {"waiting": {"reason": "CrashLoopBackOff"}},
                 "lastState": {"terminated": {"exitCode": 2, "reason": "Error"}}},
                {"name": "done", "image": "i", "imageID": "", "ready": false, "restartCount": 0,
                 "state": {"terminated": {"exitCode": 1, "reason": "Error"}}}
            ]}
        }))
        .unwrap();
        assert_eq!(failed_run(&pod, None), Some(("loop".into(), true)));
        assert_eq!(
            failed_run(&pod, Some(&"done".to_string())),
            Some(("done".into(), false))
        );
        assert_eq!(failed_run(&pod, Some(&"ok".to_string())), None);
    }
}
