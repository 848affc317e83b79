//! Ages on real exporters' names and on climbs read every ten minutes.
use super::*;

const STEP: f64 = 600.0;

/// `(time, value)` every [`STEP`] from 0 to `until` of `f`, `None` being absent.
fn read(until: f64, f: impl Fn(f64) -> Option<f64>) -> Vec<(f64, f64)> {
    (0..)
        .map(|k| f64::from(k) * STEP)
        .take_while(|t| *t <= until)
        .filter_map(|t| f(t).map(|v| (t, v)))
        .collect()
}

/// The names of the families `file` declares gauges (or leaves untyped).
fn gauges_of(file: &str) -> Vec<String> {
    let path = format!(
        "{}/tests/fixtures/exporters/{file}",
        env!("CARGO_MANIFEST_DIR")
    );
    let text = std::fs::read_to_string(path).expect("fixture");
    text.lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split_once(' '))
        .filter(|(_, t)| !matches!(*t, "counter" | "histogram" | "summary"))
        .map(|(n, _)| n.to_string())
        .collect()
}

#[test]
fn ages_by_name_on_real_exporters_leave_out_timestamps_uptimes_and_counters() {
    // postgres_exporter's open transaction has no unit suffix: `_duration` says it.
    let pg = gauges_of("postgres_exporter.prom");
    assert!(pg.iter().any(|n| n == "pg_stat_activity_max_tx_duration"));
    let pg_ages: Vec<&String> = pg.iter().filter(|n| age_name(n)).collect();
    assert_eq!(pg_ages, vec!["pg_stat_activity_max_tx_duration"]);
    // node_exporter's gauges in seconds are offsets, errors and durations that do not
    // climb; its clock and boot time are timestamps.
    let node = gauges_of("node_exporter.prom");
    for n in ["node_time_seconds", "node_boot_time_seconds"] {
        assert!(node.iter().any(|x| x == n), "{n}");
        assert!(!age_name(n), "{n}");
    }
    assert!(node.iter().any(|n| n == "node_timex_maxerror_seconds"));
    for n in [
        "node_cpu_seconds_total",
        "pg_postmaster_start_time_seconds",
        "mysql_global_status_uptime_seconds",
        "process_start_time_seconds",
        "http_request_duration_seconds_bucket",
        "scrape_duration_seconds",
    ] {
        assert!(!age_name(n), "{n}");
    }
    for n in [
        "backup_time_since_last_success_seconds",
        "rabbitmq_queue_head_message_age_seconds",
        "pg_replication_lag",
        "job_running_duration_seconds",
    ] {
        assert!(age_name(n), "{n}");
    }
}

#[test]
fn a_transaction_open_since_the_look_back_and_absent_before_is_told_with_its_beginning() {
    // Appears 36 h into the look-back at 18 h old, climbs one a second to now (72 h).
    let now = 72.0 * 3600.0;
    let appeared = 36.0 * 3600.0;
    let v = read(now, |t| {
        (t >= appeared).then_some(64_800.0 + (t - appeared))
    });
    let a = climb(&v, 0.0, STEP).expect("an age");
    assert_eq!(a.value, 64_800.0 + 36.0 * 3600.0);
    assert_eq!(a.began.timestamp(), (now - a.value) as i64);
    assert_eq!(a.earlier_high, None);
    // Short transactions before (0–5 s), then one open for 3 h.
    let v = read(now, |t| {
        Some(if t < now - 3.0 * 3600.0 {
            (t / STEP) % 5.0
        } else {
            t - (now - 3.0 * 3600.0)
        })
    });
    let a = climb(&v, 0.0, STEP).expect("an age");
    assert_eq!(a.value, 3.0 * 3600.0);
    assert_eq!(a.earlier_high, Some(4.0));
}

#[test]
fn an_uptime_a_nightly_sawtooth_a_young_age_and_a_slower_climb_are_not_news() {
    let now = 72.0 * 3600.0;
    // Climbing for the whole look-back: began before it, can't tell news from a lifetime.
    assert_eq!(climb(&read(now, |t| Some(1e6 + t)), 0.0, STEP), None);
    // A nightly job's time since success resets every 24 h: now 20 h, earlier 24 h.
    let saw = read(now + 20.0 * 3600.0, |t| Some(t % 86_400.0));
    let saw: Vec<(f64, f64)> = saw
        .into_iter()
        .map(|(t, v)| (t - 20.0 * 3600.0, v))
        .collect();
    assert_eq!(climb(&saw, -20.0 * 3600.0, STEP), None);
    // Twenty minutes old.
    assert_eq!(
        climb(
            &read(now, |t| (t >= now - 1200.0).then_some(t - (now - 1200.0))),
            0.0,
            STEP
        ),
        None
    );
    // Half a second per second: not an age.
    assert_eq!(
        climb(
            &read(now, |t| (t >= 36.0 * 3600.0)
                .then(|| 3600.0 + (t - 36.0 * 3600.0) / 2.0)),
            0.0,
            STEP
        ),
        None
    );
    // A timestamp.
    assert_eq!(climb(&read(now, |t| Some(1.8e9 + t)), 0.0, STEP), None);
}
