//! `smart_attributes`: disks whose SMART error counters rose in the window, from
//! smartctl_exporter (`smartctl_device_attribute{device, attribute_id, attribute_name,
//! attribute_value_type="raw"}`): one fact per disk with each counter that rose (its name,
//! id, from → to, since when) and what the counter means by its ID in the ATA SMART
//! attribute table (5 reallocated sectors, 187 reported uncorrectable, 188 command
//! timeouts, 196 reallocation events, 197 current pending, 198 offline uncorrectable: the
//! media or the drive; 199 UDMA CRC errors: the path between the drive and its controller).
//! Counters that only count use (9 power-on hours, 194 temperature) are never read. When
//! CRC errors rise while the media counters the disk reports stay flat, the fact says the
//! media is fine and the cable, connector or port is suspect; the SATA link's current speed
//! below its maximum (`smartctl_device_interface_speed{speed_type}`), a failed overall
//! health (`smartctl_device_smart_status` 0) and the model and serial (`smartctl_device`)
//! are added when the exporter has them.
//!
//! smartmontools' textfile script (`smartmon_<attribute>_raw_value`) names one metric per
//! attribute, not this shape: it is not read.

use std::collections::{BTreeMap, HashMap};

use async_trait::async_trait;

use super::link_speed::bits;
use super::{Prom, host, label, pick, selector};
use crate::analyze::{AnalyzeError, Analyzer, Entity, Fact, FactClass, Scope, Severity, Source};
use crate::integrations::prometheus::Labels;

const METRIC: &str = "smartctl_device_attribute";

/// The error counters read, by ATA attribute ID: what one counts, and whether its rise
/// speaks of the media (or the drive itself) rather than the path to it.
const ERRORS: [(&str, &str, bool); 8] = [
    ("5", "bad sectors remapped to spares (the media)", true),
    ("184", "data corrupted inside the drive", true),
    ("187", "reads its ECC could not recover (the media)", true),
    (
        "188",
        "commands aborted waiting for the drive (power, cable or drive)",
        false,
    ),
    ("196", "sectors remapped to spares (the media)", true),
    ("197", "unreadable sectors awaiting remap (the media)", true),
    (
        "198",
        "sectors the offline scan could not read (the media)",
        true,
    ),
    (
        "199",
        "transfers corrupted between drive and controller (cable, connector, port, not the media)",
        false,
    ),
];
/// The media counters whose flat run beside rising CRC errors clears the media.
const MEDIA: [&str; 3] = ["5", "197", "198"];
const CRC: &str = "199";
/// Most disks reported per run.
const MAX_FACTS: usize = 10;

pub struct SmartAttributes(pub Prom);

/// One error counter of one disk.
struct Counter {
    labels: Labels,
    id: String,
    name: String,
    now: f64,
    min: f64,
}

impl Counter {
    fn rose(&self) -> bool {
        self.now > self.min
    }
}

#[async_trait]
impl Analyzer for SmartAttributes {
    fn name(&self) -> &'static str {
        "smart_attributes"
    }

    async fn run(&self, scope: &Scope) -> Result<Vec<Fact>, AnalyzeError> {
        let names = self.0.metric_names(scope).await?;
        if !names.iter().any(|n| n == METRIC) {
            return Ok(Vec::new());
        }
        let ids: Vec<&str> = ERRORS.iter().map(|(id, _, _)| *id).collect();
        let sel = format!(
            "{{attribute_value_type=\"raw\",attribute_id=~\"{}\"}}",
            ids.join("|")
        );
        let now = self.0.vector(&format!("{METRIC}{sel}")).await?;
        let min: HashMap<Labels, f64> = super::by_identity(
            self.0
                .vector(&format!(
                    "min_over_time({METRIC}{sel}{})",
                    scope.promql_range()
                ))
                .await?,
        );
        let mut disks: BTreeMap<(String, String), Vec<Counter>> = BTreeMap::new();
        for s in now.into_iter().filter(|s| s.value.is_finite()) {
            let labels = super::identity(&s.metric);
            let min = min.get(&labels).copied().unwrap_or(s.value);
            disks.entry(disk_key(&labels)).or_default().push(Counter {
                id: label(&labels, "attribute_id"),
                name: label(&labels, "attribute_name"),
                labels,
                now: s.value,
                min,
            });
        }
        disks.retain(|_, counters| counters.iter().any(Counter::rose));
        for counters in disks.values_mut() {
            counters.sort_by_key(|c| c.id.parse::<u32>().unwrap_or(u32::MAX));
        }
        if disks.is_empty() {
            return Ok(Vec::new());
        }
        let extra = self.extra().await;
        let left = super::Lookups::default();
        let mut facts = Vec::new();
        for ((instance, device), counters) in disks.into_iter().take(MAX_FACTS) {
            let key = (instance, device);
            facts.push(self.fact(&key, &counters, &extra, scope, &left).await);
        }
        facts.sort_by_key(|f| std::cmp::Reverse(f.severity));
        Ok(facts)
    }
}

/// What the exporter says about each disk besides its attributes (by instance and device).
#[derive(Default)]
struct Extra {
    /// `(current, max)` interface speeds in bits per second.
    speeds: HashMap<(String, String), (Option<f64>, Option<f64>)>,
    health: HashMap<(String, String), f64>,
    model: HashMap<(String, String), (String, String)>,
}

/// A disk's identity: its exporter's instance and its device.
fn disk_key(labels: &Labels) -> (String, String) {
    (label(labels, "instance"), label(labels, "device"))
}

