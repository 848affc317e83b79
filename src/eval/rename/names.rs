//! The user-chosen names of a scenario, for `--rename`: label values of the keys that hold
//! names, the host part of instances, Kubernetes object names, Loki stream labels, the
//! name fields of appliance answers and the node of Proxmox paths, plus the scenario's
//! `rename = [...]`; conventions, devices, numbers and words of the files' structure
//! (JSON and TOML keys) excluded.

use std::collections::BTreeSet;
use std::path::Path;

use serde_json::Value;

use super::super::EvalError;
use super::super::scenario::Scenario;

/// Label keys whose values are names users chose.
const NAME_LABELS: &[&str] = &[
    "instance",
    "host",
    "hostname",
    "nodename",
    "node",
    "pod",
    "namespace",
    "deployment",
    "statefulset",
    "daemonset",
    "container",
    "mountpoint",
    "groupname",
    "service",
    "job",
    "app",
    "name",
    "vm",
    "guest",
    "pool",
    "datastore",
    "target",
    "exported_job",
    "exported_instance",
];

/// Fields of appliance answers (Proxmox, PBS, TrueNAS) whose values are names.
const NAME_FIELDS: &[&str] = &["name", "node", "hostname", "store", "pool", "backup-id"];

/// Conventional names that are not the user's: exporter jobs of the published mixins,
/// Kubernetes' own namespaces and its control-plane components (kubeadm names their static
/// pods `<component>-<node>`, so the node's new name must not follow a kept prefix).
const CONVENTIONS: &[&str] = &[
    "node",
    "process",
    "blackbox",
    "kubelet",
    "kube-state-metrics",
    "cadvisor",
    "prometheus",
    "default",
    "kube-system",
    "kube-public",
    "kube-apiserver",
    "kube-controller-manager",
    "kube-scheduler",
    "localhost",
];

/// A disk device (`sdb`, `nvme0n1`, `ada1`): the kernel's name, not the user's.
fn is_device(v: &str) -> bool {
    let rest = ["sd", "vd", "hd", "xvd", "nvme", "ada", "da", "mmcblk"]
        .iter()
        .find_map(|p| v.strip_prefix(p));
    rest.is_some_and(|r| {
        !r.is_empty()
            && r.chars()
                .all(|c| c.is_ascii_digit() || c.is_ascii_lowercase())
            && r.len() <= 5
    })
}

/// Whether `value` is a name worth renaming.
fn renamable(value: &str) -> bool {
    let v = value.trim();
    v.len() >= 3
        && !is_device(v)
        && v != "/"
        && !v.chars().all(|c| c.is_ascii_digit() || c == '.')
        && !v.contains(char::is_whitespace)
        && !v.contains("://")
        && !CONVENTIONS.contains(&v)
        && v.chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./".contains(c))
}

fn add(names: &mut BTreeSet<String>, value: &str) {
    if renamable(value) {
        names.insert(value.to_string());
    }
}

/// A label value: an instance contributes its host part (`pve1:9100` → `pve1`).
fn add_label(names: &mut BTreeSet<String>, key: &str, value: &str) {
    if !NAME_LABELS.contains(&key) {
        return;
    }
    if key == "instance" || key == "target" || key == "exported_instance" {
        let host = value.split_once("://").map_or(value, |(_, r)| r);
        let host = host.split(['/', '?']).next().unwrap_or(host);
        let host = host.rsplit_once(':').map_or(host, |(h, _)| h);
        add(names, host);
    } else {
        add(names, value);
    }
}

fn walk_json(v: &Value, fields: &[&str], names: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                if let (true, Some(s)) = (fields.contains(&k.as_str()), v.as_str()) {
                    add(names, s);
                }
                walk_json(v, fields, names);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| walk_json(i, fields, names)),
        _ => {}
    }
}

pub(super) fn files_under(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let p = e.path();
        if p.is_dir() {
            files_under(&p, out);
        } else {
            out.push(p);
        }
    }
}

