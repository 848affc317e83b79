//! A VM's balloon read from `full=1` listings as PVE's `vmstatus` writes them (`balloon` is
//! QEMU's `actual`, `ballooninfo` its `query-balloon`, `balloon_min`/`shares` from the
//! config), judged against the host's auto-ballooning target.

use serde_json::{Value, json};

use super::*;

const GIB: u64 = 1 << 30;
const MIB: u64 = 1 << 20;

fn guest(v: Value) -> PveGuest {
    serde_json::from_value(v).unwrap()
}

/// A running 8 GiB VM with a 2 GiB balloon minimum whose balloon target is `actual` and
/// whose guest has `free` bytes free.
fn vm(actual: u64, free: u64) -> Value {
    json!({"vmid": 101, "name": "pg-main", "status": "running", "qmpstatus": "running",
        "maxmem": 8 * GIB, "balloon": actual, "mem": actual - free, "freemem": free,
        "balloon_min": 2 * GIB, "shares": 1000, "cpus": 4, "uptime": 86400,
        "ballooninfo": {"actual": actual, "max_mem": 8 * GIB, "total_mem": actual - 60 * MIB,
            "free_mem": free, "mem_swapped_in": 0, "mem_swapped_out": 524288,
            "major_page_faults": 912, "minor_page_faults": 20480, "last_update": 1764326400}})
}

fn host(used: f64, since: Option<i64>) -> HostMemory {
    HostMemory {
        used_percent: Some(used),
        target_percent: 80.0,
        above_since: since,
    }
}

#[test]
fn a_vm_ballooned_to_its_minimum_on_a_host_above_its_target_and_full_is_critical() {
    let h = held(&guest(vm(2 * GIB, 40 * MIB))).unwrap();
    assert_eq!(
        h,
        Held {
            maxmem: 8 * GIB,
            target: 2 * GIB,
            used: Some(2 * GIB - 100 * MIB),
            minimum: Some(2 * GIB),
            shares: Some(1000),
        }
    );
    let (severity, detail) = judge(&h, "pve2", &host(91.4, Some(1_764_320_400)));
    assert_eq!(severity, Severity::Critical);
    assert_eq!(
        detail,
        "balloon target 2.0 GiB of 8.0 GiB configured (25 %); the guest uses 1.9 GiB of it \
         (95.1 %); at its configured balloon minimum 2.0 GiB (balloon: below memory:); host \
         pve2 91.4 % memory used, above its auto-ballooning target 80 % since 2025-11-28 \
         09:00 UTC"
    );
}

#[test]
fn a_vm_at_its_full_size_or_barely_below_it_is_not_held() {
    assert_eq!(held(&guest(vm(8 * GIB, GIB))), None);
    // 7.9 GiB of 8: the driver's slack, not the host taking memory back.
    assert_eq!(held(&guest(vm(8 * GIB - 100 * MIB, GIB))), None);
    let mut stopped = vm(2 * GIB, GIB);
    stopped["status"] = json!("stopped");
    assert_eq!(held(&guest(stopped)), None);
    // No balloon driver answering: no target, nothing said.
    let plain = guest(json!({"vmid": 7, "status": "running", "maxmem": 8 * GIB, "mem": GIB}));
    assert_eq!(held(&plain), None);
}

#[test]
fn a_held_vm_with_room_is_context_and_one_near_its_target_a_warning() {
    let roomy = held(&guest(vm(4 * GIB, 2 * GIB))).unwrap();
    let (severity, detail) = judge(&roomy, "pve2", &host(83.0, None));
    assert_eq!(severity, Severity::Info);
    assert!(
        detail.contains("auto-ballooning took it down toward its minimum 2.0 GiB"),
        "{detail}"
    );
    let tight = held(&guest(vm(4 * GIB, 400 * MIB))).unwrap();
    let (severity, _) = judge(&tight, "pve2", &host(83.0, None));
    assert_eq!(severity, Severity::Warning);
}

#[test]
fn a_target_without_a_configured_minimum_was_set_by_hand_and_shares_zero_is_named() {
    let mut v = vm(3 * GIB, 100 * MIB);
    v.as_object_mut().unwrap().remove("balloon_min");
    v.as_object_mut().unwrap().remove("ballooninfo");
    let h = held(&guest(v)).unwrap();
    // Without the driver's statistics `mem` is a host-side estimate: not read as use.
    assert_eq!(h.used, None);
    let (severity, detail) = judge(&h, "pve1", &host(40.0, None));
    assert_eq!(severity, Severity::Info);
    assert!(detail.contains("reports no memory statistics"), "{detail}");
    assert!(detail.contains("a target set by hand"), "{detail}");
    assert!(
        detail.ends_with("host pve1 40 % memory used, below its auto-ballooning target 80 %"),
        "{detail}"
    );
    let mut zero = h.clone();
    zero.minimum = Some(GIB);
    zero.shares = Some(0);
    let (_, detail) = judge(&zero, "pve1", &HostMemory::default());
    assert!(
        detail.contains("shares 0 keeps auto-ballooning"),
        "{detail}"
    );
}

#[test]
fn odd_numbers_from_outside_are_read_or_left_out_never_wrapped() {
    // A target above the configured memory (a migration in flight) is not held.
    let mut v = vm(2 * GIB, GIB);
    v["ballooninfo"]["max_mem"] = json!(GIB);
    v["maxmem"] = json!(GIB);
    assert_eq!(held(&guest(v)), None);
    // free above total (a stale driver report) is no use read.
    let mut v = vm(2 * GIB, GIB);
    v["ballooninfo"]["free_mem"] = json!(9 * GIB);
    assert_eq!(held(&guest(v)).unwrap().used, None);
    assert_eq!(number(&json!({"a": "512"}), "a"), Some(512.0));
    assert_eq!(number(&json!({"a": -1}), "a"), None);
    assert_eq!(number(&json!({"a": [1]}), "a"), None);
}

#[test]
fn the_host_is_above_its_target_since_its_last_run_at_or_above_it() {
    let p = |t: i64, used: f64| json!({"time": t, "memused": used, "memtotal": 100.0});
    let points = vec![
        p(300, 85.0),
        p(0, 70.0),
        p(600, 60.0),
        p(900, 82.0),
        p(1200, 90.0),
    ];
    assert_eq!(above_since(&points, 80.0), Some(900));
    // Above all along: the history does not say since when.
    assert_eq!(above_since(&[p(0, 90.0), p(60, 91.0)], 80.0), None);
    assert_eq!(above_since(&[p(0, 90.0), p(60, 70.0)], 80.0), None);
    assert_eq!(above_since(&[json!({"time": 1, "memused": 5})], 80.0), None);
}
