//! Compaction of range queries, vectors and log lines into the tool output limit.

use sre_agent::integrations::loki::LogStream;
use sre_agent::integrations::prometheus::{Labels, Sample, Series};
use sre_agent::tools::compact::{
    Unit, compact_logs, compact_matrix, compact_matrix_with, compact_vector, fit_lines,
    format_number, line_pattern,
};
use sre_agent::tools::trend::{Measure, Sizes, join_key};
use sre_agent::tools::units::unit_of;

fn labels(pairs: &[(&str, &str)]) -> Labels {
    pairs
        .iter()
        .map(|(k, v)| (k.to_string(), v.to_string()))
        .collect()
}

#[test]
fn numbers_have_three_significant_digits_and_obvious_units() {
    let cases = [
        (0.0, Unit::Plain, "0"),
        (1.0, Unit::Plain, "1"),
        (0.012345, Unit::Plain, "0.0123"),
        (123456.0, Unit::Plain, "123k"),
        (2.5e9, Unit::Plain, "2.5G"),
        (1e-7, Unit::Plain, "1.00e-7"),
        (0.25, Unit::Seconds, "250ms"),
        (12.34, Unit::Seconds, "12.3s"),
        (7200.0, Unit::Seconds, "2h"),
        (1536.0, Unit::Bytes, "1.5KiB"),
        (3.0 * 1024.0 * 1024.0 * 1024.0, Unit::Bytes, "3GiB"),
        (f64::NAN, Unit::Plain, "NaN"),
        (f64::INFINITY, Unit::Plain, "+Inf"),
    ];
    for (v, unit, want) in cases {
        assert_eq!(format_number(v, unit), want, "{v} {unit:?}");
    }
    assert_eq!(
        unit_of("histogram_quantile(0.9, rate(x_seconds_bucket[5m]))"),
        Unit::Seconds
    );
    assert_eq!(unit_of("rate(x_seconds_total[5m])"), Unit::Plain);
    assert_eq!(unit_of("node_memory_MemAvailable_bytes"), Unit::Bytes);
}

#[test]
fn range_series_are_summarised_sorted_and_dropped_within_the_limit() {
    let series: Vec<Series> = (0..50)
        .map(|i| Series {
            metric: labels(&[("job", "node"), ("instance", &format!("host-{i}:9100"))]),
            values: (0..100).map(|t| (t as f64, (i * t) as f64)).collect(),
        })
        .collect();
    let out = compact_matrix(&series, Unit::Plain, 1000);
    assert!(out.chars().count() <= 1000, "{out}");
    assert!(
        out.starts_with("50 series; common labels {job=\"node\"}"),
        "{out}"
    );
    let first = out.lines().nth(1).unwrap();
    assert!(first.starts_with("{instance=\"host-49:9100\"} min=0 avg=2.43k max=4.85k last=4.85k trend=rising (100 points)"), "{first}");
    assert!(out.contains("more series dropped"), "{out}");
    let flat = Series {
        metric: labels(&[("job", "x")]),
        values: vec![(0.0, 1.0); 10],
    };
    let falling = Series {
        metric: labels(&[("job", "y")]),
        values: (0..10).map(|t| (t as f64, 10.0 - t as f64)).collect(),
    };
    let out = compact_matrix(&[flat, falling], Unit::Plain, 4000);
    assert!(
        out.contains("{job=\"x\"} min=1 avg=1 max=1 last=1 trend=flat"),
        "{out}"
    );
    assert!(out.contains("trend=falling"), "{out}");
}

#[test]
fn instant_vectors_show_top_values_first() {
    let samples: Vec<Sample> = [("a", 1.0), ("b", f64::NAN), ("c", 30.0)]
        .iter()
        .map(|(j, v)| Sample {
            metric: labels(&[("__name__", "up"), ("job", j)]),
            value: *v,
            ts: 0.0,
        })
        .collect();
    let out = compact_vector(&samples, Unit::Plain, 4000);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "3 series; common labels up");
    assert_eq!(
        lines[1..],
        ["{job=\"c\"} 30", "{job=\"a\"} 1", "{job=\"b\"} NaN"]
    );
}

#[test]
fn log_lines_group_by_pattern_with_counts_and_one_example() {
    assert_eq!(
        line_pattern(
            "2026-11-23T06:00:01.123Z req 550e8400-e29b-41d4-a716-446655440000 from 10.0.0.12:443 id=deadbeef42 took 12.5ms facade"
        ),
        "<ts> req <uuid> from <ip> id=<hex> took <n>ms facade"
    );
    let entries = (0..30)
        .map(|i| {
            (
                i as i64 * 1_000_000_000,
                format!("error: timeout after {i}ms talking to 10.0.0.{i}"),
            )
        })
        .chain([(99_000_000_000, "panic: nil map".to_string())])
        .collect();
    let streams = [LogStream {
        labels: labels(&[("job", "api")]),
        entries,
    }];
    let out = compact_logs(&streams, 4000);
    assert!(
        out.starts_with("31 lines in 1 streams, 2 patterns"),
        "{out}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(lines[1].starts_with("30× [job=api]"), "{out}");
    assert!(
        lines[1].ends_with("error: timeout after 29ms talking to 10.0.0.29"),
        "{out}"
    );
    assert!(
        lines[2].starts_with("1× [job=api]") && lines[2].ends_with("panic: nil map"),
        "{out}"
    );
}

#[test]
fn output_never_exceeds_the_limit() {
    let lines: Vec<String> = (0..100)
        .map(|i| format!("line {i} {}", "x".repeat(i)))
        .collect();
    for max_chars in [0, 10, 50, 200, 1000, 5000] {
        let out = fit_lines("header", &lines, "lines", max_chars);
        assert!(
            out.chars().count() <= max_chars,
            "{max_chars}: {}",
            out.len()
        );
    }
}

#[test]
fn computed_lines_travel_with_their_series_and_the_limit_still_holds() {
    let gib = 1024.0_f64.powi(3);
    let series: Vec<Series> = (0..20)
        .map(|i| Series {
            metric: labels(&[
                ("__name__", "node_filesystem_avail_bytes"),
                ("instance", &format!("host-{i}:9100")),
                ("mountpoint", "/data"),
            ]),
            values: (0..=168)
                .map(|h| (h as f64 * 3600.0, (400.0 - 2.0 * h as f64) * gib))
                .collect(),
        })
        .collect();
    let sizes: Sizes = series
        .iter()
        .map(|s| (join_key(&s.metric), 1024.0 * gib))
        .collect();
    for max_chars in [0, 50, 300, 700, 2000, 20_000] {
        let out = compact_matrix_with(
            &series,
            Unit::Bytes,
            max_chars,
            Measure::FreeBytes,
            &sizes,
            None,
        );
        assert!(out.chars().count() <= max_chars, "{max_chars}: {out}");
        let lines: Vec<&str> = out.lines().collect();
        let shown = lines.iter().filter(|l| l.starts_with("{instance=")).count();
        assert!(max_chars < 20_000 || shown == 20, "{out}");
        for (i, l) in lines.iter().enumerate().skip(1) {
            if l.starts_with("{instance=") {
                let next = lines.get(i + 1).unwrap_or(&"");
                assert!(
                    next.starts_with("  used 93.8 % (64 GiB free of 1 TiB;"),
                    "{max_chars}: {out}"
                );
                assert!(
                    next.contains("falling 48 GiB/day (2 GiB/h, linear fit); full in ~1.3 days"),
                    "{out}"
                );
            }
        }
    }
}
