//! Bounds on what one alert may hold, applied as it is parsed: how many labels and
//! annotations, how long their names and values, and how long its URLs and value text.
//! What a daemon keeps per alert (its group's last alert, samples, the log) then follows
//! these bounds, not what a sender puts in a label; `memory_bytes` estimates what a parsed
//! alert takes, for the bounds of the intake's queue and the group cache.

use std::collections::BTreeMap;

use super::Alert;

/// Labels kept per alert (`alertname` always among them).
pub const LABELS_MAX: usize = 64;
/// Characters kept of a label value.
pub const LABEL_VALUE_CHARS: usize = 1_024;
/// Annotations kept per alert.
pub const ANNOTATIONS_MAX: usize = 32;
/// Characters kept of an annotation value (a description or a runbook excerpt).
pub const ANNOTATION_VALUE_CHARS: usize = 4_096;
/// Characters kept of a label or annotation name.
pub const NAME_CHARS: usize = 128;
/// Characters kept of a URL or of the value text.
pub const URL_CHARS: usize = 4_096;

/// Cuts `alert` to the bounds; true when anything was cut. Cut text ends in `…`.
pub fn cap(alert: &mut Alert) -> bool {
    let mut cut = cap_map(&mut alert.labels, LABELS_MAX, LABEL_VALUE_CHARS);
    cut |= cap_map(
        &mut alert.annotations,
        ANNOTATIONS_MAX,
        ANNOTATION_VALUE_CHARS,
    );
    cut |= cap_text(&mut alert.name, LABEL_VALUE_CHARS);
    for text in [
        &mut alert.generator_url,
        &mut alert.dashboard_url,
        &mut alert.panel_url,
        &mut alert.silence_url,
        &mut alert.value,
    ]
    .into_iter()
    .flatten()
    {
        cut |= cap_text(text, URL_CHARS);
    }
    cut
}

/// What one heap string takes: its bytes, rounded up, and the allocator's header.
fn string_bytes(s: &str) -> usize {
    if s.is_empty() {
        0
    } else {
        s.len().next_multiple_of(16) + 16
    }
}

/// A map of strings: its strings, and its B-tree nodes (a leaf holds up to 11 pairs of
/// `String`s in some 560 bytes; maps built entry by entry run about 8 a node).
fn map_bytes(m: &BTreeMap<String, String>) -> usize {
    const NODE: usize = 560;
    m.len().div_ceil(8) * NODE
        + m.iter()
            .map(|(k, v)| string_bytes(k) + string_bytes(v))
            .sum::<usize>()
}

/// What a parsed `alert` takes in memory, near enough: the struct, its two maps and its
/// strings, with the allocator's overheads (measured with heaptrack: an alert of four
/// labels and two short annotations takes some 2.3 KiB, three times its JSON).
pub fn memory_bytes(alert: &Alert) -> usize {
    let text = [
        &alert.generator_url,
        &alert.dashboard_url,
        &alert.panel_url,
        &alert.silence_url,
        &alert.value,
    ]
    .into_iter()
    .flatten()
    .map(|s| string_bytes(s))
    .sum::<usize>();
    std::mem::size_of::<Alert>()
        + string_bytes(&alert.fingerprint)
        + string_bytes(&alert.name)
        + map_bytes(&alert.labels)
        + map_bytes(&alert.annotations)
        + text
}

fn cap_text(s: &mut String, max: usize) -> bool {
    // Bytes bound characters from above: most text needs no count.
    if s.len() <= max || s.chars().nth(max).is_none() {
        return false;
    }
    *s = crate::text::truncate(s, max);
    true
}

