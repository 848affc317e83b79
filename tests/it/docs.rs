//! The documents follow the code: README lists every tool the catalog registers, every
//! metric family of the registry and every config section; every path ARCHITECTURE.md
//! names exists, so its "I want to add …" table cannot silently go stale; eval/README.md
//! lists every shipped scenario once.

use std::path::Path;

use sre_agent::app::daemon_metrics;
use sre_agent::config::Config;
use sre_agent::tools::catalog::builtin_names;

const ROOT: &str = env!("CARGO_MANIFEST_DIR");

fn read(name: &str) -> String {
    std::fs::read_to_string(Path::new(ROOT).join(name)).unwrap()
}

/// The text of the `## {heading}` section of `doc`, up to the next `## `.
fn section<'a>(doc: &'a str, heading: &str) -> &'a str {
    let start = doc
        .find(&format!("\n## {heading}\n"))
        .unwrap_or_else(|| panic!("no section \"## {heading}\""));
    let body = &doc[start + 1..];
    let end = body[3..].find("\n## ").map_or(body.len(), |i| i + 3);
    &body[..end]
}

/// The `code spans` of `text`.
fn code_spans(text: &str) -> Vec<&str> {
    text.split('`').skip(1).step_by(2).collect()
}

#[test]
fn readme_lists_every_tool_the_catalog_registers() {
    let readme = read("README.md");
    let listed = code_spans(section(&readme, "Tools the model can call"));
    let missing: Vec<&str> = builtin_names()
        .into_iter()
        .filter(|name| !listed.contains(name))
        .collect();
    assert!(
        missing.is_empty(),
        "tools missing from README's \"Tools the model can call\": {missing:?}"
    );
}

/// Every family `src/telemetry/metrics.rs` defines (each through `opts("name", …)` or
/// `hopts("name", …)`), whether or not it has a series yet.
pub fn defined_families() -> Vec<String> {
    let source = read("src/telemetry/metrics.rs");
    source
        .split("opts(")
        .skip(1)
        .filter_map(|rest| rest.trim_start().strip_prefix('"')?.split('"').next())
        .filter(|name| !name.is_empty() && !name.contains('{'))
        .map(|name| format!("sre_agent_{name}"))
        .collect()
}

#[test]
fn readme_lists_exactly_the_metric_families_the_registry_defines() {
    let families = defined_families();
    // The parse finds what the registry exports.
    let exported = daemon_metrics("m").encode();
    let exported: Vec<&str> = exported
        .lines()
        .filter_map(|l| l.strip_prefix("# TYPE "))
        .filter_map(|l| l.split(' ').next())
        .collect();
    assert!(exported.len() > 20, "{exported:?}");
    for family in &exported {
        assert!(families.iter().any(|f| f == family), "{family} not parsed");
    }
    let readme = read("README.md");
    let listed: Vec<&str> = code_spans(section(&readme, "Metrics"))
        .into_iter()
        .filter(|s| s.starts_with("sre_agent_"))
        .collect();
    let missing: Vec<&String> = families
        .iter()
        .filter(|f| !listed.contains(&f.as_str()))
        .collect();
    assert!(
        missing.is_empty(),
        "families missing from README: {missing:?}"
    );
    let unknown: Vec<&&str> = listed
        .iter()
        .filter(|l| !families.iter().any(|f| f == *l))
        .collect();
    assert!(
        unknown.is_empty(),
        "README lists families that do not exist: {unknown:?}"
    );
}

#[test]
fn readme_names_every_config_section() {
    let readme = read("README.md");
    let text = section(&readme, "Configuration");
    let missing: Vec<&&str> = Config::SECTIONS
        .iter()
        .filter(|s| !text.contains(&format!("[{s}]")) && !text.contains(&format!("[[{s}")))
        .collect();
    assert!(missing.is_empty(), "config sections missing: {missing:?}");
}

