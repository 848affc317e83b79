//! New line patterns in a service's logs. Lines are read in slices spread over the window
//! (each slice its newest lines up to a limit, so a loud service costs no more than a quiet
//! one) and grouped by pattern ([`line_pattern`]: numbers, ids, hex, IPs as
//! placeholders). A pattern is a candidate when the recent slices show it at a rate well
//! above the earlier ones' (absent or rare before); its counts over the whole window, read
//! with the pattern's own regex, then say when it first appeared ([`emergence`]).

use std::collections::HashMap;

use crate::analyze::line_pattern;

/// Least lines of a pattern in the recent samples to call it new.
const MIN_NEW_LINES: usize = 3;
/// How many times its earlier rate a new pattern's recent rate must be.
const NEW_FACTOR: f64 = 10.0;
/// Least points a pattern must have been absent (or rare) to be new.
const MIN_ABSENT_POINTS: usize = 3;
/// Most chance that a pattern as frequent all along would show so few lines before its
/// split by luck (a few lines that happen to fall late in the window are no new pattern).
const MAX_CHANCE: f64 = 1e-3;
/// Longest regex built from a pattern (a prefix of the line matches as well).
const MAX_REGEX_CHARS: usize = 300;

/// Lines read from one slice of the window.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    /// The slice, unix nanoseconds.
    pub from: i64,
    pub to: i64,
    /// Whether the slice is in the recent part of the window.
    pub recent: bool,
    /// `(unix ns, line)`, any order.
    pub lines: Vec<(i64, String)>,
    /// Whether the read stopped at its limit (the lines cover only the slice's end).
    pub full: bool,
}

impl Sample {
    /// Nanoseconds of the slice its lines cover.
    fn covered(&self) -> i64 {
        let from = match self.full {
            true => self.lines.iter().map(|(t, _)| *t).min().unwrap_or(self.to),
            false => self.from,
        };
        (self.to - from.clamp(self.from, self.to)).max(1)
    }
}

/// One pattern in the samples.
#[derive(Clone, Debug, PartialEq)]
pub struct PatternCount {
    pub pattern: String,
    /// Lines in the recent and the earlier samples.
    pub recent: usize,
    pub before: usize,
    /// The earliest recent line of the pattern (unix ns), and the newest as an example.
    pub first: i64,
    pub last: i64,
    pub example: String,
}

/// The patterns of a service's samples.
#[derive(Clone, Debug, Default)]
pub struct Census {
    pub recent_lines: usize,
    pub before_lines: usize,
    recent_ns: i64,
    before_ns: i64,
    /// Most recent lines first.
    pub patterns: Vec<PatternCount>,
}

/// The patterns of `samples`.
pub fn census(samples: &[Sample]) -> Census {
    let mut c = Census::default();
    let mut by: HashMap<String, PatternCount> = HashMap::new();
    for s in samples {
        match s.recent {
            true => {
                c.recent_ns += s.covered();
                c.recent_lines += s.lines.len();
            }
            false => {
                c.before_ns += s.covered();
                c.before_lines += s.lines.len();
            }
        }
        for (t, line) in &s.lines {
            let p = by
                .entry(line_pattern(line))
                .or_insert_with_key(|k| PatternCount {
                    pattern: k.clone(),
                    recent: 0,
                    before: 0,
                    first: i64::MAX,
                    last: i64::MIN,
                    example: String::new(),
                });
            if !s.recent {
                p.before += 1;
                continue;
            }
            p.recent += 1;
            p.first = p.first.min(*t);
            if *t >= p.last {
                p.last = *t;
                p.example.clone_from(line);
            }
        }
    }
    c.patterns = by.into_values().collect();
    c.patterns.sort_by(|a, b| {
        (b.recent, b.before)
            .cmp(&(a.recent, a.before))
            .then(a.pattern.cmp(&b.pattern))
    });
    c
}

impl Census {
    /// Patterns whose recent rate is well above their earlier one, most lines first.
    pub fn new_patterns(&self) -> impl Iterator<Item = &PatternCount> {
        let (recent_ns, before_ns) = (self.recent_ns.max(1) as f64, self.before_ns as f64);
        self.patterns.iter().filter(move |p| {
            let rate = p.recent as f64 / recent_ns;
            p.recent >= MIN_NEW_LINES
                && before_ns > 0.0
                && (p.before == 0 || rate >= NEW_FACTOR * p.before as f64 / before_ns)
        })
    }

