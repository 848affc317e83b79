//! Which result a claim restates, by its words: a small model cites the chat template's
//! role (`tool_response`), a tool it never called or nothing at all, yet copies its figures
//! and names from one result. Each claim's tokens (numbers, names, words of three or more
//! characters) are weighed by how few results hold them (a word in every result tells
//! nothing), and the result holding the most weight — at least two tokens that not every
//! result holds, and the larger part of the claim's weight — is the one it restates.

use std::collections::{HashMap, HashSet};

use super::CallRecord;

/// The tokens of `text`, lower case: runs of letters, digits, `.`, `_`, `:`, `/` and `-`
/// split at other characters, trimmed of `.`, `-`, `:` and `/` at their ends, of three
/// characters or more, or any with a digit ("5", "93.2").
fn tokens(text: &str) -> HashSet<String> {
    text.split(|c: char| !(c.is_alphanumeric() || matches!(c, '.' | '_' | '/' | '-' | ':')))
        .map(|t| t.trim_matches(|c: char| matches!(c, '.' | '-' | ':' | '/')))
        .filter(|t| t.chars().count() >= 3 || t.chars().any(|c| c.is_ascii_digit()))
        .map(str::to_lowercase)
        .collect()
}

/// The index in `records` of the result `claim` restates, if one stands out.
pub fn restated(claim: &str, records: &[CallRecord]) -> Option<usize> {
    let ran: Vec<(usize, HashSet<String>)> = records
        .iter()
        .enumerate()
        .filter(|(_, r)| r.ok && r.repeat_of.is_none())
        .map(|(i, r)| (i, tokens(&r.output)))
        .collect();
    if ran.is_empty() {
        return None;
    }
    let claim = tokens(claim);
    let n = ran.len() as f64;
    // A token in every result weighs nothing; with one result, any token it holds counts.
    let weight: HashMap<&str, f64> = claim
        .iter()
        .map(|t| {
            let df = ran.iter().filter(|(_, set)| set.contains(t)).count() as f64;
            let w = if df == 0.0 {
                0.0
            } else if ran.len() == 1 {
                1.0
            } else {
                (n / df).ln()
            };
            (t.as_str(), w)
        })
        .collect();
    let total: f64 = weight.values().sum();
    let mut best: Option<(usize, f64, usize)> = None;
    for (i, set) in &ran {
        let held: Vec<f64> = claim
            .iter()
            .filter(|t| set.contains(*t))
            .map(|t| weight[t.as_str()])
            .filter(|w| *w > 0.0)
            .collect();
        let score: f64 = held.iter().sum();
        if best.is_none_or(|(_, s, _)| score > s) {
            best = Some((*i, score, held.len()));
        }
    }
    let (i, score, count) = best?;
    (count >= 2 && total > 0.0 && score * 2.0 > total).then_some(i)
}

#[cfg(test)]
mod tests {
    use serde_json::Value;

    use super::*;

    fn record(id: &str, output: &str) -> CallRecord {
        CallRecord {
            id: id.into(),
            name: "x".into(),
            arguments: Value::Null,
            ok: true,
            output: output.into(),
            repeat_of: None,
            facts: Vec::new(),
        }
    }

    fn records() -> Vec<CallRecord> {
        vec![
            record(
                "fact_1",
                "filesystem /srv/data on stor7 is 93.2 % used since 02:10 UTC, full in ≈5 h",
            ),
            record("fact_2", "target node on web4:9100 is down since 03:01 UTC"),
            record(
                "call_3",
                "loki: 14 lines on web4 since 02:58 UTC: kernel: EXT4-fs error on sdb",
            ),
        ]
    }

    #[test]
    fn a_claim_is_the_result_whose_figures_and_names_it_copies() {
        let r = records();
        assert_eq!(restated("/srv/data on stor7 is at 93.2% used", &r), Some(0));
        assert_eq!(restated("EXT4-fs error on sdb of web4", &r), Some(2));
        assert_eq!(restated("web4:9100 down since 03:01", &r), Some(1));
    }

    #[test]
    fn a_claim_no_result_holds_or_one_shared_by_all_is_none() {
        let r = records();
        assert_eq!(restated("the disk is failing", &r), None);
        assert_eq!(restated("since UTC", &r), None);
        assert_eq!(restated("memory of db9 at 97 %", &r), None);
        assert_eq!(restated("stor7", &r), None, "one token is not enough");
        let failed = CallRecord {
            ok: false,
            ..record("call_9", "error: stor7 /srv/data 93.2")
        };
        assert_eq!(restated("stor7 /srv/data 93.2", &[failed]), None);
    }
}
