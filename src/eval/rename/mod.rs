//! `sre-agent eval --rename SEED`: every user-chosen name of a scenario (hosts, instances,
//! services, jobs, pods, namespaces, deployments, containers, mounts, guests, pools, …) is
//! replaced, consistently in every file of the scenario (series labels, the fake APIs'
//! answers and their paths, the trigger, the scripted replies and the expectations), by a
//! name generated from SEED, so no name in the suite can be tuned to.
//!
//! Names are collected from the world (label values of the keys that hold user names, the
//! host part of instances, Kubernetes object names, Loki stream labels, the name fields of
//! appliance answers) plus the scenario's `rename = [...]`. Exporter job names of the
//! published mixins (`node`, `blackbox`, …) and Kubernetes' own namespaces are conventions,
//! not user choices, and stay. Replacement is by whole token: a name matches only where
//! neither neighbour is a letter, digit or `_`, so `node` in `node_filesystem_avail_bytes`
//! or `api` in `apiVersion` never change. A name's regex-escaped form (`nas\.home\.lan` in
//! an expectation) is renamed to the new name's escaped form. New names are pronounceable
//! syllable strings drawn from the seed (`tavoki-37`, `/srv/mesuda4`, `rulo.pekami.lan`),
//! shaped like the original (path, dotted name, with digits or not), never a list the
//! agent could know. A name that starts with another name and a `-` (a pod of a
//! deployment) keeps its suffix after the renamed prefix.

mod names;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

pub use names::collect;
use names::files_under;

use super::EvalError;
use super::scenario::Scenario;

/// Original name → new name, applied longest first.
#[derive(Clone, Debug, Default)]
pub struct Renaming {
    pairs: Vec<(String, String)>,
}

fn is_word(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Whether a token may start right after `before`: it ends in no letter, digit or `_`, or
/// in a percent-escape (`%22` of a URL-encoded `"` in an alert's `generatorURL`).
fn boundary_before(before: &str) -> bool {
    let b = before.as_bytes();
    let escaped = b.len() >= 3
        && b[b.len() - 3] == b'%'
        && b[b.len() - 2].is_ascii_hexdigit()
        && b[b.len() - 1].is_ascii_hexdigit();
    escaped || !before.chars().next_back().is_some_and(is_word)
}

/// Whether `name` occurs in `text` as a whole token.
pub fn contains_token(text: &str, name: &str) -> bool {
    text.match_indices(name).any(|(i, _)| {
        let after = text[i + name.len()..].chars().next();
        boundary_before(&text[..i]) && !after.is_some_and(is_word)
    })
}

impl Renaming {
    /// The pairs, original first.
    pub fn pairs(&self) -> &[(String, String)] {
        &self.pairs
    }

    /// The original names.
    pub fn originals(&self) -> Vec<&str> {
        self.pairs.iter().map(|(a, _)| a.as_str()).collect()
    }

    /// `text` with every whole-token occurrence of an original name replaced.
    pub fn apply(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        'scan: while i < text.len() {
            let rest = &text[i..];
            if boundary_before(&text[..i]) {
                for (from, to) in &self.pairs {
                    if rest.starts_with(from.as_str())
                        && !rest[from.len()..].chars().next().is_some_and(is_word)
                    {
                        out.push_str(to);
                        i += from.len();
                        continue 'scan;
                    }
                }
            }
            let c = rest.chars().next().expect("i < len is a char boundary");
            out.push(c);
            i += c.len_utf8();
        }
        out
    }

    /// Builds the renaming of `names` from `seed`; no new name occurs in `corpus`.
    pub fn generate(names: &BTreeSet<String>, seed: u64, corpus: &str) -> Self {
        let mut rng = SplitMix(seed ^ 0x005e_ed0f_5eed);
        let mut chosen: BTreeMap<String, String> = BTreeMap::new();
        let mut used: BTreeSet<String> = BTreeSet::new();
        // Shorter names first, so a pod's deployment prefix is renamed before the pod.
        let mut order: Vec<&String> = names.iter().collect();
        order.sort_by_key(|n| (n.len(), n.as_str()));
        for name in order {
            let prefix = chosen
                .iter()
                .filter(|(orig, _)| {
                    name.len() > orig.len() + 1
                        && name.starts_with(orig.as_str())
                        && name[orig.len()..].starts_with('-')
                })
                .max_by_key(|(orig, _)| orig.len())
                .map(|(orig, new)| (orig.len(), new.clone()));
            let new = loop {
                let candidate = match &prefix {
                    Some((len, new_prefix)) => format!("{new_prefix}{}", &name[*len..]),
                    None => shaped_like(name, &mut rng),
                };
                let clash = used.contains(&candidate)
                    || names.contains(&candidate)
                    || contains_token(corpus, &candidate);
                if !clash || prefix.is_some() {
                    break candidate;
                }
            };
            used.insert(new.clone());
            chosen.insert(name.clone(), new);
        }
        let mut pairs: Vec<(String, String)> = Vec::new();
        for (from, to) in &chosen {
            pairs.push((from.clone(), to.clone()));
            let (ef, et) = (regex_lite::escape(from), regex_lite::escape(to));
            if ef != *from {
                // As written in a regex, and inside a TOML or JSON string (`\\.`).
                pairs.push((ef.replace('\\', "\\\\"), et.replace('\\', "\\\\")));
                pairs.push((ef, et));
            }
        }
        pairs.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then(a.0.cmp(&b.0)));
        Self { pairs }
    }
}

