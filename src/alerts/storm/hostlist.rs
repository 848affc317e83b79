//! Hostlist notation for the groups of a storm: `host[0-199]:9100` names 200 instances in
//! a few characters, so a storm's investigation can name every affected instance.

use std::collections::BTreeMap;

/// Values in hostlist notation: `host[1-3,7]:9100, db[01-02], nas`. Values with the same
/// text around their numbers are folded on the last number that differs among them; names
/// every value in a few characters.
pub fn compact_values<'a>(values: impl IntoIterator<Item = &'a str>) -> String {
    // Values by shape: their text parts (the digit runs between them vary).
    let mut shapes: BTreeMap<Vec<&'a str>, Vec<Vec<&'a str>>> = BTreeMap::new();
    for v in values {
        let (texts, runs) = split_runs(v);
        shapes.entry(texts).or_default().push(runs);
    }
    let mut out: Vec<String> = Vec::new();
    for (texts, mut all) in shapes {
        all.sort_unstable();
        all.dedup();
        let varying = (0..texts.len() - 1)
            .rev()
            .find(|&p| all.iter().any(|r| r[p] != all[0][p]));
        let Some(p) = varying else {
            out.push(join_runs(&texts, &all[0]));
            continue;
        };
        // (the other runs, zero-padded width) -> numbers at `p`.
        let mut folds: BTreeMap<(Vec<&str>, usize), Vec<u64>> = BTreeMap::new();
        for runs in &all {
            let digits = runs[p];
            let width = if digits.len() > 1 && digits.starts_with('0') {
                digits.len()
            } else {
                0
            };
            let mut rest = runs.clone();
            rest[p] = "";
            match digits.parse::<u64>() {
                Ok(n) => folds.entry((rest, width)).or_default().push(n),
                Err(_) => out.push(join_runs(&texts, runs)),
            }
        }
        for ((rest, width), mut numbers) in folds {
            numbers.sort_unstable();
            let mut ranges = Vec::new();
            let mut start = numbers[0];
            let mut prev = start;
            for &n in &numbers[1..] {
                if prev.checked_add(1) != Some(n) {
                    ranges.push(range(start, prev, width));
                    start = n;
                }
                prev = n;
            }
            ranges.push(range(start, prev, width));
            let folded = match ranges.len() == 1 && start == numbers[0] && start == prev {
                true => ranges.remove(0),
                false => format!("[{}]", ranges.join(",")),
            };
            let mut runs = rest;
            runs[p] = &folded;
            out.push(join_runs(&texts, &runs));
        }
    }
    out.join(", ")
}

fn range(start: u64, end: u64, width: usize) -> String {
    if start == end {
        format!("{start:0width$}")
    } else {
        format!("{start:0width$}-{end:0width$}")
    }
}

/// `host12:9100` → (["host", ":", ""], ["12", "9100"]): texts around the digit runs.
fn split_runs(v: &str) -> (Vec<&str>, Vec<&str>) {
    let mut texts = Vec::new();
    let mut runs = Vec::new();
    let mut start = 0;
    let mut in_digits = false;
    for (i, c) in v.char_indices() {
        let digit = c.is_ascii_digit();
        if digit != in_digits {
            if in_digits {
                runs.push(&v[start..i]);
            } else {
                texts.push(&v[start..i]);
            }
            start = i;
            in_digits = digit;
        }
    }
    if in_digits {
        runs.push(&v[start..]);
        texts.push("");
    } else {
        texts.push(&v[start..]);
    }
    (texts, runs)
}

fn join_runs(texts: &[&str], runs: &[&str]) -> String {
    let mut s = String::new();
    for (i, t) in texts.iter().enumerate() {
        s.push_str(t);
        if let Some(r) = runs.get(i) {
            s.push_str(r);
        }
    }
    s
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use proptest::test_runner::{Config, TestRunner};

    use super::*;

    #[test]
    fn arbitrary_utf8_values_are_compacted_without_losing_any() {
        let value = prop_oneof![
            any::<String>(),
            (
                proptest::sample::select(vec!["", "host", "é", "日本-", "db"]),
                any::<u64>(),
                0usize..3,
                proptest::sample::select(vec!["", ":9100", "é7", "."]),
            )
                .prop_map(|(a, n, zeros, b)| format!("{a}{}{n}{b}", "0".repeat(zeros))),
            Just("18446744073709551615".to_string()),
            Just("host18446744073709551614".to_string()),
        ];
        let values = proptest::collection::vec(value, 0..12);
        let config = Config {
            cases: 1000,
            failure_persistence: None,
            ..Config::default()
        };
        TestRunner::new(config)
            .run(&values, |values| {
                let out = compact_values(values.iter().map(String::as_str));
                prop_assert_eq!(out.is_empty(), values.iter().all(String::is_empty));
                for v in values
                    .iter()
                    .filter(|v| !v.contains(|c: char| c.is_ascii_digit()))
                {
                    prop_assert!(out.contains(v.as_str()), "{v:?} not in {out:?}");
                }
                Ok(())
            })
            .unwrap();
    }

    #[test]
    fn values_are_compacted_into_hostlist_ranges() {
        let hosts: Vec<String> = (0..200).map(|i| format!("host{i}:9100")).collect();
        assert_eq!(
            compact_values(hosts.iter().map(String::as_str)),
            "host[0-199]:9100"
        );
        let mixed = ["web1", "web2", "web4", "db01", "db02", "nas", "web2"];
        assert_eq!(compact_values(mixed), "db[01-02], nas, web[1-2,4]");
        assert_eq!(compact_values(["pve7"]), "pve7");
        let ips = ["10.0.0.1:9100", "10.0.0.2:9100", "10.0.1.1:9100"];
        assert_eq!(compact_values(ips), "10.0.0.[1-2]:9100, 10.0.1.1:9100");
    }
}
