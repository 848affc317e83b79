//! `smart_attributes` on smartctl_exporter's series (its label set: `device`,
//! `attribute_id`, `attribute_name`, `attribute_flags_short`, `attribute_flags_long`,
//! `attribute_value_type` raw/value/worst/thresh) beside the captured node_exporter of the
//! same hosts: one disk whose UDMA CRC errors climb from 0 to 142 over the last 30 minutes
//! while its reallocated, pending and offline-uncorrectable sectors stay at 0 and its SATA
//! link runs at 1.5 of 6 Gb/s (the path, not the media); one whose reallocated and pending
//! sectors rise (the media). Decoys: power-on hours and temperature moving, an old CRC
//! count that holds, a calm disk.

use sre_agent::analyze::{FactClass, Severity};

use super::world::{Capture, SeriesDef, World, lines, of, series, since_off};

/// The four series smartctl_exporter writes for one attribute of `device` on `host`, the
/// raw one given by `raw`.
fn attribute(
    host: &str,
    device: &str,
    (id, name): (&str, &str),
    raw: impl Fn(i64) -> Option<f64> + Clone + 'static,
) -> Vec<SeriesDef> {
    let instance = format!("{host}:9633");
    let mut out = Vec::new();
    for kind in ["raw", "value", "worst", "thresh"] {
        let labels = [
            ("instance", instance.as_str()),
            ("job", "smartctl"),
            ("device", device),
            ("attribute_id", id),
            ("attribute_name", name),
            ("attribute_flags_short", "-O--CK"),
            (
                "attribute_flags_long",
                "updated_online,event_count,auto_keep",
            ),
            ("attribute_value_type", kind),
        ];
        let raw = raw.clone();
        out.push(match kind {
            "raw" => series("smartctl_device_attribute", &labels, raw),
            "thresh" => series("smartctl_device_attribute", &labels, |_| Some(0.0)),
            _ => series("smartctl_device_attribute", &labels, |_| Some(200.0)),
        });
    }
    out
}

fn flat(v: f64) -> impl Fn(i64) -> Option<f64> + Clone + 'static {
    move |_| Some(v)
}

/// The disk's standard attributes, those not given in `except` flat at 0 (power-on hours
/// and temperature moving as they do).
fn disk(host: &str, device: &str, except: &[&str]) -> Vec<SeriesDef> {
    let mut out = Vec::new();
    for (id, name) in [
        ("5", "Reallocated_Sector_Ct"),
        ("197", "Current_Pending_Sector"),
        ("198", "Offline_Uncorrectable"),
        ("199", "UDMA_CRC_Error_Count"),
    ] {
        if !except.contains(&id) {
            out.extend(attribute(host, device, (id, name), flat(0.0)));
        }
    }
    out.extend(attribute(host, device, ("9", "Power_On_Hours"), |ago| {
        Some(41_000.0 - (ago / 3600) as f64)
    }));
    out.extend(attribute(
        host,
        device,
        ("194", "Temperature_Celsius"),
        |ago| Some(34.0 + (ago % 7) as f64),
    ));
    let instance = format!("{host}:9633");
    for speed_type in ["max", "current"] {
        let labels = [
            ("instance", instance.as_str()),
            ("job", "smartctl"),
            ("device", device),
            ("speed_type", speed_type),
        ];
        out.push(series("smartctl_device_interface_speed", &labels, |_| {
            Some(6e9)
        }));
    }
    let refs = [
        ("instance", instance.as_str()),
        ("job", "smartctl"),
        ("device", device),
    ];
    out.push(series("smartctl_device_smart_status", &refs, |_| Some(1.0)));
    out
}

