//! How names are compared: normalised, split into parts, one typo apart.

use super::MIN_NAME_CHARS;

/// Lowercase, without separators (`Home-Assistant` → `homeassistant`).
pub(super) fn normalise(s: &str) -> String {
    s.chars()
        .filter(|c| c.is_alphanumeric() || *c == '/')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The names an entity answers to: its whole name and its parts (`shop/api-7f9c` →
/// `shopapi7f9c`, `shop`, `api`, `7f9c`).
pub(super) fn entity_names(name: &str) -> Vec<String> {
    let mut out = vec![normalise(name)];
    out.extend(
        name.split([':', '/', '.', '-', '_', ' '])
            .map(normalise)
            .filter(|p| p.chars().count() >= MIN_NAME_CHARS && p.chars().any(char::is_alphabetic)),
    );
    out.retain(|n| n.chars().count() >= MIN_NAME_CHARS);
    out
}

/// Equal, or one typo apart when both are long enough to tell and carry no number.
pub(super) fn similar(a: &str, b: &str) -> bool {
    if a == b {
        return true;
    }
    // Numbered names (`node1`, `node2`) are different things, not typos.
    let numbered = |s: &str| s.chars().any(|c| c.is_numeric());
    let (la, lb) = (a.chars().count(), b.chars().count());
    la >= 5
        && lb >= 5
        && la.abs_diff(lb) <= 1
        && !numbered(a)
        && !numbered(b)
        && edit_distance(a, b) <= 1
}

/// Levenshtein distance over characters.
pub(super) fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut prev: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut cur = vec![i + 1; b.len() + 1];
        for (j, cb) in b.iter().enumerate() {
            let cost = usize::from(ca != *cb);
            cur[j + 1] = (prev[j] + cost).min(prev[j + 1] + 1).min(cur[j] + 1);
        }
        prev = cur;
    }
    prev[b.len()]
}
