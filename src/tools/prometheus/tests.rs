//! Unit tests of the Prometheus tools.

use super::*;

#[test]
fn instance_values_become_an_escaped_regex_alternative_inside_a_promql_string() {
    let values = ["pve1:9100", "a.b|c", "pve1:9100", "q\"x"];
    assert_eq!(
        alternatives(values.into_iter()),
        r#"a\\.b\\|c|pve1:9100|q\"x"#
    );
}

#[test]
fn auto_step_keeps_ranges_at_most_250_points() {
    for (range, want) in [(3600, 15), (86400, 600), (7 * 86400, 3600), (60, 1)] {
        let step = auto_step(Duration::from_secs(range));
        assert_eq!(step.as_secs(), want, "range {range}");
        assert!(range as f64 / step.as_secs_f64() <= MAX_POINTS);
    }
}