#[tokio::test]
async fn rising_crc_errors_on_flat_media_blame_the_path_and_rising_sectors_the_media() {
    let node = Capture::load_pair("node_exporter.prom", "node_exporter.after15s.prom", 15.0);
    let mut defs = node.series("nas-1:9100", "node");
    defs.extend(node.series("nas-2:9100", "node"));
    // nas-1 sda: CRC errors from 0, climbing from 30 minutes ago to 142.
    defs.extend(disk("nas-1", "sda", &["199"]));
    defs.extend(attribute(
        "nas-1",
        "sda",
        ("199", "UDMA_CRC_Error_Count"),
        |ago| {
            Some(if ago >= 1800 {
                0.0
            } else {
                ((1800 - ago) as f64 / 1800.0 * 142.0).round()
            })
        },
    ));
    // Its link came up at SATA I speed.
    for d in defs.iter_mut().filter(|d| {
        d.name == "smartctl_device_interface_speed"
            && d.labels.get("device").map(String::as_str) == Some("sda")
            && d.labels.get("instance").map(String::as_str) == Some("nas-1:9633")
            && d.labels.get("speed_type").map(String::as_str) == Some("current")
    }) {
        d.value = Box::new(|_| Some(1.5e9));
    }
    defs.push(series(
        "smartctl_device",
        &[
            ("instance", "nas-1:9633"),
            ("job", "smartctl"),
            ("device", "sda"),
            ("interface", "sat"),
            ("protocol", "ATA"),
            ("model_name", "WDC WD40EFRX-68N32N0"),
            ("serial_number", "WD-WCC7K4XXXXXX"),
        ],
        |_| Some(1.0),
    ));
    // nas-1 sdb: reallocated sectors 8 → 24 and pending 0 → 4 from 20 minutes ago.
    defs.extend(disk("nas-1", "sdb", &["5", "197"]));
    defs.extend(attribute(
        "nas-1",
        "sdb",
        ("5", "Reallocated_Sector_Ct"),
        |ago| Some(if ago >= 1200 { 8.0 } else { 24.0 }),
    ));
    defs.extend(attribute(
        "nas-1",
        "sdb",
        ("197", "Current_Pending_Sector"),
        |ago| Some(if ago >= 1200 { 0.0 } else { 4.0 }),
    ));
    // nas-2 sda: 3 CRC errors from long ago, holding; nas-2 sdb calm.
    defs.extend(disk("nas-2", "sda", &["199"]));
    defs.extend(attribute(
        "nas-2",
        "sda",
        ("199", "UDMA_CRC_Error_Count"),
        flat(3.0),
    ));
    defs.extend(disk("nas-2", "sdb", &[]));
    let Some(world) = World::build(&defs, 3 * 3600, 15).await else {
        return;
    };
    let (facts, notes) = world.sweep(Some(300)).await;
    assert!(notes.is_empty(), "{notes:?}");
    let all = lines(&facts);
    let found = of(&facts, "smart_attributes");
    let mut named: Vec<String> = found
        .iter()
        .map(|f| {
            format!(
                "{}/{}",
                f.entity.host.as_deref().unwrap_or("?"),
                f.entity.name
            )
        })
        .collect();
    named.sort();
    assert_eq!(named, ["nas-1/sda", "nas-1/sdb"], "{all}");

    let f = found.iter().find(|f| f.entity.name == "sda").unwrap();
    assert_eq!(
        (f.class, f.severity, f.entity.kind.as_str()),
        (FactClass::Appliance, Severity::Warning, "disk")
    );
    assert!(
        f.what
            .starts_with("SMART error counters rising: UDMA_CRC_Error_Count (199) 0 → 142 since "),
        "{all}"
    );
    assert!(since_off(f, 1800) <= 30, "{all}");
    let detail = f.detail.as_deref().unwrap();
    assert!(
        detail.contains("199: transfers corrupted between drive and controller"),
        "{detail}"
    );
    assert!(
        detail.contains(
            "the media is fine (Reallocated_Sector_Ct (5) at 0, Current_Pending_Sector (197) at 0, \
             Offline_Uncorrectable (198) at 0 did not move): the path (cable, connector, port, \
             backplane) is suspect"
        ),
        "{detail}"
    );
    assert!(
        detail.contains("the SATA link runs at 1.5 Gbit/s of its 6 Gbit/s"),
        "{detail}"
    );
    assert!(
        detail.contains("model WDC WD40EFRX-68N32N0, serial WD-WCC7K4XXXXXX"),
        "{detail}"
    );
    assert_eq!(f.entity.labels["model_name"], "WDC WD40EFRX-68N32N0");

    let f = found.iter().find(|f| f.entity.name == "sdb").unwrap();
    assert_eq!(f.severity, Severity::Critical, "{all}");
    assert!(
        f.what.contains("Reallocated_Sector_Ct (5) 8 → 24")
            && f.what.contains("Current_Pending_Sector (197) 0 → 4"),
        "{all}"
    );
    let detail = f.detail.as_deref().unwrap();
    assert!(detail.contains("5: bad sectors remapped"), "{detail}");
    assert!(!detail.contains("the path"), "{detail}");
    assert!(since_off(f, 1200) <= 30, "{all}");
    assert!(!f.what.contains("Power_On_Hours") && !f.what.contains("Temperature"));
}
