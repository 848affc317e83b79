use std::collections::HashMap;

use super::*;
use crate::analyze::prom::labels;

/// The `namedprocess_namegroup_num_procs` samples of the real process-exporter capture,
/// by their labels (with an instance).
fn captured_counts() -> HashMap<Labels, f64> {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/exporters/process_exporter.prom"
    );
    let text = std::fs::read_to_string(path).unwrap();
    let mut out = HashMap::new();
    for line in text.lines() {
        let Some(rest) = line.strip_prefix("namedprocess_namegroup_num_procs{groupname=\"") else {
            continue;
        };
        let Some((group, value)) = rest.split_once("\"} ") else {
            continue;
        };
        let key = labels(&[("groupname", group), ("instance", "build7:9256")]);
        out.insert(key, value.trim().parse::<f64>().unwrap());
    }
    assert!(out.len() > 5, "{out:?}");
    out
}

#[test]
fn a_group_running_many_times_its_usual_count_rose_and_the_captured_background_did_not() {
    let usual = captured_counts();
    // The real capture against itself: nothing rose.
    assert!(risen(&usual, &usual, MIN_MORE_PROCS, f64::INFINITY).is_empty());
    let mut now = usual.clone();
    let bash = labels(&[("groupname", "bash"), ("instance", "build7:9256")]);
    let rustc = labels(&[("groupname", "rustc"), ("instance", "build7:9256")]);
    now.insert(bash.clone(), 58.0);
    // Two to five: more than three-fold, but three more processes is a service forking.
    now.insert(rustc.clone(), 5.0);
    let found = risen(&now, &usual, MIN_MORE_PROCS, f64::INFINITY);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0].labels, bash);
    assert_eq!((found[0].usual, found[0].now), (9.0, 58.0));
    let fact = Count::Group.fact(
        &found[0],
        "namedprocess_namegroup_num_procs{groupname=\"bash\"}",
        None,
    );
    assert_eq!(fact.entity.name, "bash");
    assert_eq!(fact.entity.host.as_deref(), Some("build7"));
    assert_eq!(fact.severity, Severity::Warning);
    assert!(
        fact.detail
            .as_deref()
            .unwrap()
            .starts_with("58 processes of this group where there were 9")
    );
}

#[test]
fn zombies_count_from_none_and_a_few_coming_and_going_do_not() {
    let z = labels(&[("instance", "pi4:9100")]);
    let usual = HashMap::from([(z.clone(), 0.0)]);
    let few = HashMap::from([(z.clone(), 4.0)]);
    assert!(risen(&few, &usual, MIN_MORE_ZOMBIES, ENOUGH_ZOMBIES).is_empty());
    let many = HashMap::from([(z.clone(), 32_400.0)]);
    let found = risen(&many, &usual, MIN_MORE_ZOMBIES, ENOUGH_ZOMBIES);
    assert_eq!(found.len(), 1);
    let fact = Count::HostZombies.fact(&found[0], "node_processes_state{state=\"Z\"}", None);
    assert_eq!(fact.entity.name, "pi4");
    assert_eq!(fact.what, "zombie (defunct) processes");
    assert_eq!(fact.severity, Severity::Critical);
    // A series new in the look-back (no usual) counts from zero.
    let found = risen(&many, &HashMap::new(), MIN_MORE_ZOMBIES, ENOUGH_ZOMBIES);
    assert_eq!(found[0].usual, 0.0);

    // Piling up for days: the usual is high, the count is still far too many.
    let slow = HashMap::from([(z.clone(), 18_000.0)]);
    assert_eq!(
        risen(&many, &slow, MIN_MORE_ZOMBIES, ENOUGH_ZOMBIES).len(),
        1
    );
    assert!(risen(&many, &slow, MIN_MORE_PROCS, f64::INFINITY).is_empty());
}
