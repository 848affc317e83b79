//! Reading a Prometheus exposition text (an exporter's captured `/metrics`) into series,
//! so a test world can hold every series a real exporter emits.

use std::collections::BTreeMap;

/// The series of an exposition text as `(name, labels, value)`: comments and blank lines
/// skipped, label values unescaped.
pub fn exposition(text: &str) -> Vec<(String, BTreeMap<String, String>, f64)> {
    let mut out = Vec::new();
    for line in text.lines().map(str::trim) {
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let (name, rest) = match line.find(['{', ' ']) {
            Some(i) => line.split_at(i),
            None => continue,
        };
        let mut labels = BTreeMap::new();
        let mut rest = rest;
        if let Some(body) = rest.strip_prefix('{') {
            let mut chars = body.char_indices();
            let mut key = String::new();
            let mut end = body.len();
            while let Some((i, c)) = chars.next() {
                match c {
                    '}' => {
                        end = i + 1;
                        break;
                    }
                    ',' | ' ' => {}
                    '=' => {
                        chars.next(); // the opening quote
                        let mut value = String::new();
                        while let Some((_, c)) = chars.next() {
                            match c {
                                '\\' => match chars.next().map(|(_, c)| c) {
                                    Some('n') => value.push('\n'),
                                    Some(other) => value.push(other),
                                    None => {}
                                },
                                '"' => break,
                                c => value.push(c),
                            }
                        }
                        labels.insert(std::mem::take(&mut key), value);
                    }
                    c => key.push(c),
                }
            }
            rest = &body[end..];
        }
        let Some(value) = rest
            .split_whitespace()
            .next()
            .and_then(|v| v.parse::<f64>().ok())
        else {
            continue;
        };
        out.push((name.to_string(), labels, value));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::exposition;

    #[test]
    fn the_exposition_reader_keeps_every_series_of_the_capture_with_its_labels() {
        let s = exposition(include_str!(
            "../../fixtures/exporters/kube_state_metrics.prom"
        ));
        assert_eq!(s.len(), 265);
        let (name, labels, value) = &s[30];
        assert_eq!(name, "kube_pod_status_phase");
        assert_eq!(labels["namespace"], "monitoring");
        assert_eq!(*value, 0.0);
        let tricky = exposition("m{a=\"x\\\"y,z}\",b=\"\"} 2.5 1700000000\n");
        assert_eq!(tricky[0].1["a"], "x\"y,z}");
        assert_eq!(tricky[0].1["b"], "");
        assert_eq!(tricky[0].2, 2.5);
    }
}