    /// The most frequent recent patterns with their share of the recent lines.
    pub fn top(&self, n: usize) -> Vec<(&PatternCount, f64)> {
        self.patterns
            .iter()
            .filter(|p| p.recent > 0)
            .take(n)
            .map(|p| (p, p.recent as f64 / self.recent_lines.max(1) as f64))
            .collect()
    }
}

/// When a pattern appeared, from its counts per step over the window.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Emergence {
    /// The point of its first line after its absence.
    pub first: usize,
    /// Lines before that point and from it on.
    pub before: f64,
    pub after: f64,
}

/// Where the counts of a pattern show it appear: the split (weighing both sides' lengths)
/// after which its rate is at least [`NEW_FACTOR`] times the rate before, with enough
/// points before to tell it was absent or rare, and enough lines after.
pub fn emergence(counts: &[f64]) -> Option<Emergence> {
    let n = counts.len();
    let total: f64 = counts.iter().sum();
    let mut before = 0.0;
    let mut best: Option<(usize, f64)> = None;
    for k in MIN_ABSENT_POINTS..n {
        before += counts[k - 1];
        let (b, a) = (before / k as f64, (total - before) / (n - k) as f64);
        let score = (a - b) * ((k * (n - k)) as f64 / n as f64).sqrt();
        if a > b && best.is_none_or(|(_, s)| score > s) {
            best = Some((k, score));
        }
    }
    let (k, _) = best?;
    let before: f64 = counts[..k].iter().sum();
    let after = total - before;
    let (b, a) = (before / k as f64, after / (n - k) as f64);
    if after < MIN_NEW_LINES as f64
        || a < NEW_FACTOR * b
        || chance_of_at_most(before, total, k as f64 / n as f64) > MAX_CHANCE
    {
        return None;
    }
    let first = k + counts[k..].iter().position(|c| *c > 0.0)?;
    Some(Emergence {
        first,
        before,
        after,
    })
}

/// An upper bound of the chance that at most `k` of `n` lines fall in a part of the
/// window holding `share` of it, were they spread evenly: `(k + 1)` times the largest term
/// of the binomial sum (the terms rise up to the mean, and `k` is below it).
fn chance_of_at_most(k: f64, n: f64, share: f64) -> f64 {
    // Thousands of lines before are no absence, whatever the split.
    if !(0.0..1.0).contains(&share) || k >= n * share || k > 10_000.0 {
        return 1.0;
    }
    let (k, n) = (k.round(), n.round());
    // ln C(n, k) + k ln p + (n - k) ln (1 - p), the sum of logs kept exact for small k.
    let mut ln = (n - k) * (1.0 - share).ln() + k * share.ln();
    let mut i = 0.0;
    while i < k {
        ln += (n - i).ln() - (i + 1.0).ln();
        i += 1.0;
    }
    ((k + 1.0) * ln.exp()).min(1.0)
}