impl SmartAttributes {
    /// The interface speeds, health and models the exporter reports (each optional: an
    /// older exporter lacks some, and a failed read only loses that part).
    async fn extra(&self) -> Extra {
        let mut extra = Extra::default();
        if let Ok(v) = self.0.vector("smartctl_device_interface_speed").await {
            for s in v
                .into_iter()
                .filter(|s| s.value.is_finite() && s.value > 0.0)
            {
                let e = extra.speeds.entry(disk_key(&s.metric)).or_default();
                match s.metric.get("speed_type").map(String::as_str) {
                    Some("current") => e.0 = Some(s.value),
                    Some("max") => e.1 = Some(s.value),
                    _ => {}
                }
            }
        }
        if let Ok(v) = self.0.vector("smartctl_device_smart_status").await {
            for s in v.into_iter().filter(|s| s.value.is_finite()) {
                extra.health.insert(disk_key(&s.metric), s.value);
            }
        }
        if let Ok(v) = self.0.vector("smartctl_device").await {
            for s in v {
                let model = label(&s.metric, "model_name");
                let serial = label(&s.metric, "serial_number");
                extra.model.insert(disk_key(&s.metric), (model, serial));
            }
        }
        extra
    }

    /// The fact of one disk whose `counters` include at least one that rose.
    async fn fact(
        &self,
        key: &(String, String),
        counters: &[Counter],
        extra: &Extra,
        scope: &Scope,
        left: &super::Lookups,
    ) -> Fact {
        let first = &counters[0].labels;
        let disk_sel = selector(pick(first, &["instance", "job", "device"]));
        let rose: Vec<&Counter> = counters.iter().filter(|c| c.rose()).collect();
        let mut since = None;
        let mut told = Vec::new();
        let mut meanings = Vec::new();
        let mut media = false;
        for c in &rose {
            let sel = selector(pick(
                &c.labels,
                &[
                    "instance",
                    "job",
                    "device",
                    "attribute_id",
                    "attribute_value_type",
                ],
            ));
            let began = self
                .0
                .since(left, &format!("{METRIC}{sel}"), scope, |v| v > c.min)
                .await;
            since = match (since, began) {
                (Some(a), Some(b)) => Some(std::cmp::min(a, b)),
                (a, b) => a.or(b),
            };
            let at = began
                .map(|t| format!(" since {}", t.format("%H:%M UTC")))
                .unwrap_or_default();
            told.push(format!(
                "{} ({}) {} → {}{at}",
                c.name,
                c.id,
                count(c.min),
                count(c.now)
            ));
            if let Some((_, meaning, is_media)) = ERRORS.iter().find(|(id, _, _)| *id == c.id) {
                meanings.push(format!("{}: {meaning}", c.id));
                media |= *is_media;
            }
        }
        let mut detail = Vec::new();
        if rose.iter().any(|c| c.id == CRC) && !media {
            let flat: Vec<String> = counters
                .iter()
                .filter(|c| MEDIA.contains(&c.id.as_str()) && !c.rose())
                .map(|c| format!("{} ({}) at {}", c.name, c.id, count(c.now)))
                .collect();
            if flat.is_empty() {
                detail.push(
                    "the disk reports no media counters to clear the media; the path \
                     (cable, connector, port) is the first suspect"
                        .into(),
                );
            } else {
                detail.push(format!(
                    "the media is fine ({} did not move): the path (cable, connector, port, \
                     backplane) is suspect",
                    flat.join(", ")
                ));
            }
        }
        if let Some((Some(cur), Some(max))) = extra.speeds.get(key)
            && cur < max
        {
            detail.push(format!(
                "the SATA link runs at {} of its {}",
                bits(cur / 8.0),
                bits(max / 8.0)
            ));
        }
        let failed = extra.health.get(key).is_some_and(|h| *h == 0.0);
        if failed {
            detail.push("SMART overall health: FAILED".into());
        }
        let mut entity_labels: BTreeMap<String, String> =
            pick(first, &["instance", "job", "device"])
                .into_iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect();
        if let Some((model, serial)) = extra.model.get(key) {
            detail.push(format!("model {model}, serial {serial}"));
            entity_labels.insert("model_name".into(), model.clone());
            entity_labels.insert("serial_number".into(), serial.clone());
        }
        // What each rising counter counts, after the conclusions and the disk's model: the
        // detail is cut at its length limit, and those are what a reader needs.
        detail.extend(meanings);
        let severity = match media || failed {
            true => Severity::Critical,
            false => Severity::Warning,
        };
        Fact::new(
            FactClass::Appliance,
            self.name(),
            Entity::new("disk", key.1.clone())
                .on_host(host(first))
                .with_labels(entity_labels),
            format!("SMART error counters rising: {}", told.join(", ")),
            severity,
            Source::promql(&format!(
                "{METRIC}{}",
                disk_sel.replacen('{', "{attribute_value_type=\"raw\",", 1)
            )),
        )
        .since(since)
        .detail(detail.join("; "))
    }
}

/// A counter's value as a whole number.
fn count(v: f64) -> String {
    format!("{}", v.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_error_counter_has_one_meaning_and_use_counters_are_not_read() {
        let ids: Vec<&str> = ERRORS.iter().map(|(id, _, _)| *id).collect();
        for id in ["5", "187", "188", "197", "198", "199"] {
            assert!(ids.contains(&id), "{id}");
        }
        for id in ["9", "194", "12", "241"] {
            assert!(!ids.contains(&id), "{id}");
        }
        let crc = ERRORS.iter().find(|(id, _, _)| *id == CRC).unwrap();
        assert!(!crc.2 && crc.1.contains("not the media"));
        assert!(
            MEDIA
                .iter()
                .all(|m| ERRORS.iter().any(|(id, _, media)| id == m && *media))
        );
    }

    #[test]
    fn counters_read_as_whole_numbers() {
        assert_eq!(count(142.0), "142");
        assert_eq!(count(0.0), "0");
    }
}
