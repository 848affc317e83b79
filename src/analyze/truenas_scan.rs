//! What `truenas_pools` tells of a pool that is not healthy or is being scanned: how far
//! its scrub or resilver is (percent, bytes issued of those to go through, the average
//! rate since it began, the time ZFS estimates is left), and its member disks with their
//! models (`GET /disk` by name; a missing disk's from the topology), saying which disks
//! are of another model than the rest (a drive unlike its peers, an SMR among CMR ones,
//! resilvers at its own pace: no list of models is kept, the models are only compared)
//! and which disk replaces which.

use chrono::{DateTime, Utc};

use super::{Quantity, human_seconds};
use crate::integrations::truenas::{TruenasDisk, TruenasPool, TruenasScan};

/// The scan of a pool, as the fact tells it.
pub struct Progress {
    /// `resilver` or `scrub`.
    pub function: String,
    /// Percent done.
    pub percent: Option<f64>,
    /// Seconds left, ZFS's estimate else the bytes left at the average rate.
    pub eta: Option<f64>,
    pub started: Option<DateTime<Utc>>,
    /// "resilver 42.5 % done, 1.2 TiB of 2.7 TiB issued, 52.1 MiB/s on average since it
    /// began".
    pub text: String,
}

/// The progress of `scan` at `now` when it is running.
pub fn progress(scan: &TruenasScan, now: DateTime<Utc>) -> Option<Progress> {
    if !scan.running() {
        return None;
    }
    let function = scan.function.as_deref().unwrap_or("scan").to_lowercase();
    let finite = |v: Option<f64>| v.filter(|v| v.is_finite() && *v >= 0.0);
    let total = finite(scan.bytes_to_process).filter(|t| *t > 0.0);
    let issued = finite(scan.bytes_issued).or(finite(scan.bytes_processed));
    let percent = finite(scan.percentage)
        .or_else(|| Some(100.0 * issued? / total?))
        .filter(|p| *p <= 100.0);
    let started = scan.started().filter(|t| *t <= now);
    let elapsed = started
        .map(|t| (now - t).num_seconds())
        .filter(|s| *s > 0)
        .map(|s| s as f64);
    // Bytes per second over the whole scan so far; a paused scan has no rate.
    let rate = match (issued, elapsed, scan.paused()) {
        (Some(i), Some(e), false) if i > 0.0 => Some(i / e).filter(|r| r.is_finite()),
        _ => None,
    };
    let eta = finite(scan.total_secs_left).or_else(|| {
        let left = total? - issued?;
        Some(left / rate?).filter(|s| left >= 0.0 && s.is_finite())
    });
    let mut text = match (percent, scan.paused()) {
        (Some(p), true) => format!("{function} paused at {}", Quantity::percent(p)),
        (None, true) => format!("{function} paused"),
        (Some(p), false) => format!("{function} {} done", Quantity::percent(p)),
        (None, false) => format!("{function} running"),
    };
    if let (Some(i), Some(t)) = (issued, total) {
        text.push_str(&format!(
            ", {} of {} issued",
            Quantity::bytes(i),
            Quantity::bytes(t)
        ));
    }
    if let Some(r) = rate {
        text.push_str(&format!(
            ", {}/s on average since it began",
            Quantity::bytes(r)
        ));
    }
    if let Some(s) = eta.filter(|_| !scan.paused()) {
        text.push_str(&format!(", about {} left", human_seconds(s)));
    }
    Some(Progress {
        function,
        percent,
        eta: eta.filter(|_| !scan.paused()),
        started,
        text,
    })
}

/// Most members named (a wide pool lists its first ones and how many more).
const MAX_MEMBERS: usize = 12;

/// "members sda, sdb, sdc (WDC WD40EFRX-68N32N0), sdd (WDC WD40EFAX-68JH4N0); sdd is
/// another model than the other 3; sdd replaces sdb": the pool's data disks with their
/// models, or `None` when the topology lists none.
pub fn members(pool: &TruenasPool, disks: &[TruenasDisk]) -> Option<String> {
    let members: Vec<_> = pool
        .members()
        .into_iter()
        .filter(|m| m.group == "data")
        .collect();
    if members.is_empty() {
        return None;
    }
    let model_of = |m: &crate::integrations::truenas::TruenasMember| {
        disks
            .iter()
            .find(|d| d.name == m.disk)
            .and_then(|d| d.model.clone())
            .or_else(|| m.model.clone())
            .map(|s| s.trim().to_string())
            .filter(|s| !s.is_empty())
    };
    // Disks by model, models in the order first met (unknown ones last).
    let mut groups: Vec<(Option<String>, Vec<String>)> = Vec::new();
    for m in members.iter().take(MAX_MEMBERS) {
        let model = model_of(m);
        match groups.iter_mut().find(|(g, _)| *g == model) {
            Some((_, names)) => names.push(m.disk.clone()),
            None => groups.push((model, vec![m.disk.clone()])),
        }
    }
    groups.sort_by_key(|(model, _)| model.is_none());
    let mut parts: Vec<String> = groups
        .iter()
        .map(|(model, names)| match model {
            Some(m) => format!("{} ({m})", names.join(", ")),
            None => names.join(", "),
        })
        .collect();
    if members.len() > MAX_MEMBERS {
        parts.push(format!("{} more", members.len() - MAX_MEMBERS));
    }
    let mut text = format!("members {}", parts.join(", "));
    if let Some(odd) = differs(&groups) {
        text.push_str(&format!("; {odd}"));
    }
    for m in &members {
        if let Some(old) = &m.replacing {
            text.push_str(&format!("; {} replaces {old}", m.disk));
        }
    }
    Some(text)
}

