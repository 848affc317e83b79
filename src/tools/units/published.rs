//! The inferred unit of published alerting expressions, copied from their sources (jsonnet
//! selectors such as `%(nodeExporterSelector)s` filled in with a plausible value):
//! - node-mixin: prometheus/node_exporter `docs/node-mixin/alerts/alerts.libsonnet`
//!   (commit b78ea1439e713d5b36e8535b63fd56d143d0439b);
//! - kubernetes-mixin (what kube-prometheus ships): kubernetes-monitoring/kubernetes-mixin
//!   `alerts/storage_alerts.libsonnet` (3978f13f), `alerts/kubelet.libsonnet` (e57b110d),
//!   `alerts/resource_alerts.libsonnet` (cc840340);
//! - awesome-prometheus-alerts: samber/awesome-prometheus-alerts
//!   `dist/rules/host-and-hardware/node-exporter.yml` (e2ffbfb6),
//!   `dist/rules/blackbox/blackbox-exporter.yml` (ae1d84c7).
//!
//! An alert's value is its left side's (the threshold filters), so a percentage rule must
//! read as `Percent`, a free share as a plain ratio, and anything the names do not tell
//! (inodes, conntrack entries, quota) as plain.

use super::unit_of;
use crate::tools::format::Unit;

const NODE_MIXIN: &[(&str, Unit)] = &[
    (
        r#"(node_filesystem_avail_bytes{job="node",fstype!=""} / node_filesystem_size_bytes{job="node",fstype!=""} * 100 < 15
           and predict_linear(node_filesystem_avail_bytes{job="node",fstype!=""}[6h], 24*60*60) < 0
           and node_filesystem_readonly{job="node",fstype!=""} == 0)"#,
        Unit::Percent,
    ),
    (
        r#"(node_filesystem_avail_bytes{job="node",fstype!=""} / node_filesystem_size_bytes{job="node",fstype!=""} * 100 < 3
           and node_filesystem_readonly{job="node",fstype!=""} == 0)"#,
        Unit::Percent,
    ),
    (
        r#"(node_filesystem_files_free{job="node",fstype!=""} / node_filesystem_files{job="node",fstype!=""} * 100 < 40
           and predict_linear(node_filesystem_files_free{job="node",fstype!=""}[6h], 24*60*60) < 0
           and node_filesystem_readonly{job="node",fstype!=""} == 0)"#,
        Unit::Plain,
    ),
    (
        "rate(node_network_receive_errs_total[2m]) / rate(node_network_receive_packets_total[2m]) > 0.01",
        Unit::Plain,
    ),
    (
        "(node_nf_conntrack_entries / node_nf_conntrack_entries_limit) > 0.75",
        Unit::Plain,
    ),
    (
        r#"node_textfile_scrape_error{job="node"} == 1"#,
        Unit::Plain,
    ),
    (
        r#"(node_timex_offset_seconds{job="node"} > 0.05 and deriv(node_timex_offset_seconds{job="node"}[5m]) >= 0)
           or (node_timex_offset_seconds{job="node"} < -0.05 and deriv(node_timex_offset_seconds{job="node"}[5m]) <= 0)"#,
        Unit::Seconds,
    ),
    (
        r#"min_over_time(node_timex_sync_status{job="node"}[5m]) == 0 and node_timex_maxerror_seconds{job="node"} >= 16"#,
        Unit::Plain,
    ),
    (
        r#"node_md_disks_required{job="node",device=~"(/dev/)?(sd.+)"} - ignoring (state) (node_md_disks{state="active",job="node",device=~"(/dev/)?(sd.+)"}) > 0"#,
        Unit::Plain,
    ),
    (
        r#"(node_filefd_allocated{job="node"} * 100 / node_filefd_maximum{job="node"} > 70)"#,
        Unit::Plain,
    ),
];