/// Whether `span` reads as a path of the repository: it names a folder (`…/`) or a file
/// with an extension the repository uses, and holds no placeholder or route.
fn is_path(span: &str) -> bool {
    const EXTENSIONS: [&str; 9] = [
        ".rs", ".md", ".toml", ".yml", ".json", ".j2", ".example", ".py", ".sh",
    ];
    !span.starts_with('/')
        && !span.contains(['<', '{', '*', ' ', '(', ':', '"'])
        && (span.ends_with('/') || EXTENSIONS.iter().any(|e| span.ends_with(e)))
}

/// Whether `path` exists at the repository root, under `src/`, or (for the short names the
/// flows and the parts table use) under one of `src/`'s folders.
fn exists_somewhere(path: &str) -> bool {
    let root = Path::new(ROOT);
    if root.join(path).exists() || root.join("src").join(path).exists() {
        return true;
    }
    let mut dirs = vec![root.join("src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).unwrap().flatten() {
            let p = entry.path();
            if p.is_dir() {
                if p.join(path).exists() {
                    return true;
                }
                dirs.push(p);
            }
        }
    }
    false
}

#[test]
fn every_path_architecture_names_exists() {
    let doc = read("ARCHITECTURE.md");
    let table = section(&doc, "I want to add …");
    // The table names paths from the repository root.
    let table_paths: Vec<&str> = code_spans(table)
        .into_iter()
        .filter(|s| is_path(s))
        .collect();
    assert!(table_paths.len() > 40, "{table_paths:?}");
    let missing: Vec<&&str> = table_paths
        .iter()
        .filter(|p| !Path::new(ROOT).join(p).exists())
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md \"I want to add …\" names paths that do not exist: {missing:?}"
    );
    // The rest names them relative to `src/` or to their part; the flows' diagrams name
    // them outside code spans.
    let rest = doc.replace(table, "");
    let mut spans: Vec<&str> = code_spans(&rest);
    let words: Vec<&str> = rest
        .split(|c: char| c.is_whitespace() || "(),;`".contains(c))
        .filter(|w| w.ends_with(".rs"))
        .collect();
    spans.extend(words);
    let missing: Vec<&str> = spans
        .into_iter()
        .filter(|s| is_path(s) && !exists_somewhere(s))
        .collect();
    assert!(
        missing.is_empty(),
        "ARCHITECTURE.md names paths that do not exist: {missing:?}"
    );
}

#[test]
fn the_eval_readme_lists_every_shipped_scenario_once_and_counts_them() {
    let doc = read("eval/README.md");
    let table = section(&doc, "Shipped scenarios");
    let listed: Vec<&str> = table
        .lines()
        .filter_map(|l| l.strip_prefix("| "))
        .filter_map(|l| l.split(" |").next())
        .map(|cell| cell.trim_end_matches(" †").trim())
        .filter(|cell| !cell.is_empty() && !cell.starts_with("**") && !cell.starts_with("---"))
        .filter(|cell| *cell != "scenario")
        .collect();
    let mut dirs: Vec<String> = std::fs::read_dir(Path::new(ROOT).join("eval/scenarios"))
        .unwrap()
        .filter_map(|e| e.ok())
        .filter(|e| e.path().join("scenario.toml").exists())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    dirs.sort();
    let mut names: Vec<String> = listed.iter().map(|s| s.to_string()).collect();
    names.sort();
    let twice: Vec<&String> = names
        .windows(2)
        .filter(|w| w[0] == w[1])
        .map(|w| &w[0])
        .collect();
    assert!(twice.is_empty(), "listed twice: {twice:?}");
    let missing: Vec<&String> = dirs.iter().filter(|d| !names.contains(d)).collect();
    let stale: Vec<&String> = names.iter().filter(|n| !dirs.contains(n)).collect();
    assert!(
        missing.is_empty(),
        "scenarios not in eval/README.md: {missing:?}"
    );
    assert!(stale.is_empty(), "rows naming no scenario: {stale:?}");
    assert!(
        table.contains(&format!("\n{} scenarios,", dirs.len())),
        "eval/README.md does not say {} scenarios",
        dirs.len()
    );
}
