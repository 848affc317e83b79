//! Published alerting rules, copied as they are shipped: the node-mixin's
//! (`prometheus/node_exporter` `docs/node-mixin/alerts/alerts.libsonnet`, rendered with the
//! mixin's default selectors `job="node"`, `fstype!=""`, `mountpoint!=""`, `device!=""`)
//! and awesome-prometheus-alerts' (`samber/awesome-prometheus-alerts` `dist/rules/`:
//! `host-and-hardware/node-exporter.yml`, `blackbox/blackbox-exporter.yml`,
//! `prometheus-self-monitoring/embedded-exporter.yml`), with the value side and the metric
//! names the evidence planner should read from each.

/// One published rule: where it comes from, its `expr`, the value side without the
/// threshold, and the metric names it reads.
pub struct RealRule {
    pub name: &'static str,
    pub expr: &'static str,
    pub value: &'static str,
    pub metrics: &'static [&'static str],
    /// Whether the alert fires when the value falls below its threshold.
    pub below: bool,
}

pub const REAL_RULES: &[RealRule] = &[
    RealRule {
        name: "node-mixin NodeFilesystemSpaceFillingUp",
        expr: r#"(
  node_filesystem_avail_bytes{job="node",fstype!="",mountpoint!=""} / node_filesystem_size_bytes{job="node",fstype!="",mountpoint!=""} * 100 < 15
and
  predict_linear(node_filesystem_avail_bytes{job="node",fstype!="",mountpoint!=""}[6h], 24*60*60) < 0
and
  node_filesystem_readonly{job="node",fstype!="",mountpoint!=""} == 0
)
"#,
        value: r#"node_filesystem_avail_bytes{job="node",fstype!="",mountpoint!=""} / node_filesystem_size_bytes{job="node",fstype!="",mountpoint!=""} * 100"#,
        metrics: &[
            "node_filesystem_avail_bytes",
            "node_filesystem_size_bytes",
            "node_filesystem_readonly",
        ],
        below: true,
    },
    RealRule {
        name: "node-mixin NodeFilesystemAlmostOutOfFiles",
        expr: r#"(
  node_filesystem_files_free{job="node",fstype!="",mountpoint!=""} / node_filesystem_files{job="node",fstype!="",mountpoint!=""} * 100 < 5
and
  node_filesystem_readonly{job="node",fstype!="",mountpoint!=""} == 0
)
"#,
        value: r#"node_filesystem_files_free{job="node",fstype!="",mountpoint!=""} / node_filesystem_files{job="node",fstype!="",mountpoint!=""} * 100"#,
        metrics: &[
            "node_filesystem_files_free",
            "node_filesystem_files",
            "node_filesystem_readonly",
        ],
        below: true,
    },
    RealRule {
        name: "node-mixin NodeNetworkReceiveErrs",
        expr: "rate(node_network_receive_errs_total[2m]) / rate(node_network_receive_packets_total[2m]) > 0.01\n",
        value: "rate(node_network_receive_errs_total[2m]) / rate(node_network_receive_packets_total[2m])",
        metrics: &[
            "node_network_receive_errs_total",
            "node_network_receive_packets_total",
        ],
        below: false,
    },
    RealRule {
        name: "node-mixin NodeHighNumberConntrackEntriesUsed",
        expr: "(node_nf_conntrack_entries / node_nf_conntrack_entries_limit) > 0.75\n",
        value: "node_nf_conntrack_entries / node_nf_conntrack_entries_limit",
        metrics: &[
            "node_nf_conntrack_entries",
            "node_nf_conntrack_entries_limit",
        ],
        below: false,
    },
    RealRule {
        name: "node-mixin NodeClockSkewDetected",
        expr: r#"(
  node_timex_offset_seconds{job="node"} > 0.05
and
  deriv(node_timex_offset_seconds{job="node"}[5m]) >= 0
)
or
(
  node_timex_offset_seconds{job="node"} < -0.05
and
  deriv(node_timex_offset_seconds{job="node"}[5m]) <= 0
)
"#,
        value: r#"node_timex_offset_seconds{job="node"}"#,
        metrics: &["node_timex_offset_seconds"],
        below: false,
    },
    RealRule {
        name: "node-mixin NodeClockNotSynchronising",
        expr: r#"min_over_time(node_timex_sync_status{job="node"}[5m]) == 0
and
node_timex_maxerror_seconds{job="node"} >= 16
"#,
        value: r#"min_over_time(node_timex_sync_status{job="node"}[5m])"#,
        metrics: &["node_timex_sync_status", "node_timex_maxerror_seconds"],
        below: false,
    },
    RealRule {
        name: "node-mixin NodeRAIDDegraded",
        expr: r#"node_md_disks_required{job="node",device!=""} - ignoring (state) (node_md_disks{state="active",job="node",device!=""}) > 0
"#,
        value: r#"node_md_disks_required{job="node",device!=""} - ignoring (state) (node_md_disks{state="active",job="node",device!=""})"#,
        metrics: &["node_md_disks_required", "node_md_disks"],
        below: false,
    },
    RealRule {
        name: "node-mixin NodeFileDescriptorLimit",
        expr: r#"(
  node_filefd_allocated{job="node"} * 100 / node_filefd_maximum{job="node"} > 70
)
"#,
        value: r#"node_filefd_allocated{job="node"} * 100 / node_filefd_maximum{job="node"}"#,
        metrics: &["node_filefd_allocated", "node_filefd_maximum"],
        below: false,
    },
    RealRule {
        name: "awesome HostOutOfMemory",
        expr: "(node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes < .10)",
        value: "node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes",
        metrics: &[
            "node_memory_MemAvailable_bytes",
            "node_memory_MemTotal_bytes",
        ],
        below: true,
    },
    RealRule {
        name: "awesome HostMemoryIsUnderutilized",
        expr: "min_over_time(node_memory_MemFree_bytes[1w]) > node_memory_MemTotal_bytes * .8",
        value: "min_over_time(node_memory_MemFree_bytes[1w]) > node_memory_MemTotal_bytes * .8",
        metrics: &["node_memory_MemFree_bytes", "node_memory_MemTotal_bytes"],
        below: false,
    },
    RealRule {
        name: "awesome HostUnusualNetworkThroughputIn",
        expr: "((rate(node_network_receive_bytes_total[5m]) / on(instance, device) node_network_speed_bytes) > .80)",
        value: "rate(node_network_receive_bytes_total[5m]) / on(instance, device) node_network_speed_bytes",
        metrics: &[
            "node_network_receive_bytes_total",
            "node_network_speed_bytes",
        ],
        below: false,
    },
    RealRule {
        name: "awesome HostOutOfDiskSpace",
        expr: r#"(node_filesystem_avail_bytes{fstype!~"^(fuse.*|tmpfs|cifs|nfs)"} / node_filesystem_size_bytes < .10 and on (instance, device, mountpoint) node_filesystem_readonly == 0)"#,
        value: r#"node_filesystem_avail_bytes{fstype!~"^(fuse.*|tmpfs|cifs|nfs)"} / node_filesystem_size_bytes"#,
        metrics: &[
            "node_filesystem_avail_bytes",
            "node_filesystem_size_bytes",
            "node_filesystem_readonly",
        ],
        below: true,
    },
    RealRule {
        name: "awesome HostDiskMayFillIn24Hours",
        expr: r#"predict_linear(node_filesystem_avail_bytes{fstype!~"^(fuse.*|tmpfs|cifs|nfs)"}[3h], 86400) <= 0 and node_filesystem_avail_bytes > 0"#,
        value: r#"predict_linear(node_filesystem_avail_bytes{fstype!~"^(fuse.*|tmpfs|cifs|nfs)"}[3h], 86400)"#,
        metrics: &["node_filesystem_avail_bytes"],
        below: true,
    },
    RealRule {
        name: "awesome HostOutOfInodes",
        expr: "(node_filesystem_files_free / node_filesystem_files < .10 and ON (instance, device, mountpoint) node_filesystem_readonly == 0)",
        value: "node_filesystem_files_free / node_filesystem_files",
        metrics: &[
            "node_filesystem_files_free",
            "node_filesystem_files",
            "node_filesystem_readonly",
        ],
        below: true,
    },
    RealRule {
        name: "awesome HostUnusualDiskReadLatency",
        expr: "(rate(node_disk_read_time_seconds_total[1m]) / rate(node_disk_reads_completed_total[1m]) > 0.1 and rate(node_disk_reads_completed_total[1m]) > 0)",
        value: "rate(node_disk_read_time_seconds_total[1m]) / rate(node_disk_reads_completed_total[1m])",
        metrics: &[
            "node_disk_read_time_seconds_total",
            "node_disk_reads_completed_total",
        ],
        below: false,
    },
    RealRule {
        name: "awesome HostHighCpuLoad",
        expr: r#"1 - (avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m]))) > .80"#,
        value: r#"1 - (avg by (instance) (rate(node_cpu_seconds_total{mode="idle"}[5m])))"#,
        metrics: &["node_cpu_seconds_total"],
        below: false,
    },
    RealRule {
        name: "awesome HostContextSwitchingHigh",
        expr: r#"(rate(node_context_switches_total[15m])/count without(mode,cpu) (node_cpu_seconds_total{mode="idle"})) / (rate(node_context_switches_total[1d])/count without(mode,cpu) (node_cpu_seconds_total{mode="idle"})) > 2"#,
        value: r#"(rate(node_context_switches_total[15m])/count without(mode,cpu) (node_cpu_seconds_total{mode="idle"})) / (rate(node_context_switches_total[1d])/count without(mode,cpu) (node_cpu_seconds_total{mode="idle"}))"#,
        metrics: &["node_context_switches_total", "node_cpu_seconds_total"],
        below: false,
    },
    RealRule {
        name: "awesome HostSwapIsFillingUp",
        expr: "((1 - (node_memory_SwapFree_bytes / node_memory_SwapTotal_bytes)) * 100 > 80)",
        value: "(1 - (node_memory_SwapFree_bytes / node_memory_SwapTotal_bytes)) * 100",
        metrics: &["node_memory_SwapFree_bytes", "node_memory_SwapTotal_bytes"],
        below: false,
    },
    RealRule {
        name: "awesome HostNodeOvertemperatureAlarm",
        expr: "((node_hwmon_temp_crit_alarm_celsius == 1) or (node_hwmon_temp_alarm == 1))",
        value: "node_hwmon_temp_crit_alarm_celsius",
        metrics: &[
            "node_hwmon_temp_crit_alarm_celsius",
            "node_hwmon_temp_alarm",
        ],
        below: false,
    },
    RealRule {
        name: "awesome HostClockSkew",
        expr: "((node_timex_offset_seconds > 0.05 and deriv(node_timex_offset_seconds[5m]) >= 0) or (node_timex_offset_seconds < -0.05 and deriv(node_timex_offset_seconds[5m]) <= 0))",
        value: "node_timex_offset_seconds",
        metrics: &["node_timex_offset_seconds"],
        below: false,
    },
    RealRule {
        name: "awesome HostSoftwareRaidInsufficientDrives",
        expr: r#"((node_md_disks_required - on(device, instance) node_md_disks{state="active"}) > 0)"#,
        value: r#"node_md_disks_required - on(device, instance) node_md_disks{state="active"}"#,
        metrics: &["node_md_disks_required", "node_md_disks"],
        below: false,
    },
    RealRule {
        name: "awesome BlackboxProbeHttpFailure",
        expr: "probe_http_status_code <= 199 OR probe_http_status_code >= 400",
        value: "probe_http_status_code",
        metrics: &["probe_http_status_code"],
        below: true,
    },
    RealRule {
        name: "awesome BlackboxSslCertificateWillExpireSoon",
        expr: "3 <= round((last_over_time(probe_ssl_earliest_cert_expiry[10m]) - time()) / 86400, 0.1) < 20",
        value: "round((last_over_time(probe_ssl_earliest_cert_expiry[10m]) - time()) / 86400, 0.1)",
        metrics: &["probe_ssl_earliest_cert_expiry"],
        below: true,
    },
    RealRule {
        name: "awesome PrometheusJobMissing",
        expr: r#"absent(up{job="prometheus"})"#,
        value: r#"absent(up{job="prometheus"})"#,
        metrics: &["up"],
        below: false,
    },
    RealRule {
        name: "awesome PrometheusTargetMissingWithWarmupTime",
        expr: "sum by (instance, job) ((up == 0) * on (instance) group_left(__name__) (node_time_seconds - node_boot_time_seconds > 600))",
        value: "sum by (instance, job) ((up == 0) * on (instance) group_left(__name__) (node_time_seconds - node_boot_time_seconds > 600))",
        metrics: &["up", "node_time_seconds", "node_boot_time_seconds"],
        below: false,
    },
    RealRule {
        name: "awesome PrometheusAlertmanagerConfigNotSynced",
        expr: r#"count(count_values("config_hash", alertmanager_config_hash)) > 1"#,
        value: r#"count(count_values("config_hash", alertmanager_config_hash))"#,
        metrics: &["alertmanager_config_hash"],
        below: false,
    },
    RealRule {
        name: "awesome PrometheusTimeseriesCardinality",
        expr: r#"label_replace(count by(__name__) ({__name__=~".+"}), "name", "$1", "__name__", "(.+)") > 10000"#,
        value: r#"label_replace(count by(__name__) ({__name__=~".+"}), "name", "$1", "__name__", "(.+)")"#,
        metrics: &[],
        below: false,
    },
    RealRule {
        name: "awesome PrometheusTargetScrapingSlow",
        expr: r#"prometheus_target_interval_length_seconds{quantile="0.9"} / on (interval, instance, job) prometheus_target_interval_length_seconds{quantile="0.5"} > 1.05"#,
        value: r#"prometheus_target_interval_length_seconds{quantile="0.9"} / on (interval, instance, job) prometheus_target_interval_length_seconds{quantile="0.5"}"#,
        metrics: &["prometheus_target_interval_length_seconds"],
        below: false,
    },
    RealRule {
        name: "a Grafana-managed rule's query with comments in German",
        expr: "# Überwachung des Speichers (RAM) — siehe Wiki\n100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes) # Anteil belegt\n  > 90 # Schwelle: 90 %\n",
        value: "100 * (1 - node_memory_MemAvailable_bytes / node_memory_MemTotal_bytes)",
        metrics: &[
            "node_memory_MemAvailable_bytes",
            "node_memory_MemTotal_bytes",
        ],
        below: false,
    },
];