const KUBERNETES_MIXIN: &[(&str, Unit)] = &[
    (
        r#"(kubelet_volume_stats_available_bytes{job="kubelet"} / kubelet_volume_stats_capacity_bytes{job="kubelet"}) < 0.03
           and kubelet_volume_stats_used_bytes{job="kubelet"} > 0
           unless on(namespace, persistentvolumeclaim) kube_persistentvolumeclaim_access_mode{access_mode="ReadOnlyMany"} == 1
           unless on(namespace, persistentvolumeclaim) kube_persistentvolumeclaim_labels{label_excluded_from_alerts="true"} == 1"#,
        Unit::Plain,
    ),
    (
        r#"(kubelet_volume_stats_available_bytes{job="kubelet"} / kubelet_volume_stats_capacity_bytes{job="kubelet"}) < 0.15
           and kubelet_volume_stats_used_bytes{job="kubelet"} > 0
           and predict_linear(kubelet_volume_stats_available_bytes{job="kubelet"}[6h], 4 * 24 * 3600) < 0"#,
        Unit::Plain,
    ),
    (
        r#"kube_persistentvolume_status_phase{phase=~"Failed|Pending",job="kube-state-metrics"} > 0"#,
        Unit::Plain,
    ),
    (
        r#"kube_node_status_condition{job="kube-state-metrics",condition="Ready",status="true"} == 0"#,
        Unit::Plain,
    ),
    (
        r#"count by(cluster, node) (
             (kube_pod_status_phase{job="kube-state-metrics",phase="Running"} == 1) * on(instance,pod,namespace,cluster) group_left(node) topk by(instance,pod,namespace,cluster) (1, kube_pod_info{job="kube-state-metrics"})
           ) / max by(cluster, node) (kube_node_status_capacity{job="kube-state-metrics",resource="pods"} != 1) > 0.95"#,
        Unit::Plain,
    ),
    (
        r#"sum(changes(kube_node_status_condition{job="kube-state-metrics",status="true",condition="Ready"}[15m])) by (cluster, node) > 2"#,
        Unit::Plain,
    ),
    (
        r#"node_quantile:kubelet_pleg_relist_duration_seconds:histogram_quantile{quantile="0.99"} >= 10"#,
        Unit::Seconds,
    ),
    (
        r#"histogram_quantile(0.99, sum(rate(kubelet_pod_worker_duration_seconds_bucket{job="kubelet"}[5m])) by (cluster, instance, le)) * on(cluster, instance) group_left(node) kubelet_node_name{job="kubelet"} > 60"#,
        Unit::Seconds,
    ),
    (
        "kubelet_certificate_manager_client_ttl_seconds < 604800",
        Unit::Seconds,
    ),
    (
        "increase(kubelet_certificate_manager_client_expiration_renew_errors[5m]) > 0",
        Unit::Plain,
    ),
    (
        r#"sum(namespace_memory:kube_pod_container_resource_requests:sum{}) - (sum(kube_node_status_allocatable{resource="memory"}) - max(kube_node_status_allocatable{resource="memory"})) > 0
           and (sum(kube_node_status_allocatable{resource="memory"}) - max(kube_node_status_allocatable{resource="memory"})) > 0"#,
        Unit::Plain,
    ),
    (
        r#"kube_resourcequota{job="kube-state-metrics", type="used"} / ignoring(instance, job, type) (kube_resourcequota{job="kube-state-metrics", type="hard"} > 0) > 0.9 < 1"#,
        Unit::Plain,
    ),
    (
        r#"sum(increase(container_cpu_cfs_throttled_periods_total{container!=""}[5m])) by (container, pod, namespace)
           / sum(increase(container_cpu_cfs_periods_total{}[5m])) by (container, pod, namespace) > ( 25 / 100 )"#,
        Unit::Plain,
    ),
];

