//! Recognising gauges toward a limit, the computed lines and their facts.

use super::*;

const GIB: f64 = 1024.0 * 1024.0 * 1024.0;
const END: f64 = 1_795_410_000.0; // 2026-11-23 05:00 UTC

fn week_filling() -> Vec<(f64, f64)> {
    (0..=168)
        .map(|h| {
            let f = h as f64 / 168.0;
            (
                END - (168 - h) as f64 * 3600.0,
                400.0 * GIB - 340.0 * GIB * f,
            )
        })
        .collect()
}

#[test]
fn a_disk_filling_over_a_week_says_how_full_how_fast_and_when_full() {
    let line = describe(
        &week_filling(),
        Unit::Bytes,
        Measure::FreeBytes,
        Some(1024.0 * GIB),
    )
    .unwrap();
    assert_eq!(
        line,
        "  used 94.1 % (60 GiB free of 1 TiB; 64424509440 bytes free); first 400 GiB → last 60 GiB \
         over 7days (-340 GiB); falling 48.6 GiB/day (2.02 GiB/h, linear fit); \
         full in ~1.2 days (2026-11-24 10:38 UTC, from the last point)"
    );
}

#[test]
fn shares_are_recognised_from_the_query_and_shown_in_percent() {
    let used: Vec<(f64, f64)> = week_filling()
        .iter()
        .map(|(t, v)| (*t, 1.0 - v / (1024.0 * GIB)))
        .collect();
    let q =
        "1 - node_filesystem_avail_bytes{mountpoint=\"/var/lib/vz\"} / node_filesystem_size_bytes";
    let m = Measure::of(q, used.iter().map(|p| p.1));
    assert_eq!(m, Measure::Used { full: 1.0 });
    let line = describe(&used, Unit::Plain, m, None).unwrap();
    assert!(
        line.starts_with(
            "  used 94.1 %; first 60.9 % → last 94.1 % over 7days (+33.2 points); rising 4.74 %/day"
        ),
        "{line}"
    );
    assert!(
        line.ends_with("full in ~1.2 days (2026-11-24 10:38 UTC, from the last point)"),
        "{line}"
    );

    let pct = "100 * node_filesystem_avail_bytes / node_filesystem_size_bytes";
    assert_eq!(Measure::of(pct, []), Measure::Free { scale: 100.0 });
    let pct_used = "(node_filesystem_size_bytes - node_filesystem_avail_bytes) / node_filesystem_size_bytes * 100";
    assert_eq!(Measure::of(pct_used, []), Measure::Used { full: 100.0 });
    assert_eq!(
        Measure::of("node_memory_MemAvailable_bytes", []),
        Measure::FreeBytes
    );
    let vz = r#"node_filesystem_avail_bytes{mountpoint="/var/lib/vz", a="1-"}"#;
    assert_eq!(Measure::of(vz, []), Measure::FreeBytes);
    assert_eq!(
        Measure::of("rate(node_cpu_seconds_total[5m])", []),
        Measure::Other
    );
    let pvc = "100 * kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes";
    assert_eq!(Measure::of(pvc, []), Measure::Used { full: 100.0 });
    // CPU seconds per second is a share of a core with no "full".
    let cpu = "100 * rate(container_cpu_usage_seconds_total[5m])";
    assert_eq!(Measure::of(cpu, [50.0]), Measure::Other);
    assert_eq!(
        Measure::of("node_memory_usage_ratio", []),
        Measure::Used { full: 1.0 }
    );
    assert_eq!(
        size_metric("node_filesystem_avail_bytes").unwrap(),
        "node_filesystem_size_bytes"
    );
    assert_eq!(
        size_metric("node_memory_MemAvailable_bytes").unwrap(),
        "node_memory_MemTotal_bytes"
    );
}

#[test]
fn noise_and_movement_away_from_the_limit_give_no_time_to_full() {
    let noisy: Vec<(f64, f64)> = (0..200)
        .map(|i| {
            (
                i as f64 * 60.0,
                58.0 * GIB + 0.5 * GIB * (i as f64 / 7.0).sin(),
            )
        })
        .collect();
    let line = describe(&noisy, Unit::Bytes, Measure::FreeBytes, Some(100.0 * GIB)).unwrap();
    assert!(
        line.starts_with("  used 42.1 % (57.9 GiB free of 100 GiB; 62194548063 bytes free)"),
        "{line}"
    );
    assert!(!line.contains("full in"), "{line}");
    let growing: Vec<(f64, f64)> = (0..10).map(|i| (i as f64 * 60.0, i as f64 * GIB)).collect();
    let line = describe(&growing, Unit::Bytes, Measure::FreeBytes, None).unwrap();
    assert!(
        line.contains("rising 1.41 TiB/day (60 GiB/h, linear fit)") && !line.contains("full in"),
        "{line}"
    );
    assert_eq!(
        describe(
            &[(0.0, 1.0), (60.0, 1.0)],
            Unit::Plain,
            Measure::Other,
            None
        ),
        None
    );
    let counter: Vec<(f64, f64)> = (0..=60)
        .map(|i| (i as f64 * 60.0, 10.0 * i as f64))
        .collect();
    assert_eq!(
        describe(&counter, Unit::Plain, Measure::Other, None).unwrap(),
        "  first 0 → last 600 over 1h (+600); rising 14.4k/day (600/h, linear fit)"
    );
}