/// Which disks are of another model than the rest, when the models differ: those not of
/// the model most of them share ("sdd is another model than the other 3"), or, when no
/// model has most of them, how many models there are.
fn differs(groups: &[(Option<String>, Vec<String>)]) -> Option<String> {
    let known: Vec<&(Option<String>, Vec<String>)> =
        groups.iter().filter(|(m, _)| m.is_some()).collect();
    if known.len() < 2 {
        return None;
    }
    let disks: usize = known.iter().map(|(_, n)| n.len()).sum();
    let (_, most) = known.iter().max_by_key(|(_, n)| n.len())?;
    let ties = known.iter().filter(|(_, n)| n.len() == most.len()).count();
    if ties > 1 {
        return Some(format!("{} models among these {disks} disks", known.len()));
    }
    let others: Vec<&str> = known
        .iter()
        .filter(|(_, n)| n.len() < most.len())
        .flat_map(|(_, n)| n.iter().map(String::as_str))
        .collect();
    let verb = match others.len() {
        1 => "is another model",
        _ => "are other models",
    };
    Some(format!(
        "{} {verb} than the other {}",
        others.join(", "),
        most.len()
    ))
}

#[cfg(test)]
mod tests {
    use chrono::TimeDelta;
    use serde_json::json;

    use super::*;

    fn disk(name: &str, model: &str) -> TruenasDisk {
        serde_json::from_value(json!({"name": name, "model": model, "type": "HDD"})).unwrap()
    }

    fn pool(children: serde_json::Value) -> TruenasPool {
        serde_json::from_value(json!({"name": "tank", "status": "ONLINE",
            "topology": {"data": [{"type": "RAIDZ1", "status": "ONLINE", "children": children}],
                "cache": [{"type": "DISK", "disk": "nvme0n1", "status": "ONLINE"}]}}))
        .unwrap()
    }

    fn member(name: &str) -> serde_json::Value {
        json!({"type": "DISK", "disk": name, "status": "ONLINE", "children": []})
    }

    #[test]
    fn the_disk_of_another_model_than_the_rest_is_named() {
        let p = pool(json!([
            member("sda"),
            member("sdb"),
            member("sdc"),
            member("sdd")
        ]));
        let cmr = "WDC WD40EFRX-68N32N0";
        let mut disks = vec![
            disk("sda", cmr),
            disk("sdb", cmr),
            disk("sdc", "WDC WD40EFAX-68JH4N0"),
            disk("sdd", cmr),
            disk("nvme0n1", "Samsung SSD 970"),
        ];
        assert_eq!(
            members(&p, &disks).unwrap(),
            "members sda, sdb, sdd (WDC WD40EFRX-68N32N0), sdc (WDC WD40EFAX-68JH4N0); sdc is another model than the other 3"
        );
        disks[2] = disk("sdc", cmr);
        assert_eq!(
            members(&p, &disks).unwrap(),
            "members sda, sdb, sdc, sdd (WDC WD40EFRX-68N32N0)"
        );
        disks[0] = disk("sda", "A");
        disks[1] = disk("sdb", "A");
        assert_eq!(
            members(&p, &disks).unwrap(),
            "members sda, sdb (A), sdc, sdd (WDC WD40EFRX-68N32N0); 2 models among these 4 disks"
        );
        // Without `GET /disk` the members are still named.
        assert_eq!(members(&p, &[]).unwrap(), "members sda, sdb, sdc, sdd");
    }

    #[test]
    fn a_running_resilver_tells_how_far_how_fast_and_how_long_it_has_left() {
        let now = Utc::now();
        let started = (now - TimeDelta::hours(5)).timestamp_millis();
        let scan = |extra: serde_json::Value| -> TruenasScan {
            let mut v = json!({"function": "RESILVER", "state": "SCANNING",
                "start_time": {"$date": started}, "end_time": null, "pause": null, "errors": 0,
                "bytes_to_process": 4.0e12, "bytes_processed": 1.0e12, "bytes_issued": 0.9e12});
            for (k, x) in extra.as_object().unwrap() {
                v[k] = x.clone();
            }
            serde_json::from_value(v).unwrap()
        };
        let p = progress(
            &scan(json!({"percentage": 22.5, "total_secs_left": 62000})),
            now,
        )
        .unwrap();
        assert_eq!(p.function, "resilver");
        assert_eq!(p.percent, Some(22.5));
        assert_eq!(p.eta, Some(62000.0));
        assert_eq!(
            p.text,
            "resilver 22.5 % done, 838.2 GiB of 3.6 TiB issued, 47.7 MiB/s on average since it began, about 17.2 h left"
        );
        // Without ZFS's percent and estimate: from the bytes and the average rate.
        let p = progress(&scan(json!({})), now).unwrap();
        assert_eq!(p.percent, Some(22.5));
        assert!((p.eta.unwrap() - 62000.0).abs() < 10.0, "{:?}", p.eta);
        let paused = progress(
            &scan(json!({"percentage": 22.5, "pause": {"$date": started}})),
            now,
        )
        .unwrap();
        assert!(
            paused.text.starts_with("resilver paused at 22.5 %"),
            "{}",
            paused.text
        );
        assert_eq!(paused.eta, None);
        assert!(progress(&scan(json!({"state": "FINISHED"})), now).is_none());
    }
}
