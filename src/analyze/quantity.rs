//! Values with units, as analyzers and tools compute them: the unit comes from the metric's
//! type and name (`_bytes`, `_seconds`, a ratio), never from guessing at rendered text, and
//! each quantity renders itself the one way a person reads it (`60.0 GiB`, `94.1 %`, `3.2 h`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// What a number counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Unit {
    Bytes,
    /// 0–100.
    Percent,
    Seconds,
    /// A plain count (pods, errors, restarts).
    Count,
    BytesPerSecond,
    /// Events per second (errors, drops, requests).
    PerSecond,
    /// A number without a unit (an HTTP status code, a version).
    Plain,
    Volts,
    Amperes,
    Celsius,
    Watts,
    Joules,
    Hertz,
}

/// A value and its unit.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Quantity {
    pub value: f64,
    pub unit: Unit,
}

impl Quantity {
    pub fn new(value: f64, unit: Unit) -> Self {
        Self { value, unit }
    }

    /// A value of metric `name` in the unit its name states (Prometheus' naming: base
    /// units as suffixes): `_bytes` bytes, `_seconds` seconds, `_percent` and `_pct`
    /// percent, a `_ratio` between 0 and 1 as percent, `_volts`, `_amperes`, `_celsius`,
    /// `_watts`, `_joules`, `_hertz` in their units, else a plain number.
    pub fn of_metric(name: &str, value: f64) -> Self {
        const SUFFIXES: [(&str, Unit); 10] = [
            ("_bytes", Unit::Bytes),
            ("_seconds", Unit::Seconds),
            ("_percent", Unit::Percent),
            ("_pct", Unit::Percent),
            ("_volts", Unit::Volts),
            ("_amperes", Unit::Amperes),
            ("_celsius", Unit::Celsius),
            ("_watts", Unit::Watts),
            ("_joules", Unit::Joules),
            ("_hertz", Unit::Hertz),
        ];
        if name.ends_with("_ratio") && (0.0..=1.0).contains(&value) {
            return Self::percent(100.0 * value);
        }
        // An alarm is a flag whatever unit its sensor has (node_exporter's hwmon names
        // `in0_lcrit_alarm` `node_hwmon_in_lcrit_alarm_volts`: 1 is raised, not 1 V).
        if is_alarm(name) {
            return Self::new(value, Unit::Plain);
        }
        let unit = SUFFIXES
            .iter()
            .find(|(suffix, _)| name.ends_with(suffix))
            .map_or(Unit::Plain, |(_, u)| *u);
        Self::new(value, unit)
    }

    /// The per-second rate of counter `name` in the unit its name states:
    /// `_bytes_total` bytes a second, else events a second (`_seconds_total` is seconds a
    /// second: a share of one, shown as a plain rate).
    pub fn rate_of_counter(name: &str, per_second: f64) -> Self {
        match name.ends_with("_bytes_total") {
            true => Self::new(per_second, Unit::BytesPerSecond),
            false => Self::new(per_second, Unit::PerSecond),
        }
    }

    pub fn bytes(value: f64) -> Self {
        Self::new(value, Unit::Bytes)
    }

    pub fn percent(value: f64) -> Self {
        Self::new(value, Unit::Percent)
    }

    pub fn seconds(value: f64) -> Self {
        Self::new(value, Unit::Seconds)
    }

    pub fn count(value: f64) -> Self {
        Self::new(value, Unit::Count)
    }
}

/// Whether metric `name` is an alarm flag (`_alarm` as a word of it: 0 clear, 1 raised).
pub fn is_alarm(name: &str) -> bool {
    name.split('_').any(|w| w == "alarm")
}

/// Whether metric `name` is an identity, not an amount (`probe_ip_addr_hash`,
/// `alertmanager_config_hash`, a `_checksum`): it changes, it does not rise or fall.
pub fn is_identity(name: &str) -> bool {
    name.ends_with("_hash") || name.ends_with("_checksum")
}

impl fmt::Display for Quantity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let v = self.value;
        if !v.is_finite() {
            return write!(f, "{v}");
        }
        match self.unit {
            Unit::Bytes => f.write_str(&human_bytes(v)),
            Unit::BytesPerSecond => write!(f, "{}/s", human_bytes(v)),
            Unit::Percent => write!(f, "{} %", round_sig(v)),
            Unit::Seconds => f.write_str(&human_seconds(v)),
            // Rare events read better per hour or per day (42/h, not 0.0117/s).
            Unit::PerSecond if v != 0.0 && v.abs() * 86400.0 < 100.0 => {
                write!(f, "{}/day", round_sig(v * 86400.0))
            }
            Unit::PerSecond if v.abs() < 0.1 && v != 0.0 => {
                write!(f, "{}/h", round_sig(v * 3600.0))
            }
            Unit::PerSecond => write!(f, "{}/s", round_sig(v)),
            Unit::Count | Unit::Plain => f.write_str(&round_sig(v)),
            Unit::Volts => f.write_str(&si(v, "V")),
            Unit::Amperes => f.write_str(&si(v, "A")),
            Unit::Celsius => write!(f, "{} °C", round_sig(v)),
            Unit::Watts => f.write_str(&si(v, "W")),
            Unit::Joules => f.write_str(&si(v, "J")),
            Unit::Hertz => f.write_str(&si(v, "Hz")),
        }
    }
}

