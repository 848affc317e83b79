//! Compaction of a 1,000-series range query (250 points each) and of 5,000 log lines into
//! the default 4,000-character tool output limit (`max_chars`). Prints `figure: value (target)` lines.

// A panic is how a test or a bench reports a failure.
#![allow(clippy::unwrap_used)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use sre_agent::integrations::loki::LogStream;
use sre_agent::integrations::prometheus::{Labels, Series};
use sre_agent::tools::compact::{Unit, compact_logs, compact_matrix};
use sre_agent::tools::units::unit_of;

const MAX_CHARS: usize = 4_000;

fn series(n: usize, points: usize) -> Vec<Series> {
    (0..n)
        .map(|i| Series {
            metric: Labels::from([
                ("__name__".into(), "node_cpu_seconds_total".into()),
                ("job".into(), "node".into()),
                ("instance".into(), format!("host-{:03}:9100", i / 8)),
                ("cpu".into(), (i % 8).to_string()),
                ("mode".into(), "idle".into()),
            ]),
            values: (0..points)
                .map(|t| {
                    (
                        1_748_772_000.0 + 15.0 * t as f64,
                        (i * t) as f64 * 0.37 + (t % 7) as f64,
                    )
                })
                .collect(),
        })
        .collect()
}

fn logs(lines: usize) -> Vec<LogStream> {
    (0..10)
        .map(|s| LogStream {
            labels: Labels::from([("job".into(), format!("svc-{s}"))]),
            entries: (0..lines / 10)
                .map(|i| {
                    let line = match i % 4 {
                        0 => format!("2026-11-23T06:00:{:02}Z level=error msg=\"timeout after {i}ms\" peer=10.0.{s}.{}", i % 60, i % 250),
                        1 => format!("request {:08x}-1234-4abc-8def-0123456789ab failed with status 503", i),
                        2 => format!("panic: index out of range [{i}] with length {}", i % 10),
                        _ => format!("GET /api/v1/items/{i} 200 {}ms", i % 90),
                    };
                    ((1_748_772_000 + i as i64) * 1_000_000_000, line)
                })
                .collect(),
        })
        .collect()
}

/// Median time of `runs` calls of `f`.
fn median(runs: usize, mut f: impl FnMut()) -> Duration {
    let mut times: Vec<Duration> = (0..runs)
        .map(|_| {
            let start = Instant::now();
            f();
            start.elapsed()
        })
        .collect();
    times.sort();
    times[runs / 2]
}

fn main() {
    let matrix = series(1_000, 250);
    let out = compact_matrix(
        &matrix,
        unit_of("rate(node_cpu_seconds_total[5m])"),
        MAX_CHARS,
    );
    let t = median(50, || {
        black_box(compact_matrix(black_box(&matrix), Unit::Plain, MAX_CHARS));
    });
    println!(
        "figure: range query 1,000 series x 250 points compacted to {} characters (target < 4000)",
        out.chars().count()
    );
    println!(
        "figure: range query compaction {:.2} ms (target < 5 ms)",
        t.as_secs_f64() * 1e3
    );

    let streams = logs(5_000);
    let out = compact_logs(&streams, MAX_CHARS);
    let t = median(20, || {
        black_box(compact_logs(black_box(&streams), MAX_CHARS));
    });
    println!(
        "figure: 5,000 log lines compacted to {} characters (target < 4000)",
        out.chars().count()
    );
    println!(
        "figure: log compaction {:.2} ms (target < 50 ms)",
        t.as_secs_f64() * 1e3
    );
    println!(
        "--- sample output (range query) ---\n{}",
        compact_matrix(&matrix[..5], Unit::Plain, MAX_CHARS)
    );
}