/// A small deterministic generator (SplitMix64).
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

/// A pronounceable word of 2–3 syllables.
fn word(rng: &mut SplitMix) -> String {
    const C: &[u8] = b"bdfgklmnprstvz";
    const V: &[u8] = b"aeiou";
    let syllables = 2 + rng.below(2);
    (0..syllables)
        .flat_map(|_| {
            [
                C[rng.below(C.len() as u64) as usize] as char,
                V[rng.below(V.len() as u64) as usize] as char,
            ]
        })
        .collect()
}

/// A new name with the shape of `name`: a path stays a path, a dotted name keeps its
/// labels (and a short alphabetic last label such as `lan`), digits stay.
fn shaped_like(name: &str, rng: &mut SplitMix) -> String {
    if name.starts_with('/') {
        let depth = name.trim_matches('/').split('/').count();
        return if depth >= 2 {
            format!("/srv/{}{}", word(rng), rng.below(10))
        } else {
            format!("/{}", word(rng))
        };
    }
    if name.contains('.') {
        let labels: Vec<&str> = name.split('.').collect();
        let last = labels.len() - 1;
        return labels
            .iter()
            .enumerate()
            .map(|(i, l)| {
                if i == last && l.len() <= 4 && l.chars().all(|c| c.is_ascii_alphabetic()) {
                    l.to_string()
                } else {
                    word(rng)
                }
            })
            .collect::<Vec<_>>()
            .join(".");
    }
    if name.chars().any(|c| c.is_ascii_digit()) {
        format!("{}-{:02}", word(rng), rng.below(100))
    } else {
        word(rng)
    }
}

/// Every text of a scenario directory joined (to keep new names out of it).
fn corpus(dir: &Path) -> String {
    let mut files = Vec::new();
    files_under(dir, &mut files);
    files.sort();
    files
        .iter()
        .filter_map(|f| std::fs::read_to_string(f).ok())
        .collect::<Vec<_>>()
        .join("\n")
}

