//! One test per naming convention and operator rule of the unit inference, and the
//! parser's handling of the syntax around them.

use super::parse::{Expr, parse};
use super::unit_of;
use crate::tools::format::{Unit, format_number};

fn check(cases: &[(&str, Unit)]) {
    for (q, want) in cases {
        assert_eq!(unit_of(q), *want, "{q}");
    }
}

#[test]
fn a_metric_s_unit_comes_from_its_name_suffix() {
    check(&[
        ("node_filesystem_avail_bytes", Unit::Bytes),
        ("probe_duration_seconds", Unit::Seconds),
        ("node_hwmon_temp_celsius", Unit::Celsius),
        ("disk_used_percent", Unit::Percent),
        ("cpu_busy_pct", Unit::Percent),
        ("instance:node_memory_utilisation:ratio", Unit::Plain),
        ("node_boot_time_seconds", Unit::Timestamp),
        ("backup_last_success_timestamp_seconds", Unit::Timestamp),
        ("probe_ssl_earliest_cert_expiry", Unit::Timestamp),
        // A counter of seconds spent, not a point in time.
        ("node_disk_io_time_seconds_total", Unit::Seconds),
        ("node_network_receive_bytes_total", Unit::Bytes),
        ("kube_pod_container_status_restarts_total", Unit::Plain),
        ("apiserver_request_duration_seconds_bucket", Unit::Plain),
        ("node_load1", Unit::Plain),
        ("up", Unit::Plain),
        // Label values name no metric.
        (r#"node_load1{job="x_bytes",path="/a/b"}"#, Unit::Plain),
        (r#"{__name__="node_memory_MemFree_bytes"}"#, Unit::Bytes),
        (
            "node_namespace_pod_container:container_memory_working_set_bytes",
            Unit::Bytes,
        ),
    ]);
}

#[test]
fn rates_of_counters_are_per_second_and_seconds_per_second_are_a_share() {
    check(&[
        (
            "rate(node_network_receive_bytes_total[5m])",
            Unit::BytesPerSecond,
        ),
        (
            "irate(node_network_transmit_bytes_total[1m])",
            Unit::BytesPerSecond,
        ),
        ("rate(node_cpu_seconds_total[5m])", Unit::Plain),
        ("rate(http_requests_total[5m])", Unit::Plain),
        (
            "increase(node_network_receive_bytes_total[1h])",
            Unit::Bytes,
        ),
        ("increase(process_cpu_seconds_total[1h])", Unit::Seconds),
        (
            "deriv(node_filesystem_avail_bytes[1h])",
            Unit::BytesPerSecond,
        ),
        (
            "rate(x_seconds_sum[5m]) / rate(x_seconds_count[5m])",
            Unit::Seconds,
        ),
    ]);
}

#[test]
fn a_quotient_of_like_units_is_a_ratio_and_a_ratio_times_100_a_percentage() {
    check(&[
        (
            "kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes",
            Unit::Plain,
        ),
        (
            "100 * kubelet_volume_stats_used_bytes / kubelet_volume_stats_capacity_bytes",
            Unit::Percent,
        ),
        (
            "node_filesystem_avail_bytes / node_filesystem_size_bytes * 100",
            Unit::Percent,
        ),
        (
            "(1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes) * 100",
            Unit::Percent,
        ),
        (
            "100 - (avg by (instance) (rate(node_cpu_seconds_total{mode=\"idle\"}[5m])) * 100)",
            Unit::Percent,
        ),
        ("disk_used_percent / 100", Unit::Plain),
        // Bytes over an unknown: no unit rather than a wrong one.
        ("node_memory_MemFree_bytes / node_load1", Unit::Plain),
        ("node_memory_MemFree_bytes * 100", Unit::Plain),
        (
            "sum(container_memory_working_set_bytes) / count(container_memory_working_set_bytes)",
            Unit::Bytes,
        ),
    ]);
}

#[test]
fn differences_keep_their_unit_and_timestamps_apart_are_durations() {
    check(&[
        (
            "node_memory_MemTotal_bytes - node_memory_MemAvailable_bytes",
            Unit::Bytes,
        ),
        (
            "1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
            Unit::Plain,
        ),
        ("time() - node_boot_time_seconds", Unit::Duration),
        ("probe_ssl_earliest_cert_expiry - time()", Unit::Duration),
        ("time()", Unit::Timestamp),
        ("timestamp(up)", Unit::Timestamp),
        ("node_boot_time_seconds + 3600", Unit::Timestamp),
        (
            "node_memory_MemFree_bytes - node_hwmon_temp_celsius",
            Unit::Plain,
        ),
    ]);
}

#[test]
fn seconds_divided_into_minutes_hours_and_days_say_so() {
    check(&[
        (
            "(probe_ssl_earliest_cert_expiry - time()) / 86400",
            Unit::Days,
        ),
        ("(time() - node_boot_time_seconds) / 3600", Unit::Hours),
        ("probe_duration_seconds / 60", Unit::Minutes),
        ("node_memory_MemFree_bytes / 3600", Unit::Plain),
        ("rate(node_cpu_seconds_total[5m]) / 3600", Unit::Plain),
    ]);
    assert_eq!(format_number(4.0, Unit::Hours), "4h");
    assert_eq!(format_number(2.5, Unit::Days), "2.5d");
    assert_eq!(format_number(72.0, Unit::Hours), "72h");
    assert_eq!(format_number(90.0, Unit::Minutes), "90min");
    assert_eq!(format_number(88.8, Unit::Percent), "88.8%");
    assert_eq!(format_number(2048.0, Unit::BytesPerSecond), "2KiB/s");
    assert_eq!(format_number(41.5, Unit::Celsius), "41.5°C");
}

#[test]
fn aggregations_and_functions_keep_or_replace_the_unit() {
    check(&[
        ("sum by (instance) (node_memory_MemFree_bytes)", Unit::Bytes),
        ("sum(node_memory_MemFree_bytes) by (instance)", Unit::Bytes),
        ("avg without (cpu) (node_hwmon_temp_celsius)", Unit::Celsius),
        ("max(probe_duration_seconds)", Unit::Seconds),
        ("topk(5, node_memory_MemFree_bytes)", Unit::Bytes),
        ("quantile(0.9, probe_duration_seconds)", Unit::Seconds),
        ("count(node_memory_MemFree_bytes)", Unit::Plain),
        ("count_over_time(probe_duration_seconds[1h])", Unit::Plain),
        ("max_over_time(probe_duration_seconds[1h])", Unit::Seconds),
        (
            "predict_linear(node_filesystem_avail_bytes[6h], 4 * 3600)",
            Unit::Bytes,
        ),
        (
            "predict_linear(node_filesystem_avail_bytes[6h], 86400) / 3600",
            Unit::Plain,
        ),
        (
            "label_replace(node_memory_MemFree_bytes, \"a\", \"$1\", \"b\", \"(.*)\")",
            Unit::Bytes,
        ),
        ("round(probe_duration_seconds, 0.1)", Unit::Seconds),
        ("clamp_min(node_filesystem_avail_bytes, 0)", Unit::Bytes),
        ("absent(up)", Unit::Plain),
        ("sum(x_info)", Unit::Plain),
        ("exp(node_memory_MemFree_bytes)", Unit::Plain),
    ]);
}

#[test]
fn histogram_quantiles_over_buckets_are_in_the_bucket_s_unit() {
    check(&[
        (
            "histogram_quantile(0.99, sum by (le) (rate(http_request_duration_seconds_bucket[5m])))",
            Unit::Seconds,
        ),
        (
            "histogram_quantile(0.5, rate(response_size_bytes_bucket[5m]))",
            Unit::Bytes,
        ),
        (
            "rate(http_request_duration_seconds_bucket[5m])",
            Unit::Plain,
        ),
        (
            "sum(rate(x_seconds_bucket{le=\"0.5\"}[5m])) / sum(rate(x_seconds_count[5m]))",
            Unit::Plain,
        ),
    ]);
}

#[test]
fn filters_and_set_operators_keep_the_left_side() {
    check(&[
        ("node_filesystem_avail_bytes > 1e9", Unit::Bytes),
        (
            "0.9 < node_filesystem_avail_bytes / node_filesystem_size_bytes * 100",
            Unit::Percent,
        ),
        ("node_filesystem_avail_bytes > bool 1e9", Unit::Plain),
        (
            "node_filesystem_avail_bytes and on(instance) up == 1",
            Unit::Bytes,
        ),
        (
            "node_filesystem_avail_bytes unless node_filesystem_readonly == 1",
            Unit::Bytes,
        ),
        ("node_filesystem_avail_bytes or vector(0)", Unit::Bytes),
        // Series of two units together have none.
        (
            "node_filesystem_avail_bytes or probe_duration_seconds",
            Unit::Plain,
        ),
        (
            "3 <= round((probe_ssl_earliest_cert_expiry - time()) / 86400, 0.1) < 20",
            Unit::Days,
        ),
        (
            "histogram_quantile(0.99, rate(x_seconds_bucket[5m])) * on(instance) group_left(node) kubelet_node_name",
            Unit::Seconds,
        ),
        (
            "node_memory_MemFree_bytes * on(instance) group_left(nodename) node_uname_info",
            Unit::Bytes,
        ),
    ]);
}

#[test]
fn the_parser_reads_promql_syntax_around_the_unit() {
    check(&[
        ("-node_memory_MemFree_bytes", Unit::Bytes),
        ("node_memory_MemFree_bytes offset 1h", Unit::Bytes),
        ("node_memory_MemFree_bytes @ 1700000000", Unit::Bytes),
        ("node_memory_MemFree_bytes @ end()", Unit::Bytes),
        (
            "max_over_time(rate(node_cpu_seconds_total[1m])[1h:5m]) * 100",
            Unit::Percent,
        ),
        ("node_memory_MemFree_bytes # a comment\n > 0", Unit::Bytes),
        ("node_memory_MemFree_bytes / 0x1", Unit::Bytes),
        ("2 ^ 3 * x_ratio", Unit::Plain),
    ]);
    assert_eq!(parse("1 - 2 - 3"), parse("(1 - 2) - 3"), "left-associative");
    assert_eq!(
        parse("-2 ^ 2"),
        Some(Expr::Neg(Box::new(parse("2 ^ 2").unwrap())))
    );
    // What is no PromQL, or nests deeper than any real query, has no unit.
    for bad in [
        "",
        "node_memory_MemFree_bytes{",
        "sum(",
        "x_bytes )",
        "rate(x_bytes[5m)",
        "\"unclosed",
        "x_bytes $ 2",
    ] {
        assert_eq!(unit_of(bad), Unit::Plain, "{bad:?}");
    }
    let nested = format!(
        "{}node_memory_MemFree_bytes{}",
        "sum(".repeat(20),
        ")".repeat(20)
    );
    assert_eq!(unit_of(&nested), Unit::Bytes);
    let deep = format!("{}x_bytes{}", "(".repeat(10_000), ")".repeat(10_000));
    assert_eq!(unit_of(&deep), Unit::Plain);
    assert_eq!(
        unit_of(&format!("{}x_bytes", "-".repeat(10_000))),
        Unit::Plain
    );
}
