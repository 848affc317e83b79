//! Log errors: Loki error lines per job this week and the week before (one metric query
//! with a one-day step), and the top error patterns from a bounded sample of lines.

use std::collections::BTreeMap;
use std::time::Duration;

use super::{CollectContext, not_configured};
use crate::report::model::{ErrorPattern, JobErrors, LogsData, Section};

const COUNT_QUERY: &str = r#"sum by (job) (count_over_time({job=~".+"} |~ "(?i)error" [1d]))"#;
const LINES_QUERY: &str = r#"{job=~".+"} |~ "(?i)error""#;
/// Lines sampled for patterns.
pub const SAMPLE_LIMIT: u32 = 500;
const DAY: i64 = 86_400;

pub async fn collect(ctx: &CollectContext) -> Section<LogsData> {
    let Some(loki) = &ctx.upstreams.loki else {
        return Section::failed(not_configured("Loki", "loki.url"));
    };
    let w = ctx.window;
    let len = chrono::Duration::seconds(w.length().as_secs() as i64);
    // Points at the end of each day: the first one counts the first day of the week before.
    let first_point = w.start - len + chrono::Duration::seconds(DAY);
    let step = Duration::from_secs(DAY as u64);
    let (counts, lines) = tokio::join!(
        loki.query_range_matrix(COUNT_QUERY, first_point, w.end, step),
        loki.query_logs(LINES_QUERY, w.start, w.end, SAMPLE_LIMIT),
    );
    let mut data = LogsData::default();
    let mut notes = Vec::new();
    match counts {
        Ok(series) => {
            let boundary = w.start.timestamp() as f64;
            for s in series {
                let (mut this, mut last) = (0.0, 0.0);
                for (t, v) in &s.values {
                    if *t > boundary { this += v } else { last += v }
                }
                data.jobs.push(JobErrors {
                    job: s.metric.get("job").cloned().unwrap_or_default(),
                    this_week: this,
                    last_week: last,
                    change_pct: (last > 0.0).then(|| (this - last) / last * 100.0),
                });
            }
            data.jobs
                .sort_by(|a, b| b.this_week.total_cmp(&a.this_week));
        }
        Err(e) => notes.push(e.to_string()),
    }
    match lines {
        Ok(streams) => {
            // Loki applies the limit across streams; each stream is newest first.
            let lines: Vec<&str> = streams
                .iter()
                .flat_map(|s| s.entries.iter().map(|(_, line)| line.as_str()))
                .take(SAMPLE_LIMIT as usize)
                .collect();
            data.sampled_lines = lines.len();
            data.patterns = patterns(lines.into_iter(), 10);
        }
        Err(e) => notes.push(e.to_string()),
    }
    Section { data, notes }
}

/// Groups lines by their normalised form; the `top` most frequent first.
pub fn patterns<'a>(lines: impl Iterator<Item = &'a str>, top: usize) -> Vec<ErrorPattern> {
    let mut groups: BTreeMap<String, ErrorPattern> = BTreeMap::new();
    for line in lines {
        let pattern = normalise_line(line);
        let g = groups
            .entry(pattern.clone())
            .or_insert_with(|| ErrorPattern {
                pattern,
                count: 0,
                example: line.chars().take(200).collect(),
            });
        g.count += 1;
    }
    let mut out: Vec<_> = groups.into_values().collect();
    out.sort_by(|a, b| b.count.cmp(&a.count).then(a.pattern.cmp(&b.pattern)));
    out.truncate(top);
    out
}

/// A line with its variable parts (timestamps, numbers, ids, quoted values) replaced.
pub fn normalise_line(line: &str) -> String {
    let mut out = String::with_capacity(line.len());
    let mut quoted = false;
    for token in line.split_inclusive([' ', '=', ',', ':', '/', '[', ']', '(', ')']) {
        let (word, sep) = match token.char_indices().last() {
            Some((i, c)) if " =,:/[]()".contains(c) => (&token[..i], &token[i..]),
            _ => (token, ""),
        };
        if quoted {
            if word.ends_with('"') {
                quoted = false;
            }
            if !sep.is_empty() && !quoted {
                out.push_str(sep);
            }
            continue;
        }
        if word.starts_with('"') && !(word.len() > 1 && word.ends_with('"')) {
            quoted = true;
            out.push_str("\"*\"");
            continue;
        }
        out.push_str(&mask(word));
        out.push_str(sep);
    }
    out.chars().take(160).collect()
}

fn mask(word: &str) -> String {
    if word.len() > 1 && word.starts_with('"') && word.ends_with('"') {
        return "\"*\"".into();
    }
    let digits = word.chars().filter(char::is_ascii_digit).count();
    let hexish = word.len() >= 8 && word.chars().all(|c| c.is_ascii_hexdigit() || c == '-');
    if digits > 0
        && (digits * 2 >= word.len() || hexish || word.starts_with(|c: char| c.is_ascii_digit()))
    {
        "<n>".into()
    } else if hexish {
        "<id>".into()
    } else {
        word.to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_differing_only_in_numbers_ids_and_quoted_values_share_a_pattern() {
        let a = r#"2026-11-20T10:00:01Z level=error msg="payment gateway timeout" order_id=8812 took=31ms"#;
        let b = r#"2026-11-21T11:30:17Z level=error msg="payment gateway timeout after retry" order_id=9 took=2ms"#;
        assert_eq!(normalise_line(a), normalise_line(b));
        let c = "ERROR connection refused to 10.0.0.7:5432 (attempt 3)";
        let d = "ERROR connection refused to 10.0.0.9:5432 (attempt 12)";
        assert_eq!(normalise_line(c), normalise_line(d));
        assert_ne!(normalise_line(a), normalise_line(c));
    }

    #[test]
    fn patterns_are_counted_and_the_most_frequent_comes_first() {
        let lines = [
            "error disk 1 full",
            "error disk 2 full",
            "error oom killed pid 7",
        ];
        let p = patterns(lines.into_iter(), 10);
        assert_eq!(p[0].count, 2);
        assert_eq!(p[1].count, 1);
    }
}