const AWESOME_PROMETHEUS_ALERTS: &[(&str, Unit)] = &[
    (
        "(node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < .10)",
        Unit::Plain,
    ),
    ("(rate(node_vmstat_pgmajfault[5m]) > 1000)", Unit::Plain),
    (
        "min_over_time(node_memory_MemFree_bytes[1w]) > node_memory_MemTotal_bytes * .8",
        Unit::Bytes,
    ),
    (
        "((rate(node_network_receive_bytes_total[5m]) / on(instance, device) node_network_speed_bytes) > .80)",
        Unit::Plain,
    ),
    (
        "(rate(node_disk_io_time_seconds_total[5m]) > .80)",
        Unit::Plain,
    ),
    (
        r#"predict_linear(node_filesystem_avail_bytes{fstype!~"^(fuse.*|tmpfs|cifs|nfs)"}[3h], 86400) <= 0 and node_filesystem_avail_bytes > 0"#,
        Unit::Bytes,
    ),
    (
        "(rate(node_disk_read_time_seconds_total[1m]) / rate(node_disk_reads_completed_total[1m]) > 0.1 and rate(node_disk_reads_completed_total[1m]) > 0)",
        Unit::Seconds,
    ),
    (
        r#"1 - (avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m]))) > .80"#,
        Unit::Plain,
    ),
    (
        r#"avg by(instance) (rate(node_cpu_seconds_total{mode="steal"}[5m])) * 100 > 10"#,
        Unit::Percent,
    ),
    (
        r#"(rate(node_context_switches_total[15m])/count without(mode,cpu) (node_cpu_seconds_total{mode="idle"})) / (rate(node_context_switches_total[1d])/count without(mode,cpu) (node_cpu_seconds_total{mode="idle"})) > 2"#,
        Unit::Plain,
    ),
    (
        "((1 - (node_memory_SwapFree_bytes / node_memory_SwapTotal_bytes)) * 100 > 80)",
        Unit::Percent,
    ),
    (
        "node_hwmon_temp_celsius > node_hwmon_temp_max_celsius",
        Unit::Celsius,
    ),
    (
        "((node_hwmon_temp_crit_alarm_celsius == 1) or (node_hwmon_temp_alarm == 1))",
        Unit::Plain,
    ),
    ("changes(node_uname_info[1h]) > 0", Unit::Plain),
    (
        "(increase(node_edac_correctable_errors_total[1m]) > 0)",
        Unit::Plain,
    ),
    ("probe_success == 0", Unit::Plain),
    (
        "avg_over_time(probe_duration_seconds[1m]) > 1",
        Unit::Seconds,
    ),
    (
        "probe_http_status_code <= 199 OR probe_http_status_code >= 400",
        Unit::Plain,
    ),
    (
        "3 <= round((last_over_time(probe_ssl_earliest_cert_expiry[10m]) - time()) / 86400, 0.1) < 20",
        Unit::Days,
    ),
    (
        "round((last_over_time(probe_ssl_earliest_cert_expiry[10m]) - time()) / 86400, 0.1) < 0",
        Unit::Days,
    ),
];

#[test]
fn published_alert_expressions_get_the_unit_their_metrics_and_operators_give() {
    for (source, cases) in [
        ("node-mixin", NODE_MIXIN),
        ("kubernetes-mixin", KUBERNETES_MIXIN),
        ("awesome-prometheus-alerts", AWESOME_PROMETHEUS_ALERTS),
    ] {
        for (q, want) in cases {
            assert_eq!(unit_of(q), *want, "{source}: {q}");
        }
    }
}

#[test]
fn every_cut_of_a_published_expression_is_read_without_panicking() {
    for (q, _) in NODE_MIXIN
        .iter()
        .chain(KUBERNETES_MIXIN)
        .chain(AWESOME_PROMETHEUS_ALERTS)
    {
        for (i, _) in q.char_indices() {
            // A query cut short (or its tail) is no PromQL or another one: any unit, no panic.
            let _ = unit_of(&q[..i]);
            let _ = unit_of(&q[i..]);
        }
    }
}
