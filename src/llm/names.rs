//! Lenient tool names: small models write `Prometheus-Query`, `functions.prometheus_query`,
//! `prometheus_query()` or just `query_range`. A name is matched against the offered tools
//! only when exactly one fits, so a guess never picks between two tools.

/// The offered tool that `raw` names, if exactly one fits: the same name up to case,
/// `-`/space/`.` vs `_` and a `functions.`/`tools.` prefix; else the one offered name that
/// starts or ends with it at a `_` boundary; else the longest offered name that it starts
/// or ends with.
pub fn match_tool_name<'a>(raw: &str, offered: &[&'a str]) -> Option<&'a str> {
    if let Some(exact) = offered.iter().find(|o| **o == raw) {
        return Some(exact);
    }
    let n = normalize(raw);
    if n.is_empty() {
        return None;
    }
    let normalized: Vec<(&'a str, String)> = offered.iter().map(|o| (*o, normalize(o))).collect();
    let same: Vec<&'a str> = normalized
        .iter()
        .filter(|(_, on)| *on == n)
        .map(|(o, _)| *o)
        .collect();
    if let [one] = same[..] {
        return Some(one);
    }
    if n.len() < 4 {
        return None;
    }
    // The model shortened the name: `query_range` for `prometheus_query_range`.
    let shortened: Vec<&'a str> = normalized
        .iter()
        .filter(|(_, on)| on.starts_with(&format!("{n}_")) || on.ends_with(&format!("_{n}")))
        .map(|(o, _)| *o)
        .collect();
    if let [one] = shortened[..] {
        return Some(one);
    }
    if !shortened.is_empty() {
        return None;
    }
    // The model added words: `prometheus_query_tool`; the longest offered name wins.
    let mut longer: Vec<(&'a str, usize)> = normalized
        .iter()
        .filter(|(_, on)| n.starts_with(&format!("{on}_")) || n.ends_with(&format!("_{on}")))
        .map(|(o, on)| (*o, on.len()))
        .collect();
    longer.sort_by_key(|(_, len)| std::cmp::Reverse(*len));
    match longer[..] {
        [(one, _)] => Some(one),
        [(a, la), (_, lb), ..] if la > lb => Some(a),
        _ => None,
    }
}

/// Lower case, known namespace prefixes dropped, every run of other characters one `_`.
fn normalize(name: &str) -> String {
    let lower = name.trim().to_lowercase();
    let mut s = lower.as_str();
    for prefix in ["functions.", "function.", "tools.", "tool.", "default_api."] {
        if let Some(rest) = s.strip_prefix(prefix) {
            s = rest;
        }
    }
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii_alphanumeric() {
            out.push(c);
        } else if !out.ends_with('_') {
            out.push('_');
        }
    }
    out.trim_matches('_').to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    const OFFERED: &[&str] = &[
        "prometheus_query",
        "prometheus_query_range",
        "prometheus_metric_names",
        "proxmox_storage",
        "loki_query",
        "current_time",
    ];

    #[test]
    fn spelling_variants_of_an_offered_name_match_it() {
        for (raw, want) in [
            ("prometheus_query", "prometheus_query"),
            ("Prometheus-Query", "prometheus_query"),
            ("functions.prometheus_query", "prometheus_query"),
            ("tools.current_time", "current_time"),
            ("prometheus_query()", "prometheus_query"),
            ("current time", "current_time"),
            ("query_range", "prometheus_query_range"),
            ("metric_names", "prometheus_metric_names"),
            ("proxmox", "proxmox_storage"),
            ("prometheus_query_range_tool", "prometheus_query_range"),
            ("get_current_time", "current_time"),
            ("time", "current_time"),
        ] {
            assert_eq!(match_tool_name(raw, OFFERED), Some(want), "{raw}");
        }
    }

    #[test]
    fn ambiguous_or_unknown_names_match_nothing() {
        for raw in ["query", "prometheus", "kubectl", "", "summary"] {
            assert_eq!(match_tool_name(raw, OFFERED), None, "{raw}");
        }
    }
}
