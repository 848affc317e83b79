//! The list of every configuration key, derived from the config types themselves: serde
//! names a struct's fields when it refuses an unknown one, so probing each section with an
//! unknown key walks the whole tree (tables, arrays of tables, maps of tables) without a
//! hand-kept list. The list is kept in `tests/deploy/config-keys.txt`, which the deployment
//! tests compare with the config the Ansible role renders (`tests/deploy/run.sh`); this test
//! fails when the types and that file disagree. `SRE_UPDATE_CONFIG_KEYS=1` rewrites it.

use serde_json::{Value, json};
use sre_agent::config::Config;

/// A key no section has.
const PROBE: &str = "__probe__";

/// One step of a key path.
#[derive(Clone, Debug)]
enum Step {
    /// A field of a table.
    Field(String),
    /// Every element of an array of tables (`[]`).
    Each,
    /// Every value of a map of tables (`*`).
    Any,
}

/// A document with `inner` at `path`.
fn document(path: &[Step], inner: Value) -> Value {
    path.iter().rev().fold(inner, |inner, step| match step {
        Step::Field(name) => json!({ name.as_str(): inner }),
        Step::Each => json!([inner]),
        Step::Any => json!({ "name": inner }),
    })
}

/// The fields of the table at `path`, as serde lists them when it refuses an unknown key
/// there; `None` when the value at `path` is not a table.
fn fields_at(path: &[Step]) -> Option<Vec<String>> {
    let doc = document(path, json!({ PROBE: 0 }));
    let err = serde_json::from_value::<Config>(doc).err()?.to_string();
    let rest = err.strip_prefix(&format!("unknown field `{PROBE}`, "))?;
    if rest.starts_with("there are no fields") {
        return Some(Vec::new());
    }
    // "expected `a`", "expected `a` or `b`", "expected one of `a`, `b`, `c`".
    let names = rest.strip_prefix("expected ")?;
    Some(
        names
            .split('`')
            .skip(1)
            .step_by(2)
            .map(str::to_string)
            .collect(),
    )
}

fn render(path: &[Step]) -> String {
    let mut out = String::new();
    for step in path {
        match step {
            Step::Field(name) if out.is_empty() => out.push_str(name),
            Step::Field(name) => {
                out.push('.');
                out.push_str(name);
            }
            Step::Each => out.push_str("[]"),
            Step::Any => out.push_str(".*"),
        }
    }
    out
}

/// Every leaf key under the table at `path`, in the types' field order.
fn keys_under(path: &mut Vec<Step>, out: &mut Vec<String>) {
    let fields = fields_at(path).unwrap_or_else(|| panic!("{} is not a table", render(path)));
    for field in fields {
        path.push(Step::Field(field));
        let nested = [None, Some(Step::Each), Some(Step::Any)]
            .into_iter()
            .find(|extra| {
                path.extend(extra.clone());
                let table = fields_at(path).is_some();
                if extra.is_some() {
                    path.pop();
                }
                table
            });
        match nested {
            Some(extra) => {
                path.extend(extra.clone());
                keys_under(path, out);
                if extra.is_some() {
                    path.pop();
                }
            }
            None => out.push(render(path)),
        }
        path.pop();
    }
}

/// Every key of the configuration: `server.listen`, `llm.pricing.*.input_per_million`,
/// `tools.http[].name`.
pub fn config_keys() -> Vec<String> {
    let mut out = Vec::new();
    keys_under(&mut Vec::new(), &mut out);
    out
}

const KEYS_FILE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/deploy/config-keys.txt");

const HEADER: &str = "\
# Every key of the configuration, derived from the config types by
# tests/it/config_keys.rs (SRE_UPDATE_CONFIG_KEYS=1 cargo test --test it config_keys
# rewrites it). tests/deploy/run.sh checks that the Ansible role renders each of them.
# `[]`: every element of an array of tables; `*`: every value of a map of tables.
";

#[test]
fn the_deploy_tests_key_list_is_the_one_the_config_types_declare() {
    let derived = format!("{HEADER}{}\n", config_keys().join("\n"));
    if std::env::var_os("SRE_UPDATE_CONFIG_KEYS").is_some() {
        std::fs::write(KEYS_FILE, &derived).unwrap();
    }
    let kept = std::fs::read_to_string(KEYS_FILE).unwrap_or_default();
    assert!(
        kept == derived,
        "{KEYS_FILE} differs from the config types; rerun with SRE_UPDATE_CONFIG_KEYS=1 \
         and give the Ansible role (deploy/ansible) the new keys.\nderived:\n{derived}"
    );
}

#[test]
fn the_key_walk_finds_nested_tables_arrays_of_tables_and_maps_of_tables() {
    let keys = config_keys();
    for key in [
        "server.listen",
        "server.api_token_file",
        "llm.pricing.*.cached_input_per_million",
        "notify.webhooks[].format",
        "slos[].objective",
        "tools.http[].parameters",
        "mcp.serve",
        "mcp.servers[].env",
        "pbs.backup_interval",
    ] {
        assert!(
            keys.iter().any(|k| k == key),
            "{key} missing from {keys:#?}"
        );
    }
    // Leaves are not walked into: a map of secrets and a JSON schema are values.
    assert!(!keys.iter().any(|k| k.starts_with("mcp.servers[].env.")));
    assert!(
        !keys
            .iter()
            .any(|k| k.starts_with("tools.http[].parameters."))
    );
    assert_eq!(
        keys.len(),
        keys.iter().collect::<std::collections::BTreeSet<_>>().len()
    );
}
