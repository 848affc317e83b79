//! Ranking what exists by how close it is to what the model asked for: metric names by
//! their `_`-separated words (with a few synonyms models reach for: free/avail, mem/memory,
//! disk/filesystem), label values by prefix and edit distance (`pve1` → `pve1:9100`).

/// Words models use for another word in metric names.
const SYNONYMS: &[(&str, &str)] = &[
    ("free", "avail"),
    ("available", "avail"),
    ("disk", "filesystem"),
    ("fs", "filesystem"),
    ("mem", "memory"),
    ("ram", "memory"),
    ("usage", "used"),
    ("utilization", "used"),
    ("total", "size"),
    ("capacity", "size"),
    ("cpus", "cpu"),
];

/// Unit and type suffixes of metric names.
const UNIT_WORDS: &[&str] = &[
    "bytes", "seconds", "total", "count", "sum", "bucket", "ratio", "info", "percent",
];

/// Levenshtein distance over characters.
pub fn edit_distance(a: &str, b: &str) -> usize {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.iter().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}

fn words(name: &str) -> Vec<String> {
    name.split(['_', ':'])
        .filter(|w| !w.is_empty())
        .map(str::to_ascii_lowercase)
        .collect()
}

/// How alike two words are, 0 to 1.
fn word_similarity(a: &str, b: &str) -> f64 {
    if a == b {
        return 1.0;
    }
    let synonym = SYNONYMS
        .iter()
        .any(|(x, y)| (a == *x && b == *y) || (a == *y && b == *x));
    if synonym {
        return 0.9;
    }
    let short = a.len().min(b.len());
    if short >= 3 && (a.starts_with(b) || b.starts_with(a)) {
        return 0.7;
    }
    if short >= 4 && edit_distance(a, b) == 1 {
        return 0.7;
    }
    0.0
}

/// How close metric name `candidate` is to `wanted`: the share of wanted words found
/// (a word in the same place counts a little more), less a little per extra word.
fn name_score(wanted: &[String], candidate: &str) -> f64 {
    let cand = words(candidate);
    if wanted.is_empty() || cand.is_empty() {
        return 0.0;
    }
    let mut used = vec![false; cand.len()];
    let mut total = 0.0;
    for (i, w) in wanted.iter().enumerate() {
        let best = cand
            .iter()
            .enumerate()
            .map(|(j, c)| (j, word_similarity(w, c)))
            .max_by(|a, b| a.1.total_cmp(&b.1).then(b.0.cmp(&a.0)));
        if let Some((j, s)) = best.filter(|b| b.1 > 0.0) {
            used[j] = true;
            total += s + if i == j { 0.02 } else { 0.0 };
        }
    }
    // A unit suffix the model left out is no difference worth counting.
    let extra = used
        .iter()
        .zip(&cand)
        .filter(|(u, c)| !**u && !UNIT_WORDS.contains(&c.as_str()))
        .count() as f64;
    total / wanted.len() as f64 - 0.05 * extra
}

/// The existing metric names closest to `wanted`, best first, at most `n`.
pub fn closest_names<'a>(wanted: &str, names: &'a [String], n: usize) -> Vec<&'a str> {
    let w = words(wanted);
    let mut scored: Vec<(f64, usize, &str)> = names
        .iter()
        .map(|c| (name_score(&w, c), edit_distance(wanted, c), c.as_str()))
        .filter(|(s, d, _)| *s >= 0.5 || *d <= 2)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)).then(a.2.cmp(b.2)));
    scored.into_iter().take(n).map(|(.., c)| c).collect()
}

/// How close label value `candidate` is to `wanted`, 0 to 1.
fn value_score(wanted: &str, candidate: &str) -> f64 {
    let (w, c) = (wanted.to_ascii_lowercase(), candidate.to_ascii_lowercase());
    // A prefix or part counts when it is more than a character or two ("/" is in every path).
    let long_enough = w.len().min(c.len()) >= 3;
    if w == c {
        1.0
    } else if long_enough && (c.starts_with(&w) || w.starts_with(&c)) {
        0.9
    } else if long_enough && (c.contains(&w) || w.contains(&c)) {
        0.8
    } else {
        let longest = w.chars().count().max(c.chars().count()).max(1);
        0.7 * (1.0 - edit_distance(&w, &c) as f64 / longest as f64)
    }
}

/// `values` ordered by closeness to `wanted`, with whether the first is a likely
/// correction (a prefix, a containment or a small typo).
pub fn rank_values<'a>(wanted: &str, values: &'a [String]) -> (Vec<&'a str>, bool) {
    let mut scored: Vec<(f64, &str)> = values
        .iter()
        .map(|v| (value_score(wanted, v), v.as_str()))
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(b.1)));
    let likely = scored.first().is_some_and(|(s, _)| *s >= 0.5);
    (scored.into_iter().map(|(_, v)| v).collect(), likely)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn a_metric_name_that_does_not_exist_finds_its_relatives() {
        let all = names(&[
            "up",
            "node_cpu_seconds_total",
            "node_filesystem_avail_bytes",
            "node_filesystem_files_free",
            "node_filesystem_free_bytes",
            "node_filesystem_size_bytes",
            "node_memory_MemAvailable_bytes",
            "probe_success",
        ]);
        assert_eq!(
            closest_names("node_filesystem_free", &all, 3),
            [
                "node_filesystem_free_bytes",
                "node_filesystem_avail_bytes",
                "node_filesystem_files_free"
            ]
        );
        assert_eq!(
            closest_names("node_filesytem_avail_bytes", &all, 1),
            ["node_filesystem_avail_bytes"]
        );
        assert_eq!(
            closest_names("node_disk_free_bytes", &all, 2),
            ["node_filesystem_free_bytes", "node_filesystem_avail_bytes"]
        );
        assert_eq!(closest_names("mysql_up", &all, 3), ["up"]);
        assert!(closest_names("kube_pod_status_phase", &all, 3).is_empty());
    }

    #[test]
    fn a_label_value_without_its_port_or_with_a_typo_finds_the_real_one() {
        let v = names(&["nas:9100", "pve1:9100", "pve2:9100"]);
        assert_eq!(
            rank_values("pve1", &v),
            (vec!["pve1:9100", "pve2:9100", "nas:9100"], true)
        );
        let mp = names(&["/", "/var/lib/vz", "/mnt/tank"]);
        assert_eq!(rank_values("/var/lib/zv", &mp).0[0], "/var/lib/vz");
        assert!(rank_values("/var/lib/zv", &mp).1);
        assert!(!rank_values("windows", &v).1);
    }
}
