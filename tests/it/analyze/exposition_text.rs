//! Prometheus exposition text (a captured `/metrics`) read into samples for the capture
//! loader in `world.rs`.

use std::collections::BTreeMap;

/// The samples of an exposition text: name, labels, value, and whether the series counts
/// (a counter, or a histogram's or summary's buckets, sum and count).
pub(super) fn parse_exposition(text: &str) -> Vec<(String, BTreeMap<String, String>, f64, bool)> {
    let mut types: std::collections::HashMap<String, String> = Default::default();
    let mut out = Vec::new();
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("# TYPE ") {
            let mut parts = rest.split_whitespace();
            if let (Some(n), Some(t)) = (parts.next(), parts.next()) {
                types.insert(n.to_string(), t.to_string());
            }
            continue;
        }
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let Some((name, labels, rest)) = split_sample(line) else {
            panic!("unparsable sample line: {line}");
        };
        let value = rest.split_whitespace().next().unwrap_or("");
        let value = match value {
            "NaN" => f64::NAN,
            "+Inf" | "Inf" => f64::INFINITY,
            "-Inf" => f64::NEG_INFINITY,
            v => v.parse().unwrap_or_else(|_| panic!("bad value in: {line}")),
        };
        let counter = match types.get(&name).map(String::as_str) {
            Some("counter") => true,
            Some(_) => false,
            None => ["_bucket", "_sum", "_count"].iter().any(|suffix| {
                name.strip_suffix(suffix).is_some_and(|family| {
                    matches!(
                        types.get(family).map(String::as_str),
                        Some("histogram" | "summary")
                    )
                })
            }),
        };
        out.push((name, labels, value, counter));
    }
    out
}

/// `name{k="v",…} rest` → name, labels (unescaped), rest.
pub(super) fn split_sample(line: &str) -> Option<(String, BTreeMap<String, String>, &str)> {
    let end = line.find(['{', ' ']).unwrap_or(line.len());
    let name = line.get(..end)?.to_string();
    let mut rest = line.get(end..)?;
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        let mut chars = inner.char_indices();
        let mut key = String::new();
        loop {
            let (i, c) = chars.next()?;
            match c {
                '}' => {
                    rest = inner.get(i + 1..)?;
                    break;
                }
                ',' | ' ' => {}
                '=' => {
                    let (_, q) = chars.next()?;
                    if q != '"' {
                        return None;
                    }
                    let mut value = String::new();
                    loop {
                        let (_, c) = chars.next()?;
                        match c {
                            '"' => break,
                            '\\' => match chars.next()?.1 {
                                'n' => value.push('\n'),
                                other => value.push(other),
                            },
                            c => value.push(c),
                        }
                    }
                    labels.insert(std::mem::take(&mut key), value);
                }
                c => key.push(c),
            }
        }
    }
    Some((name, labels, rest.trim()))
}