fn cap_map(map: &mut BTreeMap<String, String>, max: usize, value_chars: usize) -> bool {
    let over_long = |(k, v): (&String, &String)| k.len() > NAME_CHARS || v.len() > value_chars;
    if map.len() <= max && !map.iter().any(over_long) {
        return false;
    }
    let mut cut = map.len() > max;
    // alertname is kept whatever its place; the others fill the rest in name order.
    let mut others = max.saturating_sub(usize::from(map.contains_key("alertname")));
    let kept: BTreeMap<String, String> = std::mem::take(map)
        .into_iter()
        .filter(|(k, _)| {
            let keep = k == "alertname" || others > 0;
            if k != "alertname" && keep {
                others -= 1;
            }
            keep
        })
        .map(|(mut k, mut v)| {
            cut |= cap_text(&mut k, NAME_CHARS);
            cut |= cap_text(&mut v, value_chars);
            (k, v)
        })
        .collect();
    *map = kept;
    cut
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::alerts::AlertSource;
    use crate::alerts::parse_webhook;

    #[test]
    fn a_megabyte_label_and_a_thousand_annotations_are_cut_to_the_bounds() {
        let mut annotations = serde_json::Map::new();
        for i in 0..1000 {
            annotations.insert(format!("a{i:04}"), "é".repeat(5_000).into());
        }
        let body = serde_json::json!({"version": "4", "alerts": [{
            "labels": {"alertname": "Big", "blob": "ü".repeat(1 << 20), "zz": "x"},
            "annotations": annotations,
            "generatorURL": format!("http://prom/graph?g0.expr={}", "%C3%A9".repeat(10_000)),
        }]});
        let batch = parse_webhook(AlertSource::Alertmanager, body.to_string().as_bytes()).unwrap();
        assert_eq!(batch.capped, 1);
        let a = &batch.alerts[0];
        assert_eq!(a.labels["blob"].chars().count(), LABEL_VALUE_CHARS);
        assert!(a.labels["blob"].ends_with('…'));
        assert_eq!(
            (a.labels["alertname"].as_str(), a.labels["zz"].as_str()),
            ("Big", "x")
        );
        assert_eq!(a.annotations.len(), ANNOTATIONS_MAX);
        assert!(
            a.annotations
                .values()
                .all(|v| v.chars().count() == ANNOTATION_VALUE_CHARS)
        );
        assert_eq!(a.generator_url.as_ref().unwrap().chars().count(), URL_CHARS);
    }

    #[test]
    fn a_small_alert_is_estimated_at_what_it_takes_parsed_not_at_its_json_bytes() {
        let alert = serde_json::json!({"status": "firing",
            "labels": {"alertname": "Templated", "instance": "host1", "job": "value 1",
                       "severity": "warning"},
            "annotations": {"summary": "a value in a label", "description": "x".repeat(200)},
            "startsAt": "2026-11-22T20:45:24.847Z", "generatorURL": "http://prom/graph?g0.expr=up"});
        let body = serde_json::json!({"version": "4", "alerts": [alert]}).to_string();
        let batch = parse_webhook(AlertSource::Alertmanager, body.as_bytes()).unwrap();
        let estimate = memory_bytes(&batch.alerts[0]);
        // heaptrack: ~2.3 KiB live per queued alert of this shape (JSON: ~600 bytes).
        assert!(
            (1_800..3_000).contains(&estimate),
            "{estimate} for {} JSON bytes",
            body.len()
        );
        assert!(estimate > 2 * body.len());
    }

    #[test]
    fn alertname_is_kept_among_too_many_labels_and_small_alerts_are_untouched() {
        let mut labels: BTreeMap<String, String> =
            (0..200).map(|i| (format!("a{i:03}"), "v".into())).collect();
        labels.insert("alertname".into(), "Many".into());
        let mut cut = labels.clone();
        assert!(cap_map(&mut cut, LABELS_MAX, LABEL_VALUE_CHARS));
        assert_eq!(cut.len(), LABELS_MAX);
        assert_eq!(cut["alertname"], "Many");
        let mut small: BTreeMap<String, String> =
            [("alertname".to_string(), "Small".to_string())].into();
        assert!(!cap_map(&mut small, LABELS_MAX, LABEL_VALUE_CHARS));
    }
}