/// The user-chosen names of `scenario`'s world (see the module doc).
pub fn collect(scenario: &Scenario) -> Result<BTreeSet<String>, EvalError> {
    let mut names = BTreeSet::new();
    let spec = &scenario.spec;
    for n in &spec.rename {
        names.insert(n.clone());
    }
    let w = &spec.world;
    for s in &w.series {
        for (k, v) in &s.labels {
            add_label(&mut names, k, v);
        }
    }
    for b in &w.background {
        for i in &b.instances {
            add_label(&mut names, "instance", i);
        }
        if let Some(j) = &b.job {
            add(&mut names, j);
        }
    }
    for s in &w.loki {
        for (k, v) in &s.labels {
            add_label(&mut names, k, v);
        }
    }
    let read_json = |rel: &Path| -> Result<Value, EvalError> {
        let path = scenario.dir.join(rel);
        let text = std::fs::read_to_string(&path).map_err(|e| EvalError::io(&path, e))?;
        serde_json::from_str(&text).map_err(|e| EvalError::Scenario {
            path,
            reason: e.to_string(),
        })
    };
    if let Some(k) = &w.kubernetes {
        let objects = read_json(&k.objects)?;
        walk_json(
            &objects,
            &["name", "namespace", "nodeName", "host"],
            &mut names,
        );
    }
    let a = &w.answers;
    for dir in [&a.proxmox, &a.pbs, &a.truenas].into_iter().flatten() {
        let mut files = Vec::new();
        files_under(&scenario.dir.join(dir), &mut files);
        for f in files {
            if let Ok(text) = std::fs::read_to_string(&f)
                && let Ok(v) = serde_json::from_str::<Value>(&filled(text))
            {
                walk_json(&v, NAME_FIELDS, &mut names);
            }
            // Proxmox paths name the node: nodes/<node>/qemu.json.
            let rel = f.strip_prefix(scenario.dir.join(dir)).unwrap_or(&f);
            let parts: Vec<String> = rel
                .components()
                .map(|c| c.as_os_str().to_string_lossy().into_owned())
                .collect();
            for pair in parts.windows(2) {
                if pair[0] == "nodes" {
                    add(&mut names, &pair[1]);
                }
            }
        }
    }
    // A name that is also a word of the files' structure (a JSON or TOML key or a part of
    // one, an answers directory) would break that structure when renamed.
    let structural = structure(scenario);
    names.retain(|n| spec.rename.contains(n) || !structural.contains(n));
    // An exporter's namespace (job `smartctl` for `smartctl_device_*`) is the exporter's
    // name, not the user's: its metric names keep it whatever the job is called.
    names.retain(|n| {
        spec.rename.contains(n)
            || !w
                .series
                .iter()
                .any(|s| s.name.starts_with(&format!("{n}_")))
    });
    Ok(names)
}

/// `text` with its `{{now…}}` placeholders filled: some JSON files are invalid until then.
fn filled(text: String) -> String {
    super::super::scenario::fill_placeholders(&text, chrono::Utc::now()).unwrap_or(text)
}

fn json_keys(v: &Value, out: &mut BTreeSet<String>) {
    match v {
        Value::Object(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                out.extend(k.split(['-', '_']).map(str::to_string));
                json_keys(v, out);
            }
        }
        Value::Array(items) => items.iter().for_each(|i| json_keys(i, out)),
        _ => {}
    }
}

fn toml_keys(v: &toml::Value, out: &mut BTreeSet<String>) {
    match v {
        toml::Value::Table(map) => {
            for (k, v) in map {
                out.insert(k.clone());
                out.extend(k.split(['-', '_']).map(str::to_string));
                toml_keys(v, out);
            }
        }
        toml::Value::Array(items) => items.iter().for_each(|i| toml_keys(i, out)),
        _ => {}
    }
}

/// Keys of the scenario's JSON and TOML files and its answer directories.
fn structure(scenario: &Scenario) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut files = Vec::new();
    files_under(&scenario.dir, &mut files);
    let a = &scenario.spec.world.answers;
    for dir in [&a.proxmox, &a.pbs, &a.truenas, &a.grafana]
        .into_iter()
        .flatten()
    {
        out.insert(dir.to_string_lossy().into_owned());
    }
    for f in &files {
        let Ok(text) = std::fs::read_to_string(f) else {
            continue;
        };
        // Placeholders make some JSON files invalid until filled; fill them with a number.
        let text =
            super::super::scenario::fill_placeholders(&text, chrono::Utc::now()).unwrap_or(text);
        if let Ok(v) = serde_json::from_str::<Value>(&text) {
            json_keys(&v, &mut out);
        } else if let Ok(v) = toml::from_str::<toml::Value>(&text) {
            toml_keys(&v, &mut out);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conventions_short_values_and_numbers_are_not_names() {
        let mut n = BTreeSet::new();
        for (k, v) in [
            ("job", "node"),
            ("namespace", "kube-system"),
            ("mountpoint", "/"),
            ("instance", "pve1:9100"),
            ("vm", "101"),
            ("device", "sdb"),
            ("pod", "db"),
        ] {
            add_label(&mut n, k, v);
        }
        assert_eq!(n, BTreeSet::from(["pve1".to_string()]));
    }
}