/// A regex (RE2 and Rust syntax alike) matching the lines of `pattern`: its text escaped,
/// its placeholders as what they stand for. `None` for a pattern with no text to match.
pub fn pattern_regex(pattern: &str) -> Option<String> {
    const HOLES: [(&str, &str); 5] = [
        ("<uuid>", "[0-9a-fA-F-]+"),
        ("<hex>", "(?:0x)?[0-9a-fA-F]+"),
        ("<ip>", r"[0-9.]+(?::[0-9]+)?"),
        ("<ts>", r"[\w.:-]+"),
        ("<n>", r"[0-9]+(?:\.[0-9]+)*"),
    ];
    let text = pattern.trim_end_matches('…');
    let mut out = String::new();
    let mut literal = String::new();
    let mut rest = text;
    let mut has_text = false;
    while !rest.is_empty() && out.len() + literal.len() < MAX_REGEX_CHARS {
        if let Some((hole, re)) = HOLES.iter().find(|(h, _)| rest.starts_with(h)) {
            out.push_str(&regex_lite::escape(&literal));
            literal.clear();
            out.push_str(re);
            rest = &rest[hole.len()..];
        } else {
            let c = rest.chars().next()?;
            has_text |= c.is_alphabetic();
            literal.push(if c.is_control() { ' ' } else { c });
            rest = &rest[c.len_utf8()..];
        }
    }
    out.push_str(&regex_lite::escape(&literal));
    // Control characters were blanked: a regex of such a line matches no line; none then.
    (has_text && !pattern.chars().any(char::is_control)).then_some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(recent: bool, from: i64, lines: &[(i64, &str)]) -> Sample {
        Sample {
            from,
            to: from + 600,
            recent,
            lines: lines.iter().map(|(t, l)| (*t, l.to_string())).collect(),
            full: false,
        }
    }

    #[test]
    fn a_pattern_absent_before_and_frequent_recently_is_new_with_its_first_line() {
        let old = "postfix/smtp[12]: 4F1A: to=<a@b.c>, status=sent (250 2.0.0 Ok)";
        let new = "postfix/smtp[13]: 5B2C: to=<a@b.c>, status=deferred (connect to x[1.2.3.4]:587: Connection timed out)";
        let samples = [
            sample(false, 0, &[(10, old), (20, old)]),
            sample(true, 600, &[(700, old), (800, new), (900, new), (650, new)]),
        ];
        let c = census(&samples);
        let fresh: Vec<&PatternCount> = c.new_patterns().collect();
        assert_eq!(fresh.len(), 1);
        assert_eq!(fresh[0].recent, 3);
        assert_eq!(fresh[0].first, 650);
        assert!(fresh[0].example.contains("deferred"));
        assert_eq!(c.top(1)[0].0.recent, 3);
    }

    #[test]
    fn a_pattern_as_frequent_before_is_not_new_and_a_full_sample_counts_its_span_only() {
        let line = "GET /health 200";
        let busy: Vec<(i64, &str)> = (0..50).map(|i| (590 - i, line)).collect();
        let mut before = sample(false, 0, &busy);
        before.full = true;
        let recent = sample(true, 600, &[(700, line), (800, line), (900, line)]);
        assert_eq!(census(&[before, recent]).new_patterns().count(), 0);
    }

    #[test]
    fn a_pattern_appears_where_its_counts_rise_from_nothing_or_from_rare() {
        let mut c = vec![0.0; 40];
        c[5] = 1.0;
        c.extend([0.0, 0.0, 2.0, 3.0, 0.0, 2.0, 3.0, 4.0]);
        let e = emergence(&c).unwrap();
        assert_eq!(e.first, 42);
        assert_eq!((e.before, e.after), (1.0, 14.0));
        // Always there: not new.
        assert_eq!(emergence(&[2.0; 30]), None);
        // Too few lines to tell.
        let mut few = vec![0.0; 30];
        few[29] = 1.0;
        assert_eq!(emergence(&few), None);
        assert_eq!(emergence(&[]), None);
        // Three lines in the last two fifths of the window: could be chance.
        let mut late = vec![0.0; 50];
        late[35] = 1.0;
        late[41] = 1.0;
        late[47] = 1.0;
        assert_eq!(emergence(&late), None);
        assert!(chance_of_at_most(0.0, 3.0, 0.6) > 0.05);
        assert!(chance_of_at_most(0.0, 70.0, 0.9) < 1e-9);
        assert!(chance_of_at_most(2.0, 100.0, 0.5) < 1e-20);
    }

    #[test]
    fn the_regex_of_a_pattern_matches_the_lines_it_came_from() {
        let lines = [
            "postfix/smtp[2211]: 4F1A82C0B1: to=<ops@example.org>, relay=none, delay=1803, status=deferred (connect to smtp.provider.example[203.0.113.25]:587: Connection timed out)",
            r#"{"ts":"2026-11-27T01:02:03.123Z","level":"error","msg":"query failed (x+y)*z?","id":"0b6f3c2e-9a41-4c55-8d0e-3f2a1b9c7d10"}"#,
            r#"10.0.0.5 - - [27/Nov/2026:01:02:03 +0000] "GET /api/v1/items?id=42 HTTP/1.1" 502 157 "-" "curl/8.5.0""#,
            "kernel: [12345.678] Out of memory: Killed process 4242 (java) total-vm:8123456kB",
        ];
        for line in lines {
            let re = pattern_regex(&line_pattern(line)).unwrap();
            let re = regex_lite::Regex::new(&re).unwrap();
            assert!(re.is_match(line), "{re} vs {line}");
        }
        let long = "word ".repeat(200);
        let re = pattern_regex(&line_pattern(&long)).unwrap();
        assert!(re.len() <= 2 * MAX_REGEX_CHARS);
        assert!(regex_lite::Regex::new(&re).unwrap().is_match(&long));
        assert_eq!(pattern_regex("<n> <n>"), None);
    }
}