/// Writes `scenario` renamed by `seed` into `into` (its files' contents and paths) and
/// loads it; returns it with the renaming.
pub fn rename_scenario(
    scenario: &Scenario,
    seed: u64,
    into: &Path,
) -> Result<(Scenario, Renaming), EvalError> {
    let names = collect(scenario)?;
    let renaming = Renaming::generate(&names, seed, &corpus(&scenario.dir));
    let mut files = Vec::new();
    files_under(&scenario.dir, &mut files);
    let target = into.join(&scenario.name);
    for f in files {
        let rel = f.strip_prefix(&scenario.dir).unwrap_or(&f);
        let rel = renaming.apply(&rel.to_string_lossy());
        let dest = target.join(rel);
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| EvalError::io(parent, e))?;
        }
        match std::fs::read_to_string(&f) {
            Ok(text) => std::fs::write(&dest, renaming.apply(&text)),
            Err(_) => std::fs::copy(&f, &dest).map(|_| ()),
        }
        .map_err(|e| EvalError::io(&dest, e))?;
    }
    let mut renamed = Scenario::load(&target)?;
    renamed.name = scenario.name.clone();
    Ok((renamed, renaming))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(list: &[&str]) -> BTreeSet<String> {
        list.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn whole_tokens_are_renamed_and_parts_of_other_words_are_not() {
        let r = Renaming::generate(&names(&["node1", "api", "/var/lib/vz"]), 7, "");
        let text = r#"node_filesystem_avail_bytes{instance="node1:9100",mountpoint="/var/lib/vz"} apiVersion api-6c9f-x /var/lib/vz/images node10"#;
        let out = r.apply(text);
        assert!(
            out.starts_with("node_filesystem_avail_bytes{instance=\""),
            "{out}"
        );
        assert!(out.contains("apiVersion"), "{out}");
        assert!(out.contains("node10"), "{out}");
        for (from, to) in r.pairs() {
            assert!(!contains_token(&out, from), "{from} left in {out}");
            assert!(out.contains(to.as_str()), "{to} not in {out}");
        }
    }

    #[test]
    fn the_same_seed_gives_the_same_names_and_another_seed_other_ones() {
        let n = names(&["pve1", "nas.home.lan", "shop", "/var/lib/vz"]);
        let a = Renaming::generate(&n, 1, "");
        let b = Renaming::generate(&n, 1, "");
        let c = Renaming::generate(&n, 2, "");
        assert_eq!(a.pairs(), b.pairs());
        assert_ne!(a.pairs(), c.pairs());
        let to =
            |r: &Renaming, from: &str| r.pairs().iter().find(|(f, _)| f == from).unwrap().1.clone();
        assert!(to(&a, "nas.home.lan").ends_with(".lan"));
        assert!(to(&a, "/var/lib/vz").starts_with("/srv/"));
        assert!(to(&a, "pve1").chars().any(|c| c.is_ascii_digit()));
    }

    fn to_api(r: &Renaming) -> String {
        r.pairs()
            .iter()
            .find(|(f, _)| f == "api")
            .unwrap()
            .1
            .clone()
    }

    #[test]
    fn a_pod_keeps_its_suffix_after_its_renamed_deployment_and_escaped_regexes_follow() {
        let r = Renaming::generate(
            &names(&["api", "api-6c9f7b8d4-k2x7p", "nas.home.lan"]),
            3,
            "",
        );
        let url = r.apply("g0.expr=up%7Bjob%3D%22api%22%7D+%3D%3D+0");
        assert!(!contains_token(&url, "api") && url.contains(&format!("%22{}%22", to_api(&r))));
        let toml = r.apply(r#"facts = ["nas\\.home\\.lan"]"#);
        assert!(!toml.contains("nas"), "{toml}");
        let out = r.apply(r#"pod "api-6c9f7b8d4-k2x7p" of "api"; fact nas\.home\.lan"#);
        let api = &r.pairs().iter().find(|(f, _)| f == "api").unwrap().1;
        assert!(out.contains(&format!("{api}-6c9f7b8d4-k2x7p")), "{out}");
        assert!(!out.contains("nas\\.home\\.lan"), "{out}");
        let re = regex_lite::Regex::new(out.rsplit("fact ").next().unwrap()).unwrap();
        let new_nas = &r
            .pairs()
            .iter()
            .find(|(f, _)| f == "nas.home.lan")
            .unwrap()
            .1;
        assert!(re.is_match(new_nas));
    }
}