/// `1.5 GiB`, `512 B`: binary units with one decimal.
pub fn human_bytes(v: f64) -> String {
    const UNITS: [&str; 7] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    let sign = if v < 0.0 { "-" } else { "" };
    let mut x = v.abs();
    let mut i = 0;
    while x >= 1024.0 && i + 1 < UNITS.len() {
        x /= 1024.0;
        i += 1;
    }
    match i {
        0 => format!("{sign}{x:.0} B"),
        _ => format!("{sign}{x:.1} {}", UNITS[i]),
    }
}

/// `232 V`, `2.4 GHz`, `1.5 MJ`: a base unit with a decimal prefix from a thousand up.
fn si(v: f64, unit: &str) -> String {
    const PREFIXES: [(f64, &str); 4] = [(1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")];
    match PREFIXES.iter().find(|(p, _)| v.abs() >= *p) {
        Some((p, prefix)) => format!("{} {prefix}{unit}", round_sig(v / p)),
        None => format!("{} {unit}", round_sig(v)),
    }
}

/// `45 s`, `12 min`, `3.2 h`, `2.5 days`: a span the way a person says it.
pub fn human_seconds(v: f64) -> String {
    let sign = if v < 0.0 { "-" } else { "" };
    let s = v.abs();
    if s < 1.0 {
        return format!("{sign}{} ms", round_sig(s * 1000.0));
    }
    if s < 120.0 {
        return format!("{sign}{s:.0} s");
    }
    if s < 2.0 * 3600.0 {
        return format!("{sign}{:.0} min", s / 60.0);
    }
    if s < 72.0 * 3600.0 {
        return format!("{sign}{:.1} h", s / 3600.0);
    }
    format!("{sign}{:.1} days", s / 86400.0)
}

/// A number with about three significant digits, without trailing zeros (`94.1`, `0.0312`,
/// `1234`).
pub fn round_sig(v: f64) -> String {
    if v == 0.0 || !v.is_finite() {
        return format!("{v}");
    }
    let a = v.abs();
    let decimals = if a >= 100.0 {
        0
    } else if a >= 10.0 {
        1
    } else if a >= 1.0 {
        2
    } else {
        // Three significant digits of a small number (bounded: f64 has ~17).
        ((-a.log10()).floor() as usize + 3).min(12)
    };
    let s = format!("{v:.decimals$}");
    match s.contains('.') {
        true => s.trim_end_matches('0').trim_end_matches('.').to_string(),
        false => s,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantities_render_the_way_a_person_reads_them() {
        assert_eq!(Quantity::bytes(64424509440.0).to_string(), "60.0 GiB");
        assert_eq!(Quantity::bytes(512.0).to_string(), "512 B");
        assert_eq!(Quantity::percent(94.14).to_string(), "94.1 %");
        assert_eq!(Quantity::seconds(30.0 * 3600.0).to_string(), "30.0 h");
        assert_eq!(Quantity::seconds(47.0 * 60.0).to_string(), "47 min");
        assert_eq!(Quantity::seconds(5.2 * 86400.0).to_string(), "5.2 days");
        assert_eq!(Quantity::seconds(0.25).to_string(), "250 ms");
        assert_eq!(Quantity::count(3.0).to_string(), "3");
        assert_eq!(Quantity::new(0.312, Unit::PerSecond).to_string(), "0.312/s");
        assert_eq!(Quantity::new(0.0312, Unit::PerSecond).to_string(), "112/h");
        assert_eq!(
            Quantity::new(0.0005, Unit::PerSecond).to_string(),
            "43.2/day"
        );
        assert_eq!(Quantity::new(0.0, Unit::PerSecond).to_string(), "0/s");
        assert_eq!(Quantity::percent(f64::NAN).to_string(), "NaN");
        assert_eq!(round_sig(1e-300), "0");
    }

    #[test]
    fn a_metrics_value_takes_the_unit_its_names_suffix_states() {
        let q = |name: &str, v: f64| Quantity::of_metric(name, v).to_string();
        assert_eq!(q("ipmi_voltage_volts", 232.0), "232 V");
        assert_eq!(q("ipmi_current_amperes", 0.45), "0.45 A");
        assert_eq!(q("node_hwmon_temp_celsius", 71.5), "71.5 °C");
        assert_eq!(q("ipmi_power_watts", 180.0), "180 W");
        assert_eq!(q("node_rapl_package_joules", 12.0), "12 J");
        assert_eq!(q("node_cpu_scaling_frequency_hertz", 2.4e9), "2.4 GHz");
        assert_eq!(q("node_rapl_package_joules", 1.5e6), "1.5 MJ");
        assert_eq!(q("node_memory_MemFree_bytes", 2048.0), "2.0 KiB");
        assert_eq!(q("probe_duration_seconds", 0.25), "250 ms");
        assert_eq!(q("cache_hit_ratio", 0.93), "93 %");
        assert_eq!(q("cache_hit_ratio", 3.0), "3");
        assert_eq!(q("disk_used_pct", 41.0), "41 %");
        assert_eq!(q("battery_charge_percent", 78.0), "78 %");
        assert_eq!(q("node_hwmon_fan_rpm", 2400.0), "2400");
        // A unit in the middle of the name is not the name's unit.
        assert_eq!(q("x_volts_sensor_state", 1.0), "1");
        // An alarm is a flag whatever its sensor's unit.
        assert_eq!(q("node_hwmon_in_lcrit_alarm_volts", 1.0), "1");
        assert_eq!(q("node_hwmon_temp_crit_alarm_celsius", 0.0), "0");
        assert_eq!(q("alarmist_temp_celsius", 30.0), "30 °C");
    }
}
